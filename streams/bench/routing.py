"""`streams bench routing`: the type detector on a labelled set, as a confusion matrix.

Each document of the set is read the way `streams publish` reads it, with no type given, and assembled:
the assembler's detected type is compared with the label. The documents off the diagonal are listed with
the evidence that sent them there, and a generic document typed as anything else is counted apart, since it
would reach a strategy that is not for it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streams.core.doctype import CONFIDENCE_KEY, EVIDENCE_KEY, SOURCE_KEY
from streams.core.document import assemble
from streams.core.events import DocType
from streams.ingest.files import page_events

ROUTING_SET = Path(__file__).resolve().parent / "routing_set"
TYPES = [str(t) for t in DocType]


@dataclass(frozen=True)
class Labelled:
    path: Path
    label: str
    shape: str
    name: str  # the path within the set, as the report names it


def load_set(folder: Path = ROUTING_SET) -> list[Labelled]:
    """The labelled documents under `folder`: each `manifest.json` in it (a list of file, label and shape)
    names the files of the `docs/` beside it."""
    manifests = sorted(folder.rglob("manifest.json"))
    if not manifests:
        raise FileNotFoundError(f"{folder}: no manifest.json (a list of file, label, shape)")
    found = []
    for manifest in manifests:
        for entry in json.loads(manifest.read_text(encoding="utf-8")):
            label = str(entry["label"])
            if label not in TYPES:
                raise ValueError(f"{manifest}: {entry['file']} has label {label!r}, not one of {', '.join(TYPES)}")
            path = manifest.parent / "docs" / entry["file"]
            if not path.is_file():
                raise FileNotFoundError(f"{path}: no such file (named in {manifest})")
            found.append(Labelled(path, label, str(entry.get("shape", "")), str(path.relative_to(folder))))
    return found


def classify(item: Labelled) -> dict[str, Any]:
    """One document through the publisher's reader and the assembler, as the bus would type it."""

    doc = assemble(page_events(item.path))
    return {
        "file": item.name,
        "label": item.label,
        "shape": item.shape,
        "detected": str(doc.doc_type),
        "source": doc.metadata.get(SOURCE_KEY, ""),
        "confidence": float(doc.metadata.get(CONFIDENCE_KEY, "0")),
        "evidence": doc.metadata.get(EVIDENCE_KEY, ""),
    }


def run_routing_bench(
    folder: Path = ROUTING_SET, update: Callable[[str, int, int], None] | None = None
) -> dict[str, Any]:
    """The confusion matrix (label -> detected -> count), the misses with their evidence, and the totals."""
    items = load_set(folder)
    rows = []
    for index, item in enumerate(items):
        if update is not None:
            update(f"routing {item.name}", index, len(items))
        rows.append(classify(item))
    if update is not None:
        update("routing done", len(items), len(items))
    matrix = {label: dict.fromkeys(TYPES, 0) for label in TYPES}
    for row in rows:
        matrix[row["label"]][row["detected"]] += 1
    misses = [row for row in rows if row["detected"] != row["label"]]
    shapes: dict[str, dict[str, int]] = {}
    for row in rows:
        tally = shapes.setdefault(row["shape"], {"documents": 0, "correct": 0})
        tally["documents"] += 1
        tally["correct"] += row["detected"] == row["label"]
    return {
        "set": str(folder),
        "documents": len(rows),
        "correct": len(rows) - len(misses),
        "generic_sent_to_a_typed_strategy": sum(1 for r in misses if r["label"] == "generic"),
        "typed_left_generic": sum(1 for r in misses if r["detected"] == "generic"),
        "matrix": matrix,
        "shapes": shapes,
        "misses": misses,
        "documents_detail": rows,
    }
