"""The strategy registry: every strategy is one package that exports a `Strategy` (its chunker, options
model, document types, embedder, conformance rules), and everything else reads the registry.

Built-in strategies are the modules `streams.core.chunkers.<name>`, in the order of their specifications.
Another package adds one by naming its `Strategy` under the entry-point group `streams.strategies`
(`toy = my_package:STRATEGY`): the settings, `streams strategies`, the demo, the audit, the docs and
conformance find it with no other edit. Found once per process, on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from streams.core.chunkers.base import ChunkDraft, Chunker, ChunkingError, Strategy
from streams.core.options import OptionsError, StrategyOptions, describe_model, validate
from streams.core.tokenizers import Tokenizer, get_tokenizer

#: The strategies this package holds, in the order of their specifications.
BUILT_IN = ("window", "letter", "finance", "section", "hybrid", "semantic", "cluster")

#: The entry-point group through which another installed package adds a strategy.
ENTRY_POINTS = "streams.strategies"


class UnknownStrategy(OptionsError):
    pass


class Registry:
    """Name -> `Strategy`: the built-in ones, then those other packages declare (entry points). The names
    are known without importing any strategy; a declaration is imported when it is first asked for."""

    def __init__(self) -> None:
        self._names: tuple[str, ...] | None = None
        self._loaded: dict[str, Strategy] = {}

    def names(self) -> tuple[str, ...]:
        if self._names is None:
            names = (*BUILT_IN, *sorted(point.name for point in _entry_points()))  # one order on any machine
            if twice := [name for name in names if names.count(name) > 1]:
                raise TypeError(f"strategy {twice[0]!r} is declared twice ({ENTRY_POINTS})")
            self._names = names
        return self._names

    def get(self, name: str) -> Strategy:
        if name not in self.names():
            raise UnknownStrategy(f"unknown strategy {name!r}; known: {', '.join(self.names())}")
        if name not in self._loaded:
            self._loaded[name] = _load(name)
        return self._loaded[name]

    def strategies(self) -> dict[str, Strategy]:
        return {name: self.get(name) for name in self.names()}

    def refresh(self) -> None:
        """Look again (a package installed since the first look)."""
        self._names, self._loaded = None, {}


def _entry_points() -> Any:
    from importlib.metadata import entry_points

    return entry_points(group=ENTRY_POINTS)


def _load(name: str) -> Strategy:
    """The declaration of `name`: a built-in module's, or the one an entry point names."""
    if name in BUILT_IN:
        return importlib.import_module(f"{__name__}.{name}").STRATEGY
    [point] = [p for p in _entry_points() if p.name == name]
    declared = point.load()
    if not isinstance(declared, Strategy) or declared.name != name:
        raise TypeError(f"entry point {ENTRY_POINTS}:{name} names no Strategy called {name!r}")
    return declared


REGISTRY = Registry()


class _Names(Sequence[str]):
    """The registered strategies' names (those `keep` picks), read from the registry when used, so a
    module-level name sees a strategy declared by another package. Without `keep` no strategy is imported."""

    def __init__(self, keep: Callable[[Strategy], bool] | None = None) -> None:
        self._keep = keep

    def _names(self) -> tuple[str, ...]:
        names = REGISTRY.names()
        return names if self._keep is None else tuple(n for n in names if self._keep(REGISTRY.get(n)))

    def __getitem__(self, index: Any) -> Any:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, Sequence) and not isinstance(other, str) else False

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._names())


class _Options(Mapping[str, type[StrategyOptions]]):
    """Name -> options model of every registered strategy."""

    def __getitem__(self, name: str) -> type[StrategyOptions]:
        if name not in REGISTRY.names():
            raise KeyError(name)
        return REGISTRY.get(name).options

    def __iter__(self) -> Iterator[str]:
        return iter(STRATEGIES)

    def __len__(self) -> int:
        return len(STRATEGIES)


#: Every strategy's name, built-in first (a live view of the registry).
STRATEGIES: Sequence[str] = _Names()
#: Strategies that embed sentences (and so take an `embedder`).
EMBEDDING_STRATEGIES: Sequence[str] = _Names(lambda s: s.embeds)
#: Every strategy's options model.
OPTIONS: Mapping[str, type[StrategyOptions]] = _Options()


def strategy(name: str) -> Strategy:
    """The declaration of strategy `name` (UnknownStrategy, one line, for a name nothing declares)."""
    return REGISTRY.get(name)


def strategy_class(name: str) -> type[Chunker]:
    """The chunker of strategy `name`, its module imported now if it was not yet."""
    return strategy(name).chunker_class()


def make_options(name: str, values: Mapping[str, Any] | StrategyOptions | None = None) -> StrategyOptions:
    """Validated options for strategy `name`; OptionsError with one line naming strategy and option."""
    return validate(strategy(name).options, values)


def describe(name: str) -> dict[str, Any]:
    """What `streams strategies` shows of strategy `name`: its specification and every option."""
    declared = strategy(name)
    return {**describe_model(declared.options), "embeds": declared.embeds}


def get_chunker(
    name: str,
    options: StrategyOptions | Mapping[str, Any] | None = None,
    *,
    tokenizer: Tokenizer | None = None,
    embedder: Any = None,
    **overrides: Any,
) -> Chunker:
    """The one way to build a strategy: options validated (OptionsError, one line), tokenizer and embedder
    injected by the caller. The seed's defaults give today's ids; changed options give a new lineage."""
    declared = strategy(name)  # an unknown name is one line before its options are read
    if isinstance(options, StrategyOptions):
        chosen = make_options(name, {**options.model_dump(), **overrides} if overrides else options)
    elif options is None or isinstance(options, Mapping):
        chosen = make_options(name, {**dict(options or {}), **overrides})
    else:
        raise TypeError(f"options must be StrategyOptions or a mapping, not {type(options).__name__} (tokenizer=?)")
    cls = declared.chunker_class()
    # Every option, routing ones too: the chunker keeps the whole model (what it takes, its lineage).
    values: dict[str, Any] = chosen.model_dump()
    if declared.embeds:
        if embedder is None:
            raise OptionsError(f"{name} embeds sentences: pass embedder= (streams.embedding.stores.get_embedder())")
        values["embedder"] = embedder
    return cls(tokenizer or get_tokenizer(), **values)


__all__ = [
    "BUILT_IN",
    "EMBEDDING_STRATEGIES",
    "OPTIONS",
    "REGISTRY",
    "STRATEGIES",
    "ChunkDraft",
    "Chunker",
    "ChunkingError",
    "OptionsError",
    "Strategy",
    "UnknownStrategy",
    "describe",
    "get_chunker",
    "make_options",
    "strategy",
    "strategy_class",
]
