"""`streams up` in the foreground, driven from "another terminal": publish, lag, search, then Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from streams.ops.pipeline import sample_paths
from tests.cli import streams
from tests.integration.conftest import start_up, user_env

pytestmark = pytest.mark.integration


def cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    return streams(*args, env=env)


def test_up_then_publish_lag_and_search_without_flags(tmp_path: Path, bus: str) -> None:
    up = start_up(tmp_path / "var", "-s", "window")
    env = user_env(tmp_path / "var")
    try:
        first = json.loads(up.stdout.readline())
        assert set(first) == {
            "deployment",
            "broker",
            "broker_kind",
            "mongo_url",
            "mongo_database",
            "mongo_collection",
            "vector_store",
            "ui",
        }
        assert first["broker_kind"] == bus  # STREAMS_BROKER_KIND, set by the bus fixture
        assert first["ui"].startswith("http://127.0.0.1:")
        assert first["mongo_database"] == "streams" and first["mongo_collection"] == "chunks"
        assert first["deployment"] == ""  # none: the names as documented
        notes = next(p for p in sample_paths() if p.name == "field_notes.json")
        published = cli("publish", str(notes), env=env)
        assert published.returncode == 0, published.stderr
        deadline = time.monotonic() + 240
        hits: list[dict] = []
        while time.monotonic() < deadline and not hits:
            time.sleep(2)
            found = cli("search", "how long does the dough rest before the salt goes in", "--k", "2", "--json", env=env)
            if found.returncode == 0:
                hits = [json.loads(line) for line in found.stdout.splitlines()]
                hits = [h for h in hits if not h["text"].startswith("(text not in MongoDB")]
        assert hits, "nothing searchable within the time limit"
        assert hits[0]["doc_id"] == "field-notes-7" and hits[0]["page_numbers"]
        assert "salt" in hits[0]["text"]
        with urllib.request.urlopen(first["ui"] + "doc/field-notes-7", timeout=60) as page:  # the console
            assert page.status == 200 and 'class="cut' in page.read().decode()
        up_file = json.loads((tmp_path / "var" / "up.json").read_text())
        assert up_file["ui"] == first["ui"] and "ui" in up_file["processes"]
        lag = json.loads(cli("lag", "--json", env=env).stdout)
        assert "streams-chunker-window" in lag["totals"] and "streams-sink-mongo" in lag["totals"]
    finally:
        os.killpg(up.pid, signal.SIGINT)
        up.wait(60)
    assert up.returncode == 0
    assert not (tmp_path / "var" / "up.json").exists()
