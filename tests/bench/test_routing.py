"""`streams bench routing`: the shipped labelled set stays on the diagonal, and the command reports what it
measured, off-diagonal documents with their evidence, and a set it cannot read in one line."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from streams.bench.cli import bench_app
from streams.bench.routing import TYPES, load_set, run_routing_bench


def test_the_labelled_set_covers_every_type_in_many_shapes() -> None:
    items = load_set()
    assert len(items) >= 60
    labels = Counter(item.label for item in items)
    assert set(labels) == set(TYPES) and min(labels.values()) >= 8, labels
    for label in TYPES:
        shapes = {item.shape for item in items if item.label == label}
        assert len(shapes) >= 4, (label, shapes)
    assert all(item.path.is_file() for item in items)


def test_every_labelled_document_is_detected_as_its_label() -> None:
    report = run_routing_bench()
    assert report["generic_sent_to_a_typed_strategy"] == 0, report["misses"]
    assert report["misses"] == [], [(m["file"], m["label"], m["detected"], m["evidence"]) for m in report["misses"]]
    assert sum(report["matrix"][label][label] for label in TYPES) == report["documents"]


def write_set(folder: Path, entries: list[tuple[str, str, str]]) -> None:
    (folder / "docs").mkdir(parents=True)
    manifest = []
    for name, label, text in entries:
        (folder / "docs" / name).write_text(text)
        manifest.append({"file": name, "label": label, "shape": "markdown"})
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_the_command_prints_the_matrix_and_each_miss_with_its_evidence(tmp_path: Path) -> None:
    write_set(
        tmp_path / "set",
        [
            ("a.md", "solicitation", "# Request for Proposal\n\nThe contractor shall paint. Offerors must bid.\n"),
            ("b.md", "letter", "Request for Quotation. The contractor shall mow the lawn. Offerors apply.\n"),
        ],
    )
    runner = CliRunner()
    done = runner.invoke(bench_app, ["routing", "--corpus", str(tmp_path / "set"), "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["documents"] == 2 and report["correct"] == 1
    assert report["matrix"]["letter"]["solicitation"] == 1
    printed = runner.invoke(bench_app, ["routing", "--corpus", str(tmp_path / "set")])
    assert printed.exit_code == 0, printed.output
    assert "1 of 2 on the diagonal" in printed.output
    assert "docs/b.md (markdown): letter detected as solicitation" in printed.output
    assert "request for proposal" in printed.output  # the evidence that sent it there
    missing = runner.invoke(bench_app, ["routing", "--corpus", str(tmp_path / "nothing")])
    assert missing.exit_code == 2 and "no manifest.json" in missing.output
