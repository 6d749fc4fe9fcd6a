"""A move to another embedding model without downtime, on each broker: `streams up` serves searches from the
default index while a steady stream of new documents and amendments arrives; `streams index create` starts
a second index for another model (another size: tests/models.py), its sink backfills from the start of the
topics, `streams index promote` is accepted only once it holds every latest chunk, searches answer
throughout and then read the new index, and `streams index drop` removes the old one and its data."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from streams.api import search as api_search
from streams.embedding.model import default_model_path
from streams.ops.indexes import status
from streams.ops.lag import lag_report
from streams.ops.pipeline import publish_pages
from streams.sinks.factory import vector_target
from streams.sinks.indexes import find, index_settings
from streams.sinks.search import search
from tests.cli import streams
from tests.conftest import make_pages
from tests.embedding_server import MODEL_LIMIT, EmbeddingServer
from tests.integration.conftest import start_up, until, up_settings, user_env
from tests.models import tiny_bert

pytestmark = pytest.mark.integration

TOPICS = ["the east pier", "the harbour dues", "the winter storms", "the ferry timetable", "the lighthouse lamp"]


def _pages(doc: int, amendment: int) -> list:
    """A short document; each amendment changes one sentence."""
    topic = TOPICS[doc % len(TOPICS)]
    texts = [
        f"Minute {doc}. The board discussed {topic} at length. Members asked for costs by the next meeting. " * 3,
        f"Resolution {doc}.{amendment}: the clerk will write to the council about {topic} this month. " * 2,
    ]
    return [p.model_copy(update={"amendment_number": amendment}) for p in make_pages(f"minutes-{doc}", texts)]


class Stream:
    """New documents and amendments of earlier ones, one every `every_s`, until stopped."""

    def __init__(self, data_dir: Path, every_s: float = 0.4) -> None:
        self.settings = up_settings(data_dir)
        self.every_s = every_s
        self.latest: dict[str, int] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        step = 0
        while not self.stop.is_set():
            if step % 4 == 3:  # every fourth: an amendment of an earlier document
                doc = (step // 4) % len(self.latest)
                amendment = self.latest[f"minutes-{doc}"] + 1
            else:
                doc, amendment = len(self.latest), 0
            publish_pages(self.settings, _pages(doc, amendment))
            self.latest[f"minutes-{doc}"] = amendment
            step += 1
            self.stop.wait(self.every_s)


class Searcher:
    """`search` as a user's application calls it, twice a second, counting answers and failures."""

    def __init__(self, settings) -> None:
        self.settings = settings
        self.answered = 0
        self.failures: list[str] = []
        self.indexes: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                hits = api_search("what did the board decide about the pier", 3, settings=self.settings)
                if hits:
                    self.answered += 1
                    self.indexes.append(hits[0]["vector_index"])
            except Exception as exc:  # a search that fails is what this test is for
                self.failures.append(f"{type(exc).__name__}: {exc}")
            self.stop.wait(0.5)


def test_a_new_model_is_backfilled_promoted_and_the_old_index_dropped_under_load(tmp_path: Path, bus: str) -> None:
    data_dir = tmp_path / "var"
    model = tiny_bert(tmp_path / "tiny-bert", pooling="cls", hidden=32)
    up = start_up(data_dir, "-s", "window")
    env = user_env(data_dir)
    try:
        console = json.loads(up.stdout.readline())["ui"]
        settings = up_settings(data_dir)
        stream, searcher = Stream(data_dir), Searcher(settings)
        stream.thread.start()
        until(lambda: bool(search(settings, "the pier", 1)), lambda: "nothing searchable yet", timeout=240)
        searcher.thread.start()

        created = streams("index", "create", "tiny", "--model", str(model), env=env)
        assert created.returncode == 0, created.stderr
        assert "32 dimensions" in created.stderr and "backfills it now" in created.stderr
        started = time.monotonic()
        promoted = None
        while promoted is None or promoted.returncode != 0:  # refused while it lags or misses chunks
            assert time.monotonic() - started < 300, promoted.stderr if promoted else "never tried"
            time.sleep(1)
            promoted = streams("index", "promote", "tiny", env=env)
            if promoted.returncode != 0:
                assert "is not current" in promoted.stderr, promoted.stderr
        backfill_s = time.monotonic() - started
        answered_before = searcher.answered
        until(lambda: searcher.answered > answered_before + 2, lambda: "no search after promotion", timeout=60)
        stream.stop.set()
        stream.thread.join(30)

        def both_current() -> bool:
            """Every stage caught up (the last amendments chunked too, not only stored) and both indexes
            holding every latest chunk."""
            return lag_report(settings)["total_lag"] == 0 and all(s.current for s in status(settings))

        until(both_current, lambda: str([s.as_dict() for s in status(settings)]), timeout=240)
        states = {s.name: s for s in status(settings)}
        assert states["tiny"].serving and not states["default"].serving
        assert states["tiny"].wanted == states["default"].wanted > 0
        assert states["tiny"].dimension == 32 and states["default"].dimension == 384
        assert len(stream.latest) > 5 and any(stream.latest.values())  # documents and amendments both came

        # The amendments' superseded chunks are flagged not latest in the new index too.
        tiny = vector_target(index_settings(settings, "tiny"))
        rows = tiny.table.to_arrow().to_pylist()  # type: ignore[attr-defined]
        assert {r["embedding_model"] for r in rows} == {"tiny-bert"} and {r["vector_index"] for r in rows} == {"tiny"}
        superseded = [r for r in rows if r["amendment_number"] < stream.latest[r["doc_id"]]]
        assert superseded and not any(r["is_latest_version"] for r in superseded)
        assert len(rows) >= states["tiny"].wanted

        assert not searcher.failures, searcher.failures[:3]
        assert searcher.indexes[0] == "default" and searcher.indexes[-1] == "tiny"  # the Python API reads it
        found = streams("search", "the pier", "--json", env=env)
        assert found.returncode == 0 and {json.loads(h)["vector_index"] for h in found.stdout.splitlines()} == {"tiny"}
        with urllib.request.urlopen(console + "search?q=the+pier", timeout=60) as page:  # the console reads it too
            assert "from vector index tiny" in page.read().decode()

        audit = streams("audit", "-s", "window", "--index", "tiny", "--wait", "120", "--json", env=env)
        assert audit.returncode == 0, audit.stdout[-2000:] + audit.stderr[-2000:]  # every version, in the new index
        report = json.loads(audit.stdout)
        assert report["versions"] and not any(report["gaps"].values()) and "vectors.tiny" in audit.stderr

        dropped = streams("index", "drop", "default", env=env)
        assert dropped.returncode == 0, dropped.stderr
        assert "dropped" in dropped.stderr and "vectors" in dropped.stderr
        assert [s.name for s in status(settings)] == ["tiny"]
        assert settings.lance_table not in vector_target(index_settings(settings, "tiny")).tables()  # type: ignore[attr-defined]
        answered = searcher.answered
        until(lambda: searcher.answered > answered + 1, lambda: "no search after the drop", timeout=60)
        searcher.stop.set()
        searcher.thread.join(30)
        assert not searcher.failures, searcher.failures[:3]
        refused = streams("index", "drop", "tiny", env=env)
        assert refused.returncode != 0 and "promote another first" in refused.stderr
        print(f"backfill into the second index, under the stream: {backfill_s:.1f}s")
    finally:
        os.killpg(up.pid, signal.SIGINT)
        up.wait(60)


@pytest.mark.one_broker  # the endpoint's restart is the sink's to ride out: the broker under it moves nothing
def test_a_backfill_through_an_embeddings_api_rides_out_the_servers_restart(
    tmp_path: Path, bus: str, onnx_dir: Path
) -> None:
    """An index whose model is behind an OpenAI-compatible endpoint (tests/embedding_server.py, the local model
    behind HTTP): the endpoint is killed and restarted in the middle of its backfill, and the index still ends
    holding every latest chunk. The key lives in the service's environment, never in the catalogue."""
    server = EmbeddingServer(onnx_dir).start()
    data_dir = tmp_path / "var"
    # How to call the endpoint (its key, request sizes, concurrency) is the service's environment; how its
    # model counts tokens and where it stops are the index's, kept by `streams index create`.
    calling = {"STREAMS_EMBED_API_KEY": server.key, "STREAMS_EMBED_BATCH_TEXTS": "2", "STREAMS_EMBED_CONCURRENCY": "1"}
    up = start_up(data_dir, "-s", "window", "--no-ui", **calling)
    env = user_env(
        data_dir, STREAMS_EMBED_TOKENIZER=default_model_path(), STREAMS_EMBED_MAX_TOKENS=str(MODEL_LIMIT), **calling
    )
    try:
        json.loads(up.stdout.readline())
        settings = up_settings(data_dir)
        for doc in range(16):
            publish_pages(settings, _pages(doc, 0))
        until(lambda: status(settings, "default")[0].current and status(settings, "default")[0].wanted > 0, timeout=240)
        server.control(always_delay_s=0.4)  # a slow endpoint: the backfill takes long enough to be cut
        created = streams("index", "create", "api", "--model", server.model, "--url", server.url, env=env)
        assert created.returncode == 0, created.stderr
        assert "384 dimensions" in created.stderr
        until(lambda: server.stats()["requests"] > 3, lambda: str(server.stats()), timeout=120)
        state = status(settings, "api")[0]
        assert state.missing > 0  # cut in the middle, not after
        server.stop()
        time.sleep(2)  # its sink retries against a closed port meanwhile
        server.start()
        until(lambda: status(settings, "api")[0].current, lambda: str(status(settings, "api")[0]), timeout=240)
        final = status(settings, "api")[0]
        assert final.missing == 0 and final.wanted == status(settings, "default")[0].wanted
        assert server.stats()["statuses"].get("200", 0) > 0  # the restarted server embedded the rest
        assert server.key not in json.dumps(find(settings, "api").__dict__)
    finally:
        os.killpg(up.pid, signal.SIGINT)
        up.wait(60)
        server.stop()
