"""Run one faust app (a role) in this process until it is stopped."""

from __future__ import annotations

import logging

import faust

from streams.agents.app import assembler_app, chunker_app
from streams.settings import Settings


def build(role: str, settings: Settings) -> faust.App:
    if role == "assembler":
        return assembler_app(settings)
    if role.startswith("chunker:"):
        return chunker_app(role.split(":", 1)[1], settings)
    raise ValueError(f"unknown role {role!r}: use 'assembler' or 'chunker:<strategy>'")


def run(role: str, settings: Settings, loglevel: str = "WARNING") -> None:
    app = build(role, settings)
    logging.getLogger("aiokafka").setLevel(logging.ERROR)
    worker = faust.Worker(app, loglevel=loglevel, quiet=True, redirect_stdouts=False)
    worker.execute_from_commandline()
