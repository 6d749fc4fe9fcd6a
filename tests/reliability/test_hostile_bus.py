"""Every kind of hostile input reaches the dead-letter topic with its reason while good documents flow."""

from __future__ import annotations

import pytest

from streams.codec.avro import AvroCodec
from streams.ops.pipeline import Collector, LocalPipeline, publish_pages
from tests.conftest import make_pages
from tests.integration.conftest import pipeline_settings
from tests.reliability.hostile import cases

pytestmark = pytest.mark.integration

ODD_METADATA = {"note": "a\x00b\x1b[0m", "query": {"$gt": 1}, "year": 2026}


@pytest.fixture(scope="module")
def run(bus: str, tmp_path_factory) -> dict:  # bus: built once per broker pass, on that broker
    kinds = cases()
    avro = AvroCodec().encode("page_event", make_pages("k22", ["truncated avro"])[0].model_dump(mode="json"))
    kinds = [(k, c, m if m else [(b"k22", avro[:-6])]) for k, c, m in kinds]
    good = [make_pages(f"good-{n}", ["ordinary text about harbours. " * 40] * 2) for n in range(3)]
    weird = [
        make_pages("table-line", ["| " + " | ".join(str(i) for i in range(20_000)) + " |"]),
        make_pages("no-punctuation", [" ".join(["word"] * 30_000)]),
        make_pages("odd-metadata", ["ordinary text about harbours. " * 40], metadata=ODD_METADATA),
    ]
    newer, older = (
        [p.model_copy(update={"amendment_number": a}) for p in make_pages("backwards", [f"version {a} text " * 30])]
        for a in (1, 0)
    )
    messages = []
    for pages in good[:2]:
        messages += [(p.doc_id.encode(), p.model_dump_json().encode()) for p in pages]
    for _kind, _code, items in kinds:
        messages += items
    for pages in [good[2], *weird, newer, older]:
        messages += [(p.doc_id.encode(), p.model_dump_json().encode()) for p in pages]
    settings = pipeline_settings(tmp_path_factory.mktemp("hostile"), assembly_timeout_s=3.0)
    with LocalPipeline(settings, ["window"]) as pipeline:
        publish_pages(pipeline.settings, messages)
        collector = Collector(pipeline.settings)
        docs = [(p[0].doc_id, 0) for p in good + weird] + [("backwards", 1), ("backwards", 0)]
        result = collector.wait([*docs, ("k34", 0)], ["window"], timeout=240)
        expected = sum(len(m) for _k, _c, m in kinds)
        while len(result.dead) < expected and collector.poll(2.0):
            pass
        collector.close()
    return {"kinds": kinds, "result": result, "good": good, "weird": weird}


def test_at_least_thirty_kinds_each_dead_lettered_with_reason_and_bytes(run: dict) -> None:
    result = run["result"]
    assert len(run["kinds"]) >= 30
    values = {}
    for letter in result.dead:
        values.setdefault(letter.value, []).append(letter)
    for kind, code, messages in run["kinds"]:
        for _key, value in messages:
            letters = values.get(value)
            assert letters, f"{kind}: not dead-lettered"
            assert any(d.reason_code == code and d.reason for d in letters), (
                f"{kind}: {[d.reason_code for d in letters]}"
            )


def test_good_and_weird_but_valid_documents_are_chunked(run: dict) -> None:
    result = run["result"]
    for pages in run["good"] + run["weird"]:
        assert result.complete(pages[0].doc_id, 0, "window"), pages[0].doc_id
        assert not result.dead_for(pages[0].doc_id)
    odd = result.chunks[("odd-metadata", 0, "window")].values()
    # Control characters and operator-like objects are plain data: a string each, as the publisher sent it.
    assert odd and all(r.doc_metadata == {"note": "a\x00b\x1b[0m", "query": '{"$gt":1}', "year": 2026} for r in odd)
    line = result.chunks[("table-line", 0, "window")]
    assert all(r.char_end > r.char_start for r in line.values())


def test_an_amendment_going_backwards_is_published_as_not_latest(run: dict) -> None:
    result = run["result"]
    newer = result.chunks[("backwards", 1, "window")].values()
    older = result.chunks[("backwards", 0, "window")].values()
    assert all(r.is_latest_version for r in newer)
    assert not any(r.is_latest_version for r in older)
