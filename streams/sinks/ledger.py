"""A sink's side of the ledger: manifests waiting to be complete in its store, and the events that say so.

A manifest may reach the sink before or after its chunks (two topics, no cross-topic order), and with
consumer groups another replica may write the chunks. So completeness is never inferred from what this
process saw: it is asked of the store (`ChunkSink.account`) when a manifest arrives, after each batch that
touches its document, and on a timer while anything is pending. The manifest offsets a runner commits stop
at the oldest manifest still pending, so a restart re-reads every manifest not yet reported.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from streams.core.events import NOT_APPLICABLE, DocumentIndexed, DocumentManifest, manifest_key
from streams.sinks.base import RETIRED, STORED, ChunkSink


@dataclass
class Pending:
    manifest: DocumentManifest
    partition: int
    offset: int


def indexed_event(manifest: DocumentManifest, sink: ChunkSink) -> DocumentIndexed | None:
    """The event saying `sink`'s store holds every chunk of `manifest` it must hold, or None while it does
    not. Shared by the sinks and the audit's repair, so an event re-sent for a lost one is the sink's."""
    ids = manifest.ids_held_by(sink.holds_tables)
    found = sink.account(ids) if ids else {}
    if any(cid not in found for cid in ids):
        return None
    outcomes = set(found.values())
    outcome = "indexed" if outcomes <= {STORED} else RETIRED if RETIRED in outcomes else "superseded"
    if not manifest.applicable:  # nothing to hold: the strategy skipped the document, and the store says so
        outcome = NOT_APPLICABLE
    return DocumentIndexed(
        doc_id=manifest.doc_id,
        amendment_number=manifest.amendment_number,
        strategy=manifest.strategy,
        chunker_version=manifest.chunker_version,
        store=sink.name,
        chunk_count=len(ids),
        outcome=outcome,
        indexed_ms=int(time.time() * 1000),
    )


class Tracker:
    """Pending manifests of one sink, checked against its store; completes them into `DocumentIndexed`."""

    def __init__(self, sink: ChunkSink) -> None:
        self.sink = sink
        self.pending: dict[str, Pending] = {}
        self.reported = 0

    def add(self, manifest: DocumentManifest, partition: int, offset: int) -> None:
        known = self.pending.get(manifest.key)
        # a redelivered manifest keeps the older offset: that is where a restart must read from
        self.pending[manifest.key] = Pending(manifest, partition, offset if known is None else known.offset)

    def keys_for(self, touched: Iterable[tuple[str, int, str, str]]) -> list[str]:
        """The pending manifests of these (doc_id, amendment, strategy, chunker_version)."""
        return [key for key in {manifest_key(*t) for t in touched} if key in self.pending]

    def check(self, keys: Iterable[str] | None = None) -> list[DocumentIndexed]:
        """Events for the pending manifests (all, or `keys`) the store now holds completely; they stay
        pending until `done`, so an event the broker did not acknowledge is sent again."""
        done: list[DocumentIndexed] = []
        for key in list(self.pending if keys is None else dict.fromkeys(keys)):
            item = self.pending.get(key)
            if item is None:
                continue
            event = indexed_event(item.manifest, self.sink)
            if event is not None:
                done.append(event)
        return done

    def done(self, events: Iterable[DocumentIndexed]) -> None:
        """Reported (the broker acknowledged the events): no longer pending."""
        for event in events:
            if self.pending.pop(event.manifest_key, None) is not None:
                self.reported += 1

    def low_water(self) -> dict[int, int]:
        """Per manifest partition, the offset of the oldest pending manifest (what may be committed)."""
        lowest: dict[int, int] = {}
        for item in self.pending.values():
            lowest[item.partition] = min(lowest.get(item.partition, item.offset), item.offset)
        return lowest

    def drop_documents(self, doc_ids: set[str]) -> None:
        """Manifests of purged documents: their chunks can never be read, so they are never to report."""
        self.pending = {k: p for k, p in self.pending.items() if p.manifest.doc_id not in doc_ids}

    def forget(self, partitions: set[int]) -> None:
        """Manifests of partitions this replica no longer owns are the new owner's to report."""
        self.pending = {k: p for k, p in self.pending.items() if p.partition not in partitions}
