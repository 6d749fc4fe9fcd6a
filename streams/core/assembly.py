"""Page assembly as a pure state machine over two key-value maps (faust tables in production).

A document version (doc_id, amendment) is complete when pages 1..page_count are all present. Arrival
order does not matter; an identical duplicate is a no-op. Everything that cannot complete goes out as a
`Dead` outcome carrying the original bytes of every page, so nothing is dropped silently. The clock is a
parameter (`now_ms`), which keeps this module deterministic and testable.
"""

from __future__ import annotations

import json
import re
from collections.abc import MutableMapping
from dataclasses import dataclass, field

from pydantic import ValidationError

from streams.core.document import assemble
from streams.core.events import AssembledDocument, PageEvent
from streams.core.metadata import MetadataError, check_size, merged
from streams.core.sealed import Shredded, is_sealed
from streams.core.tenancy import TenantError, qualify, tenant_of

SEP = "\x1f"


@dataclass(frozen=True)
class Limits:
    max_page_bytes: int = 2_000_000
    max_pages: int = 5_000
    max_document_bytes: int = 16_000_000
    max_pending_bytes: int = 256_000_000
    timeout_ms: int = 300_000
    #: How long a finished or dead document's header is kept to recognise late duplicates.
    retention_ms: int = 3_600_000


class BadInput(ValueError):
    """Input that cannot become a page; `code` is a stable machine-readable reason."""

    def __init__(self, code: str, reason: str, doc_id: str | None = None) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.doc_id = doc_id


@dataclass(frozen=True)
class Completed:
    document: AssembledDocument
    pages: list[bytes] = field(default_factory=list)  # its pages as they arrived: dead letters if it cannot be sent


@dataclass(frozen=True)
class Dead:
    code: str
    reason: str
    doc_id: str | None
    pages: list[bytes] = field(default_factory=list)


Outcome = Completed | Dead


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _check_depth(raw: bytes, limit: int = 64) -> None:
    """Reject JSON nested deeper than any page event needs, before the parser recurses into it."""
    if raw.count(b"{") + raw.count(b"[") <= limit:
        return  # nesting cannot go deeper than the number of openers: no need to walk the bytes
    depth = 0
    in_string = escaped = False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x7B, 0x5B):
            depth += 1
            if depth > limit:
                raise BadInput("json_too_deep", f"JSON nesting deeper than {limit} levels")
        elif byte in (0x7D, 0x5D):
            depth -= 1


def parse_page(
    raw: bytes, decode_avro=None, max_bytes: int = 2_000_000, tenant_key: str = "", unseal=None
) -> PageEvent:
    """Bytes (JSON, or Avro when `decode_avro` is given) to a validated page, or BadInput.

    With `tenant_key` (tenancy on) the page's tenant is its metadata's value under that key, and its
    `doc_id` the qualified `tenant#doc_id` (streams.core.tenancy); a page without one is refused. A page
    sealed with its document's key (streams.core.sealed) is opened by `unseal` first; Shredded, when its
    document was purged, is not BadInput: nothing is wrong with it, and nothing of it can be read."""
    if raw is None or len(raw) == 0:
        raise BadInput("empty_message", "message has no value")
    if len(raw) > max_bytes:
        raise BadInput("page_too_large", f"page message is {len(raw)} bytes, over the {max_bytes}-byte limit")
    if is_sealed(raw):
        if unseal is None:
            raise BadInput("sealed_page", "page is sealed with a document key and STREAMS_DOCUMENT_KEYS is off here")
        raw = unseal(raw)
    is_avro = decode_avro is not None and raw[:1] in (b"\x00", b"\xc3")
    if is_avro:
        try:
            data = decode_avro(raw)
        except ValueError as exc:
            raise BadInput("invalid_avro", f"page is not a readable Avro record: {exc}") from exc
    else:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadInput(
                "invalid_utf8",
                f"page is not valid UTF-8 at byte {exc.start} (declare and convert the encoding upstream)",
            ) from exc
        _check_depth(raw)
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise BadInput("invalid_json", f"page is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise BadInput("invalid_page_event", f"page event must be a JSON object, got {type(data).__name__}")
    try:  # JSON may smuggle lone surrogates (\ud800) that no UTF-8 consumer downstream can encode
        # Valid UTF-8 holds no surrogate, so JSON text can only carry one as a \u escape.
        if is_avro or _SURROGATE_ESCAPE.search(raw):
            json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        doc_id = data.get("doc_id") if isinstance(data.get("doc_id"), str) else None
        raise BadInput("invalid_text", f"text contains an unencodable character ({exc.reason})", doc_id) from exc
    except (ValueError, RecursionError) as exc:
        raise BadInput("invalid_page_event", f"page event cannot be re-encoded: {exc}") from exc
    doc_id = data.get("doc_id") if isinstance(data.get("doc_id"), str) else None
    data.pop("tenant", None)  # only the metadata key names a tenant
    try:
        page = PageEvent.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "event"
        # The metadata contract's own message names the key and why (streams.core.metadata).
        code = "invalid_metadata" if first["loc"][:1] == ("metadata",) else "invalid_page_event"
        raise BadInput(code, f"{where}: {first['msg']} ({exc.error_count()} error(s))", doc_id) from exc
    if page.page_number > page.page_count:
        raise BadInput(
            "page_out_of_range",
            f"page_number {page.page_number} is beyond page_count {page.page_count}",
            page.doc_id,
        )
    if tenant_key:
        try:
            tenant = tenant_of(page.metadata, tenant_key)
        except TenantError as exc:
            raise BadInput(exc.code, str(exc), page.doc_id) from exc
        page = page.model_copy(update={"doc_id": qualify(tenant, page.doc_id), "tenant": tenant})
    return page


def _has_content(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


class Assembler:
    """Collects pages per document version in `headers` (JSON) and `pages` (raw bytes) maps.

    Which pages of an open document arrived is the set of its stored page keys, and nothing else: the
    two maps recover from separate changelogs, so a page count kept in the header could fall behind the
    stored pages after a rebalance (a document waiting forever) or run ahead of them (a document completed
    with a page missing). An open document's header is written once, by its first page; the count and
    bytes of its stored pages are a per-process cache, rebuilt from the page map after every assignment.
    """

    def __init__(
        self,
        headers: MutableMapping[str, bytes],
        pages: MutableMapping[str, bytes],
        limits: Limits | None = None,
        decode_avro=None,
        tenant_key: str = "",
        unseal=None,
    ) -> None:
        """`tenant_key`: the metadata key that names each page's tenant (tenancy on), or ""; `unseal`
        opens a page sealed with its document's key (streams.runtime.keyring)."""
        self.tenant_key = tenant_key
        self.unseal = unseal
        self.purged = 0  # pages of purged documents seen (sealed, and their key gone)
        self.headers = headers
        self.pages = pages
        self.limits = limits or Limits()
        self.decode_avro = decode_avro
        self._pending: int | None = None
        self._stored: dict[str, list[int]] = {}  # doc key -> [pages stored, their bytes]

    # -- state helpers -------------------------------------------------------------------------
    def _parse(self, raw: bytes) -> PageEvent:
        return parse_page(raw, self.decode_avro, self.limits.max_page_bytes, self.tenant_key, self.unseal)

    @staticmethod
    def doc_key(doc_id: str, amendment: int) -> str:
        return f"{doc_id}{SEP}{amendment}"

    @staticmethod
    def page_key(doc_key: str, page_number: int) -> str:
        return f"{doc_key}{SEP}{page_number}"

    def _header(self, key: str) -> dict | None:
        raw = self.headers.get(key)
        return json.loads(raw) if raw else None

    def _put_header(self, key: str, header: dict) -> None:
        self.headers[key] = json.dumps(header, sort_keys=True).encode()

    def _stored_for(self, key: str, page_count: int) -> list[int]:
        """The cached [count, bytes] of an open document's stored pages, counted from the map on first use."""
        stored = self._stored.get(key)
        if stored is None:
            stored = self._stored[key] = [0, 0]
            for number in range(1, page_count + 1):
                raw = self.pages.get(self.page_key(key, number))
                if raw is not None:
                    stored[0] += 1
                    stored[1] += len(raw)
        return stored

    def _take_pages(self, key: str, header: dict) -> list[bytes]:
        """Remove a finished or dead document's stored pages, and their bytes from the running total."""
        self._stored.pop(key, None)
        out = []
        for number in range(1, header.get("page_count", 0) + 1):
            pkey = self.page_key(key, number)
            raw = self.pages.get(pkey)
            if raw is not None:
                out.append(raw)
                del self.pages[pkey]
        if self._pending is not None:
            self._pending -= sum(map(len, out))
        return out

    def _kill(self, key: str, header: dict, code: str, reason: str, extra: list[bytes], now_ms: int) -> Dead:
        pages = self._take_pages(key, header) + extra
        self._put_header(
            key, {"state": "dead", "code": code, "updated_ms": now_ms, "partition": header.get("partition")}
        )
        return Dead(code, reason, header.get("doc_id"), pages)

    def pending_bytes(self) -> int:
        """Bytes of incomplete documents (every stored page is one): scanned once, then a running total."""
        if self._pending is None:
            self._pending = sum(len(raw) for raw in self.pages.values())
        return self._pending

    def forget_cached(self) -> None:
        """A rebalance moved documents in or out of the maps: rebuild the counts and the total from them."""
        self._pending = None
        self._stored.clear()

    # -- events --------------------------------------------------------------------------------
    def on_page(self, raw: bytes, partition: int = 0, now_ms: int = 0, redriven: bool = False) -> list[Outcome]:
        """`redriven`: the page is a dead letter sent back (streams.runtime.redrive); a document that was
        dead-lettered starts again from it instead of refusing it as a late page. A page of a purged document
        gives nothing: its pages already stored stay sealed until the timeout sweeps them."""
        try:
            return self._on_page(raw, partition, now_ms, redriven)
        except Shredded:
            self.purged += 1
            return []

    def _on_page(self, raw: bytes, partition: int, now_ms: int, redriven: bool) -> list[Outcome]:
        try:
            page = self._parse(raw)
        except BadInput as exc:
            return [Dead(exc.code, exc.reason, exc.doc_id, [raw])]
        if page.page_count > self.limits.max_pages:
            return [
                Dead(
                    "document_too_large",
                    f"page_count {page.page_count} is over the {self.limits.max_pages}-page limit",
                    page.doc_id,
                    [raw],
                )
            ]
        key = self.doc_key(page.doc_id, page.amendment_number)
        header = self._header(key)
        if header is not None and header["state"] == "dead" and redriven:
            del self.headers[key]  # its pages went out with its dead letters, and come back the same way
            header = None
        if header is not None and header["state"] == "dead":
            return [
                Dead(
                    header["code"],
                    f"document was already dead-lettered ({header['code']}); late page {page.page_number}",
                    page.doc_id,
                    [raw],
                )
            ]
        if header is not None and header["state"] == "done":
            if header.get("digests", {}).get(str(page.page_number)) == _digest(page):
                return []
            return [
                Dead(
                    "conflicting_duplicate",
                    f"page {page.page_number} differs from the one already assembled",
                    page.doc_id,
                    [raw],
                )
            ]
        header_is_new = header is None
        if header is None:
            header = {
                "state": "open",
                "doc_id": page.doc_id,
                "page_count": page.page_count,
                "first_ms": now_ms,
                "partition": partition,
            }
        if page.page_count != header["page_count"]:
            return [
                self._kill(
                    key,
                    header,
                    "page_count_changed",
                    f"page {page.page_number} says page_count {page.page_count}, "
                    f"earlier pages said {header['page_count']}",
                    [raw],
                    now_ms,
                )
            ]
        pkey = self.page_key(key, page.page_number)
        stored_raw = self.pages.get(pkey)
        if stored_raw is not None:
            if _digest(self._parse(stored_raw)) == _digest(page):
                return []
            return [
                self._kill(
                    key,
                    header,
                    "conflicting_duplicate",
                    f"page {page.page_number} arrived twice with different content",
                    [raw],
                    now_ms,
                )
            ]
        stored = self._stored_for(key, page.page_count)
        if stored[1] + len(raw) > self.limits.max_document_bytes:
            return [
                self._kill(
                    key,
                    header,
                    "document_too_large",
                    f"document is over the {self.limits.max_document_bytes}-byte limit",
                    [raw],
                    now_ms,
                )
            ]
        if stored[0] + 1 < page.page_count:
            if self._pending is not None:
                self._pending += len(raw)
            self.pages[pkey] = raw
            stored[0] += 1
            stored[1] += len(raw)
            if header_is_new:  # the only write of an open header (see the class docstring)
                self._put_header(key, header)
            if self.pending_bytes() > self.limits.max_pending_bytes:
                return self._evict_oldest(now_ms)
            return []
        return [self._complete(key, header, page, raw, now_ms)]

    def _complete(self, key: str, header: dict, last: PageEvent, last_raw: bytes, now_ms: int) -> Outcome:
        # The page that completes a document is never stored: one table write and one tombstone fewer
        # per document, none at all for a single page.
        raws = self._take_pages(key, header)
        pages = [self._parse(r) for r in raws] + [last]
        raws.append(last_raw)
        done = {
            "state": "done",
            "digests": {str(p.page_number): _digest(p) for p in pages},
            "updated_ms": now_ms,
            "partition": header["partition"],
        }
        self._put_header(key, done)
        if not any(_has_content(p.text) for p in pages):
            return Dead("empty_document", "every page is empty or has no letters or digits", header["doc_id"], raws)
        try:  # each page's metadata is within the limit; their union may not be
            check_size(merged(p.metadata for p in pages), what="the document's metadata from all its pages")
        except MetadataError as exc:
            return Dead("metadata_too_large", str(exc), header["doc_id"], raws)
        return Completed(assemble(pages, first_page_ms=header["first_ms"], completed_ms=now_ms), raws)

    def _evict_oldest(self, now_ms: int) -> list[Outcome]:
        """Dead-letter the oldest incomplete documents until the pending bytes are within the limit again.

        One eviction per page is not enough when pages differ in size: a page larger than the oldest
        document would leave the total over the limit, and the excess could keep growing.
        """
        headers = ((k, json.loads(v)) for k, v in self.headers.items())
        open_docs = sorted((h["first_ms"], k) for k, h in headers if h.get("state") == "open")
        outcomes: list[Outcome] = []
        for _, key in open_docs:
            if self.pending_bytes() <= self.limits.max_pending_bytes:
                break
            header = self._header(key)
            assert header is not None
            outcomes.append(
                self._kill(
                    key,
                    header,
                    "assembly_capacity",
                    f"pending pages over the {self.limits.max_pending_bytes}-byte limit; "
                    "oldest incomplete document evicted",
                    [],
                    now_ms,
                )
            )
        return outcomes

    def on_tick(self, partition: int | None = None, now_ms: int = 0) -> list[Outcome]:
        """Expire incomplete documents past the timeout and forget old finished headers."""
        outcomes: list[Outcome] = []
        for key, raw in list(self.headers.items()):  # a copy: expiring deletes and rewrites headers
            header = json.loads(raw)
            if partition is not None and header.get("partition") != partition:
                continue
            key = key.decode() if isinstance(key, bytes) else key
            age = now_ms - header.get("updated_ms", 0)
            if header["state"] == "open" and now_ms - header["first_ms"] > self.limits.timeout_ms:
                missing = [n for n in range(1, header["page_count"] + 1) if self.page_key(key, n) not in self.pages]
                shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
                outcomes.append(
                    self._kill(
                        key,
                        header,
                        "incomplete_timeout",
                        f"incomplete after {self.limits.timeout_ms} ms; missing pages {shown}",
                        [],
                        now_ms,
                    )
                )
            elif header["state"] in ("done", "dead") and age > self.limits.retention_ms:
                del self.headers[key]
        return outcomes


def _digest(page: PageEvent) -> str:
    import hashlib

    return hashlib.sha256(page.model_dump_json().encode()).hexdigest()[:32]
