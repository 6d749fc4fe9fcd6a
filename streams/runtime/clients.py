"""Kafka clients of every role: their shared librdkafka settings and their names.

Every process names itself `streams.<role>.p<pid>.<host>` as client id, so a group's members say which
process on which host holds them (the group janitor, `streams.ops.groups`, reads them back). A role's
consumer group is `streams-<role>`.
"""

from __future__ import annotations

import logging
import os
import re
import socket

from streams.settings import Settings

KAFKA_LOG = logging.getLogger("streams.kafka")
KAFKA_LOG.addHandler(logging.NullHandler())  # silent unless the process configured logging (workers, tests)

#: What `client_id` writes, read back by the group janitor.
CLIENT_ID_PATTERN = re.compile(r"^streams\.(?P<role>[A-Za-z0-9_-]+)\.p(?P<pid>\d+)\.(?P<host>[A-Za-z0-9._-]+)$")


def client_config(settings: Settings) -> dict[str, object]:
    """librdkafka settings shared by admin, producers and consumers, including security.

    librdkafka's own log lines go through Python logging (`streams.kafka`), not straight to stderr, so a
    command's output stays one clear line and tests capture them.
    """
    conf: dict[str, object] = {
        "bootstrap.servers": settings.broker,
        "security.protocol": settings.security_protocol,
        "logger": KAFKA_LOG,
    }
    if settings.sasl_mechanism:
        conf["sasl.mechanism"] = settings.sasl_mechanism
        conf["sasl.username"] = settings.sasl_username or ""
        conf["sasl.password"] = settings.sasl_password or ""
    if settings.ssl_cafile:
        conf["ssl.ca.location"] = settings.ssl_cafile
    return conf


def host_name() -> str:
    """This host's name as it appears in client ids."""
    return re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname()) or "localhost"


def client_id(role: str, pid: int | None = None) -> str:
    """A Kafka client id that says which process on which host holds a group membership."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "-", role)
    return f"streams.{safe}.p{pid or os.getpid()}.{host_name()}"


def group_id(role: str) -> str:
    """Consumer group of a role: `streams-assembler`, `streams-chunker-window`, `streams-sink-mongo`, ..."""
    return f"streams-{role}"
