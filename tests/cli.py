"""The `streams` command in a child process, as an operator runs it: what the command-line tests assert on."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping


def streams(*args: str, env: Mapping[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`python -m streams *args` with `env` as its whole environment (None: this process's), its output as text."""
    return subprocess.run(
        [sys.executable, "-m", "streams", *args],
        env=None if env is None else dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
