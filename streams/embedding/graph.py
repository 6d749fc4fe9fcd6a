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
from collections.abc import Mapping, Sequence
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
#: The int8 graph's own version, in its file name and its vectors' cache identity beside GRAPH.
INT8 = "q2"
#: How much of a channel's range moves from the activation to the weight before int8 rounding (SmoothQuant's
#: alpha): 0.45 kept the closest vectors to fp32 on the calibration texts among 0.3 to 0.8.
SMOOTHING = 0.45


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


def calibrate(run: Any, feeds: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Each product's largest input per channel over `feeds`, from the fp32 graph built with `expose`
    (`run(feed)` -> {output name: array}), rounded to three significant digits so that the last float bits of
    another CPU's arithmetic do not change the int8 graph built from them."""
    maxima: dict[str, np.ndarray] = {}
    for feed in feeds:
        for name, value in run(feed).items():
            if name.endswith(".input"):
                top = np.abs(value).reshape(-1, value.shape[-1]).max(axis=0)
                key = name.removesuffix(".input")
                maxima[key] = np.maximum(maxima[key], top) if key in maxima else top
    return {name: _significant(top) for name, top in maxima.items()}


def _significant(values: np.ndarray, digits: int = 3) -> np.ndarray:
    safe = np.maximum(np.abs(values), 1e-30)
    step = 10.0 ** (np.floor(np.log10(safe)) - (digits - 1))
    return (np.round(values / step) * step).astype(np.float32)


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
    activations: Mapping[str, np.ndarray] | None = None,
    expose: bool = False,
) -> Any:
    """The ONNX model (inputs input_ids, attention_mask, token_type_ids; output last_hidden_state).

    `int8`: every dense product in int8 (MatMulInteger), with per-output-channel weight scales and a scale
    per token for the activations, so a text's vector does not depend on its batch (ONNX Runtime's dynamic
    quantisation scales a whole batch at once); GELU's output, never below GELU_FLOOR, is shifted to use
    all 256 levels. `reduce_range`: 7-bit weights, for CPUs without VNNI, whose int8 kernels can overflow
    on 8-bit ones. `activations`: each product's largest input per channel (`calibrate`), with which the int8
    products move each channel's range between activation and weight (SmoothQuant: x / s, W * s) before
    rounding, so the few channels that reach many times the others no longer set a token's whole scale.
    `expose` (fp32): every product's input is an output too, named `<product>.input`, for `calibrate`."""
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

    exposed: list[str] = []

    def dense(x: str, name: str) -> str:  # x @ W.T + b, W stored transposed once at build time
        if expose:
            nodes.append(helper.make_node("Identity", [x], [f"{name}.input"]))
            exposed.append(f"{name}.input")
        return node("Add", [node("MatMul", [x, weight(f"{name}.weight", transpose=True)]), weight(f"{name}.bias")])

    numbers = {"tiny": 1e-12, "c0": 0.0, "c127": 127.0, "m127": -127.0, "c128": 128.0, "c255": 255.0}
    made: dict[str, str] = {}

    def k(name: str) -> str:  # a constant of the int8 products, written once and only when used
        if name not in made:
            dtype = np.uint8 if name.startswith("zp") else np.float32
            made[name] = constant(np.array(int(name[2:]) if name.startswith("zp") else numbers[name], dtype), name)
        return made[name]

    shapes: dict[int, str] = {}

    def shaped(width: int) -> str:
        """[batch, tokens, width], from the input's own shape."""
        if width not in shapes:
            tokens_shape = node("Shape", ["input_ids"])
            shapes[width] = node(
                "Concat", [tokens_shape, constant(np.array([width], np.int64), f"width{width}")], axis=0
            )
        return shapes[width]

    def tensor(name: str) -> np.ndarray:
        return np.asarray(weights[f"{prefix}{name}"], np.float32)

    def smoothing(names: Sequence[str]) -> np.ndarray:
        """Per input channel, the share of its range moved into the weights (1 without calibration)."""
        w = np.concatenate([tensor(f"{n}.weight") for n in names])  # [out, in]
        if activations is None or names[0] not in activations:
            return np.ones(w.shape[1], np.float32)
        act = np.maximum(np.max([np.asarray(activations[n], np.float32) for n in names], axis=0), 1e-5)
        smooth = act**SMOOTHING / np.maximum(np.abs(w).max(axis=0), 1e-8) ** (1 - SMOOTHING)
        return (smooth / np.exp(np.log(smooth).mean())).astype(np.float32)  # a channel's share, not a size

    def dense_int8(
        x: str,
        names: Sequence[str],
        floor: float | None = None,
        prescaled: np.ndarray | None = None,
        rows: Mapping[str, np.ndarray] | None = None,
    ) -> list[str]:
        """The products `names` of one input as one int8 product (the input rounded once), split after.
        `prescaled`: the input arrives already divided by this smoothing (folded into what made it);
        `rows`: a product's output channels divided by these (the next product's smoothing, folded here)."""
        label = names[0]
        ws = [tensor(f"{n}.weight") for n in names]
        bs = [tensor(f"{n}.bias") for n in names]
        for i, n in enumerate(names):
            if rows and n in rows:
                ws[i], bs[i] = ws[i] / rows[n][:, None], bs[i] / rows[n]
        w, b = np.concatenate(ws), np.concatenate(bs).astype(np.float32)
        levels = 63.0 if reduce_range else 127.0
        if prescaled is not None:
            smooth = prescaled
        elif floor is None:
            smooth = smoothing(names)
        else:  # GELU's output is rounded as it is: balanced, its vectors came out further from fp32 and slower
            smooth = np.ones(w.shape[1], np.float32)
        if prescaled is None and not np.all(smooth == 1.0):
            x = node("Mul", [x, constant((1.0 / smooth).astype(np.float32), f"{label}.smooth")])
        main = w * smooth[None, :]
        w_scale = (np.maximum(np.abs(main).max(axis=1), 1e-12) / levels).astype(np.float32)
        wq = np.clip(np.round(main / w_scale[:, None]), -levels, levels).astype(np.int8).T
        wq_name = constant(np.ascontiguousarray(wq), f"{label}.int8")
        # One row a token: the rounding (QuantizeLinear) and the restoring (DequantizeLinear) each take one
        # pass over a row with its own scale, where Div, Round, Clip, Add and Cast took five.
        flat = node("Reshape", [x, constant(np.array([-1, w.shape[1]], np.int64), f"{label}.rows")])
        if floor is None:  # symmetric, a scale per token
            top = node("ReduceMax", [node("Abs", [flat])], axes=[1], keepdims=0)
            scale = node("Div", [node("Max", [top, k("tiny")]), k("c127")])
            zero = node("Expand", [k("zp128"), node("Shape", [scale])])
            product = node("MatMulInteger", [node("QuantizeLinear", [flat, scale, zero], axis=0), wq_name, k("zp128")])
        else:  # GELU's output is >= floor: shifted to >= 0 it uses all 256 levels; (x - floor) @ W + floor @ W
            floors = np.full(w.shape[1], floor, np.float32)  # GELU's output is never balanced (above)
            shifted = node("Sub", [flat, constant(floors, f"{label}.floor")])
            top = node("ReduceMax", [shifted], axes=[1], keepdims=0)
            scale = node("Div", [node("Max", [top, k("tiny")]), k("c255")])
            zero = node("Expand", [k("zp0"), node("Shape", [scale])])
            product = node("MatMulInteger", [node("QuantizeLinear", [shifted, scale, zero], axis=0), wq_name, k("zp0")])
            b = b + (main @ floors).astype(np.float32)
        # back to [batch, tokens, width] before the bias, so that ONNX Runtime fuses the bias into what follows
        restored = node("Reshape", [node("DequantizeLinear", [product, scale], axis=0), shaped(len(b))])
        y = node("Add", [node("Mul", [restored, constant(w_scale, f"{label}.scale")]), constant(b, f"{label}.bias")])
        if len(names) == 1:
            return [y]
        sizes = constant(np.array([len(v) for v in bs], np.int64), f"{label}.sizes")
        parts = [f"{n}.out" for n in names]
        nodes.append(helper.make_node("Split", [y, sizes], parts, axis=-1))
        return parts

    def products(x: str, names: Sequence[str], **how: Any) -> list[str]:
        """fp32: one product each, as the model has them (`how` is the int8 products' alone)."""
        return dense_int8(x, names, **how) if int8 else [dense(x, n) for n in names]

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
        attention = f"{at}.attention.self"
        projection = f"{at}.attention.output.dense"
        # int8: the attention's output projection's smoothing is folded into the value rows (the context is
        # linear in the values), and query, key and value share one rounding of their input.
        folded = smoothing([projection]) if int8 else None
        rows = {f"{attention}.value": folded} if folded is not None else None
        names = [f"{attention}.{n}" for n in ("query", "key", "value")]
        fused = dict(zip(names, dense_int8(x, names, rows=rows), strict=True)) if int8 else {}

        def heads(name: str, perm: list[int], x: str = x, fused: dict[str, str] = fused) -> str:
            projected = fused[name] if fused else dense(x, name)
            return node("Transpose", [node("Reshape", [projected, split])], perm=perm)

        query = node("Mul", [heads(names[0], [0, 2, 1, 3]), scale])
        key = heads(names[1], [0, 2, 3, 1])
        value = heads(names[2], [0, 2, 1, 3])
        scores = node("Add", [node("MatMul", [query, key]), bias])
        context = node("MatMul", [node("Softmax", [scores], axis=-1), value])
        context = node("Reshape", [node("Transpose", [context], perm=[0, 2, 1, 3]), merged])
        out = products(context, [projection], prescaled=folded)
        x = norm(node("Add", [out[0], x]), f"{at}.attention.output.LayerNorm")
        inner = products(x, [f"{at}.intermediate.dense"])[0]
        gelu = node(
            "Mul", [node("Mul", [inner, half]), node("Add", [node("Erf", [node("Div", [inner, root2])]), onef])]
        )
        down = products(gelu, [f"{at}.output.dense"], floor=GELU_FLOOR)
        x = norm(node("Add", [down[0], x]), f"{at}.output.LayerNorm")
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))

    axes = ["batch", "tokens"]
    outputs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [*axes, hidden])]
    outputs += [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in exposed]
    graph = helper.make_graph(
        nodes,
        "bert",
        [helper.make_tensor_value_info(name, TensorProto.INT64, axes) for name in INPUTS],
        outputs,
        initializer=initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="streams")
    model.ir_version = 8  # what ONNX Runtime 1.18 and later read
    return model


INPUTS = ("input_ids", "attention_mask", "token_type_ids")
