"""Kafka clients of every role: their shared librdkafka settings and their names.

Every process names itself `streams.<role>.p<pid>.<host>` as client id, so a group's members say which
process on which host holds them (the group janitor, `streams.ops.groups`, reads them back). A role's
consumer group is `streams-<role>`, under the deployment's prefix when one is set.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from streams.settings import ConfigError, Settings, deployed

T = TypeVar("T")

KAFKA_LOG = logging.getLogger("streams.kafka")
KAFKA_LOG.addHandler(logging.NullHandler())  # silent unless the process configured logging (workers, tests)
log = logging.getLogger(__name__)  # no handler of its own: a warning reaches stderr even before faust sets logging up

#: What `client_id` writes, read back by the group janitor.
CLIENT_ID_PATTERN = re.compile(r"^streams\.(?P<role>[A-Za-z0-9_-]+)\.p(?P<pid>\d+)\.(?P<host>[A-Za-z0-9._-]+)$")


def client_config(settings: Settings) -> dict[str, object]:
    """librdkafka settings shared by admin, producers and consumers, including security.

    librdkafka's own log lines go through Python logging (`streams.kafka`), not straight to stderr, so a
    command's output stays one clear line and tests capture them.
    """
    conf: dict[str, object] = {
        "bootstrap.servers": settings.broker,
        "security.protocol": settings.security_protocol,
        "logger": KAFKA_LOG,
    }
    if settings.sasl_mechanism:
        conf["sasl.mechanism"] = settings.sasl_mechanism
        conf["sasl.username"] = settings.sasl_username or ""
        conf["sasl.password"] = settings.secret("sasl_password")
    if settings.ssl_cafile:
        conf["ssl.ca.location"] = settings.ssl_cafile
    return conf


#: What a dead letter may add to the record it carries (its reason, stage, source and key): a page or a
#: document at the record limit must still fit in its dead letter, or the bad input it carries would fail
#: to send on every retry instead of being set aside.
DEAD_LETTER_HEADROOM = 65_536


def dead_letter_limit(settings: Settings) -> int:
    """The largest record written to the dead-letter topic (and produced by a worker at all)."""
    return settings.max_message_bytes + DEAD_LETTER_HEADROOM


#: How long the project's producer keeps trying to deliver a record before it reports the record failed
#: (librdkafka's `message.timeout.ms`; Kafka's own `delivery.timeout.ms` default): longer than a broker's
#: request timeout (30 s), so a produce that a frozen or lost leader left hanging is retried on the new one.
DELIVERY_TIMEOUT_S = 120.0


class DeliveryReports:
    """A producer's delivery reports (its `on_delivery`): flush() counts only what is still queued, and a
    record the broker refused (over its size limit, say) is not queued any more, so without these it passed
    for delivered."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def __call__(self, error: object, _message: object) -> None:
        if error is not None:
            self.errors.append(str(error))

    def problem(self, out: Any, what: str, timeout: float = DELIVERY_TIMEOUT_S + 5) -> str | None:
        """Flush; what went wrong with the records produced since the last call, in one line, or None. By
        default the flush outwaits the delivery timeout, so every record has its outcome: a lost or frozen leader
        under a publish once left one page unacknowledged after 30 s that the new leader took later, and
        the publisher reported a failure for a page that was delivered (a three-node cluster). A flush
        that fails in the client itself is a problem too, for the caller to retry: confluent-kafka once answered
        a SIGKILLed noida-db with a SystemError from `flush` ("returned NULL without setting an exception"), and
        the sink exited instead of waiting for the broker (2026-11-30, a clean-clone run of 437cf78)."""
        from confluent_kafka import KafkaException

        try:
            remaining = out.flush(timeout)
        except (KafkaException, SystemError) as exc:
            return f"{what}: the client's flush failed ({exc})"
        errors, self.errors = self.errors, []
        if remaining:
            return f"{remaining} {what} were not acknowledged by the broker"
        if errors:
            return f"the broker refused {len(errors)} {what}: {errors[0]}"
        return None


def producer(settings: Settings, reports: DeliveryReports | None = None, max_bytes: int | None = None) -> Any:
    """The project's librdkafka producer (idempotent, compressed as configured); with `reports`, every
    delivery report goes to it. `max_bytes` raises the record limit (a dead letter's)."""
    from confluent_kafka import Producer

    conf: dict[str, object] = {
        **client_config(settings),
        "message.max.bytes": max_bytes or settings.max_message_bytes,
        "linger.ms": 5,
        "compression.type": settings.compression,
        "enable.idempotence": True,
        "message.timeout.ms": int(DELIVERY_TIMEOUT_S * 1000),
    }
    if reports is not None:
        conf["on_delivery"] = reports
    return Producer(conf)


def fetch_config(settings: Settings) -> dict[str, object]:
    """A consumer's fetch sizes: the largest record the service writes, a dead letter, fits in one fetch.
    librdkafka also wants `message.max.bytes` (1,000,000 unless set, at least 1,000) no larger than
    `fetch.max.bytes`, so with STREAMS_MAX_MESSAGE_BYTES below a megabyte a consumer without it refused to be
    created."""
    most = dead_letter_limit(settings)
    return {"fetch.max.bytes": most, "max.partition.fetch.bytes": most, "message.max.bytes": most}


def host_name() -> str:
    """This host's name as it appears in client ids."""
    return re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname()) or "localhost"


def client_id(role: str, pid: int | None = None) -> str:
    """A Kafka client id that says which process on which host holds a group membership."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "-", role)
    return f"streams.{safe}.p{pid or os.getpid()}.{host_name()}"


def group_id(settings: Settings, role: str) -> str:
    """Consumer group of a role: `streams-assembler`, `streams-chunker-window`, `streams-sink-mongo`, ...,
    under the deployment's prefix (`staging.streams-assembler`). A worker's faust app id is its group, so its
    changelog topics and transactional ids carry the prefix too."""
    return deployed(settings.deployment, f"streams-{role}")


#: What Kafka answers an offsets request with while the group coordinator moves or loads (right after a
#: broker starts, `__consumer_offsets` is still being created): retriable, and librdkafka does not retry
#: `committed()` itself. noida-db never answered so.
COORDINATOR_BUSY = ("NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE")


def asked_again(call: Callable[[float], T], timeout: float = 30.0) -> T:
    """`call(seconds_left)`, asked again while the broker answers that it is busy: the group coordinator
    loading (`COORDINATOR_BUSY`) or a partition's leader moving, as Kafka answers for a while after a start
    or a restart. librdkafka retries neither in `committed()`, `get_watermark_offsets()` or
    `offsets_for_times()`; any other error, or one past `timeout`, is raised."""
    from confluent_kafka import KafkaError, KafkaException

    moving = {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError._TIMED_OUT}
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call(max(1.0, deadline - time.monotonic()))
        except KafkaException as exc:
            error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
            busy = any(code in str(exc) for code in COORDINATOR_BUSY) or "Not coordinator" in str(exc)
            retriable = busy or (error is not None and (error.retriable() or error.code() in moving))
            if not retriable or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def committed_offsets(consumer: Any, partitions: list[Any], timeout: float = 10.0) -> list[Any]:
    """`consumer.committed(partitions)`, asked again while the coordinator is busy, within `timeout`."""
    return asked_again(lambda left: consumer.committed(partitions, timeout=left), timeout)


def end_offsets(reader: Any, topic: str, partitions: Iterable[int], timeout: float = 10.0) -> dict[int, int]:
    """Each partition's end offset, asked of the broker as `reader` (a librdkafka consumer) reads: under
    read_committed the last stable offset, under read_uncommitted the high watermark (open transactions too)."""
    from confluent_kafka import TopicPartition

    ends = reader.get_watermark_offsets
    return {p: ends(TopicPartition(topic, p), timeout=timeout, cached=False)[1] for p in partitions}


def reached_ends(reader: Any, topic: str, ends: Mapping[int, int], partitions: Iterable[int]) -> set[int]:
    """The `partitions` whose reader position has reached its end offset in `ends`. librdkafka moves the position
    past transaction commit markers, and returns nothing for them: under exactly-once every output topic ends in
    markers, so a reader waiting for the record before the end offset waited for nothing."""
    from confluent_kafka import TopicPartition

    positions = reader.position([TopicPartition(topic, p) for p in partitions])
    return {tp.partition for tp in positions if tp.offset >= ends[tp.partition]}  # unknown: negative


class BrokerRefused(ConfigError):
    """The broker refused this process's credentials or certificate: a bad setting, not a passing outage."""


def check_credentials(settings: Settings, timeout: float | None = None) -> None:
    """With security on, connect once before anything starts: a wrong password or an untrusted certificate
    is one clear line and a refusal to start (exit 78, which supervisors do not retry), instead of clients
    retrying for ever. A broker that does not answer at all is left to the clients' own retries.

    librdkafka reports both through its error callback only (`_AUTHENTICATION`, `_SSL`), which fires from
    `poll`; a metadata request alone would just time out with "transport failure".
    """
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    if settings.security_protocol.upper() == "PLAINTEXT":
        return
    errors: list[KafkaError] = []
    admin = AdminClient({**client_config(settings), "error_cb": errors.append})
    deadline = time.monotonic() + (timeout or settings.connect_timeout_s)
    while time.monotonic() < deadline:
        try:
            admin.list_topics(timeout=1.0)
            return
        except KafkaException:
            admin.poll(0)
        for error in errors:
            detail = mask_secret(error.str(), settings.secret("sasl_password"))
            if error.code() == KafkaError._AUTHENTICATION:
                raise BrokerRefused(
                    f"the broker at {settings.broker} refused the credentials of SASL user "
                    f"{settings.sasl_username!r} (STREAMS_SASL_USERNAME/STREAMS_SASL_PASSWORD): {detail}"
                )
            if error.code() == KafkaError._SSL:
                raise BrokerRefused(
                    f"TLS with the broker at {settings.broker} failed (STREAMS_SSL_CAFILE="
                    f"{settings.ssl_cafile or 'the system CAs'}): {detail}"
                )


def mask_secret(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret else text


class TopicTooSmall(ConfigError):
    """A topic takes smaller records than a setting lets the service write to it: a bad setting."""


def topic_limit(settings: Settings, topic: str, timeout: float = 20.0) -> int | None:
    """The topic's `max.message.bytes` as the broker answers it, or None: a broker that does not answer a
    topic's configs (noida-db has none), or a topic not created yet, leaves the check to the clients (logged,
    not raised)."""
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    admin = AdminClient(client_config(settings))
    try:
        (described,) = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values()
        entry = described.result(timeout).get("max.message.bytes")
        return int(entry.value) if entry is not None and entry.value is not None else None
    except Exception as exc:  # no configs to read: the check cannot be made here
        log.warning("max.message.bytes of %s not checked: %r", topic, exc)
        return None


def check_document_topic(settings: Settings, timeout: float = 20.0) -> int | None:
    """Before the assembler starts: the document topic must take a document of `max_document_bytes`. A topic
    that refuses one (its `max.message.bytes`, or the broker's `message.max.bytes` it inherits, is lower) fails
    the send after the document is complete; the document is then neither delivered nor dead-lettered, and
    the worker restarts into the same refusal. So the smaller limit is one clear line and a refusal to start.
    Returns the topic's limit (None when the broker does not say), which the assembler then holds each
    document's record to (`record_limit`)."""
    if settings.max_message_bytes < settings.max_document_bytes:  # the producer itself would refuse it
        raise TopicTooSmall(
            f"STREAMS_MAX_MESSAGE_BYTES ({settings.max_message_bytes}) is below STREAMS_MAX_DOCUMENT_BYTES "
            f"({settings.max_document_bytes}): the assembler could not send a document it accepts"
        )
    topic = settings.topics.documents
    limit = topic_limit(settings, topic, timeout)
    wanted = settings.max_document_bytes
    if limit is not None and limit < wanted:
        raise TopicTooSmall(
            f"topic {topic} takes records of at most {limit} bytes (max.message.bytes) but a document may hold "
            f"{wanted} (STREAMS_MAX_DOCUMENT_BYTES): raise the topic's max.message.bytes to at least {wanted}, "
            f"or set STREAMS_MAX_DOCUMENT_BYTES to at most {limit} so larger documents are dead-lettered"
        )
    return limit


def check_dead_letter_topic(settings: Settings, timeout: float = 20.0) -> None:
    """Before a worker or a sink starts: the dead-letter topic must take a dead letter of a record at the
    record limit (`dead_letter_limit`). One it refuses is neither delivered nor set aside: the worker retries
    the same input for ever. A topic made before dead letters had their headroom keeps its old limit
    (`streams topics` does not alter a topic that exists), so this is one clear line and a refusal to start."""
    topic = settings.topics.dead_letter
    limit, wanted = topic_limit(settings, topic, timeout), dead_letter_limit(settings)
    if limit is not None and limit < wanted:
        raise TopicTooSmall(
            f"topic {topic} takes records of at most {limit} bytes (max.message.bytes) but a dead letter may hold "
            f"{wanted} (STREAMS_MAX_MESSAGE_BYTES and {DEAD_LETTER_HEADROOM} for its reason): raise the topic's "
            f"max.message.bytes to at least {wanted}, or lower STREAMS_MAX_MESSAGE_BYTES to at most "
            f"{limit - DEAD_LETTER_HEADROOM}"
        )


def record_limit(settings: Settings, topic_limit: int | None) -> int:
    """The largest record the assembler can send to the document topic: the producer's own limit and the
    topic's (when the broker told it). A document within `max_document_bytes` can still make a record past
    the topic's limit by its envelope (page map, timestamps, the batch's header) when the two limits are
    equal; such a document is dead-lettered, as the producer or the broker would refuse it every time."""
    return min(settings.max_message_bytes, topic_limit) if topic_limit is not None else settings.max_message_bytes


#: The longest one MongoDB request may wait for the store's answer (a batch's bulk write takes well under a
#: second): a frozen store or a network dropping packets fails the request, which its writer retries and logs.
SOCKET_TIMEOUT_MS = 120_000


def client_options(url: str, timeout_ms: int) -> dict[str, int]:
    """The timeouts a MongoClient of the project gets, save those its URL sets itself: pymongo lets keyword
    arguments win over the URL, so `?serverSelectionTimeoutMS=500` in STREAMS_MONGO_URL was ignored."""
    query = url.partition("?")[2].lower()
    chosen = {"serverSelectionTimeoutMS": timeout_ms, "socketTimeoutMS": SOCKET_TIMEOUT_MS}
    return {key: value for key, value in chosen.items() if f"{key.lower()}=" not in query}
