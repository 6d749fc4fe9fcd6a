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


def named_by(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The names an import statement in `module` imports, relative ones resolved against its package."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - node.level + 1] if node.level else []
    named = ".".join([*base, *([node.module] if node.module else [])])
    return [named, *(f"{named}.{alias.name}" for alias in node.names)]


TREES = {module_name(path): (path, ast.parse(path.read_text(encoding="utf-8"))) for path in PACKAGE.rglob("*.py")}


def imports_of(module: str) -> set[str]:
    """Every `streams...` module a file imports, function-local imports too."""
    path, tree = TREES[module]
    found = {
        name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for name in named_by(node, module, path.name == "__init__.py")
    }
    return {name for name in found if name == "streams" or name.startswith("streams.")}


GRAPH = {module: imports_of(module) for module in TREES}


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


# --- imports at module level -------------------------------------------------------------------------
# A module says what it depends on at its top. An import inside a function is kept only where it earns it:
# a module that pulls in a heavy optional dependency (docling, faust, a store's client) so that a process
# loads it only when it runs that path, an import cycle, the command modules (the CLI loads a command's
# modules when that command runs, so `streams --help` stays fast), or a reason written beside it (`# lazy:`).

HEAVY = {
    *("faust", "mode", "aiokafka", "confluent_kafka", "pymongo", "prometheus_client", "docling", "docling_core"),
    *("torch", "sentence_transformers", "onnxruntime", "onnx", "lancedb", "pyarrow", "pinecone", "uvicorn"),
    *("starlette", "jinja2", "playwright", "selenium", "llama_index", "langchain", "langchain_core", "chonkie"),
    *("langchain_text_splitters", "langchain_community", "chromadb", "transformers", "docx", "pypdf", "hypothesis"),
    *("httpx", "requests"),
}
COMMAND_MODULES = {"streams.cli", "streams.bench.cli"}


def _module_level(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The imports that run when the module is imported (a `TYPE_CHECKING` block's do not)."""
    found, stack = [], list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If):
            typing_only = isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
            stack.extend(node.orelse if typing_only else node.body + node.orelse)
        elif isinstance(node, ast.Try):
            stack.extend([*node.body, *node.orelse, *node.finalbody, *(s for h in node.handlers for s in h.body)])
    return found


def _loads(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> set[str]:
    """The streams modules an import statement loads, its packages included."""
    names = named_by(node, module, is_package)
    return {".".join(n.split(".")[:i]) for n in names for i in range(1, n.count(".") + 2)} & set(TREES)


EDGES = {
    m: set().union(*(_loads(n, m, p.name == "__init__.py") for n in _module_level(t))) - {m}
    for m, (p, t) in TREES.items()
}
HEAVY_OF = {
    m: {
        root
        for n in _module_level(t)
        if not getattr(n, "level", 0)
        for root in ([a.name.split(".")[0] for a in n.names] if isinstance(n, ast.Import) else [n.module.split(".")[0]])
        if root in HEAVY
    }
    for m, (_, t) in TREES.items()
}


def _closure(module: str) -> set[str]:
    seen, stack = set(), [module]
    while stack:
        name = stack.pop()
        if name not in seen:
            seen.add(name)
            stack.extend(EDGES.get(name, ()))
            stack.extend(".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1))
    return seen


def _heavy(module: str) -> set[str]:
    return set().union(*(HEAVY_OF.get(m, set()) for m in _closure(module)))


def unearned(module: str, tree: ast.Module, lines: list[str], is_package: bool = False) -> list[int]:
    """The lines of a module's function-local imports of light modules that no cycle or `# lazy:` explains."""
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            loaded = _loads(node, module, is_package)
            if not loaded or "# lazy:" in lines[node.lineno - 1]:
                continue
            heavy = set().union(*(_heavy(t) for t in loaded)) - _heavy(module)
            if not heavy and not any(module in _closure(t) for t in loaded):
                found.append(node.lineno)
    return found


def test_streams_modules_are_imported_at_module_level_unless_heavy_or_circular() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for module, (path, tree) in TREES.items()
        if module not in COMMAND_MODULES
        for line in unearned(module, tree, path.read_text(encoding="utf-8").splitlines(), path.name == "__init__.py")
    ]
    assert not found, f"function-local imports of light modules (move them to the top): {found}"


def test_the_import_rule_tells_a_light_import_from_a_heavy_one() -> None:
    source = (
        "def light():\n    from streams.core.text import WORD\n"
        "def heavy():\n    from streams.agents.app import chunker_app\n"
        "def said():\n    from streams.core.text import WORD  # lazy: a reason\n"
    )
    assert unearned("streams.ops.example", ast.parse(source), source.splitlines()) == [2]
    assert not _heavy("streams.settings") and "faust" in _heavy("streams.agents.app")
