"""Write the shaped part of the labelled routing set: every base document in the shapes publishers send
(`shaped/docs/`, `shaped/manifest.json`); the hand-written part is `docs/` and `manifest.json`.

Run `python -m streams.bench.routing_set.make` after changing a base text; the output is committed so that
`streams bench routing` reads files as a user's would. Deterministic: the same bases give the same bytes
(the .docx files aside, whose zip timestamps python-docx sets)."""

from __future__ import annotations

import hashlib
import html
import json
import re
import textwrap
from collections.abc import Callable
from pathlib import Path

from streams.bench.routing_set.bases_generic import GENERIC
from streams.bench.routing_set.bases_typed import LETTERS, PRESS, RELEASES, SLIDES, SOLICITATIONS, TRANSCRIPTS

HERE = Path(__file__).resolve().parent / "shaped"
DOCS = HERE / "docs"

#: (label, base texts, the shapes of each base in turn)
TYPED: list[tuple[str, dict[str, str], list[list[str]]]] = [
    (
        "letter",
        LETTERS,
        [["raw_pdf", "markdown", "lowercased", "page_json"], ["docx", "hard_wrapped", "no_blank_lines"],
         ["html", "raw_pdf", "lowercased"]],
    ),
    (
        "transcript",
        TRANSCRIPTS,
        [["markdown", "raw_pdf", "no_blank_lines"], ["html", "lowercased", "page_json"],
         ["docx", "hard_wrapped", "raw_pdf"]],
    ),
    (
        "release",
        RELEASES,
        [["markdown", "html", "raw_pdf"], ["page_json", "lowercased", "no_blank_lines"],
         ["hard_wrapped", "docx", "markdown"]],
    ),
    (
        "slides",
        SLIDES,
        [["page_json", "raw_pdf", "markdown"], ["docx", "lowercased", "page_json"], ["markdown", "html", "raw_pdf"]],
    ),
    (
        "press",
        PRESS,
        [["markdown", "html", "lowercased"], ["raw_pdf", "docx", "page_json"],
         ["hard_wrapped", "no_blank_lines", "html"]],
    ),
    (
        "solicitation",
        SOLICITATIONS,
        [["markdown", "docx", "lowercased"], ["raw_pdf", "hard_wrapped", "page_json"], ["html", "no_blank_lines"],
         ["raw_pdf", "markdown"]],
    ),
]  # fmt: skip

GENERIC_SHAPES = ["markdown", "raw_pdf", "html", "docx", "page_json", "lowercased", "hard_wrapped", "no_blank_lines"]

#: Names as a publisher might send them (some with no hint, one misleading); every other file is `doc_NNN`.
NAMED = {
    ("letter", "alder", "raw_pdf"): "AMH_annual_2030_scan.txt",
    ("solicitation", "rfq_it", "markdown"): "Draft_RFQfor_Cloud_Hosting.md",
    ("solicitation", "pws_custodial", "raw_pdf"): "Attachment_J1.txt",
    ("solicitation", "qasp", "html"): "Attachment_J2.html",
    ("transcript", "lumen", "markdown"): "LGC_Q3_2031.md",
    ("release", "brightwater", "markdown"): "bwf-q4-2031.md",
    ("press", "orchard", "markdown"): "orchard_news.md",
    ("slides", "lumen_deck", "page_json"): "investor_day.json",
    ("generic", "news", "raw_pdf"): "danforth_earnings_coverage.txt",
    ("generic", "novel", "html"): "letters_from_the_farm.html",
}

PIPE_ROW = re.compile(r"^\|(.*)\|\s*$")
RULE_ROW = re.compile(r"^\|[\s:|-]+\|\s*$")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in PIPE_ROW.match(line).group(1).split("|")]


def _plain(text: str) -> str:
    """Markdown without its marks: headings as lines, pipe tables as columns aligned with runs of spaces."""
    out: list[str] = []
    rows: list[list[str]] = []

    def flush() -> None:
        if rows:
            widths = [max(len(r[i]) for r in rows if i < len(r)) for i in range(max(map(len, rows)))]
            out.extend("    ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in rows)
            rows.clear()

    for line in text.split("\n"):
        if RULE_ROW.match(line):
            continue
        if PIPE_ROW.match(line):
            rows.append(_cells(line))
            continue
        flush()
        out.append(re.sub(r"^#+\s*", "", line))
    flush()
    return "\n".join(out)


def _pages(text: str, size: int = 1300) -> list[str]:
    """The base's own pages (`\\f`), or pages of about `size` characters cut at blank lines."""
    if "\f" in text:
        return [p.strip("\n") for p in text.split("\f")]
    pages, current = [], ""
    for block in text.split("\n\n"):
        if current and len(current) + len(block) > size:
            pages.append(current)
            current = ""
        current = f"{current}\n\n{block}" if current else block
    return [*pages, current] if current else pages


def raw_pdf(text: str) -> str:
    """As text extraction leaves a PDF: no marks, aligned columns, a running header and a page number on
    every page, form feeds between pages."""
    plain = _pages(_plain(text))
    header = next(line for line in _plain(text).split("\n") if line.strip())[:50]
    return "\f".join(f"{header.upper():>90}\n\n{page}\n\n{number:>88}\n" for number, page in enumerate(plain, start=1))


def markdown(text: str) -> str:
    return text


def lowercased(text: str) -> str:
    return _plain(text).lower()


def hard_wrapped(text: str) -> str:
    """Every paragraph wrapped at 70 columns, as some exports do; tables and bullets wrap too."""
    blocks = _plain(text).replace("\f", "\n\n").split("\n\n")
    return "\n\n".join(textwrap.fill(" ".join(b.split()), 70) for b in blocks if b.strip()) + "\n"


def no_blank_lines(text: str) -> str:
    return "\n".join(line for line in _plain(text).replace("\f", "\n").split("\n") if line.strip()) + "\n"


def _blocks(text: str) -> list[tuple[str, object]]:
    """Markdown as (kind, value) blocks: heading, paragraph, bullets, table."""
    blocks: list[tuple[str, object]] = []
    for raw in re.split(r"\n\s*\n|\f", text):
        lines = [line for line in raw.split("\n") if line.strip()]
        if not lines:
            continue
        if all(PIPE_ROW.match(line) for line in lines):
            blocks.append(("table", [_cells(line) for line in lines if not RULE_ROW.match(line)]))
        elif all(re.match(r"^\s*(?:[-•]|\d+\.)\s", line) for line in lines):
            blocks.append(("bullets", [re.sub(r"^\s*(?:[-•]|\d+\.)\s+", "", line) for line in lines]))
        elif len(lines) == 1 and (lines[0].startswith("#") or (len(lines[0]) < 70 and not lines[0].endswith("."))):
            blocks.append(("heading", re.sub(r"^#+\s*", "", lines[0])))
        else:
            blocks.append(("paragraph", " ".join(line.strip() for line in lines)))
    return blocks


def to_html(text: str) -> str:
    parts = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'><title>page</title></head><body>"]
    first = True
    for kind, value in _blocks(text):
        if kind == "heading":
            tag = "h1" if first else "h2"
            parts.append(f"<{tag}>{html.escape(str(value))}</{tag}>")
        elif kind == "paragraph":
            parts.append(f"<p>{html.escape(str(value))}</p>")
        elif kind == "bullets":
            parts.append("<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in value) + "</ul>")
        else:
            rows = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in value)
            parts.append(f"<table>{rows}</table>")
        first = False
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_docx(text: str, path: Path) -> None:
    import docx

    document = docx.Document()
    first = True
    for kind, value in _blocks(text):
        if kind == "heading":
            document.add_heading(str(value), level=0 if first else 1)
        elif kind == "paragraph":
            document.add_paragraph(str(value))
        elif kind == "bullets":
            for item in value:
                document.add_paragraph(item, style="List Bullet")
        else:
            table = document.add_table(rows=len(value), cols=max(map(len, value)))
            for r, row in enumerate(value):
                for c, cell in enumerate(row):
                    table.cell(r, c).text = cell
        first = False
    import datetime

    stamp = datetime.datetime(2032, 1, 1, tzinfo=datetime.UTC)  # not the run's time in the file
    document.core_properties.created = document.core_properties.modified = stamp
    document.save(str(path))


def page_json(text: str, name: str) -> str:
    pages = _pages(text)
    return json.dumps(
        {"doc_id": name, "document_name": name + ".pdf", "pages": [{"page_number": n, "text": t} for n, t in
                                                                   enumerate(pages, start=1)]},
        indent=2,
        ensure_ascii=False,
    ) + "\n"  # fmt: skip


SUFFIX = {"markdown": ".md", "html": ".html", "docx": ".docx", "page_json": ".json"}
TEXT_SHAPES: dict[str, Callable[[str], str]] = {
    "markdown": markdown,
    "raw_pdf": raw_pdf,
    "lowercased": lowercased,
    "hard_wrapped": hard_wrapped,
    "no_blank_lines": no_blank_lines,
    "html": to_html,
}


def plan() -> list[tuple[str, str, str, str]]:
    """(label, base, shape, text) of every document in the set."""
    items = []
    for label, bases, shapes in TYPED:
        for (base, text), base_shapes in zip(bases.items(), shapes, strict=True):
            items += [(label, base, shape, text) for shape in base_shapes]
    for index, (base, text) in enumerate(GENERIC.items()):
        items.append(("generic", base, GENERIC_SHAPES[index % len(GENERIC_SHAPES)], text))
    return items


def file_names(items: list[tuple[str, str, str, str]]) -> list[str]:
    """A publisher's name where `NAMED` has one, else `doc_NNN` numbered in an order no label shows (the
    order of a hash of each document's key)."""
    keys = [f"{label}/{base}/{shape}" for label, base, shape, _ in items]
    order = sorted(range(len(keys)), key=lambda i: hashlib.sha256(keys[i].encode()).hexdigest())
    rank = {index: position for position, index in enumerate(order, start=1)}
    names = []
    for index, (label, base, shape, _) in enumerate(items):
        named = NAMED.get((label, base, shape))
        names.append(named or f"doc_{rank[index]:03d}{SUFFIX.get(shape, '.txt')}")
    return names


def main() -> None:
    DOCS.mkdir(parents=True, exist_ok=True)
    for old in DOCS.iterdir():
        old.unlink()
    manifest = []
    items = plan()
    for (label, base, shape, text), name in zip(items, file_names(items), strict=True):
        path = DOCS / name
        assert not path.exists(), f"two documents named {name}"
        if shape == "docx":
            write_docx(text, path)
        elif shape == "page_json":
            path.write_text(page_json(text, path.stem), encoding="utf-8")
        else:
            path.write_text(TEXT_SHAPES[shape](text), encoding="utf-8")
        manifest.append({"file": name, "label": label, "shape": shape, "base": base})
    manifest.sort(key=lambda entry: entry["file"])
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(manifest)} documents to {DOCS}")


if __name__ == "__main__":
    main()
