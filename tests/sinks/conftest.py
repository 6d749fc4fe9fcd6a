"""Fixtures for the sink tests. Keep each one small: other sinks add theirs here."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.sinks.pinecone_double import DoubleState, serve_pinecone_double


@pytest.fixture
def pinecone_double() -> Iterator[tuple[str, str, DoubleState]]:
    """A fresh in-memory Pinecone data plane: (url, api_key, state). The first upsert fixes the dimension."""
    with serve_pinecone_double() as served:
        yield served
