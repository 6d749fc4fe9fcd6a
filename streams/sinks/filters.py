"""Search filters on what the vectors carry, one syntax for both stores: `key=value`, `key=a|b` (any of),
`key>=v` and `key<=v` (numbers and dates); a list-valued key matches when it holds the value. Reading as a
principal keeps the chunks whose `acl` holds it, and those of documents published without an `acl`."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from streams.core.metadata import ACL_KEY, MetadataError, vector_value

#: Fields every vector has that a filter may name, with their types.
FIXED_KINDS = {"doc_id": "str", "strategy": "str", "section_type": "str", "amendment_number": "int"}
_EXPRESSION = re.compile(r"^\s*([^<>=]+?)\s*(>=|<=|=)\s*(.*?)\s*$")


class FilterError(ValueError):
    """A filter that names a key the vectors do not carry, or a value of the wrong type: one line."""


@dataclass(frozen=True)
class Condition:
    key: str
    op: str  # "in" (any of the values; one value is equality), "gte", "lte", or "readable"
    values: tuple[Any, ...]
    kind: str  # the key's vector-metadata type


def parse(expressions: Sequence[str], keys: Mapping[str, str]) -> list[Condition]:
    """`["year>=2024", "tags=budget|pier"]` -> conditions, typed by the allow-list `keys`."""
    out: list[Condition] = []
    known = {**FIXED_KINDS, **keys}
    for expression in expressions:
        m = _EXPRESSION.match(expression)
        if not m or not m.group(3):
            raise FilterError(f"filter {expression!r}: write key=value, key=a|b, key>=value or key<=value")
        key, sign, raw = m.groups()
        if key not in known:
            listed = ", ".join(sorted(keys)) or "none"
            raise FilterError(
                f"filter {expression!r}: the vectors do not carry {key!r} (STREAMS_VECTOR_METADATA_KEYS: {listed})"
            )
        kind = known[key]
        if sign != "=" and kind not in ("int", "float", "date"):
            raise FilterError(f"filter {expression!r}: ranges take numbers and dates, and {key!r} is {kind}")
        try:
            element = "str" if kind == "list" else kind
            values = tuple(vector_value(key, element, v.strip()) for v in (raw.split("|") if sign == "=" else [raw]))
        except MetadataError as exc:
            raise FilterError(f"filter {expression!r}: {exc}") from None
        out.append(Condition(key, {"=": "in", ">=": "gte", "<=": "lte"}[sign], values, kind))
    return out


def readable_by(principal: str) -> Condition:
    """The chunks `principal` may read: its name in the document's `acl`, or no `acl` at all."""
    if not principal.strip():
        raise FilterError("--as needs a principal's name")
    return Condition(ACL_KEY, "readable", (principal,), "list")


def pinecone_filter(conditions: Sequence[Condition]) -> list[dict[str, Any]]:
    """Pinecone metadata filter clauses, to be joined with `$and` (`$in` on a list field: any element)."""
    clauses: list[dict[str, Any]] = []
    for c in conditions:
        if c.op == "in":
            clauses.append({c.key: {"$in": list(c.values)}})
        elif c.op == "readable":
            clauses.append({"$or": [{c.key: {"$in": list(c.values)}}, {c.key: {"$exists": False}}]})
        else:
            clauses.append({c.key: {f"${c.op}": c.values[0]}})
    return clauses


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def lance_where(conditions: Sequence[Condition]) -> list[str]:
    """LanceDB SQL predicates, to be joined with AND; every key quoted (keys may hold '-' or ':')."""
    out: list[str] = []
    for c in conditions:
        column = "`" + c.key.replace("`", "``") + "`"
        values = ", ".join(_literal(v) for v in c.values)
        if c.op == "readable":
            out.append(f"({column} IS NULL OR array_has_any({column}, [{values}]))")
        elif c.op == "in" and c.kind == "list":
            out.append(f"array_has_any({column}, [{values}])")
        elif c.op == "in":
            out.append(f"{column} IN ({values})")
        else:
            out.append(f"{column} {'>=' if c.op == 'gte' else '<='} {_literal(c.values[0])}")
    return out
