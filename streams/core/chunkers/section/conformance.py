"""section's own conformance rules: the specification's table wording and requirement typing."""

from __future__ import annotations

import re
from collections.abc import Sequence

from streams.core.chunkers.base import Violation
from streams.core.events import ChunkRecord
from streams.core.tokenizers import Tokenizer

_SEED_TABLE = re.compile(r"[|\t]|\b(?:pricing|clin|line item)\b", re.I)
_SHALL = re.compile(r"\b(?:shall|must)\b", re.I)


def rules(records: Sequence[ChunkRecord], tokenizer: Tokenizer) -> list[Violation]:
    """A chunk with `|`, a tab, pricing, CLIN or line item is a table (docs/strategies.md#section-5-tables); one with
    shall or must is a requirement (docs/strategies.md#section-3-section-types-and-requirement-flags) (flag set, and
    never typed `other`)."""
    out = []
    for r in records:
        m = r.metadata
        found = _SEED_TABLE.search(r.text)
        if found and not m.get("is_table"):
            out.append(Violation("table rule", r.position, f"has {found.group(0)!r} but is_table is false"))
        if _SHALL.search(r.text) and not m.get("is_table"):
            if not m.get("requirement_flag"):
                out.append(Violation("requirement flag", r.position, "shall/must without requirement_flag"))
            if m.get("section_type") == "other":
                out.append(Violation("requirement type", r.position, "shall/must in a chunk typed other"))
    return out
