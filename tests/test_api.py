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
    assert any(
        line.startswith("skipped: section takes solicitation, not letter (detected: salutation to owners")
        for line in printed
    )


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


def test_semantic_embeds_with_the_embedder_it_is_handed() -> None:
    """The API reads no settings: a caller who wants another model, backend or store hands an embedder in."""
    from tests.conftest import HashEmbedder

    text = " ".join(f"Span {i} of the bridge carries strain gauges and tilt meters." for i in range(30))
    handed = HashEmbedder()
    records = streams.chunk_text(text, strategy="semantic", embedder=handed)
    assert records and all(r.metadata["embed_model"] == "test-hash-embedder" for r in records)
    assert len(handed.encoded) == 30  # every sentence went through the handed embedder, once
    again = HashEmbedder()
    assert streams.chunk_text(text, strategy="semantic", embedder=again) == records
    assert len(again.encoded) == 30  # a chunker per embedder: the first one's cache was not reused
