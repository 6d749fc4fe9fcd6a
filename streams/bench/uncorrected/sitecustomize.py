"""Takes corrections of `streams/agents/transport.py` away in a worker the corrections bench starts.

`streams bench corrections` puts this directory first on its workers' PYTHONPATH and names the points in
`UNCORRECTED_POINTS`; Python imports this module at start-up, before the worker builds its app. Workers
started any other way never see it."""

from __future__ import annotations

import os

if _named := os.environ.get("UNCORRECTED_POINTS", "").strip():
    from streams.bench.corrections import parse_points, uncorrect

    uncorrect(parse_points(_named))
