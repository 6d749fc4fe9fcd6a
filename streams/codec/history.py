"""Published schema versions live in `schemas/history/<subject>/vN.avsc` (expanded, self-contained).

Readers resolve any historical writer into the current schema, so every published version must stay
readable: the tests check it for each file here. Run `streams schemas snapshot` after a schema change.
"""

from __future__ import annotations

import json
from pathlib import Path

from streams.codec.avro import SCHEMA_DIR, SchemaSet


def history_files(schema_dir: Path = SCHEMA_DIR) -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    for path in sorted((schema_dir / "history").glob("*/v*.avsc"), key=lambda p: (p.parent.name, int(p.stem[1:]))):
        found.setdefault(path.parent.name, []).append(path)
    return found


def snapshot(schema_dir: Path = SCHEMA_DIR) -> list[Path]:
    """Write the current version of each subject unless an identical one is already in history."""
    schemas = SchemaSet(schema_dir)
    existing = history_files(schema_dir)
    written: list[Path] = []
    for subject, expanded in schemas.expanded.items():
        current = schemas.fingerprint(schemas.current[subject])
        versions = existing.get(subject, [])
        known = {SchemaSet.fingerprint(_parse(p)) for p in versions}
        if current in known:
            continue
        path = schema_dir / "history" / subject / f"v{len(versions) + 1}.avsc"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(expanded, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        written.append(path)
    return written


def _parse(path: Path) -> object:
    from fastavro.schema import parse_schema

    return parse_schema(json.loads(path.read_text(encoding="utf-8")), named_schemas={})
