"""What the console shows, read from the bus and the stores: nothing here writes, except `publish`.

Pages are the ground truth of a document's text (the stores hold chunks, not documents), so the console
keeps an index of `pages.cleaned` in memory, brought up to date on each request from where it stopped.
No consumer stays assigned between requests: against the embedded broker an assigned librdkafka consumer
re-fetches in a loop, and an idle console must cost nothing.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Message

from streams.core.assembly import BadInput
from streams.core.document import assemble
from streams.core.events import AssembledDocument, DeadLetter, DocType, PageEvent
from streams.core.sealed import Shredded
from streams.core.tenancy import tenant_in
from streams.ingest.files import page_events
from streams.ops.audit import audit_stores, document_status, lineage, read_page, read_topic
from streams.ops.lag import lag_report
from streams.runtime.keyring import codec_for
from streams.settings import Settings
from streams.sinks.search import search

PREVIEW_BYTES = 400
DEAD_LETTERS_KEPT = 500


class TopicIndex:
    """Reads a topic forward from where the last call stopped, up to the end offsets taken at the call."""

    def __init__(self, settings: Settings, topic: str) -> None:
        self.settings, self.topic = settings, topic
        self.positions: dict[int, int] = {}
        self.lock = threading.Lock()

    def read_new(self) -> list[Message]:
        with self.lock:
            found = list(read_topic(self.settings, self.topic, starts=self.positions))
            for message in found:
                self.positions[message.partition()] = message.offset() + 1
            return found


@dataclass
class DocumentEntry:
    """One document as the pages topic knows it: every amendment's pages as they arrived."""

    doc_id: str
    name: str = ""
    doc_type: str = ""
    versions: dict[int, dict[int, PageEvent]] = field(default_factory=dict)
    page_counts: dict[int, int] = field(default_factory=dict)
    _types: dict[int, str] = field(default_factory=dict, repr=False)  # a complete version's type, once

    def complete(self, amendment: int) -> bool:
        pages = self.versions.get(amendment, {})
        return all(n in pages for n in range(1, self.page_counts.get(amendment, 0) + 1))

    def assembled(self, amendment: int) -> AssembledDocument | None:
        """The document stream exactly as the assembler built it, or None while pages are missing."""

        if amendment not in self.versions or not self.complete(amendment):
            return None
        return assemble(list(self.versions[amendment].values()))

    def typed(self) -> str:
        """The type the assembler gives the latest complete version (detected unless the pages gave one);
        the pages' own field while none is complete."""
        for amendment in sorted(self.versions, reverse=True):
            if self.complete(amendment):
                if amendment not in self._types:
                    doc = self.assembled(amendment)
                    self._types[amendment] = str(doc.doc_type) if doc is not None else self.doc_type
                return self._types[amendment]
        return self.doc_type

    def summary(self) -> dict[str, Any]:
        return {
            "doc_id": self.doc_id,
            "name": self.name,
            "doc_type": self.typed(),
            "amendments": sorted(self.versions),
            "pages": {a: f"{len(p)}/{self.page_counts[a]}" for a, p in sorted(self.versions.items())},
        }


@dataclass
class LagSample:
    at: float
    rows: dict[tuple[str, str, int], tuple[int, int]]  # (group, topic, partition) -> (committed, end)


class ConsoleData:
    """The console's one way into the bus and the stores."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.codec = codec_for(settings)
        self.pages = TopicIndex(settings, settings.topics.pages)
        self.dead = TopicIndex(settings, settings.topics.dead_letter)
        self.documents: dict[str, DocumentEntry] = {}
        self.letters: list[dict[str, Any]] = []
        self._lag: LagSample | None = None
        self._mongo: Any = None
        self._lock = threading.Lock()
        #: the one tenant a tenant's console serves ("" for the operator's console: every tenant)
        self.tenant = settings.ui_tenant

    def mine(self, doc_id: str | None) -> bool:
        """Whether this console may show the document: any on the operator's, its tenant's on a tenant's."""
        return not self.tenant or (doc_id is not None and tenant_in(doc_id) == self.tenant)

    # -- documents ---------------------------------------------------------------------------------
    def refresh(self) -> None:
        for message in self.pages.read_new():
            try:
                page = read_page(self.settings, self.codec, message.value())
            except BadInput:
                continue  # refused at the door: it is on the dead-letter topic, shown on the bus page
            except Shredded:
                continue  # a purged document: nothing of it can be read
            if not self.mine(page.doc_id):
                continue
            with self._lock:
                entry = self.documents.setdefault(page.doc_id, DocumentEntry(page.doc_id))
                entry.name, entry.doc_type = page.document_name, page.doc_type.value
                entry.versions.setdefault(page.amendment_number, {})[page.page_number] = page
                entry._types.pop(page.amendment_number, None)  # a page again: its version is typed again
                entry.page_counts[page.amendment_number] = page.page_count

    def document_list(self) -> list[dict[str, Any]]:
        self.refresh()
        with self._lock:
            return [self.documents[d].summary() for d in sorted(self.documents)]

    def entry(self, doc_id: str) -> DocumentEntry | None:
        self.refresh()
        return self.documents.get(doc_id)

    # -- chunks ------------------------------------------------------------------------------------
    @property
    def mongo(self) -> Any:
        if self._mongo is None:
            from streams.sinks.mongo import MongoSink

            self._mongo = MongoSink.of(self.settings, timeout_ms=3000)
        return self._mongo

    def strategies_of(self, doc_id: str) -> list[str]:
        if not self.mine(doc_id):
            return []
        rows = self.mongo.collection.find({"doc_id": doc_id, "text": {"$exists": True}}, {"strategy": 1})
        return sorted({r["strategy"] for r in rows})

    def chunks(self, doc_id: str, amendment: int, strategy: str) -> list[dict[str, Any]]:
        """One lineage's chunks of a version: the running chunker's, else the one stored last (a replay
        with a new chunker version leaves the old lineage retired beside it)."""

        query = {"doc_id": doc_id, "amendment_number": amendment, "strategy": strategy, "text": {"$exists": True}}
        rows = list(self.mongo.collection.find(query)) if self.mine(doc_id) else []
        if not rows:
            return []
        by_lineage: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            by_lineage[row.get("chunker_version", "")].append(row)
        current = lineage(self.settings, strategy)
        chosen = (
            current
            if current in by_lineage
            else max(by_lineage, key=lambda v: (max(r.get("stored_ms", 0) for r in by_lineage[v]), v))
        )
        return sorted(by_lineage[chosen], key=lambda r: r.get("position", 0))

    def chunk(self, chunk_id: str) -> dict[str, Any] | None:
        rows = self.mongo.by_ids([chunk_id], tenant=self.tenant or None)
        return rows[0] if rows else None

    # -- trace, bus, search ------------------------------------------------------------------------
    def status(self, doc_id: str, strategies: list[str]) -> dict[str, Any]:

        if not self.mine(doc_id):
            raise ValueError(f"no pages of {doc_id!r} on {self.settings.topics.pages}")
        stores = audit_stores(self.settings, ["mongo", "vectors"])
        try:
            return document_status(self.settings, doc_id, stores, strategies)
        finally:
            for store in stores:
                store.close()

    def lag(self) -> dict[str, Any]:
        """Every group's lag per partition, and rates since the previous call (records per second
        produced to the partition and committed by the group)."""

        if self.tenant:  # the deployment's groups and offsets are the operator's, not one tenant's
            return {"partitions": [], "totals": {}, "total_lag": 0}
        report = lag_report(self.settings)
        now = time.monotonic()
        rows = {(r["group"], r["topic"], r["partition"]): (r["committed"], r["end"]) for r in report["partitions"]}
        previous = self._lag
        for r in report["partitions"]:
            r["produced_per_s"] = r["consumed_per_s"] = None
            if previous is not None and now > previous.at:
                before = previous.rows.get((r["group"], r["topic"], r["partition"]))
                if before is not None:
                    span = now - previous.at
                    r["produced_per_s"] = round(max(0, r["end"] - before[1]) / span, 2)
                    if r["committed"] >= 0 and before[0] >= 0:
                        r["consumed_per_s"] = round(max(0, r["committed"] - before[0]) / span, 2)
        self._lag = LagSample(now, rows)
        return report

    def dead_letters(self) -> list[dict[str, Any]]:
        """The newest dead letters first: reason, stage, where the input came from, a safe preview."""
        for message in self.dead.read_new():
            try:
                letter = DeadLetter(**self.codec.decode("dead_letter", message.value()))
            except Exception as exc:  # a dead letter we cannot read is itself worth showing
                letter = DeadLetter(
                    reason_code="unreadable",
                    reason=f"not a dead-letter record: {exc}",
                    stage="console",
                    source_topic=self.settings.topics.dead_letter,
                    source_partition=message.partition(),
                    source_offset=message.offset(),
                    value=message.value(),
                )
            if not self.mine(letter.doc_id):
                continue
            with self._lock:
                self.letters.append({**letter.model_dump(exclude={"key", "value"}), "preview": preview(letter.value)})
                del self.letters[:-DEAD_LETTERS_KEPT]
        with self._lock:
            return list(reversed(self.letters))

    def search(
        self,
        question: str,
        k: int = 5,
        strategy: str | None = None,
        filters: Sequence[str] = (),
        principal: str | None = None,
        tenant: str | None = None,
    ) -> list[dict[str, Any]]:

        return search(self.settings, question, k, strategy, filters, principal, self.tenant or tenant)

    # -- try a file, publish -----------------------------------------------------------------------
    def read_upload(self, filename: str, data: bytes, doc_type: str | None) -> list[PageEvent]:
        """An uploaded or pasted document as page events, through the same ingest path as `streams chunk`."""

        name = Path(filename or "pasted.md").name or "pasted.md"
        if "." not in name:
            name += ".md"
        with tempfile.TemporaryDirectory(prefix="streams-ui-") as tmp:
            path = Path(tmp) / name
            path.write_bytes(data)
            return page_events(path, doc_type=DocType(doc_type) if doc_type else None)

    def publish(self, pages: list[PageEvent]) -> int:
        from streams.ops.pipeline import publish_pages

        publish_pages(self.settings, pages)
        return len(pages)

    def close(self) -> None:
        if self._mongo is not None:
            self._mongo.close()


def preview(value: bytes | None) -> str:
    """The first bytes of a dead letter's input as text a person can read: UTF-8 where it decodes,
    every control character but newline and tab shown as a code point (the page escapes the rest)."""
    if not value:
        return ""
    text = value[:PREVIEW_BYTES].decode("utf-8", "replace")
    shown = "".join(c if c in "\n\t" or c.isprintable() else f"\\x{ord(c):02x}" for c in text)
    return shown + ("…" if len(value) > PREVIEW_BYTES else "")
