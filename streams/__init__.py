"""Streaming document chunking: cleaned pages in, Avro chunk records out.

From Python, offline (no broker): `from streams import chunk_text, chunk_file` (see `streams.api`); against a
deployment, `from streams import search`.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_API = {"chunk_text", "chunk_file", "search", "NotApplicable", "ChunkRecord", "OptionsError"}


def __getattr__(name: str) -> Any:
    """The Python API, imported on first use: `import streams` stays light for the CLI and workers."""
    if name in _API:
        from streams import api

        return getattr(api, name)
    raise AttributeError(f"module 'streams' has no attribute {name!r}")


__all__ = ["ChunkRecord", "NotApplicable", "OptionsError", "__version__", "chunk_file", "chunk_text", "search"]
