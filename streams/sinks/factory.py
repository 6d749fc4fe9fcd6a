"""Build the configured sinks from settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from streams.embedding.stores import spec_for, vector_embedder_for
from streams.settings import Settings
from streams.sinks.base import ChunkSink, VectorTarget
from streams.sinks.pinecone_target import PineconeTarget
from streams.sinks.tenants import TenantTargets, tenant_name, tenants_in

if TYPE_CHECKING:
    from streams.embedding.model import Embedder
    from streams.sinks.vectors import VectorSink


def vector_target(settings: Settings, tenant: str | None = None) -> VectorTarget:
    """The vectors of one tenant (its own namespace or table), or, with tenancy on and no tenant named,
    every tenant's behind one router that a chunk id steers (streams.sinks.tenants)."""
    if settings.tenant_key and tenant is None:
        return TenantTargets(lambda t: _one_target(settings, t), lambda: ["", *vector_tenants(settings)])
    return _one_target(settings, tenant or "")


def vector_tenants(settings: Settings) -> list[str]:
    """The tenants that have vectors of their own in this deployment's store."""

    base = _one_target(settings, "")
    if settings.vector_store == "pinecone":
        return tenants_in(settings.vector_namespace, base.namespaces())  # type: ignore[attr-defined]
    return tenants_in(settings.lance_table, base.tables())  # type: ignore[attr-defined]


def _one_target(settings: Settings, tenant: str) -> VectorTarget:

    if settings.vector_store == "pinecone":
        if not (settings.pinecone_api_key and settings.pinecone_host):
            raise ValueError("vector_store=pinecone needs STREAMS_PINECONE_API_KEY and STREAMS_PINECONE_HOST")
        return PineconeTarget(
            api_key=settings.secret("pinecone_api_key"),
            host=settings.pinecone_host,
            index_host=settings.pinecone_index_host,
            namespace=tenant_name(settings.vector_namespace, tenant),
            dimension=spec_for(settings).dimension,
        )
    if settings.vector_store == "lancedb":
        from streams.sinks.lance_target import LanceTarget

        return LanceTarget(
            settings.lance_dir,
            tenant_name(settings.lance_table, tenant),
            dimension=spec_for(settings).dimension,
            columns=settings.vector_keys,
        )
    raise ValueError(f"unknown vector store {settings.vector_store!r}: use lancedb or pinecone")


def build_sink(kind: str, settings: Settings) -> ChunkSink:
    if kind == "mongo":
        from streams.sinks.mongo import MongoSink

        sink = MongoSink.of(settings)
        sink.ensure_indexes()
        return sink
    if kind == "vectors":
        embedder = vector_embedder_for(settings)
        _ = embedder.model  # a missing model stops the sink now, in one line, not at every batch's retry
        return vector_sink(settings, embedder)
    raise ValueError(f"unknown sink {kind!r}: use mongo or vectors")


def vector_sink(settings: Settings, embedder: Embedder) -> VectorSink:
    """The vector sink of these settings: its target, state, strategies in context and metadata keys."""
    from streams.sinks.vectors import VectorSink

    index = "" if settings.index_name == "default" else f".{settings.index_name}"
    return VectorSink(
        vector_target(settings),
        settings.data_dir / f"vector-sink{index}" / "state.sqlite",
        embedder=embedder,
        index=settings.index_name,
        delete_superseded=settings.delete_superseded_vectors,
        context_strategies=settings.embed_context,
        metadata_keys=settings.vector_keys,
        max_metadata_bytes=settings.vector_metadata_max_bytes,
    )
