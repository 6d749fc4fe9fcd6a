"""Golden files: every strategy's chunk records for every sample document, compared byte for byte.

An intended change to the output shows up as a reviewed diff of `tests/golden/<strategy>/*.jsonl`:
rewrite them with `pytest tests/golden --update-golden`. A refactor must leave every file identical.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
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
    from streams.embedding.stores import get_embedder
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
    if produced != expected:  # byte for byte; the message only says where and what
        where = describe_difference(_lines(expected), _lines(produced))
        pytest.fail(
            f"{strategy} on {path.name} differs from its golden file: {where}; "
            "an intended change: pytest tests/golden --update-golden"
        )


#: How much of each value a failure shows.
SHOWN = 200
#: Fields computed from the others: they differ whenever anything does, so a failure names them last.
DERIVED = ("checksum", "chunk_id", "content_hash")
_MISSING = object()


def _differences(want: object, got: object, path: str = "") -> Iterator[tuple[str, object, object]]:
    """Every field whose values differ (golden order, then fields only produced): dotted path and both."""
    if isinstance(want, dict) and isinstance(got, dict):
        for key in [*want, *(k for k in got if k not in want)]:
            yield from _differences(want.get(key, _MISSING), got.get(key, _MISSING), f"{path}.{key}" if path else key)
    elif isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for i, (a, b) in enumerate(zip(want, got, strict=True)):
            yield from _differences(a, b, f"{path}[{i}]")
    elif want != got or type(want) is not type(got):
        yield path or "(record)", want, got


def _json(value: object) -> str:
    return "(absent)" if value is _MISSING else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _cut(a: str, b: str) -> tuple[str, str]:
    """Both texts cut to about SHOWN characters, from a little before where they first differ."""
    start = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    start = max(0, start - SHOWN // 4)

    def cut(text: str) -> str:
        if len(text) <= SHOWN:
            return text
        window = text[start : start + SHOWN]
        return ("…" if start else "") + window + ("…" if start + SHOWN < len(text) else "") + f" ({len(text)} chars)"

    return cut(a), cut(b)


def _lines(rendering: str) -> list[str]:
    """One line per record (split at newlines only: a record's text may hold U+2028 or a form feed)."""
    lines = rendering.split("\n")
    return lines[:-1] if rendering.endswith("\n") else lines


def describe_difference(want: list[str], got: list[str]) -> str:
    """Where two renderings, one line per record, first differ: the record's index, its first differing
    field and both values."""
    counts = f"{len(got)} records, golden {len(want)}"
    if want == got:
        return f"the same records ({counts}); the files differ in their final newline"
    first = next((i for i, (a, b) in enumerate(zip(want, got, strict=False)) if a != b), min(len(want), len(got)))
    if first >= len(want) or first >= len(got):
        extra, which = (got, "produced") if first < len(got) else (want, "golden")
        return f"record {first} is only in the {which} output ({counts}): {_cut(extra[first], '')[0]}"
    try:
        found = list(_differences(json.loads(want[first]), json.loads(got[first])))
    except json.JSONDecodeError:
        found = []
    if not found:  # unparsable, or the same values written with other bytes (escapes, key order)
        golden, produced = _cut(want[first], got[first])
        return f"record {first} differs in its bytes ({counts}): golden {golden} / produced {produced}"
    found.sort(key=lambda d: d[0] in DERIVED)  # stable: golden order, the derived fields last
    (field, golden_value, produced_value), others = found[0], [d[0] for d in found[1:]]
    golden, produced = _cut(_json(golden_value), _json(produced_value))
    also = f"; also {', '.join(others[:8])}{', …' if len(others) > 8 else ''}" if others else ""
    return f"record {first}, field {field!r} ({counts}): golden {golden} / produced {produced}{also}"


def test_a_golden_failure_names_the_record_the_field_and_both_values() -> None:
    row = {"chunk_id": "w-1", "metadata": {"order": 0, "tags": ["a", "b"]}, "position": 0, "text": "Sales rose."}
    want = [json.dumps({**row, "position": p}, sort_keys=True) for p in range(3)]
    got = list(want)
    got[1] = json.dumps({**row, "position": 1, "text": "Sales fell."}, sort_keys=True)
    assert describe_difference(want, got) == (
        'record 1, field \'text\' (3 records, golden 3): golden "Sales rose." / produced "Sales fell."'
    )
    got[1] = json.dumps({**row, "chunk_id": "w-2", "position": 1, "text": "Sales fell."}, sort_keys=True)
    assert describe_difference(want, got).startswith("record 1, field 'text' ")  # not the id derived from it
    assert describe_difference(want, got).endswith('produced "Sales fell."; also chunk_id')
    got[1] = json.dumps({**row, "position": 1, "metadata": {"order": 0, "tags": ["a", "c"]}}, sort_keys=True)
    assert "record 1, field 'metadata.tags[1]' " in describe_difference(want, got)
    got[1] = json.dumps({**row, "position": 1, "metadata": {"order": 0, "tags": ["a", "b"], "new": 1}}, sort_keys=True)
    assert describe_difference(want, got).endswith(
        "field 'metadata.new' (3 records, golden 3): golden (absent) / produced 1"
    )
    assert describe_difference(want, want[:2]).startswith("record 2 is only in the golden output (2 records, golden 3)")
    assert describe_difference(want[:1], want).startswith("record 1 is only in the produced output")
    rendering = "".join(line + "\n" for line in want)
    assert _lines(rendering) == want and _lines(rendering + "\u2028") == [*want, "\u2028"]
    assert "final newline" in describe_difference(_lines(rendering), _lines(rendering[:-1]))
    short = describe_difference(_lines(rendering), _lines("".join(line + "\n" for line in want[:2])))
    assert short.startswith("record 2 is only in the golden output (2 records, golden 3)")
    same_values = [json.dumps({"text": "é"}, ensure_ascii=False)]
    assert "differs in its bytes" in describe_difference(same_values, [json.dumps({"text": "é"})])


def test_a_golden_failure_shows_a_long_value_cut_around_the_change() -> None:
    text = "word " * 200
    message = describe_difference([json.dumps({"text": text})], [json.dumps({"text": text[:700] + "CHANGED"})])
    golden, produced = message.split(": golden ", 1)[1].split(" / produced ")
    assert "CHANGED" in produced and "…" in golden and len(produced) < SHOWN + 40
    assert golden.endswith("(1002 chars)")
