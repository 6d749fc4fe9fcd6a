"""Hostile and broken page events, by the reason code each must be dead-lettered with."""

from __future__ import annotations

import json

from tests.conftest import make_pages, raw_page


def page(**fields: object) -> dict:
    base = {"doc_id": "h", "document_name": "h.txt", "page_number": 1, "page_count": 1, "text": "hello"}
    return {**base, **fields}


def enc(fields: dict) -> bytes:
    return json.dumps(fields).encode()


def cases() -> list[tuple[str, str, list[tuple[bytes, bytes]]]]:
    """(kind, expected reason code, messages). Each kind uses its own doc_id."""
    conflict = make_pages("conflict", ["first", "second"])
    out: list[tuple[str, str, list[tuple[bytes, bytes]]]] = [
        ("invalid JSON", "invalid_json", [(b"k1", b'{"doc_id": "k1", ')]),
        ("invalid UTF-8", "invalid_utf8", [(b"k2", b'{"doc_id": "k2", "text": "\xff\xfe"}')]),
        (
            "Windows-1252 declared as UTF-8",
            "invalid_utf8",
            [(b"k3", enc(page(doc_id="k3", text="x")).replace(b"x", "caf\u00e9 \u2013".encode("cp1252")))],
        ),
        ("wrong type: page_number", "invalid_page_event", [(b"k4", enc(page(doc_id="k4", page_number="one")))]),
        ("wrong type: text", "invalid_page_event", [(b"k5", enc(page(doc_id="k5", text=42)))]),
        ("missing doc_id", "invalid_page_event", [(b"k6", enc({k: v for k, v in page().items() if k != "doc_id"}))]),
        ("empty doc_id", "invalid_page_event", [(b"k7", enc(page(doc_id="")))]),
        ("blank doc_id", "invalid_page_event", [(b"k8", enc(page(doc_id="   ")))]),
        ("page number zero", "invalid_page_event", [(b"k9", enc(page(doc_id="k9", page_number=0)))]),
        ("negative page number", "invalid_page_event", [(b"k10", enc(page(doc_id="k10", page_number=-3)))]),
        (
            "page beyond page_count",
            "page_out_of_range",
            [(b"k11", enc(page(doc_id="k11", page_number=4, page_count=2)))],
        ),
        (
            "page_count changing",
            "page_count_changed",
            [
                (b"k12", enc(page(doc_id="k12", page_count=3))),
                (b"k12", enc(page(doc_id="k12", page_number=2, page_count=5))),
            ],
        ),
        ("page over the size limit", "page_too_large", [(b"k13", enc(page(doc_id="k13", text="x" * 300_000)))]),
        ("a document of 10,000 pages", "document_too_large", [(b"k14", enc(page(doc_id="k14", page_count=10_000)))]),
        ("empty text", "empty_document", [(b"k15", enc(page(doc_id="k15", text="")))]),
        ("whitespace only", "empty_document", [(b"k16", enc(page(doc_id="k16", text=" \t\n\r\n  ")))]),
        ("control characters only", "empty_document", [(b"k17", enc(page(doc_id="k17", text="\x00\x01\x07\x1b\x7f")))]),
        (
            "bidi and zero-width flood",
            "empty_document",
            [(b"k18", enc(page(doc_id="k18", text="\u202e\u200b\u200d\u2066" * 5000)))],
        ),
        ("unknown doc_type", "invalid_page_event", [(b"k19", enc(page(doc_id="k19", doc_type="memo")))]),
        ("Avro with an unknown schema id", "invalid_avro", [(b"k20", b"\x00\x00\x00\x30\x39" + b"\x02h")]),
        ("Avro with an unknown fingerprint", "invalid_avro", [(b"k21", b"\xc3\x01" + b"\x07" * 8 + b"\x02")]),
        ("truncated Avro", "invalid_avro", []),  # filled in by the test with a real record cut short
        (
            "duplicate page, different text",
            "conflicting_duplicate",
            [
                (b"conflict", conflict[0].model_dump_json().encode()),
                (b"conflict", conflict[0].model_copy(update={"text": "changed"}).model_dump_json().encode()),
            ],
        ),
        (
            "JSON nesting bomb",
            "json_too_deep",
            [(b"k24", b'{"doc_id": "k24", "x": ' + b"[" * 20_000 + b"]" * 20_000 + b"}")],
        ),
        ("JSON array instead of object", "invalid_page_event", [(b"k25", b"[1, 2, 3]")]),
        ("JSON null", "invalid_page_event", [(b"k26", b"null")]),
        ("empty message", "empty_message", [(b"k27", b"")]),
        (
            "NaN page_count",
            "invalid_page_event",
            [(b"k28", enc(page(doc_id="k28")).replace(b'"page_count": 1', b'"page_count": NaN'))],
        ),
        (
            "lone surrogate in text",
            "invalid_text",
            [(b"k29", enc(page(doc_id="k29")).replace(b"hello", b"he\\ud800llo"))],
        ),
        ("doc_id over 512 characters", "invalid_page_event", [(b"k30", enc(page(doc_id="d" * 600)))]),
        ("metadata not a mapping", "invalid_metadata", [(b"k31", enc(page(doc_id="k31", metadata=["a", "b"])))]),
        # Metadata a store would misread, or that would make every chunk record of the document too large.
        ("metadata key with $", "invalid_metadata", [(b"m1", enc(page(doc_id="m1", metadata={"$where": "1"})))]),
        ("metadata key with .", "invalid_metadata", [(b"m2", enc(page(doc_id="m2", metadata={"a.b": "c"})))]),
        ("metadata key with NUL", "invalid_metadata", [(b"m3", enc(page(doc_id="m3", metadata={"a\x00": "c"})))]),
        (
            "metadata value of 100 kB",
            "invalid_metadata",
            [(b"m4", enc(page(doc_id="m4", metadata={"b": "x" * 100_000})))],
        ),
        ("acl not a list", "invalid_metadata", [(b"m5", enc(page(doc_id="m5", metadata={"acl": {"read": "all"}})))]),
        (
            "NaN metadata",
            "invalid_metadata",
            [(b"m6", enc(page(doc_id="m6", metadata={"x": 1})).replace(b'"x": 1', b'"x": NaN'))],
        ),
        (
            "metadata over the limit across pages",
            "metadata_too_large",
            [
                (b"m7", enc(page(doc_id="m7", page_count=2, metadata={"a": "x" * 40_000}))),
                (b"m7", enc(page(doc_id="m7", page_number=2, page_count=2, metadata={"b": "y" * 40_000}))),
            ],
        ),
        ("element without a kind", "invalid_page_event", [(b"k32", enc(page(doc_id="k32", elements=[{"text": "x"}])))]),
        ("huge page number", "page_out_of_range", [(b"k33", enc(page(doc_id="k33", page_number=10**30)))]),
        (
            "incomplete document",
            "incomplete_timeout",
            [(b"k34", raw_page(doc_id="k34", document_name="x", page_number=1, page_count=2, text="half"))],
        ),
    ]
    return out
