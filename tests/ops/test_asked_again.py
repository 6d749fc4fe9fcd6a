"""What a client asks again while a broker settles, and what it raises at once."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import KafkaError, KafkaException

from streams.runtime.clients import asked_again


def flaky(errors: list[int], answer: str = "offsets") -> tuple[Callable[[float], str], list[float]]:
    """A call that fails with each of `errors` in turn, then answers; it records the time left it was given."""
    given: list[float] = []

    def call(left: float) -> str:
        given.append(left)
        if errors:
            raise KafkaException(KafkaError(errors.pop(0)))
        return answer

    return call, given


def test_a_moving_leader_and_a_busy_coordinator_are_asked_again() -> None:
    call, given = flaky([KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.COORDINATOR_LOAD_IN_PROGRESS])
    assert asked_again(call, timeout=10) == "offsets"
    assert len(given) == 3 and all(1.0 <= left <= 10 for left in given)


def test_another_error_is_raised_at_once() -> None:
    call, given = flaky([KafkaError.TOPIC_AUTHORIZATION_FAILED])
    with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED"):
        asked_again(call, timeout=10)
    assert len(given) == 1


def test_a_broker_that_stays_busy_is_raised_after_the_timeout() -> None:
    call, given = flaky([KafkaError.NOT_LEADER_FOR_PARTITION] * 1000)
    with pytest.raises(KafkaException, match="NOT_LEADER_FOR_PARTITION"):
        asked_again(call, timeout=0.5)
    assert 2 <= len(given) < 10


def test_a_flush_that_fails_in_the_client_is_a_problem_to_retry_not_a_crash() -> None:
    """confluent-kafka once raised SystemError from `flush` while noida-db was SIGKILLed, and the sink exited
    instead of waiting for the broker; the next flush went through."""
    from streams.runtime.clients import DeliveryReports

    class Out:
        def __init__(self) -> None:
            self.failures = [SystemError("<method 'flush'> returned NULL without setting an exception")]

        def flush(self, timeout: float) -> int:
            if self.failures:
                raise self.failures.pop(0)
            return 0

    reports, out = DeliveryReports(), Out()
    assert "the client's flush failed" in (reports.problem(out, "indexed events") or "")
    assert reports.problem(out, "indexed events") is None
