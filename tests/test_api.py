"""The Python API: the documented example runs as written, and its records are the workers' records."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import streams
from streams.core.chunkers import get_chunker
from streams.core.document import assemble
from streams.core.publish import publish
from streams.ingest.files import page_events
from streams.ops.pipeline import sample_paths

DOC = Path(__file__).resolve().parents[1] / "docs" / "python-api.md"


def test_the_documented_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    code = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert code, "docs/python-api.md lost its example"
    exec(compile(code.group(1), str(DOC), "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert any(line.startswith("section-") for line in printed)
    assert any(line.startswith("skipped: section takes solicitation, not generic") for line in printed)


def test_a_file_gives_the_records_the_workers_publish() -> None:
    path = next(p for p in sample_paths() if p.name == "rfp_harbor_bridge_issued.md")
    records = streams.chunk_file(path, strategy="section")
    doc = assemble(page_events(path))
    assert records == publish(doc, get_chunker("section")).records
    assert records and all(r.doc_type == "solicitation" for r in records)


def test_bad_options_and_unknown_strategies_are_one_clear_error() -> None:
    with pytest.raises(streams.OptionsError, match=r"window.chunk_size_words=0"):
        streams.chunk_text("some words", options={"chunk_size_words": 0})
    with pytest.raises(streams.OptionsError, match="unknown strategy 'nope'"):
        streams.chunk_text("some words", strategy="nope")
