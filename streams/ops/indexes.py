"""`streams index create/status/promote/drop`: a new embedding model beside the live one, backfilled from the
topics, promoted when it holds every chunk, and the old one removed with its data (streams.sinks.indexes).

A running `streams up` is told through its control directory: it starts the new index's sink at once
(and supervises it), and stops a dropped one's. Elsewhere (Compose, Kubernetes) each index's sink is its own
service: `streams sink vectors --index NAME`.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from dataclasses import asdict, dataclass, replace

from streams.embedding.stores import open_store, vector_embedder_for
from streams.runtime.clients import client_config, group_id
from streams.runtime.lag import group_lag
from streams.settings import UP_FILE, ConfigError, Settings
from streams.sinks import indexes as catalogue
from streams.sinks.factory import vector_sink, vector_target, vector_tenants
from streams.sinks.indexes import DEFAULT, VectorIndex

NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")


@dataclass
class IndexStatus:
    name: str
    model: str
    dimension: int
    serving: bool
    group: str
    lag: int  # records of the chunk and status topics its sink has yet to take
    wanted: int  # latest chunks MongoDB holds that a vector index holds (tables are not embedded)
    missing: int  # of those, not in this index
    stale: int  # in this index but not flagged latest there

    @property
    def current(self) -> bool:
        return self.lag == 0 and self.missing == 0 and self.stale == 0

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "current": self.current}


def sink_group(settings: Settings, name: str) -> str:
    return group_id(settings, "sink-vectors" if name == DEFAULT else f"sink-vectors.{name}")


def _tell_up(settings: Settings, action: str, name: str, wait_s: float = 0.0) -> bool:
    """A request to the running `streams up` (if any) to start or stop an index's sink; with `wait_s`, wait
    that long for it to be carried out (`up` removes the request when it has)."""
    if not (settings.data_dir / UP_FILE).is_file():
        return False
    control = settings.data_dir / "control"
    control.mkdir(parents=True, exist_ok=True)
    request = control / f"index-{name}.json"
    request.write_text(json.dumps({"action": action, "index": name}))
    deadline = time.monotonic() + wait_s
    while request.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    return True


def create(settings: Settings, name: str, model: str, url: str | None = None, backend: str | None = None) -> str:
    """Register index `name` for `model`, with its target made at the model's size; returns what happens
    next (the running `streams up` backfills it, or the command that does)."""
    if not NAME.match(name):
        raise ConfigError(f"index name {name!r}: lower-case letters, digits and hyphens, at most 40")
    index = VectorIndex(name, model=model, url=url or "", backend=backend or "")
    if url:  # how the endpoint's tokens are counted and where its model stops: the index's, not the deployment's
        index = replace(index, max_tokens=settings.embed_max_tokens, tokenizer=settings.embed_tokenizer)
    if name == DEFAULT:
        raise ConfigError("the index `default` is the one the settings describe: name a new one")
    own = index.settings(settings)
    embedder = vector_embedder_for(own)
    _ = embedder.model  # a missing model, a refused key or an unknown endpoint model stops here, in one line
    index = replace(index, dimension=embedder.dimension)
    catalogue.add(settings, index)
    vector_target(own)  # the table (or namespace) at the model's size, before its sink writes
    if _tell_up(settings, "start", name):
        return f"index {name}: {embedder.dimension} dimensions; the running `streams up` backfills it now"
    return f"index {name}: {embedder.dimension} dimensions; backfill it with `streams sink vectors --index {name}`"


def status(settings: Settings, name: str | None = None) -> list[IndexStatus]:
    """Each index's lag and coverage against MongoDB's latest chunks."""
    from streams.sinks.mongo import MongoSink

    serving = catalogue.serving(settings)
    mongo = MongoSink.of(settings)
    try:
        query = {"is_latest_version": True, "is_table": False, "retired": {"$ne": True}, "text": {"$exists": True}}
        wanted = [str(r["_id"]) for r in mongo.collection.find(query, {"_id": 1})]
    finally:
        mongo.close()
    found = []
    for index in catalogue.indexes(settings):
        if name and index.name != name:
            continue
        own = index.settings(settings)
        group = sink_group(settings, index.name)
        lag = sum(p.lag for p in group_lag(settings, group, [settings.topics.chunks, settings.topics.status]))
        embedder = vector_embedder_for(own)
        sink = vector_sink(own, embedder)  # no model loads: only the store is read
        try:
            flags = sink.latest_flags(wanted)
        finally:
            sink.close()
        found.append(
            IndexStatus(
                index.name,
                index.model or own.embed_model or "all-MiniLM-L6-v2 (packaged)",
                index.dimension or embedder.dimension,
                index.name == serving,
                group,
                lag,
                len(wanted),
                sum(cid not in flags for cid in wanted),
                sum(flags.get(cid) is False for cid in wanted),
            )
        )
    if name and not found:
        catalogue.find(settings, name)  # the one-line refusal of an unknown name
    return found


def promote(settings: Settings, name: str, force: bool = False) -> IndexStatus:
    """Make `name` the index searches read; refused while it lags or misses chunks, unless forced."""
    (state,) = status(settings, name)
    if not state.current and not force:
        raise ConfigError(
            f"index {name} is not current: {state.lag} records behind, {state.missing} of {state.wanted} latest "
            f"chunks missing, {state.stale} not flagged latest; wait for its backfill, or --force"
        )
    catalogue.promote(settings, name)
    return state


def drop(settings: Settings, name: str) -> list[str]:
    """Remove index `name` and its data: its vectors (every tenant's), its sink's state and consumer group,
    and the shared store's vectors of its model where no other index uses them. Never the serving index."""
    from confluent_kafka.admin import AdminClient

    index = catalogue.find(settings, name)
    if catalogue.serving(settings) == name:
        raise ConfigError(f"index {name} is the one searches read: promote another first")
    done = []
    if _tell_up(settings, "stop", name, wait_s=30):  # stopped before its data goes, or it would write again
        done.append("asked the running `streams up` to stop its sink")
    own = index.settings(settings)
    for tenant in ["", *vector_tenants(own)] if own.tenant_key else [""]:
        target = vector_target(own, tenant)
        count = target.count()
        target.drop()  # type: ignore[attr-defined]
        done.append(f"dropped {count} vectors" + (f" of tenant {tenant}" if tenant else ""))
    state = settings.data_dir / ("vector-sink" if name == DEFAULT else f"vector-sink.{name}")
    shutil.rmtree(state, ignore_errors=True)
    admin = AdminClient(client_config(settings))
    group = sink_group(settings, name)
    try:
        admin.delete_consumer_groups([group], request_timeout=10)[group].result()
        done.append(f"deleted consumer group {group}")
    except Exception as exc:  # a group that never committed does not exist: nothing to delete
        done.append(f"consumer group {group} not deleted ({exc})")
    key = vector_embedder_for(own).model_key
    others = {
        vector_embedder_for(i.settings(settings)).model_key for i in catalogue.indexes(settings) if i.name != name
    }
    store = open_store(settings)
    if store is not None and key not in others:
        done.append(f"removed {store.drop_model(key)} shared embeddings of its model")  # type: ignore[attr-defined]
    if store is not None:
        store.close()  # type: ignore[attr-defined]
    catalogue.remove(settings, name)
    return done
