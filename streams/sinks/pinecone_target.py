"""Pinecone as a `VectorTarget`, over the official client's REST data plane.

The target talks to one index host (Pinecone Local, a private endpoint or a
serverless index) and one namespace. Every client failure becomes a single-line
`RuntimeError` that names the operation and never the API key, so callers can
log it as-is.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from streams.sinks.base import Match, VectorRow
from streams.sinks.filters import Condition, pinecone_filter

UPSERT_BATCH = 100
"""Vectors per upsert request: Pinecone's recommended batch, well under its 2 MB / 1000 cap."""

DELETE_BATCH = 1000
"""IDs per delete request: the most Pinecone accepts in one call."""

FETCH_BATCH = 100
"""IDs per fetch request: matches the list page size and keeps the GET URL short."""

LATEST_FILTER: dict[str, Any] = {"is_latest_version": {"$eq": True}}


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _check_metadata(chunk_id: str, metadata: dict[str, Any]) -> dict[str, Any]:
    """Keep Pinecone's rule visible here: str, number, bool or list of str; None is dropped.

    Pinecone rejects a whole batch for one bad value, so failing on the row names the culprit.
    """
    clean: dict[str, Any] = {}
    for key, value in metadata.items():
        if value is None:
            continue
        if isinstance(value, bool | str):
            clean[key] = value
        elif isinstance(value, int | float):
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"chunk {chunk_id}: metadata {key!r} is not a finite number")
            clean[key] = value
        elif isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
            clean[key] = list(value)
        else:
            raise ValueError(
                f"chunk {chunk_id}: metadata {key!r} must be str, number, bool or list of str, "
                f"got {type(value).__name__}"
            )
    return clean


def _page_ids(page: Any) -> list[str]:
    """IDs of one `index.list()` page: a `ListResponse` since 10.x, a plain list of str before."""
    items: Iterable[Any] = page.vectors if hasattr(page, "vectors") else page
    ids = [item if isinstance(item, str) else getattr(item, "id", None) for item in items]
    return [chunk_id for chunk_id in ids if chunk_id]


class PineconeTarget:
    """Vectors in one Pinecone namespace; `is_latest_version` is a metadata flag, not a separate index.

    Pinecone Local style: `Pinecone(api_key, host)` for the control plane, then the data plane at
    `index_host` (or `host` when the index is served there too). No control-plane call is made.
    """

    name = "pinecone"

    def __init__(
        self,
        api_key: str,
        host: str,
        index_host: str | None = None,
        namespace: str = "streams",
        dimension: int = 384,
    ) -> None:
        if not api_key:
            raise RuntimeError("pinecone: no API key given")
        self._secret = api_key
        self.namespace = namespace
        self.dimension = dimension
        with self._errors("connect"):
            from pinecone import Pinecone

            self._client = Pinecone(api_key=api_key, host=host)
            self._index = self._client.Index(host=index_host or host)

    @contextmanager
    def _errors(self, operation: str) -> Iterator[None]:
        """One readable line per failure; the key is scrubbed in case a message ever echoes it."""
        try:
            yield
        except RuntimeError as exc:
            if str(exc).startswith("pinecone "):
                raise
            raise RuntimeError(self._message(operation, exc)) from None
        except Exception as exc:
            raise RuntimeError(self._message(operation, exc)) from None

    def _message(self, operation: str, exc: BaseException) -> str:
        detail = _one_line(str(exc)) or type(exc).__name__
        if len(self._secret) >= 8:  # scrubbing a very short string would mangle the message
            detail = detail.replace(self._secret, "***")
        status = getattr(exc, "status_code", None)
        if status == 401:
            detail = f"unauthorized: the API key was rejected ({detail})"
        return f"pinecone {operation} failed: {detail}"

    def _check_values(self, row: VectorRow) -> None:
        if len(row.values) != self.dimension:
            raise RuntimeError(
                f"pinecone upsert failed: chunk {row.chunk_id} has {len(row.values)} values, "
                f"the index expects {self.dimension}"
            )

    def upsert(self, rows: Sequence[VectorRow]) -> None:
        """Sequential batches of 100 so a failed batch raises instead of being reported in a result."""
        for row in rows:
            self._check_values(row)
        for start in range(0, len(rows), UPSERT_BATCH):
            batch = rows[start : start + UPSERT_BATCH]
            with self._errors("upsert"):
                vectors = [
                    {
                        "id": row.chunk_id,
                        "values": [float(v) for v in row.values],
                        "metadata": _check_metadata(row.chunk_id, row.metadata()),
                    }
                    for row in batch
                ]
                self._index.upsert(vectors=vectors, namespace=self.namespace)

    def set_latest(self, ids: Sequence[str], is_latest: bool) -> None:
        """One update per id: Pinecone's by-id update is a metadata patch, other keys are kept.

        A 404 for an id that is gone (deleted, never written) is ignored: there is nothing to flag.
        """
        for chunk_id in ids:
            with self._errors("update"):
                try:
                    self._index.update(
                        id=chunk_id,
                        set_metadata={"is_latest_version": bool(is_latest)},
                        namespace=self.namespace,
                    )
                except Exception as exc:
                    if getattr(exc, "status_code", None) != 404:
                        raise

    def delete(self, ids: Sequence[str]) -> None:
        """Batches of 1000, Pinecone's per-request cap; unknown ids are ignored by the server."""
        for start in range(0, len(ids), DELETE_BATCH):
            batch = list(ids[start : start + DELETE_BATCH])
            with self._errors("delete"):
                self._index.delete(ids=batch, namespace=self.namespace)

    def drop(self) -> None:
        """Every vector of this namespace, gone (a tenant's purge): `deleteAll` on the namespace."""
        with self._errors("delete"):
            try:
                self._index.delete(delete_all=True, namespace=self.namespace)
            except Exception as exc:  # a namespace never written is a 404 on serverless: nothing to drop
                if getattr(exc, "status_code", None) != 404:
                    raise

    def namespaces(self) -> list[str]:
        """The index's namespaces that hold vectors (a tenant's are `<namespace>--<tenant>`)."""
        with self._errors("count"):
            stats = self._index.describe_index_stats()
        return sorted(stats.namespaces)

    def count(self, latest_only: bool = False) -> int:
        """All vectors from the namespace stats; latest ones by listing and fetching every id.

        `describe_index_stats` does not take a filter on serverless indexes, and a query with a
        dummy vector is capped by top_k, so `latest_only=True` walks the namespace: one list call
        per 100 ids plus one fetch per page. That is O(n) reads: meant for tests and small indexes.
        Both numbers are eventually consistent on real Pinecone.
        """
        if not latest_only:
            with self._errors("count"):
                stats = self._index.describe_index_stats()
            keys = (self.namespace,) if self.namespace else ("__default__", "")
            summary = next((stats.namespaces[k] for k in keys if k in stats.namespaces), None)
            return int(summary.vector_count) if summary is not None else 0
        latest = 0
        with self._errors("count"):
            for page in self._index.list(namespace=self.namespace):
                ids = _page_ids(page)
                for start in range(0, len(ids), FETCH_BATCH):
                    batch = ids[start : start + FETCH_BATCH]
                    fetched = self._index.fetch(ids=batch, namespace=self.namespace)
                    latest += sum(
                        1
                        for vector in fetched.vectors.values()
                        if (vector.metadata or {}).get("is_latest_version") is True
                    )
        return latest

    def flags(self, ids: Sequence[str]) -> dict[str, bool]:
        """`is_latest_version` of each of `ids` that is stored (fetch by id, 100 at a time)."""
        found: dict[str, bool] = {}
        with self._errors("fetch"):
            for start in range(0, len(ids), FETCH_BATCH):
                fetched = self._index.fetch(ids=list(ids[start : start + FETCH_BATCH]), namespace=self.namespace)
                for chunk_id, vector in fetched.vectors.items():
                    found[chunk_id] = (vector.metadata or {}).get("is_latest_version") is True
        return found

    def query(
        self, vector: Sequence[float], k: int, strategy: str | None = None, where: Sequence[Condition] = ()
    ) -> list[Match]:
        """Nearest latest-version chunks, optionally of one strategy; scores are the index metric."""
        if k <= 0:
            return []
        if len(vector) != self.dimension:
            raise RuntimeError(
                f"pinecone query failed: the vector has {len(vector)} values, the index expects {self.dimension}"
            )
        clauses: list[dict[str, Any]] = [dict(LATEST_FILTER)]
        if strategy is not None:
            clauses.append({"strategy": {"$eq": strategy}})
        clauses += pinecone_filter(where)
        query_filter = clauses[0] if len(clauses) == 1 else {"$and": clauses}
        with self._errors("query"):
            response = self._index.query(
                vector=[float(v) for v in vector],
                top_k=k,
                filter=query_filter,
                include_metadata=True,
                namespace=self.namespace,
            )
        return [
            Match(chunk_id=match.id, score=float(match.score), metadata=dict(match.metadata or {}))
            for match in response.matches
        ]

    def close(self) -> None:
        """Release the HTTP connection pools (not part of the protocol, safe to call twice)."""
        for closable in (self._index, self._client):
            with contextlib.suppress(Exception):
                closable.close()

    def __repr__(self) -> str:
        return f"PineconeTarget(namespace={self.namespace!r}, dimension={self.dimension})"
