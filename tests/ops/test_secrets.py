"""Secrets never reach output: settings dumps, one-line errors, sink logs."""

from __future__ import annotations

import os

from streams.settings import Settings, mask_url
from tests.cli import streams

SECRETS = {
    "STREAMS_MONGO_URL": "mongodb://admin:TopSecret123@127.0.0.1:1/?serverSelectionTimeoutMS=500",
    "STREAMS_SASL_PASSWORD": "SaslSecret456",
    "STREAMS_PINECONE_API_KEY": "pk-PineSecret789",
    "STREAMS_SASL_MECHANISM": "SCRAM-SHA-512",
    "STREAMS_SASL_USERNAME": "streams",
    "STREAMS_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
    "STREAMS_BROKER": "127.0.0.1:1",
}


def test_redacted_settings_mask_every_secret(monkeypatch) -> None:
    for key, value in SECRETS.items():
        monkeypatch.setenv(key, value)
    text = repr(Settings().redacted())
    for secret in ("TopSecret123", "SaslSecret456", "PineSecret789"):
        assert secret not in text
    assert "mongodb://admin:***@127.0.0.1:1" in text
    assert mask_url("https://key:abc@host/x") == "https://key:***@host/x"


def test_failing_commands_print_no_secret(tmp_path) -> None:
    # the broker's wait is a setting and the store's is the URL's own: both fail in seconds, not in a minute
    env = {**os.environ, **SECRETS, "STREAMS_DATA_DIR": str(tmp_path), "STREAMS_CONNECT_TIMEOUT_S": "2"}
    for args in (["sink", "mongo"], ["topics"]):
        done = streams(*args, env=env, timeout=120)
        output = done.stdout + done.stderr
        assert done.returncode != 0
        for secret in ("TopSecret123", "SaslSecret456", "PineSecret789"):
            assert secret not in output, f"{args}: secret printed"
