"""The installed set is the pinned set, and the internals `streams.agents.transport` corrects are the ones
it was written against: a new faust-streaming or aiokafka must fail here, not lose messages later."""

from __future__ import annotations

import re
from importlib import metadata

from streams.agents import transport
from tests.conftest import REPO

PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^\s;#]+)")


def _pins() -> dict[str, str]:
    pins = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        if match := PIN.match(line.strip()):
            pins[match[1].lower().replace("_", "-")] = match[2]
    return pins


def test_the_corrected_packages_are_pinned_and_installed_at_their_pins() -> None:
    pins = _pins()
    for package in ("faust-streaming", "aiokafka", "confluent-kafka", "noida-db", "torch"):
        assert package in pins, f"{package} is not pinned in constraints.txt"
    wrong = {}
    for name, version in pins.items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue  # an extra this environment did not install
        if installed != version:
            wrong[name] = f"{installed} installed, {version} pinned"
    assert not wrong, f"install with -c constraints.txt (see README): {wrong}"


def test_the_patched_internals_are_the_ones_the_corrections_expect() -> None:
    changed = transport.changed_internals()
    assert not changed, (
        "faust-streaming/aiokafka internals that streams.agents.transport corrects have changed: "
        f"{', '.join(changed)}. Re-read points 1-8 of its docstring against the new code, then refresh the "
        "digests with `python -m streams.agents.transport`."
    )


def test_a_changed_internal_is_named(monkeypatch) -> None:
    name = next(iter(transport.PATCHED_INTERNALS))
    monkeypatch.setitem(transport.PATCHED_INTERNALS, name, "0" * 16)
    assert transport.changed_internals() == [name]
