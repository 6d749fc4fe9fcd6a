"""Strategy options: one validated path from settings, config file and CLI to the chunker, and part of the lineage."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from streams.core.chunkers import EMBEDDING_STRATEGIES, OPTIONS, STRATEGIES, describe, get_chunker, make_options
from streams.core.document import assemble
from streams.core.events import DocType
from streams.core.options import OptionsError
from streams.core.records import build_records
from streams.core.versions import decide
from streams.ingest.files import page_events
from streams.settings import Settings
from streams.strategies import build_chunker, check_options, long_chunk_warning, options_for
from tests.test_cli import streams as run_cli

SAMPLES = Path(__file__).resolve().parents[2] / "streams" / "samples"


@pytest.fixture(scope="module")
def embedder():
    from streams.embedding.stores import get_embedder

    return get_embedder()


def records(strategy: str, sample: str, embedder=None, doc_type: DocType | None = None, **options):
    chunker = get_chunker(strategy, options, embedder=embedder if strategy in EMBEDDING_STRATEGIES else None)
    doc = assemble(page_events(SAMPLES / sample, doc_type=doc_type))
    return chunker, build_records(doc, chunker, chunker.chunk(doc))


def test_every_strategy_declares_options_with_seed_defaults() -> None:
    assert set(OPTIONS) == set(STRATEGIES)
    assert make_options("window").chunker_options() == {"chunk_size_words": 250, "chunk_overlap_words": 50}
    assert make_options("section").chunker_options() == {"min_tokens": 400, "max_tokens": 600, "fragment_tokens": 30}
    assert make_options("hybrid").chunker_options() == {"max_tokens": 512, "min_tokens": 64, "merge_peers": True}
    assert make_options("semantic").threshold_amount == 75.0
    assert make_options("semantic", {"breakpoint_type": "gradient"}).threshold_amount == 95.0
    for name in STRATEGIES:
        assert make_options(name).lineage_tag() == "", f"{name}: defaults must keep today's ids"
        assert describe(name)["options"], name


@pytest.mark.parametrize(
    ("strategy", "values", "expected"),
    [
        ("window", {"chunk_size_words": 50, "chunk_overlap_words": 50}, "chunk_overlap_words (50) must be below"),
        ("section", {"max_tokens": "abc"}, "section.max_tokens='abc': Input should be a valid integer"),
        ("section", {"max_tokens": 0}, "(allowed: 1..100000)"),
        ("section", {"min_tokens": 500, "max_tokens": 450}, "min_tokens (500) must not exceed max_tokens (450)"),
        ("finance", {"press_min_tokens": 900}, "press_min_tokens (900) must not exceed press_max_tokens (800)"),
        ("letter", {"section_target_tokens": 900}, "need min_tokens <= section_min_tokens < section_target_tokens"),
        ("hybrid", {"max_tokens": 8}, "hybrid.max_tokens=8"),
        ("semantic", {"breakpoint_type": "median"}, "one of percentile, standard_deviation, interquartile, gradient"),
        ("semantic", {"threshold_amount": 120}, "(allowed: 0..100)"),
        ("cluster", {"threshold": 1.5}, "cluster.threshold=1.5"),
        (
            "cluster",
            {"max_size": 5},
            "cluster: unknown option 'max_size' (options: doc_types, threshold, min_tokens, max_tokens, "
            "merge_threshold, target_tokens, segmentation)",
        ),
        ("nonsense", {}, "unknown strategy 'nonsense'"),
    ],
)
def test_a_bad_value_is_one_line_naming_strategy_option_and_range(strategy, values, expected) -> None:
    with pytest.raises(OptionsError) as info:
        make_options(strategy, values)
    message = str(info.value)
    assert expected in message
    assert "\n" not in message


def test_cluster_second_stage_is_turned_off_by_none_from_the_environment() -> None:
    off = make_options("cluster", {"merge_threshold": "none"})
    assert off.merge_threshold is None and off.lineage_tag()  # another lineage than the default
    assert make_options("cluster", {"merge_threshold": "0.6"}).merge_threshold == 0.6
    with pytest.raises(OptionsError, match="merge_threshold"):
        make_options("cluster", {"merge_threshold": "sometimes"})


def test_explicit_defaults_are_the_default_lineage() -> None:
    chunker, base = records("window", "field_notes.json")
    same, again = records("window", "field_notes.json", chunk_size_words="250", chunk_overlap_words=50)
    assert same.version == chunker.version and same.lineage == ""
    assert [r.chunk_id for r in again] == [r.chunk_id for r in base]


def test_a_changed_option_is_a_new_lineage_and_retires_the_old_ids() -> None:
    default, base = records("section", "rfp_harbor_bridge_issued.md")
    tuned, changed = records("section", "rfp_harbor_bridge_issued.md", min_tokens=200, max_tokens=300)
    again_tuned, again = records("section", "rfp_harbor_bridge_issued.md", min_tokens=200, max_tokens=300)
    assert tuned.version.startswith(default.version + "+o") and tuned.version == again_tuned.version
    assert [r.model_dump() for r in changed] == [r.model_dump() for r in again], "deterministic per options"
    assert {r.chunk_id for r in changed}.isdisjoint(r.chunk_id for r in base)
    assert {r.chunker_version for r in changed} == {tuned.version}
    # Re-chunking the same amendment with other options: every id of the old lineage is retired.
    first = decide(None, 0, [r.chunk_id for r in base])
    second = decide(first.state, 0, [r.chunk_id for r in changed])
    assert second.is_latest and sorted(second.retired) == sorted(r.chunk_id for r in base)


def test_window_size_and_overlap_hold() -> None:
    _, out = records("window", "rfp_harbor_bridge_issued.md", chunk_size_words=60, chunk_overlap_words=10)
    words = [r.text.split() for r in out]
    assert len(out) > len(records("window", "rfp_harbor_bridge_issued.md")[1])
    assert all(len(w) <= 60 for w in words)
    assert all(a[-10:] == b[:10] for a, b in itertools.pairwise(words) if len(a) == 60)


def test_section_max_tokens_holds() -> None:
    _, default = records("section", "rfp_harbor_bridge_issued.md")
    _, out = records("section", "rfp_harbor_bridge_issued.md", min_tokens=120, max_tokens=200)
    prose = [r for r in out if not (r.metadata or {}).get("is_table")]
    assert len(out) > len(default)
    assert max(r.token_count for r in prose) <= 200 < max(r.token_count for r in default)


@pytest.mark.parametrize(
    ("doc_type", "options"),
    [
        (DocType.release, {"min_tokens": 80, "max_tokens": 150}),
        (DocType.press, {"press_min_tokens": 80, "press_max_tokens": 150}),
    ],
)
def test_finance_limits_hold(doc_type: DocType, options: dict[str, int]) -> None:
    """Releases and decks use min/max_tokens, press releases their own pair."""
    _, default = records("finance", "release_2031_q2_vantor.md", doc_type=doc_type)
    _, out = records("finance", "release_2031_q2_vantor.md", doc_type=doc_type, **options)
    _, other = records(
        "finance",
        "release_2031_q2_vantor.md",
        doc_type=doc_type,
        min_tokens=80,
        max_tokens=150,
        press_min_tokens=80,
        press_max_tokens=150,
    )
    narrative = [r for r in out if r.content_type == "narrative"]
    assert len(out) > len(default) and len(other) == len(out)
    assert max(r.token_count for r in narrative) <= 150


def test_letter_tiers_hold() -> None:
    _, default = records("letter", "letter_2031_harbor.txt")
    options = {"min_tokens": 100, "section_min_tokens": 150, "section_target_tokens": 250, "section_max_tokens": 350}
    _, out = records("letter", "letter_2031_harbor.txt", **options)
    tier1 = [r for r in out if r.metadata["chunk_tier"] == 1]
    assert len(out) > len(default)
    assert (
        max(r.token_count for r in tier1) <= 350 < max(r.token_count for r in default if r.metadata["chunk_tier"] == 1)
    )


def test_hybrid_max_tokens_holds() -> None:
    _, default = records("hybrid", "rfp_harbor_bridge_issued.md")
    _, out = records("hybrid", "rfp_harbor_bridge_issued.md", max_tokens=96)
    assert len(out) > len(default)
    assert (
        max(r.token_count for r in out) <= 96 + 8
    )  # hybrid counts with its own serialisation; cl100k may differ a little


@pytest.mark.parametrize("strategy", EMBEDDING_STRATEGIES)
def test_embedding_strategies_max_tokens_hold(strategy: str, embedder) -> None:
    _, default = records(strategy, "transcript_2031_q2_vantor.txt", embedder)
    _, out = records(strategy, "transcript_2031_q2_vantor.txt", embedder, min_tokens=20, max_tokens=60)
    assert len(out) > len(default)
    assert max(r.token_count for r in out) <= 60


def test_semantic_breakpoint_options_change_the_cuts(embedder) -> None:
    _, base = records("semantic", "field_notes.json", embedder, min_tokens=10, max_tokens=400)
    _, strict = records("semantic", "field_notes.json", embedder, min_tokens=10, max_tokens=400, threshold_amount=40)
    assert len(strict) > len(base), "a lower percentile breaks at more places"


def test_settings_from_environment_and_config_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMS_SECTION__MAX_TOKENS", "512")
    assert options_for(Settings(), "section").max_tokens == 512
    toml = tmp_path / "streams.toml"
    toml.write_text(
        'tokenizer = "cl100k_base"\n[section]\nmax_tokens = 450\nmin_tokens = 300\n[cluster]\nthreshold = 0.6\n'
    )
    monkeypatch.setenv("STREAMS_CONFIG", str(toml))
    settings = Settings()
    assert options_for(settings, "section").model_dump()["max_tokens"] == 512, "environment above the file"
    assert options_for(settings, "section").min_tokens == 300
    assert options_for(settings, "cluster").threshold == 0.6
    assert options_for(settings, "section", {"max_tokens": "480"}).max_tokens == 480, "--set above both"
    yaml = tmp_path / "streams.yaml"
    yaml.write_text("window:\n  chunk_size_words: 120\n  chunk_overlap_words: 0\n")
    monkeypatch.setenv("STREAMS_CONFIG", str(yaml))
    chunker = build_chunker("window", Settings())
    assert (chunker.size, chunker.overlap) == (120, 0) and chunker.lineage
    yaml.write_text("window:\n  chunk_size_words: 10\n  chunk_overlap_words: 10\n")
    with pytest.raises(OptionsError, match="window: chunk_overlap_words"):
        check_options(Settings())  # any strategy given a setting is checked, run or not


def test_long_chunk_warning_names_the_options_past_the_model() -> None:
    assert long_chunk_warning(make_options("cluster"), "truncate", 256) is None
    line = long_chunk_warning(make_options("section"), "truncate", 256)
    assert line and "max_tokens=600" in line and "256 word pieces" in line and "truncated" in line
    assert long_chunk_warning(make_options("section"), "truncate", 1024) is None  # a model that reads more


def test_cli_strategies_lists_every_option() -> None:
    result = run_cli("strategies", "--json", env={"STREAMS_SECTION__MAX_TOKENS": "512"})
    assert result.returncode == 0, result.stderr
    listed = {row["strategy"]: row for row in json.loads(result.stdout)["strategies"]}
    assert set(listed) == set(STRATEGIES)
    section = listed["section"]["options"]["max_tokens"]
    assert (section["default"], section["value"], section["range"]) == (600, 512, "1..100000")


def test_cli_set_and_refusal(tmp_path: Path) -> None:
    sample = str(SAMPLES / "rfp_harbor_bridge_issued.md")
    good = run_cli("chunk", sample, "-s", "window", "--set", "chunk_size_words=80", "--set", "chunk_overlap_words=0")
    assert good.returncode == 0, good.stderr
    rows = [json.loads(line) for line in good.stdout.splitlines()]
    assert all(len(r["text"].split()) <= 80 for r in rows) and rows[0]["chunker_version"].startswith("1.")
    bad = run_cli("chunk", sample, "-s", "window", "--set", "chunk_size_words=0")
    assert bad.returncode == 78 and bad.stdout == ""
    assert bad.stderr.strip().splitlines() == [
        "error: bad setting: window.chunk_size_words='0': Input should be greater than or equal to 1 "
        "(allowed: 1..100000)"
    ]


def test_a_worker_for_an_unknown_strategy_is_a_bad_setting() -> None:
    result = run_cli("worker", "--role", "chunker:nope", env={"STREAMS_BROKER": "127.0.0.1:1"})
    assert result.returncode == 78, result.stderr
    assert result.stderr.strip().splitlines() == [
        "error: bad setting: unknown strategy 'nope'; known: "
        "window, letter, finance, section, hybrid, semantic, cluster"
    ]


def test_worker_with_a_bad_option_refuses_to_start() -> None:
    """Before joining any group: no broker is running here, and it still exits at once with one line."""
    result = run_cli(
        "worker",
        "--role",
        "chunker:section",
        env={"STREAMS_SECTION__MIN_TOKENS": "700", "STREAMS_BROKER": "127.0.0.1:1"},
    )
    assert result.returncode == 78, result.stderr
    assert result.stderr.strip().splitlines() == [
        "error: bad setting: section: min_tokens (700) must not exceed max_tokens (600)"
    ]
