"""A document's own metadata: the contract its publisher's keys and values must meet, and how pages merge.

Values keep their type so stores can filter on them: strings (ISO dates among them), whole numbers
(64-bit), finite floats, booleans, lists of strings, and null. Anything else a JSON publisher sends (an
object, a list holding non-strings) is kept as plain data: its canonical JSON text, a string.

Keys are refused where a store would read them as something other than a name: empty, over
`MAX_KEY_CHARS`, starting with `$` (a MongoDB operator), holding `.` (a MongoDB path) or a control
character. A document's metadata is at most `MAX_METADATA_BYTES` as compact JSON: it is repeated on
every chunk record and row, and a 1 MB value would make every record of the document too large to send.
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

MetaValue = str | int | float | bool | list[str] | None

#: The metadata keys a document's routing is recorded under (assembled document and page events): here, with
#: the other keys, so routing (core/doctype.py) reads metadata and metadata reads nothing of routing.
SOURCE_KEY = "doc_type_source"
CONFIDENCE_KEY = "doc_type_confidence"
EVIDENCE_KEY = "doc_type_evidence"

MAX_KEY_CHARS = 128
MAX_METADATA_BYTES = 64 * 1024
#: The principals allowed to read a document: a list of strings, never a lone string or anything else.
ACL_KEY = "acl"
#: Keys the assembler writes (how the type was decided): on a chunk record they are its `routing` field.
ROUTING_KEYS = frozenset({SOURCE_KEY, CONFIDENCE_KEY, EVIDENCE_KEY})
_INT64 = 2**63


class MetadataError(ValueError):
    """Metadata no store may take as it is; the message names the key."""


def check_key(key: object) -> str:
    """`key` as a metadata key, or MetadataError saying why it is not one."""
    if not isinstance(key, str) or not key:
        raise MetadataError(f"key {key!r} must be a non-empty string")
    if len(key) > MAX_KEY_CHARS:
        raise MetadataError(f"key {key[:40]!r}... is {len(key)} characters, over {MAX_KEY_CHARS}")
    if key.startswith("$"):
        raise MetadataError(f"key {key!r} starts with '$', which MongoDB reads as an operator")
    if "." in key:
        raise MetadataError(f"key {key!r} holds '.', which MongoDB reads as a path")
    if any(unicodedata.category(ch).startswith("C") for ch in key):
        raise MetadataError(f"key {key!r} holds a control or unassigned character")
    return key


def _value(key: str, value: Any) -> MetaValue:
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, int):
        if not -_INT64 <= value < _INT64:
            raise MetadataError(f"{key!r}: {value} does not fit in 64 bits")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise MetadataError(f"{key!r}: {value} is not a finite number")
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    try:  # plain data: an object or a mixed list, kept as its JSON text
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise MetadataError(f"{key!r}: {type(value).__name__} cannot be kept as JSON ({exc})") from exc


def size_of(metadata: Mapping[str, MetaValue]) -> int:
    """Bytes of `metadata` as compact JSON: the measure of every metadata limit."""
    return len(json.dumps(metadata, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))


def check_size(metadata: Mapping[str, MetaValue], limit: int = MAX_METADATA_BYTES, what: str = "metadata") -> None:
    """MetadataError naming the largest key when `metadata` is over `limit` bytes."""
    size = size_of(metadata)
    if size > limit:
        largest = max(metadata, key=lambda k: size_of({k: metadata[k]}))
        most = size_of({largest: metadata[largest]})
        raise MetadataError(f"{what} is {size} bytes as JSON, over {limit} (largest: {largest!r}, {most})")


def clean(metadata: Any) -> dict[str, MetaValue]:
    """A publisher's metadata as the contract keeps it, or MetadataError naming the first bad key."""
    if not isinstance(metadata, Mapping):
        raise MetadataError(f"metadata must be an object, got {type(metadata).__name__}")
    cleaned = {check_key(k): _value(k, v) for k, v in metadata.items()}
    acl = cleaned.get(ACL_KEY)
    if ACL_KEY in cleaned and not (isinstance(metadata[ACL_KEY], list) and isinstance(acl, list)):
        raise MetadataError(f"{ACL_KEY!r} must be a list of principals (strings), got {metadata[ACL_KEY]!r:.80}")
    check_size(cleaned)
    return cleaned


def merged(pages: Iterable[Mapping[str, MetaValue]]) -> dict[str, MetaValue]:
    """The document's metadata from its pages in page order: a key any page gives is kept, and where pages
    disagree the later page wins (a publisher that corrects a title on its last page is heard)."""
    out: dict[str, MetaValue] = {}
    for page in pages:
        out.update(page)
    return out


def own(metadata: Mapping[str, MetaValue]) -> dict[str, MetaValue]:
    """The publisher's keys alone, sorted: what a chunk record's `doc_metadata` carries."""
    return {k: metadata[k] for k in sorted(metadata) if k not in ROUTING_KEYS}


def as_text(value: MetaValue) -> str:
    """A value as the strategies read metadata: a string as it is, anything else as JSON text (what every
    value was before metadata kept its type, so their output is unchanged)."""
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value, ensure_ascii=False)


# --- what a vector carries: an allow-list of keys, each with the type the stores filter it as ----------

#: A vector-metadata type -> how a value is kept. `date` is Unix seconds (UTC): Pinecone ranges only numbers.
VECTOR_TYPES = ("str", "int", "float", "bool", "date", "list")
#: Pinecone's limit on one vector's metadata (docs.pinecone.io, "Metadata": 40 KB per record).
PINECONE_METADATA_BYTES = 40 * 1024


#: The fields every vector has (a vector row's own and the stores' names for its id and values): a document's
#: metadata key may not take one of these names.
VECTOR_FIELDS = (
    "chunk_id",
    "doc_id",
    "strategy",
    "section_type",
    "amendment_number",
    "is_latest_version",
    "is_critical",
    "requirement_flag",
    "content_hash",
    "embedding_model",
    "vector_index",
    "vector",
    "values",
    "id",
)


def vector_keys(spec: str, reserved: Iterable[str] = ()) -> dict[str, str]:
    """`"source,year:int,tags:list"` -> {key: type}, with `acl:list` always among them; MetadataError in one
    line for a bad entry."""
    keys: dict[str, str] = {}
    taken = set(reserved)
    for entry in (e.strip() for e in spec.split(",")):
        if not entry:
            continue
        key, _, kind = entry.partition(":")
        key, kind = check_key(key.strip()), (kind.strip() or "str")
        if kind not in VECTOR_TYPES:
            raise MetadataError(f"{entry!r}: the type must be one of {', '.join(VECTOR_TYPES)}")
        if key in taken:
            raise MetadataError(f"{key!r} is a field every vector already has; choose another key")
        if key in keys:
            raise MetadataError(f"{key!r} is listed twice")
        keys[key] = kind
    if keys.setdefault(ACL_KEY, "list") != "list":  # every vector carries who may read it, for `--as`
        raise MetadataError(f"{ACL_KEY!r} is the principals who may read a document: its type is list")
    return keys


def _seconds(value: str) -> int:
    from datetime import UTC, datetime

    when = datetime.fromisoformat(value)
    return int((when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp())


def vector_value(key: str, kind: str, value: MetaValue) -> MetaValue:
    """One allow-listed value as a vector keeps it, or MetadataError saying what was wrong with it."""
    try:
        if kind == "str":
            return as_text(value)
        if kind == "bool":
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in ("true", "false"):
                return value.lower() == "true"
        elif kind in ("int", "float") and not isinstance(value, bool):
            number = float(value) if isinstance(value, (int, float, str)) else math.nan
            if math.isfinite(number) and (kind == "float" or number.is_integer()):
                return int(number) if kind == "int" else number
        elif kind == "date" and isinstance(value, str):
            return _seconds(value)
        elif kind == "list":
            if isinstance(value, list):
                return value
            if isinstance(value, str):
                return [value]
    except ValueError:
        pass
    raise MetadataError(f"vector metadata {key!r} must be {kind}, got {value!r:.60}")


def vector_metadata(metadata: Mapping[str, MetaValue], keys: Mapping[str, str]) -> dict[str, MetaValue]:
    """The allow-listed keys of a document's metadata as its vectors carry them; a key the document lacks
    (or gives as null) is left out, as Pinecone has no null."""
    return {k: vector_value(k, kind, metadata[k]) for k, kind in keys.items() if metadata.get(k) is not None}
