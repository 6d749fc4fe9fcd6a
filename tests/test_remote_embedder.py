"""The remote embedder against a real OpenAI-compatible server on loopback (tests/embedding_server.py)
that embeds with the project's own local model: the same vectors as the local model, and the behaviour
under load and failure that an API in production asks for."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from streams.embedding.model import Backend, Embedder, EmbeddingUnavailable, default_model_path
from streams.embedding.remote import RemoteEmbeddingError, RemoteSpec, TokenBudget, retry_after
from streams.runtime.metrics import REMOTE_RETRIES
from streams.settings import Settings
from tests.cli import streams as run_cli
from tests.embedding_server import MODEL_LIMIT, EmbeddingServer

TEXTS = [
    "The contractor shall install strain gauges on every span of the bridge.",
    "Short.",
    "Payment is due within thirty days of the invoice date.",
    "The lessee keeps the premises in good repair at its own cost.",
]
LONG = "Quarterly revenue grew on renewals while hardware sales fell again as customers delayed upgrades. " * 25


@pytest.fixture(scope="module")
def server(onnx_dir: Path) -> Iterator[EmbeddingServer]:
    running = EmbeddingServer(onnx_dir).start()
    yield running
    running.stop()


def spec(server: EmbeddingServer, **overrides: object) -> RemoteSpec:
    """The server's model, its tokens counted with the model's own tokenizer, retries kept quick."""
    fields: dict[str, object] = {
        "url": server.url,
        "model": server.model,
        "api_key": server.key,
        "max_tokens": MODEL_LIMIT,
        "tokenizer": default_model_path(),
        "backoff_s": 0.05,
        "timeout_s": 5.0,
    }
    return RemoteSpec(**{**fields, **overrides})  # type: ignore[arg-type]


def remote(server: EmbeddingServer, long_texts: str = "mean", **overrides: object) -> Embedder:
    return Embedder(remote=spec(server, **overrides), cache_size=0, long_texts=long_texts)


def test_the_endpoint_gives_the_local_models_vectors_and_windows_long_texts(
    server: EmbeddingServer, onnx_dir: Path
) -> None:
    local = Embedder(backend=Backend("onnx", onnx_dir), cache_size=0)
    embedder = remote(server)
    assert embedder.dimension == 384 and embedder.max_pieces == MODEL_LIMIT
    assert np.abs(embedder.encode(TEXTS) - local.encode(TEXTS)).max() < 1e-6
    vector = embedder.encode([LONG])[0]  # past the limit: windows the endpoint reads whole, averaged
    assert embedder.stats.long == 1 and float(vector @ local.encode([LONG])[0]) > 0.999
    truncating = remote(server, long_texts="truncate")
    truncating.encode([LONG])  # cut here before it is sent: the server refuses a text past its limit
    assert truncating.stats.long == 1 and truncating.model.stats.truncated == 1
    assert embedder.model_key != local.model_key and embedder.model_key.startswith("minilm:remote:384")


def test_requests_are_bounded_by_texts_tokens_and_concurrency(server: EmbeddingServer) -> None:
    before = server.stats()
    server.control(always_delay_s=0.2)
    try:
        embedder = remote(server, batch_texts=3, batch_tokens=40, concurrency=2)
        texts = [f"{text} Item {i}." for i in range(6) for text in TEXTS]
        assert embedder.encode(texts).shape == (24, 384)
    finally:
        server.control(always_delay_s=0.0)
    after = server.stats()
    sizes, tokens = after["texts"][len(before["texts"]) :], after["tokens"][len(before["tokens"]) :]
    assert sum(sizes) == 24 + 1  # every text once, and the probe
    assert max(sizes) <= 3 and max(tokens) <= 40
    assert after["most_in_flight"] == 2  # never more than the limit, and it was used


def test_a_429_storm_and_500s_are_retried_honouring_retry_after(server: EmbeddingServer) -> None:
    embedder = remote(server, retries=10)
    embedder.encode(["probe first"])
    storm = [{"status": 500}, {"status": 503}] + [{"status": 429, "retry_after": "0.05"}] * 6
    server.control(plan=storm)
    retried = REMOTE_RETRIES.labels("429")._value.get()
    vectors = embedder.encode(TEXTS)
    assert vectors.shape == (4, 384)
    assert embedder.model.stats.retries == 8
    assert REMOTE_RETRIES.labels("429")._value.get() - retried == 6


def test_a_slow_answer_times_out_and_is_retried(server: EmbeddingServer) -> None:
    embedder = remote(server, timeout_s=0.5)
    embedder.encode(["probe first"])
    server.control(plan=[{"delay_s": 2.0}])
    assert embedder.encode(TEXTS).shape == (4, 384)
    assert embedder.model.stats.retries == 1


def test_retries_run_out_in_one_line(server: EmbeddingServer) -> None:
    embedder = remote(server, retries=2)
    embedder.encode(["probe first"])
    server.control(plan=[{"status": 500}] * 3)
    with pytest.raises(RemoteEmbeddingError, match=r"failed 3 times \(last: 500\)"):
        embedder.encode(TEXTS)


def test_a_refused_key_or_an_unknown_model_stops_at_start(server: EmbeddingServer) -> None:
    with pytest.raises(EmbeddingUnavailable, match=r"refused the API key \(401\)"):
        _ = remote(server, api_key="wrong").model
    with pytest.raises(EmbeddingUnavailable, match="does not serve model 'nomic'"):
        _ = remote(server, model="nomic").model
    env = {"STREAMS_EMBED_URL": server.url, "STREAMS_EMBED_MODEL": server.model, "STREAMS_EMBED_API_KEY": "wrong"}
    result = run_cli("sink", "vectors", env=env)  # refused before it looks for a broker
    assert result.returncode != 0 and "refused the API key (401)" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "wrong" not in result.stderr


def test_a_server_restart_in_the_middle_is_ridden_out(onnx_dir: Path) -> None:
    restarting = EmbeddingServer(onnx_dir).start()
    try:
        embedder = remote(restarting, retries=10, backoff_s=0.2, batch_texts=1)
        embedder.encode(["probe first"])
        restarting.control(always_delay_s=0.3)
        done: dict[str, np.ndarray] = {}
        worker = threading.Thread(target=lambda: done.setdefault("v", embedder.encode(TEXTS * 3)))
        worker.start()
        restarting.stop()  # killed with requests in flight
        restarting.start()
        worker.join(60)
        assert done["v"].shape == (12, 384) and embedder.model.stats.retries >= 1
    finally:
        restarting.stop()


def test_the_token_budget_holds_requests_back() -> None:
    budget = TokenBudget(per_minute=6000)  # 100 a second
    assert budget.take(6000) == 0.0  # a full bucket at start
    assert budget.take(50) >= 0.3  # then it waits for the tokens to accrue
    assert TokenBudget(0).take(10**9) == 0.0


def test_retry_after_reads_seconds_and_dates() -> None:
    assert retry_after("2") == 2.0 and retry_after(None) is None and retry_after("soon") is None
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past: at once


def test_an_endpoint_without_a_model_name_is_refused_in_one_line() -> None:
    with pytest.raises(ValidationError, match="STREAMS_EMBED_URL needs STREAMS_EMBED_MODEL"):
        Settings(embed_url="http://127.0.0.1:1/v1")
    with pytest.raises(ValidationError, match="must be an http"):
        Settings(embed_url="ftp://x", embed_model="m")
    assert Settings(embed_url="https://u:p@x/v1", embed_model="m").redacted()["embed_url"] != "https://u:p@x/v1"
