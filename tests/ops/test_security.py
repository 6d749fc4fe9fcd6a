"""Security for real: Apache Kafka demanding SASL_SSL (SCRAM-SHA-512, a certificate this test makes).

The pipeline runs end to end with the project's settings and every client connects: the faust workers,
the librdkafka producers and sinks, `lag`, `audit`, `status`, `tail` and the console's bus view. A wrong
password and an untrusted certificate are each one clear line and a refusal to start (exit 78, which the
supervisor does not retry), with the password nowhere in what is printed.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from streams.ops.embedded import free_port
from streams.ops.kafka import KafkaBroker
from streams.ops.pipeline import Collector, LocalPipeline, child_env, publish_pages
from streams.settings import Settings
from streams.sinks.mongo import MongoSink
from tests.cli import streams
from tests.conftest import KAFKA_NEEDS, make_pages
from tests.debian import ensure

ADMIN_PASSWORD = "admin-Pw-4417"
PASSWORD = "alice-Pw-9023"

# Apache Kafka of its own (started here): in the Kafka pass alone
pytestmark = [pytest.mark.integration, pytest.mark.kafka_only]


def openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def make_ca(folder: Path, name: str) -> Path:
    openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "2",
        "-keyout", f"{name}.key", "-out", f"{name}.pem", "-subj", f"/CN={name}",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=folder,
    )  # fmt: skip
    return folder / f"{name}.pem"


def make_broker_keystore(folder: Path, ca: str) -> Path:
    """A broker certificate for 127.0.0.1 and localhost signed by `ca`; key and chain in one PEM file."""
    openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-sha256", "-keyout", "broker.key", "-out", "broker.csr",
        "-subj", "/CN=localhost",
        cwd=folder,
    )  # fmt: skip
    (folder / "broker.ext").write_text(
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n"
    )
    openssl(
        "x509", "-req", "-sha256", "-days", "2", "-in", "broker.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
        "-CAcreateserial", "-out", "broker.crt", "-extfile", "broker.ext",
        cwd=folder,
    )  # fmt: skip
    keystore = folder / "broker-keystore.pem"
    keystore.write_text("".join((folder / n).read_text() for n in ("broker.key", "broker.crt", f"{ca}.pem")))
    return keystore


@dataclass
class Secure:
    broker: KafkaBroker
    ca: Path
    other_ca: Path

    def settings(self, data_dir: Path, **overrides: object) -> Settings:
        base = {
            "broker": self.broker.address,
            "broker_kind": "kafka",
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_username": "alice",
            "sasl_password": PASSWORD,
            "ssl_cafile": str(self.ca),
            "data_dir": data_dir,
            "partitions": 2,
            "sink_assignment": "manual",
        }
        return Settings(**{**base, **overrides})


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secure]:
    if missing := ensure(KAFKA_NEEDS):
        pytest.fail(f"Apache Kafka with TLS cannot run here: {missing}")
    folder = tmp_path_factory.mktemp("secure")
    ca = make_ca(folder, "test-ca")
    other_ca = make_ca(folder, "other-ca")
    keystore = make_broker_keystore(folder, "test-ca")
    port, controller = free_port(), free_port()
    login = "org.apache.kafka.common.security.scram.ScramLoginModule"
    jaas = f'{login} required username="admin" password="{ADMIN_PASSWORD}";'
    broker = KafkaBroker(
        "broker",
        [],
        port,
        folder,
        controller_port=controller,
        extra={
            "listeners": f"SASL_SSL://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
            "advertised.listeners": f"SASL_SSL://127.0.0.1:{port}",
            "listener.security.protocol.map": "SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "SASL_SSL",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": jaas,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(ca),
        },
        format_args=[
            "--add-scram",
            f"SCRAM-SHA-512=[name=admin,password={ADMIN_PASSWORD}]",
            "--add-scram",
            f"SCRAM-SHA-512=[name=alice,password={PASSWORD}]",
        ],
        client={
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "admin",
            "sasl.password": ADMIN_PASSWORD,
            "ssl.ca.location": str(ca),
        },
    )
    broker.start()
    try:
        yield Secure(broker, ca, other_ca)
    finally:
        broker.stop()


def cli(settings: Settings, *args: str) -> subprocess.CompletedProcess:
    return streams(*args, env=child_env(settings), timeout=180)


def test_the_pipeline_and_every_client_run_over_sasl_ssl(secure: Secure, tmp_path: Path) -> None:
    pages = make_pages("secure-1", ["Over an encrypted, authenticated bus. " * 60, "A second page. " * 60])
    settings = secure.settings(tmp_path)
    with LocalPipeline(settings, ["window"], own_broker=False, sinks=["mongo"]) as pipeline:
        settings = pipeline.settings
        publish_pages(settings, pages)
        collector = Collector(settings)
        chunks = len(collector.wait([("secure-1", 0)], ["window"], timeout=180).records())
        collector.close()
        assert chunks > 0
        mongo = MongoSink.of(settings)
        deadline = time.monotonic() + 120
        while mongo.count(doc_id="secure-1") < chunks:
            assert time.monotonic() < deadline, "the MongoDB sink did not store the chunks over SASL_SSL"
            time.sleep(0.5)
        mongo.close()
        lag = cli(settings, "lag", "--json")
        assert lag.returncode == 0, lag.stderr
        assert "streams-chunker-window" in lag.stdout
        audit = cli(settings, "audit", "-s", "window", "--stores", "mongo")
        assert audit.returncode == 0, audit.stdout + audit.stderr
        status = cli(settings, "status", "secure-1", "-s", "window", "--stores", "mongo", "--json")
        assert status.returncode == 0, status.stderr
        tail = cli(settings, "tail", "--limit", "1", "--json", "--timeout", "5")
        assert tail.returncode == 0 and "secure-1" in tail.stdout, tail.stderr
        from starlette.testclient import TestClient

        from streams.ui.app import create_app

        with TestClient(create_app(settings)) as console:
            page = console.get("/bus")
        assert page.status_code == 200 and "streams-chunker-window" in page.text


@pytest.mark.parametrize("command", [["lag"], ["worker", "--role", "assembler"], ["sink", "mongo"]])
def test_a_wrong_password_is_one_line_and_a_refusal_to_start(secure: Secure, tmp_path: Path, command) -> None:
    wrong = "wrong-Pw-5531"
    done = cli(secure.settings(tmp_path, sasl_password=wrong), *command)
    assert done.returncode == 78, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "refused the credentials of SASL user 'alice'" in lines[0], done.stderr
    assert wrong not in done.stderr + done.stdout


def test_an_untrusted_certificate_is_one_line_and_a_refusal_to_start(secure: Secure, tmp_path: Path) -> None:
    done = cli(secure.settings(tmp_path, ssl_cafile=str(secure.other_ca)), "worker", "--role", "chunker:window")
    assert done.returncode == 78, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "TLS with the broker" in lines[0] and "certificate verify failed" in lines[0]
    assert PASSWORD not in done.stderr + done.stdout
