"""Which documents a chunker worker chunks on its event loop and which in a thread."""

from __future__ import annotations

from streams.agents.app import InlineBudget


def test_nothing_runs_inline_before_a_cost_is_measured() -> None:
    assert not InlineBudget().inline(10)


def test_cheap_documents_run_inline_and_expensive_ones_in_a_thread() -> None:
    budget = InlineBudget(budget_s=0.005)
    budget.observe(10_000, 0.001)  # 0.1 µs per byte, like `section`
    assert budget.inline(40_000)  # 4 ms predicted
    assert not budget.inline(60_000)  # 6 ms predicted


def test_a_large_document_always_goes_to_the_thread() -> None:
    budget = InlineBudget(max_bytes=100_000)
    budget.observe(10_000, 1e-6)
    assert budget.inline(100_000) and not budget.inline(100_001)


def test_the_cost_follows_what_the_documents_measure() -> None:
    """An embedding strategy costs about 80 µs per byte: after a few such documents nothing runs inline."""
    budget = InlineBudget()
    budget.observe(10_000, 0.001)
    assert budget.inline(20_000)
    for _ in range(10):
        budget.observe(2_000, 0.16)
    assert not budget.inline(1_000)  # about 70 ms predicted, over the default 50 ms budget
