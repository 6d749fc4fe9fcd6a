"""A pytest plugin: how pytest-xdist shares the suite between its workers (`-n`, set in pyproject.toml).

The suite waits more than it computes (brokers starting, consumers polling, sinks batching), so two
workers on two cores finish in a little over half the time. A worker gets a whole file at a time, split
by broker: a file's module fixtures and a broker pass's services (tests/conftest.py's `pool`) are then
built once per worker, not once per test, and the console's tests (tests/ui) go together so that its
stack is built once per broker.
"""

from __future__ import annotations

import pytest

from tests.buses import BUSES

#: Folders whose files share session fixtures, so their tests of one broker go to one worker.
TOGETHER = ("tests/ui/",)


def scope_of(nodeid: str) -> str:
    """The work unit a test belongs to: its file (or its folder in TOGETHER) and its broker, if any."""
    path = nodeid.split("::", 1)[0]
    path = next((folder for folder in TOGETHER if path.startswith(folder)), path)
    params = nodeid.rsplit("[", 1)[1].rstrip("]").split("-") if nodeid.endswith("]") else []
    bus = next((p for p in params if p in BUSES), "")
    return f"{path}[{bus}]" if bus else path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    from xdist.scheduler import LoadScopeScheduling

    class ByFileAndBroker(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return ByFileAndBroker(config, log)
