"""Debian packages the tests need, installed when missing: CI starts on a clean machine, and the project's
own files must bring what its tests use (Java and Maven for Apache Kafka, chromium for the console)."""

from __future__ import annotations

import os
import shutil
import subprocess

_updated = False


def install(*packages: str) -> str:
    """`apt-get install` the packages (as root, or through `sudo -n`); "" on success, else why not."""
    global _updated
    if not shutil.which("apt-get"):
        return "no apt-get on this machine"
    prefix = [] if os.geteuid() == 0 else ["sudo", "-n"]
    if prefix and not shutil.which("sudo"):
        return f"not root and no sudo: cannot apt-get install {' '.join(packages)}"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    commands = [] if _updated else [["apt-get", "update", "-qq"]]
    commands.append(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages])
    for command in commands:
        done = subprocess.run([*prefix, *command], capture_output=True, text=True, env=env, timeout=1200)
        if done.returncode != 0:
            return f"{' '.join(command)} failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}"
    _updated = True
    return ""


def ensure(commands: dict[str, str]) -> str:
    """Install the package of each missing command ({command: package}); "" when all are there after."""
    missing = {package for command, package in commands.items() if not shutil.which(command)}
    if not missing:
        return ""
    why = install(*sorted(missing))
    still = [command for command in commands if not shutil.which(command)]
    return f"{', '.join(still)} missing ({why or 'not found after install'})" if still else ""
