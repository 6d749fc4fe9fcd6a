"""Shared by the fault-injection tests: deterministic documents, the chunks a clean run produces (computed
in-process, no bus), and reading back what the MongoDB sink stored."""

from __future__ import annotations

import random
import time

from streams.core.document import assemble
from streams.core.events import PageEvent
from streams.core.records import build_records
from streams.sinks.mongo import MongoSink
from tests.conftest import make_pages, strategy_chunker

WORDS = ["tide", "harbour", "ledger", "sensor", "bridge", "clause", "invoice", "granite", "orchard", "lantern"]


def words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(count)) + "."


def documents(
    count: int, prefix: str, pages: tuple[int, int] = (1, 3), page_words: tuple[int, int] = (80, 400)
) -> list[list[PageEvent]]:
    """`count` documents of `pages` pages each (inclusive range), seeded by their index."""
    docs = []
    for n in range(count):
        rng = random.Random(f"{prefix}-{n}")
        texts = [words(rng, rng.randint(*page_words)) for _ in range(rng.randint(*pages))]
        docs.append(make_pages(f"{prefix}-{n:03d}", texts))
    return docs


def expected_chunks(docs: list[list[PageEvent]], strategy: str = "window") -> dict[str, str]:
    """chunk_id -> checksum of a clean run: assemble, chunk and build the records in this process."""
    chunker = strategy_chunker(strategy)
    expected: dict[str, str] = {}
    for pages in docs:
        doc = assemble(pages)
        for record in build_records(doc, chunker, chunker.chunk(doc)):
            expected[record.chunk_id] = record.checksum
    return expected


def stored_chunks(mongo_url: str, want: int, timeout: float) -> tuple[dict[str, str], int]:
    """chunk_id -> checksum in MongoDB once it holds `want` chunks (or at the timeout), and the raw row count.

    The row count is read separately from the id map so a duplicate row (same id twice) would show.
    """
    sink = MongoSink(mongo_url)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and sink.count() < want:
            time.sleep(0.5)
        rows = list(sink.collection.find({}, {"checksum": 1}))
        return {row["_id"]: row["checksum"] for row in rows}, len(rows)
    finally:
        sink.close()
