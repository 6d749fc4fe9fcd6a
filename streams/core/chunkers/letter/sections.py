"""Stage 2, sections (docs/strategies.md#letter-4-section-boundaries): headers, separators, page breaks on a change of
topic; the signature ends the letter body and whatever follows it is an appendix."""

from __future__ import annotations

import re
from dataclasses import dataclass

from streams.core.chunkers.letter.blocks import Letter
from streams.core.chunkers.letter.layout import LIST_MARKER, Block, ends_sentence

STOP = set(
    [
        "that",
        "this",
        "with",
        "have",
        "from",
        "they",
        "their",
        "there",
        "which",
        "would",
        "been",
        "were",
        "will",
        "what",
        "when",
        "about",
        "into",
        "than",
        "then",
        "them",
        "these",
        "those",
        "also",
        "more",
        "most",
        "some",
        "such",
        "only",
        "over",
        "other",
        "very",
        "just",
        "each",
        "year",
        "years",
        "last",
    ]
)


@dataclass(frozen=True, slots=True)
class Section:
    """Blocks under one heading. A separator or a page break that changes topic starts a new section with
    the same `major`, so that ids number the headings, not the breaks."""

    major: int
    title: str
    hierarchy: tuple[str, ...]
    blocks: tuple[Block, ...]


def sections(letter: Letter) -> tuple[Section, ...]:
    """The letter's sections in order; those without a paragraph or a table are dropped, unless none has one."""
    found: list[Section] = []
    major, title, hierarchy = 1, "Introduction", ("Letter Body", "Introduction")
    current: list[Block] = []
    after_signature = False
    prev_para: Block | None = None

    def close() -> None:
        if current:
            found.append(Section(major, title, hierarchy, tuple(current)))

    for b in letter.blocks:
        if b.kind == "header":
            close()
            major += 1 if current else 0
            title = b.title
            hierarchy = ("Appendix" if after_signature else "Letter Body", title)
            current = [b]
        elif b.kind == "separator":
            close()
            current = []
        elif b.kind == "signature":
            current.append(b)
            found.append(Section(major, title, hierarchy, tuple(current)))
            after_signature, major = True, major + 1
            title, hierarchy = "Postscript", ("Appendix", "Postscript")
            current = []
        else:
            if b.page_break_before and prev_para is not None and current and topic_changed(letter.text, prev_para, b):
                close()
                current = []
            current.append(b)
        if b.kind == "para":
            prev_para = b
    close()
    return tuple(s for s in found if any(b.kind in {"para", "table"} for b in s.blocks)) or tuple(found)


def topic_changed(text: str, before: Block, after: Block) -> bool:
    """A finished paragraph and the next page's first share almost no content words."""
    if after.kind != "para" or not ends_sentence(before.lines[-1]):
        return False
    if LIST_MARKER.match(after.lines[0].strip()):  # a list that runs on to the next page is one topic
        return False
    a, b = _content_words(text[before.start : before.end]), _content_words(text[after.start : after.end])
    if not a or not b:
        return False
    return len(a & b) / len(a | b) < 0.05


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]{5,}", text.lower()) if w not in STOP}
