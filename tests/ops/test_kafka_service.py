"""The pieces of the Kafka service that need no broker: its cluster ids and its one clear line."""

from __future__ import annotations

import base64

import pytest

from streams.ops import kafka
from streams.ops.embedded import ServiceError


def test_a_cluster_id_never_looks_like_an_option(monkeypatch: pytest.MonkeyPatch) -> None:
    """An id starting with "-" made the storage tool fail ("--cluster-id expected one argument")."""
    dashed = b"\xfb" + bytes(15)  # URL-safe base64 of this starts with "-"
    assert base64.urlsafe_b64encode(dashed).startswith(b"-")
    draws = iter([dashed, bytes(range(16))])
    monkeypatch.setattr(kafka.uuid, "uuid4", lambda: type("U", (), {"bytes": next(draws)})())
    assert kafka.cluster_id() == base64.urlsafe_b64encode(bytes(range(16))).decode().rstrip("=")


def test_ids_are_22_characters_of_url_safe_base64() -> None:
    for _ in range(500):
        value = kafka.cluster_id()
        assert len(value) == 22 and not value.startswith("-")
        assert len(base64.urlsafe_b64decode(value + "==")) == 16


def test_no_java_is_one_line_saying_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(kafka.shutil, "which", lambda name: None)
    from streams.ops import jvm

    monkeypatch.setattr(jvm.shutil, "which", lambda name: None)
    with pytest.raises(ServiceError, match=r"needs Java 17 or newer .*apt-get install openjdk-17-jre-headless"):
        jvm.java_binary("Apache Kafka")
