"""`streams bench mutation`: a real mutmut run over a module small enough to work out every variant by hand,
the reading of mutmut's files, the score with an equivalent mutant left out, the scratch copy, and the
refusal when mutmut is missing."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streams.bench import BenchError
from streams.bench.cli import bench_app
from streams.bench.mutation import (
    REPO,
    RUN_FILE,
    Equivalent,
    Mutant,
    load_equivalents,
    mutmut_missing,
    prepare_scratch,
    read_mutants,
    reread,
    run_mutation_bench,
    run_mutmut,
    summarise,
    write_config,
)

needs_mutmut = pytest.mark.skipif(mutmut_missing() is not None, reason="pip install 'streams[bench]'")

GRADES = """def grade(score: int) -> str:
    if score >= 50:
        return "pass"
    return "fail"


def double(value: int) -> int:
    return value * 2


def halve(value: int) -> int:
    return value // 2
"""
# Far from the bar on both sides, so moving the bar (>= to >, 50 to 51) goes unseen; halve is never called.
GRADES_TEST = """from tiny.grades import double, grade


def test_grades_far_from_the_bar() -> None:
    assert grade(70) == "pass"
    assert grade(10) == "fail"


def test_double() -> None:
    assert double(4) == 8
"""
EQUIVALENT_DOC = """# Equivalent mutants

#### `tiny/grades.py` `grade`

```diff
-    if score >= 50:
+    if score > 50:
```

Taken as equivalent here only to show the exclusion: no caller grades exactly 50.

#### `tiny/grades.py` `grade`

```diff
-    if score >= 40:
+    if score > 40:
```

A stale entry: the code it was written for is gone.
"""


@pytest.fixture(scope="module")
def tiny_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if mutmut_missing():
        pytest.skip("mutmut is not installed")
    project = tmp_path_factory.mktemp("tiny")
    (project / "tiny").mkdir()
    (project / "tiny" / "__init__.py").write_text("")
    (project / "tiny" / "grades.py").write_text(GRADES)
    (project / "tests").mkdir()
    (project / "tests" / "test_grades.py").write_text(GRADES_TEST)
    write_config(project, "tiny", ["tiny/grades.py"], ["tests"])
    seen: list[tuple[str, int, int]] = []
    run_mutmut(project, lambda *update: seen.append(update))
    assert any(total == 10 and done == 10 for _, done, total in seen), "progress reached every variant"
    assert (project / "tiny" / "grades.py").read_text() == GRADES, "mutmut writes its variants beside the copy"
    return project


@pytest.fixture(scope="module")
def tiny_run(tiny_project: Path) -> list[Mutant]:
    return read_mutants(tiny_project, ["tiny/grades.py"])


@needs_mutmut
def test_every_variant_of_a_tiny_module_as_worked_out_by_hand(tiny_run: list[Mutant]) -> None:
    found = {(m.function, m.line, m.removed, m.added): m.status for m in tiny_run}
    assert found == {
        # 4 * 2 = 8: 4 / 2 = 2 and 4 * 3 = 12 both fail the test
        ("double", 8, ("return value * 2",), ("return value / 2",)): "killed",
        ("double", 8, ("return value * 2",), ("return value * 3",)): "killed",
        # 70 and 10 sit on the same side of 50 and of 51: the bar can move unseen
        ("grade", 2, ("if score >= 50:",), ("if score > 50:",)): "survived",
        ("grade", 2, ("if score >= 50:",), ("if score >= 51:",)): "survived",
        # the words themselves are compared
        ("grade", 3, ('return "pass"',), ('return "XXpassXX"',)): "killed",
        ("grade", 3, ('return "pass"',), ('return "PASS"',)): "killed",
        ("grade", 4, ('return "fail"',), ('return "XXfailXX"',)): "killed",
        ("grade", 4, ('return "fail"',), ('return "FAIL"',)): "killed",
        # no test calls halve
        ("halve", 12, ("return value // 2",), ("return value / 2",)): "no tests",
        ("halve", 12, ("return value // 2",), ("return value // 3",)): "no tests",
    }


@needs_mutmut
def test_the_score_leaves_out_listed_equivalents_only(tiny_run: list[Mutant], tmp_path: Path) -> None:
    doc = tmp_path / "mutation.md"
    doc.write_text(EQUIVALENT_DOC)
    report = summarise(tiny_run, load_equivalents(doc), ["tiny/grades.py"])
    row = report["modules"]["tiny/grades.py"]
    assert (row["mutants"], row["killed"], row["survived"], row["no_tests"], row["equivalent"]) == (10, 6, 2, 2, 1)
    assert row["score_percent"] == 66.7  # 6 killed of 10 - 1 equivalent; untested variants count against
    assert [(s["line"], s["status"]) for s in row["survivors"]] == [(2, "survived"), (12, "no tests"), (12, "no tests")]
    assert row["survivors"][0]["added"] == ("if score >= 51:",)
    assert row["equivalents"][0]["reason"].startswith("Taken as equivalent here only")
    assert [e["removed"] for e in report["stale_equivalents"]] == [("if score >= 40:",)]
    assert report["target_met"] is False
    without = summarise(tiny_run, [], ["tiny/grades.py"])["modules"]["tiny/grades.py"]
    assert without["score_percent"] == 60.0  # 6 of 10


@needs_mutmut
def test_a_kept_run_is_scored_again_with_the_equivalents_as_they_are_now(tiny_project: Path, tmp_path: Path) -> None:
    (tmp_path / "streams" / "bench").mkdir(parents=True)
    (tmp_path / "streams" / "bench" / "equivalents.md").write_text(EQUIVALENT_DOC)
    run = {"modules_measured": ["tiny/grades.py"], "source": {"commit": "abc1234"}, "tool": "mutmut 3.7.0"}
    (tiny_project / RUN_FILE).write_text(json.dumps(run))
    report = reread(tiny_project, repo=tmp_path)
    assert report["modules"]["tiny/grades.py"]["score_percent"] == 66.7  # as above: 6 of 10 - 1 equivalent
    assert report["source"] == {"commit": "abc1234"} and report["scratch"] == str(tiny_project)
    with pytest.raises(BenchError, match="holds no kept run"):
        reread(tmp_path)


def test_an_equivalent_without_a_reason_is_refused(tmp_path: Path) -> None:
    doc = tmp_path / "mutation.md"
    doc.write_text("#### `a.py` `f`\n\n```diff\n-    x = 1\n+    x = 2\n```\n\n")
    with pytest.raises(BenchError, match="gives no reason"):
        load_equivalents(doc)


def test_the_projects_equivalents_name_lines_that_exist() -> None:
    """Each entry in streams/bench/equivalents.md quotes original lines of its function; a stale one must be removed."""
    entries = load_equivalents(REPO / "streams" / "bench" / "equivalents.md")
    for entry in entries:
        source = (REPO / entry.module).read_text()
        assert entry.removed, entry
        for line in entry.removed:
            assert line in source, f"{entry.module} {entry.function}: no line {line!r}"


def test_the_scratch_copy_is_the_commit_with_its_links_resolved(tmp_path: Path) -> None:
    source = prepare_scratch(tmp_path, rev="HEAD")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout
    assert source == {"commit": head[:7], "rev": "HEAD", "dirty": False}
    schemas = tmp_path / "streams" / "schemas"
    assert schemas.is_dir() and not schemas.is_symlink(), "mutmut copies files, so the link became a folder"
    assert sorted(p.name for p in schemas.iterdir()) == sorted(p.name for p in (REPO / "schemas").iterdir())
    assert (tmp_path / "streams" / "core" / "records.py").is_file() and (tmp_path / "pyproject.toml").is_file()


def test_without_mutmut_the_bench_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mutmut" else real(name, *a))
    assert mutmut_missing() == "mutmut is not installed: pip install -c constraints.txt -e '.[bench]'"
    with pytest.raises(BenchError, match=r"mutmut is not installed"):
        run_mutation_bench()
    result = CliRunner().invoke(bench_app, ["mutation", "--json"])
    assert isinstance(result.exception, BenchError) and result.stdout == ""


def test_an_unknown_module_is_refused() -> None:
    if mutmut_missing():
        pytest.skip("mutmut is not installed")
    with pytest.raises(BenchError, match=r"no such module: streams/core/nope\.py"):
        run_mutation_bench(modules=["streams/core/nope.py"])


def test_an_equivalent_matches_module_function_and_both_sides() -> None:
    mutant = Mutant("m", "a.py", "f", 3, ("x = 1",), ("x = 2",), "survived")
    same = Equivalent("a.py", "f", ("x = 1",), ("x = 2",), "why")
    other_side = Equivalent("a.py", "f", ("x = 1",), ("x = 0",), "why")
    other_function = Equivalent("a.py", "g", ("x = 1",), ("x = 2",), "why")
    assert summarise([mutant], [same], ["a.py"])["modules"]["a.py"]["equivalent"] == 1
    assert summarise([mutant], [other_side, other_function], ["a.py"])["modules"]["a.py"]["equivalent"] == 0
    killed = Mutant("k", "a.py", "f", 3, ("x = 1",), ("x = 2",), "killed")
    report = summarise([killed], [same], ["a.py"])
    assert report["modules"]["a.py"]["equivalent"] == 0, "a killed variant is never excused"
    assert report["modules"]["a.py"]["score_percent"] == 100.0
