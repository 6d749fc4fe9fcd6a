"""What the files of a sentence-transformers model directory say: its identity and how it turns token
states into a sentence vector. Shared by the embedder and the graph builder, so neither imports the other
for it, and read from the files every time: no model's settings are written into the code."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streams.core.chunkers.base import EmbeddingUnavailable

#: sentence-transformers' pooling modes this project computes, by their `1_Pooling/config.json` key.
POOLING_MODES = {
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len",
}
_MODULES = "sentence_transformers.models."


def model_fingerprint(model_path: Path) -> str:
    """Configuration, vocabulary and weight sizes: a different model never shares cached vectors."""
    digest = hashlib.sha256()
    for name in ("config.json", "tokenizer.json", "modules.json", "1_Pooling/config.json", "sentence_bert_config.json"):
        if (model_path / name).is_file():
            digest.update((model_path / name).read_bytes())
    for weights in sorted(model_path.glob("*.safetensors")) + sorted(model_path.glob("*.bin")):
        digest.update(f"{weights.name}:{weights.stat().st_size}".encode())
    return digest.hexdigest()[:16]


def sentence_config(model_path: str) -> dict[str, Any]:
    """sentence-transformers' own settings for the model (max_seq_length, lower-casing)."""
    path = Path(model_path) / "sentence_bert_config.json"
    return json.loads(path.read_text()) if path.is_file() else {}


@dataclass(frozen=True)
class ModelSpec:
    """How a model directory embeds: its vector's size, the word pieces it reads, its pooling and whether
    its pipeline ends in a Normalize module, as sentence-transformers would run it."""

    dimension: int
    max_pieces: int
    pooling: str = "mean"
    normalize: bool = True
    lowercase: bool = False  # sentence-transformers' do_lower_case: the text is lower-cased before tokenising


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise EmbeddingUnavailable(f"embedding model file {path} is unreadable: {exc}") from exc


def model_spec(model_path: str | Path) -> ModelSpec:
    """The spec a sentence-transformers directory declares. Its modules must be a Transformer, one Pooling
    of a mode listed in POOLING_MODES and an optional Normalize; anything else (a Dense layer, a prompt-
    dependent pooling) is refused by name rather than embedded differently from sentence-transformers."""
    path = Path(model_path)
    if not (path / "config.json").is_file():
        raise EmbeddingUnavailable(f"embedding model directory has no config.json: {path}")
    config = _json(path / "config.json")
    modules = _json(path / "modules.json") if (path / "modules.json").is_file() else []
    kinds = [str(m.get("type", "")).removeprefix(_MODULES) for m in modules]
    unknown = [k for k in kinds if k not in ("Transformer", "Pooling", "Normalize")]
    if unknown:
        raise EmbeddingUnavailable(f"embedding model {path.name}: module {unknown[0]} is not supported")
    pooling = "mean"  # a bare Hugging Face directory: sentence-transformers adds mean pooling
    if "Pooling" in kinds:
        pooling_dir = path / modules[kinds.index("Pooling")].get("path", "1_Pooling")
        flags = _json(pooling_dir / "config.json")
        on = [mode for key, mode in POOLING_MODES.items() if flags.get(key)]
        others = [k for k, v in flags.items() if k.startswith("pooling_mode") and v and k not in POOLING_MODES]
        if others or len(on) != 1:
            what = ", ".join(others) or ", ".join(on) or "none"
            raise EmbeddingUnavailable(
                f"embedding model {path.name}: pooling {what} is not supported (one of mean, cls, max, mean_sqrt_len)"
            )
        pooling = on[0]
    limit = sentence_config(str(path)).get("max_seq_length") or config.get("max_position_embeddings", 512)
    return ModelSpec(
        dimension=int(config["hidden_size"]),
        max_pieces=int(min(limit, config.get("max_position_embeddings", limit))),
        pooling=pooling,
        normalize="Normalize" in kinds,
        lowercase=bool(sentence_config(str(path)).get("do_lower_case", False)),
    )
