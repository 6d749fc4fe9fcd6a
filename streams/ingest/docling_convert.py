"""Original files to a DoclingDocument, offline: PDF through docling's native (model-free) pipeline,
Markdown, HTML and DOCX through their declarative backends. I/O lives here, never in a chunker."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

SUPPORTED_SUFFIXES = frozenset({".pdf", ".md", ".markdown", ".html", ".htm", ".xhtml", ".docx"})


class ConversionError(ValueError):
    """The file is of an unsupported type or docling could not read it."""


@functools.cache
def _converter() -> Any:
    from docling.datamodel.base_models import InputFormat
    from docling.datamodel.pipeline_options import NativePdfPipelineOptions
    from docling.document_converter import DocumentConverter, NativePdfFormatOption

    return DocumentConverter(
        allowed_formats=[InputFormat.PDF, InputFormat.MD, InputFormat.HTML, InputFormat.DOCX],
        format_options={InputFormat.PDF: NativePdfFormatOption(pipeline_options=NativePdfPipelineOptions())},
    )


def docling_document_from_file(path: str | Path) -> Any:
    """The DoclingDocument of one file (no model downloads: the PDF path reads text cells only)."""
    source = Path(path)
    if source.suffix.lower() not in SUPPORTED_SUFFIXES:
        raise ConversionError(f"unsupported file type {source.suffix or '(none)'}: {source.name}")
    if not source.is_file():
        raise ConversionError(f"no such file: {source}")
    try:
        return _converter().convert(source).document
    except Exception as exc:  # docling raises many types; callers need one
        reason = f"docling could not convert {source.name}: {type(exc).__name__}: {exc}"
        raise ConversionError(reason) from exc
