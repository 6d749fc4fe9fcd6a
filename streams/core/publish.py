"""What one strategy publishes for one assembled document: the one path, used by the workers, `streams chunk`
and `check`, the audit's repair, the console and the benches, so all of them give the same records.

Routing comes first: a document whose type the strategy does not take (its `doc_types` option, the seed's scope by
default), or that the file filter (docs/strategies.md#section-1-scope-and-the-file-filter) excludes from `section`, is
*not applicable*: skipped with a reason, published as a manifest with no chunks, never dead-lettered. Then the chunker
runs and the record builder gives ids, pages, tokens and checksums. A refusal by the chunker (`ChunkingError`) is raised
for the caller to dead-letter: it is a failure of the input, not a question of scope."""

from __future__ import annotations

from dataclasses import dataclass

from streams.core.chunkers.base import Chunker
from streams.core.doctype import GIVEN, routing
from streams.core.events import AssembledDocument, ChunkRecord
from streams.core.records import build_records


@dataclass(frozen=True)
class Published:
    """The records of a document, or (with none) why this strategy skipped it."""

    records: list[ChunkRecord]
    skipped: str = ""  # the reason a document is not applicable; "" when it was chunked

    @property
    def applicable(self) -> bool:
        return not self.skipped


def not_applicable(doc: AssembledDocument, chunker: Chunker) -> str:
    """Why `chunker`'s strategy does not take `doc`, or "" when it does."""
    options = chunker.options
    doc_type = str(doc.doc_type)
    if options is not None and not options.takes(doc_type):
        return f"{chunker.name} takes {', '.join(options.doc_types)}, not {doc_type}{_how_typed(doc)}"
    return chunker.refuses(doc)


def _how_typed(doc: AssembledDocument) -> str:
    """Why the document has its type, when the publisher did not give it: the detector's evidence."""

    decided = routing(doc.metadata)
    if decided is None or decided["source"] == GIVEN:
        return ""
    return f" ({decided['source']}: {'; '.join(decided['evidence'])}; give --doc-type to override)"


def publish(doc: AssembledDocument, chunker: Chunker, is_latest_version: bool = True) -> Published:
    """The records `chunker`'s strategy publishes for `doc` (raises ChunkingError on a refusal)."""

    reason = not_applicable(doc, chunker)
    if reason:
        return Published([], reason)
    return Published(build_records(doc, chunker, chunker.chunk(doc), is_latest_version))
