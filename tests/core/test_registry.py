"""The strategy registry: each strategy is one declaration (`Strategy`) in its own package, and a mistake in
one is refused when the registry reads it, not when a document reaches the chunker."""

from __future__ import annotations

from typing import ClassVar

import pytest

from streams.core.chunkers import (
    BUILT_IN,
    EMBEDDING_STRATEGIES,
    OPTIONS,
    STRATEGIES,
    UnknownStrategy,
    get_chunker,
    strategy,
)
from streams.core.chunkers.base import Chunker, Strategy
from streams.core.chunkers.window import WindowChunker, WindowOptions
from streams.core.options import StrategyOptions


@pytest.mark.parametrize("name", STRATEGIES)
def test_each_strategy_is_declared_in_its_own_package(name: str) -> None:
    declared = strategy(name)
    cls = declared.chunker_class()
    assert cls.name == name and cls.options_model is declared.options is OPTIONS[name]
    home = f"streams.core.chunkers.{name}"
    assert cls.__module__ == home or cls.__module__.startswith(home + ".")
    assert declared.options.__module__ == home or declared.options.__module__.startswith(home + ".")


def test_the_views_follow_the_declarations() -> None:
    assert list(STRATEGIES) == list(BUILT_IN)
    assert list(EMBEDDING_STRATEGIES) == [n for n in STRATEGIES if strategy(n).embeds] == ["semantic", "cluster"]
    assert strategy("cluster").embed_order == "descending" and strategy("semantic").embed_order == "ascending"
    assert strategy("letter").doc_types() == ("letter",) and "generic" in strategy("window").doc_types()


def test_a_declaration_whose_chunker_is_another_strategy_is_refused() -> None:
    class OtherOptions(StrategyOptions):
        strategy: ClassVar[str] = "other"
        seed: ClassVar[str] = "-"
        summary: ClassVar[str] = "-"

    declared = Strategy("other", OtherOptions, "streams.core.chunkers.window:WindowChunker")
    with pytest.raises(TypeError, match="no Chunker named 'other'"):
        declared.chunker_class()
    with pytest.raises(TypeError, match="options named 'window'"):
        Strategy("other", WindowOptions, "streams.core.chunkers.window:WindowChunker")


def test_a_chunker_with_other_options_than_its_declaration_is_refused() -> None:
    class Stray(WindowChunker):
        options_model = OPTIONS["section"]

    import streams.core.chunkers.window as module

    module.Stray = Stray  # type: ignore[attr-defined]
    try:
        with pytest.raises(TypeError, match="takes other options than its declaration"):
            Strategy("window", WindowOptions, "streams.core.chunkers.window:Stray").chunker_class()
    finally:
        del module.Stray  # type: ignore[attr-defined]
    assert issubclass(Stray, Chunker)


def test_an_unknown_name_is_one_line() -> None:
    with pytest.raises(UnknownStrategy, match="unknown strategy 'paragraph'; known: window, letter"):
        get_chunker("paragraph")


def test_names_are_known_without_importing_a_strategy_and_a_name_declared_twice_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys
    from types import SimpleNamespace

    import streams.core.chunkers as chunkers

    registry = chunkers.Registry()
    monkeypatch.setattr(chunkers, "_entry_points", lambda: [SimpleNamespace(name="window")])
    with pytest.raises(TypeError, match="'window' is declared twice"):
        registry.names()
    monkeypatch.setattr(chunkers, "_entry_points", lambda: [SimpleNamespace(name="toy")])
    registry.refresh()
    loaded = {m for m in sys.modules if m.startswith("streams.core.chunkers.")}
    assert registry.names() == (*BUILT_IN, "toy")
    assert {m for m in sys.modules if m.startswith("streams.core.chunkers.")} == loaded  # nothing imported
