"""The console is safe by default: loopback only without a token, the token checked on every request."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from streams.settings import ConfigError, Settings
from streams.ui.app import TOKEN_COOKIE, check_bind, create_app, is_loopback
from tests.test_cli import streams


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_loopback_binds_need_no_token(host: str) -> None:
    assert is_loopback(host)
    check_bind(Settings(), host)


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "::", "example.org"])
def test_a_public_bind_without_a_token_is_refused(host: str) -> None:
    with pytest.raises(ConfigError, match="STREAMS_UI_TOKEN"):
        check_bind(Settings(), host)
    check_bind(Settings(ui_token="s3cret"), host)


def test_streams_ui_refuses_to_start_on_a_public_bind_without_a_token(tmp_path: Path) -> None:
    done = streams("ui", "--host", "0.0.0.0", "--port", "0", env={"STREAMS_DATA_DIR": str(tmp_path)}, timeout=60)
    assert done.returncode == 78
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs a token" in lines[0] and "Traceback" not in done.stderr


def test_with_a_token_every_request_must_carry_it() -> None:
    app = create_app(Settings(ui_token="s3cret"))
    with TestClient(app) as client:
        assert client.get("/healthz").status_code == 401
        assert client.get("/healthz", params={"token": "wrong"}).status_code == 401
        assert client.get("/healthz", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        first = client.get("/healthz", params={"token": "s3cret"})
        assert first.status_code == 200 and TOKEN_COOKIE in first.cookies
        assert client.get("/healthz").status_code == 200  # the cookie carries it from here on
        assert client.get("/static/console.css").status_code == 200


def test_no_token_no_gate() -> None:
    with TestClient(create_app(Settings())) as client:
        assert client.get("/healthz").text == "ok"
