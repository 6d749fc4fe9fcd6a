"""What every strategy's options model is: `StrategyOptions` (frozen, no unknown keys, document types, a
lineage), how a model is validated in one line and described for `streams strategies`.

Each strategy declares its own model in its package (defaults = its specification's values, bounds and
cross-field checks); the registry (`streams.core.chunkers`) finds it by name. Settings (environment, a
config file), the CLI's `--set` and the bench all build these models, and `get_chunker` hands the validated
values to the chunker, so a bad value is refused in one clear line before anything runs.

Options are part of the lineage: `lineage_tag` fingerprints the options that differ from the defaults, and
that tag goes into `chunker_version` and every chunk id. Defaults give no tag, so their ids are unchanged.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

#: A piece of at most this many tokens is a fragment: it joins a neighbour whatever its kind.
FRAGMENT_TOKENS = 30

#: Every document type, in the order `DocType` declares them (streams.core.events; not imported here).
DOC_TYPES = ("letter", "transcript", "release", "slides", "press", "solicitation", "generic")

#: Options the pipeline reads around a chunker rather than the chunker itself (routing).
ROUTING_OPTIONS = frozenset({"doc_types", "include_keywords", "exclude_keywords"})


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
        require(not unknown, f"unknown document type {', '.join(unknown)} (types: {', '.join(DOC_TYPES)})")
        require(bool(names), "doc_types is empty: the strategy would take no document")
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
        require(
            getattr(self, low) <= getattr(self, high),
            f"{low} ({getattr(self, low)}) must not exceed {high} ({getattr(self, high)})",
        )

    def changed(self) -> dict[str, Any]:
        """The options whose value differs from the seed's default."""
        defaults = type(self)().model_dump()
        return {k: v for k, v in self.model_dump().items() if defaults[k] != v}


def require(condition: bool, message: str) -> None:
    """An options model's cross-field check: a ValueError that pydantic reports as one line."""
    if not condition:
        raise ValueError(message)


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


def describe_model(cls: type[StrategyOptions]) -> dict[str, Any]:
    """What `streams strategies` shows: the seed and every option with its default and allowed range."""
    strategy = cls.strategy
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


def _one_line(cls: type[StrategyOptions], exc: ValidationError) -> str:
    parts = []
    strategy = cls.strategy
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


def validate(cls: type[StrategyOptions], values: Mapping[str, Any] | StrategyOptions | None = None) -> StrategyOptions:
    """Validated options of model `cls`; raises OptionsError with one line naming strategy and option."""
    if isinstance(values, cls):
        return values
    if isinstance(values, StrategyOptions):
        raise OptionsError(f"{type(values).__name__} given for strategy {cls.strategy!r}")
    try:
        return cls(**dict(values or {}))
    except ValidationError as exc:
        raise OptionsError(_one_line(cls, exc)) from None


def parse_assignments(strategy: str, assignments: list[str]) -> dict[str, str]:
    """`--set key=value` pairs (values stay strings: the model coerces them as it does environment values)."""
    values: dict[str, str] = {}
    for item in assignments:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise OptionsError(f"{strategy}: --set wants option=value, got {item!r}")
        values[key.strip()] = value.strip()
    return values
