"""`streams up`: the embedded services, the workers and both sinks in the foreground until interrupted.

It writes `<data_dir>/up.json`, which every other command reads as its lowest-priority settings, so
`streams publish`, `tail`, `lag`, `search` and `replay` work from another terminal without flags.
Replay requests arrive as files in `<data_dir>/control/` and are carried out here, because moving a
consumer group back needs its workers stopped.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

from rich.console import Console

from streams.ops.pipeline import LocalPipeline, RoleHealth
from streams.ops.replay import reset_offsets
from streams.runtime import metrics
from streams.runtime.metrics import serve
from streams.settings import UP_FILE, Settings
from streams.sinks import indexes

HEALTH_FILE = "health.json"


def connection(settings: Settings) -> dict[str, str]:
    return {
        "deployment": settings.deployment,
        "broker": settings.broker,
        "broker_kind": settings.broker_kind,
        "mongo_url": settings.mongo_url,
        "mongo_database": settings.mongo_database,
        "mongo_collection": settings.mongo_collection,
        "vector_store": f"lancedb:{settings.lance_dir}",
    }


def control_dir(settings: Settings) -> Path:
    return settings.data_dir / "control"


def request_replay(settings: Settings, strategy: str, start: str, chunker_version: str | None) -> Path:
    path = control_dir(settings) / f"replay-{strategy}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"strategy": strategy, "from": start, "chunker_version": chunker_version}))
    return path


def console_available() -> bool:
    """The console's packages are the `ui` extra: without them `up` runs everything else."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("starlette", "uvicorn", "jinja2", "multipart"))


def run_up(
    settings: Settings, strategies: list[str], console: Console, as_json: bool, ui: bool = True, external: bool = False
) -> None:
    """The whole service in the foreground; with `external`, on the broker and MongoDB the settings name."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    lance = settings.lance_dir.resolve()
    # One replica per sink here, so sinks own all partitions and restart without a group rebalance.
    settings = settings.model_copy(
        update={"lancedb_path": lance, "data_dir": settings.data_dir.resolve(), "sink_assignment": "manual"}
    )
    up_file = settings.data_dir / UP_FILE
    pipeline = LocalPipeline(
        settings,
        strategies,
        sinks=["mongo", "vectors"],
        supervise=True,
        on_event=lambda line: console.print(line),
        own_broker=not external,
        own_store=not external,
    )
    with pipeline:
        info = connection(pipeline.settings)
        if ui and console_available():
            info["ui"] = pipeline.start_ui()
        elif ui:
            console.print("console not started: its packages are missing (pip install -e '.[ui]')")
        names = ("deployment", "broker", "broker_kind", "mongo_url", "mongo_database", "mongo_collection")
        shared = {k: info[k] for k in names}
        up_file.write_text(
            json.dumps(
                {
                    "settings": {**shared, "lancedb_path": str(lance)},
                    **info,
                    "strategies": strategies,  # what `streams audit` and `status` check by default
                    "processes": pipeline.pids(),
                }
            )
        )
        if as_json:
            print(json.dumps(info, sort_keys=True), flush=True)
        console.print(
            f"up: broker {info['broker']} ({info['broker_kind']}), mongo {info['mongo_url']}, "
            f"vectors {info['vector_store']}"
        )
        console.print(f"workers: assembler, {', '.join(strategies)}; sinks: mongo, vectors. Ctrl-C stops.")
        if "ui" in info:
            console.print(f"console: {info['ui']}")
        if settings.metrics_port:
            serve(settings.metrics_port, ready=lambda: not pipeline.failed())
        for service in pipeline.services():  # supervised like the workers, each broker node on its own
            if service.proc is not None:
                pipeline.health[service.name] = RoleHealth(service.name, service.proc.pid)
        _index_sinks(pipeline, console)
        try:
            while not stop.wait(1.0):
                pipeline.check_workers()
                write_health(pipeline)
                for request in sorted(control_dir(pipeline.settings).glob("replay-*.json")):
                    _replay(pipeline, request, console)
                for request in sorted(control_dir(pipeline.settings).glob("index-*.json")):
                    _index_request(pipeline, request, console)
        finally:
            pipeline.stopping = True  # from here on an exit is the shutdown, not a crash
            up_file.unlink(missing_ok=True)
            (pipeline.settings.data_dir / HEALTH_FILE).unlink(missing_ok=True)


def _index_sinks(pipeline: LocalPipeline, console: Console) -> None:
    """A sink for every vector index of the catalogue besides `default`, and none for a dropped `default`."""
    names = [i.name for i in indexes.indexes(pipeline.settings)]
    if indexes.DEFAULT not in names and "sink:vectors" in pipeline.workers:
        pipeline.stop_worker("sink:vectors")
        pipeline.health.pop("sink:vectors", None)
    for name in names:
        if name != indexes.DEFAULT and f"sink:vectors.{name}" not in pipeline.workers:
            pipeline.start_worker(f"sink:vectors.{name}")
            console.print(f"index {name}: sink started")


def _index_request(pipeline: LocalPipeline, request: Path, console: Console) -> None:
    """`streams index create` or `drop` from another terminal: start or stop that index's sink."""
    order = json.loads(request.read_text())
    request.unlink()
    role = "sink:vectors" if order["index"] == indexes.DEFAULT else f"sink:vectors.{order['index']}"
    if order["action"] == "start" and role not in pipeline.workers:
        pipeline.start_worker(role)
        console.print(f"index {order['index']}: sink started (backfilling from the start of the topics)")
    elif order["action"] == "stop" and role in pipeline.workers:
        pipeline.stop_worker(role)
        pipeline.health.pop(role, None)
        console.print(f"index {order['index']}: sink stopped")


def write_health(pipeline: LocalPipeline) -> None:
    """Each role's state for `streams status` and the metrics, replaced atomically once a second."""

    roles = {role: health.as_dict() for role, health in sorted(pipeline.health.items())}
    for role, health in roles.items():
        for state in ("running", "restarting", "failed"):
            metrics.ROLE_STATE.labels(role, state).set(1 if health["state"] == state else 0)
    path = pipeline.settings.data_dir / HEALTH_FILE
    path.with_suffix(".tmp").write_text(json.dumps({"time": time.time(), "roles": roles}))
    path.with_suffix(".tmp").replace(path)


def _replay(pipeline: LocalPipeline, request: Path, console: Console) -> None:
    order = json.loads(request.read_text())
    request.unlink()
    strategy = order["strategy"]
    role = f"chunker:{strategy}"
    if role not in pipeline.workers:
        console.print(f"replay ignored: no worker for strategy {strategy!r}")
        return
    pipeline.stop_worker(role)
    offsets = reset_offsets(pipeline.settings, strategy, order["from"])
    if order.get("chunker_version"):
        pipeline.settings = pipeline.settings.model_copy(update={"chunker_version": order["chunker_version"]})
    pipeline.start_worker(role)
    pipeline.settings = pipeline.settings.model_copy(update={"chunker_version": None})
    console.print(f"replay {strategy} from {order['from']}: offsets {offsets}")
