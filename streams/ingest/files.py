"""Files to page events: PDF page by page (docling's native backend, no models), Markdown/text split on
form feeds or `[[PAGE_BREAK]]`, DOCX/HTML through docling, and the JSON document format
(docs/strategies.md#stream-1-input-documents)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from streams.core.doctype import given_type
from streams.core.events import DocType, PageEvent

PAGE_BREAK = re.compile(r"\f|\[\[PAGE_BREAK\]\]")
TEXT_SUFFIXES = {".txt", ".md", ".markdown", ".text"}
DOCLING_SUFFIXES = {".docx", ".html", ".htm", ".xhtml"}


class IngestError(ValueError):
    """A file that cannot become page events; the message names the file and the problem."""


def decode_text(raw: bytes) -> tuple[str, str]:
    """Decode deliberately: UTF-8 (with or without BOM) first, else the detected legacy encoding.

    Returns (text, encoding). Windows-1252 transcripts are common; charset-normalizer picks among
    legacy code pages when UTF-8 fails, and we never decode with replacement characters silently.
    """
    try:
        return raw.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError:
        pass
    try:
        return raw.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(raw).best()
    if best is None:
        raise IngestError("cannot detect the text encoding")
    return str(best), best.encoding


_VERSIONED = re.compile(r"^(?P<base>.+?)[_-](?:issued|original|amended|amendment[_-]?(?P<n>\d+))$", re.I)


def identity_from_name(path: Path) -> tuple[str, int | None]:
    """doc_id and amendment from a file name: `x_issued` -> (x, 0), `x_amendment2` -> (x, 2).

    Amendments of one document must share its doc_id; this convention lets a folder of versions be
    published without flags (`--doc-id`/`--amendment` always win).
    """
    match = _VERSIONED.match(path.stem)
    if not match:
        return slug(path.stem), None
    number = match.group("n")
    amended = match.group(0).lower().endswith("amended")
    return slug(match.group("base")), int(number) if number else (1 if amended else 0)


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-").lower() or "doc"


def _pages_from_text(text: str) -> list[str]:
    pages = PAGE_BREAK.split(text)
    if len(pages) > 1 and not pages[-1].strip():
        pages = pages[:-1]
    return pages or [""]


def _pdf_pages(path: Path) -> list[str]:
    from docling.datamodel.base_models import InputFormat
    from docling.datamodel.pipeline_options import NativePdfPipelineOptions
    from docling.document_converter import DocumentConverter, NativePdfFormatOption

    converter = DocumentConverter(
        format_options={InputFormat.PDF: NativePdfFormatOption(pipeline_options=NativePdfPipelineOptions())}
    )
    document = converter.convert(path).document
    lines: dict[int, list[str]] = {number: [] for number in document.pages}
    for item, _level in document.iterate_items():
        prov = getattr(item, "prov", None)
        text = getattr(item, "text", None)
        if prov and text:
            lines.setdefault(prov[0].page_no, []).append(text)
    return ["\n".join(lines[number]) for number in sorted(lines)] or [""]


def _docling_pages(path: Path) -> list[str]:
    from docling.document_converter import DocumentConverter

    markdown = DocumentConverter().convert(path).document.export_to_markdown()
    return _pages_from_text(markdown)


def _json_document(path: Path, data: dict[str, Any], doc_type: DocType | None, amendment: int) -> list[PageEvent]:
    pages = data.get("pages")
    if not isinstance(pages, list) or not pages:
        raise IngestError("JSON document needs a non-empty 'pages' list (docs/strategies.md#the-document-stream)")
    count = len(pages)
    kind, given = given_type({}, doc_type or data.get("doc_type"))
    events = []
    for index, page in enumerate(pages, start=1):
        events.append(
            PageEvent(
                doc_id=str(data.get("doc_id") or slug(path.stem)),
                document_name=str(data.get("document_name") or path.name),
                page_number=int(page.get("page_number", index)),
                page_count=count,
                text=str(page.get("text", "")),
                doc_type=kind,
                amendment_number=int(data.get("amendment_number", amendment)),
                metadata={**(page.get("metadata") or {}), **given},
                elements=page.get("elements") or [],
            )
        )
    return events


def page_events(
    path: Path,
    doc_id: str | None = None,
    doc_type: DocType | None = None,
    amendment: int = 0,
    metadata: dict[str, str] | None = None,
) -> list[PageEvent]:
    """Read one file into page events, 1-based and complete (page_count on every page)."""
    if not path.is_file():
        raise IngestError(f"{path}: no such file")
    suffix = path.suffix.lower()
    extra = {"source_path": str(path.name), **(metadata or {})}
    if suffix == ".json":
        try:
            data = json.loads(decode_text(path.read_bytes())[0])
        except json.JSONDecodeError as exc:
            raise IngestError(f"{path}: not valid JSON: {exc}") from exc
        events = _json_document(path, data, doc_type, amendment)
        if doc_id:
            events = [e.model_copy(update={"doc_id": doc_id}) for e in events]
        return events
    if suffix == ".pdf":
        texts, extra["extraction_method"] = _pdf_pages(path), "docling_native_pdf"
    elif suffix in DOCLING_SUFFIXES:
        texts, extra["extraction_method"] = _docling_pages(path), "docling"
    else:
        text, encoding = decode_text(path.read_bytes())
        texts, extra["source_encoding"] = _pages_from_text(text.replace("\r\n", "\n")), encoding
    kind, extra = given_type(extra, doc_type)
    named_id, named_amendment = identity_from_name(path)
    if amendment == 0 and named_amendment is not None:
        amendment = named_amendment
    return [
        PageEvent(
            doc_id=doc_id or named_id,
            document_name=path.name,
            page_number=number,
            page_count=len(texts),
            text=text,
            doc_type=kind,
            amendment_number=amendment,
            metadata=extra,
        )
        for number, text in enumerate(texts, start=1)
    ]
