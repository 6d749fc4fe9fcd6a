"""LanceDB on local disk: the embedded default vector store, behind the same contract as Pinecone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path

import pyarrow as pa

from streams.settings import ConfigError
from streams.sinks.base import Match, VectorRow
from streams.sinks.filters import Condition, lance_where

#: How each vector-metadata type (streams.core.metadata.VECTOR_TYPES) is a LanceDB column.
ARROW_TYPES = {
    "str": pa.string(),
    "int": pa.int64(),
    "float": pa.float64(),
    "bool": pa.bool_(),
    "date": pa.int64(),  # Unix seconds, as Pinecone keeps it
    "list": pa.list_(pa.string()),
}


def _sql_list(ids: Sequence[str]) -> str:
    return ", ".join("'" + i.replace("'", "''") + "'" for i in ids)


class LanceTarget:
    name = "lancedb"

    def __init__(
        self, path: Path, table: str = "chunks", dimension: int = 384, columns: Mapping[str, str] | None = None
    ) -> None:
        """`columns`: the document metadata keys each vector carries (STREAMS_VECTOR_METADATA_KEYS), one typed
        column each, added to a table made before they were listed (earlier rows hold null)."""
        import lancedb

        path.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.table_name = table
        # Every read sees the latest version: another handle (a sink, a purge, another process) may have
        # written since this one opened, and LanceDB's default is never to look again.
        self.db = lancedb.connect(str(path), read_consistency_interval=timedelta(0))
        fields = [
            pa.field("chunk_id", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dimension)),
            pa.field("doc_id", pa.string()),
            pa.field("strategy", pa.string()),
            pa.field("section_type", pa.string()),
            pa.field("amendment_number", pa.int32()),
            pa.field("is_latest_version", pa.bool_()),
            pa.field("is_critical", pa.bool_()),
            pa.field("requirement_flag", pa.bool_()),
            pa.field("content_hash", pa.string()),
            pa.field("embedding_model", pa.string()),
            pa.field("vector_index", pa.string()),
        ]
        fields += [pa.field(key, ARROW_TYPES[kind]) for key, kind in (columns or {}).items()]
        try:
            self.table = self.db.create_table(table, schema=pa.schema(fields), exist_ok=True)
        except ValueError:  # it exists with other columns: the metadata keys changed, or a reader lists none
            self.table = self.db.open_table(table)
            have = self.table.schema
            for wanted in fields:
                if wanted.name == "vector" and have.field("vector").type != wanted.type:
                    raise ConfigError(
                        f"LanceDB table {table} holds vectors of {have.field('vector').type.list_size} values, the "
                        f"model makes {dimension}: a new model goes to a new index (streams index create)"
                    ) from None
                if wanted.name in have.names and have.field(wanted.name).type != wanted.type:
                    raise ConfigError(
                        f"LanceDB table {table} keeps {wanted.name!r} as {have.field(wanted.name).type}, not "
                        f"{wanted.type}: keep its type in STREAMS_VECTOR_METADATA_KEYS, or re-index into a new table"
                    ) from None
            missing = [f for f in fields if f.name not in have.names]
            if missing:
                self.table.add_columns(missing)
        self.schema = self.table.schema

    def upsert(self, rows: Sequence[VectorRow]) -> None:
        if not rows:
            return
        # Typed by the table's own schema: rows inferred from the first one would drop a key it lacks.
        data = pa.Table.from_pylist([{**row.metadata(), "vector": row.values} for row in rows], schema=self.schema)
        (self.table.merge_insert("chunk_id").when_matched_update_all().when_not_matched_insert_all().execute(data))

    def set_latest(self, ids: Sequence[str], is_latest: bool) -> None:
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            self.table.update(where=f"chunk_id IN ({_sql_list(batch)})", values={"is_latest_version": is_latest})

    def delete(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), 500):
            self.table.delete(f"chunk_id IN ({_sql_list(ids[start : start + 500])})")

    def drop(self) -> None:
        """The whole table, gone (a tenant's purge): its files leave the disk."""
        self.db.drop_table(self.table_name)

    def tables(self) -> list[str]:
        """Every table of this LanceDB directory (a tenant's are `<table>--<tenant>`)."""
        names: list[str] = []
        token = None
        while True:  # paged: a deployment with many tenants has many tables
            page = self.db.list_tables(page_token=token)
            names += page.tables
            token = page.page_token
            if not token:
                return sorted(names)

    def count(self, latest_only: bool = False) -> int:
        return self.table.count_rows("is_latest_version = true" if latest_only else None)

    def flags(self, ids: Sequence[str]) -> dict[str, bool]:
        """`is_latest_version` of each of `ids` that is stored: the ledger's view of this store."""
        found: dict[str, bool] = {}
        for start in range(0, len(ids), 500):
            batch = list(ids[start : start + 500])
            rows = (
                self.table.search()
                .where(f"chunk_id IN ({_sql_list(batch)})")
                .select(["chunk_id", "is_latest_version"])
                .limit(len(batch) * 2)
                .to_arrow()
            )
            found.update(
                zip(rows.column("chunk_id").to_pylist(), rows.column("is_latest_version").to_pylist(), strict=True)
            )
        return found

    def ids(self) -> list[str]:
        """Every stored chunk id, duplicates included (a test of exactly-once needs to see them)."""
        return [str(v) for v in self.table.to_arrow().column("chunk_id").to_pylist()]

    def query(
        self, vector: Sequence[float], k: int, strategy: str | None = None, where: Sequence[Condition] = ()
    ) -> list[Match]:
        predicates = ["is_latest_version = true"]
        if strategy:
            predicates.append(f"strategy = '{strategy.replace(chr(39), '')}'")
        predicates += lance_where(where)
        where_sql = " AND ".join(predicates)
        hits = self.table.search(list(vector)).metric("cosine").where(where_sql, prefilter=True).limit(k).to_list()
        return [
            Match(
                h["chunk_id"],
                1.0 - float(h["_distance"]),
                {k: v for k, v in h.items() if k not in ("vector", "_distance")},
            )
            for h in hits
        ]
