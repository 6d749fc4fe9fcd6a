"""A real schema registry with Confluent's API, started by the project: Apicurio Registry's `ccompat` API.

`STREAMS_SCHEMA_REGISTRY_URL` makes every producer write Confluent-framed Avro (a zero byte, the schema id,
the body) and every consumer look ids up; that path is tested end to end against this registry. Confluent's
own Schema Registry is not on Maven Central; Apicurio's runnable distribution is
(`io.apicurio:apicurio-registry-app:VERSION:tar.gz:all`). 3.0.9 is the newest release built for Java 17.

Two settings make it behave as Confluent's does for our clients: canonical hashing (the Avro serializer
sends the schema reformatted, which would otherwise register a new version each time) and BACKWARD as the
global compatibility rule (Apicurio's default is none).
"""

from __future__ import annotations

import shutil
import tarfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from streams.ops.jvm import cache_dir, fetch_once, java_binary, maven
from streams.ops.processes import EmbeddedProcess, ServiceError, free_port

APICURIO_VERSION = "3.0.9"


def registry_jar() -> Path:
    """Apicurio's runner jar (its `lib/` beside it), fetched from Maven Central on first use."""
    root = cache_dir(f"apicurio-{APICURIO_VERSION}")
    runner = root / "dist" / f"apicurio-registry-app-{APICURIO_VERSION}-runner.jar"

    def fetch() -> None:
        artifact = f"io.apicurio:apicurio-registry-app:{APICURIO_VERSION}:tar.gz:all"
        # dependency:get 2.8 with transitive=false: the release's parent POM is not on Central, so
        # resolvers that read it (copy, 3.x) fail
        maven(
            f"Apicurio Registry {APICURIO_VERSION}",
            [
                "org.apache.maven.plugins:maven-dependency-plugin:2.8:get",
                f"-Dartifact={artifact}",
                "-Dtransitive=false",
                f"-Ddest={root}/",
            ],
            root,
        )
        archive = root / f"apicurio-registry-app-{APICURIO_VERSION}-all.tar.gz"
        shutil.rmtree(root / "dist", ignore_errors=True)
        with tarfile.open(archive) as tar:
            tar.extractall(root / "dist", filter="data")
        archive.unlink()
        if not runner.exists():
            raise ServiceError(f"Apicurio's archive held no {runner.name}")

    fetch_once(root, fetch)
    return runner


@dataclass
class SchemaRegistry(EmbeddedProcess):
    """Apicurio Registry on a loopback port, its storage in memory (a test's registry lives as long as it)."""

    heap: str = "256m"

    def launch(self) -> None:
        java = java_binary(f"Apicurio Registry {APICURIO_VERSION}")
        jar = registry_jar()
        tmp = self.data_dir / "registry-tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        self.args = [
            java,
            f"-Xmx{self.heap}",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            f"-Djava.io.tmpdir={tmp}",
            f"-Dvertx.cacheDirBase={tmp / 'vertx'}",
            "-Dquarkus.http.host=127.0.0.1",
            f"-Dquarkus.http.port={self.port}",
            "-Dapicurio.ccompat.use-canonical-hash=true",
            "-Dapicurio.rules.global.compatibility=BACKWARD",
            "-jar",
            str(jar),
        ]
        super().launch()

    def ready(self, timeout: float = 90.0) -> SchemaRegistry:
        deadline = time.monotonic() + timeout
        super().ready(timeout)
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise ServiceError(f"the schema registry exited with code {self.proc.returncode}")
            try:
                with urllib.request.urlopen(f"{self.url}/health/ready", timeout=2) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.3)
        raise ServiceError(f"the schema registry on {self.address} was not ready in {timeout:.0f}s")

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    @property
    def confluent_url(self) -> str:
        """What `STREAMS_SCHEMA_REGISTRY_URL` is set to: the Confluent-compatible API."""
        return f"{self.url}/apis/ccompat/v7"


def schema_registry(data_dir: Path, port: int | None = None) -> SchemaRegistry:
    return SchemaRegistry("schema-registry", [], port or free_port(), data_dir)
