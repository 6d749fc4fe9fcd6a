"""A BERT encoder as an ONNX graph, written from the model's own weights: no torch, no exporter.

The graph is plain BERT as Hugging Face's `BertModel` computes it: word, position and token-type
embeddings with LayerNormalization; per layer, attention as MatMul/Reshape/Transpose/Softmax with the
padding mask added to the scores, then the feed-forward block with GELU written as Erf (which ONNX Runtime
fuses). Its output is the last hidden state; pooling and normalisation stay in the caller, as in
sentence-transformers. The same weights give the same bytes: nothing in the graph depends on the time or
the machine. A configuration this builder does not know is refused with what it is, never guessed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

#: What the builder knows how to write; anything else is refused by name.
KNOWN = {
    "model_type": {"bert"},
    "hidden_act": {"gelu"},
    "position_embedding_type": {"absolute"},
}
OPSET = 17  # LayerNormalization
GELU_FLOOR = -0.17  # the exact GELU's minimum is about -0.16997
#: The builder's version: in the graph's file name and the vectors' cache identity, so a change to the
#: graph (its vectors move by float rounding) never mixes with vectors of an earlier one.
GRAPH = "g3"


class UnknownModel(ValueError):
    """A model configuration the graph builder does not write (it would have to guess)."""


def check_config(config: Mapping[str, Any]) -> None:
    """Refuse what the builder does not know: the model type, activation or position embeddings."""
    for key, allowed in KNOWN.items():
        value = config.get(key, "absolute" if key == "position_embedding_type" else None)
        if value not in allowed:
            raise UnknownModel(f"cannot build a graph for {key}={value!r}: this builder knows {sorted(allowed)}")
    if config["hidden_size"] % config["num_attention_heads"]:
        raise UnknownModel("hidden_size is not a multiple of num_attention_heads")


def weight_prefix(weights: Mapping[str, np.ndarray]) -> str:
    """'' or 'bert.': checkpoints saved from BertForX keep the encoder under `bert.`."""
    for prefix in ("", "bert."):
        if f"{prefix}embeddings.word_embeddings.weight" in weights:
            return prefix
    raise UnknownModel("no embeddings.word_embeddings.weight among the weights: not a BERT checkpoint")


def bert_graph(
    config: Mapping[str, Any],
    weights: Mapping[str, np.ndarray],
    int8: bool = False,
    reduce_range: bool = False,
) -> Any:
    """The ONNX model (inputs input_ids, attention_mask, token_type_ids; output last_hidden_state).

    `int8`: every dense product in int8 (MatMulInteger), with per-output-channel weight scales and a scale
    per token for the activations, so a text's vector does not depend on its batch (ONNX Runtime's dynamic
    quantisation scales a whole batch at once); GELU's output, never below GELU_FLOOR, is shifted to use
    all 256 levels. `reduce_range`: 7-bit weights, for CPUs without VNNI, whose int8 kernels can overflow
    on 8-bit ones."""
    from onnx import TensorProto, helper, numpy_helper

    check_config(config)
    prefix = weight_prefix(weights)
    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    size = hidden // heads
    eps = float(config.get("layer_norm_eps", 1e-12))
    nodes: list[Any] = []
    initializers: list[Any] = []
    count = iter(range(1_000_000))

    def weight(name: str, transpose: bool = False) -> str:
        key = f"{prefix}{name}"
        if key not in weights:
            raise UnknownModel(f"weight {key} is missing")
        array = np.asarray(weights[key], dtype=np.float32)
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(array.T if transpose else array), key))
        return key

    def constant(value: np.ndarray, name: str) -> str:
        initializers.append(numpy_helper.from_array(value, name))
        return name

    def node(op: str, inputs: list[str], **attributes: Any) -> str:
        out = f"{op.lower()}_{next(count)}"
        nodes.append(helper.make_node(op, inputs, [out], **attributes))
        return out

    def dense(x: str, name: str) -> str:  # x @ W.T + b, W stored transposed once at build time
        return node("Add", [node("MatMul", [x, weight(f"{name}.weight", transpose=True)]), weight(f"{name}.bias")])

    numbers = {"tiny": 1e-12, "c0": 0.0, "c127": 127.0, "m127": -127.0, "c128": 128.0, "c255": 255.0}
    made: dict[str, str] = {}

    def k(name: str) -> str:  # a constant of the int8 products, written once and only when used
        if name not in made:
            dtype = np.uint8 if name.startswith("zp") else np.float32
            made[name] = constant(np.array(int(name[2:]) if name.startswith("zp") else numbers[name], dtype), name)
        return made[name]

    def dense_int8(x: str, name: str, floor: float | None = None) -> str:
        w = np.asarray(weights[f"{prefix}{name}.weight"], np.float32)  # [out, in]
        levels = 63.0 if reduce_range else 127.0
        main = w
        w_scale = (np.maximum(np.abs(main).max(axis=1), 1e-12) / levels).astype(np.float32)
        wq = np.clip(np.round(main / w_scale[:, None]), -levels, levels).astype(np.int8).T
        xm = x
        wq_name = constant(np.ascontiguousarray(wq), f"{name}.int8")
        if floor is None:  # symmetric, a scale per token: [B, T, 1]
            top = node("ReduceMax", [node("Abs", [xm])], axes=[-1], keepdims=1)
            scale = node("Div", [node("Max", [top, k("tiny")]), k("c127")])
            rounded = node("Clip", [node("Round", [node("Div", [xm, scale])]), k("m127"), k("c127")])
            xq = node("Cast", [node("Add", [rounded, k("c128")])], to=TensorProto.UINT8)
            product = node("MatMulInteger", [xq, wq_name, k("zp128")])
        else:  # GELU's output is >= floor: shifted to >= 0 it uses all 256 levels; (x - floor) @ W + floor * sum(W)
            shifted = node("Sub", [xm, constant(np.array(floor, np.float32), f"{name}.floor")])
            top = node("ReduceMax", [shifted], axes=[-1], keepdims=1)
            scale = node("Div", [node("Max", [top, k("tiny")]), k("c255")])
            rounded = node("Clip", [node("Round", [node("Div", [shifted, scale])]), k("c0"), k("c255")])
            product = node("MatMulInteger", [node("Cast", [rounded], to=TensorProto.UINT8), wq_name, k("zp0")])
        restored = node("Mul", [node("Cast", [product], to=TensorProto.FLOAT), scale])
        y = node("Mul", [restored, constant(w_scale, f"{name}.scale")])
        if floor is not None:
            y = node("Add", [y, constant((floor * main.sum(axis=1)).astype(np.float32), f"{name}.floor_sum")])
        return node("Add", [y, weight(f"{name}.bias")])

    def product(x: str, name: str, floor: float | None = None) -> str:
        return dense_int8(x, name, floor) if int8 else dense(x, name)

    def norm(x: str, name: str) -> str:
        return node("LayerNormalization", [x, weight(f"{name}.weight"), weight(f"{name}.bias")], axis=-1, epsilon=eps)

    # Embeddings: positions 0..T-1 from the input's own shape.
    zero, one = constant(np.array(0, np.int64), "zero"), constant(np.array(1, np.int64), "one")
    tokens = node("Gather", [node("Shape", ["input_ids"]), one], axis=0)
    positions = node("Unsqueeze", [node("Range", [zero, tokens, one]), constant(np.array([0], np.int64), "axis0")])
    embedded = node(
        "Add",
        [
            node(
                "Add",
                [
                    node("Gather", [weight("embeddings.word_embeddings.weight"), "input_ids"]),
                    node("Gather", [weight("embeddings.token_type_embeddings.weight"), "token_type_ids"]),
                ],
            ),
            node("Gather", [weight("embeddings.position_embeddings.weight"), positions]),
        ],
    )
    x = norm(embedded, "embeddings.LayerNorm")

    # The padding mask, added to every head's scores: 0 where attended, the float minimum where padded
    # (as transformers' extended attention mask).
    mask = node("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    mask = node("Unsqueeze", [mask, constant(np.array([1, 2], np.int64), "axes12")])
    lowest = constant(np.array(np.finfo(np.float32).min, np.float32), "lowest")
    bias = node("Mul", [node("Sub", [constant(np.array(1.0, np.float32), "onef"), mask]), lowest])

    split = constant(np.array([0, 0, heads, size], np.int64), "split_heads")
    merged = constant(np.array([0, 0, hidden], np.int64), "merge_heads")
    scale = constant(np.array(1.0 / math.sqrt(size), np.float32), "scale")
    half = constant(np.array(0.5, np.float32), "half")
    root2 = constant(np.array(math.sqrt(2.0), np.float32), "root2")
    onef = "onef"
    for layer in range(int(config["num_hidden_layers"])):
        at = f"encoder.layer.{layer}"

        def heads_of(name: str, perm: list[int], x: str = x, at: str = at) -> str:
            projected = product(x, f"{at}.attention.self.{name}")
            return node("Transpose", [node("Reshape", [projected, split])], perm=perm)

        query = node("Mul", [heads_of("query", [0, 2, 1, 3]), scale])
        key = heads_of("key", [0, 2, 3, 1])
        value = heads_of("value", [0, 2, 1, 3])
        scores = node("Add", [node("MatMul", [query, key]), bias])
        context = node("MatMul", [node("Softmax", [scores], axis=-1), value])
        context = node("Reshape", [node("Transpose", [context], perm=[0, 2, 1, 3]), merged])
        x = norm(node("Add", [product(context, f"{at}.attention.output.dense"), x]), f"{at}.attention.output.LayerNorm")
        inner = product(x, f"{at}.intermediate.dense")
        gelu = node(
            "Mul", [node("Mul", [inner, half]), node("Add", [node("Erf", [node("Div", [inner, root2])]), onef])]
        )
        x = norm(node("Add", [product(gelu, f"{at}.output.dense", floor=GELU_FLOOR), x]), f"{at}.output.LayerNorm")
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))

    axes = ["batch", "tokens"]
    graph = helper.make_graph(
        nodes,
        "bert",
        [helper.make_tensor_value_info(name, TensorProto.INT64, axes) for name in INPUTS],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [*axes, hidden])],
        initializer=initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="streams")
    model.ir_version = 8  # what ONNX Runtime 1.18 and later read
    return model


INPUTS = ("input_ids", "attention_mask", "token_type_ids")
