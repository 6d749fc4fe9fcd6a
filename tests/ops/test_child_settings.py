"""A worker started by `LocalPipeline` gets the parent's settings whole: every field the parent set, in one
serialisation, and nothing of the environment the parent itself started with."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from streams.ops.pipeline import child_env
from streams.settings import SETTINGS_ENV, Settings, is_setting_variable

#: A value other than the default for every kind of field: plain, secret, path, list, nested, per strategy.
CHANGED = {
    "broker": "127.0.0.1:19092",
    "broker_kind": "kafka",
    "partitions": 3,
    "compression": "zstd",
    "max_message_bytes": 1_000_000,
    "embed_context": ["cluster"],
    "security_protocol": "SASL_SSL",
    "sasl_mechanism": "SCRAM-SHA-512",
    "sasl_username": "alice",
    "sasl_password": "s3cret",
    "ssl_cafile": "/etc/ca.pem",
    "pinecone_api_key": "pk-123",
    "schema_registry_url": "http://127.0.0.1:8081",
    "chunker_version": "9.9.9",
    "topics": {"chunks": "chunks.v2"},
    "section": {"max_tokens": 300},
}


def worker_settings(env: dict[str, str]) -> dict:
    """Settings as a child process reads them from `env`."""
    code = "from streams.settings import Settings; print(Settings().handoff_json())"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_every_field_set_in_the_parent_arrives_in_a_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the parent was itself started with settings in its environment, some now changed in code
    monkeypatch.setenv("STREAMS_BROKER", "127.0.0.1:1")
    monkeypatch.setenv("STREAMS_SECTION__MAX_TOKENS", "999")
    monkeypatch.setenv("STREAMS_DEBUG", "1")  # a process switch, not a setting: it stays
    parent = Settings(data_dir=tmp_path, **CHANGED)
    fields = set(Settings.model_fields)
    assert {name for name in fields if getattr(parent, name) != getattr(Settings(), name)} >= set(CHANGED) - {
        "broker",  # the environment above set it too
        "section",
    }
    env = child_env(parent, STREAMS_METRICS_PORT="9100")
    assert not [
        name for name in env if is_setting_variable(name) and name not in (SETTINGS_ENV, "STREAMS_METRICS_PORT")
    ]
    assert env["STREAMS_DEBUG"] == "1"
    seen = worker_settings(env)
    expected = json.loads(parent.handoff_json())
    expected["metrics_port"] = 9100  # the one per-worker override
    assert seen == expected
    assert seen["sasl_password"] == "s3cret" and seen["section"] == {"max_tokens": 300}


def test_a_worker_still_reads_its_own_environment_over_the_parents(tmp_path: Path) -> None:
    env = child_env(Settings(data_dir=tmp_path, partitions=3), STREAMS_PARTITIONS="5")
    assert worker_settings(env)["partitions"] == 5


def test_secrets_are_typed_as_secrets_and_only_a_child_sees_them(tmp_path: Path) -> None:
    parent = Settings(data_dir=tmp_path, **CHANGED, ui_token="tok-77")
    assert set(Settings.secret_fields()) == {"sasl_password", "pinecone_api_key", "ui_token", "embed_api_key"}
    for shown in (parent.model_dump_json(), json.dumps(parent.redacted()), repr(parent)):
        assert "s3cret" not in shown and "pk-123" not in shown and "tok-77" not in shown
    assert parent.secret("sasl_password") == "s3cret"
    assert json.loads(child_env(parent)[SETTINGS_ENV])["ui_token"] == "tok-77"
