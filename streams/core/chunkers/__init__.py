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
    """Name -> `Strategy`: the built-in ones, then those other packages declare (entry points)."""

    def __init__(self) -> None:
        self._found: dict[str, Strategy] | None = None

    def strategies(self) -> dict[str, Strategy]:
        if self._found is None:
            found: dict[str, Strategy] = {}
            for name in BUILT_IN:
                found[name] = importlib.import_module(f"{__name__}.{name}").STRATEGY
            for declared in _declared_elsewhere():
                if declared.name in found:
                    raise TypeError(f"strategy {declared.name!r} is declared twice ({ENTRY_POINTS})")
                found[declared.name] = declared
            self._found = found
        return self._found

    def refresh(self) -> None:
        """Look again (a package installed since the first look)."""
        self._found = None

    def get(self, name: str) -> Strategy:
        found = self.strategies()
        if name not in found:
            raise UnknownStrategy(f"unknown strategy {name!r}; known: {', '.join(found)}")
        return found[name]


def _declared_elsewhere() -> list[Strategy]:
    """The strategies other installed packages declare, in name order (deterministic on any machine)."""
    from importlib.metadata import entry_points

    out = []
    for point in sorted(entry_points(group=ENTRY_POINTS), key=lambda p: p.name):
        declared = point.load()
        if not isinstance(declared, Strategy) or declared.name != point.name:
            raise TypeError(f"entry point {ENTRY_POINTS}:{point.name} names no Strategy called {point.name!r}")
        out.append(declared)
    return out


REGISTRY = Registry()


class _Names(Sequence[str]):
    """The registered strategies' names (those `keep` picks), read from the registry when used, so a
    module-level name sees a strategy declared by another package."""

    def __init__(self, keep: Callable[[Strategy], bool] = lambda s: True) -> None:
        self._keep = keep

    def _names(self) -> tuple[str, ...]:
        return tuple(name for name, s in REGISTRY.strategies().items() if self._keep(s))

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
        return REGISTRY.get(name).options if name in STRATEGIES else _missing(name)

    def __iter__(self) -> Iterator[str]:
        return iter(STRATEGIES)

    def __len__(self) -> int:
        return len(STRATEGIES)


def _missing(name: str) -> Any:
    raise KeyError(name)


#: Every strategy's name, built-in first (a live view of the registry).
STRATEGIES: Sequence[str] = _Names()
#: Strategies that embed sentences (and so take an `embedder`).
EMBEDDING_STRATEGIES: Sequence[str] = _Names(lambda s: s.embeds)
#: The strategies the demo runs.
DEMO_STRATEGIES: Sequence[str] = _Names(lambda s: s.in_demo)
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


def available_strategies() -> list[str]:
    """Every registered strategy (kept for callers that asked which modules were present)."""
    return list(STRATEGIES)


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
    "DEMO_STRATEGIES",
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
    "available_strategies",
    "describe",
    "get_chunker",
    "make_options",
    "strategy",
    "strategy_class",
]
