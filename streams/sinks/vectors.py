"""Vector sink: embed chunk text in batches, upsert minimal metadata, apply flips, never re-embed
unchanged text.

The embedder's caches (this process's LRU and the deployment's shared store, keyed by model and
content_hash) mean a chunk whose text did not change between amendments or replays, or that another
process already embedded, reuses its vector. Local state (SQLite in the sink's data directory) holds
status stubs for flips that arrive before their chunk.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from streams.core.events import ChunkRecord, ChunkStatus
from streams.core.metadata import PINECONE_METADATA_BYTES, MetadataError, check_size, vector_metadata
from streams.core.records import content_hash, embedding_text
from streams.runtime.metrics import EMBED_BATCH, LONG_CHUNKS
from streams.sinks.base import RETIRED, STORED, SUPERSEDED, VectorRow, VectorTarget, is_table, section_type

if TYPE_CHECKING:
    from streams.embedding.model import Embedder


@dataclass
class VectorStats:
    embedded: int = 0
    reused: int = 0
    skipped_tables: int = 0
    upserted: int = 0
    flips: int = 0
    deleted: int = 0
    long_chunks: int = 0  # past the model's word-piece limit


log = logging.getLogger("streams.sinks.vectors")


class LocalState:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(path), check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS status (chunk_id TEXT PRIMARY KEY, retired INTEGER)")
        self.db.commit()

    def statuses(self, ids: Sequence[str]) -> dict[str, bool]:
        found: dict[str, bool] = {}
        for start in range(0, len(ids), 500):
            batch = list(ids[start : start + 500])
            marks = ",".join("?" * len(batch))
            for chunk_id, retired in self.db.execute(
                f"SELECT chunk_id, retired FROM status WHERE chunk_id IN ({marks})", batch
            ):
                found[chunk_id] = bool(retired)
        return found

    def mark(self, statuses: Sequence[ChunkStatus]) -> None:
        self.db.executemany(
            "INSERT INTO status VALUES (?, ?)"
            " ON CONFLICT(chunk_id) DO UPDATE SET retired = MAX(retired, excluded.retired)",
            [(s.chunk_id, int(s.retired)) for s in statuses],
        )
        self.db.commit()

    def close(self) -> None:
        self.db.close()


class VectorSink:
    name = "vectors"
    holds_tables = False

    def __init__(
        self,
        target: VectorTarget,
        state_path: Path,
        embedder: Embedder,
        delete_superseded: bool = False,
        context_strategies: Collection[str] = (),
        metadata_keys: Mapping[str, str] | None = None,
        max_metadata_bytes: int = PINECONE_METADATA_BYTES,
        index: str = "default",
    ):
        """`embedder` is handed in, built from the caller's settings (`streams.embedding.stores.embedder_for`);
        `metadata_keys` are the document metadata keys each vector carries, with their types. `index` names
        the vector index (streams.sinks.indexes): the sink's name, so its consumer group and its ledger
        events are the index's own, is `vectors` for the default index and `vectors.NAME` for another."""
        self.index = index
        self.name = "vectors" if index == "default" else f"vectors.{index}"
        self.metadata_keys = dict(metadata_keys or {})
        self.max_metadata_bytes = max_metadata_bytes
        self.target = target
        self.embedder = embedder
        self.state = LocalState(state_path)
        self.delete_superseded = delete_superseded
        self.context_strategies = frozenset(context_strategies)
        self.stats = VectorStats()

    def embedded_text(self, record: ChunkRecord) -> str:
        """The text whose vector stands for the record: with its heading for the context strategies."""
        if record.strategy in self.context_strategies:
            return embedding_text(record.text, record.section_path)
        return record.text

    def write_chunks(self, records: Sequence[ChunkRecord]) -> int:
        wanted = [r for r in records if not is_table(r)]
        self.stats.skipped_tables += len(records) - len(wanted)
        if not wanted:
            return 0
        # Keyed by what is embedded, as the embedder's caches are: the record's own content hash for its
        # text alone, the hash of heading and text where the heading counts. A chunk whose text (and
        # heading) did not change is never embedded again.
        keys: dict[str, str] = {}
        texts: dict[str, str] = {}
        for r in wanted:
            embedded = self.embedded_text(r)
            keys[r.chunk_id] = r.content_hash if embedded is r.text else content_hash(embedded)
            texts[keys[r.chunk_id]] = embedded
        self._count_long(wanted, texts, keys)
        before = self.embedder.stats.misses
        started = time.perf_counter()
        known = dict(zip(texts, self.embedder.encode(list(texts.values())), strict=True))
        embedded = self.embedder.stats.misses - before
        if embedded:
            EMBED_BATCH.observe(time.perf_counter() - started)
        self.stats.embedded += embedded
        self.stats.reused += len(wanted) - embedded
        stubs = self.state.statuses([r.chunk_id for r in wanted])
        rows = []
        for r in wanted:
            if stubs.get(r.chunk_id) is True or (r.chunk_id in stubs and self.delete_superseded):
                continue  # retired (or superseded with deletion on) before it arrived
            rows.append(self._row(r, known[keys[r.chunk_id]], r.is_latest_version and r.chunk_id not in stubs))
        self.target.upsert(rows)
        self.stats.upserted += len(rows)
        return len(rows)

    def _count_long(self, records: Sequence[ChunkRecord], texts: dict[str, str], keys: dict[str, str]) -> None:
        """Chunks the model cannot read whole: a metric per strategy and one log line per document."""
        limit = self.embedder.max_pieces
        lengths = dict(zip(texts, self.embedder.token_lengths(list(texts.values())), strict=True))
        per_doc: Counter[tuple[str, str, int]] = Counter()
        totals: Counter[tuple[str, str, int]] = Counter()
        for r in records:
            key = (r.doc_id, r.strategy, r.amendment_number)
            totals[key] += 1
            if lengths[keys[r.chunk_id]] > limit:
                per_doc[key] += 1
        how = "as the mean of windows" if self.embedder.long_texts == "mean" else "truncated"
        for (doc_id, strategy, amendment), count in sorted(per_doc.items()):
            LONG_CHUNKS.labels(strategy).inc(count)
            self.stats.long_chunks += count
            log.warning(
                "%s (amendment %d, %s): %d of %d chunks longer than the embedding model's %d word pieces, embedded %s",
                doc_id,
                amendment,
                strategy,
                count,
                totals[(doc_id, strategy, amendment)],
                limit,
                how,
            )

    def apply_status(self, statuses: Sequence[ChunkStatus]) -> int:
        if not statuses:
            return 0
        self.state.mark(statuses)
        gone = [s.chunk_id for s in statuses if s.retired or self.delete_superseded]
        flipped = [s.chunk_id for s in statuses if not (s.retired or self.delete_superseded)]
        if gone:
            self.target.delete(gone)
            self.stats.deleted += len(gone)
        if flipped:
            self.target.set_latest(flipped, False)
            self.stats.flips += len(flipped)
        return len(statuses)

    def account(self, ids: Sequence[str]) -> dict[str, str]:
        """Stored vectors, and the ones a status removed or kept out (retired; superseded with deletion on)."""
        found = dict.fromkeys(self.target.flags(ids), STORED)
        for chunk_id, retired in self.state.statuses([i for i in ids if i not in found]).items():
            if retired:
                found[chunk_id] = RETIRED
            elif self.delete_superseded:
                found[chunk_id] = SUPERSEDED
        return found

    def latest_flags(self, ids: Sequence[str]) -> dict[str, bool]:
        return self.target.flags(ids)

    def set_latest(self, ids: Sequence[str], is_latest: bool) -> None:
        self.target.set_latest(list(ids), is_latest)

    def _row(self, r: ChunkRecord, values: Sequence[float], is_latest: bool) -> VectorRow:
        meta = r.metadata or {}
        return VectorRow(
            chunk_id=r.chunk_id,
            values=[float(x) for x in values],
            doc_id=r.doc_id,
            strategy=r.strategy,
            section_type=section_type(r),
            amendment_number=r.amendment_number,
            is_latest_version=is_latest,
            is_critical=bool(meta.get("is_critical", False)),
            requirement_flag=bool(meta.get("requirement_flag", False)),
            content_hash=r.content_hash,
            embedding_model=self.embedder.model_name,
            vector_index=self.index,
            extra=vector_metadata(r.doc_metadata, self.metadata_keys),
        )

    def refusal(self, record: ChunkRecord) -> tuple[str, str] | None:
        """A vector whose allow-listed metadata has the wrong type, or whose metadata is over the budget
        (STREAMS_VECTOR_METADATA_MAX_BYTES; Pinecone refuses a vector over 40 KB): never storable as it is."""
        if is_table(record) or not self.metadata_keys:
            return None
        try:
            row = self._row(record, [], record.is_latest_version)
        except MetadataError as exc:
            return "vector_metadata_invalid", str(exc)
        try:
            check_size(row.metadata(), self.max_metadata_bytes, what="the vector's metadata")
        except MetadataError as exc:
            return "vector_metadata_too_large", f"{exc} (STREAMS_VECTOR_METADATA_MAX_BYTES)"
        return None

    def close(self) -> None:
        self.state.close()
