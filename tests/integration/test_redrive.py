"""Dead letters re-driven on each broker: refused by a strategy option and by a page limit, the settings fixed,
the letters sent back once, each to the one stage that refused it, and a record refused again returning with
its attempt; a second replay sends nothing, and the audit counts the re-driven documents as accounted for."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from streams.ops.audit import audit
from streams.ops.pipeline import Collector, LocalPipeline, publish_pages, sample_paths
from streams.ops.redrive import Choice, letters, redriven, replay
from tests.cli import streams
from tests.conftest import make_pages
from tests.integration.conftest import pipeline_settings

pytestmark = pytest.mark.integration

#: Letter options under which the sample letter is too short for its smallest chunk: every letter refused.
REFUSING = {"min_tokens": 5000, "section_min_tokens": 6000, "section_target_tokens": 7000, "section_max_tokens": 8000}
STRATEGIES = ["letter", "window"]


def test_dead_letters_are_redriven_once_to_the_stage_that_refused_them(tmp_path: Path) -> None:
    letter = next(p for p in sample_paths() if p.name.startswith("letter_")).read_text()
    docs = {
        "letter-0": make_pages("letter-0", [letter], doc_type="letter"),
        "letter-1": make_pages("letter-1", [letter.replace("Harbor", "Harbour")], doc_type="letter"),
        "memo": make_pages("memo", ["Dear owners, the pier reopens on Monday. Thank you."], doc_type="letter"),
        "big": make_pages("big", ["The pier reopened on Monday after repairs. " * 6000]),  # 258 kB: over 200 kB
    }
    settings = pipeline_settings(tmp_path, letter=REFUSING)
    versions = [(d, 0) for d in docs]
    with LocalPipeline(settings, STRATEGIES) as pipeline:
        publish_pages(pipeline.settings, [p for pages in docs.values() for p in pages])
        collector = Collector(pipeline.settings)
        try:
            # A page over the limit is refused before it is read, so its dead letter names no document.
            collector.wait([v for v in versions if v[0] != "big"], STRATEGIES, timeout=240)
            deadline = time.monotonic() + 60
            while not any(d.reason_code == "page_too_large" for d in collector.result.dead):
                assert time.monotonic() < deadline, collector.result.dead
                collector.poll(1.0)
            first = {(d.doc_id or "big", d.stage, d.reason_code) for d in collector.result.dead}
            assert first == {
                ("letter-0", "chunk:letter", "letter_too_short"),
                ("letter-1", "chunk:letter", "letter_too_short"),
                ("memo", "chunk:letter", "letter_too_short"),
                ("big", "assembly", "page_too_large"),
            }
            window_chunks = len(collector.result.records())

            # The fix: default letter options and a larger page limit, in the two roles that refused.
            for role in ("chunker:letter", "assembler"):
                pipeline.stop_worker(role)
            pipeline.settings = pipeline.settings.model_copy(update={"letter": {}, "max_page_bytes": 2_000_000})
            for role in ("chunker:letter", "assembler"):
                pipeline.start_worker(role)

            dry = streams("dead-letters", "replay", "--dry-run", env=_env(pipeline.settings), timeout=120)
            assert dry.returncode == 0 and "would re-drive 4 dead letter(s)" in dry.stderr, dry.stderr
            assert redriven(pipeline.settings) == {}  # a dry run marks nothing and sends nothing

            done = replay(pipeline.settings, Choice(reasons=["letter_too_short", "page_too_large"]))
            assert len(done.sent) == 4 and not done.already and not done.unsendable
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline:
                collector.poll(1.0)
                result = collector.result
                landed = all(result.complete(d, 0, "letter") for d in ("letter-0", "letter-1"))
                if landed and result.complete("big", 0, "window") and len(result.dead_for("memo")) == 2:
                    break
            else:
                raise AssertionError(f"re-driven documents did not land: {collector.result.dead}")
            result = collector.result
            again = [
                replay(pipeline.settings, Choice(doc_ids=["letter-0", "letter-1"])),
                replay(pipeline.settings, Choice(reasons=["page_too_large"])),
            ]
            listed = streams("dead-letters", "list", "--doc", "memo", "--json", env=_env(pipeline.settings))
            report, _ = audit(pipeline.settings, STRATEGIES, [])
        finally:
            collector.close()

    assert all(result.complete(d, 0, "letter") for d in ("letter-0", "letter-1")), result.dead
    assert result.complete("big", 0, "window")
    # Only the refusing stage took them again: window chunked nothing twice, letter everything once.
    assert result.duplicates == 0
    assert len(result.records()) > window_chunks
    # The memo is too short for any letter: refused again, with its attempt and the letter it came from.
    [original, retried] = sorted(result.dead_for("memo"), key=lambda d: d.attempt)
    assert (original.attempt, retried.attempt) == (0, 1) and retried.reason_code == "letter_too_short"
    memo_id = next(i.id for i in letters(pipeline.settings, Choice(doc_ids=["memo"])) if i.letter.attempt == 0)
    assert retried.redriven_from == memo_id
    # A second replay of the same letters sends nothing.
    assert [(len(r.sent), len(r.already)) for r in again] == [(0, 2), (0, 1)]
    rows = [line for line in listed.stdout.splitlines() if line.strip()]
    assert len(rows) == 2 and '"redriven": {"at_ms"' in rows[0] + rows[1], listed.stdout
    # The audit: the re-driven documents are accounted for; only the memo's second refusal stands.
    gaps = {(g.kind, g.doc_id, g.strategy) for g in report.gaps}
    assert gaps == {("dead_lettered", "memo", "letter")}, report.gaps


def _env(settings) -> dict[str, str]:
    import os

    return {**os.environ, "STREAMS_BROKER": settings.broker, "STREAMS_DEPLOYMENT": settings.deployment}
