"""Run one faust app (a role) in this process until it is stopped."""

from __future__ import annotations

import gc
import logging

import faust

from streams.agents.app import assembler_app, chunker_app
from streams.runtime.clients import check_dead_letter_topic, check_document_topic
from streams.settings import Settings


def build(role: str, settings: Settings, topic_limit: int | None = None) -> faust.App:
    """The role's app; `topic_limit` is the document topic's max.message.bytes (the assembler's records)."""
    if role == "assembler":
        return assembler_app(settings, topic_limit)
    if role.startswith("chunker:"):
        return chunker_app(role.split(":", 1)[1], settings)
    raise ValueError(f"unknown role {role!r}: use 'assembler' or 'chunker:<strategy>'")


def settle_heap() -> int:
    """Collect, then freeze what is left: the modules, the chunker (and its model) and the app live as long
    as the process, so the collector's full passes need not walk them again: in the hybrid worker each
    such pass paused the whole stage (figures: docs/benchmarks.md, Pipeline).
    Returns how many are frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def watch(app: faust.App, role: str, settings: Settings) -> None:
    """The worker's health (`streams.runtime.watchdog.watch_process`): ready once it has joined its group,
    owning the partitions its last assignment gave it."""
    import threading

    from streams.runtime.watchdog import watch_process

    joined = threading.Event()
    owned: list[frozenset[tuple[str, int]]] = [frozenset()]  # replaced whole by the event loop, read by threads

    @app.on_partitions_assigned.connect
    async def on_assigned(*_args: object, **_kwargs: object) -> None:
        owned[0] = frozenset((tp.topic, tp.partition) for tp in app.consumer.assignment())
        joined.set()

    @app.on_partitions_revoked.connect
    async def on_revoked(*_args: object, **_kwargs: object) -> None:
        owned[0] = frozenset()

    watch_process(settings, role, app.conf.id, joined.is_set, lambda: owned[0])


def run(role: str, settings: Settings, loglevel: str = "WARNING") -> None:

    # A topic that refuses what this worker accepts (a document, a dead letter): refuse to start.
    topic_limit = check_document_topic(settings) if role == "assembler" else None
    if role.startswith("chunker:") and settings.embed_threads is None:
        # Chunker workers scale by replicas, one per partition at most: torch's default of a thread per
        # core in every process oversubscribes the machine (docs/benchmarks.md, The demo).
        settings = settings.model_copy(update={"embed_threads": 1})
    app = build(role, settings, topic_limit)
    check_dead_letter_topic(settings)  # after build: a bad role or option is refused first, without the broker
    watch(app, role, settings)
    logging.getLogger("aiokafka").setLevel(logging.ERROR)
    worker = faust.Worker(app, loglevel=loglevel, quiet=True, redirect_stdouts=False)
    # faust's terminal spinner sets the root logger to DEBUG so that it turns on every record: then
    # every debug call in faust, mode and aiokafka builds a LogRecord, a visible share of the assembler's
    # CPU (figures: docs/benchmarks.md, Pipeline).
    worker.spinner = None
    settle_heap()
    worker.execute_from_commandline()
