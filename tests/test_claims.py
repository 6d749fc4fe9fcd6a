"""docs/claims.md, the matrix of what the README and the docs promise against the tests that prove it, kept
honest: every row names tests, every named test exists (found with ast, in test classes too; a
parametrized id names its function), a claim listed as holding names no expected failure and one listed as
not holding names only strict ones, and the claims the README and the docs make stay in the matrix."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CLAIMS = REPO / "docs" / "claims.md"
#: The table whose rows are claims that do not hold yet (each proven by a strict expected failure).
BROKEN = "Claims that do not hold yet"
TEST_REF = re.compile(r"`(tests/[\w/]+\.py)::((?:\w+::)?\w+)(?:\[[^\]`]*\])?`")

#: What the README and the docs promise, by where they say it: each must appear in some claim of the
#: matrix. A word gone from its page makes this list stale, and the test says so.
KEYWORDS: dict[str, list[str]] = {
    "README.md": [
        "dead-letter",
        "original bytes",
        "is_latest_version",
        "replay",
        "deterministic",
        "byte for byte",
        "streams audit",
        "--repair",
        "one line and a",
        "streams demo",
        "streams chunk",
        "streams tail",
        "STREAMS_DEBUG",
        "KEDA",
        "docker compose",
        "Apache Kafka 4.4.0",
        "web console",
    ],
    "docs/operations.md": [
        "0.5 s",
        "30 s",
        "the last lines of its log",
        "5 times within 60 s",
        "exit 78",
        "streams_role_restarts_total",
        "streams_role_state",
        "/metrics",
        "/healthz",
        "/readyz",
        "streams_dead_letters_total",
        "--watch",
        "--since",
        "streams status",
        "masked",
        "STREAMS_UI_TOKEN",
        "--writable",
        "exactly_once",
        "STREAMS_DEPLOYMENT",
    ],
    "docs/bus.md": [
        "never_assembled",
        "not_chunked",
        "orphan",
        "rows_missing",
        "vectors_missing",
        "wrong_latest",
        "unreported",
        "dead_lettered",
        "not_applicable",
        "documents.indexed",
        "STREAMS_MAX_PENDING_BYTES",
        "STREAMS_ASSEMBLY_TIMEOUT_S",
        "STREAMS_DELETE_SUPERSEDED_VECTORS",
        "streams_audit_gaps",
        "Confluent framing",
        "exactly_once",
    ],
}


#: What the "shown on" column says: the brokers the row's tests run on, or none (no bus pass: the test is
#: pure, or starts the broker it names itself).
BOTH, KAFKA, NOIDA, NONE = "both", "Kafka", "noida-db", "-"


@dataclass
class Row:
    section: str
    line: int
    claim: str
    tests: list[tuple[str, str]] = field(default_factory=list)  # (file, function or Class::function)
    shown_on: str = ""


def parse(text: str) -> list[Row]:
    """The rows of every `claim | where | shown on | proven by` table, with the heading each sits under."""
    rows, section = [], ""
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("## "):
            section = line[3:].strip()
        if not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[0] in ("claim", "") or set(cells[0]) <= {"-", ":"}:
            continue  # a header or its separator
        assert len(cells) == 4, f"docs/claims.md:{number}: a row is claim | where | shown on | proven by"
        rows.append(Row(section, number, cells[0], TEST_REF.findall(cells[3]), cells[2]))
    return rows


@cache
def functions_of(path: Path) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every test function of a file by pytest's name for it: `test_x`, or `TestClass::test_x`."""
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name.startswith("test"):
                    found[f"{node.name}::{item.name}"] = item
    return found


def marks_of(path: Path, name: str) -> set[str]:
    """The markers of a test: its module's `pytestmark`, its class's and its own decorators."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes: list[ast.AST] = [n.value for n in tree.body if isinstance(n, ast.Assign) and "pytestmark" in ast.unparse(n)]
    function = functions_of(path).get(name)
    if function is not None:
        nodes += function.decorator_list
    if "::" in name:
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name.split("::")[0])
        nodes += cls.decorator_list
    marks = {
        sub.attr
        for node in nodes
        for sub in ast.walk(node)
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Attribute) and sub.value.attr == "mark"
    }
    for node in nodes:  # `one_broker("kafka")`: the broker it names, as `one_broker:kafka`
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and ast.unparse(sub.func).endswith("mark.one_broker") and sub.args:
                marks.add(f"one_broker:{ast.literal_eval(sub.args[0])}")
    return marks


def shown_on(rows_tests: list[tuple[str, str]], root: Path = REPO) -> str:
    """Which brokers a row's tests run on, from their markers and folders as tests/conftest.py reads them."""
    from tests.conftest import BOTH_BUSES

    brokers: set[str] = set()
    for file, name in rows_tests:
        path = root / file
        if not path.is_file():
            continue
        marks = marks_of(path, name)
        if "kafka_only" in marks:
            brokers.add(KAFKA)
        elif "embedded_only" in marks:
            brokers.add(NOIDA)
        elif path.parent.name in BOTH_BUSES and "integration" in marks:
            if "one_broker:kafka" in marks:
                brokers.add(KAFKA)
            else:
                brokers |= {NOIDA} if "one_broker" in marks else {NOIDA, KAFKA}
    if brokers == {NOIDA, KAFKA}:
        return BOTH
    return brokers.pop() if brokers else NONE


def strict_xfail(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool | None:
    """None without an xfail mark, else whether it is strict."""
    for decorator in function.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        target = call.func if call else decorator
        if isinstance(target, ast.Attribute) and target.attr == "xfail":
            strict = [k.value for k in (call.keywords if call else []) if k.arg == "strict"]
            return bool(strict) and isinstance(strict[0], ast.Constant) and strict[0].value is True
    return None


def problems(rows: list[Row], root: Path = REPO) -> list[str]:
    """What is wrong with the matrix: rows without tests, tests that do not exist, marks that disagree."""
    found = []
    for row in rows:
        where = f"docs/claims.md:{row.line} ({row.claim[:50]})"
        if not row.tests:
            found.append(f"{where}: names no test")
        for file, name in row.tests:
            path = root / file
            if not path.is_file():
                found.append(f"{where}: {file} does not exist")
                continue
            function = functions_of(path).get(name)
            if function is None:
                found.append(f"{where}: {file} has no test {name}")
                continue
            mark = strict_xfail(function)
            if row.section == BROKEN and mark is not True:
                found.append(f"{where}: {name} must be xfail(strict=True) to stand for a claim that does not hold")
            if row.section != BROKEN and mark is not None:
                found.append(f"{where}: {name} is an expected failure, which proves nothing")
        if row.tests and row.shown_on != (want := shown_on(row.tests, root)):
            found.append(f"{where}: shown on {want!r} by its tests, not {row.shown_on!r}")
    claims = [row.claim for row in rows]
    found += [f"docs/claims.md: claimed twice: {claim[:60]}" for claim in {c for c in claims if claims.count(c) > 1}]
    return found


def rows() -> list[Row]:
    return parse(CLAIMS.read_text(encoding="utf-8"))


def test_every_claim_names_tests_that_exist() -> None:
    matrix = rows()
    assert len(matrix) >= 40 and sum(len(r.tests) for r in matrix) >= 100
    assert f"## {BROKEN}\n" in CLAIMS.read_text(encoding="utf-8"), f"the table {BROKEN!r} is gone: keep it, even empty"
    assert not problems(matrix), "\n".join(problems(matrix))


@pytest.mark.parametrize("page", sorted(KEYWORDS))
def test_the_claims_of_each_page_are_in_the_matrix(page: str) -> None:
    text = " ".join((REPO / page).read_text(encoding="utf-8").split())
    stale = [word for word in KEYWORDS[page] if word not in text]
    assert not stale, f"{page} no longer says {stale}: update KEYWORDS in tests/test_claims.py"
    claimed = " ".join(row.claim for row in rows() if row.tests)
    missing = [word for word in KEYWORDS[page] if word.lower() not in claimed.lower()]
    assert not missing, f"claims of {page} with no row in docs/claims.md: {missing}"


def test_the_checker_finds_each_kind_of_mistake(tmp_path: Path) -> None:
    """On a matrix and test files of its own: the check above can fail, for each reason it gives."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text(
        "import pytest\n\n"
        "def test_plain(): pass\n\n"
        "@pytest.mark.parametrize('n', [1, 2])\ndef test_many(n): pass\n\n"
        "class TestGroup:\n    def test_inside(self): pass\n\n"
        "@pytest.mark.xfail(strict=True, reason='not yet')\ndef test_broken(): pass\n\n"
        "@pytest.mark.xfail(reason='maybe')\ndef test_loose(): pass\n",
        encoding="utf-8",
    )
    text = (
        "## Holds\n\n| claim | where | shown on | proven by |\n|---|---|---|---|\n"
        "| parametrized, in a class | R | - "
        "| `tests/test_a.py::test_many[2]` `tests/test_a.py::TestGroup::test_inside` |\n"
        "| no test | R | - | nothing yet |\n"
        "| a missing file | R | - | `tests/test_gone.py::test_plain` |\n"
        "| a missing function | R | - | `tests/test_a.py::test_gone` |\n"
        "| an expected failure | R | - | `tests/test_a.py::test_broken` |\n"
        "| no test | R | both | `tests/test_a.py::test_plain` |\n"
        f"\n## {BROKEN}\n\n| claim | where | shown on | proven by |\n|---|---|---|---|\n"
        "| broken, shown | B | - | `tests/test_a.py::test_broken` |\n"
        "| broken, loosely | B | - | `tests/test_a.py::test_loose` |\n"
    )
    matrix = parse(text)
    assert matrix[0].tests == [("tests/test_a.py", "test_many"), ("tests/test_a.py", "TestGroup::test_inside")]
    found = problems(matrix, tmp_path)
    expected = [
        "(no test): names no test",
        "tests/test_gone.py does not exist",
        "has no test test_gone",
        "test_broken is an expected failure",
        "test_loose must be xfail(strict=True)",
        "claimed twice: no test",
        "shown on '-' by its tests, not 'both'",
    ]
    for reason in expected:
        assert sum(reason in line for line in found) == 1, (reason, found)
    assert len(found) == len(expected), found


def test_shown_on_reads_the_broker_a_test_runs_on(tmp_path: Path) -> None:
    """`one_broker` alone is noida-db, `one_broker("kafka")` Kafka, neither both (bus suites only)."""
    (tmp_path / "tests" / "integration").mkdir(parents=True)
    (tmp_path / "tests" / "integration" / "test_b.py").write_text(
        "import pytest\n\npytestmark = pytest.mark.integration\n\n"
        "def test_both(): pass\n\n"
        "@pytest.mark.one_broker\ndef test_noida(): pass\n\n"
        "@pytest.mark.one_broker('kafka')\ndef test_kafka(): pass\n\n"
        "@pytest.mark.kafka_only\ndef test_only(): pass\n",
        encoding="utf-8",
    )
    on = {n: shown_on([("tests/integration/test_b.py", f"test_{n}")], tmp_path) for n in ("both", "noida", "kafka")}
    assert on == {"both": BOTH, "noida": NOIDA, "kafka": KAFKA}
    pair = [("tests/integration/test_b.py", "test_noida"), ("tests/integration/test_b.py", "test_kafka")]
    assert shown_on(pair, tmp_path) == BOTH
    assert shown_on([("tests/integration/test_b.py", "test_only")], tmp_path) == KAFKA
