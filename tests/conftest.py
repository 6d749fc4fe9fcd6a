"""Shared fixtures: paths, the shared corpora (skipped when absent), page builders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streams.core.events import PageEvent

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture
def shared_corpora() -> Path:
    path = SHARED / "corpora"
    if not path.is_dir():
        pytest.skip("../shared/corpora is not present")
    return path


def make_pages(doc_id: str, texts: list[str], **fields: object) -> list[PageEvent]:
    return [
        PageEvent(
            doc_id=doc_id,
            document_name=f"{doc_id}.txt",
            page_number=number,
            page_count=len(texts),
            text=text,
            **fields,
        )
        for number, text in enumerate(texts, start=1)
    ]


def page_bytes(page: PageEvent) -> bytes:
    return page.model_dump_json().encode()


def raw_page(**fields: object) -> bytes:
    return json.dumps(fields).encode()
