"""Tenants: whose a document is, and the identity that keeps one tenant's documents apart from another's.

With tenancy on (a metadata key names the tenant, `STREAMS_TENANT_KEY`), a document's identity is the
pair (tenant, doc_id). On every record after assembly its `doc_id` is the qualified `tenant#doc_id` and
its chunk ids open with `tenant#`, as Pinecone's multitenancy guide writes ids: two tenants publishing
the same document share no assembly state, version, chunk id, row or vector, and a chunk id alone says
which tenant's namespace (or table) it lives in. A tenant is a short name that every store takes as a
namespace or table suffix; it can never hold `#`, so the first `#` of a qualified id ends the tenant.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

TENANT_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
SEP = "#"


class TenantError(ValueError):
    """A page whose tenant is missing or not a tenant name; `code` is its dead-letter reason code."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code


def check_tenant(value: object) -> str:
    """`value` as a tenant name, or TenantError (`tenant_invalid`) saying why it is not one."""
    if not isinstance(value, str):
        raise TenantError("tenant_invalid", f"tenant must be a string, got {type(value).__name__}")
    if not TENANT_PATTERN.match(value):
        raise TenantError(
            "tenant_invalid",
            f"tenant {value[:70]!r} is not 1-63 letters, digits, '_', '.' or '-' (starting with a letter or digit)",
        )
    return value


def tenant_of(metadata: Mapping[str, Any], key: str) -> str:
    """The tenant a page's metadata names under `key`: TenantError when it names none, or not a name."""
    if key not in metadata or metadata[key] in (None, ""):
        raise TenantError("tenant_missing", f"tenancy is on and the page has no {key!r} in its metadata")
    return check_tenant(metadata[key])


def qualify(tenant: str, doc_id: str) -> str:
    """The document's id on every record after assembly: `tenant#doc_id` (the id itself without tenancy)."""
    return f"{tenant}{SEP}{doc_id}" if tenant else doc_id


def scoped(tenant: str, chunk_id: str) -> str:
    """A chunk id under its tenant: `tenant#strategy-digest` (the id itself without tenancy)."""
    return f"{tenant}{SEP}{chunk_id}" if tenant else chunk_id


def tenant_in(identifier: str) -> str:
    """The tenant a qualified doc id or scoped chunk id names; "" for an unqualified one. Chunk ids without
    a tenant never hold `#` (`strategy-hex`); doc ids may, so call this on doc ids only with tenancy on."""
    head, sep, _ = identifier.partition(SEP)
    return head if sep and TENANT_PATTERN.match(head) else ""


def by_tenant(ids: Iterable[str]) -> dict[str, list[str]]:
    """Chunk ids grouped by the tenant each names ("" for the untenanted), in first-seen order."""
    groups: dict[str, list[str]] = {}
    for identifier in ids:
        groups.setdefault(tenant_in(identifier), []).append(identifier)
    return groups
