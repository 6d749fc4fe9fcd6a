"""Layout blocks of a document stream for the hybrid strategy: headings, paragraphs, list items,
tables, captions and code, each with its exact [start, end) range in `doc.text` and its page.

Heuristics (the stream is cleaned text, not layout): Markdown `#` headings (`#` = title level 0,
`##` = 1, ...), wiki `= = Name = =` headings, numbered headings (`2.1 Scope` = level 2) when the
line stands alone, short all-caps lines and short Title Case lines standing alone (level 1), and
headings named by upstream `elements`; pipe tables and column aligned tables (two or more
consecutive rows split by 2+ spaces or tabs); list items with continuation lines; fenced code;
`Table N:`/`Figure N:` captions. Lines over 150 characters are unwrapped paragraphs of their own.
Blocks never cross a page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from streams.core.document import page_text_ranges
from streams.core.events import AssembledDocument
from streams.core.text import COLUMN_GAP, LETTER_WORD, WIKI_HEADING, line_spans, paragraph_spans

HEADING_ELEMENT_KINDS = frozenset({"section_header", "section", "heading", "header", "title", "slide_title"})

_MD_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_NUMBERED_HEADING = re.compile(r"^(\d{1,2}(?:\.\d{1,2})*)\.?[ \t]+([A-Z][^\n]{0,90})$")
_LIST_ITEM = re.compile(r"^[ \t]*(?:([-*+•‣◦])|(\d{1,3}[.)])|([a-zA-Z][.)]))[ \t]+\S")
_PIPE_SEPARATOR = re.compile(r"^[\s|:\-+=]+$")
_CAPTION = re.compile(r"^(?:Table|Figure|Fig\.|Exhibit)\s+\d+[.:]", re.IGNORECASE)
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


@dataclass(frozen=True, eq=False)
class Block:
    """One layout element; identity matters (two equal paragraphs are two blocks)."""

    kind: str  # heading, text, list_item, table, caption, code
    start: int
    end: int
    page: int
    text: str
    level: int = 0
    enumerated: bool = False
    marker: str = ""
    rows: list[list[str]] = field(default_factory=list)


def parse_blocks(doc: AssembledDocument) -> list[Block]:
    """All blocks in reading order."""
    hints = _heading_hints(doc)
    blocks: list[Block] = []
    for page, start, end in page_text_ranges(doc.page_map):
        for p_start, p_end in paragraph_spans(doc.text, start, end):
            blocks.extend(_paragraph_blocks(doc.text, p_start, p_end, page, hints))
    return blocks


def _heading_hints(doc: AssembledDocument) -> dict[str, int]:
    hints: dict[str, int] = {}
    for element in doc.elements:
        if element.kind.lower() in HEADING_ELEMENT_KINDS and element.text.strip():
            level = 0 if element.kind.lower() == "title" else element.level if element.level is not None else 1
            hints[_norm(element.text)] = max(0, level)
    return hints


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _paragraph_blocks(text: str, start: int, end: int, page: int, hints: dict[str, int]) -> list[Block]:
    lines = [(s, e) for s, e in line_spans(text, start, end) if text[s:e].strip()]
    out: list[Block] = []
    i = 0
    while i < len(lines):
        i = _take(text, lines, i, page, hints, out)
    return out


def _take(text: str, lines: list[tuple[int, int]], i: int, page: int, hints: dict[str, int], out: list[Block]) -> int:
    """Consume the block starting at line i; return the index of the next unconsumed line."""
    s, e = lines[i]
    line = text[s:e]
    if _FENCE.match(line):
        j = i + 1
        while j < len(lines) and not _FENCE.match(text[lines[j][0] : lines[j][1]]):
            j += 1
        j = min(j, len(lines) - 1)
        out.append(Block("code", s, lines[j][1], page, text[s : lines[j][1]]))
        return j + 1
    heading = _heading(line, standalone=len(lines) == 1 or i == 0, next_line=_line(text, lines, i + 1), hints=hints)
    if heading is not None:
        level, title = heading
        out.append(Block("heading", s, e, page, title, level=level))
        return i + 1
    for is_row, parse in ((_is_pipe_row, _pipe_cells), (_is_aligned_row, _aligned_cells)):
        j = i
        while j < len(lines) and is_row(text[lines[j][0] : lines[j][1]]):
            j += 1
        if j - i >= 2:
            rows = [parse(text[a:b]) for a, b in lines[i:j] if not _PIPE_SEPARATOR.match(text[a:b])]
            table_text = text[s : lines[j - 1][1]]
            out.append(Block("table", s, lines[j - 1][1], page, table_text, rows=[r for r in rows if r]))
            return j
    item = _LIST_ITEM.match(line)
    if item:
        j = i + 1
        while j < len(lines) and _continues_item(text[lines[j][0] : lines[j][1]]):
            j += 1
        marker = (item.group(1) or item.group(2) or item.group(3) or "").strip()
        body_start = s + item.end() - 1
        out.append(
            Block(
                "list_item",
                s,
                lines[j - 1][1],
                page,
                " ".join(text[body_start : lines[j - 1][1]].split()),
                enumerated=item.group(1) is None,
                marker=marker,
            )
        )
        return j
    kind = "caption" if _CAPTION.match(line.strip()) else "text"
    j = i + 1
    while j < len(lines) and _plain(text, lines, j, hints):
        j += 1
    out.append(Block(kind, s, lines[j - 1][1], page, text[s : lines[j - 1][1]]))
    return j


def _line(text: str, lines: list[tuple[int, int]], i: int) -> str | None:
    return text[lines[i][0] : lines[i][1]] if i < len(lines) else None


def _plain(text: str, lines: list[tuple[int, int]], j: int, hints: dict[str, int]) -> bool:
    """A line that continues a paragraph (not the start of another kind of block)."""
    line = text[lines[j][0] : lines[j][1]]
    if lines[j - 1][1] - lines[j - 1][0] > 150:  # unwrapped text: one line is one paragraph
        return False
    if _FENCE.match(line) or _LIST_ITEM.match(line) or _MD_HEADING.match(line) or WIKI_HEADING.match(line):
        return False
    if _is_pipe_row(line):
        return False
    if _norm(line) in hints or _is_caps_heading(line):
        return False
    nxt = _line(text, lines, j + 1)
    return not (_is_aligned_row(line) and nxt is not None and _is_aligned_row(nxt))


def _heading(line: str, standalone: bool, next_line: str | None, hints: dict[str, int]) -> tuple[int, str] | None:
    """(level, title) when the line is a heading: 0 title, 1 section, 2 subsection..."""
    md = _MD_HEADING.match(line)
    if md:
        return len(md.group(1)) - 1, md.group(2).strip()
    wiki = WIKI_HEADING.match(line)
    if wiki and len(line) <= 150 and any(c.isalnum() for c in wiki.group(2)):
        return wiki.group(1).count("=") - 1, wiki.group(2).strip()
    stripped = line.strip()
    if _norm(stripped) in hints:
        return hints[_norm(stripped)], stripped
    numbered = _NUMBERED_HEADING.match(stripped)
    if (
        numbered
        and standalone
        and not stripped.endswith((".", ",", ";", ":"))
        and len(stripped.split()) <= 12
        and (next_line is None or not _LIST_ITEM.match(next_line))
    ):
        return numbered.group(1).rstrip(".").count(".") + 1, stripped
    if _is_caps_heading(stripped) or (standalone and next_line is None and _is_title_line(stripped)):
        return 1, stripped
    return None


# A form field or a record key ("NAICS: 561990", "PMID: 0", "SIZE STANDARD: 6.0"), not a heading.
_FIELD = re.compile(
    r"^(?!\W*(?:SECTION|SEC\.|ARTICLE|PART|ATTACHMENT|APPENDIX|EXHIBIT|ANNEX|CHAPTER)\b)"
    r"[^:]{1,40}:\s*(?:\S*[\d_]\S*|\S+)\s*$",
    re.I,
)
# An abbreviation glued to its expansion, as glossaries come out of PDFs ("RBPreticulocyte-binding protein").
_GLUED = re.compile(r"^[A-Z]{2,}[a-z]{5,}")


def _is_title_line(line: str) -> bool:
    """A short Title Case line standing alone as a paragraph ("Sources of Reported Earnings")."""
    if _GLUED.match(line):
        return False
    words = line.split()
    long_words = [w for w in words if len(w) > 3]
    return (
        0 < len(words) <= 8
        and len(line) <= 70
        and line[0].isupper()
        and not line.endswith((".", ";", "!", "?"))
        and not any(c in line for c in ",:")
        and bool(long_words)
        and sum(w[0].isupper() for w in long_words) * 2 >= len(long_words)
        and not _is_aligned_row(line)
    )


def _is_caps_heading(line: str) -> bool:
    stripped = line.strip()
    letters = [c for c in stripped if c.isalpha()]
    return (
        len(letters) >= 3
        and len(stripped) <= 80
        and len(stripped.split()) <= 12
        and stripped.upper() == stripped
        and not stripped.endswith((",", ";"))
        and not _is_aligned_row(stripped)
        and sum(c.isdigit() for c in stripped) <= len(letters)
        and not _FIELD.match(stripped)
        and (len(LETTER_WORD.findall(stripped)) >= 2 or len(letters) >= 5)
    )


def _is_pipe_row(line: str) -> bool:
    """Pipes that separate cells; "||" is an operator in code (SQL concatenation, shell), not a cell."""
    return line.replace("||", "").count("|") >= 2  # a lone "|" down a form's margin is no column


# A cell that ends as a clause does (full stop, comma, semicolon, colon, a closing quote or bracket after
# one), unless it is a figure ("12.", "3.5") or a leader of dots ("Total assets .....").
_CLAUSE_END = re.compile(r"[.,;:][\"'”’)\]]?$")
_FIGURE = re.compile(r"^[-+−–(]?[$€£]?\d[\d,.]*%?\)?\.?$")
_LEADER = re.compile(r"(?:\.\s*){3,}$|…$")
# Citation parts: "2019;294(12):4567-4578", "12(3):45", "pp. 45", "vol. 7", "doi:", a URL, "et al".
_CITATION = re.compile(
    r"\b(?:1[5-9]|20)\d{2}[a-z]?\s*;\s*\d|\d+\s*\(\d+\)\s*:\s*\d|\b(?:pp?|vol|no)\.\s*\d|\bdoi\b|https?://|\bet al\b",
    re.I,
)
# An author list in citation form, two names or more: "Smith JA, Doe B", "Smith, J. A., and Doe, B." (one
# name alone reads like a column head: "Class A", "Series B").
_AUTHOR = r"[A-Z][\w'’-]+,? (?:[A-Z]\.? ?){1,3}"
_AUTHORS = re.compile(rf"^{_AUTHOR}(?:, ?(?:and |& )?{_AUTHOR})+,?$")


def _is_prose_cell(cell: str) -> bool:
    """A sentence, a citation part or an author list: what a reference entry or spaced-out prose splits
    into at its double spaces. Table cells are names of things and figures, and rarely end a clause."""
    if _FIGURE.match(cell) or _LEADER.search(cell):
        return False
    return bool(_CLAUSE_END.search(cell) or _CITATION.search(cell) or _AUTHORS.match(cell))


# A reference's fields when extraction splits them into cells at runs of spaces and drops their punctuation
# ("Okafor N, Marsh T   Tidal mixing in shallow estuaries   J Coastal Res   2019   35(4)   812-820   PMID 3123").
_FIELD_MARK = r"[.,;:]?"
_REFERENCE_FIELDS: dict[str, re.Pattern[str]] = {
    "authors": re.compile(rf"^{_AUTHOR}(?:, ?(?:and |& )?{_AUTHOR})*(?:,? et al\.?)?{_FIELD_MARK}$"),
    "year": re.compile(rf"^\(?(?:1[89]|20)\d{{2}}[a-z]?\)?{_FIELD_MARK}$"),
    "volume": re.compile(rf"^(?:vol\.? ?)?\d{{1,4}}\(\d{{1,4}}(?:[-–]\d{{1,4}})?\){_FIELD_MARK}$", re.I),
    "pages": re.compile(rf"^(?:pp?\. ?)?[A-Z]?\d{{1,6}} ?[-–] ?[A-Z]?\d{{1,6}}{_FIELD_MARK}$"),
    "identifier": re.compile(r"^(?:(?:PMID|PMCID|DOI)\s*:?\s*\S+|PMC\d{5,}|10\.\d{4,9}/\S+|https?://\S+)$", re.I),
}
# A list number before the reference ("12", "12.", "[12]").
_REFERENCE_NUMBER = re.compile(r"^\[?\d{1,4}[.)\]]?$")


def _reference_fields(cells: list[str]) -> set[str]:
    """Which kinds of reference field a row's cells are: authors, title, year, volume, pages, identifier.

    A title is four words or more of letters; authors count as "authors+" when two names or more."""
    kinds: set[str] = set()
    for index, cell in enumerate(cells):
        if index == 0 and _REFERENCE_NUMBER.match(cell):
            continue
        for kind, pattern in _REFERENCE_FIELDS.items():
            if pattern.match(cell):
                kinds.add(kind)
                if kind == "authors" and ("," in cell or " and " in cell or " & " in cell):
                    kinds.add("authors+")
                break
        else:
            words = cell.split()
            if len(words) >= 4 and sum(w.isalpha() for w in words) * 4 >= len(words) * 3:
                kinds.add("title")
    return kinds


def _is_reference_row(cells: list[str]) -> bool:
    """One reference whose fields the extraction split at runs of spaces: three kinds of field or more,
    one of them what no table of figures holds (an identifier, a volume with its issue, an author list),
    or four with a title (a lone author, a title, a year, pages). A table's label, year and range columns
    ("Group A   2019   18-24") are too few of these, and a description column ("Replace the worn seal")
    with a year and weeks is a title without the rest."""
    kinds = _reference_fields(cells)
    telling = kinds & {"identifier", "volume", "authors+"}
    return (len(kinds - {"authors+"}) >= 3 and bool(telling)) or len(kinds & {"authors", "title", "year", "pages"}) == 4


def _is_aligned_row(line: str) -> bool:
    """Columns: three or more short cells, or a label and a figure. Prose set with two spaces after each
    full stop (pdftotext, reference lists) is no table row: its cells are long, or most of them end as
    clauses do or are citation parts ("J Biol Chem.", "2019;294(12):4567-4578."), or the cells are the
    fields of one reference (authors, title, year, volume, pages, PubMed id or DOI)."""
    cells = [c for c in COLUMN_GAP.split(line.strip()) if c]
    if len(cells) >= 2 and sum(_is_prose_cell(c) for c in cells) * 2 > len(cells):
        return False
    if len(cells) >= 4 and _is_reference_row(cells):
        return False
    if len(cells) >= 3:
        return sum(len(c) for c in cells) / len(cells) <= 30 or any(ch.isdigit() for c in cells[1:] for ch in c)
    return len(cells) == 2 and any(ch.isdigit() for ch in cells[-1]) and len(cells[-1]) <= 20


def _pipe_cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") else inner
    return [c.strip() for c in inner.split("|")]


def _aligned_cells(line: str) -> list[str]:
    return [c.strip() for c in COLUMN_GAP.split(line.strip()) if c.strip()]


def _continues_item(line: str) -> bool:
    """An indented, non-marker line continues the list item above it."""
    return line[:1] in (" ", "\t") and not _LIST_ITEM.match(line) and not _is_pipe_row(line)
