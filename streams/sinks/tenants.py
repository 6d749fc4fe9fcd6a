"""One vector target per tenant behind the one-target contract: a chunk id names its tenant.

With tenancy on, each tenant's vectors live apart: its own Pinecone namespace or LanceDB table,
`<base>--<tenant>`. The vector sink writes through `TenantTargets`, which sends each row, flip and
delete to its tenant's target by the `tenant#` its chunk id opens with (streams.core.tenancy); a query
is always made on one tenant's target (streams.sinks.factory.vector_target with a tenant).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from streams.core.tenancy import by_tenant, tenant_in
from streams.settings import ConfigError
from streams.sinks.base import Match, VectorRow, VectorTarget
from streams.sinks.filters import Condition

#: Between a store's base name (namespace or table) and the tenant.
TENANT_SUFFIX = "--"


def tenant_name(base: str, tenant: str) -> str:
    """The namespace or table of one tenant's vectors; the base itself for the untenanted."""
    return f"{base}{TENANT_SUFFIX}{tenant}" if tenant else base


def tenants_in(base: str, names: Sequence[str]) -> list[str]:
    """The tenants whose namespaces or tables are among `names`."""
    prefix = base + TENANT_SUFFIX
    return sorted(n[len(prefix) :] for n in names if n.startswith(prefix) and len(n) > len(prefix))


class TenantTargets:
    """Writes and reads by chunk id, each on its tenant's own target; made on first use, then kept."""

    def __init__(self, make: Callable[[str], VectorTarget], known: Callable[[], list[str]]) -> None:
        """`make(tenant)` opens one tenant's target; `known()` lists the tenants that have one."""
        self._make = make
        self._known = known
        self._targets: dict[str, VectorTarget] = {}
        self.name = make("").name

    def target(self, tenant: str) -> VectorTarget:
        if tenant not in self._targets:
            self._targets[tenant] = self._make(tenant)
        return self._targets[tenant]

    def upsert(self, rows: Sequence[VectorRow]) -> None:
        groups: dict[str, list[VectorRow]] = {}
        for row in rows:
            groups.setdefault(tenant_in(row.chunk_id), []).append(row)
        for tenant, group in groups.items():
            self.target(tenant).upsert(group)

    def set_latest(self, ids: Sequence[str], is_latest: bool) -> None:
        for tenant, group in by_tenant(ids).items():
            self.target(tenant).set_latest(group, is_latest)

    def delete(self, ids: Sequence[str]) -> None:
        for tenant, group in by_tenant(ids).items():
            self.target(tenant).delete(group)

    def flags(self, ids: Sequence[str]) -> dict[str, bool]:
        found: dict[str, bool] = {}
        for tenant, group in by_tenant(ids).items():
            found.update(self.target(tenant).flags(group))
        return found

    def count(self, latest_only: bool = False) -> int:
        """Every tenant's vectors: a deployment-wide figure, for the operator (never shown to a tenant)."""
        return sum(self.target(t).count(latest_only) for t in self._known())

    def query(
        self, vector: Sequence[float], k: int, strategy: str | None = None, where: Sequence[Condition] = ()
    ) -> list[Match]:
        raise ConfigError("tenancy is on (STREAMS_TENANT_KEY): a search names its tenant (--tenant)")

    def close(self) -> None:
        for target in self._targets.values():
            close = getattr(target, "close", None)
            if close is not None:
                close()
