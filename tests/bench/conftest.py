"""Registers the `bench` marker: tests that load the embedding model or the baseline libraries."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "bench: benchmark tests that need the `bench` extra or the embedding model")
