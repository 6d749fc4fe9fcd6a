"""The ONNX Runtime backend gives the sentence-transformers vectors from a graph written from the model's own
weights without torch, once per model and machine, the same bytes on every rebuild."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from streams.embedding.model import Backend, Embedder, EmbeddingUnavailable

TEXTS = [
    "The contractor shall install strain gauges on every span of the bridge.",
    "Short.",
    "Revenue grew nine percent on stronger subscription renewals, led by the enterprise tier, "
    "while hardware sales fell for the third quarter in a row as customers delayed upgrades. " * 8,
]


@pytest.fixture(scope="module")
def export_dir(onnx_dir: Path) -> Path:
    return onnx_dir


def torch_vectors(texts: list[str]) -> np.ndarray:
    """The reference: sentence-transformers on torch, the forward pass the ONNX graph was exported from."""
    torch = Embedder(backend=Backend("torch"))
    vectors = torch.encode(texts)
    assert type(torch.model).__module__.startswith("sentence_transformers"), type(torch.model)
    return vectors


def test_onnx_vectors_match_torch_and_the_graph_is_exported_once(export_dir: Path) -> None:
    reference = torch_vectors(TEXTS)
    onnx = Embedder(backend=Backend("onnx", export_dir))
    vectors = onnx.encode(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == reference.shape
    assert np.abs(vectors - reference).max() < 1e-5  # the long text is truncated at 256 word pieces by both
    from streams.embedding.onnx import GRAPH, model_fingerprint

    model = Path(onnx.model_path)
    graph = export_dir / f"{model.name}-{model_fingerprint(model)}-{GRAPH}.onnx"  # this run's one build of it
    assert graph.is_file()
    stamp = graph.stat().st_mtime_ns
    again = Embedder(backend=Backend("onnx", export_dir)).encode(TEXTS[:1])
    assert graph.stat().st_mtime_ns == stamp and np.abs(again[0] - vectors[0]).max() < 1e-6
    assert onnx.dimension == 384


BUILD_WITHOUT_TORCH = """
import sys
for name in ("torch", "sentence_transformers", "transformers"):
    sys.modules[name] = None  # any import of them now fails, as in the run install
from pathlib import Path
from streams.embedding.model import Backend, Embedder, default_model_path
from streams.embedding.onnx import _build
built = Path(sys.argv[1])
_build(Path(default_model_path()), built)
assert Embedder(backend=Backend("onnx", built.parent)).encode(["no torch here"]).shape == (1, 384)
"""


def test_the_graph_is_built_without_torch_and_is_the_same_bytes_on_rebuild(export_dir: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    from streams.embedding.onnx import GRAPH, model_fingerprint

    model = Path(Embedder().model_path)
    built = tmp_path / "graph.onnx"
    done = subprocess.run([sys.executable, "-c", BUILD_WITHOUT_TORCH, str(built)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    Embedder(backend=Backend("onnx", export_dir)).encode(["x"])  # this run's graph, built by the embedder
    shared = export_dir / f"{model.name}-{model_fingerprint(model)}-{GRAPH}.onnx"
    assert built.read_bytes() == shared.read_bytes()


def test_a_model_the_builder_does_not_know_is_refused_by_name() -> None:
    from streams.embedding.graph import UnknownModel, check_config

    bert = {"model_type": "bert", "hidden_act": "gelu", "hidden_size": 384, "num_attention_heads": 12}
    check_config(bert)
    for key, value in (("model_type", "roberta"), ("hidden_act", "relu"), ("position_embedding_type", "relative_key")):
        with pytest.raises(UnknownModel, match=f"{key}={value!r}"):
            check_config({**bert, key: value})
    with pytest.raises(UnknownModel, match="multiple of num_attention_heads"):
        check_config({**bert, "num_attention_heads": 7})


def test_int8_is_its_own_model_stays_close_and_does_not_depend_on_its_batch(export_dir: Path) -> None:
    """A scale per token, each channel's range balanced between activation and weight on the calibration
    texts: a text's int8 vector is the same alone and in a batch, and close to fp32 on sentences and long
    passages alike (ONNX Runtime's dynamic quantisation scaled the whole batch, and reached 0.88)."""
    words = " ".join(f"clause {n} binds the tenant to the lease" for n in range(60)).split()
    batch = [" ".join(words[start : start + 12]) for start in range(0, 16 * 12, 12)]  # one length: one batch
    terms = [
        "the",
        "supplier",
        "shall",
        "deliver",
        "quarterly",
        "reports",
        "on",
        "the",
        "revised",
        "schedule",
        "and",
        "the",
        "board",
        "approved",
    ]
    passages = [" ".join(terms[(i * 7 + j) % len(terms)] for j in range(190)) + f" {i}" for i in range(4)]
    texts = [*TEXTS, *batch, *passages]
    fp32 = Embedder(backend=Backend("onnx", export_dir)).encode(texts)
    int8 = Embedder(backend=Backend("onnx-int8", export_dir))
    vectors = int8.encode(texts)
    cosines = (vectors * fp32).sum(axis=1)
    assert cosines.min() >= 0.995 and np.abs(vectors - fp32).max() > 1e-4, cosines.min()  # it moves, a little
    for row in (0, 3, 10, len(texts) - 1):
        int8.clear_cache()
        assert int8.encode([texts[row]])[0].tobytes() == vectors[row].tobytes()
    assert int8.model_key != Embedder(backend=Backend("onnx", export_dir)).model_key


def test_the_int8_graph_is_calibrated_the_same_on_every_build(export_dir: Path, tmp_path: Path) -> None:
    from streams.embedding.graph import calibrate
    from streams.embedding.onnx import export

    model = Path(Embedder().model_path)
    assert (
        export(model, tmp_path, quantized=True).read_bytes() == export(model, export_dir, quantized=True).read_bytes()
    )
    # maxima are kept to three significant digits: another CPU's last float bits do not move the graph
    maxima = calibrate(
        lambda feed: {"p.input": feed["x"]}, [{"x": np.array([[1.23449, -0.5]])}, {"x": np.array([[0.2, 0.50049]])}]
    )
    assert maxima["p"].tolist() == pytest.approx([1.23, 0.5])


def test_an_unknown_backend_is_refused_in_one_line() -> None:
    with pytest.raises(EmbeddingUnavailable, match="unknown embedding backend 'gpu'"):
        Backend("gpu")


def test_onnx_vectors_do_not_depend_on_their_batch(export_dir: Path) -> None:
    onnx = Embedder(backend=Backend("onnx", export_dir))
    together = onnx.encode(TEXTS)
    for row, text in enumerate(TEXTS):
        onnx.clear_cache()
        assert onnx.encode([text])[0].tobytes() == together[row].tobytes()


def test_onnx_vectors_do_not_depend_on_the_thread_count(export_dir: Path) -> None:
    """Workers embed on one thread and the vector sink may use two, and they share vectors through the
    embedding store: a vector must not depend on who embedded it. Batches of one length are split over
    the threads too, so a batch of sixteen is compared as well as single texts and a windowed long one."""
    words = " ".join(f"clause {n} binds the tenant" for n in range(400)).split()
    batch = [" ".join(words[start : start + 40]) for start in range(0, 16 * 40, 40)]  # one length, no padding
    texts = [*TEXTS, *batch, " ".join(words)]  # the last is past 256 word pieces: a mean of windows
    embedder = Embedder(backend=Backend("onnx", export_dir), threads=1)
    assert len(set(embedder.token_lengths(batch))) == 1 and embedder.count_long(texts) == 2
    one = embedder.encode(texts)
    two = Embedder(backend=Backend("onnx", export_dir), threads=2).encode(texts)
    assert one.tobytes() == two.tobytes()


def test_cuda_is_chosen_where_onnx_runtime_offers_it() -> None:
    from streams.embedding.onnx import CPU, CUDA, execution_providers

    assert execution_providers("auto", [CUDA, CPU]) == ([CUDA, CPU], "")
    assert execution_providers("cuda", [CUDA, CPU]) == ([CUDA, CPU], "")
    assert execution_providers("cpu", [CUDA, CPU]) == ([CPU], "")
    assert execution_providers("auto", [CPU]) == ([CPU], "")  # the usual machine: quietly the CPU
    providers, why = execution_providers("cuda", [CPU])
    assert providers == [CPU] and "no CUDA" in why


def test_asked_for_cuda_without_one_it_embeds_on_the_cpu_and_says_why(
    export_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """This machine has no GPU (the path to CUDA is the providers above): the vectors are the CPU's, byte
    for byte, under the CPU's cache identity, and one line says why."""
    from streams.embedding.onnx import CUDA, available_providers

    if CUDA in available_providers():
        pytest.skip("onnxruntime-gpu offers CUDA here: the fallback is not what runs")
    cpu = Embedder(backend=Backend("onnx", export_dir, "cpu"))
    cuda = Embedder(backend=Backend("onnx", export_dir, "cuda"))
    with caplog.at_level("WARNING", logger="streams.embedding.onnx"):
        vectors = cuda.encode(TEXTS)
    assert vectors.tobytes() == cpu.encode(TEXTS).tobytes() and cuda.model.device == "cpu"
    assert [r.getMessage() for r in caplog.records] == [
        "embedding on the CPU: STREAMS_EMBED_DEVICE=cuda but ONNX Runtime offers no CUDA here "
        "(onnxruntime-gpu not installed)"
    ]
    assert cuda.model_key == cpu.model_key
    with pytest.raises(EmbeddingUnavailable, match="unknown embedding device 'tpu'"):
        Backend("onnx", export_dir, "tpu")
