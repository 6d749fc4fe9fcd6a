"""The CLI as users run it: subprocesses, JSON on stdout, one-line errors on stderr."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from streams.core.chunkers import get_chunker
from streams.core.document import assemble
from streams.core.records import build_records
from streams.ingest.files import page_events


def streams(*args: str, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    import os

    return subprocess.run(
        [sys.executable, "-m", "streams", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_chunk_prints_the_records_of_the_offline_path(tmp_path: Path) -> None:
    source = tmp_path / "memo.txt"
    source.write_text("alpha beta gamma. " * 120 + "\n[[PAGE_BREAK]]\n" + "delta epsilon. " * 90, encoding="utf-8")
    done = streams("chunk", str(source), "--strategy", "window")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    doc = assemble(page_events(source))
    chunker = get_chunker("window")
    expected = [r.model_dump(mode="json") for r in build_records(doc, chunker, chunker.chunk(doc))]
    assert rows == expected
    assert {tuple(r["page_numbers"]) for r in rows} >= {(1,), (2,)} or any(len(r["page_numbers"]) == 2 for r in rows)


def test_cp1252_text_is_decoded_not_mangled(tmp_path: Path) -> None:
    source = tmp_path / "call.txt"
    source.write_bytes("Caf\u00e9 \u2013 \u201cquoted\u201d results".encode("cp1252"))
    done = streams("chunk", str(source), "--strategy", "window")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["text"] == "Caf\u00e9 \u2013 \u201cquoted\u201d results"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["chunk", "/nonexistent/file.txt"], "no such file"),
        (["chunk", "README.md", "--strategy", "nope"], "unknown strategy"),
        (["tail", "--timeout", "1"], "error"),
        (["search", "pier", "--filter", "owner=me"], "the vectors do not carry 'owner'"),
        (["search", "pier", "--filter", "year>=soon"], "the vectors do not carry 'year'"),
    ],
)
def test_errors_are_one_line_without_traceback(args: list[str], message: str) -> None:
    done = streams(*args, env={"STREAMS_BROKER": "127.0.0.1:1"}, timeout=60)
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("%")]
    assert len(lines) == 1, done.stderr
    assert message in lines[0].lower() and "Traceback" not in done.stderr


def test_streams_debug_shows_the_traceback_the_one_line_hides() -> None:
    quiet = streams("chunk", "/nonexistent/file.txt", timeout=60)
    loud = streams("chunk", "/nonexistent/file.txt", env={"STREAMS_DEBUG": "1"}, timeout=60)
    assert quiet.returncode == loud.returncode != 0
    assert "Traceback" not in quiet.stderr and "Traceback (most recent call last)" in loud.stderr
    [line] = quiet.stderr.strip().splitlines()
    assert line.removeprefix("error: ") in loud.stderr  # the same error, with where it came from


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["worker", "--role", "chunker:semantic"], "chunker:semantic cannot start"),
        (["sink", "vectors"], "embedding model directory not found"),
    ],
)
def test_an_embedding_process_without_its_model_stops_at_start_with_one_line(
    tmp_path: Path, args: list[str], message: str
) -> None:
    """Not after joining its group, where a worker would dead-letter every document it was given and the
    vector sink would retry every batch forever."""
    missing = tmp_path / "no-model"
    env = {"STREAMS_BROKER": "127.0.0.1:1", "STREAMS_EMBED_MODEL": str(missing), "STREAMS_DATA_DIR": str(tmp_path)}
    done = streams(*args, env=env, timeout=120)
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert message in lines[0] and str(missing) in lines[0]


@pytest.mark.integration
def test_demo_on_the_shipped_samples(tmp_path: Path) -> None:
    done = streams("demo", "--json", "--strategy", "window", env={"STREAMS_DATA_DIR": str(tmp_path)}, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    assert set(summary) == {
        *("broker_kind", "documents", "pages", "chunks", "dead_letters", "seconds", "mongo", "vectors"),
        *("cpu_seconds", "strategies"),
    }
    assert summary["broker_kind"] == "noida"  # the embedded default
    window = summary["strategies"]["window"]
    assert window["chunks"] == summary["chunks"]["window"] and window["documents"] == summary["documents"]
    assert window["skipped"] == 0 and re.fullmatch(r"[0-9a-f]{16}", window["digest"])  # window takes every type
    assert 0 < window["mean_tokens"] <= window["max_tokens"]
    roles = {"broker", "assembler", "chunker:window", "sink:mongo", "sink:vectors", "demo"}
    assert roles <= set(summary["cpu_seconds"])
    # Without a terminal the progress is plain lines on stderr, stage by stage, counts moving.
    progress = [line for line in done.stderr.splitlines() if line.startswith("[")]
    stages = [line.split("] ", 1)[1].split(":", 1)[0] for line in progress]
    assert stages[:2] == ["starting", "starting broker and document store"]
    for stage in ("creating topics", "starting 4 workers", "publishing", "chunking", "storing", "stopping"):
        assert stage in stages, (stage, stages)
    pages = summary["pages"]
    assert f"pages 0/{pages}" in progress[0] and f"pages {pages}/{pages}" in progress[-1]
    assert f"window {summary['chunks']['window']}" in progress[-1]
    assert summary["documents"] >= 5 and summary["chunks"]["window"] > 0 and summary["dead_letters"] == 0
    # every chunk stored once; the amended RFP leaves its original's chunks stored but not latest
    assert summary["mongo"]["chunks"] == summary["chunks"]["window"] > summary["mongo"]["latest"] > 0
    assert summary["vectors"]["vectors"] == summary["chunks"]["window"]  # window has no table chunks
    assert not any(tmp_path.iterdir())  # the run cleaned up its own data directory


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["search", "pier"], {"STREAMS_TENANT_KEY": "workspace"}, "name the tenant (--tenant)"),
        (["delete", "--purge"], {"STREAMS_TENANT_KEY": "workspace"}, "name the tenant (--tenant)"),
        (["delete", "--purge"], {}, "name the documents to purge, or a tenant"),
        (["audit", "--tenant", "acme"], {}, "tenancy is off"),
        (["status", "report-1", "--tenant", "a b"], {"STREAMS_TENANT_KEY": "workspace"}, "is not 1-63"),
        (["search", "pier"], {"STREAMS_TENANT_KEY": "meta.workspace"}, "mongodb reads as a path"),
    ],
)
def test_a_query_without_its_tenant_is_refused_in_one_line(args: list[str], env: dict, message: str) -> None:
    done = streams(*args, env={"STREAMS_BROKER": "127.0.0.1:1", **env}, timeout=60)
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("%")]
    assert len(lines) == 1, done.stderr
    assert message in lines[0].lower() and "Traceback" not in done.stderr
