"""An in-memory HTTP double of Pinecone's data plane, so the real client is tested without Docker.

It follows the REST shapes the `pinecone` client sends and decodes (camelCase bodies,
`Api-Key` auth, `X-Pinecone-Api-Version`), and mimics the server rules a target can trip
on: fixed dimension, metadata value types, null metadata stripped, numbers returned as
floats, 100 ids per list page, 1000 vectors or ids per write. Every authorised request is
recorded in `state.calls` so tests can count round trips.

Served paths: POST /vectors/upsert, /vectors/update, /vectors/delete, /query,
/describe_index_stats; GET /vectors/fetch, /vectors/list; and, for clients that resolve an
index by name, GET /indexes and /indexes/{name} (control plane, minimal shape).
"""

from __future__ import annotations

import base64
import json
import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

DEFAULT_NAMESPACE = "__default__"
MAX_VECTORS_PER_UPSERT = 1000
MAX_IDS_PER_DELETE = 1000
MAX_IDS_PER_FETCH = 1000
LIST_LIMIT_MAX = 100
TOP_K_MAX = 10_000


class ApiFailure(Exception):
    """An error the double answers with, in Pinecone's `{"error": {...}, "status": n}` shape."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def bad_request(message: str) -> ApiFailure:
    return ApiFailure(400, "INVALID_ARGUMENT", message)


@dataclass
class Call:
    method: str
    path: str
    body: dict[str, Any] | None
    query: dict[str, list[str]]
    headers: dict[str, str]


@dataclass
class DoubleState:
    """What the double holds; tests read it and may flip the knobs.

    `dimension=None` fixes the dimension on the first upsert, as if the index had been created
    for it; set it to pin one. `update_missing_status` is what a by-id update of an unknown id
    answers (Pinecone documents no error for it; 404 lets a test exercise the other branch).
    """

    api_key: str
    dimension: int | None = None
    index_name: str = "streams-test"
    update_missing_status: int = 200
    namespaces: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    unauthorized: int = 0
    lock: threading.RLock = field(default_factory=threading.RLock)
    host: str = ""

    def calls_to(self, path: str, method: str | None = None) -> list[Call]:
        with self.lock:
            return [c for c in self.calls if c.path == path and (method is None or c.method == method)]

    def vectors(self, namespace: str) -> dict[str, dict[str, Any]]:
        """A copy of one namespace, keyed by id: `{"id", "values", "metadata"}`."""
        with self.lock:
            return json.loads(json.dumps(self.namespaces.get(namespace or DEFAULT_NAMESPACE, {})))

    def reset(self) -> None:
        with self.lock:
            self.namespaces.clear()
            self.calls.clear()
            self.unauthorized = 0


# --- metadata and filters -------------------------------------------------------------------


#: Pinecone's limit on one vector's metadata.
MAX_METADATA_BYTES = 40960


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def clean_metadata(metadata: Any) -> dict[str, Any]:
    """Pinecone's write rule: str, number, bool or list of str; null is stripped; numbers become floats."""
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise bad_request("metadata must be an object")
    clean: dict[str, Any] = {}
    for key, value in metadata.items():
        if value is None:
            continue
        if isinstance(value, bool | str):
            clean[key] = value
        elif _is_number(value):
            if not math.isfinite(value):
                raise bad_request(f"Metadata value for field '{key}' must be a finite number")
            clean[key] = float(value)
        elif isinstance(value, list) and all(isinstance(item, str) for item in value):
            clean[key] = list(value)
        else:
            raise bad_request(
                "Metadata value must be a string, number, boolean or list of strings, "
                f"got '{json.dumps(value)}' for field '{key}'"
            )
    size = len(json.dumps(clean, separators=(",", ":")).encode())
    if size > MAX_METADATA_BYTES:
        raise bad_request(
            f"Metadata size is {size} bytes, which exceeds the limit of {MAX_METADATA_BYTES} bytes per vector"
        )
    return clean


def _same(stored: Any, wanted: Any) -> bool:
    if _is_number(stored) and _is_number(wanted):
        return float(stored) == float(wanted)
    return type(stored) is type(wanted) and stored == wanted


def _contains(stored: Any, wanted: Any) -> bool:
    """Equality, where a list-valued field matches when any element matches (Pinecone's rule)."""
    if isinstance(stored, list):
        return any(_same(item, wanted) for item in stored)
    return _same(stored, wanted)


def _compare(op: str, stored: Any, operand: Any) -> bool:
    if not _is_number(operand):
        raise bad_request(f"{op} operator must be applied to a number")
    if not _is_number(stored):
        return False
    a, b = float(stored), float(operand)
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def _field_matches(metadata: dict[str, Any], name: str, condition: Any) -> bool:
    present = name in metadata
    stored = metadata.get(name)
    if not isinstance(condition, dict):  # {"field": value} is shorthand for $eq
        condition = {"$eq": condition}
    if not condition:
        raise bad_request(f"empty condition for field '{name}'")
    for op, operand in condition.items():
        if op == "$eq":
            ok = present and _contains(stored, operand)
        elif op == "$ne":
            ok = not (present and _contains(stored, operand))
        elif op in ("$in", "$nin"):
            if not isinstance(operand, list):
                raise bad_request(f"{op} operator must be applied to an array")
            hit = present and any(_contains(stored, item) for item in operand)
            ok = hit if op == "$in" else not hit
        elif op in ("$gt", "$gte", "$lt", "$lte"):
            ok = present and _compare(op, stored, operand)
        elif op == "$exists":
            if not isinstance(operand, bool):
                raise bad_request("$exists operator must be applied to a boolean")
            ok = present is operand
        else:
            raise bad_request(f"unsupported filter operator '{op}' for field '{name}'")
        if not ok:
            return False
    return True


def matches_filter(metadata: dict[str, Any], flt: Any) -> bool:
    """Evaluate a Pinecone metadata filter: fields, `$eq/$ne/$in/$nin/$gt.../$exists`, `$and/$or`."""
    if flt is None:
        return True
    if not isinstance(flt, dict):
        raise bad_request("filter must be an object")
    for key, value in flt.items():
        if key in ("$and", "$or"):
            if not isinstance(value, list) or not value:
                raise bad_request(f"{key} operator must be applied to a non-empty array")
            results = [matches_filter(metadata, sub) for sub in value]
            if not (all(results) if key == "$and" else any(results)):
                return False
        elif key.startswith("$"):
            raise bad_request(f"unsupported top-level filter operator '{key}'")
        elif not _field_matches(metadata, key, value):
            return False
    return True


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


# --- the index ------------------------------------------------------------------------------


class PineconeIndexDouble:
    """The operations, on `DoubleState`, returning response bodies or raising `ApiFailure`."""

    def __init__(self, state: DoubleState) -> None:
        self.state = state

    def _ns(self, body_or_query: Any) -> str:
        name = body_or_query or ""
        if not isinstance(name, str):
            raise bad_request("namespace must be a string")
        return name or DEFAULT_NAMESPACE

    def _values(self, values: Any, what: str, dimension: int | None = None) -> list[float]:
        if not isinstance(values, list) or not all(_is_number(v) for v in values):
            raise bad_request(f"{what} values must be an array of numbers")
        dim = dimension if dimension is not None else self.state.dimension
        if dim is not None and len(values) != dim:
            raise bad_request(f"Vector dimension {len(values)} does not match the dimension of the index {dim}")
        return [float(v) for v in values]

    def upsert(self, body: dict[str, Any]) -> dict[str, Any]:
        vectors = body.get("vectors")
        if not isinstance(vectors, list) or not vectors:
            raise bad_request("vectors must be a non-empty array")
        if len(vectors) > MAX_VECTORS_PER_UPSERT:
            raise bad_request(f"A request can upsert at most {MAX_VECTORS_PER_UPSERT} vectors")
        ns = self._ns(body.get("namespace"))
        dimension = self.state.dimension
        prepared: list[dict[str, Any]] = []
        for vector in vectors:
            if not isinstance(vector, dict) or not isinstance(vector.get("id"), str) or not vector["id"]:
                raise bad_request("each vector needs a non-empty string id")
            values = self._values(vector.get("values"), f"vector {vector['id']}", dimension)
            dimension = len(values)  # the first upsert fixes an unset dimension
            prepared.append({"id": vector["id"], "values": values, "metadata": clean_metadata(vector.get("metadata"))})
        self.state.dimension = dimension
        store = self.state.namespaces.setdefault(ns, {})
        for vector in prepared:  # a batch is all-or-nothing: validated above, written here
            store[vector["id"]] = vector
        return {"upsertedCount": len(prepared)}

    def update(self, body: dict[str, Any]) -> dict[str, Any]:
        ns = self._ns(body.get("namespace"))
        store = self.state.namespaces.get(ns, {})
        set_metadata = body.get("setMetadata")
        if "filter" in body:
            if "values" in body or "sparseValues" in body:
                raise bad_request("an update by filter can only set metadata")
            patch = clean_metadata(set_metadata)
            hits = [v for v in store.values() if matches_filter(v["metadata"], body["filter"])]
            if not body.get("dryRun"):
                for vector in hits:
                    vector["metadata"].update(patch)
            return {"matchedRecords": len(hits)}
        vector_id = body.get("id")
        if not isinstance(vector_id, str) or not vector_id:
            raise bad_request("update needs an id or a filter")
        vector = store.get(vector_id)
        if vector is None:
            if self.state.update_missing_status == 404:
                raise ApiFailure(404, "NOT_FOUND", f"Vector ID {vector_id} not found")
            return {}
        values = self._values(body["values"], vector_id) if "values" in body else None
        patch = clean_metadata(set_metadata)
        if values is not None:
            vector["values"] = values
        vector["metadata"].update(patch)
        return {}

    def delete(self, body: dict[str, Any]) -> dict[str, Any]:
        ns = self._ns(body.get("namespace"))
        store = self.state.namespaces.get(ns, {})
        ids, delete_all, flt = body.get("ids"), body.get("deleteAll"), body.get("filter")
        if sum(x is not None and x is not False for x in (ids, delete_all, flt)) != 1:
            raise bad_request("exactly one of ids, deleteAll or filter is required")
        if ids is not None:
            if not isinstance(ids, list) or len(ids) > MAX_IDS_PER_DELETE:
                raise bad_request(f"ids must be an array of at most {MAX_IDS_PER_DELETE} ids")
            for vector_id in ids:
                store.pop(vector_id, None)
        elif delete_all:
            store.clear()
        else:
            for vector_id in [v["id"] for v in store.values() if matches_filter(v["metadata"], flt)]:
                del store[vector_id]
        if not store:
            self.state.namespaces.pop(ns, None)
        return {}

    def fetch(self, query: dict[str, list[str]]) -> dict[str, Any]:
        ids = query.get("ids", [])
        if not ids:
            raise bad_request("ids must be provided")
        if len(ids) > MAX_IDS_PER_FETCH:
            raise bad_request(f"at most {MAX_IDS_PER_FETCH} ids per fetch")
        raw_ns = query.get("namespace", [""])[0]
        store = self.state.namespaces.get(self._ns(raw_ns), {})
        found = {i: json.loads(json.dumps(store[i])) for i in ids if i in store}
        return {"vectors": found, "namespace": raw_ns, "usage": {"readUnits": 1}}

    def list_ids(self, query: dict[str, list[str]]) -> dict[str, Any]:
        raw_ns = query.get("namespace", [""])[0]
        prefix = query.get("prefix", [""])[0]
        try:
            limit = int(query.get("limit", [str(LIST_LIMIT_MAX)])[0])
        except ValueError:
            raise bad_request("limit must be an integer") from None
        if not 1 <= limit <= LIST_LIMIT_MAX:
            raise bad_request(f"limit must be between 1 and {LIST_LIMIT_MAX}")
        after = ""
        token = query.get("paginationToken", [None])[0]
        if token:
            try:
                after = json.loads(base64.urlsafe_b64decode(token.encode()))["after"]
            except (ValueError, KeyError, TypeError):
                raise bad_request("invalid pagination token") from None
        store = self.state.namespaces.get(self._ns(raw_ns), {})
        ids = sorted(i for i in store if i.startswith(prefix) and i > after)
        page, rest = ids[:limit], ids[limit:]
        response: dict[str, Any] = {
            "vectors": [{"id": i} for i in page],
            "namespace": raw_ns,
            "usage": {"readUnits": 1},
        }
        if rest:
            next_token = base64.urlsafe_b64encode(json.dumps({"after": page[-1]}).encode()).decode()
            response["pagination"] = {"next": next_token}
        return response

    def query(self, body: dict[str, Any]) -> dict[str, Any]:
        top_k = body.get("topK")
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= TOP_K_MAX:
            raise bad_request(f"topK must be an integer between 1 and {TOP_K_MAX}")
        ns_raw = body.get("namespace", "")
        store = self.state.namespaces.get(self._ns(ns_raw), {})
        if "vector" in body and "id" in body:
            raise bad_request("cannot query by both vector and id")
        if "id" in body:
            stored = store.get(body["id"])
            if stored is None:
                return {"matches": [], "namespace": ns_raw, "usage": {"readUnits": 1}}
            vector = stored["values"]
        elif "vector" in body:
            vector = self._values(body["vector"], "query")
        else:
            raise bad_request("a query needs a vector or an id")
        flt = body.get("filter")
        candidates = [v for v in store.values() if matches_filter(v["metadata"], flt)]
        scored = sorted(
            ((cosine(vector, v["values"]), v) for v in candidates), key=lambda pair: (-pair[0], pair[1]["id"])
        )[:top_k]
        matches = []
        for score, v in scored:
            match: dict[str, Any] = {"id": v["id"], "score": score, "values": []}
            if body.get("includeValues"):
                match["values"] = list(v["values"])
            if body.get("includeMetadata"):
                match["metadata"] = dict(v["metadata"])
            matches.append(match)
        return {"matches": matches, "namespace": ns_raw, "usage": {"readUnits": 5}}

    def describe_index_stats(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("filter"):
            raise bad_request("describe_index_stats does not support filtering on this index")
        namespaces = {ns: {"vectorCount": len(vs)} for ns, vs in self.state.namespaces.items() if vs}
        return {
            "namespaces": namespaces,
            "dimension": self.state.dimension or 0,
            "indexFullness": 0.0,
            "totalVectorCount": sum(n["vectorCount"] for n in namespaces.values()),
            "metric": "cosine",
            "vectorType": "dense",
        }

    def describe_index(self) -> dict[str, Any]:
        """Both the 2026 schema shape and the older top-level dimension/metric/spec shape."""
        dimension = self.state.dimension or 0
        return {
            "name": self.state.index_name,
            "host": self.state.host,
            "status": {"ready": True, "state": "Ready"},
            "schema": {"fields": {"values": {"type": "dense_vector", "dimension": dimension, "metric": "cosine"}}},
            "deployment": {"deployment_type": "managed", "cloud": "aws", "region": "us-east-1"},
            "deletion_protection": "disabled",
            "dimension": dimension,
            "metric": "cosine",
            "vector_type": "dense",
            "spec": {"serverless": {"cloud": "aws", "region": "us-east-1"}},
        }


# --- HTTP -----------------------------------------------------------------------------------


def _make_handler(state: DoubleState) -> type[BaseHTTPRequestHandler]:
    index = PineconeIndexDouble(state)
    posts = {
        "/vectors/upsert": index.upsert,
        "/vectors/update": index.update,
        "/vectors/delete": index.delete,
        "/query": index.query,
        "/describe_index_stats": index.describe_index_stats,
    }
    gets = {"/vectors/fetch": index.fetch, "/vectors/list": index.list_ids}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, like the client's pooled connections expect

        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            return

        def _reply(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-pinecone-request-id", f"double-{len(state.calls)}")
            self.end_headers()
            self.wfile.write(data)

        def _fail(self, failure: ApiFailure) -> None:
            self._reply(
                failure.status,
                {"error": {"code": failure.code, "message": failure.message}, "status": failure.status},
            )

        def _body(self) -> dict[str, Any] | None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not raw:
                return None
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise bad_request("the request body must be a JSON object")
            return body

        def _handle(self, method: str) -> None:
            parts = urlsplit(self.path)
            try:
                body = self._body() if method == "POST" else None
            except (ValueError, ApiFailure) as exc:
                self._fail(exc if isinstance(exc, ApiFailure) else bad_request("malformed JSON body"))
                return
            if self.headers.get("Api-Key") != state.api_key:
                with state.lock:
                    state.unauthorized += 1
                self._fail(ApiFailure(401, "UNAUTHENTICATED", "Invalid API Key"))
                return
            query = parse_qs(parts.query, keep_blank_values=True)
            with state.lock:
                state.calls.append(Call(method, parts.path, body, query, dict(self.headers.items())))
                try:
                    payload = self._dispatch(method, parts.path, body or {}, query)
                except ApiFailure as failure:
                    self._fail(failure)
                    return
            self._reply(200, payload)

        def _dispatch(
            self, method: str, path: str, body: dict[str, Any], query: dict[str, list[str]]
        ) -> dict[str, Any]:
            if method == "POST" and path in posts:
                return posts[path](body)
            if method == "GET" and path in gets:
                return gets[path](query)
            if method == "GET" and path == "/indexes":
                return {"indexes": [index.describe_index()]}
            if method == "GET" and path.startswith("/indexes/"):
                if unquote(path.removeprefix("/indexes/")) != state.index_name:
                    raise ApiFailure(404, "NOT_FOUND", f"Resource {path} not found")
                return index.describe_index()
            raise ApiFailure(404, "NOT_FOUND", f"no route for {method} {path}")

        def do_GET(self) -> None:
            self._handle("GET")

        def do_POST(self) -> None:
            self._handle("POST")

    return Handler


@contextmanager
def serve_pinecone_double(
    api_key: str = "test-key-0123456789", dimension: int | None = None
) -> Iterator[tuple[str, str, DoubleState]]:
    """Run the double on a free 127.0.0.1 port in a daemon thread; yields (url, api_key, state)."""
    state = DoubleState(api_key=api_key, dimension=dimension)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(state))
    server.daemon_threads = True
    url = f"http://127.0.0.1:{server.server_address[1]}"
    state.host = url
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="pinecone-double", daemon=True
    )
    thread.start()
    try:
        yield url, api_key, state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
