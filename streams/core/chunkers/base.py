"""The contract every chunking strategy implements: a pure function from a document to chunk drafts."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from streams.core.events import AssembledDocument
from streams.core.options import FRAGMENT_TOKENS, OPTIONS, StrategyOptions, make_options
from streams.core.tokenizers import Tokenizer

__all__ = ["FRAGMENT_TOKENS", "ChunkDraft", "Chunker", "ChunkingError", "registered"]


class ChunkingError(ValueError):
    """The document cannot be chunked by this strategy; the agent dead-letters it with this reason."""

    def __init__(self, reason: str, code: str = "chunking_failed") -> None:
        super().__init__(reason)
        self.code = code


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """What a chunker returns; the record builder adds ids, pages, tokens and checksum.

    `char_start`/`char_end` index the document stream (end exclusive). `text` is normally
    `doc.text[char_start:char_end]`; a strategy that reshapes text (a placeholder for a table, a
    speaker preamble, a synopsis) says so in `text_transform`, and the range still covers the source.
    `identity` adds strategy-specific parts to the chunk id (speaker, qa id, table id, slide number).
    `tokens`, when set, is the tokenizer's count of `text`: a chunker that has counted it already
    saves the record builder an encode of every chunk.
    """

    text: str
    char_start: int
    char_end: int
    section_path: tuple[str, ...] = ()
    content_type: str = "text"
    metadata: dict[str, Any] = field(default_factory=dict)
    identity: tuple[str, ...] = ()
    text_transform: str | None = None
    tokens: int | None = None


class Chunker(ABC):
    """A strategy. Subclasses set `name`, `version` and the Avro record name of their metadata.

    A subclass that sets `name` registers itself as that strategy (`registered`), so a strategy is declared
    where its class is; its module is `streams.core.chunkers.<name>`, imported only when asked for.

    `lineage` is '' for the seed's default options and a fingerprint of the changed ones otherwise
    (`take_options` sets it from the options, and appends it to `version`): it is part of every chunk id,
    so output made with other options is another lineage, never mistaken for this one.
    """

    name: ClassVar[str]
    version: str
    metadata_record: ClassVar[str]
    lineage: str = ""
    options: Any = None  # the StrategyOptions it was built with (`take_options`)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("name")
        if name is None:  # a shared base (the sentence-embedding strategies'), not a strategy
            return
        if name not in OPTIONS:
            raise TypeError(f"{cls.__qualname__}: strategy {name!r} declares no options in streams.core.options")
        taken = _REGISTERED.get(name)
        if taken is not None and (taken.__module__, taken.__qualname__) != (cls.__module__, cls.__qualname__):
            raise TypeError(f"{cls.__qualname__}: strategy {name!r} is already {taken.__module__}.{taken.__qualname__}")
        _REGISTERED[name] = cls

    def take_options(self, options: Mapping[str, Any]) -> StrategyOptions:
        """Validate this strategy's options against their one declaration (streams.core.options: defaults,
        ranges, cross-checks; a bad value is `OptionsError` naming it) and derive lineage and version."""
        self.options = make_options(self.name, dict(options))
        self.lineage = self.options.lineage_tag()
        self.version = self.options.versioned(type(self).version)
        return self.options

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer

    def warm_up(self) -> None:  # noqa: B027 - an optional hook: most strategies load nothing
        """Load now what the first document would wait for (a model). A worker calls it before joining
        its group: a missing model then stops the worker with one line instead of dead-lettering every
        document, and the first document's latency is its own."""

    @abstractmethod
    def chunk(self, doc: AssembledDocument) -> list[ChunkDraft]:
        """Return drafts in reading order. Must be deterministic: no clock, no randomness, no I/O."""


#: Strategy name -> its class, filled as strategy modules are imported (`Chunker.__init_subclass__`).
_REGISTERED: dict[str, type[Chunker]] = {}


def registered(name: str) -> type[Chunker] | None:
    """The class registered as `name`, if its module has been imported."""
    return _REGISTERED.get(name)
