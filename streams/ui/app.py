"""`streams ui`: a web console over the running service (Starlette, Jinja2, a little plain JavaScript).

Pages: documents with their chunk boundaries drawn (one strategy or two side by side), a document's trace
through the bus (the same report as `streams status`), consumer lag and dead letters, search over the
vector store, and "try a file" (every strategy's chunks of an upload, offline, options editable). Every
asset ships in the package: no CDN, no build step.

Safe by default: loopback only unless a token is set, read-only unless started writable, Jinja escapes
every value (a document's `<script>` is text), uploads are size-limited.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import time
from pathlib import Path
from typing import Any

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from streams.core.chunkers import OPTIONS, STRATEGIES, ChunkingError
from streams.core.document import assemble
from streams.core.options import OptionsError, parse_assignments
from streams.core.publish import publish
from streams.ingest.files import IngestError
from streams.settings import ConfigError, Settings
from streams.strategies import build_chunker
from streams.ui.data import ConsoleData
from streams.ui.render import cuts_from_rows, layout

HERE = Path(__file__).parent
TOKEN_COOKIE = "streams_ui_token"
DEFAULT_PORT = 8765


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(settings: Settings, host: str) -> None:
    """A console reachable from other machines shows documents to whoever asks: it needs a token."""
    if not is_loopback(host) and not settings.ui_token:
        raise ConfigError(f"ui: binding to {host} (not loopback) needs a token: set STREAMS_UI_TOKEN")


class TokenGate(BaseHTTPMiddleware):
    """With a token set, every request carries it: `Authorization: Bearer`, `?token=` (which sets an
    HttpOnly cookie, so links keep working) or that cookie."""

    def __init__(self, app: Any, token: str) -> None:
        super().__init__(app)
        self.token = token

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        given = request.query_params.get("token") or request.cookies.get(TOKEN_COOKIE) or ""
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            given = auth[7:].strip()
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return PlainTextResponse("401: this console needs its token (?token=...)", status_code=401)
        response = await call_next(request)
        if request.query_params.get("token"):
            response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict")
        return response


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value not in (None, "") else default
    except ValueError:
        return default


def create_app(settings: Settings, data: ConsoleData | None = None, *, writable: bool | None = None) -> Starlette:
    data = data or ConsoleData(settings)
    writable = settings.ui_writable if writable is None else writable
    # Autoescape everything, explicitly: a document's text is data, never markup.
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True)
    templates = Jinja2Templates(env=env)
    templates.env.globals.update(writable=writable)

    def page(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        return templates.TemplateResponse(request, name, context, status_code=status_code)

    async def index(request: Request) -> Response:
        docs = await run_in_threadpool(data.document_list)
        return page(request, "index.html", documents=docs)

    async def document(request: Request) -> Response:
        doc_id = request.path_params["doc_id"]
        started = time.perf_counter()
        view = await run_in_threadpool(_document_view, data, doc_id, request.query_params)
        if view is None:
            return page(request, "message.html", 404, title="No such document", message=f"no pages of {doc_id!r}")
        return page(request, "document.html", **view, built_ms=round((time.perf_counter() - started) * 1000, 1))

    async def document_json(request: Request) -> Response:
        doc_id = request.path_params["doc_id"]
        view = await run_in_threadpool(_document_view, data, doc_id, request.query_params)
        if view is None or view["doc"] is None:
            return JSONResponse({"error": f"no complete version of {doc_id!r}"}, status_code=404)
        doc = view["doc"]
        return JSONResponse(
            {
                "doc_id": doc.doc_id,
                "amendment": doc.amendment_number,
                "text": doc.text,
                "page_map": [p.model_dump() for p in doc.page_map],
                "columns": [
                    {"strategy": c["strategy"], "chunks": [_public(r) for r in c["rows"]]} for c in view["columns"]
                ],
            }
        )

    async def trace(request: Request) -> Response:
        doc_id = request.path_params["doc_id"]
        strategies = await run_in_threadpool(data.strategies_of, doc_id)
        try:
            status = await run_in_threadpool(data.status, doc_id, strategies)
        except ValueError as exc:
            return page(request, "message.html", 404, title="No trace", message=str(exc))
        return page(request, "trace.html", doc_id=doc_id, status=status, strategies=strategies)

    async def chunk_json(request: Request) -> Response:
        row = await run_in_threadpool(data.chunk, request.path_params["chunk_id"])
        if row is None:
            return JSONResponse({"error": "no such chunk"}, status_code=404)
        return JSONResponse(_public(row))

    async def bus(request: Request) -> Response:
        lag = await run_in_threadpool(data.lag)
        letters = await run_in_threadpool(data.dead_letters)
        return page(request, "bus.html", lag=lag, letters=letters[:100], letter_count=len(letters))

    async def lag_json(request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(data.lag))

    async def letters_json(request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(data.dead_letters))

    async def search(request: Request) -> Response:
        question = request.query_params.get("q", "").strip()
        strategy = request.query_params.get("s") or None
        k = min(max(_int(request.query_params.get("k"), 5), 1), 50)
        # One filter per line (or several `f` parameters), as `streams search --filter`; `as`: a principal.
        filters = [f.strip() for raw in request.query_params.getlist("f") for f in raw.splitlines() if f.strip()]
        principal = request.query_params.get("as", "").strip() or None
        tenant = request.query_params.get("t", "").strip() or None  # required with tenancy on
        hits: list[dict[str, Any]] = []
        error = ""
        if question:
            try:
                hits = await run_in_threadpool(data.search, question, k, strategy, filters, principal, tenant)
            except Exception as exc:  # the vector store may not exist yet, or a filter is wrong: say so
                error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return page(
            request,
            "search.html",
            q=question,
            s=strategy or "",
            k=k,
            f="\n".join(filters),
            principal=principal or "",
            tenant=tenant or "",
            tenancy=bool(settings.tenant_key) and not settings.ui_tenant,
            hits=hits,
            error=error,
        )

    async def try_form(request: Request) -> Response:
        return page(request, "try.html", **_try_context(settings))

    async def try_post(request: Request) -> Response:
        limit = settings.ui_max_upload_bytes
        if _int(request.headers.get("content-length"), 0) > limit + 64_000:
            return _too_large(request, page, limit)
        form = await request.form(max_part_size=limit)
        upload = form.get("file")
        raw: bytes = b""
        filename = ""
        if upload is not None and hasattr(upload, "read"):
            raw = await upload.read(limit + 1)
            filename = upload.filename or ""
        if not raw:
            raw = str(form.get("text") or "").encode("utf-8")
            filename = str(form.get("name") or "pasted.md")
        if len(raw) > limit:
            return _too_large(request, page, limit)
        if not raw.strip():
            return page(
                request,
                "try.html",
                400,
                **_try_context(settings),
                error="nothing to chunk: upload a file or paste text",
            )
        fields = {str(k): str(v) for k, v in form.items() if isinstance(v, str)}
        result = await run_in_threadpool(_try_chunk, data, settings, filename, raw, fields)
        if form.get("publish") and result.get("pages"):
            if not writable:
                return page(
                    request,
                    "message.html",
                    403,
                    title="Read-only",
                    message="this console is read-only: start it with --writable to publish",
                )
            count = await run_in_threadpool(data.publish, result["pages"])
            result["published"] = count
        return page(request, "try.html", **_try_context(settings, fields), **result)

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    routes = [
        Route("/", index),
        Route("/doc/{doc_id:path}/trace", trace),
        Route("/doc/{doc_id:path}.json", document_json),
        Route("/doc/{doc_id:path}", document),
        Route("/api/chunk/{chunk_id:path}", chunk_json),
        Route("/api/lag", lag_json),
        Route("/api/dead-letters", letters_json),
        Route("/bus", bus),
        Route("/search", search),
        Route("/try", try_form, methods=["GET"]),
        Route("/try", try_post, methods=["POST"]),
        Route("/healthz", healthz),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    middleware = [Middleware(TokenGate, token=settings.secret("ui_token"))] if settings.ui_token else []
    app = Starlette(routes=routes, middleware=middleware)
    app.state.data = data
    return app


def _too_large(request: Request, page: Any, limit: int) -> Response:
    return page(
        request,
        "message.html",
        413,
        title="Too large",
        message=f"upload is over the limit of {limit:,} bytes (STREAMS_UI_MAX_UPLOAD_BYTES)",
    )


def _public(row: dict[str, Any]) -> dict[str, Any]:
    """A stored chunk as JSON: every field but the internal id."""
    out = {k: v for k, v in row.items() if k != "_id"}
    out.setdefault("chunk_id", row.get("_id"))
    return json.loads(json.dumps(out, default=str))


def _document_view(data: ConsoleData, doc_id: str, params: Any) -> dict[str, Any] | None:
    entry = data.entry(doc_id)
    if entry is None:
        return None
    amendments = sorted(entry.versions)
    amendment = _int(params.get("a"), amendments[-1])
    if amendment not in entry.versions:
        amendment = amendments[-1]
    doc = entry.assembled(amendment)
    strategies = data.strategies_of(doc_id)
    chosen = [s for s in (params.get("s"), params.get("s2")) if s]
    chosen = [s for s in dict.fromkeys(chosen) if s in strategies] or strategies[:1]
    columns = []
    for strategy in chosen:
        rows = data.chunks(doc_id, amendment, strategy)
        previous_hashes = None
        gone: list[dict[str, Any]] = []
        earlier = [a for a in amendments if a < amendment]
        if earlier:
            before = data.chunks(doc_id, earlier[-1], strategy)
            previous_hashes = {r.get("content_hash") for r in before}
            now = {r.get("content_hash") for r in rows}
            gone = [_public(r) for r in before if r.get("content_hash") not in now]
        cuts = cuts_from_rows(rows, previous_hashes)
        pieces = layout(doc.text, doc.page_map, cuts) if doc is not None else []
        columns.append(
            {
                "strategy": strategy,
                "rows": rows,
                "cuts": cuts,
                "pieces": pieces,
                "compared_to": earlier[-1] if earlier else None,
                "kept": sum(c.state == "kept" for c in cuts),
                "changed": sum(c.state == "changed" for c in cuts),
                "gone": gone,
                "version": rows[0].get("chunker_version", "") if rows else "",
            }
        )
    return {
        "entry": entry,
        "doc": doc,
        "doc_id": doc_id,
        "amendment": amendment,
        "amendments": amendments,
        "strategies": strategies,
        "columns": columns,
        "pages_received": len(entry.versions[amendment]),
        "page_count": entry.page_counts[amendment],
    }


def _try_context(settings: Settings, fields: dict[str, str] | None = None) -> dict[str, Any]:
    fields = fields or {}
    forms = []
    for name, model in OPTIONS.items():
        defaults = model().model_dump()
        forms.append(
            {
                "strategy": name,
                "enabled": fields.get(f"use.{name}", "on" if not fields else "") == "on",
                "options": [
                    {"name": o, "default": d, "value": fields.get(f"{name}.{o}", "")} for o, d in defaults.items()
                ],
            }
        )
    return {"forms": forms, "fields": fields, "max_upload": settings.ui_max_upload_bytes}


def _try_chunk(
    data: ConsoleData, settings: Settings, filename: str, raw: bytes, fields: dict[str, str]
) -> dict[str, Any]:
    """Every chosen strategy's chunks of one document, offline (the `streams chunk` path); an option
    that does not validate, or a strategy that refuses the document, is reported in its column."""

    try:
        pages = data.read_upload(filename, raw, fields.get("doc_type") or None)
    except (IngestError, ValueError) as exc:
        return {"error": f"cannot read {filename or 'the text'}: {exc}"}
    doc = assemble(pages)
    chosen = [s for s in STRATEGIES if fields.get(f"use.{s}") == "on"] or ["window"]
    columns = []
    for strategy in chosen:
        assignments = [
            f"{k.split('.', 1)[1]}={v}" for k, v in fields.items() if k.startswith(f"{strategy}.") and v.strip()
        ]
        column: dict[str, Any] = {"strategy": strategy, "error": "", "cuts": [], "pieces": [], "rows": []}
        started = time.perf_counter()
        try:
            chunker = build_chunker(strategy, settings, parse_assignments(strategy, assignments))
            published = publish(doc, chunker)  # what the workers would publish for it
        except (OptionsError, ChunkingError, ValueError) as exc:
            column["error"] = str(exc).splitlines()[0]
            columns.append(column)
            continue
        if not published.applicable:
            column["error"] = f"not applicable: {published.skipped}"
            columns.append(column)
            continue
        records = published.records
        rows = [r.model_dump(mode="json") for r in records]
        column["rows"] = rows
        column["cuts"] = cuts_from_rows(rows)
        column["pieces"] = layout(doc.text, doc.page_map, column["cuts"])
        column["seconds"] = round(time.perf_counter() - started, 2)
        column["version"] = chunker.version
        columns.append(column)
    return {"doc": doc, "pages": pages, "results": columns}


def serve(settings: Settings, host: str | None = None, port: int | None = None, on_ready: Any = None) -> None:
    """Run the console until interrupted (uvicorn, one process, no reloader)."""
    import uvicorn

    class QuietServer(uvicorn.Server):
        """uvicorn's housekeeping loop (the Date header, once a second, and the exit check) wakes every
        0.1 s; here once a second, the header's own pace, so an idle console all but sleeps (figures:
        docs/benchmarks.md, Idle). An interrupt is noticed within that second."""

        async def main_loop(self) -> None:
            counter = 0
            while not await self.on_tick(counter):
                counter = (counter + 10) % 864000  # on_tick refreshes the header when counter % 10 == 0
                await asyncio.sleep(1.0)

    host = host or settings.ui_host
    port = port if port is not None else (settings.ui_port or DEFAULT_PORT)
    check_bind(settings, host)
    config = uvicorn.Config(create_app(settings), host=host, port=port, log_level="warning", access_log=False)
    server = QuietServer(config)
    if on_ready is not None:
        on_ready(f"http://{host}:{port}/")
    server.run()
