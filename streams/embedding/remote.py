"""An OpenAI-compatible `/v1/embeddings` endpoint as the sentence model (OpenAI, Azure, vLLM, Ollama,
text-embeddings-inference, LiteLLM): the same contract as the local model, so caches, long-text handling and
every user of the embedder stay as they are.

It behaves under load and failure: batches bounded by texts and by tokens, at most `concurrency` requests
in flight, a tokens-per-minute budget, retries with exponential backoff and full jitter on 429, 5xx,
timeouts and refused connections (a `Retry-After` is honoured), and a refusal at start in one line when the
key is refused (401/403) or the model is unknown. Requests, tokens, retries and latency are metrics.

Tokens are counted with a tokenizer the caller names (tiktoken's `cl100k_base` for OpenAI's models, or a
model directory's `tokenizer.json`), so a text past the endpoint's limit is cut or windowed here, as for
the local model, and never refused by the endpoint.
"""

from __future__ import annotations

import email.utils
import logging
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from streams.core.chunkers.base import EmbeddingUnavailable
from streams.core.tokenizers import tiktoken_encoding

log = logging.getLogger(__name__)
PROBE = "streams embedding probe"


class RemoteEmbeddingError(RuntimeError):
    """The endpoint did not answer a batch within the retries: the caller's batch is retried or dead-lettered."""


@dataclass(frozen=True)
class RemoteSpec:
    """Where and how to call the endpoint; frozen and hashable, so equal settings share one embedder."""

    url: str  # the API's base, e.g. https://api.openai.com/v1 (".../embeddings" is added)
    model: str
    api_key: str = field(default="", repr=False)
    max_tokens: int = 8191  # the most tokens the model reads of one input
    dimensions: int = 0  # the vectors' size where it is known; 0: learnt from the probe
    tokenizer: str = "cl100k_base"  # a tiktoken encoding, or a directory holding tokenizer.json
    batch_texts: int = 64
    batch_tokens: int = 16_000
    concurrency: int = 4
    tokens_per_minute: int = 0  # 0: no budget
    timeout_s: float = 30.0
    retries: int = 6
    backoff_s: float = 0.5  # the first retry's most wait; doubled each retry, up to backoff_max_s
    backoff_max_s: float = 30.0

    @property
    def endpoint(self) -> str:
        return self.url.rstrip("/").removesuffix("/embeddings") + "/embeddings"


class Pieces:
    """The endpoint's tokens of a text, as the embedder's long-text handling needs them: counts, and cuts
    into windows the model reads whole. Either tiktoken (byte-level BPE) or a Hugging Face tokenizer."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._hf: Any = None
        self._bpe: Any = None
        if Path(name, "tokenizer.json").is_file():
            from tokenizers import Tokenizer

            self._hf = Tokenizer.from_file(str(Path(name, "tokenizer.json")))
            self._hf.no_padding()
            self._hf.no_truncation()
        else:
            try:
                self._bpe = tiktoken_encoding(name)
            except ValueError as exc:
                raise EmbeddingUnavailable(
                    f"STREAMS_EMBED_TOKENIZER={name!r} is neither a tiktoken encoding nor a directory with "
                    "tokenizer.json"
                ) from exc

    def lengths(self, texts: Sequence[str]) -> list[int]:
        if self._hf is not None:
            return [len(e.ids) for e in self._hf.encode_batch(list(texts), add_special_tokens=False)]
        return [len(self._bpe.encode_ordinary(t)) for t in texts]

    def windows(self, text: str, room: int) -> list[str]:
        """`text` cut into pieces of at most `room` tokens, each cut on a character (and, with a Hugging
        Face tokenizer, a word) boundary."""
        if self._hf is not None:
            encoding = self._hf.encode(text, add_special_tokens=False)
            offsets = [(start, end) for start, end in encoding.offsets]
        else:
            offsets = _byte_offsets(self._bpe, text)
        pieces: list[str] = []
        first = 0
        while first < len(offsets):
            end = min(first + room, len(offsets))
            while end < len(offsets) and end > first + 1 and offsets[end][0] == offsets[end - 1][0]:
                end -= 1  # tokens that share a character start (one character's bytes) stay together
            pieces.append(text[offsets[first][0] : offsets[end - 1][1]])
            first = end
        return [p for p in pieces if p]


def _byte_offsets(encoding: Any, text: str) -> list[tuple[int, int]]:
    """Each BPE token's span of characters of `text` (a token inside a multi-byte character spans it)."""
    data = text.encode("utf-8")
    char_at = np.zeros(len(data) + 1, dtype=np.int64)  # the character each byte belongs to
    position = 0
    for index, char in enumerate(text):
        width = len(char.encode("utf-8"))
        char_at[position : position + width] = index
        position += width
    char_at[len(data)] = len(text)
    spans: list[tuple[int, int]] = []
    start = 0
    for token in encoding.encode_ordinary(text):
        end = start + len(encoding.decode_single_token_bytes(token))
        last = int(char_at[end - 1]) + 1 if end > start else int(char_at[start])
        spans.append((int(char_at[start]), last))
        start = end
    return spans


class TokenBudget:
    """A tokens-per-minute bucket: a request waits until its tokens have accrued (a request larger than
    the whole budget waits for a full bucket, so it still goes)."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._level = float(per_minute)
        self._at = time.monotonic()
        self._lock = threading.Lock()

    def take(self, tokens: int) -> float:
        """Wait for `tokens`; returns the seconds waited."""
        if self.per_minute <= 0:
            return 0.0
        need = min(tokens, self.per_minute)
        waited = 0.0
        while True:
            with self._lock:
                now = time.monotonic()
                self._level = min(self.per_minute, self._level + (now - self._at) * self.per_minute / 60)
                self._at = now
                if self._level >= need:
                    self._level -= tokens
                    return waited
                pause = (need - self._level) * 60 / self.per_minute
            time.sleep(pause)
            waited += pause


@dataclass
class RemoteStats:
    requests: int = 0
    tokens: int = 0
    retries: int = 0
    truncated: int = 0


class RemoteModel:
    """The endpoint behind `encode`, probed once at start: a refused key or an unknown model stops here."""

    def __init__(self, spec: RemoteSpec) -> None:
        import httpx

        from streams.runtime import metrics  # prometheus_client: loaded where an endpoint is used

        self._metrics = metrics
        self.spec = spec
        self.pieces = Pieces(spec.tokenizer)
        self.stats = RemoteStats()
        headers = {"Authorization": f"Bearer {spec.api_key}"} if spec.api_key else {}
        self._client = httpx.Client(
            headers=headers,
            timeout=spec.timeout_s,
            limits=httpx.Limits(max_connections=spec.concurrency, max_keepalive_connections=spec.concurrency),
        )
        self._pool = ThreadPoolExecutor(max_workers=spec.concurrency, thread_name_prefix="embed-remote")
        self._budget = TokenBudget(spec.tokens_per_minute)
        self._stats_lock = threading.Lock()
        self.dimension = len(self._request([PROBE], self.pieces.lengths([PROBE]), probe=True)[0])
        if spec.dimensions and spec.dimensions != self.dimension:
            raise EmbeddingUnavailable(
                f"embedding endpoint {spec.endpoint}: model {spec.model!r} answers vectors of {self.dimension} "
                f"values, not the {spec.dimensions} expected (STREAMS_EMBED_DIMENSIONS, or the index's)"
            )

    def encode(self, texts: Sequence[str], **_: Any) -> np.ndarray:
        """Vectors of `texts` in order; a text past `max_tokens` is cut at it (the embedder windows it first
        where it asks for window means)."""
        texts = list(texts)
        lengths = self.pieces.lengths(texts)
        for index, n in enumerate(lengths):
            if n > self.spec.max_tokens:
                texts[index] = self.pieces.windows(texts[index], self.spec.max_tokens)[0]
                lengths[index] = self.pieces.lengths([texts[index]])[0]
                self.stats.truncated += 1
        batches = self._batches(lengths)
        results = self._pool.map(lambda b: self._request([texts[i] for i in b], [lengths[i] for i in b]), batches)
        rows: dict[int, list[float]] = {}
        for batch, vectors in zip(batches, results, strict=True):
            rows.update(zip(batch, vectors, strict=True))
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.asarray([rows[i] for i in range(len(texts))], dtype=np.float32)

    def _batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Consecutive texts, at most `batch_texts` and `batch_tokens` a request (a longer text goes alone)."""
        batches: list[list[int]] = []
        tokens = 0
        for index, n in enumerate(lengths):
            if batches and len(batches[-1]) < self.spec.batch_texts and tokens + n <= self.spec.batch_tokens:
                batches[-1].append(index)
                tokens += n
            else:
                batches.append([index])
                tokens = n
        return batches

    def _request(self, texts: list[str], lengths: list[int], probe: bool = False) -> list[list[float]]:
        import httpx

        tokens = sum(lengths)
        self._budget.take(tokens)
        body = {"model": self.spec.model, "input": texts, "encoding_format": "float"}
        for attempt in range(self.spec.retries + 1):
            started = time.perf_counter()
            wait: float | None = None
            try:
                response = self._client.post(self.spec.endpoint, json=body)
                outcome = str(response.status_code)
            except httpx.TimeoutException:
                response, outcome = None, "timeout"
            except httpx.TransportError:
                response, outcome = None, "unreachable"
            self._metrics.REMOTE_LATENCY.observe(time.perf_counter() - started)
            with self._stats_lock:
                self.stats.requests += 1
            if response is not None and response.status_code == 200:
                self._metrics.REMOTE_REQUESTS.labels("ok").inc()
                self._metrics.REMOTE_TOKENS.inc(tokens)
                with self._stats_lock:
                    self.stats.tokens += tokens
                return self._vectors(response, len(texts))
            self._metrics.REMOTE_REQUESTS.labels(outcome).inc()
            if response is not None and response.status_code not in (408, 409, 429) and response.status_code < 500:
                raise self._refusal(response, probe)
            if response is not None:
                wait = retry_after(response.headers.get("retry-after"))
            if attempt == self.spec.retries:
                break
            self._metrics.REMOTE_RETRIES.labels(outcome).inc()
            with self._stats_lock:
                self.stats.retries += 1
            most = min(self.spec.backoff_max_s, self.spec.backoff_s * 2**attempt)
            time.sleep(wait if wait is not None else random.uniform(0, most))  # full jitter
        error = EmbeddingUnavailable if probe else RemoteEmbeddingError
        raise error(f"embedding endpoint {self.spec.endpoint} failed {self.spec.retries + 1} times (last: {outcome})")

    def _vectors(self, response: Any, count: int) -> list[list[float]]:
        data = sorted(response.json()["data"], key=lambda item: item["index"])
        if len(data) != count:
            raise RemoteEmbeddingError(f"embedding endpoint answered {len(data)} vectors for {count} texts")
        return [item["embedding"] for item in data]

    def _refusal(self, response: Any, probe: bool) -> Exception:
        """A 4xx that retrying cannot mend, in one line: a refused key, an unknown model, a bad request."""
        try:
            error = response.json().get("error", {})
            message, code = str(error.get("message", ""))[:200], str(error.get("code", ""))
        except (ValueError, AttributeError):
            message, code = response.text[:200], ""
        where = f"embedding endpoint {self.spec.endpoint}"
        if response.status_code in (401, 403):
            return EmbeddingUnavailable(
                f"{where} refused the API key ({response.status_code}): set STREAMS_EMBED_API_KEY"
            )
        if response.status_code == 404 or code == "model_not_found":
            return EmbeddingUnavailable(
                f"{where} does not serve model {self.spec.model!r} ({response.status_code}: {message})"
            )
        kind = EmbeddingUnavailable if probe else RemoteEmbeddingError
        return kind(f"{where} refused the request ({response.status_code}: {message})")

    def close(self) -> None:
        self._pool.shutdown(wait=False)
        self._client.close()


def retry_after(value: str | None) -> float | None:
    """A `Retry-After` header's seconds (a number, or an HTTP date), capped at a minute; None when absent."""
    if not value:
        return None
    try:
        return min(60.0, max(0.0, float(value)))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return min(60.0, max(0.0, when - time.time()))
