"""Each strategy is declared where its class is: the class's `name` registers it, its module is
`streams.core.chunkers.<name>`, and a clash or an undeclared strategy fails at class definition."""

from __future__ import annotations

import re

import pytest

from streams.core.chunkers import STRATEGIES, UnknownStrategy, get_chunker, strategy_class, strategy_module
from streams.core.chunkers.base import Chunker, registered


@pytest.mark.parametrize("name", STRATEGIES)
def test_each_strategy_registers_under_its_own_module(name: str) -> None:
    cls = strategy_class(name)
    assert cls.name == name and registered(name) is cls
    assert cls.__module__ == strategy_module(name) or cls.__module__.startswith(strategy_module(name) + ".")


def test_a_second_class_for_a_registered_name_is_refused() -> None:
    strategy_class("window")
    with pytest.raises(TypeError, match=re.escape("'window' is already streams.core.chunkers.window.WindowChunker")):

        class Impostor(Chunker):
            name = "window"

            def chunk(self, doc):  # type: ignore[no-untyped-def]
                return []

    assert registered("window").__name__ == "WindowChunker"


def test_a_strategy_without_declared_options_is_refused() -> None:
    with pytest.raises(TypeError, match="'nonesuch' declares no options"):

        class Nonesuch(Chunker):
            name = "nonesuch"

            def chunk(self, doc):  # type: ignore[no-untyped-def]
                return []

    assert registered("nonesuch") is None


def test_an_unknown_name_is_one_line() -> None:
    with pytest.raises(UnknownStrategy, match="unknown strategy 'paragraph'; known: window, letter"):
        get_chunker("paragraph")
