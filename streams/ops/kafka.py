"""Apache Kafka started by the project itself: one KRaft node (broker and controller in one JVM).

Users run the service on Apache Kafka; this is that broker, without Docker, for `streams up --broker kafka`,
`streams demo --broker kafka`, `streams broker --kind kafka` and the test suites. Its jars come from Maven
Central once (`org.apache.kafka:kafka_2.13` and its run-time dependencies, with log4j2 for logging) into a
cache outside the repository; each run gets its own data directory, formatted on first start, and free
loopback ports. It is ready when a metadata request answers, not merely when its port listens.

The version is pinned in `KAFKA_VERSION`, the same in `docker-compose.yml` and `deploy/` (a test checks
that they agree). To move it: change `KAFKA_VERSION` and the image tags, then run the suites on Kafka
(`STREAMS_TEST_BUS=kafka pytest -m integration`); the new jars are fetched on first use.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from streams.ops.jvm import cache_dir, fetch_once, java_binary, maven
from streams.ops.processes import EmbeddedProcess, ServiceError, free_port

#: The Apache Kafka release the project runs and tests on (the newest 4.x that aiokafka 0.14 and
#: librdkafka 2.x speak to; Kafka 4 dropped protocol versions older than 2.1's and both clients are newer).
KAFKA_VERSION = "4.4.0"
SCALA_VERSION = "2.13"
#: Kafka 4 logs through log4j2 behind slf4j 1.7, as its own distribution ships.
LOG4J_VERSION = "2.24.3"

POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>streams.local</groupId><artifactId>kafka-runtime</artifactId><version>{kafka}</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_{scala}</artifactId>
      <version>{kafka}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId>
      <version>{log4j}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId>
      <version>{log4j}</version></dependency>
  </dependencies>
</project>
"""

#: Warnings and errors only, plus the line that says the server started: a quiet log a person can read.
LOG4J2 = """status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.out.ref = OUT
logger.started.name = kafka.server.KafkaRaftServer
logger.started.level = INFO
"""


def cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (as `kafka-storage random-uuid`).
    Never one that starts with "-", which the storage tool's parser takes for an option (1 in 64 ids failed
    to format a node), so drawn again as Kafka's own `Uuid.randomUuid` does."""
    while True:
        candidate = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not candidate.startswith("-"):
            return candidate


def kafka_jars() -> Path:
    """The folder of Kafka's run-time jars, resolved from Maven Central on first use (then cached)."""
    root = cache_dir(f"kafka-{KAFKA_VERSION}")
    libs = root / "libs"

    def fetch() -> None:
        (root / "pom.xml").write_text(POM.format(kafka=KAFKA_VERSION, scala=SCALA_VERSION, log4j=LOG4J_VERSION))
        shutil.rmtree(libs, ignore_errors=True)
        what = f"Apache Kafka {KAFKA_VERSION}"
        maven(what, ["dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={libs}"], root)
        if not any(libs.glob(f"kafka_{SCALA_VERSION}-*.jar")):
            raise ServiceError(f"Maven fetched no kafka_{SCALA_VERSION} jar into {libs}")

    fetch_once(root, fetch)
    return libs


@dataclass
class KafkaBroker(EmbeddedProcess):
    """A single Apache Kafka node in KRaft mode on loopback, with its own data directory.

    `listeners` may replace the plain client listener (the security test adds SASL_SSL); `extra` adds
    server properties; `client` is the librdkafka configuration the readiness probe connects with.
    """

    kind: str = "kafka"
    janitor: None = None  # Kafka expires dead group members itself: no janitor
    controller_port: int = 0
    message_max_bytes: int = 52_428_800
    extra: dict[str, str] = field(default_factory=dict)
    client: dict[str, object] = field(default_factory=dict)
    format_args: list[str] = field(default_factory=list)
    heap: str = "512m"
    #: Killed rather than shut down when stopped: for a broker whose data nobody reads again (a test's)
    throwaway: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        self.controller_port = self.controller_port or free_port()

    @property
    def log_dir(self) -> Path:
        return self.data_dir / "kafka"

    def properties(self) -> dict[str, str]:
        listener = self.extra.get("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT")
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": listener,
            "log.dirs": str(self.log_dir),
            # one node: every internal topic has one replica
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "8",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "8",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            # a local broker has no members still booting: rebalance at once rather than after 3 s
            "group.initial.rebalance.delay.ms": "0",
            "message.max.bytes": str(self.message_max_bytes),
            "replica.fetch.max.bytes": str(self.message_max_bytes),
            "num.network.threads": "2",
            "num.io.threads": "4",
            "background.threads": "4",
            "log.cleaner.threads": "1",
            # a no-op metadata record every 5 s, not 0.5 s: idle CPU 0.71x alone, 0.88x with clients (benchmarks.md)
            "metadata.max.idle.interval.ms": "5000",
            "auto.create.topics.enable": "false",  # as deployed: topics exist only as `streams topics` made them
        }
        props.update(self.extra)
        return props

    def launch(self) -> None:
        java = java_binary(f"Apache Kafka {KAFKA_VERSION}")
        libs = kafka_jars()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        config = self.data_dir / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        log4j = self.data_dir / "log4j2.properties"
        log4j.write_text(LOG4J2)
        classpath = f"{libs}/*"
        if not (self.log_dir / "meta.properties").exists():
            self._format(java, classpath, config, log4j)
        self.args = [
            java,
            f"-Xms{self.heap}",
            f"-Xmx{self.heap}",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            # C1 only: C2 kept compiling for minutes of idle (0.78x without it); CPU per record no higher under load
            "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j}",
            "-cp",
            classpath,
            "kafka.Kafka",
            str(config),
        ]
        super().launch()

    def _format(self, java: str, classpath: str, config: Path, log4j: Path) -> None:
        """Format the log directory. A plain node's formatted storage does not depend on its ports or its
        path, so it is formatted once per machine (a JVM start of its own, seconds) and copied for every
        later node; a node with format arguments (SCRAM users) is formatted for itself."""
        template = cache_dir(f"kafka-{KAFKA_VERSION}") / "formatted"
        if not self.format_args and (template / "meta.properties").exists():
            shutil.copytree(template, self.log_dir, dirs_exist_ok=True)
            return
        formatted = subprocess.run(
            [
                java,
                "-cp",
                classpath,
                f"-Dlog4j2.configurationFile={log4j}",
                "kafka.tools.StorageTool",
                "format",
                "-t",
                cluster_id(),
                "-c",
                str(config),
                *self.format_args,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if formatted.returncode != 0:
            tail = " ".join((formatted.stdout + formatted.stderr).split())[-300:]
            raise ServiceError(f"could not format Kafka storage in {self.log_dir}: {tail}")
        if not self.format_args and not (template / "meta.properties").exists():
            staged = template.with_name(f"formatted.{uuid.uuid4().hex}")
            shutil.copytree(self.log_dir, staged)
            try:
                staged.rename(template)  # atomic: a process that lost the race keeps its own copy
            except OSError:
                shutil.rmtree(staged, ignore_errors=True)

    def ready(self, timeout: float = 120.0) -> KafkaBroker:
        """Listening is not enough: ready once a metadata request names this broker."""
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout
        super().ready(timeout)
        admin = AdminClient({"bootstrap.servers": self.address, **self.client})
        while True:
            if self.proc is not None and self.proc.poll() is not None:
                raise ServiceError(f"Kafka exited with code {self.proc.returncode}: {self._tail()}")
            try:
                if admin.list_topics(timeout=2.0).brokers:
                    return self
            except Exception as exc:  # KafkaException while the broker finishes starting
                if time.monotonic() > deadline:
                    raise ServiceError(f"Kafka on {self.address} did not answer metadata requests: {exc}") from None
            if time.monotonic() > deadline:
                raise ServiceError(f"Kafka on {self.address} did not answer metadata requests in {timeout:.0f}s")
            time.sleep(0.2)

    def _tail(self) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return " ".join(text.split())[-400:]

    def stop(self, timeout: float = 30.0) -> None:
        """A controlled shutdown takes Kafka a few seconds; SIGKILL only after `timeout` (or at once for a
        `throwaway` node)."""
        if self.throwaway:
            self.kill()
            return
        super().stop(timeout)


def kafka_broker(data_dir: Path, port: int | None = None) -> KafkaBroker:
    """Apache Kafka on its own port and data directory (jars fetched on first use)."""
    return KafkaBroker("broker", [], port or free_port(), data_dir)
