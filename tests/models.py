"""Small sentence-transformers models of the BERT family, written by the tests from seeded weights.

No second model ships in a package here, so these stand in for "another model": another size, another
pooling, with or without Normalize. Their vectors carry no meaning, but they are real models:
sentence-transformers loads the same directory, and the project must embed exactly as it does.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from streams.embedding.model import default_model_path

POOLING_KEYS = {"mean": "mean_tokens", "cls": "cls_token", "max": "max_tokens"}


def tiny_bert(
    directory: Path,
    pooling: str = "mean",
    normalize: bool = True,
    hidden: int = 32,
    layers: int = 2,
    max_seq_length: int = 48,
    seed: int = 7,
) -> Path:
    """A BERT with MiniLM's vocabulary and `hidden` dimensions, its weights drawn from `seed`."""
    from safetensors.numpy import save_file

    rng = np.random.default_rng(seed)
    heads, inner, positions = 4, 2 * hidden, 64

    def dense(out: int, into: int, prefix: str) -> dict[str, np.ndarray]:
        return {
            f"{prefix}.weight": (rng.standard_normal((out, into)) * 0.05).astype(np.float32),
            f"{prefix}.bias": (rng.standard_normal(out) * 0.02).astype(np.float32),
        }

    def norm(prefix: str) -> dict[str, np.ndarray]:
        return {f"{prefix}.weight": np.ones(hidden, np.float32), f"{prefix}.bias": np.zeros(hidden, np.float32)}

    tensors: dict[str, np.ndarray] = {
        "embeddings.word_embeddings.weight": (rng.standard_normal((30522, hidden)) * 0.05).astype(np.float32),
        "embeddings.position_embeddings.weight": (rng.standard_normal((positions, hidden)) * 0.05).astype(np.float32),
        "embeddings.token_type_embeddings.weight": (rng.standard_normal((2, hidden)) * 0.05).astype(np.float32),
        **norm("embeddings.LayerNorm"),
        **dense(hidden, hidden, "pooler.dense"),
    }
    for layer in range(layers):
        at = f"encoder.layer.{layer}"
        for name in ("query", "key", "value"):
            tensors.update(dense(hidden, hidden, f"{at}.attention.self.{name}"))
        tensors.update(dense(hidden, hidden, f"{at}.attention.output.dense"))
        tensors.update(norm(f"{at}.attention.output.LayerNorm"))
        tensors.update(dense(inner, hidden, f"{at}.intermediate.dense"))
        tensors.update(dense(hidden, inner, f"{at}.output.dense"))
        tensors.update(norm(f"{at}.output.LayerNorm"))
    directory.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(directory / "model.safetensors"), metadata={"format": "pt"})
    config = {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "hidden_act": "gelu",
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": inner,
        "max_position_embeddings": positions,
        "type_vocab_size": 2,
        "vocab_size": 30522,
        "layer_norm_eps": 1e-12,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
    }
    (directory / "config.json").write_text(json.dumps(config))
    packaged = Path(default_model_path())
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(packaged / name, directory / name)
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
    (directory / "modules.json").write_text(json.dumps(modules))
    (directory / "1_Pooling").mkdir(exist_ok=True)
    flags = {f"pooling_mode_{key}": name == pooling for name, key in POOLING_KEYS.items()}
    (directory / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": hidden, **flags}))
    (directory / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": max_seq_length}))
    return directory
