"""A worker freezes its start-up heap, after collecting the garbage start-up left."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from streams.agents.worker import settle_heap


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


@pytest.fixture
def thawed() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # the rest of the test session keeps a normal heap


def test_startup_garbage_is_collected_and_the_rest_frozen(thawed: None) -> None:
    a, b = _Node(), _Node()
    a.other, b.other = b, a  # a cycle: only the collector can free it
    garbage = weakref.ref(a)
    kept = _Node()
    del a, b
    frozen = settle_heap()
    assert garbage() is None  # freezing first would have kept it forever
    # another thread (pytest-xdist's channel) may free a few frozen objects meanwhile, never add to them
    assert 0.99 * frozen <= gc.get_freeze_count() <= frozen and frozen > 0
    assert not any(o is kept for o in gc.get_objects())  # full passes no longer walk it
