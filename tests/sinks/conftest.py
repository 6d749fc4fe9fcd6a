"""Fixtures for the sink tests. Keep each one small: other sinks add theirs here."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.sinks.pinecone_double import DoubleState, serve_pinecone_double


@pytest.fixture
def pinecone_double() -> Iterator[tuple[str, str, DoubleState]]:
    """A fresh in-memory Pinecone data plane: (url, api_key, state). The first upsert fixes the dimension."""
    with serve_pinecone_double() as served:
        yield served


@contextmanager
def either_target(
    kind: str, tmp_path: Path, double: tuple[str, str, DoubleState], columns: Mapping[str, str] | None = None
) -> Iterator[object]:
    """A vector target of `kind`: LanceDB on disk (with `columns`), or Pinecone's real client on the double."""
    from streams.sinks.lance_target import LanceTarget
    from streams.sinks.pinecone_target import PineconeTarget

    if kind == "lancedb":
        yield LanceTarget(tmp_path / "lance", columns=columns)
        return
    url, key, _state = double
    target = PineconeTarget(api_key=key, host=url)
    try:
        yield target
    finally:
        target.close()
