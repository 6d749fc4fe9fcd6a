"""`streams bench mutation`: how many deliberate bugs in the core's identity and offsets the tests catch.

mutmut rewrites every function of the measured modules into many small variants (a `<` made `<=`, a
constant changed, an argument dropped) and runs the tests that reach each function against each variant.
A variant the tests fail on is *killed*; one they pass on *survived*, and is either a gap in the tests or
an *equivalent* mutant that cannot change behaviour. The equivalent ones are listed in streams/bench/equivalents.md,
each with the reason, and only those leave the score.

mutmut writes its variants beside a copy of the sources, so the run happens in a scratch copy (the
working tree, or a commit with `--rev`) and the checkout is never touched. One worker: the machine is
shared.
"""

from __future__ import annotations

import codecs
import difflib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from streams.bench import BenchError, Progress

REPO = Path(__file__).resolve().parents[2]
MODULES = (
    "streams/core/records.py",
    "streams/core/document.py",
    "streams/core/assembly.py",
    "streams/core/text.py",
)
#: The fast tests that reach those modules (docs/benchmarks.md, Mutation testing, says how long each takes).
TESTS = (
    "tests/core/test_records.py",
    "tests/core/test_document.py",
    "tests/core/test_assembly.py",
    "tests/core/test_text.py",
    "tests/core/test_span_counter.py",
    "tests/core/test_publish.py",
    "tests/codec",
    "tests/golden",
)
EQUIVALENTS = Path("streams") / "bench" / "equivalents.md"
RUN_FILE = "bench-mutation.json"  # what a kept run measured, for `--read`
TARGET_SCORE = 85.0

# mutmut reports each variant as the exit code of its test run (mutmut/__main__.py, status_by_exit_code).
_KILLED = {1, 3}
_TIMEOUT = {36, 24, -24, 152, 255, -9}  # SIGXCPU at the CPU limit, SIGKILL one second after it
_NO_TESTS = {5, 33}
_CLASS_MARK = "ǁ"  # mutmut's separator in the names of methods' variants: xǁClassǁmethod__mutmut_3

# mutmut 3.7 reads `item._nodeid`, which pytest 9 no longer has (mutmut 3.8 reads `nodeid`, but needs a newer
# click than constraints.txt holds for faust and uvicorn). The driver gives pytest's nodes that name back,
# then runs mutmut's own command line. It must not import streams: mutmut puts the mutated copy first on
# sys.path, and a streams imported earlier would be the unmutated one.
_DRIVER = """
import sys
import _pytest.nodes
if not hasattr(_pytest.nodes.Node, "_nodeid"):
    _pytest.nodes.Node._nodeid = property(lambda node: node.nodeid)
from mutmut.__main__ import cli
sys.argv = ["mutmut", *sys.argv[1:]]
cli()
"""
_PROGRESS = re.compile(r"(\d+)/(\d+)\s+🎉 (\d+)")
_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏ \t"


@dataclass(frozen=True)
class Mutant:
    """One variant: where it is and what it changed (the original lines and the mutated ones)."""

    name: str
    module: str
    function: str
    line: int
    removed: tuple[str, ...]
    added: tuple[str, ...]
    status: str  # killed, survived, timeout, no tests, other


@dataclass(frozen=True)
class Equivalent:
    """A surviving mutant that cannot change behaviour, with the reason written in streams/bench/equivalents.md."""

    module: str
    function: str
    removed: tuple[str, ...]
    added: tuple[str, ...]
    reason: str


def mutmut_missing() -> str | None:
    """Why the bench cannot run, or None: mutmut is in the `bench` extra."""
    if importlib.util.find_spec("mutmut") is None:
        return "mutmut is not installed: pip install -c constraints.txt -e '.[bench]'"
    return None


def status_of(exit_code: int | None) -> str:
    """mutmut's exit code of a variant's test run as one of five words; `other` is a crash or not run."""
    if exit_code in _KILLED:
        return "killed"
    if exit_code == 0:
        return "survived"
    if exit_code in _TIMEOUT:
        return "timeout"
    if exit_code in _NO_TESTS:
        return "no tests"
    return "other"


# --- the scratch copy ----------------------------------------------------------------------------


def prepare_scratch(scratch: Path, rev: str | None = None, repo: Path = REPO) -> dict[str, Any]:
    """Copy streams/, tests/ and pyproject.toml (the working tree, or `rev`) into `scratch`, symlinks
    resolved (streams/schemas links to ../schemas, and mutmut copies files, not links). Returns which
    commit was copied and whether the working tree differed from it there."""
    commit = _git(repo, "rev-parse", rev or "HEAD")
    if rev is None:
        dirty = bool(_git(repo, "status", "--porcelain", "--", "streams", "tests", "pyproject.toml"))
        for name in ("streams", "tests"):
            shutil.copytree(repo / name, scratch / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        shutil.copy2(repo / "pyproject.toml", scratch / "pyproject.toml")
    else:
        dirty = False
        archive = subprocess.run(
            ["git", "archive", "--format=tar", commit, "streams", "tests", "schemas", "pyproject.toml"],
            cwd=repo,
            capture_output=True,
            check=True,
        ).stdout
        with tempfile.TemporaryFile() as tmp:
            tmp.write(archive)
            tmp.seek(0)
            with tarfile.open(fileobj=tmp) as tar:
                tar.extractall(scratch, filter="tar")
        _resolve_links(scratch / "streams")
    return {"commit": commit[:7], "rev": rev or "working tree", "dirty": dirty}


def _resolve_links(root: Path) -> None:
    """Replace each symlink under `root` by a copy of what it points to (inside the scratch copy)."""
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            target = path.resolve()
            path.unlink()
            if target.is_dir():
                shutil.copytree(target, path)
            elif target.exists():
                shutil.copy2(target, path)


def _git(repo: Path, *args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        raise BenchError(f"git {' '.join(args)}: {exc}") from exc


def write_config(project: Path, package: str, modules: Sequence[str], tests: Sequence[str]) -> None:
    """mutmut's settings, appended to the copy's pyproject.toml: the whole package is copied (so every
    import resolves inside the copy), only `modules` are mutated, only `tests` run."""
    lines = [
        "",
        "[tool.mutmut]",
        f"source_paths = [{json.dumps(package)}]",
        f"only_mutate = {json.dumps(list(modules))}",
        'pytest_add_cli_args = ["-p", "no:cacheprovider"]',
        # A variant that loops forever is stopped at (its tests' time + 5 s) x 3 instead of mutmut's x 15: the
        # golden tests take 15 s, and each endless loop would hold the one worker for four minutes.
        "timeout_constant = 5.0",
        "timeout_multiplier = 3.0",
        f"pytest_add_cli_args_test_selection = {json.dumps(list(tests))}",
        "",
    ]
    config = project / "pyproject.toml"
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    config.write_text(text + "\n".join(lines), encoding="utf-8")


def run_mutmut(project: Path, progress: Progress | None = None, log: Path | None = None) -> None:
    """`mutmut run --max-children 1` in `project`, its progress line relayed to `progress`."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "MUTANT_UNDER_TEST"}}
    env.update({"PYTHONDONTWRITEBYTECODE": "1", "STREAMS_EMBED_THREADS": "1", "OMP_NUM_THREADS": "1"})
    command = [sys.executable, "-c", _DRIVER, "run", "--max-children", "1"]
    tail: list[str] = []
    with subprocess.Popen(command, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as proc:
        assert proc.stdout is not None
        for piece in _pieces(proc.stdout.fileno()):
            tail = [*tail[-40:], piece]
            if log is not None:
                with log.open("a", encoding="utf-8") as f:
                    f.write(piece + "\n")
            match = _PROGRESS.search(piece)
            if progress is not None:
                if match:
                    progress(f"mutants ({match[3]} killed)", int(match[1]), int(match[2]))
                elif piece.strip(_SPINNER):
                    progress(piece.strip(_SPINNER)[:60], 0, 0)
        code = proc.wait()
    if code != 0:
        last = next((line.strip(_SPINNER) for line in reversed(tail) if line.strip(_SPINNER)), "")
        raise BenchError(f"mutmut exited with {code} ({last}); its output is in {log}")


def _pieces(fd: int) -> Iterator[str]:
    """mutmut redraws its status line with carriage returns and no newline: read what is there, split on
    both."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    buffer = ""
    for chunk in iter(lambda: os.read(fd, 4096), b""):
        buffer += decoder.decode(chunk)
        *done, buffer = re.split(r"[\r\n]", buffer)
        yield from done
    if buffer:
        yield buffer


# --- reading mutmut's results --------------------------------------------------------------------


def read_mutants(project: Path, modules: Sequence[str]) -> list[Mutant]:
    """Every variant of `modules` with its status, from mutmut's files under `project`/mutants."""
    found: list[Mutant] = []
    for module in modules:
        mutated = project / "mutants" / module
        meta_path = mutated.with_name(mutated.name + ".meta")
        spans_path = mutated.with_name(mutated.name + ".spans")
        if not meta_path.exists() or not spans_path.exists():
            raise BenchError(f"mutmut wrote no results for {module}")
        exit_codes = json.loads(meta_path.read_text(encoding="utf-8"))["exit_code_by_key"]
        spans = json.loads(spans_path.read_text(encoding="utf-8"))["spans"]
        lines = mutated.read_text(encoding="utf-8").splitlines()
        original = (project / module).read_text(encoding="utf-8")
        def_lines = _def_lines(original)
        for name, exit_code in sorted(exit_codes.items(), key=lambda item: _natural(item[0])):
            found.append(_mutant(name, module, status_of(exit_code), lines, spans, def_lines))
    return found


def _natural(name: str) -> tuple[str, int]:
    stem, _, number = name.rpartition("__mutmut_")
    return stem, int(number) if number.isdigit() else -1


def _mutant(
    name: str, module: str, status: str, lines: list[str], spans: dict[str, list[int]], def_lines: dict[str, int]
) -> Mutant:
    generated = name.rpartition(".")[2]
    mangled = generated.partition("__mutmut_")[0]
    function = _function_name(mangled)
    bare = function.rpartition(".")[2]
    # Both copies renamed back to the function's own name, so a changed default in the signature shows.
    orig = _function_lines(lines, spans[mangled + "__mutmut_orig"], mangled + "__mutmut_orig", bare)
    variant = _function_lines(lines, spans[generated], generated, bare)
    removed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    offset = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=orig, b=variant, autojunk=False).get_opcodes():
        if tag != "equal":
            removed, added, offset = tuple(orig[i1:i2]), tuple(variant[j1:j2]), i1
            break
    line = def_lines.get(function, 0) + offset if function in def_lines else 0
    return Mutant(
        name=name,
        module=module,
        function=function,
        line=line,
        removed=tuple(s.strip() for s in removed),
        added=tuple(s.strip() for s in added),
        status=status,
    )


def _function_name(mangled: str) -> str:
    """`x_trim_span` -> `trim_span`; `xǁAssemblerǁon_page` -> `Assembler.on_page`."""
    if _CLASS_MARK in mangled:
        _, cls, method = mangled.split(_CLASS_MARK)
        return f"{cls}.{method}"
    return mangled.removeprefix("x_")


def _function_lines(lines: list[str], span: list[int], generated: str, name: str) -> list[str]:
    """The lines of one generated function (1-based inclusive span), from its `def` on, under `name`."""
    body = lines[span[0] - 1 : span[1]]
    while body and not body[0].lstrip().startswith(("def ", "async def ")):
        body = body[1:]
    if body:
        body = [body[0].replace(f"def {generated}(", f"def {name}(", 1), *body[1:]]
    return body


def _def_lines(source: str) -> dict[str, int]:
    """Line of the `def` of every function and method of a module, by `name` or `Class.name`."""
    import ast

    found: dict[str, int] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found[node.name] = node.lineno
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    found[f"{node.name}.{item.name}"] = item.lineno
    return found


# --- equivalent mutants --------------------------------------------------------------------------

_ENTRY = re.compile(
    r"^#### `(?P<module>[^`]+)` `(?P<function>[^`]+)`\n+```diff\n(?P<diff>.*?)```\n+(?P<reason>.*?)(?=^#|\Z)",
    re.M | re.S,
)


def load_equivalents(path: Path) -> list[Equivalent]:
    """The entries of streams/bench/equivalents.md: a `#### \\`module\\` \\`function\\`` heading, a diff block of the
    original lines (-) and the mutated ones (+), then the reason. An entry without a reason is an error."""
    if not path.exists():
        return []
    entries: list[Equivalent] = []
    for match in _ENTRY.finditer(path.read_text(encoding="utf-8")):
        diff = match["diff"].splitlines()
        reason = " ".join(match["reason"].split())
        if not reason:
            raise BenchError(f"{path}: the entry for {match['module']} {match['function']} gives no reason")
        entries.append(
            Equivalent(
                module=match["module"],
                function=match["function"],
                removed=tuple(d[1:].strip() for d in diff if d.startswith("-")),
                added=tuple(d[1:].strip() for d in diff if d.startswith("+")),
                reason=reason,
            )
        )
    return entries


def _matches(mutant: Mutant, entry: Equivalent) -> bool:
    return (mutant.module, mutant.function, mutant.removed, mutant.added) == (
        entry.module,
        entry.function,
        entry.removed,
        entry.added,
    )


# --- the report ----------------------------------------------------------------------------------


def summarise(mutants: Sequence[Mutant], equivalents: Sequence[Equivalent], modules: Sequence[str]) -> dict[str, Any]:
    """Per module: counts by status and the score, killed and timed-out variants over all variants less
    the listed equivalents (a variant no test reaches counts as not killed). Survivors listed by line.
    An equivalent entry that matched no survivor is reported as stale: the code moved under it."""
    per_module: dict[str, Any] = {}
    used: set[int] = set()
    for module in modules:
        rows = [m for m in mutants if m.module == module]
        counts = {s: sum(m.status == s for m in rows) for s in ("killed", "survived", "timeout", "no tests", "other")}
        equivalent: list[dict[str, Any]] = []
        survivors: list[dict[str, Any]] = []
        for m in rows:
            if m.status in ("killed", "timeout"):
                continue
            hit = next(
                (i for i, e in enumerate(equivalents) if i not in used and m.status == "survived" and _matches(m, e)),
                None,
            )
            row = {k: v for k, v in asdict(m).items() if k != "module"}
            if hit is None:
                survivors.append(row)
            else:
                used.add(hit)
                equivalent.append({**row, "reason": equivalents[hit].reason})
        scored = len(rows) - len(equivalent)
        detected = counts["killed"] + counts["timeout"]
        per_module[module] = {
            "mutants": len(rows),
            **{k.replace(" ", "_"): v for k, v in counts.items()},
            "equivalent": len(equivalent),
            "score_percent": round(100 * detected / scored, 1) if scored else None,
            "survivors": sorted(survivors, key=lambda r: r["line"]),
            "equivalents": sorted(equivalent, key=lambda r: r["line"]),
        }
    stale = [asdict(e) for i, e in enumerate(equivalents) if i not in used and e.module in modules]
    total = sum(r["mutants"] - r["equivalent"] for r in per_module.values())
    detected = sum(r["killed"] + r["timeout"] for r in per_module.values())
    return {
        "modules": per_module,
        "score_percent": round(100 * detected / total, 1) if total else None,
        "stale_equivalents": stale,
        "target_percent": TARGET_SCORE,
        "target_met": all(
            r["score_percent"] is not None and r["score_percent"] >= TARGET_SCORE for r in per_module.values()
        ),
    }


def run_mutation_bench(
    modules: Sequence[str] = MODULES,
    tests: Sequence[str] = TESTS,
    rev: str | None = None,
    keep: Path | None = None,
    progress: Progress | None = None,
    repo: Path = REPO,
) -> dict[str, Any]:
    """The whole bench: scratch copy, mutmut with one worker, the per-module report."""
    missing = mutmut_missing()
    if missing:
        raise BenchError(missing)
    for module in modules:
        if not (repo / module).is_file():
            raise BenchError(f"no such module: {module}")
    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="streams-mutation-")) if keep is None else keep
    if keep is not None:
        if keep.exists() and any(keep.iterdir()):
            raise BenchError(f"{keep} is not empty")
        keep.mkdir(parents=True, exist_ok=True)
    # A failed run keeps its scratch copy: mutmut's log there says why.
    if progress:
        progress("copying the sources", 0, 0)
    source = prepare_scratch(scratch, rev, repo)
    present = [t for t in tests if (scratch / t).exists()]
    write_config(scratch, "streams", modules, present)
    run_mutmut(scratch, progress, log=scratch / "mutmut.log")
    mutants = read_mutants(scratch, modules)
    if all(m.status == "no tests" for m in mutants):
        raise BenchError(f"no test reached a mutated function (see {scratch}): did the tests import another copy?")
    report = summarise(mutants, load_equivalents(repo / EQUIVALENTS), modules)
    run = {
        "modules_measured": list(modules),
        "source": source,
        "tests": present,
        "tool": f"mutmut {_version('mutmut')}",
        "workers": 1,
        "wall_s": round(time.monotonic() - started, 1),
    }
    if keep is None:
        shutil.rmtree(scratch, ignore_errors=True)
    else:
        (scratch / RUN_FILE).write_text(json.dumps(run, indent=1), encoding="utf-8")
    return {**report, **run, "scratch": str(scratch) if keep is not None else None}


def reread(scratch: Path, repo: Path = REPO) -> dict[str, Any]:
    """The report of a run kept with `--keep`, scored again with streams/bench/equivalents.md as it is now: an
    equivalent written up after the run leaves the score without running mutmut again."""
    path = scratch / RUN_FILE
    if not path.is_file():
        raise BenchError(f"{scratch} holds no kept run ({RUN_FILE} is missing)")
    run = json.loads(path.read_text(encoding="utf-8"))
    modules = run["modules_measured"]
    report = summarise(read_mutants(scratch, modules), load_equivalents(repo / EQUIVALENTS), modules)
    return {**report, **run, "scratch": str(scratch)}


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "?"


__all__ = [
    "MODULES",
    "TESTS",
    "Equivalent",
    "Mutant",
    "load_equivalents",
    "mutmut_missing",
    "read_mutants",
    "reread",
    "run_mutation_bench",
    "run_mutmut",
    "summarise",
    "write_config",
]
