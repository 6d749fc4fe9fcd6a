"""The contract every chunking strategy implements: a pure function from a document to chunk drafts."""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

from streams.core.events import AssembledDocument, ChunkRecord
from streams.core.options import FRAGMENT_TOKENS, StrategyOptions, validate
from streams.core.tokenizers import Tokenizer

__all__ = [
    "FRAGMENT_TOKENS",
    "ChunkDraft",
    "Chunker",
    "ChunkingError",
    "EmbeddingUnavailable",
    "Limits",
    "SentenceEmbedder",
    "Strategy",
    "Violation",
]


class EmbeddingUnavailable(RuntimeError):
    """The configured model cannot be found or loaded (a deployment problem, not bad input)."""


class SentenceEmbedder(Protocol):
    """What a strategy that embeds is handed (`streams.embedding` makes one): vectors for texts, the same
    bytes for the same text whatever else is in the batch, and the model's name for the lineage."""

    model_name: str

    def encode(self, texts: Sequence[str]) -> Any: ...


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

    A strategy is declared once, by the `Strategy` its package exports (`streams.core.chunkers` finds it).

    `lineage` is '' for the seed's default options and a fingerprint of the changed ones otherwise
    (`take_options` sets it from the options, and appends it to `version`): it is part of every chunk id,
    so output made with other options is another lineage, never mistaken for this one.
    """

    name: ClassVar[str]
    version: str
    metadata_record: ClassVar[str]
    options_model: ClassVar[type[StrategyOptions]]  # its options, declared in its package
    lineage: str = ""
    options: Any = None  # the StrategyOptions it was built with (`take_options`)

    def take_options(self, options: Mapping[str, Any]) -> StrategyOptions:
        """Validate this strategy's options against their one declaration (`options_model`: defaults,
        ranges, cross-checks; a bad value is `OptionsError` naming it) and derive lineage and version."""
        self.options = validate(self.options_model, options)
        self.lineage = self.options.lineage_tag()
        self.version = self.options.versioned(type(self).version)
        return self.options

    def __init__(self, tokenizer: Tokenizer, **options: Any) -> None:
        """Options by the names of the strategy's model (`options_model`): its defaults, ranges and checks,
        declared once in its package."""
        self.tokenizer = tokenizer
        if hasattr(type(self), "options_model"):
            self.take_options(options)

    def warm_up(self) -> None:  # noqa: B027 - an optional hook: most strategies load nothing
        """Load now what the first document would wait for (a model). A worker calls it before joining
        its group: a missing model then stops the worker with one line instead of dead-lettering every
        document, and the first document's latency is its own."""

    def refuses(self, doc: AssembledDocument) -> str:
        """Why this strategy skips `doc` although it takes its type ("" when it takes it): a strategy's own
        gate beyond `doc_types`, such as section's file filter. Skipped, never dead-lettered."""
        return ""

    @abstractmethod
    def chunk(self, doc: AssembledDocument) -> list[ChunkDraft]:
        """Return drafts in reading order. Must be deterministic: no clock, no randomness, no I/O."""


@dataclass(frozen=True, slots=True)
class Limits:
    """The size rules a strategy's specification sets, which conformance checks: `max` is hard, `min` a
    target that a merge must honour."""

    max_tokens: int | None = None
    min_tokens: int | None = None
    max_words: int | None = None
    overlapping: bool = False  # windows overlap by design; everyone else tiles the text
    # Units a strategy never splits (a Q&A pair, a table, a slide) may pass the maximum; they and a speaker's
    # whole turn (never merged across a speaker change) may be short.
    whole_units: frozenset[str] = frozenset()
    verbatim: bool = True  # a chunk's text is the document's text at its range unless its draft says otherwise


@dataclass(frozen=True, slots=True)
class Violation:
    """One rule a strategy's output breaks: `position` is the chunk's, -1 for the document as a whole."""

    rule: str
    position: int
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "position": self.position, "detail": self.detail}


def no_limits(options: Mapping[str, Any]) -> Limits:
    return Limits()


@dataclass(frozen=True)
class Strategy:
    """A chunking strategy, declared once in its own package: its options model (defaults = its
    specification's values; the document types it takes are its `doc_types` option), its chunker, whether it
    embeds sentences, and its conformance rules. Settings, the CLI, the demo, the audit, the docs and
    conformance all read this declaration (`streams.core.chunkers`, the registry), so a new strategy is one
    package and nothing else."""

    name: str
    options: type[StrategyOptions]
    # "module:Class", imported when the strategy is first built: a worker imports only what it runs (docling).
    chunker: str
    embeds: bool = False  # takes an `embedder` (sentence embeddings)
    # Through a shared embedding store two strategies reading the same document embed it from opposite ends.
    embed_order: Literal["ascending", "descending"] = "ascending"
    limits: Callable[[Mapping[str, Any]], Limits] = no_limits  # its size rules, from its chunker options
    # Its own rules beyond the sizes, on one document's records (counted with their tokenizer).
    rules: Callable[[Sequence[ChunkRecord], Tokenizer], list[Violation]] | None = None

    def __post_init__(self) -> None:
        if self.options.strategy != self.name or ":" not in self.chunker:
            raise TypeError(
                f"strategy {self.name!r}: options named {self.options.strategy!r}, chunker {self.chunker!r}"
            )

    def doc_types(self) -> tuple[str, ...]:
        """The document types it takes by default (its options' `doc_types`)."""
        return tuple(self.options().doc_types)

    def chunker_class(self) -> type[Chunker]:
        """Its chunker, imported now if it was not yet."""
        module, _, attribute = self.chunker.partition(":")
        cls = getattr(importlib.import_module(module), attribute)
        if not (isinstance(cls, type) and issubclass(cls, Chunker)) or cls.name != self.name:
            raise TypeError(f"strategy {self.name!r}: {self.chunker} is no Chunker named {self.name!r}")
        if cls.options_model is not self.options:
            raise TypeError(f"strategy {self.name!r}: {self.chunker} takes other options than its declaration")
        return cls


def token_limits(options: Mapping[str, Any]) -> Limits:
    """The common size rules: at most `max_tokens`, at least `min_tokens` where a merge can reach it."""
    return Limits(max_tokens=options["max_tokens"], min_tokens=options["min_tokens"])
