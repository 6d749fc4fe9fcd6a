"""Debian packages the tests need, installed when missing: CI starts on a clean machine, and the project's
own files must bring what its tests use (Java and Maven for Apache Kafka, chromium for the console, promtool
and docker-compose for the deployment files)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pytest

_updated = False


@contextlib.contextmanager
def _machine_lock() -> object:
    """One apt-get at a time on this machine: the suite's workers (pytest-xdist) may each want a package,
    and a second apt-get beside the first fails on dpkg's lock instead of waiting for it."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    root = Path(cache) / "streams" / "debian"
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".apt.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _prefix() -> tuple[list[str], str]:
    """How to run apt-get as root here: ([], "") as root, (["sudo", "-n"], "") with sudo, else why not."""
    if os.geteuid() == 0:
        return [], ""
    if shutil.which("sudo"):
        return ["sudo", "-n"], ""
    return [], "not root and no sudo"


def _apt(prefix: list[str], *commands: list[str]) -> str:
    """Run apt-get commands (an `apt-get update` first, once per test run); "" on success, else why not."""
    global _updated
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in [] if _updated else [["apt-get", "update", "-qq"]]:
        done = subprocess.run([*prefix, *command], capture_output=True, text=True, env=env, timeout=1200)
        if done.returncode != 0:
            return f"{' '.join(command)} failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}"
        _updated = True
    for command in commands:
        done = subprocess.run([*prefix, *command], capture_output=True, text=True, env=env, timeout=1200)
        if done.returncode != 0:
            return f"{' '.join(command)} failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}"
    return ""


def install(*packages: str) -> str:
    """`apt-get install` the packages (as root, or through `sudo -n`); "" on success, else why not."""
    if not shutil.which("apt-get"):
        return "no apt-get on this machine"
    prefix, why = _prefix()
    if why:
        return f"{why}: cannot apt-get install {' '.join(packages)}"
    with _machine_lock():  # a package another worker installed meanwhile is a quick no-op here
        return _apt(prefix, ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages])


def ensure(commands: dict[str, str]) -> str:
    """Install the package of each missing command ({command: package}); "" when all are there after."""
    missing = {package for command, package in commands.items() if not shutil.which(command)}
    if not missing:
        return ""
    why = install(*sorted(missing))
    still = [command for command in commands if not shutil.which(command)]
    return f"{', '.join(still)} missing ({why or 'not found after install'})" if still else ""


def unpacked(command: str, package: str) -> tuple[str, str]:
    """`command` from Debian's `package`, unpacked into the user's cache without installing the package:
    (its path, "") or ("", why not). For a tool whose package would also start a daemon (installing
    `prometheus` enables and starts a Prometheus server, which no test wants running on a CI machine)."""
    found = shutil.which(command)
    if found:
        return found, ""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    root = Path(cache) / "streams" / "debian" / package
    binary = root / "usr" / "bin" / command
    if binary.is_file():
        return str(binary), ""
    if not (shutil.which("apt-get") and shutil.which("dpkg-deb")):
        return "", "no apt-get or dpkg-deb on this machine"
    with _machine_lock():
        if binary.is_file():  # another worker unpacked it meanwhile
            return str(binary), ""
        return _unpack(command, package, root, binary)


def _unpack(command: str, package: str, root: Path, binary: Path) -> tuple[str, str]:
    prefix, no_root = _prefix()  # apt-get download needs no root; the index update does (skipped without)
    if not no_root and (why := _apt(prefix)):
        return "", why
    root.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root.parent) as work:
        done = subprocess.run(["apt-get", "download", package], cwd=work, capture_output=True, text=True, timeout=1200)
        debs = sorted(Path(work).glob(f"{package}_*.deb"))
        if done.returncode != 0 or not debs:
            return "", f"apt-get download {package} failed: {done.stderr.strip().splitlines()[-1:]}"
        into = Path(work) / "root"
        member = f"./usr/bin/{command}"
        with subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(debs[0])], stdout=subprocess.PIPE) as deb:
            with tarfile.open(fileobj=deb.stdout, mode="r|") as tar:  # the one file, not the whole package
                for entry in tar:
                    if entry.name == member and entry.isfile():
                        tar.extract(entry, into, filter="data")
                        break
            deb.kill()
        if not (into / member).is_file():
            return "", f"Debian's {package} has no {member}"
        try:
            into.rename(root)  # whole or not at all, should another test run unpack it at the same time
        except OSError:
            if not binary.is_file():
                raise
    return str(binary), ""


def require(command: str, package: str, *, unpack: bool = False) -> str:
    """The path of `command`, installed (or unpacked) from Debian's `package` when missing. When it cannot be
    had, the test fails under CI (`CI` set), where a check must never quietly vanish, and is skipped elsewhere
    (a developer without root or apt-get still runs everything else)."""
    if unpack:
        path, why = unpacked(command, package)
    else:
        why = ensure({command: package})
        path = shutil.which(command) or ""
    if path:
        return path
    message = f"{command} (Debian package {package}) is not available: {why}"
    if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
        pytest.fail(message)
    pytest.skip(message)
