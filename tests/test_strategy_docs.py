"""docs/strategies.md is where the code's rules are stated: every `docs/strategies.md#anchor` a comment or
docstring cites is a heading there, no comment cites a specification's section marks (the specifications are
not in the repository), and every strategy has its own section."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "strategies.md"
SOURCES = sorted((REPO / "streams").rglob("*.py"))
CITATION = re.compile(r"docs/strategies\.md#([A-Za-z0-9_-]+)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation but hyphens and underscores dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """Every heading's anchor, duplicates numbered as GitHub numbers them; fenced code is not a heading."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    fenced = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else re.match(r"^#{1,6} +(.+?) *#* *$", line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def citations(source: str) -> list[str]:
    return CITATION.findall(source)


def test_every_cited_anchor_is_a_heading_of_strategies_md() -> None:
    known = anchors(DOC.read_text())
    cited = {(path.relative_to(REPO), anchor) for path in SOURCES for anchor in citations(path.read_text())}
    assert len(cited) >= 40, f"only {len(cited)} citations of docs/strategies.md found: is the form still the same?"
    missing = sorted(f"{path}: #{anchor}" for path, anchor in cited if anchor not in known)
    assert not missing, f"cited anchors docs/strategies.md lacks: {missing}"


def test_a_broken_anchor_is_caught() -> None:
    """The check above can fail: a citation of a heading that is not there is missing from the anchors."""
    known = anchors(DOC.read_text())
    assert "letter-10-the-validation-gate" in known
    assert citations("# docs/strategies.md#letter-99-no-such-rule.") == ["letter-99-no-such-rule"]
    assert "letter-99-no-such-rule" not in known
    assert slug("letter 2. Chunk objects, ids and metadata") == "letter-2-chunk-objects-ids-and-metadata"
    assert slug("Sentence embeddings: semantic and cluster") == "sentence-embeddings-semantic-and-cluster"


def test_nothing_in_the_package_cites_a_specification_section_mark() -> None:
    # comments, docstrings, messages and rule names alike: the specifications are not in this repository
    found = [
        f"{path.relative_to(REPO)}:{number}"
        for path in SOURCES
        for number, text in enumerate(path.read_text().splitlines(), start=1)
        if "§" in text
    ]
    assert not found, f"section marks of a specification (cite docs/strategies.md#anchor instead): {found}"


def test_every_strategy_has_its_own_section() -> None:
    from streams.core.chunkers import STRATEGIES

    headings = {line[3:].strip() for line in DOC.read_text().splitlines() if line.startswith("## ")}
    names = list(STRATEGIES)
    assert names, "no strategy registered"
    missing = [name for name in names if name not in headings]
    assert not missing, f"docs/strategies.md has no `## <name>` section for {missing}"
