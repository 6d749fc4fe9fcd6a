"""Configuration from the environment (prefix `STREAMS_`), one place for every knob."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

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


class TopicNames(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="STREAMS_TOPIC_", extra="ignore")

    pages: str = "pages.cleaned"
    documents: str = "documents.assembled"
    chunks: str = "chunks.created"
    versions: str = "documents.versions"
    status: str = "chunks.status"
    dead_letter: str = "streams.dead-letter"
    ticks: str = "streams.assembly-ticks"
    manifests: str = "documents.manifests"
    indexed: str = "documents.indexed"


class Settings(BaseSettings):
    """Everything a worker, sink or CLI command needs; `STREAMS_BROKER=host:port` and so on."""

    model_config = SettingsConfigDict(env_prefix="STREAMS_", env_nested_delimiter="__", extra="ignore")

    broker: str = "127.0.0.1:9092"
    #: The broker `streams up`, `streams demo` and `streams broker` start themselves: "noida" (noida-db,
    #: embedded, needs nothing but pip) or "kafka" (Apache Kafka in KRaft mode; needs Java 17 and Maven).
    broker_kind: str = Field(default="noida", pattern="^(noida|kafka)$")
    schema_registry_url: str | None = None
    partitions: int = Field(default=4, ge=1)
    replication_factor: int = Field(default=1, ge=1)
    topics: TopicNames = Field(default_factory=TopicNames)
    strategies: list[str] = Field(default_factory=lambda: ["window"])
    tokenizer: str = "cl100k_base"

    assembly_timeout_s: float = Field(default=300.0, gt=0)
    sweep_interval_s: float = Field(default=5.0, gt=0)
    max_page_bytes: int = Field(default=2_000_000, ge=1)
    max_pages: int = Field(default=5_000, ge=1)
    max_document_bytes: int = Field(default=16_000_000, ge=1)
    max_pending_bytes: int = Field(default=256_000_000, ge=1)
    max_message_bytes: int = Field(default=52_428_800, ge=1)
    #: Producer compression for every topic we write. lz4 costs the workers less CPU per page than gzip
    #: (aiokafka's is fixed at level 9) and keeps large documents small on the broker (figures:
    #: docs/benchmarks.md, Pipeline, session 6); "none" for a broker on localhost.
    compression: str = Field(default="lz4", pattern="^(none|gzip|snappy|lz4|zstd)$")
    #: How long a worker's producer waits to fill a batch: fewer, larger produce requests, so the assembler
    #: and the broker spend less CPU per page, for at most this much more latency per hop (figures:
    #: docs/benchmarks.md, Session 7: fixes and their effect).
    producer_linger_ms: int = Field(default=20, ge=0, le=1000)
    # faust's default: a worker's commit timer is one of the few things it wakes for while idle.
    commit_interval_s: float = Field(default=2.8, gt=0, le=60)

    data_dir: Path = Path("var")
    metrics_port: int = Field(default=0, ge=0, description="/metrics, /healthz, /readyz; 0 = off")
    web_port: int = 0
    #: The web console (`streams ui`, also started by `streams up`). A bind other than loopback needs
    #: `ui_token`; without `ui_writable` it never writes (no publishing from the "try a file" page).
    ui_host: str = "127.0.0.1"
    ui_port: int = Field(default=0, ge=0, le=65535, description="0: 8765 for `streams ui`, a free port for `up`")
    ui_token: str | None = None
    ui_writable: bool = False
    ui_max_upload_bytes: int = Field(default=5_000_000, ge=1)
    #: Where one-shot jobs (`streams audit` as a CronJob) push their metrics; unset = not pushed.
    pushgateway_url: str | None = None
    processing_guarantee: str = "at_least_once"
    #: Lineage label written on records instead of the chunker's own version (replays with a new chunker).
    chunker_version: str | None = None

    # Sinks
    mongo_url: str = "mongodb://127.0.0.1:27017"
    mongo_database: str = "streams"
    mongo_collection: str = "chunks"
    vector_store: str = "lancedb"  # or "pinecone"
    lancedb_path: Path | None = None  # default: <data_dir>/lancedb
    pinecone_api_key: str | None = None
    pinecone_host: str | None = None
    pinecone_index_host: str | None = None
    pinecone_namespace: str = "streams"
    embed_model: str | None = None
    #: Forward pass: "onnx" (ONNX Runtime; the same chunks as torch, and no torch import in the embedding
    #: processes, which was most of their start), "torch" (sentence-transformers) or "onnx-int8"
    #: (quantised: faster, vectors move). Figures: docs/benchmarks.md, Sessions 11 and 14.
    embed_backend: str = Field(default="onnx", pattern="^(torch|onnx|onnx-int8)$")
    #: Where exported ONNX graphs are kept (default: $XDG_CACHE_HOME/streams/onnx, once per machine).
    embed_export_dir: Path | None = None
    #: Vectors shared by `semantic`, `cluster` and the vector sink: "sqlite" (a file in the data
    #: directory, one machine), "mongo" (a collection next to the chunks: replicas, restarts), "none".
    embed_cache: str = Field(default="sqlite", pattern="^(sqlite|mongo|none)$")
    embed_cache_path: Path | None = None  # default: <data_dir>/embeddings.sqlite
    embed_cache_max_rows: int = Field(default=500_000, ge=1)
    embed_cache_ttl_days: int = Field(default=30, ge=1)
    #: Forward-pass threads; unset: 1 in a worker (workers scale by replicas), the runtime's default elsewhere.
    embed_threads: int | None = Field(default=None, ge=0, le=256)
    #: A chunk longer than the model's 256 word pieces: "mean" of windows that each fit (retrieves better:
    #: docs/benchmarks.md, "Long chunks"), or "truncate" (its tail is not in the vector). Either way it
    #: is counted (streams_vector_long_chunks_total, streams_embedding_long_texts_total).
    embed_long_chunks: str = Field(default="mean", pattern="^(truncate|mean)$")
    delete_superseded_vectors: bool = False
    #: Strategies whose vectors embed a chunk's heading path (its section path) before its text; the stored
    #: text stays plain. Where it retrieves better: docs/benchmarks.md, sessions 13 and 16.
    embed_context: list[str] = Field(default_factory=lambda: ["semantic", "cluster", "hybrid"])
    #: "group": consumer-group membership (scale sinks out); "manual": one replica owns all partitions.
    sink_assignment: str = Field(default="group", pattern="^(group|manual)$")
    #: Records a sink takes per poll and writes per batch (`streams sink --batch-size` overrides it).
    sink_batch_size: int = Field(default=256, ge=1, le=100_000)
    changelog_cleanup: str = Field(default="compact", pattern="^(compact|delete)$")

    # Strategy options (`STREAMS_SECTION__MAX_TOKENS=512`, a `[section]` table in the --config file, or
    # `streams chunk --set`): raw here, validated by streams.core.options when a strategy is built.
    window: dict[str, Any] = Field(default_factory=dict)
    letter: dict[str, Any] = Field(default_factory=dict)
    finance: dict[str, Any] = Field(default_factory=dict)
    section: dict[str, Any] = Field(default_factory=dict)
    hybrid: dict[str, Any] = Field(default_factory=dict)
    semantic: dict[str, Any] = Field(default_factory=dict)
    cluster: dict[str, Any] = Field(default_factory=dict)

    # Security for real deployments (never logged: see `redacted()`).
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = None
    ssl_cafile: str | None = None

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

    def strategy_options(self, strategy: str) -> Any:
        """The validated options of `strategy` (streams.core.options.OptionsError: one line if bad)."""
        from streams.core.options import make_options

        return make_options(strategy, getattr(self, strategy, None) or {})

    def redacted(self) -> dict[str, object]:
        """Settings safe to print or log: passwords, keys and URL credentials masked."""
        data = self.model_dump(mode="json")
        for key in ("sasl_password", "pinecone_api_key"):
            if data.get(key):
                data[key] = "***"
        for key in ("mongo_url", "schema_registry_url", "pinecone_host"):
            if data.get(key):
                data[key] = mask_url(data[key])
        return data


def is_setting_variable(name: str) -> bool:
    """Whether an environment variable sets a field of `Settings` (STREAMS_BROKER, STREAMS_TOPIC_PAGES,
    STREAMS_SECTION__MAX_TOKENS, ...), as opposed to a process switch such as STREAMS_DEBUG."""
    if not name.startswith("STREAMS_"):
        return False
    field = name[len("STREAMS_") :].split("__")[0].lower()
    return field in Settings.model_fields or field.startswith("topic_") or name in (SETTINGS_ENV, CONFIG_ENV)


def mask_url(url: str) -> str:
    """`scheme://user:secret@host` -> `scheme://user:***@host`."""
    import re

    return re.sub(r"(//[^/:@]+:)[^@/]+@", r"\1***@", url)


def load_settings(**overrides: object) -> Settings:
    return Settings(**overrides)  # type: ignore[arg-type]
