"""QuietConsumer against the real embedded broker, which answers empty fetches at once: it must stop
librdkafka's fetch loop while caught up, lose nothing across its pauses, and pick new records up quickly."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from streams.ops.embedded import broker
from streams.polling import QuietConsumer

pytestmark = [pytest.mark.integration, pytest.mark.embedded_only]


def _fetch_requests(stats: list[dict]) -> int:
    """Fetch requests sent to brokers so far, from librdkafka's own statistics."""
    latest = stats[-1]
    return sum(b.get("req", {}).get("Fetch", 0) for b in latest["brokers"].values())


def _fetch_requests_at(stats: list[dict], monotonic_s: float) -> int:
    """Fetch requests sent by a moment (`time.monotonic()`): librdkafka stamps its statistics with the same
    clock (`ts`, microseconds), and delivers them only when polled, so a window without polls is read after."""
    before = [s for s in stats if s["ts"] <= monotonic_s * 1e6]
    return _fetch_requests(before) if before else 0


def _read(quiet: QuietConsumer, into: list[bytes], until: int, seconds: float, batch: int = 100) -> None:
    """Consume into `into` until it holds `until` values or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while len(into) < until and time.monotonic() < deadline:
        into.extend(m.value() for m in quiet.consume(batch, 0.2) if not m.error())


def _consumer(address: str, stats: list[dict]) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": address,
            "group.id": "quiet",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "statistics.interval.ms": 200,
            "stats_cb": lambda raw: stats.append(json.loads(raw)),
        }
    )


@pytest.fixture
def service(tmp_path: Path):
    server = broker(tmp_path).start()
    admin = AdminClient({"bootstrap.servers": server.address})
    admin.create_topics([NewTopic("q", 3, 1)])["q"].result()
    yield server
    server.stop()


def test_idle_consumer_stops_fetching_and_loses_nothing(service) -> None:
    stats: list[dict] = []
    raw = _consumer(service.address, stats)
    raw.assign([TopicPartition("q", p, 0) for p in range(3)])
    quiet = QuietConsumer(raw)
    producer = Producer({"bootstrap.servers": service.address, "linger.ms": 0})
    received: list[bytes] = []
    sent: list[bytes] = []

    def burst(n: int) -> None:
        for _ in range(n):
            value = f"m{len(sent)}".encode()
            producer.produce("q", value, partition=len(sent) % 3)
            sent.append(value)
        producer.flush(10)

    def drain(seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            received.extend(m.value() for m in quiet.consume(100, 0.2) if not m.error())

    burst(30)
    drain(2.0)
    before = _fetch_requests(stats)
    drain(3.0)  # idle: caught up everywhere
    idle_fetches = _fetch_requests(stats) - before
    for _ in range(5):  # records arriving now and then, each after an idle spell
        burst(7)
        drain(0.7)
    burst(1)
    sent_at, probes_at = time.monotonic(), quiet.probes
    while len(received) < len(sent) and time.monotonic() - sent_at < 30:  # generous: the outcome is asserted
        received.extend(m.value() for m in quiet.consume(100, 0.1) if not m.error())
    probes_waited = quiet.probes - probes_at
    raw.close()
    # librdkafka alone sent thousands of empty fetches a second here; a probe now and then resumes fetching
    assert idle_fetches <= 3 * 3 * 2 / quiet.probe_max_s, idle_fetches
    assert sorted(received) == sorted(sent), (set(sent) - set(received), len(received) - len(set(received)))
    # picked up by the first probe after it was sent (one more may have been in flight): counted, not timed
    assert probes_waited <= 2, probes_waited


def test_a_subscribed_consumer_is_assigned_and_reads_while_pausing(service) -> None:
    stats: list[dict] = []
    raw = _consumer(service.address, stats)
    raw.subscribe(["q"])
    quiet = QuietConsumer(raw)
    producer = Producer({"bootstrap.servers": service.address})
    for n in range(12):
        producer.produce("q", f"s{n}".encode(), partition=n % 3)
    producer.flush(10)
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < 12 and time.monotonic() < deadline:
        got.extend(m.value() for m in quiet.consume(50, 0.3) if not m.error())
    assert sorted(got) == sorted(f"s{n}".encode() for n in range(12))
    quiet.consume(50, 1.5)
    assert quiet.probes > 0  # it paused what was caught up and probed instead of fetching
    raw.close()


def test_a_busy_consumer_stops_fetching_ahead_and_resumes_where_it_stopped(service) -> None:
    """While the caller works on a batch (the vector sink embedding for seconds), librdkafka fetched ahead
    to the end and then spun on empty fetches; `busy()` pauses it and resumes from the consumed position:
    what was fetched ahead and what arrived meanwhile are both delivered, each once."""
    stats: list[dict] = []
    raw = _consumer(service.address, stats)
    raw.assign([TopicPartition("q", p, 0) for p in range(3)])
    quiet = QuietConsumer(raw)
    producer = Producer({"bootstrap.servers": service.address, "linger.ms": 0})
    sent = [f"b{n}".encode() for n in range(60)]
    for n, value in enumerate(sent[:45]):
        producer.produce("q", value, partition=n % 3)
    producer.flush(10)
    received: list[bytes] = []
    _read(quiet, received, 1, 10, batch=5)
    assert 0 < len(received) <= 5
    time.sleep(0.5)  # let librdkafka fetch the rest ahead, as it does while a sink writes its batch
    with quiet.busy():
        busy_from = time.monotonic()
        for n, value in enumerate(sent[45:]):  # arrives while the caller is busy
            producer.produce("q", value, partition=n % 3)
        producer.flush(10)
        time.sleep(2.0)
        busy_until = time.monotonic()
    _read(quiet, received, len(sent), 10)
    # Nothing more may come: not the fetched-ahead queue, and not a re-read from where assign() put the
    # partitions (librdkafka reports no position after a seek, and a caught-up pause judged from there).
    again = [m.value() for m in quiet.consume(100, 2.0) if not m.error()]
    raw.close()
    assert again == []
    busy_fetches = _fetch_requests_at(stats, busy_until) - _fetch_requests_at(stats, busy_from + 0.25)
    # Without the pause librdkafka kept asking the whole time (thousands of requests in 2 s on noida-db).
    assert busy_fetches <= 6, busy_fetches
    assert sorted(received) == sorted(sent), (set(sent) - set(received), len(received) - len(set(received)))


def test_a_partition_sought_after_busy_is_not_read_again_from_its_start(service) -> None:
    """After a seek librdkafka reports no position until it delivers a message: a partition with nothing
    new after `busy()` was judged from where assign() put it, and a probe "resumed" it there, so everything
    in it was delivered twice (a sink reported documents twice)."""
    raw = _consumer(service.address, [])
    quiet = QuietConsumer(raw)
    quiet.assign([TopicPartition("q", p, 0) for p in range(3)])  # as the sinks assign (manual assignment)
    producer = Producer({"bootstrap.servers": service.address, "linger.ms": 0})
    for n in range(12):
        producer.produce("q", f"f{n}".encode(), partition=n % 3)
    producer.flush(10)
    received: list[bytes] = []
    _read(quiet, received, 12, 10)
    for batch in range(2):  # the second batch is where partitions 1 and 2 were sought back to 0
        with quiet.busy():
            producer.produce("q", f"late{batch}".encode(), partition=0)  # partitions 1 and 2 get nothing more
            producer.flush(10)
        _read(quiet, received, 13 + batch, 10)
    _read(quiet, received, 10**9, 3)  # anything delivered twice would arrive here
    raw.close()
    assert sorted(received) == sorted([*(f"f{n}".encode() for n in range(12)), b"late0", b"late1"])


def test_records_found_by_a_probe_arrive_when_fetches_are_slower_than_the_window(service) -> None:
    """A window of zero makes every fetch slower than the window, as a loaded broker does. A partition
    behind used to be paused and judged each time round, which cancelled its fetch in flight, and a probe's
    resume was undone by the cached watermark from before the pause: the records waited for a lucky fetch,
    for seconds or for ever (2 runs in 3 failed). The consumer is assigned before it is wrapped, so the
    first round starts with positions nobody knows."""
    stats: list[dict] = []
    raw = _consumer(service.address, stats)
    raw.assign([TopicPartition("q", p, 0) for p in range(3)])
    quiet = QuietConsumer(raw, window_s=0.0)
    producer = Producer({"bootstrap.servers": service.address, "linger.ms": 0})
    received: list[bytes] = []
    sent: list[bytes] = []
    slow: list[float] = []
    for _ in range(8):
        for _ in range(3):
            sent.append(f"w{len(sent)}".encode())
            producer.produce("q", sent[-1], partition=len(sent) % 3)
        producer.flush(10)
        sent_at = time.monotonic()
        _read(quiet, received, len(sent), 10)
        slow.append(round(time.monotonic() - sent_at, 2))
        quiet.consume(100, 1.0)  # idle long enough for every partition to be paused and probed
        assert quiet._paused, f"the idle spell paused nothing, so no probe resumed anything (rounds: {slow})"
    raw.close()
    assert sorted(received) == sorted(sent)
    # A probe every half second at most: each round is read in well under 3 s unless the fetch is cancelled.
    assert max(slow) < 3.0, slow
