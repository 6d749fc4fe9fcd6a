"""What the files of a sentence-transformers model directory say: its identity and its settings. Shared by
the embedder and the ONNX exporter, so neither imports the other for it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


def model_fingerprint(model_path: Path) -> str:
    """Configuration, vocabulary and weight sizes: a different model never shares cached vectors."""
    digest = hashlib.sha256()
    for name in ("config.json", "tokenizer.json", "modules.json"):
        if (model_path / name).is_file():
            digest.update((model_path / name).read_bytes())
    for weights in sorted(model_path.glob("*.safetensors")) + sorted(model_path.glob("*.bin")):
        digest.update(f"{weights.name}:{weights.stat().st_size}".encode())
    return digest.hexdigest()[:16]


def sentence_config(model_path: str) -> dict[str, Any]:
    """sentence-transformers' own settings for the model (max_seq_length, lower-casing)."""
    path = Path(model_path) / "sentence_bert_config.json"
    return json.loads(path.read_text()) if path.is_file() else {}
