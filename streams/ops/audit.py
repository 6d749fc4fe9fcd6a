"""Every document accounted for: the ledger read back, checked against the stores, and repaired.

Ground truth is what reached `pages.cleaned`: every complete document version there must have, per
strategy, a manifest on `documents.manifests` (or a dead letter saying why not), every chunk the manifest
names in MongoDB and every non-table one in the vector store, with `is_latest_version` true exactly on
the newest amendment. Reading: the pages topic (page headers and text, never chunk text), the compacted
manifest, versions and dead-letter topics, and indexed queries on the stores by chunk id and doc id.

Repair re-drives each gap at the cheapest stage that fixes it. Store-only gaps in the vector store are
re-sunk from the rows MongoDB holds (no re-chunking, no re-embedding of what the state caches); anything
else is re-chunked here from the pages on the topic, with the same code and therefore the same ids, and
published with its manifest, so the sinks do the writing and report `documents.indexed` as usual. Pages
are not re-published: the assembler drops a finished version's pages as duplicates for an hour. Wrong
flags are set in the store directly (a status flip can only clear one). Dead letters are reported, never
repaired: the input itself was refused.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from confluent_kafka import Producer, TopicPartition

from streams.codec.avro import AvroCodec
from streams.core.assembly import BadInput, parse_page
from streams.core.chunkers import STRATEGIES, strategy_class
from streams.core.doctype import routing
from streams.core.document import assemble
from streams.core.events import ChunkRecord, DeadLetter, DocumentIndexed, DocumentManifest, PageEvent
from streams.core.publish import Published, publish
from streams.core.records import manifest_for, skipped_manifest
from streams.core.sealed import Shredded
from streams.core.tenancy import qualify, tenant_in
from streams.embedding.stores import vector_embedder_for
from streams.ops.lag import active_groups
from streams.ops.redrive import letters, redriven
from streams.ops.tail import read_topic, reader
from streams.runtime.clients import group_id
from streams.runtime.keyring import codec_for
from streams.runtime.lag import group_lag, known_groups
from streams.settings import UP_FILE, Settings
from streams.sinks.base import STORED, ChunkSink
from streams.sinks.factory import vector_sink
from streams.sinks.ledger import indexed_event
from streams.strategies import build_chunker, options_for

log = logging.getLogger("streams.audit")

GAP_KINDS = (
    "never_assembled",
    "not_chunked",
    "rows_missing",
    "vectors_missing",
    "wrong_latest",
    "unreported",
    "orphan",
    "dead_lettered",
)
#: kinds `--repair` leaves alone: the input was refused, or pages never fully arrived
UNREPAIRABLE = {"dead_lettered", "never_assembled", "orphan"}


@dataclass
class Gap:
    kind: str
    doc_id: str
    amendment: int
    strategy: str = ""
    store: str = ""
    detail: str = ""
    ids: list[str] = field(default_factory=list)
    #: the groups still behind on what this gap waits for ("streams-sink-mongo lag 42"); "" when none is
    pending: str = ""

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["ids"] = len(self.ids)
        return out


@dataclass
class Version:
    """One document version as the pages topic knows it."""

    doc_id: str
    amendment: int
    page_count: int
    pages: dict[int, tuple[int, int]] = field(default_factory=dict)  # page number -> (partition, offset)

    @property
    def complete(self) -> bool:
        return len(self.pages) >= self.page_count and all(n in self.pages for n in range(1, self.page_count + 1))


@dataclass
class Ledger:
    """What the topics say: document versions, manifests, indexed events, deletions, dead letters."""

    versions: dict[tuple[str, int], Version] = field(default_factory=dict)
    manifests: dict[tuple[str, int, str], list[DocumentManifest]] = field(default_factory=lambda: defaultdict(list))
    indexed: dict[tuple[str, int, str], list[DocumentIndexed]] = field(default_factory=lambda: defaultdict(list))
    deleted: set[str] = field(default_factory=set)
    dead: dict[str, list[DeadLetter]] = field(default_factory=lambda: defaultdict(list))
    #: documents whose pages are sealed under a deleted key: purged (streams.ops.purge)
    purged: set[str] = field(default_factory=set)

    def scoped(self, tenant: str) -> Ledger:
        """What the topics say of one tenant's documents only ("": everything, as read)."""
        if not tenant:
            return self
        mine = lambda doc_id: tenant_in(doc_id) == tenant  # noqa: E731
        scoped = Ledger(
            versions={k: v for k, v in self.versions.items() if mine(k[0])},
            deleted={d for d in self.deleted if mine(d)},
            purged={d for d in self.purged if mine(d)},
        )
        scoped.manifests.update({k: v for k, v in self.manifests.items() if mine(k[0])})
        scoped.indexed.update({k: v for k, v in self.indexed.items() if mine(k[0])})
        scoped.dead.update({k: v for k, v in self.dead.items() if mine(k)})
        return scoped

    def latest_amendment(self, doc_id: str) -> int:
        return max(a for d, a in self.versions if d == doc_id)

    def manifest(self, doc_id: str, amendment: int, strategy: str, chunker_version: str) -> DocumentManifest | None:
        """The manifest of one lineage (a replay with a new chunker version publishes another)."""
        found = self.manifests.get((doc_id, amendment, strategy), [])
        return next((m for m in found if m.chunker_version == chunker_version), None)

    def reported(self, manifest: DocumentManifest, store: str) -> DocumentIndexed | None:
        """The `documents.indexed` event of this manifest's lineage in `store`, if the topic holds one."""
        found = self.indexed.get((manifest.doc_id, manifest.amendment_number, manifest.strategy), [])
        return next((e for e in found if e.store == store and e.chunker_version == manifest.chunker_version), None)

    def dead_for(self, doc_id: str, stage: str) -> DeadLetter | None:
        return next((d for d in self.dead.get(doc_id, []) if d.stage == stage), None)


def read_page(settings: Settings, codec: AvroCodec, raw: bytes) -> PageEvent:
    """A page off the pages topic as the assembler reads it: opened, decoded, checked, its tenant named."""
    return parse_page(
        raw, lambda data: codec.decode("page_event", data), settings.max_page_bytes, settings.tenant_key, codec.unseal
    )


def read_ledger(
    settings: Settings, since_ms: int | None = None, on_message: Callable[[], None] | None = None
) -> Ledger:
    codec = codec_for(settings)
    topics = settings.topics
    ledger = Ledger()
    for message in read_topic(settings, topics.pages, since_ms, on_message):
        try:
            page = read_page(settings, codec, message.value())
        except BadInput:
            continue  # refused at the door: the assembler dead-lettered it, reported from there
        except Shredded as exc:
            ledger.purged.add(exc.key_id)  # its key is gone: purged, accounted for by its receipt
            continue
        version = ledger.versions.setdefault(
            (page.doc_id, page.amendment_number), Version(page.doc_id, page.amendment_number, page.page_count)
        )
        version.pages.setdefault(page.page_number, (message.partition(), message.offset()))
    for message in read_topic(settings, topics.manifests, on_message=on_message):
        if message.value() is not None:
            m = DocumentManifest(**codec.decode("document_manifest", message.value()))
            known = ledger.manifests[(m.doc_id, m.amendment_number, m.strategy)]
            known[:] = [k for k in known if k.chunker_version != m.chunker_version] + [m]
    reported: dict[bytes, DocumentIndexed] = {}  # by key: the latest wins and a tombstone deletes, as compaction does
    for message in read_topic(settings, topics.indexed, on_message=on_message):
        if message.value() is None:
            reported.pop(message.key() or b"", None)
        else:
            reported[message.key() or b""] = DocumentIndexed(**codec.decode("document_indexed", message.value()))
    for e in reported.values():
        ledger.indexed[(e.doc_id, e.amendment_number, e.strategy)].append(e)
    for message in read_topic(settings, topics.versions, on_message=on_message):
        doc_id = (message.key() or b"").decode("utf-8", "replace")
        if message.value() is None:
            ledger.deleted.add(doc_id)
        else:
            ledger.deleted.discard(doc_id)

    gone = redriven(settings)  # a re-driven letter is no gap: its record's fate since is what counts
    for item in letters(settings, on_message=on_message):
        if item.letter.doc_id and item.id not in gone:
            ledger.dead[item.letter.doc_id].append(item.letter)
    return ledger


def deployed_strategies(settings: Settings, ledger: Ledger | None = None) -> tuple[list[str], str]:
    """The strategies an audit checks when none is named, and where that list came from: the running
    `streams up` (its up.json), else the settings (STREAMS_STRATEGIES or a config file), else every
    strategy with a manifest on the topic. Checking a default of one strategy against a deployment of
    seven said "no gaps" about six it never looked at."""
    import json

    try:
        up = json.loads((settings.data_dir / UP_FILE).read_text())
    except (OSError, ValueError):
        up = {}
    if isinstance(up, dict) and up.get("strategies"):
        return [s for s in up["strategies"] if s in STRATEGIES], f"the running `streams up` ({UP_FILE})"
    if "strategies" in settings.model_fields_set:
        return list(settings.strategies), "the settings (STREAMS_STRATEGIES)"
    ledger = ledger or read_ledger(settings)
    found = sorted({strategy for _, _, strategy in ledger.manifests}, key=list(STRATEGIES).index)
    return found, f"the manifests on {settings.topics.manifests}"


def lineage(settings: Settings, strategy: str) -> str:
    """The chunker version the running workers label their records with (options included)."""
    if settings.chunker_version:
        return settings.chunker_version

    version = str(strategy_class(strategy).version)
    tag = options_for(settings, strategy).lineage_tag()
    return f"{version}+{tag}" if tag else version


@dataclass
class AuditReport:
    versions: int = 0
    strategies: list[str] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    seconds: float = 0.0
    #: document versions a strategy skipped as not for it (accounted for, not gaps), per strategy
    not_applicable: dict[str, int] = field(default_factory=dict)
    #: documents purged (their pages sealed under a deleted key): accounted for, never gaps
    purged: int = 0

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(GAP_KINDS, 0)
        for gap in self.gaps:
            out[gap.kind] += 1
        return out

    def open_gaps(self) -> list[Gap]:
        """Gaps that are loss, not backlog: neither refused input nor waiting on a group still behind."""
        return [g for g in self.gaps if g.kind not in {"dead_lettered"} and not g.pending]

    def pending(self) -> list[Gap]:
        return [g for g in self.gaps if g.pending]

    def as_dict(self) -> dict[str, Any]:
        return {
            "versions": self.versions,
            "strategies": self.strategies,
            "seconds": round(self.seconds, 3),
            "gaps": self.counts(),
            "not_applicable": dict(self.not_applicable),
            "purged": self.purged,
            "pending": len(self.pending()),
            "details": [g.as_dict() for g in self.gaps],
        }


def audit(
    settings: Settings,
    strategies: list[str],
    stores: list[ChunkSink],
    since_ms: int | None = None,
    on_message: Callable[[], None] | None = None,
    ledger: Ledger | None = None,
    only_doc: str | None = None,
) -> tuple[AuditReport, Ledger]:
    """Gaps of every document version on the pages topic (or of `only_doc`'s only)."""
    started = time.perf_counter()
    ledger = ledger or read_ledger(settings, since_ms, on_message)
    report = AuditReport(strategies=list(strategies), purged=len(ledger.purged))
    mongo = next((s for s in stores if s.holds_tables), None)
    versions_by_doc: dict[str, list[Version]] = defaultdict(list)
    for version in ledger.versions.values():
        if only_doc is None or version.doc_id == only_doc:
            versions_by_doc[version.doc_id].append(version)
    for doc_id, versions in sorted(versions_by_doc.items()):
        if doc_id in ledger.deleted:
            continue
        latest = max(v.amendment for v in versions)
        named: set[str] = set()
        for version in sorted(versions, key=lambda v: v.amendment):
            report.versions += 1
            letter = ledger.dead_for(doc_id, "assembly")
            if letter is not None:
                report.gaps.append(Gap("dead_lettered", doc_id, version.amendment, detail=letter.reason))
                continue
            if not version.complete:
                have = len(version.pages)
                report.gaps.append(
                    Gap("never_assembled", doc_id, version.amendment, detail=f"{have} of {version.page_count} pages")
                )
                continue
            for strategy in strategies:
                letter = ledger.dead_for(doc_id, f"chunk:{strategy}")
                if letter is not None:
                    report.gaps.append(Gap("dead_lettered", doc_id, version.amendment, strategy, detail=letter.reason))
                    continue
                wanted = lineage(settings, strategy)
                manifest = ledger.manifest(doc_id, version.amendment, strategy, wanted)
                for m in ledger.manifests.get((doc_id, version.amendment, strategy), []):
                    named.update(m.chunk_ids)
                if manifest is None:
                    report.gaps.append(Gap("not_chunked", doc_id, version.amendment, strategy, detail=wanted))
                    continue
                if not manifest.applicable:
                    report.not_applicable[strategy] = report.not_applicable.get(strategy, 0) + 1
                is_latest = version.amendment == latest
                for store in stores:
                    ids = manifest.ids_held_by(store.holds_tables)
                    found = store.account(ids) if ids else {}
                    missing = [cid for cid in ids if cid not in found]
                    if missing:
                        kind = "rows_missing" if store.holds_tables else "vectors_missing"
                        detail = f"{len(missing)} of {len(ids)}"
                        report.gaps.append(Gap(kind, doc_id, version.amendment, strategy, store.name, detail, missing))
                    elif ledger.reported(manifest, store.name) is None:
                        # held, but its `documents.indexed` event is gone (a broker that lost it) or not sent yet
                        report.gaps.append(
                            Gap("unreported", doc_id, version.amendment, strategy, store.name, manifest.chunker_version)
                        )
                    flags = store.latest_flags([cid for cid in ids if found.get(cid) == STORED])
                    wrong = [cid for cid, flag in flags.items() if flag != is_latest]
                    if wrong:
                        detail = f"{len(wrong)} should be is_latest_version={is_latest}"
                        report.gaps.append(
                            Gap("wrong_latest", doc_id, version.amendment, strategy, store.name, detail, wrong)
                        )
        if mongo is not None:
            rows = mongo.collection.find({"doc_id": doc_id, "strategy": {"$in": strategies}}, {"_id": 1})  # type: ignore[attr-defined]
            orphans = sorted(row["_id"] for row in rows if row["_id"] not in named)
            if orphans:
                report.gaps.append(
                    Gap("orphan", doc_id, -1, store=mongo.name, detail=f"{len(orphans)} rows", ids=orphans)
                )
    report.seconds = time.perf_counter() - started
    return report, ledger


def waits_on(settings: Settings, gap: Gap) -> list[str]:
    """The consumer groups whose backlog can still close `gap`: the store's sink for what a store lacks, the
    assembler and the strategy's chunker for a version not chunked, the assembler for one not assembled."""
    if gap.kind in ("rows_missing", "vectors_missing", "unreported", "wrong_latest") and gap.store:
        return [group_id(settings, f"sink-{gap.store}")]
    if gap.kind == "not_chunked":
        return [group_id(settings, "assembler"), group_id(settings, f"chunker-{gap.strategy}")]
    if gap.kind == "never_assembled":
        return [group_id(settings, "assembler")]
    return []


def group_lags(settings: Settings, strategies: list[str], stores: list[str] | None = None) -> dict[str, int]:
    """The total lag of the assembler, the strategies' chunkers and the sinks of `stores` (all when None), for
    the groups the broker knows (that joined or committed): a group nothing ever ran is working on nothing, so
    what it would write is missing, not pending."""

    sinks = {group_id(settings, f"sink-{name}") for name in stores} if stores is not None else None
    running = active_groups(settings)
    groups = {
        g: topics
        for g, topics in known_groups(settings, strategies).items()
        if g in running and (sinks is None or "sink-" not in g or g in sinks)
    }
    return {g: sum(row.lag for row in group_lag(settings, g, topics)) for g, topics in groups.items()}


def mark_pending(settings: Settings, report: AuditReport, stores: list[str] | None = None) -> None:
    """Mark each gap that a group still behind may close as pending, with that group's lag: backlog, which
    `streams audit --wait` waits out, rather than loss. A group behind on any of its partitions counts."""
    lags = group_lags(settings, report.strategies, stores)
    for gap in report.gaps:
        behind = [f"{g} lag {lags[g]}" for g in waits_on(settings, gap) if lags.get(g, 0) > 0]
        gap.pending = ", ".join(behind)


def wait_for_groups(
    settings: Settings,
    strategies: list[str],
    stores: list[str],
    timeout: float,
    on_poll: Callable[[dict[str, int]], None] | None = None,
) -> dict[str, int]:
    """Until the groups an audit of `strategies` and `stores` depends on have caught up (no lag), or
    `timeout`; the last lags."""
    deadline = time.monotonic() + timeout
    while True:
        lags = group_lags(settings, strategies, stores)
        if on_poll:
            on_poll(lags)
        if not any(lags.values()) or time.monotonic() > deadline:
            return lags
        time.sleep(1.0)


@dataclass
class RepairReport:
    rechunked: int = 0
    resunk: int = 0
    flags: int = 0
    reported: int = 0
    skipped: list[Gap] = field(default_factory=list)


def _pages(settings: Settings, version: Version) -> list[PageEvent]:
    codec = codec_for(settings)
    consumer = reader(settings)
    pages: dict[int, PageEvent] = {}
    try:
        for number, (partition, offset) in sorted(version.pages.items()):
            consumer.assign([TopicPartition(settings.topics.pages, partition, offset)])
            message = consumer.poll(10)
            if message is None or message.error():
                raise RuntimeError(f"page {number} of {version.doc_id} could not be read back")
            pages[number] = read_page(settings, codec, message.value())
    finally:
        consumer.close()
    return list(pages.values())


def repair(
    settings: Settings,
    report: AuditReport,
    ledger: Ledger,
    stores: list[ChunkSink],
    on_gap: Callable[[], None] | None = None,
) -> RepairReport:
    from streams.ops.pipeline import Refusals, producer

    codec = codec_for(settings)
    refusals = Refusals()  # a repair record the broker refused is not a repair
    out = producer(settings, refusals)
    done = RepairReport()
    by_name = {s.name: s for s in stores}
    mongo = next((s for s in stores if s.holds_tables), None)
    rechunk: dict[tuple[str, int], set[str]] = defaultdict(set)
    for gap in report.gaps:
        if gap.kind in UNREPAIRABLE or gap.pending:  # refused input, or backlog a group is still working on
            done.skipped.append(gap)
        elif gap.kind == "wrong_latest":
            by_name[gap.store].set_latest(gap.ids, gap.amendment == ledger.latest_amendment(gap.doc_id))
            done.flags += len(gap.ids)
        elif gap.kind == "vectors_missing" and mongo is not None and _resink(settings, codec, out, mongo, gap):
            done.resunk += len(gap.ids)
        elif gap.kind == "unreported":
            done.reported += _report(settings, codec, out, ledger, by_name[gap.store], gap)
        else:
            rechunk[(gap.doc_id, gap.amendment)].add(gap.strategy)
        if on_gap:
            on_gap()
    for (doc_id, amendment), strategies in sorted(rechunk.items()):
        doc = assemble(_pages(settings, ledger.versions[(doc_id, amendment)]))
        for strategy in sorted(strategies):
            chunker = build_chunker(strategy, settings)
            chunker.version = lineage(settings, strategy)
            published = publish(doc, chunker, amendment == ledger.latest_amendment(doc_id))
            _publish(settings, codec, out, doc, chunker, published)
            done.rechunked += 1
    refusals.check(out, "repair records", timeout=60)
    return done


def _publish(settings: Settings, codec: AvroCodec, out: Producer, doc: Any, chunker: Any, published: Published) -> None:
    """A document's records and manifest as the chunker worker publishes them (or its not-applicable one)."""
    topics = settings.topics
    for record in published.records:
        value = codec.encode("chunk_record", record.model_dump(), topics.chunks)
        out.produce(topics.chunks, key=record.chunk_id.encode(), value=value)
        out.poll(0)
    stamp = int(time.time() * 1000)
    manifest = (
        manifest_for(published.records, stamp)
        if published.applicable
        else skipped_manifest(doc, chunker, published.skipped, stamp)
    )
    value = codec.encode("document_manifest", manifest.model_dump(), topics.manifests)
    out.produce(topics.manifests, key=manifest.key.encode(), value=value)


def _report(settings: Settings, codec: AvroCodec, out: Producer, ledger: Ledger, store: ChunkSink, gap: Gap) -> int:
    """The `documents.indexed` event the sink would send, sent again when the store still holds it all."""
    manifest = ledger.manifest(gap.doc_id, gap.amendment, gap.strategy, gap.detail)
    event = indexed_event(manifest, store) if manifest is not None else None
    if event is None:
        return 0
    topic = settings.topics.indexed
    out.produce(topic, key=event.key.encode(), value=codec.encode("document_indexed", event.model_dump(), topic))
    return 1


def _resink(settings: Settings, codec: AvroCodec, out: Producer, mongo: ChunkSink, gap: Gap) -> bool:
    """Chunk records rebuilt from MongoDB's rows, when it holds every one the gap names."""
    rows = mongo.by_ids(gap.ids)  # type: ignore[attr-defined]
    if len(rows) < len(gap.ids):
        return False
    fields = set(ChunkRecord.model_fields)
    for row in rows:
        record = ChunkRecord(**{k: v for k, v in row.items() if k in fields} | {"chunk_id": row["_id"]})
        value = codec.encode("chunk_record", record.model_dump(), settings.topics.chunks)
        out.produce(settings.topics.chunks, key=record.chunk_id.encode(), value=value)
        out.poll(0)
    return True


def audit_stores(settings: Settings, names: list[str]) -> list[ChunkSink]:
    """The stores to check, opened for reading (the vector sink's model is never loaded here)."""
    stores: list[ChunkSink] = []
    for name in names:
        if name == "mongo":
            from streams.sinks.mongo import MongoSink

            stores.append(MongoSink.of(settings))
        elif name == "vectors":
            stores.append(vector_sink(settings, vector_embedder_for(settings)))  # loads no model until asked to encode
        else:
            raise ValueError(f"unknown store {name!r}: use mongo or vectors")
    return stores


def _doc_type(settings: Settings, version: Version) -> dict[str, Any] | None:
    """The type the assembler gave a complete version, and how: assembly is deterministic, so the pages
    read back give the decision the workers made. None while pages are missing."""
    if len(version.pages) < version.page_count:
        return None
    doc = assemble(_pages(settings, version))
    return {"type": str(doc.doc_type), **(routing(doc.metadata) or {})}


def document_status(
    settings: Settings, doc_id: str, stores: list[ChunkSink], strategies: list[str], tenant: str = ""
) -> dict[str, Any]:
    """The life of one document: pages, assembly or dead letter, and per strategy the ledger and stores.
    With tenancy on, `doc_id` is the tenant's own id and only that tenant's document is read."""
    doc_id = qualify(tenant, doc_id)
    ledger = read_ledger(settings).scoped(tenant)
    versions = sorted((v for v in ledger.versions.values() if v.doc_id == doc_id), key=lambda v: v.amendment)
    if not versions and doc_id not in ledger.dead:
        raise ValueError(f"no pages of {doc_id!r} on {settings.topics.pages}")
    report, _ = audit(settings, strategies, stores, ledger=ledger, only_doc=doc_id)
    gaps = [g.as_dict() for g in report.gaps]
    latest = max((v.amendment for v in versions), default=-1)
    out: dict[str, Any] = {
        "doc_id": doc_id,
        "deleted": doc_id in ledger.deleted,
        "dead_letters": [
            {"stage": d.stage, "reason_code": d.reason_code, "reason": d.reason} for d in ledger.dead.get(doc_id, [])
        ],
        "versions": [],
        "gaps": gaps,
    }
    for version in versions:
        entry: dict[str, Any] = {
            "amendment": version.amendment,
            "pages": sorted(version.pages),
            "page_count": version.page_count,
            "latest": version.amendment == latest,
            "doc_type": _doc_type(settings, version),
            "strategies": {},
        }
        for strategy in strategies:
            manifest = ledger.manifest(doc_id, version.amendment, strategy, lineage(settings, strategy))
            row: dict[str, Any] = {"manifest": None, "stores": {}}
            if manifest is not None:
                row["manifest"] = {
                    "chunker_version": manifest.chunker_version,
                    "chunks": manifest.chunk_count,
                    "outcome": manifest.outcome,
                    "reason": manifest.reason,
                }
                for store in stores:
                    ids = manifest.ids_held_by(store.holds_tables)
                    found = store.account(ids) if ids else {}
                    flags = store.latest_flags([c for c in ids if found.get(c) == STORED])
                    indexed = ledger.reported(manifest, store.name)
                    row["stores"][store.name] = {
                        "expected": len(ids),
                        "held": len(found),
                        "latest": sum(flags.values()),
                        "indexed_ms": indexed.indexed_ms if indexed else None,
                        "outcome": indexed.outcome if indexed else None,
                    }
            entry["strategies"][strategy] = row
        out["versions"].append(entry)
    return out
