"""docs/configuration.md, generated from the settings and options models: the reference cannot drift from
the code (a test compares the file with `render()`). Regenerate with `python -m streams.reference`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo

from streams.core.chunkers import OPTIONS, describe
from streams.settings import Settings, TopicNames

TARGET = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
STRATEGY_FIELDS = set(OPTIONS)

HEAD = """# Configuration

Generated from `streams/settings.py` and each strategy's options model (in its package under
`streams/core/chunkers/`) by `python -m streams.reference`; a test fails when this page and the code disagree.

Every setting is an environment variable `STREAMS_<NAME>`, a key of a `--config` file (TOML or YAML), or, for
`streams up` and the demo, inherited by every process they start. Precedence, highest first: the
environment, a parent process's settings (workers), the `--config` file, a running `streams up`'s
`up.json` (connection settings only). A bad value is one line naming the variable, and the process refuses
to start (exit code 78).

Strategy options are set per strategy: `STREAMS_SECTION__MAX_TOKENS=512`, a `[section]` table in the
config file, or `streams chunk --set max_tokens=512`. Options other than the defaults are part of the
lineage: they change `chunker_version` and every chunk id (`streams strategies` lists them too).
"""


def _default(field: FieldInfo) -> str:
    if field.default_factory is not None:
        value: Any = field.default_factory()  # type: ignore[call-arg]
    else:
        value = field.default
    if isinstance(value, TopicNames):
        return "(below)"
    if value is None:
        return "unset"
    if isinstance(value, Path | str):
        return f"`{value}`"
    return f"`{json.dumps(value)}`"


def _type(field: FieldInfo) -> str:
    annotation = field.annotation
    name = getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")
    return name.replace("NoneType", "None").replace(" | None", "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def settings_table() -> list[str]:
    lines = ["## Settings", "", "| variable | type | default | what |", "|---|---|---|---|"]
    for name, field in Settings.model_fields.items():
        if name in STRATEGY_FIELDS or name == "topics":  # options and topics have tables of their own
            continue
        variable = f"`STREAMS_{name.upper()}`"
        lines.append(f"| {variable} | {_type(field)} | {_default(field)} | {_cell(field.description or '')} |")
    lines += ["", "### Topics", "", "| variable | default |", "|---|---|"]
    for name, field in TopicNames.model_fields.items():
        lines.append(f"| `STREAMS_TOPIC_{name.upper()}` | `{field.default}` |")
    return lines


def options_tables() -> list[str]:
    lines = ["## Strategy options"]
    for strategy in OPTIONS:
        info = describe(strategy)
        lines += [
            "",
            f"### `{strategy}` (seed {info['seed']}): {info['summary']}",
            "",
            "| option | default | allowed | what |",
            "|---|---|---|---|",
        ]
        for option, spec in info["options"].items():
            default = spec["default"]
            shown = ",".join(default) if isinstance(default, tuple | list) else json.dumps(default)
            lines.append(
                f"| `STREAMS_{strategy.upper()}__{option.upper()}` | `{shown}` | {_cell(spec['range'])} "
                f"| {_cell(spec['description'])} |"
            )
    return lines


def render() -> str:
    return "\n".join([HEAD.rstrip(), "", *settings_table(), "", *options_tables(), ""])


if __name__ == "__main__":  # pragma: no cover - the regeneration step
    text = render()
    if "--check" in sys.argv:
        sys.exit(0 if TARGET.read_text() == text else 1)
    TARGET.write_text(text)
    print(f"wrote {TARGET}")
