"""Document keys, kept in MongoDB, and the codec that seals and opens records with them.

One key per document (its qualified doc id, streams.core.tenancy), made by the first process that seals a
record of it, read by every process that opens one. The keys live in the `keys` collection of the
deployment's MongoDB database, where a delete is a delete: a purge removes a document's key (or every
key of a tenant) and the sealed copies in every topic, changelog and dead letter can never be read again
(streams.core.sealed).

Each process keeps the keys it used for `STREAMS_KEY_CACHE_SECONDS`; a purge waits that long after
deleting the keys before it deletes rows and vectors, so that once it returns no process can open a
purged document's record, or write one back into a store.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from streams.codec.avro import AvroCodec
from streams.core.sealed import Shredded, envelope, is_sealed, new_key, open_sealed, seal
from streams.core.tenancy import qualify
from streams.runtime.clients import client_options
from streams.settings import Settings

KEYS_COLLECTION = "keys"


def _page_tenant(page: Mapping[str, Any], tenant_key: str) -> str:
    """The tenant a page's metadata names ("" for none, or one that is not a string: assembly refuses it)."""
    tenant = (page.get("metadata") or {}).get(tenant_key) if tenant_key else ""
    return tenant if isinstance(tenant, str) else ""


def _page_key_id(tenant_key: str) -> Callable[[Mapping[str, Any]], str | None]:
    """The key a page is sealed under: its document's qualified id, as assembly will name it."""

    def key_id(page: Mapping[str, Any]) -> str | None:
        return qualify(_page_tenant(page, tenant_key), str(page.get("doc_id") or "")) or None

    return key_id


def _doc_id(record: Mapping[str, Any]) -> str | None:
    return record.get("doc_id") or None


class KeyRing:
    """Get-or-create, read and delete document keys; each used key cached for `ttl_s`."""

    def __init__(self, collection: Any, ttl_s: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.collection = collection
        self.ttl_s = ttl_s
        self.clock = clock
        self._cache: dict[str, tuple[float, bytes, bytes]] = {}  # key id -> (fetched, generation, key)
        self._lock = threading.Lock()

    @classmethod
    def of(cls, settings: Settings) -> KeyRing:
        """The key ring of this deployment, one per process (one client, one cache, whoever asks)."""
        where = (settings.mongo_url, settings.mongo_database, settings.key_cache_seconds)
        with _RINGS_LOCK:
            if where not in _RINGS:
                from pymongo import MongoClient

                client: MongoClient = MongoClient(settings.mongo_url, **client_options(settings.mongo_url, 10_000))
                _RINGS[where] = cls(client[settings.mongo_database][KEYS_COLLECTION], settings.key_cache_seconds)
            return _RINGS[where]

    def _cached(self, key_id: str) -> tuple[bytes, bytes] | None:
        with self._lock:
            found = self._cache.get(key_id)
        if found is None or self.clock() - found[0] > self.ttl_s:
            return None
        return found[1], found[2]

    def _remember(self, key_id: str, gen: bytes, key: bytes) -> None:
        with self._lock:
            self._cache[key_id] = (self.clock(), gen, key)

    def key_for(self, key_id: str, tenant: str = "") -> tuple[bytes, bytes]:
        """The (generation, key) records of `key_id` are sealed with; made on first use, once for all."""
        found = self._cached(key_id)
        if found is not None:
            return found
        from pymongo import ReturnDocument
        from pymongo.errors import DuplicateKeyError

        gen, key = new_key()
        insert = {"gen": gen, "key": key, "tenant": tenant, "created_ms": int(time.time() * 1000)}
        try:
            doc = self.collection.find_one_and_update(
                {"_id": key_id}, {"$setOnInsert": insert}, upsert=True, return_document=ReturnDocument.AFTER
            )
        except DuplicateKeyError:  # another process made it at the same moment: theirs it is
            doc = self.collection.find_one({"_id": key_id})
        gen, key = bytes(doc["gen"]), bytes(doc["key"])
        self._remember(key_id, gen, key)
        return gen, key

    def seal(self, key_id: str, payload: bytes, tenant: str = "") -> bytes:
        gen, key = self.key_for(key_id, tenant)
        return seal(key_id, gen, key, payload)

    def open(self, raw: bytes) -> bytes:
        """The payload of a sealed record; Shredded when its document's key is gone."""
        try:
            key_id, gen = envelope(raw)
        except ValueError as exc:
            raise Shredded("?", str(exc)) from None
        found = self._cached(key_id)
        if found is None or found[0] != gen:
            doc = self.collection.find_one({"_id": key_id})
            if doc is None:
                raise Shredded(key_id)
            self._remember(key_id, bytes(doc["gen"]), bytes(doc["key"]))
            found = bytes(doc["gen"]), bytes(doc["key"])
        if found[0] != gen:
            raise Shredded(key_id, "its key was deleted and made again since (purged, then published again)")
        return open_sealed(raw, found[1])

    def delete(self, key_ids: Sequence[str] = (), tenant: str | None = None) -> list[str]:
        """Delete the keys of `key_ids`, or of every document of `tenant`: the ids deleted."""
        # A tenant's keys are those of its qualified ids, `tenant#...`, whichever process made them.
        query: dict[str, Any] = (
            {"_id": {"$regex": f"^{re.escape(tenant)}#"}} if tenant is not None else {"_id": {"$in": list(key_ids)}}
        )
        gone = [str(d["_id"]) for d in self.collection.find(query, {"_id": 1})]
        if gone:
            self.collection.delete_many({"_id": {"$in": gone}})
        with self._lock:
            for key_id in gone:
                self._cache.pop(key_id, None)
        return gone


_RINGS: dict[tuple[str, str, float], KeyRing] = {}
_RINGS_LOCK = threading.Lock()


class SealingCodec(AvroCodec):
    """The Avro codec that seals the records carrying a document's text with its key, and opens any sealed
    record it reads. Records without text (statuses, manifests, indexed events) stay plain."""

    def __init__(self, keys: KeyRing, tenant_key: str = "", registry_url: str | None = None) -> None:
        super().__init__(registry_url)
        self.keys = keys
        self.sealed: dict[str, Callable[[Mapping[str, Any]], str | None]] = {
            "page_event": _page_key_id(tenant_key),
            "assembled_document": _doc_id,
            "chunk_record": _doc_id,
            "dead_letter": _doc_id,
        }

    def encode(self, subject: str, record: Mapping[str, Any], topic: str = "") -> bytes:
        payload = super().encode(subject, record, topic)
        key_id = self.sealed[subject](record) if subject in self.sealed else None
        return self.keys.seal(key_id, payload, str(record.get("tenant") or "")) if key_id else payload

    def decode(self, subject: str, data: bytes) -> dict[str, Any]:
        return super().decode(subject, self.unseal(data))

    def unseal(self, data: bytes) -> bytes:
        return self.keys.open(data) if is_sealed(data) else data


def codec_for(settings: Settings) -> AvroCodec:
    """The codec of this deployment: sealing with document keys when STREAMS_DOCUMENT_KEYS is on."""
    if not settings.document_keys:
        return AvroCodec(settings.schema_registry_url)
    return SealingCodec(KeyRing.of(settings), settings.tenant_key, settings.schema_registry_url)


def page_sealer(settings: Settings) -> Callable[[Mapping[str, Any], bytes], bytes] | None:
    """How a publisher seals a page's bytes (JSON or Avro) with its document's key; None with keys off."""
    if not settings.document_keys:
        return None
    keys = KeyRing.of(settings)
    key_id = _page_key_id(settings.tenant_key)

    def sealed(page: Mapping[str, Any], payload: bytes) -> bytes:
        kid = key_id(page)
        return keys.seal(kid, payload, _page_tenant(page, settings.tenant_key)) if kid else payload

    return sealed
