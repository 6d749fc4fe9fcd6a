"""Document keys on a real MongoDB-protocol server (SecantusDB): one key per document for every process,
sealed records that round-trip, and records whose key is deleted, or made again, that no one can read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pymongo import MongoClient

from streams.codec.avro import AvroCodec
from streams.core.assembly import BadInput, parse_page
from streams.core.chunkers import get_chunker
from streams.core.document import assemble
from streams.core.records import build_records
from streams.core.sealed import MAGIC, Shredded
from streams.ops.embedded import document_store
from streams.runtime.keyring import KeyRing, SealingCodec
from tests.conftest import make_pages

TEXT = "The harbour board met on Tuesday and voted to repair the east pier before the winter storms. " * 4


@pytest.fixture
def keys(tmp_path: Path) -> Iterator:
    store = document_store(tmp_path).start()
    client: MongoClient = MongoClient(f"mongodb://{store.address}")
    try:
        yield client["streams"]["keys"]
    finally:
        client.close()
        store.stop()


def _record():
    chunker = get_chunker("window")
    doc = assemble(make_pages("minutes", [TEXT]))
    return build_records(doc, chunker, chunker.chunk(doc))[0]


def test_records_with_text_are_sealed_and_round_trip_and_the_others_stay_plain(keys) -> None:
    codec = SealingCodec(KeyRing(keys))
    record = _record()
    sealed = codec.encode("chunk_record", record.model_dump())
    assert sealed.startswith(MAGIC) and b"east pier" not in sealed
    other = SealingCodec(KeyRing(keys))  # another process: the same key, from the store
    assert other.decode("chunk_record", sealed) == codec.decode("chunk_record", sealed) == record.model_dump()
    status = {"chunk_id": record.chunk_id, "doc_id": "minutes", "strategy": "window", "amendment_number": 0}
    assert not codec.encode("chunk_status", {**status, "is_latest_version": False}).startswith(MAGIC)
    assert keys.count_documents({}) == 1
    with pytest.raises(Shredded, match="STREAMS_DOCUMENT_KEYS is off here"):
        AvroCodec().decode("chunk_record", sealed)


def test_a_deleted_key_shreds_every_copy_and_a_new_key_does_not_open_old_copies(keys) -> None:
    ring = KeyRing(keys, ttl_s=0)
    sealed = SealingCodec(ring).encode("chunk_record", _record().model_dump())
    assert ring.delete(["minutes"]) == ["minutes"]
    with pytest.raises(Shredded, match="key is gone"):
        SealingCodec(KeyRing(keys)).decode("chunk_record", sealed)
    SealingCodec(ring).encode("chunk_record", _record().model_dump())  # published again: a new key
    with pytest.raises(Shredded, match="made again since"):
        SealingCodec(KeyRing(keys)).decode("chunk_record", sealed)


def test_a_tenants_keys_go_together_and_no_other(keys) -> None:
    ring = KeyRing(keys)
    for key_id, tenant in (("acme#a", "acme"), ("acme#b", "acme"), ("globex#a", "globex")):
        ring.key_for(key_id, tenant)
    assert sorted(ring.delete(tenant="acme")) == ["acme#a", "acme#b"]
    assert [d["_id"] for d in keys.find()] == ["globex#a"]


def test_a_sealed_page_is_opened_before_it_is_read_and_refused_where_keys_are_off(keys) -> None:
    codec = SealingCodec(KeyRing(keys), tenant_key="workspace")
    page = make_pages("minutes", [TEXT], metadata={"workspace": "acme"})[0]
    sealed = codec.keys.seal("acme#minutes", page.model_dump_json().encode(), "acme")
    read = parse_page(sealed, tenant_key="workspace", unseal=codec.unseal)
    assert (read.doc_id, read.text) == ("acme#minutes", TEXT)
    with pytest.raises(BadInput) as refused:
        parse_page(sealed, tenant_key="workspace")
    assert refused.value.code == "sealed_page"
