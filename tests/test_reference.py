"""docs/configuration.md is generated from the settings and options models, and stays in step with them."""

from __future__ import annotations

from streams.core.chunkers import OPTIONS, describe
from streams.reference import TARGET, render
from streams.settings import Settings


def test_the_configuration_reference_is_what_the_models_say() -> None:
    assert TARGET.read_text() == render(), "docs/configuration.md drifted: run `python -m streams.reference`"


def test_every_setting_and_option_is_described_and_listed() -> None:
    page = TARGET.read_text()
    for name, field in Settings.model_fields.items():
        assert field.description, f"setting {name} has no description"
        if name not in OPTIONS and name != "topics":
            assert f"`STREAMS_{name.upper()}`" in page
    for strategy in OPTIONS:
        for option, spec in describe(strategy)["options"].items():
            assert spec["description"], f"{strategy}.{option} has no description"
            assert f"`STREAMS_{strategy.upper()}__{option.upper()}`" in page
