"""The suite's own wiring, read from its sources (ast): a test that starts a broker says so with the
`integration` marker (so `-m "not integration"` runs no broker), and a test that cannot run on one broker
is left out of that pass by a marker (`kafka_only`, `embedded_only`) rather than skipped at run time,
where its id would claim a pass on a broker it never ran on."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
#: Calls that start a broker (or a whole pipeline with one) in the test's process or a child's.
STARTS_A_BROKER = {"KafkaBroker", "kafka_broker", "broker", "LocalPipeline", "start_up", "run_pipeline", "noida_broker"}


def modules() -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text(), str(path))) for path in sorted(TESTS.rglob("test_*.py"))]


def marks(decorators: list[ast.expr]) -> set[str]:
    """Marker names in decorators or a `pytestmark` value: `pytest.mark.NAME` wherever it appears."""
    found: set[str] = set()
    for node in decorators:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Attribute) and sub.value.attr == "mark":
                found.add(sub.attr)
    return found


def module_marks(tree: ast.Module) -> set[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets):
            return marks([node.value])
    return set()


def collected(tree: ast.Module) -> list[ast.FunctionDef]:
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        found += [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
    return found


def called(node: ast.AST) -> set[str]:
    """Names called in `node` (a pipeline told `own_broker=False` starts none), and `run_pipeline` used."""
    names = {getattr(n, "id", "") for n in ast.walk(node) if isinstance(n, ast.Name)}
    calls = {
        getattr(n.func, "id", getattr(n.func, "attr", ""))
        for n in ast.walk(node)
        if isinstance(n, ast.Call) and "own_broker=False" not in [ast.unparse(k) for k in n.keywords]
    }
    return calls | (names & {"run_pipeline"})


def fixtures_that_start_a_broker(tree: ast.Module) -> set[str]:
    return {
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and "fixture" in ast.unparse(n.decorator_list) and called(n) & STARTS_A_BROKER
    }


def test_every_test_that_starts_a_broker_is_marked_integration() -> None:
    unmarked = []
    for path, tree in modules():
        if "integration" in module_marks(tree):
            continue
        starting = fixtures_that_start_a_broker(tree)
        for test in collected(tree):
            uses = {a.arg for a in test.args.args} & starting
            if (called(test) & STARTS_A_BROKER or uses) and "integration" not in marks(test.decorator_list):
                unmarked.append(f"{path.relative_to(TESTS)}::{test.name}")
    assert not unmarked, unmarked


def test_no_test_skips_itself_on_a_broker_at_run_time() -> None:
    """`if bus != "kafka": pytest.skip(...)` reports a skip under a `[noida]` id; `kafka_only` leaves the
    test out of the noida-db pass (deselected), as its id should."""
    skipping = []
    for path, tree in modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.If) or "bus" not in {getattr(n, "id", "") for n in ast.walk(node.test)}:
                continue
            if any(
                isinstance(n, ast.Call) and ast.unparse(n.func) == "pytest.skip" for b in node.body for n in ast.walk(b)
            ):
                skipping.append(f"{path.relative_to(TESTS)}:{node.lineno}")
    assert not skipping, skipping


def test_a_fixture_wider_than_a_test_that_starts_a_broker_is_built_per_broker_pass() -> None:
    """A module or session fixture that starts services without asking for `bus` is built once and reused by
    the other pass: the console's `[kafka]` tests once ran against a noida-db stack that way."""
    from tests.conftest import BOTH_BUSES

    blind = []
    for path in sorted(TESTS.rglob("*.py")):
        if path.parent.name not in BOTH_BUSES:
            continue
        tree = ast.parse(path.read_text(), str(path))
        if module_marks(tree) & {"embedded_only", "kafka_only"}:
            continue  # one pass only: built once is right
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef):
                continue
            decorators = ast.unparse(node.decorator_list)
            wide = "fixture" in decorators and ("module" in decorators or "session" in decorators)
            if (
                wide
                and called(node) & (STARTS_A_BROKER | {"document_store"})
                and "bus" not in {a.arg for a in node.args.args}
            ):
                blind.append(f"{path.relative_to(TESTS)}::{node.name}")
    assert not blind, blind
