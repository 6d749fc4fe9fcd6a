"""Every strategy's options: one pydantic model each, defaults = the seed's values, bounds and cross-field checks.

This is the one place a strategy's knobs are declared. Settings (environment, a config file), the CLI's
`--set` and the bench all build these models, and `get_chunker` hands the validated values to the chunker,
so a bad value is refused in one clear line before anything runs. Light on purpose: no strategy module is
imported here (they pull in docling and torch).

Options are part of the lineage: `lineage_tag` fingerprints the options that differ from the defaults, and
that tag goes into `chunker_version` and every chunk id. Defaults give no tag, so their ids are unchanged.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar, Literal

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

#: A piece of at most this many tokens is a fragment: it joins a neighbour whatever its kind.
FRAGMENT_TOKENS = 30

#: The 256 word pieces all-MiniLM-L6-v2 reads; text past it is not in its vector.
EMBEDDING_WORD_PIECES = 256

BREAKPOINT_DEFAULTS: dict[str, float] = {
    # LangChain SemanticChunker conventions, all on cosine distance (1 - similarity) of neighbours.
    "percentile": 75.0,  # break above the 75th percentile of distance = below the 25th of similarity
    "standard_deviation": 3.0,  # mean + 3 std
    "interquartile": 1.5,  # mean + 1.5 IQR
    "gradient": 95.0,  # 95th percentile of the distance gradient
}


#: Every document type, in the order `DocType` declares them (streams.core.events; not imported here).
DOC_TYPES = ("letter", "transcript", "release", "slides", "press", "solicitation", "generic")

#: Options the pipeline reads around a chunker rather than the chunker itself (routing).
ROUTING_OPTIONS = frozenset({"doc_types", "include_keywords", "exclude_keywords"})

#: Seed 002's file filter keywords, and the acronyms of what it includes: statement of work, performance
#: work statement, statement of objectives, quality assurance surveillance plan, RFx, and amendments.
FILTER_INCLUDE = (
    "scope",
    "requirement",
    "specification",
    "solicitation",
    "terms",
    "condition",
    "work",
    "technical",
    "statement",
    "criteria",
    "evaluation",
    "proposal",
    "amendment",
    "sow",
    "pws",
    "soo",
    "qasp",
    "rfp",
    "rfq",
    "rfi",
)
FILTER_EXCLUDE = ("questionnaire", "form", "template", "blank", "example", "sample")


class OptionsError(ValueError):
    """A strategy option out of range, unknown or inconsistent: one line naming strategy and option."""


class StrategyOptions(BaseModel):
    """Base of every strategy's options: frozen, no unknown keys, strings from env/CLI coerced."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)
    strategy: ClassVar[str]
    seed: ClassVar[str]
    summary: ClassVar[str]

    doc_types: tuple[str, ...] = Field(
        DOC_TYPES,
        description="document types this strategy takes (comma-separated); others are skipped as not applicable",
    )

    @field_validator("doc_types", mode="before")
    @classmethod
    def _types(cls, value: Any) -> Any:
        """`letter,generic` from the environment or `--set`; each a known type; stored in `DOC_TYPES` order
        so the same set is the same option (and the same lineage) however it was written."""
        if isinstance(value, str):
            value = [part for part in value.replace(" ", ",").split(",") if part]
        if not isinstance(value, list | tuple | set | frozenset):
            return value
        names = [str(v).strip().lower() for v in value]
        unknown = [n for n in names if n not in DOC_TYPES]
        _check(not unknown, f"unknown document type {', '.join(unknown)} (types: {', '.join(DOC_TYPES)})")
        _check(bool(names), "doc_types is empty: the strategy would take no document")
        return tuple(t for t in DOC_TYPES if t in names)

    def takes(self, doc_type: str) -> bool:
        """Whether this strategy chunks a document of `doc_type` (else it is skipped, never dead-lettered)."""
        return str(doc_type) in self.doc_types

    def chunker_options(self) -> dict[str, Any]:
        """The values a chunker reads: every option but the routing ones, which the pipeline reads around it."""
        return self.model_dump(exclude=set(ROUTING_OPTIONS))

    def lineage_tag(self) -> str:
        """'' for the defaults; else a fingerprint of the options that differ, stable across runs."""
        changed = self.changed()
        if not changed:
            return ""
        payload = json.dumps(changed, sort_keys=True, separators=(",", ":"))
        return "o" + hashlib.sha256(payload.encode()).hexdigest()[:10]

    def versioned(self, version: str) -> str:
        """A chunker's recorded version: `version` plus the lineage tag when options differ from the seed's,
        so output made with other options never passes for the seed's own."""
        tag = self.lineage_tag()
        return f"{version}+{tag}" if tag else version

    def _not_above(self, low: str, high: str) -> None:
        """Cross-field check: option `low` may not exceed option `high`; the message names both values."""
        _check(
            getattr(self, low) <= getattr(self, high),
            f"{low} ({getattr(self, low)}) must not exceed {high} ({getattr(self, high)})",
        )

    def changed(self) -> dict[str, Any]:
        """The options whose value differs from the seed's default."""
        defaults = type(self)().model_dump()
        return {k: v for k, v in self.model_dump().items() if defaults[k] != v}


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


class WindowOptions(StrategyOptions):
    strategy: ClassVar[str] = "window"
    seed: ClassVar[str] = "003"
    summary: ClassVar[str] = "fixed word windows with overlap"

    chunk_size_words: int = Field(250, ge=1, le=100_000, description="words per chunk")
    chunk_overlap_words: int = Field(50, ge=0, le=100_000, description="words shared with the previous chunk")

    @model_validator(mode="after")
    def _overlap_below_size(self) -> WindowOptions:
        _check(
            self.chunk_overlap_words < self.chunk_size_words,
            f"chunk_overlap_words ({self.chunk_overlap_words}) must be below "
            f"chunk_size_words ({self.chunk_size_words})",
        )
        return self


class LetterOptions(StrategyOptions):
    strategy: ClassVar[str] = "letter"
    seed: ClassVar[str] = "000"
    summary: ClassVar[str] = "tier-1 sections and tier-2 tables of shareholder letters"

    doc_types: tuple[str, ...] = Field(("letter",), description="seed 000's scope: shareholder letters")

    section_min_tokens: int = Field(250, ge=1, le=100_000, description="tier-1 section chunks merge below this")
    section_target_tokens: int = Field(500, ge=1, le=100_000, description="where an over-long section is cut")
    section_max_tokens: int = Field(800, ge=8, le=100_000, description="tier-1 section chunks split above this")
    min_tokens: int = Field(150, ge=1, le=100_000, description="the smallest chunk (and the prose a letter needs)")

    @model_validator(mode="after")
    def _ordered(self) -> LetterOptions:
        _check(
            self.min_tokens <= self.section_min_tokens < self.section_target_tokens < self.section_max_tokens,
            "need min_tokens <= section_min_tokens < section_target_tokens < section_max_tokens, got "
            f"{self.min_tokens}, {self.section_min_tokens}, {self.section_target_tokens}, {self.section_max_tokens}",
        )
        return self


class FinanceOptions(StrategyOptions):
    strategy: ClassVar[str] = "finance"
    seed: ClassVar[str] = "001"
    summary: ClassVar[str] = "speaker turns, Q&A pairs, statements and their tables"

    doc_types: tuple[str, ...] = Field(
        ("transcript", "release", "slides", "press"),
        description="seed 001's scope: earnings transcripts, releases, slide decks and press releases",
    )

    min_tokens: int = Field(500, ge=1, le=100_000, description="transcript and deck chunks merge below this")
    max_tokens: int = Field(1200, ge=1, le=100_000, description="transcript and deck chunks split above this")
    press_min_tokens: int = Field(400, ge=1, le=100_000, description="press-release chunks merge below this")
    press_max_tokens: int = Field(800, ge=1, le=100_000, description="press-release chunks split above this")
    synopsis_rows: int = Field(4, ge=0, le=1000, description="table rows quoted in a table's synopsis")

    @model_validator(mode="after")
    def _ordered(self) -> FinanceOptions:
        self._not_above("min_tokens", "max_tokens")
        self._not_above("press_min_tokens", "press_max_tokens")
        return self


class SectionOptions(StrategyOptions):
    strategy: ClassVar[str] = "section"
    seed: ClassVar[str] = "002"
    summary: ClassVar[str] = "document sections of RFPs, with requirement and table flags"

    doc_types: tuple[str, ...] = Field(("solicitation",), description="seed 002's scope: solicitations (RFPs)")
    include_keywords: tuple[str, ...] = Field(
        FILTER_INCLUDE,
        description="seed 002's file filter: a file whose name or title lines have one of these words is chunked",
    )
    exclude_keywords: tuple[str, ...] = Field(
        FILTER_EXCLUDE,
        description="seed 002's file filter: a file whose name or title lines have one of these words is skipped "
        "(excludes win)",
    )

    min_tokens: int = Field(400, ge=1, le=100_000, description="sections merge below this")
    max_tokens: int = Field(600, ge=1, le=100_000, description="sections split above this")
    fragment_tokens: int = Field(
        FRAGMENT_TOKENS, ge=0, le=100_000, description="a piece this small joins a neighbour whatever its kind"
    )

    @field_validator("include_keywords", "exclude_keywords", mode="before")
    @classmethod
    def _words(cls, value: Any) -> Any:
        """`rfp,sow` from the environment or `--set`: lowercase words, in the order given."""
        if isinstance(value, str):
            value = [part for part in value.replace(" ", ",").split(",") if part]
        if isinstance(value, list | tuple):
            value = tuple(str(v).strip().lower() for v in value if str(v).strip())
        return value

    @model_validator(mode="after")
    def _ordered(self) -> SectionOptions:
        self._not_above("min_tokens", "max_tokens")
        self._not_above("fragment_tokens", "min_tokens")
        return self


class HybridOptions(StrategyOptions):
    strategy: ClassVar[str] = "hybrid"
    seed: ClassVar[str] = "003"
    summary: ClassVar[str] = "Docling's HybridChunker over document structure"

    max_tokens: int = Field(512, ge=16, le=100_000, description="the most tokens a chunk may hold")
    min_tokens: int | None = Field(
        None, ge=0, le=100_000, description="undersized peers merge below this (default: min(64, max_tokens / 4))"
    )
    merge_peers: bool = Field(True, description="merge undersized neighbours under one heading")

    @model_validator(mode="after")
    def _ordered(self) -> HybridOptions:
        if self.min_tokens is None:  # resolved, so an explicit default is the default (same lineage)
            object.__setattr__(self, "min_tokens", min(64, self.max_tokens // 4))
        self._not_above("min_tokens", "max_tokens")
        return self


class SemanticOptions(StrategyOptions):
    strategy: ClassVar[str] = "semantic"
    seed: ClassVar[str] = "004"
    summary: ClassVar[str] = "breaks where neighbouring sentences' embeddings drift apart"

    breakpoint_type: Literal["percentile", "standard_deviation", "interquartile", "gradient"] = Field(
        "percentile", description="how the break threshold is derived from neighbour distances"
    )
    threshold_amount: float | None = Field(
        None,
        ge=0,
        le=100,
        description="percentile (0-100) or multiplier for the breakpoint type (default: the type's own)",
    )
    buffer_size: int = Field(1, ge=0, le=32, description="sentences either side averaged into each sentence")
    paragraph_weight: float = Field(
        0.15, ge=0.0, le=1.0, description="added to the distance where a blank line separates two sentences"
    )
    local_window: int = Field(
        10,
        ge=0,
        le=1000,
        description="in a document without blank lines, each distance less the mean of this many distances "
        "either side before the threshold (0: never)",
    )
    min_tokens: int = Field(100, ge=0, le=100_000, description="smaller groups join a neighbour")
    max_tokens: int = Field(400, ge=8, le=100_000, description="larger groups are split")
    size_weight: float = Field(
        2.0,
        ge=0.0,
        le=100.0,
        description="in a document without blank lines, the cuts are chosen again to weigh each break's "
        "distance against how far each chunk's tokens stray from the document's mean chunk (0: never)",
    )

    @model_validator(mode="after")
    def _resolved(self) -> SemanticOptions:
        if self.threshold_amount is None:
            object.__setattr__(self, "threshold_amount", BREAKPOINT_DEFAULTS[self.breakpoint_type])
        self._not_above("min_tokens", "max_tokens")
        return self


class ClusterOptions(StrategyOptions):
    strategy: ClassVar[str] = "cluster"
    seed: ClassVar[str] = "004"
    summary: ClassVar[str] = "adjacent sentences cluster while their mean similarity holds"

    threshold: float = Field(0.75, ge=-1.0, le=1.0, description="cosine similarity a sentence needs to join")
    min_tokens: int = Field(40, ge=0, le=100_000, description="smaller clusters join a neighbour")
    max_tokens: int = Field(250, ge=8, le=100_000, description="larger clusters are split")
    merge_threshold: float | None = Field(
        0.7,
        ge=-1.0,
        le=1.0,
        description="neighbouring clusters whose centroids are this alike join while they fit (none: never)",
    )
    target_tokens: int | None = Field(
        100,
        ge=8,
        le=100_000,
        description="the chunk size cluster aims at whatever the text: cut above 1.5x, merge alike up to 1.25x, "
        "join below 0.5x (none: merge alike up to max_tokens); by default within min_tokens..max_tokens",
    )
    segmentation: Literal["threshold", "optimal"] = Field(
        "threshold",
        description="threshold: grow a cluster while the next sentence's mean similarity holds; optimal: the "
        "split into runs of at most max_tokens that maximises similarity inside runs (threshold unused)",
    )

    @field_validator("merge_threshold", "target_tokens", mode="before")
    @classmethod
    def _off(cls, value: Any) -> Any:
        """`none` from the environment or a config file turns the second stage (or the target) off."""
        return None if isinstance(value, str) and value.strip().lower() in {"none", "null", "off"} else value

    @model_validator(mode="after")
    def _ordered(self) -> ClusterOptions:
        self._not_above("min_tokens", "max_tokens")
        if self.target_tokens is not None and "target_tokens" not in self.model_fields_set:
            # The default target within the bounds set (max_tokens 60 means chunks of at most 60).
            clamped = min(max(self.target_tokens, self.min_tokens), self.max_tokens)
            object.__setattr__(self, "target_tokens", clamped)
        if self.target_tokens is not None:
            self._not_above("min_tokens", "target_tokens")
            self._not_above("target_tokens", "max_tokens")
        return self


OPTIONS: dict[str, type[StrategyOptions]] = {
    cls.strategy: cls
    for cls in (
        WindowOptions,
        LetterOptions,
        FinanceOptions,
        SectionOptions,
        HybridOptions,
        SemanticOptions,
        ClusterOptions,
    )
}


def _range(field: Any, name: str = "") -> str:
    """'8..100000', '>= 0', 'one of a, b', 'true/false': what a user may set."""
    annotation = field.annotation
    if annotation is bool:
        return "true or false"
    if getattr(annotation, "__origin__", None) is tuple:
        return "any of " + ", ".join(DOC_TYPES) if name == "doc_types" else "words, comma-separated"
    args = getattr(annotation, "__args__", ())
    if getattr(annotation, "__origin__", None) is Literal:
        return "one of " + ", ".join(map(str, args))
    low = high = None
    for meta in field.metadata:
        if isinstance(meta, Ge | Gt):
            low = f"{meta.ge}" if isinstance(meta, Ge) else f">{meta.gt}"
        if isinstance(meta, Le | Lt):
            high = f"{meta.le}" if isinstance(meta, Le) else f"<{meta.lt}"
    return f"{low if low is not None else ''}..{high if high is not None else ''}"


def describe(strategy: str) -> dict[str, Any]:
    """What `streams strategies` shows: the seed and every option with its default and allowed range."""
    cls = OPTIONS[strategy]
    defaults = cls().model_dump()
    return {
        "strategy": strategy,
        "seed": cls.seed,
        "summary": cls.summary,
        "options": {
            name: {
                "default": defaults[name],
                "range": _range(field, name),
                "type": getattr(field.annotation, "__name__", str(field.annotation)),
                "description": field.description or "",
            }
            for name, field in cls.model_fields.items()
        },
    }


def _one_line(strategy: str, exc: ValidationError) -> str:
    parts = []
    cls = OPTIONS[strategy]
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            known = ", ".join(cls.model_fields)
            parts.append(f"{strategy}: unknown option {where!r} (options: {known})")
            continue
        if where in cls.model_fields:
            allowed = _range(cls.model_fields[where], where)
            parts.append(f"{strategy}.{where}={error.get('input')!r}: {message} (allowed: {allowed})")
        else:
            parts.append(f"{strategy}: {message}")
    return "; ".join(parts)


def make_options(strategy: str, values: dict[str, Any] | StrategyOptions | None = None) -> StrategyOptions:
    """Validated options for `strategy`; raises OptionsError with one line naming strategy and option."""
    if strategy not in OPTIONS:
        raise OptionsError(f"unknown strategy {strategy!r}; known: {', '.join(OPTIONS)}")
    cls = OPTIONS[strategy]
    if isinstance(values, cls):
        return values
    if isinstance(values, StrategyOptions):
        raise OptionsError(f"{type(values).__name__} given for strategy {strategy!r}")
    try:
        return cls(**(values or {}))
    except ValidationError as exc:
        raise OptionsError(_one_line(strategy, exc)) from None


def parse_assignments(strategy: str, assignments: list[str]) -> dict[str, str]:
    """`--set key=value` pairs (values stay strings: the model coerces them as it does environment values)."""
    values: dict[str, str] = {}
    for item in assignments:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise OptionsError(f"{strategy}: --set wants option=value, got {item!r}")
        values[key.strip()] = value.strip()
    return values
