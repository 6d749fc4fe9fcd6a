"""A real HTTP server on loopback that speaks the OpenAI embeddings API (`POST /v1/embeddings`) with the
project's own local model, for the remote embedder's tests. It answers as OpenAI does: a Bearer key, a
model name, `input` as a string or a list, `data[i].embedding`, `usage`, errors as `{"error": {...}}`,
and 400 for a text past the model's limit. On command (`POST /control`) it answers the next requests with
429 (with `Retry-After`), 500, or slowly; `GET /stats` says what it was sent.

Run it in its own process, `python -m tests.embedding_server PORT KEY MODEL EXPORT_DIR`, so a test can kill
and restart it in the middle of a batch.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

MODEL_LIMIT = 254  # MiniLM's 256 word pieces less [CLS] and [SEP]


class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.plan: list[dict[str, Any]] = []  # what the next requests get, one entry each
        self.always_delay_s = 0.0
        self.stats: dict[str, Any] = {"requests": 0, "statuses": {}, "texts": [], "tokens": [], "in_flight": 0}
        self.stats["most_in_flight"] = 0


def serve(port: int, key: str, model: str, export_dir: str) -> None:
    from streams.embedding.model import Backend, Embedder

    embedder = Embedder(backend=Backend("onnx", Path(export_dir)), cache_size=0, long_texts="truncate")
    embedder.encode(["warm"])
    state = _State()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:  # quiet
            pass

        def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> Any:
            return json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")

        def do_GET(self) -> None:
            with state.lock:
                self._send(200, state.stats)

        def do_POST(self) -> None:
            if self.path == "/control":
                command = self._body()
                with state.lock:
                    state.plan.extend(command.get("plan", []))
                    state.always_delay_s = float(command.get("always_delay_s", state.always_delay_s))
                self._send(200, {"ok": True})
                return
            if self.path != "/v1/embeddings":
                self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
                return
            body = self._body()
            with state.lock:
                step = state.plan.pop(0) if state.plan else {}
                state.stats["requests"] += 1
                state.stats["in_flight"] += 1
                state.stats["most_in_flight"] = max(state.stats["most_in_flight"], state.stats["in_flight"])
                delay = float(step.get("delay_s", 0.0)) + state.always_delay_s
            try:
                time.sleep(delay)
                status, answer, headers = self._answer(body, step)
            finally:
                with state.lock:
                    state.stats["in_flight"] -= 1
                    state.stats["statuses"][str(status)] = state.stats["statuses"].get(str(status), 0) + 1
            self._send(status, answer, headers)

        def _answer(self, body: dict[str, Any], step: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
            if self.headers.get("Authorization") != f"Bearer {key}":
                error = {"message": "Incorrect API key provided", "type": "invalid_request_error"}
                return 401, {"error": {**error, "code": "invalid_api_key"}}, {}
            if "status" in step:
                headers = {"Retry-After": str(step["retry_after"])} if "retry_after" in step else {}
                kind = "rate_limit_exceeded" if step["status"] == 429 else "server_error"
                return int(step["status"]), {"error": {"message": "on command", "type": kind}}, headers
            if body.get("model") != model:
                error = {"message": f"The model `{body.get('model')}` does not exist", "type": "invalid_request_error"}
                return 404, {"error": {**error, "code": "model_not_found"}}, {}
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            lengths = [n - 2 for n in embedder.token_lengths(texts)]
            if max(lengths, default=0) > MODEL_LIMIT:
                message = f"This model's maximum context length is {MODEL_LIMIT} tokens, you sent {max(lengths)}"
                return 400, {"error": {"message": message, "type": "invalid_request_error"}}, {}
            vectors = embedder.encode(texts)
            with state.lock:
                state.stats["texts"].append(len(texts))
                state.stats["tokens"].append(sum(lengths))
            data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
            usage = {"prompt_tokens": sum(lengths), "total_tokens": sum(lengths)}
            return 200, {"object": "list", "data": data, "model": model, "usage": usage}, {}

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print("ready", flush=True)
    server.serve_forever()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class EmbeddingServer:
    """The server in its own process, started and stopped by PID; restartable on the same port."""

    def __init__(self, export_dir: Path, key: str = "test-key", model: str = "minilm") -> None:
        self.port = free_port()
        self.key, self.model, self.export_dir = key, model, export_dir
        self.process: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> EmbeddingServer:
        command = [sys.executable, "-m", "tests.embedding_server", str(self.port), self.key, self.model]
        self.process = subprocess.Popen(
            [*command, str(self.export_dir)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
            cwd=Path(__file__).resolve().parent.parent,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line.strip() == "ready", f"embedding server did not start: {line!r}"
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def control(self, **command: Any) -> None:
        httpx.post(f"http://127.0.0.1:{self.port}/control", json=command, timeout=5).raise_for_status()

    def stats(self) -> dict[str, Any]:
        return dict(httpx.get(f"http://127.0.0.1:{self.port}/stats", timeout=5).json())


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4])
