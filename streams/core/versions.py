"""Amendment versioning per (document, strategy), as a pure function over a small state dict.

The newest amendment seen is the latest; chunks of older amendments flip to not latest, a late older
amendment is published as not latest from the start, and ids a re-chunk no longer produces are retired.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Decision:
    is_latest: bool
    flips: dict[int, list[str]] = field(default_factory=dict)  # amendment -> chunk ids no longer latest
    retired: list[str] = field(default_factory=list)  # ids of this amendment a re-chunk did not produce
    state: dict = field(default_factory=dict)


def decide(state: dict | None, amendment: int, chunk_ids: list[str]) -> Decision:
    amendments: dict[str, list[str]] = dict((state or {}).get("amendments", {}))
    flipped: set[int] = set((state or {}).get("flipped", []))
    known = [int(a) for a in amendments]
    latest = max([*known, amendment])
    is_latest = amendment >= latest
    flips: dict[int, list[str]] = {}
    if is_latest:
        for older in sorted(a for a in known if a < amendment and a not in flipped):
            flips[older] = list(amendments[str(older)])
            flipped.add(older)
    else:
        flipped.add(amendment)
    previous = set(amendments.get(str(amendment), []))
    retired = sorted(previous - set(chunk_ids))
    amendments[str(amendment)] = list(chunk_ids)
    new_state = {"amendments": amendments, "flipped": sorted(flipped)}
    return Decision(is_latest, flips, retired, new_state)


def delete(state: dict | None) -> tuple[list[str], dict]:
    """A document tombstone retires every chunk of every amendment."""
    ids = sorted({cid for ids in (state or {}).get("amendments", {}).values() for cid in ids})
    return ids, {}
