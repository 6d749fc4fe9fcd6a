"""Golden files: every strategy's chunk records for every sample document, compared byte for byte.

An intended change to the output shows up as a reviewed diff of `tests/golden/<strategy>/*.jsonl`:
rewrite them with `pytest tests/golden --update-golden`. A refactor must leave every file identical.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streams.core.chunkers import STRATEGIES, ChunkingError, get_chunker
from streams.core.document import assemble
from streams.core.records import build_records
from streams.ingest.files import page_events

HERE = Path(__file__).resolve().parent
SAMPLES = Path(__file__).resolve().parents[2] / "streams" / "samples"
DOCUMENTS = sorted(p for p in SAMPLES.iterdir() if p.suffix in {".txt", ".md", ".json"} and p.name != "README.md")


def render(strategy: str, path: Path, embedder: object | None = None) -> str:
    """One JSON line per record, or one line naming the refusal (a gate that says no is output too)."""
    kwargs = {"embedder": embedder} if embedder is not None else {}
    chunker = get_chunker(strategy, **kwargs)
    doc = assemble(page_events(path))
    try:
        records = build_records(doc, chunker, chunker.chunk(doc))
    except ChunkingError as exc:
        return json.dumps({"refused": exc.code, "reason": str(exc)}, ensure_ascii=False) + "\n"
    rows = [json.dumps(r.model_dump(mode="json"), ensure_ascii=False, sort_keys=True) for r in records]
    return "".join(row + "\n" for row in rows)


@pytest.fixture(scope="module")
def golden_embedder() -> object:
    from streams.embedstore import get_embedder
    from streams.strategies import SENTENCE_UNITS

    return get_embedder(long_texts=SENTENCE_UNITS)


@pytest.mark.parametrize("path", DOCUMENTS, ids=[p.name for p in DOCUMENTS])
@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_output_matches_golden_file(strategy: str, path: Path, request: pytest.FixtureRequest) -> None:
    from streams.core.chunkers import EMBEDDING_STRATEGIES

    embedder = request.getfixturevalue("golden_embedder") if strategy in EMBEDDING_STRATEGIES else None
    produced = render(strategy, path, embedder)
    golden = HERE / strategy / f"{path.name}.jsonl"
    if request.config.getoption("--update-golden"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(produced, encoding="utf-8")
        return
    assert golden.exists(), f"no golden file {golden.relative_to(HERE)}: run pytest tests/golden --update-golden"
    expected = golden.read_text(encoding="utf-8")
    if produced != expected:
        want, got = expected.splitlines(), produced.splitlines()
        first = next((i for i, (a, b) in enumerate(zip(want, got, strict=False)) if a != b), min(len(want), len(got)))
        pytest.fail(
            f"{strategy} on {path.name} differs from its golden file at record {first} "
            f"({len(got)} records, golden {len(want)}); an intended change: pytest tests/golden --update-golden"
        )
