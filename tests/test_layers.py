"""The package's layering, read from every import in its source (function-local ones too): the pure core
imports nothing above it, sinks do not reach into operations, and nothing outside the benchmarks imports
them (`streams bench` is found through its entry point)."""

from __future__ import annotations

import ast
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from streams.cli import app

PACKAGE = Path(__file__).resolve().parents[1] / "streams"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every `streams...` module a file imports, relative imports resolved against its package."""
    package = module_name(path).split(".") if path.name == "__init__.py" else module_name(path).split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found |= {module} | {f"{module}.{alias.name}" for alias in node.names}
    return {name for name in found if name == "streams" or name.startswith("streams.")}


GRAPH = {module_name(path): imports_of(path) for path in PACKAGE.rglob("*.py")}


def within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def crossings(source: str, allowed: tuple[str, ...] = (), forbidden: tuple[str, ...] = ()) -> list[str]:
    return sorted(
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        if within(module, source)
        for target in targets
        if (allowed and not any(within(target, a) for a in allowed)) or any(within(target, f) for f in forbidden)
    )


def test_the_graph_is_read() -> None:
    # the reader resolves both import forms: a graph it could not read would pass every rule below
    assert "streams.core.chunkers" in GRAPH and any(within(t, "streams.core") for t in GRAPH["streams.core.publish"])
    assert any(within(t, "streams.bench") for t in GRAPH["streams.bench.cli"])


def test_the_core_imports_nothing_above_it() -> None:
    assert crossings("streams.core", allowed=("streams.core",)) == []


def test_sinks_do_not_import_operations() -> None:
    assert crossings("streams.sinks", forbidden=("streams.ops",)) == []


def test_embedding_is_one_package_that_imports_nothing_above_it() -> None:
    # the model, its graph, its sessions and the shared stores: below the sinks, the agents and operations
    below = ("streams.core", "streams.embedding", "streams.settings", "streams.runtime")
    assert crossings("streams.embedding", allowed=below) == []
    assert not [m for m in GRAPH if any(word in m for word in ("embedstore", "onnx_model", "bert_graph"))]


def test_the_runtime_does_not_import_the_sinks() -> None:
    assert crossings("streams.runtime", forbidden=("streams.sinks", "streams.ops", "streams.agents")) == []


@pytest.mark.parametrize("layer", sorted({m.split(".")[1] for m in GRAPH if m.count(".") >= 1} - {"bench"}))
def test_nothing_in_the_product_imports_the_benchmarks(layer: str) -> None:
    assert crossings(f"streams.{layer}", forbidden=("streams.bench",)) == []


def test_the_benchmarks_are_found_through_their_entry_point() -> None:
    points = {p.name: p.value for p in entry_points(group="streams.commands")}
    assert points.get("bench") == "streams.bench.cli:bench_app"
    assert "bench" in {group.name for group in app.registered_groups}
