"""Tier-1 section chunks and tier-2 table chunks for shareholder letters (seed 000).

The chunker is a pipeline of stages, each a function of what the ones before it returned:

    blocks.read           document -> Letter (blocks, year, date), or refused as no letter
    sections.sections     Letter -> Sections
    pieces.pieces         Sections -> Pieces, over-long sections cut
    merge.merge           Pieces -> Pieces, short ones joined to a neighbour
    merge.repair          Pieces -> Pieces, no cut mid-sentence or mid-list
    tables.table_chunks   Letter -> each table's tier-2 chunk
    drafts.drafts         Pieces + table chunks -> ids, chunks and metadata
    gate.enforce          the seed objects -> nothing, or the letter refused

The rules each stage keeps, in order: docs/strategies.md#letter-1-scope-and-refusals,
docs/strategies.md#letter-4-section-boundaries, docs/strategies.md#letter-5-tiers-and-sizes,
docs/strategies.md#letter-6-merging-short-pieces, docs/strategies.md#letter-10-the-validation-gate (repair),
docs/strategies.md#letter-8-tier-2-table-chunks, docs/strategies.md#letter-2-chunk-objects-ids-and-metadata,
docs/strategies.md#letter-10-the-validation-gate (the gate).
"""

from __future__ import annotations

from typing import Any, ClassVar

from streams.core.chunkers.base import ChunkDraft, Chunker, ChunkingError
from streams.core.chunkers.letter import gate
from streams.core.chunkers.letter.blocks import read
from streams.core.chunkers.letter.drafts import drafts
from streams.core.chunkers.letter.gate import seed_object
from streams.core.chunkers.letter.measure import Tiers, Tokens
from streams.core.chunkers.letter.merge import merge, repair
from streams.core.chunkers.letter.options import LetterOptions
from streams.core.chunkers.letter.pieces import pieces
from streams.core.chunkers.letter.sections import sections
from streams.core.chunkers.letter.tables import table_chunks
from streams.core.events import AssembledDocument, ChunkRecord
from streams.core.tokenizers import Tokenizer


class LetterChunker(Chunker):
    name: ClassVar[str] = "letter"
    version: str = "1.1.1"  # plus the lineage tag, per instance, when options differ from the seed's
    metadata_record: ClassVar[str] = "streams.meta.LetterMetadata"
    options_model = LetterOptions
    options: LetterOptions

    def __init__(self, tokenizer: Tokenizer, **options: Any) -> None:
        super().__init__(tokenizer, **options)
        o = self.options
        self.tiers = Tiers(o.section_min_tokens, o.section_max_tokens, o.section_target_tokens, o.min_tokens)

    def chunk(self, doc: AssembledDocument) -> list[ChunkDraft]:
        if not doc.text.strip():
            return []
        try:
            return chunk_letter(doc, self.tokenizer, self.tiers)
        except ChunkingError:
            raise
        except Exception as exc:  # any other failure is a bug, but the agent must still dead-letter it
            raise ChunkingError(f"letter chunker failed: {type(exc).__name__}: {exc}", "letter_internal") from exc


def chunk_letter(doc: AssembledDocument, tokenizer: Tokenizer, tiers: Tiers) -> list[ChunkDraft]:
    """The stages in order (see the module's docstring); nothing survives the call but the drafts."""
    tokens = Tokens(tokenizer, doc.text)
    letter = read(doc, tokens, tiers.t2_min)
    split = pieces(letter.text, sections(letter), tokens, tiers)
    final = repair(letter.text, merge(letter.text, split, tokens, tiers), tokens, tiers)
    chunks = drafts(letter, final, table_chunks(letter, tokens, tiers.t2_min), tokens)
    seeds = [seed_object(c.draft.text, c.draft.metadata) for c in chunks]
    gate.enforce(seeds, [c.signature_end for c in chunks], tiers.t2_min)
    return [c.draft for c in chunks]


def seed_objects(records: list[ChunkRecord]) -> list[dict[str, Any]]:
    """Canonical seed objects for `streams chunk --format seed` (letter records only)."""
    return [seed_object(r.text, r.metadata) for r in records if r.strategy == LetterChunker.name]
