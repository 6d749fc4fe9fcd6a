"""Apache Kafka started by the project itself: one KRaft node (broker and controller in one JVM), or a
cluster of three such nodes (a controller quorum of three, replication factor 3, min ISR 2), as deployed.

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
from concurrent.futures import ThreadPoolExecutor
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
    #: Its id in a cluster, the cluster's controller quorum (`id@host:port,...`; "" for a node alone) and
    #: the replication of the internal topics (offsets, transactions), with their min ISR one below it.
    node_id: int = 1
    voters: str = ""
    replicas: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        self.controller_port = self.controller_port or free_port()

    @property
    def log_dir(self) -> Path:
        return self.data_dir / "kafka"

    def properties(self) -> dict[str, str]:
        listener = self.extra.get("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT")
        isr = str(max(1, self.replicas - 1))
        props = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": self.voters or f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": listener,
            "log.dirs": str(self.log_dir),
            # one node: every internal topic has one replica; three: three, and two in sync to take a write
            "offsets.topic.replication.factor": str(self.replicas),
            "offsets.topic.num.partitions": "8",
            "transaction.state.log.replication.factor": str(self.replicas),
            "transaction.state.log.min.isr": isr,
            "transaction.state.log.num.partitions": "8",
            "share.coordinator.state.topic.replication.factor": str(self.replicas),
            "share.coordinator.state.topic.min.isr": isr,
            "default.replication.factor": str(self.replicas),
            "min.insync.replicas": isr,
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
            if self.node_id != 1:  # a cluster's node: the template's cluster id, its own node and directory ids
                meta = self.log_dir / "meta.properties"
                lines = [
                    line for line in meta.read_text().splitlines() if not line.startswith(("node.id=", "directory.id="))
                ]
                meta.write_text("\n".join([*lines, f"node.id={self.node_id}", f"directory.id={cluster_id()}"]) + "\n")
            return
        if self.node_id != 1:  # the template is made by a node 1 (the storage tool needs no peer to format)
            raise ServiceError("a cluster node is formatted from the template that node 1 leaves")
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


@dataclass
class KafkaCluster:
    """Three (or more) KRaft nodes on loopback, each broker and controller, each with its own data directory
    and ports: the controller quorum is all of them, internal topics have a replica on each, and a write
    needs two in sync. Its `address` is every node's, as a client's bootstrap list; each node is a service of
    its own to supervise (`nodes`), so a dead one is started again alone."""

    data_dir: Path
    nodes: list[KafkaBroker]
    kind: str = "kafka"
    janitor: None = None
    name: str = "broker"

    @property
    def address(self) -> str:
        return ",".join(node.address for node in self.nodes)

    @property
    def proc(self):
        return self.nodes[0].proc

    @property
    def log_path(self) -> Path:
        return self.nodes[0].log_path

    @property
    def throwaway(self) -> bool:
        return all(node.throwaway for node in self.nodes)

    @throwaway.setter
    def throwaway(self, value: bool) -> None:
        for node in self.nodes:
            node.throwaway = value

    def launch(self) -> None:
        for node in self.nodes:  # node 1 first: it formats the storage template the others copy
            node.launch()

    def ready(self, timeout: float = 180.0) -> KafkaCluster:
        """Every node answers, and the metadata names all of them."""
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout
        for node in self.nodes:
            node.ready(max(1.0, deadline - time.monotonic()))
        admin = AdminClient({"bootstrap.servers": self.address, **self.nodes[0].client})
        while len(admin.list_topics(timeout=5.0).brokers) < len(self.nodes):
            if time.monotonic() > deadline:
                raise ServiceError(f"the Kafka cluster on {self.address} did not see all {len(self.nodes)} nodes")
            time.sleep(0.2)
        return self

    def start(self, timeout: float = 180.0) -> KafkaCluster:
        self.launch()
        return self.ready(timeout)

    def alive(self) -> bool:
        return all(node.alive() for node in self.nodes)

    def stop(self, timeout: float = 30.0) -> None:
        """All nodes at once: one by one, each controlled shutdown waits for leadership to move off it onto
        nodes that are about to go too (36 s for three, against a few seconds side by side)."""
        with ThreadPoolExecutor(len(self.nodes)) as pool:
            list(pool.map(lambda node: node.stop(timeout), self.nodes))

    def kill(self) -> None:
        for node in self.nodes:
            node.kill()

    def __enter__(self) -> KafkaCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def kafka_cluster(data_dir: Path, nodes: int = 3) -> KafkaCluster:
    """`nodes` KRaft nodes on free loopback ports, a controller quorum of all of them."""
    ports = [(free_port(), free_port()) for _ in range(nodes)]
    voters = ",".join(f"{n + 1}@127.0.0.1:{controller}" for n, (_, controller) in enumerate(ports))
    members = [
        KafkaBroker(
            f"broker-{n + 1}",
            [],
            port,
            data_dir / f"node-{n + 1}",
            controller_port=controller,
            node_id=n + 1,
            voters=voters,
            replicas=min(3, nodes),
        )
        for n, (port, controller) in enumerate(ports)
    ]
    return KafkaCluster(data_dir, members)
