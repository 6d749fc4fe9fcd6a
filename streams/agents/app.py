"""Faust apps. Each role is its own app id, hence its own consumer group: the assembler, and one chunker
per strategy, so each scales and replays on its own."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from typing import Any

import faust

from streams.agents.delivery import DeliveryGate, GatedTable
from streams.agents.transport import QuietMonitor, Transport, hold_empty_fetches
from streams.codec.avro import AvroCodec, AvroDecodeError
from streams.core.assembly import Assembler, Completed, Dead, Limits
from streams.core.chunkers import ChunkingError
from streams.core.chunkers import strategy as declared
from streams.core.events import AssembledDocument, ChunkStatus, DeadLetter
from streams.core.publish import Published, publish
from streams.core.records import manifest_for, skipped_manifest
from streams.core.sealed import Shredded
from streams.core.versions import decide, delete
from streams.embedding.model import EmbeddingUnavailable
from streams.embedding.stores import embedder_for, embedding_limit
from streams.runtime import metrics as m
from streams.runtime.clients import client_id, dead_letter_limit, group_id, record_limit
from streams.runtime.keyring import codec_for
from streams.runtime.redrive import letter_fields, skips
from streams.runtime.redrive import read as read_redrive
from streams.settings import Settings
from streams.strategies import SENTENCE_UNITS, build_chunker, long_chunk_warning

log = logging.getLogger("streams.agents")


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class InlineBudget:
    """Whether a document is chunked on the event loop or in a thread, from the measured cost per byte.

    A thread keeps the loop serving produce acks and commits while a long document is chunked, but each
    hand-off costs a wake-up and GIL ping-pong: for small documents that costs more CPU than the chunking,
    and running them inline raised throughput, for `section` and, once the budget covered its documents,
    for `hybrid` (figures: docs/benchmarks.md, Pipeline). So documents predicted to
    take under `budget_s` run inline: the loop waits at most that long (the consumer's heartbeats run in
    their own thread). The first document, before anything is measured, and any over `max_bytes` go to the thread.
    """

    budget_s: float = 0.05
    max_bytes: int = 262_144
    seconds_per_byte: float | None = None

    def inline(self, size: int) -> bool:
        cost = self.seconds_per_byte
        return cost is not None and size <= self.max_bytes and size * cost <= self.budget_s

    def observe(self, size: int, seconds: float) -> None:
        rate = seconds / max(size, 1)
        cost = self.seconds_per_byte
        self.seconds_per_byte = rate if cost is None else 0.8 * cost + 0.2 * rate


def _broker_credentials(settings: Settings) -> faust.types.auth.CredentialsT | None:
    if settings.sasl_mechanism and settings.sasl_username:
        ssl_context = None
        if settings.security_protocol.upper().endswith("SSL"):
            import ssl

            ssl_context = ssl.create_default_context(cafile=settings.ssl_cafile)
        return faust.SASLCredentials(
            username=settings.sasl_username,
            password=settings.secret("sasl_password"),
            mechanism=settings.sasl_mechanism,
            ssl_context=ssl_context,
        )
    return None


def make_app(role: str, settings: Settings) -> faust.App:
    (settings.data_dir / "faust" / role).mkdir(parents=True, exist_ok=True)
    app = faust.App(
        group_id(settings, role),
        broker=f"kafka://{settings.broker}",
        broker_credentials=_broker_credentials(settings),
        broker_client_id=client_id(role),
        store="memory://",
        topic_partitions=settings.partitions,
        topic_replication_factor=settings.replication_factor,
        key_serializer="raw",
        value_serializer="raw",
        processing_guarantee=settings.processing_guarantee,
        # A dead letter carries a record of up to max_message_bytes and its reason; what goes to the other
        # topics is held to max_message_bytes before it is sent (record_limit) or is far smaller (chunks).
        producer_max_request_size=dead_letter_limit(settings),
        consumer_max_fetch_size=settings.max_message_bytes,
        producer_compression_type=None if settings.compression == "none" else settings.compression,
        producer_linger=settings.producer_linger_ms / 1000,
        web_enabled=settings.web_port > 0,
        web_port=settings.web_port or 6066,
        web_host="127.0.0.1",
        datadir=str(settings.data_dir / "faust" / role),
        consumer_auto_offset_reset="earliest",
        broker_commit_every=100,
        broker_commit_interval=settings.commit_interval_s,
        broker_session_timeout=settings.session_timeout_s,
        broker_heartbeat_interval=min(3.0, settings.session_timeout_s / 3),
        stream_wait_empty=False,
        topic_disable_leader=True,
        Monitor=QuietMonitor,
        Table=GatedTable,
    )
    # Before any topic is declared: re-fetch dropped in-flight messages after a rebalance (see transport.py).
    app.transport = Transport(app.conf.broker_consumer, app)
    # Table writes wait for the outputs of their input (delivery.py); one transaction already ties them.
    exactly_once = settings.processing_guarantee == "exactly_once"
    app.transport.delivery_gate = DeliveryGate(enabled=not exactly_once, atomic=exactly_once)
    if settings.broker_kind == "noida":  # it answers empty fetches at once (transport.py, point 8)
        hold_empty_fetches()
    app.transport.sparse_topics = frozenset({settings.topics.versions, settings.topics.status})  # compacted
    return app


class DeadLetterWriter:
    """Publishes dead letters as Avro; one record per original message so each keeps its bytes."""

    def __init__(self, app: faust.App, settings: Settings, codec: AvroCodec) -> None:
        self.topic = app.topic(settings.topics.dead_letter, key_type=bytes, value_type=bytes)
        self.codec = codec
        self.name = settings.topics.dead_letter

    async def send(
        self,
        stage: str,
        code: str,
        reason: str,
        source_topic: str,
        value: bytes | None,
        key: bytes | None = None,
        partition: int = -1,
        offset: int = -1,
        doc_id: str | None = None,
        headers: Any = None,
    ) -> Any:
        """Publish one dead letter; the future of its delivery. `headers`: the refused message's, so that a
        re-driven record refused again says which attempt it was and which dead letter it came from."""
        letter = DeadLetter(
            reason_code=code,
            reason=reason,
            stage=stage,
            source_topic=source_topic,
            source_partition=partition,
            source_offset=offset,
            key=key,
            value=value,
            doc_id=doc_id,
            timestamp_ms=now_ms(),
            **letter_fields(headers),
        )
        log.warning("dead letter: %s %s: %s", stage, code, reason)
        m.DEAD_LETTERS.labels(stage.split(":")[0] if stage.startswith("sink") else stage, code).inc()
        return await self.topic.send(
            key=key or (doc_id or "").encode(),
            value=self.codec.encode("dead_letter", letter.model_dump(), self.name),
        )


def assembler_app(settings: Settings, topic_limit: int | None = None) -> faust.App:
    """Pages in, assembled documents out; state in two changelogged tables keyed by document version.
    `topic_limit`: the document topic's max.message.bytes as the start-up check read it (None: unknown)."""
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    app = make_app("assembler", settings)
    codec = codec_for(settings)
    topics = settings.topics
    source = app.topic(topics.pages, topics.ticks, key_type=bytes, value_type=bytes)
    ticks = app.topic(topics.ticks, key_type=bytes, value_type=bytes)
    documents = app.topic(topics.documents, key_type=bytes, value_type=bytes)
    dead = DeadLetterWriter(app, settings, codec)
    headers = app.Table(
        "assembly-headers", default=None, partitions=settings.partitions, key_type=str, value_type=bytes
    )
    pages = app.Table("assembly-pages", default=None, partitions=settings.partitions, key_type=str, value_type=bytes)
    limits = Limits(
        max_page_bytes=settings.max_page_bytes,
        max_pages=settings.max_pages,
        max_document_bytes=settings.max_document_bytes,
        max_pending_bytes=settings.max_pending_bytes,
        timeout_ms=int(settings.assembly_timeout_s * 1000),
    )
    latest = app.Table(
        "latest-amendments", default=None, partitions=settings.partitions, key_type=str, value_type=bytes
    )
    versions = app.topic(topics.versions, key_type=bytes, value_type=bytes)
    gate: DeliveryGate = app.transport.delivery_gate
    most = record_limit(settings, topic_limit)
    assembler = Assembler(
        headers,
        pages,
        limits,
        decode_avro=lambda raw: codec.decode("page_event", raw),
        tenant_key=settings.tenant_key,
        unseal=codec.unseal,
    )

    @app.on_partitions_assigned.connect
    async def on_assigned(*_args: object, **_kwargs: object) -> None:
        # Recovery runs before the agent sees another page, so the next page rescans the recovered tables.
        assembler.forget_cached()

    @app.agent(source)
    async def assemble(stream: faust.StreamT) -> None:
        async for event in stream.events():
            # The tables' writes for this input reach their changelogs once its outputs are delivered: a
            # document marked done on the changelog but lost on the topic would be lost for good (delivery.py).
            await gate.run(event, assemble_one)

    async def assemble_one(event: faust.EventT) -> list[Any]:
        """One page or tick: the delivery futures of what it sent."""
        message = event.message
        sent: list[Any] = []
        if message.topic == topics.ticks:
            outcomes = assembler.on_tick(message.partition, now_ms())
            m.TABLE_ENTRIES.labels("assembly-headers").set(len(headers))
            m.TABLE_ENTRIES.labels("assembly-pages").set(len(pages))
        else:
            m.RECORDS_IN.labels("assembler", message.topic).inc()
            try:
                redriven = read_redrive(message.headers) is not None
                outcomes = assembler.on_page(event.value, message.partition, now_ms(), redriven=redriven)
            except Exception as exc:  # a bug must not stop assembly: the page is kept, loudly
                log.exception("assembler failed on a page")
                outcomes = [Dead("assembler_error", f"{type(exc).__name__}: {exc}", None, [event.value])]
        for outcome in outcomes:
            if isinstance(outcome, Completed):
                doc = outcome.document
                payload = codec.encode("assembled_document", doc.model_dump(mode="json"), topics.documents)
                # The producer's own bound on the record (its batch header included): a record over the limit
                # would be refused on every retry, so the document is dead-lettered instead of sent.
                size = DefaultRecordBatchBuilder.estimate_size_in_bytes(doc.doc_id.encode(), payload, [])
                if size > most:
                    reason = (
                        f"the assembled document's record is {size} bytes, over the {most} bytes {topics.documents} "
                        "takes (STREAMS_MAX_MESSAGE_BYTES, the topic's max.message.bytes)"
                    )
                    outcome = Dead("document_too_large", reason, doc.doc_id, outcome.pages)
            if isinstance(outcome, Completed):
                sent.append(await documents.send(key=doc.doc_id.encode(), value=payload))
                m.RECORDS_OUT.labels("assembler", topics.documents).inc()
                known = latest.get(doc.doc_id)
                if known is None or doc.amendment_number > int(known):
                    # The compacted versions topic holds the latest amendment of every document.
                    latest[doc.doc_id] = str(doc.amendment_number).encode()
                    version = {
                        "doc_id": doc.doc_id,
                        "amendment_number": doc.amendment_number,
                        "document_name": doc.document_name,
                        "completed_ms": doc.completed_ms,
                    }
                    sent.append(await versions.send(key=doc.doc_id.encode(), value=json.dumps(version).encode()))
            if isinstance(outcome, Dead):
                for raw in outcome.pages or [b""]:
                    sent.append(
                        await dead.send(
                            "assembly",
                            outcome.code,
                            outcome.reason,
                            message.topic if message.topic == topics.pages else topics.pages,
                            raw,
                            key=message.key if message.topic == topics.pages else (outcome.doc_id or "").encode(),
                            partition=message.partition,
                            offset=message.offset if message.topic == topics.pages else -1,
                            doc_id=outcome.doc_id,
                            headers=message.headers if message.topic == topics.pages else None,
                        )
                    )
        return sent

    @app.timer(interval=settings.sweep_interval_s)
    async def tick() -> None:
        # A tick per partition lets the agent expire documents inside its own stream context.
        for partition in range(settings.partitions):
            await ticks.send(key=b"tick", value=b"tick", partition=partition)

    return app


def chunker_app(strategy: str, settings: Settings) -> faust.App:
    """Assembled documents in, Avro chunk records and status flips out, for one strategy."""

    app = make_app(f"chunker-{strategy}", settings)
    codec = codec_for(settings)
    topics = settings.topics
    source = app.topic(topics.documents, topics.versions, key_type=bytes, value_type=bytes)
    chunks = app.topic(topics.chunks, key_type=bytes, value_type=bytes)
    status = app.topic(topics.status, key_type=bytes, value_type=bytes)
    manifests = app.topic(topics.manifests, key_type=bytes, value_type=bytes)
    dead = DeadLetterWriter(app, settings, codec)
    versions = app.Table("chunk-versions", default=None, partitions=settings.partitions, key_type=str, value_type=bytes)
    gate: DeliveryGate = app.transport.delivery_gate
    embedder = None
    if declared(strategy).embeds:
        # semantic and cluster read every document at the same moment: through the shared store they
        # embed its sentences from opposite ends (their declared `embed_order`) and meet in the middle. The
        # order is this worker's own embedder's, chosen here, never set on an embedder something else shares.
        descending = declared(strategy).embed_order == "descending"
        embedder = embedder_for(settings, long_texts=SENTENCE_UNITS, descending=descending)
    chunker = build_chunker(strategy, settings, embedder=embedder)
    if settings.chunker_version:
        chunker.version = settings.chunker_version  # lineage label of a replay with a new chunker
    try:
        chunker.warm_up()
    except EmbeddingUnavailable as exc:
        raise EmbeddingUnavailable(f"chunker:{strategy} cannot start: {exc}") from exc
    warning = long_chunk_warning(chunker.options, settings.embed_long_chunks, embedding_limit(settings))
    if warning:  # once, at start-up: the vector sink counts each such chunk
        log.warning(warning)

    budget = InlineBudget()

    def run(raw: bytes) -> tuple[AssembledDocument, Published]:
        """What this strategy publishes for one assembled document (streams.core.publish)."""
        started = time.perf_counter()
        doc = AssembledDocument.model_validate(codec.decode("assembled_document", raw))
        published = publish(doc, chunker)
        budget.observe(len(raw), time.perf_counter() - started)
        return doc, published

    async def send_status(ids: list[str], doc_id: str, amendment: int, retired: bool, by: int = -1) -> list[Any]:
        sent = []
        for chunk_id in ids:
            flip = ChunkStatus(
                chunk_id=chunk_id,
                doc_id=doc_id,
                strategy=strategy,
                amendment_number=amendment,
                is_latest_version=False,
                retired=retired,
                superseded_by=by,
                timestamp_ms=now_ms(),
            )
            value = codec.encode("chunk_status", flip.model_dump(), topics.status)
            sent.append(await status.send(key=chunk_id.encode(), value=value))
        return sent

    @app.agent(source)
    async def chunk(stream: faust.StreamT) -> None:
        async for event in stream.events():
            # The versions table's write for this document reaches its changelog once the chunks and flips
            # are delivered: a state that names chunks the topic never got would skip their flips (delivery.py).
            await gate.run(event, chunk_one)

    async def chunk_one(event: faust.EventT) -> list[Any]:
        """One assembled document or version record: the delivery futures of what it sent."""
        loop = asyncio.get_running_loop()
        message = event.message
        key = message.key or b""
        doc_id = key.decode("utf-8", "replace")
        m.RECORDS_IN.labels(f"chunker-{strategy}", message.topic).inc()
        if message.topic == topics.versions:
            sent: list[Any] = []
            if not event.value:  # a document tombstone retires all its chunks
                ids, _ = delete(json.loads(versions[doc_id]) if versions.get(doc_id) else None)
                sent = await send_status(ids, doc_id, -1, retired=True)
                versions.pop(doc_id, None)
            return sent
        if skips(message.headers, f"chunk:{strategy}"):
            return []  # another strategy's dead letter, re-driven for that strategy alone
        failure: tuple[str, str] | None = None
        published: Published | None = None
        doc: AssembledDocument | None = None
        try:
            if budget.inline(len(event.value)):
                doc, published = run(event.value)
            else:  # long enough that the loop should keep serving produce acks and commits meanwhile
                doc, published = await loop.run_in_executor(None, run, event.value)
        except Shredded as exc:  # a purged document (a replay reads it again): nothing of it can be read
            log.info("chunker %s: %s", strategy, exc)
            return []
        except AvroDecodeError as exc:
            failure = ("invalid_avro", str(exc))
        except ChunkingError as exc:
            failure = (exc.code, str(exc))
        except Exception as exc:  # a chunker bug must not stop the stream; it is dead-lettered loudly
            log.exception("chunker %s failed", strategy)
            failure = ("chunker_error", f"{type(exc).__name__}: {exc}")
        if failure is None and published is not None and doc is not None and not published.applicable:
            # not this strategy's kind of document: accounted for in the ledger, never dead-lettered
            manifest = skipped_manifest(doc, chunker, published.skipped, now_ms())
            value = codec.encode("document_manifest", manifest.model_dump(), topics.manifests)
            m.SKIPPED.labels(strategy).inc()
            return [await manifests.send(key=manifest.key.encode(), value=value)]
        records = published.records if published is not None else []
        if failure is None and not records:
            failure = ("no_chunks", "the strategy produced no chunks for this document")
        if failure is not None:
            stage = f"chunk:{strategy}"
            return [
                await dead.send(
                    stage,
                    *failure,
                    message.topic,
                    event.value,
                    key,
                    message.partition,
                    message.offset,
                    doc_id,
                    headers=message.headers,
                )
            ]
        amendment = records[0].amendment_number
        state = json.loads(versions[doc_id]) if versions.get(doc_id) else None
        decision = decide(state, amendment, [r.chunk_id for r in records])
        sent = []
        for record in records:
            record.is_latest_version = decision.is_latest
            value = codec.encode("chunk_record", record.model_dump(), topics.chunks)
            sent.append(await chunks.send(key=record.chunk_id.encode(), value=value))
        # After its chunks, before the input offset is committed: the ledger's expectation of the stores.
        manifest = manifest_for(records, now_ms())
        value = codec.encode("document_manifest", manifest.model_dump(), topics.manifests)
        sent.append(await manifests.send(key=manifest.key.encode(), value=value))
        m.CHUNKS.labels(strategy).inc(len(records))
        m.RECORDS_OUT.labels(f"chunker-{strategy}", topics.chunks).inc(len(records))
        if doc is not None and doc.first_page_ms:
            m.LATENCY.labels("page_to_chunk").observe(max(0.0, (now_ms() - doc.first_page_ms) / 1000))
        m.TABLE_ENTRIES.labels("chunk-versions").set(len(versions))
        for older, ids in decision.flips.items():
            sent += await send_status(ids, doc_id, older, retired=False, by=amendment)
        sent += await send_status(decision.retired, doc_id, amendment, retired=True)
        versions[doc_id] = json.dumps(decision.state).encode()
        return sent

    return app
