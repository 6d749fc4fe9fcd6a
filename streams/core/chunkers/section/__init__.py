"""Structure-based section chunking for solicitations (seed 002).

Phase 1: headings are detected line by line (Markdown `#`, `SECTION 1:` / `ARTICLE II` / `PART 3`
style labels, numbered titles such as `1.2 Title`, short ALL-CAPS lines, short lines ending in a colon).
Each section (heading plus body) is classified by keywords into requirement, specification, condition,
evaluation_criteria, scope_of_work or other: keywords in the heading decide; otherwise the body keyword
with the most hits (at least two) decides. A section of at most `max_tokens` is one chunk; a longer one
is packed at paragraph boundaries toward `min_tokens`..`max_tokens`, refining to sentences, then words.
Phase 2: `requirement_flag` is set when the chunk text contains shall/must/required/requirement/mandatory
(or the chunk is part of a sentence that does). Tables (pipe tables, tab-separated rows, aligned
numeric columns, CLIN / line item rows) are cut out of the prose as their own chunks with
`is_table=True` and `table_kind` "pricing_table" when pricing, CLIN or line item wording is present;
sinks keep them out of the vector store.
Phase 3: without any heading the paragraph fallback packs paragraphs to the same token bounds.
`is_critical` = the section is a requirement or evaluation_criteria section, or the chunk carries the
requirement flag: the chunks a bid team must not miss.
Stages: `headings` (phase 1's detection), `keywords` (section types and the requirement words),
`chunker` (sections packed to the bounds, tables cut out, flags), and `filter`, the file filter of
docs/strategies.md#section-1-scope-and-the-file-filter
(`file_filter_decision`), a pure function the publisher applies per document.
"""

from streams.core.chunkers.base import Strategy, token_limits
from streams.core.chunkers.section.chunker import SectionChunker
from streams.core.chunkers.section.conformance import rules
from streams.core.chunkers.section.filter import DEFAULT_EXCLUDE, DEFAULT_INCLUDE, file_filter_decision
from streams.core.chunkers.section.headings import detect_heading, find_headings
from streams.core.chunkers.section.keywords import SECTION_TYPES, classify_section
from streams.core.chunkers.section.options import SectionOptions

STRATEGY = Strategy("section", SectionOptions, f"{__name__}.chunker:SectionChunker", limits=token_limits, rules=rules)

__all__ = [
    "DEFAULT_EXCLUDE",
    "DEFAULT_INCLUDE",
    "SECTION_TYPES",
    "STRATEGY",
    "SectionChunker",
    "SectionOptions",
    "classify_section",
    "detect_heading",
    "file_filter_decision",
    "find_headings",
]
