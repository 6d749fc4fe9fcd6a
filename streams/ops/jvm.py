"""What the Java services the project starts itself share: finding Java, and fetching their artifacts
from Maven Central once per machine into a cache outside the repository."""

from __future__ import annotations

import fcntl
import functools
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from streams.ops.processes import ServiceError

JAVA_MIN = 17


def cache_dir(name: str) -> Path:
    """`$XDG_CACHE_HOME/streams/NAME` (default `~/.cache/streams/NAME`)."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "streams" / name


def java_binary(what: str) -> str:
    """`java` (JAVA_HOME first), version 17 or newer, or one clear line saying what to install."""
    home = os.environ.get("JAVA_HOME")
    candidate = Path(home) / "bin" / "java" if home else None
    java = str(candidate) if candidate and candidate.exists() else shutil.which("java")
    return _checked_java(what, java)


@functools.lru_cache(maxsize=8)
def _checked_java(what: str, java: str | None) -> str:
    """The version check, once per binary and process: `java -version` is a JVM start of its own."""
    if not java:
        raise ServiceError(
            f"{what} needs Java {JAVA_MIN} or newer and `java` is not on PATH "
            "(Debian: apt-get install openjdk-17-jre-headless)"
        )
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    found = re.search(r'version "(\d+)', out.stderr + out.stdout)
    if not found or int(found.group(1)) < JAVA_MIN:
        seen = found.group(1) if found else "unknown"
        raise ServiceError(f"{what} needs Java {JAVA_MIN} or newer; {java} is version {seen}")
    return java


def maven(what: str, args: list[str], cwd: Path) -> None:
    """Run Maven in batch mode; a failure is one line with the end of what Maven said."""
    mvn = shutil.which("mvn")
    if not mvn:
        raise ServiceError(f"{what} comes from Maven Central and `mvn` is not on PATH (Debian: apt-get install maven)")
    result = subprocess.run([mvn, "-q", "-B", *args], cwd=cwd, capture_output=True, text=True, timeout=1800)
    if result.returncode != 0:
        tail = " ".join((result.stdout + result.stderr).split())[-300:]
        raise ServiceError(f"could not fetch {what} with Maven: {tail}")


def fetch_once(root: Path, fetch: Callable[[], None]) -> None:
    """Run `fetch` unless `root` already holds a finished fetch; one process at a time (a file lock), so
    parallel starts wait for one download instead of racing it."""
    done = root / ".complete"
    if done.exists():
        return
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return
        fetch()
        done.write_text("ok")
