from streams.core.versions import decide, delete


def test_newer_amendment_flips_older_once() -> None:
    first = decide(None, 0, ["a0", "b0"])
    assert first.is_latest and not first.flips
    second = decide(first.state, 1, ["a1", "b1"])
    assert second.is_latest and second.flips == {0: ["a0", "b0"]}
    again = decide(second.state, 1, ["a1", "b1"])  # redelivery: nothing flips twice
    assert again.is_latest and not again.flips and not again.retired


def test_late_older_amendment_is_not_latest_and_reverse_order_converges() -> None:
    newer = decide(None, 1, ["a1"])
    late = decide(newer.state, 0, ["a0"])
    assert not late.is_latest and not late.flips
    forward = decide(decide(None, 0, ["a0"]).state, 1, ["a1"])
    assert sorted(late.state["amendments"]) == sorted(forward.state["amendments"])


def test_rechunk_retires_ids_no_longer_produced_and_delete_retires_all() -> None:
    base = decide(None, 0, ["a", "b", "c"])
    rechunk = decide(base.state, 0, ["a", "d"])
    assert rechunk.is_latest and rechunk.retired == ["b", "c"]
    ids, state = delete(decide(rechunk.state, 1, ["x"]).state)
    assert ids == ["a", "d", "x"] and state == {}
