"""A strategy from another package: declared once, under the `streams.strategies` entry point, and found
by the settings, `streams strategies`, `streams chunk`, `streams check`, the demo, the topics, the lag
groups and the configuration reference with no edit to this project."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TOY = '''
"""A toy strategy: one chunk per paragraph, as many words as it has."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import Field

from streams.core.chunkers.base import ChunkDraft, Chunker, Limits, Strategy
from streams.core.options import StrategyOptions


class ToyOptions(StrategyOptions):
    strategy: ClassVar[str] = "toy"
    seed: ClassVar[str] = "none"
    summary: ClassVar[str] = "one chunk per paragraph"

    max_words: int = Field(60, ge=1, le=1000, description="the most words a paragraph should have")


class ToyChunker(Chunker):
    name = "toy"
    version = "0.1.0"
    metadata_record = ""
    options_model = ToyOptions

    def chunk(self, doc: Any) -> list[ChunkDraft]:
        return [ChunkDraft(m.group(0), m.start(), m.end()) for m in re.finditer(r"\\S(?:.*\\S)?", doc.text)]


def limits(options: Mapping[str, Any]) -> Limits:
    return Limits(max_words=options["max_words"])


STRATEGY = Strategy("toy", ToyOptions, "toy_strategy:ToyChunker", limits=limits)
'''

PROBE = """
import json
from streams.core.chunkers import STRATEGIES, strategy
from streams.ops.demo import DEFAULT_DEMO
from streams.ops.topics import topic_specs
from streams.reference import render
from streams.runtime.lag import known_groups
from streams.settings import Settings

settings = Settings()
print(json.dumps({
    "strategies": list(STRATEGIES),
    "demo": list(DEFAULT_DEMO),
    "setting": settings.toy,
    "reference": "STREAMS_TOY__MAX_WORDS" in render(),
    "topics": [t.name for t in topic_specs(settings)],
    "groups": list(known_groups(settings)),
    "doc_types": strategy("toy").doc_types(),
}))
"""


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An installed distribution on PYTHONPATH, the way pip leaves one: a package and its dist-info."""
    site = tmp_path_factory.mktemp("site")
    (site / "toy_strategy").mkdir()
    (site / "toy_strategy" / "__init__.py").write_text(textwrap.dedent(TOY))
    info = site / "toy_strategy-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-strategy\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[streams.strategies]\ntoy = toy_strategy:STRATEGY\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMS_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def run(env: dict[str, str], *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], env={**env, **extra}, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_toy_strategy_is_found_everywhere(plugin: dict[str, str]) -> None:
    probe = run(plugin, "-c", PROBE, STREAMS_TOY__MAX_WORDS="12")
    assert probe.returncode == 0, probe.stderr
    found = json.loads(probe.stdout)
    assert found["strategies"][-1] == "toy" and found["demo"][-1] == "toy"
    assert found["setting"] == {"max_words": "12"} and found["reference"]
    assert "streams-chunker-toy-chunk-versions-changelog" in found["topics"], found["topics"]
    assert "streams-chunker-toy" in found["groups"], found["groups"]
    assert "generic" in found["doc_types"]

    listed = run(plugin, "-m", "streams", "strategies", "--json", STREAMS_TOY__MAX_WORDS="12")
    assert listed.returncode == 0, listed.stderr
    toy = next(s for s in json.loads(listed.stdout)["strategies"] if s["strategy"] == "toy")
    assert toy["options"]["max_words"]["value"] == 12 and toy["options"]["max_words"]["default"] == 60


def test_the_toy_strategy_chunks_checks_and_refuses_a_bad_option(plugin: dict[str, str], tmp_path: Path) -> None:
    text = tmp_path / "note.txt"
    first = " ".join(f"first{i}" for i in range(32))
    text.write_text(first + "\n\n" + " ".join(f"second{i}" for i in range(45)) + "\n")
    chunked = run(plugin, "-m", "streams", "chunk", str(text), "--strategy", "toy")
    assert chunked.returncode == 0, chunked.stderr
    records = [json.loads(line) for line in chunked.stdout.splitlines()]
    assert [r["strategy"] for r in records] == ["toy", "toy"] and records[0]["text"] == first
    assert all(r["chunk_id"].startswith("toy-") for r in records), [r["chunk_id"] for r in records]

    # conformance reads the toy's own limits: the second paragraph's 45 words break max_words 40
    checked = run(plugin, "-m", "streams", "check", str(text), "--strategy", "toy", "--json", "--set", "max_words=40")
    assert checked.returncode == 1, checked.stderr
    assert json.loads(checked.stdout)["rules"]["max words"]["count"] == 1
    fine = run(plugin, "-m", "streams", "check", str(text), "--strategy", "toy", "--json")
    assert fine.returncode == 0 and json.loads(fine.stdout)["rules"] == {}, fine.stdout

    bad = run(plugin, "-m", "streams", "chunk", str(text), "--strategy", "toy", STREAMS_TOY__MAX_WORDS="0")
    assert bad.returncode != 0 and "toy.max_words=" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
