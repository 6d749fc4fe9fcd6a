"""docling_document_from_file: offline conversion of Markdown, HTML, DOCX and PDF to a DoclingDocument."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.ingest.docling_convert import ConversionError, docling_document_from_file

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpora"


def test_markdown_keeps_headings_and_tables(tmp_path: Path) -> None:
    source = tmp_path / "note.md"
    source.write_text(
        "# Depot Report\n\n## Fleet\n\nThe depot runs nine buses.\n\n| Route | Buses |\n|---|---|\n| 4 | 5 |\n",
        encoding="utf-8",
    )
    document = docling_document_from_file(source)
    labels = {str(item.label) for item, _ in document.iterate_items()}
    assert {"section_header", "text", "table"} <= labels or {"title", "section_header", "table"} <= labels
    assert "nine buses" in document.export_to_markdown()


def test_html_converts(tmp_path: Path) -> None:
    source = tmp_path / "page.html"
    source.write_text("<html><body><h1>Tides</h1><p>High water at noon.</p></body></html>", encoding="utf-8")
    assert "High water at noon." in docling_document_from_file(source).export_to_markdown()


def test_unsupported_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(ConversionError):
        docling_document_from_file(tmp_path / "x.xyz")
    with pytest.raises(ConversionError):
        docling_document_from_file(tmp_path / "missing.md")


@pytest.mark.corpus
def test_pdf_native_pipeline_offline() -> None:
    pdf = SHARED / "pdf" / "COSTCO_2023Q3_EARNINGS.pdf"
    if not pdf.exists():
        pytest.skip("shared corpora not present")
    document = docling_document_from_file(pdf)
    assert len(document.pages) >= 1 and document.export_to_markdown().strip()
