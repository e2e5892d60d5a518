"""Cross-encoder reranking on onnxruntime: (query, passage) -> relevance logit."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Encoding, Tokenizer

from sensetree.models.devices import DeviceSession
from sensetree.models.registry import (
    DEFAULT_RERANKER,
    RERANKERS,
    TOKENIZER_FILE,
    find_reranker,
    folder_name,
    onnx_model_file,
)

from ..errors import ModelError
from .onnx import runtime

_INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")


class RerankerUnavailable(ModelError):
    """No usable cross-encoder; the message says why and how to enable one."""


class CrossEncoder:
    """A cross-encoder (query, passage) -> relevance logit, on onnxruntime.

    ``folder`` holds an ONNX graph (model.onnx, onnx/model.onnx or their *_quantized variants)
    and tokenizer.json; config.json, if present, caps ``max_length`` to the model's positions.
    """

    def __init__(
        self,
        folder: Path,
        *,
        threads: int = 2,
        batch_size: int = 16,
        max_length: int = 512,
        name: str | None = None,
        device: str = "cpu",
    ):
        folder = Path(folder)
        model_file = onnx_model_file(folder)
        if model_file is None or not (folder / TOKENIZER_FILE).is_file():
            raise RerankerUnavailable(
                f"{folder} is not a cross-encoder folder: it needs model.onnx (or onnx/model.onnx, "
                f"model_quantized.onnx) and tokenizer.json. Run `sensetree models pull "
                f"{DEFAULT_RERANKER}` to download the default reranker."
            )
        self.name = name or folder.name
        self.batch_size = max(1, batch_size)
        self.max_length = min(max_length, _position_limit(folder))
        try:
            self._tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
            options = _session_options(threads)
            runtime()  # its telemetry off
            self._session = DeviceSession(
                "reranker",
                device,
                lambda providers: ort.InferenceSession(str(model_file), options, providers=providers),
                lambda cpu: _probe(self._tokenizer, cpu),
            )
        except Exception as exc:  # a corrupt or unsupported file must not take search down
            raise RerankerUnavailable(f"Could not load the cross-encoder in {folder}: {exc}") from exc
        padding = self._tokenizer.padding or {}
        self._pad_id = padding.get("pad_id", self._tokenizer.token_to_id("<pad>") or 0)
        self._tokenizer.no_padding()  # batches are padded here, after sorting by length
        # longest_first trims only the passage whenever the query is the shorter text (the
        # only_second behaviour we want) and, unlike only_second, does not fail on a long query.
        self._tokenizer.enable_truncation(self.max_length, strategy="longest_first")
        self._inputs = {i.name: np.int32 if i.type == "tensor(int32)" else np.int64 for i in self._session.get_inputs()}
        unknown = set(self._inputs) - set(_INPUT_NAMES)
        if unknown:
            raise RerankerUnavailable(f"{model_file} wants inputs this reranker cannot feed: {sorted(unknown)}")
        outputs = [o.name for o in self._session.get_outputs()]
        self._output = "logits" if "logits" in outputs else outputs[0]

    @property
    def placement(self):
        """Where the model runs and why (``models/devices.py``)."""
        return self._session.placement

    def logits(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """One float32 logit per passage, in input order; higher means more relevant.

        Two-class heads ([batch, 2]) give logit[1] - logit[0]: the log-odds of "relevant",
        so sigmoid() of it is the softmax probability, the same as for one-logit heads.
        """
        scores = np.zeros(len(passages), dtype=np.float32)
        if not passages:
            return scores
        encodings = self._tokenizer.encode_batch([(query, p) for p in passages])
        # Similar lengths share a batch, so little compute is spent on padding.
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            scores[batch] = self._run([encodings[i] for i in batch])
        return scores

    def _run(self, encodings: list[Encoding]) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            mask[row, :n] = 1
            types[row, :n] = enc.type_ids
        available = dict(zip(_INPUT_NAMES, (ids, mask, types)))
        feed = {name: available[name].astype(dtype, copy=False) for name, dtype in self._inputs.items()}
        out = np.asarray(self._session.run([self._output], feed)[0], dtype=np.float32)
        if out.ndim == 2 and out.shape[1] == 2:
            return out[:, 1] - out[:, 0]
        return out.reshape(len(encodings), -1)[:, 0]


def _probe(tokenizer: Tokenizer, session) -> dict[str, np.ndarray]:
    """A small (query, passage) pair in the inputs the graph wants: a device's first run."""
    encoding = tokenizer.encode("what does a probe check?", "That a device's scores agree with the CPU's.")
    ids = np.array([encoding.ids], np.int64)
    available = dict(zip(_INPUT_NAMES, (ids, np.ones_like(ids), np.array([encoding.type_ids], np.int64))))
    return {
        i.name: available[i.name].astype(np.int32 if i.type == "tensor(int32)" else np.int64)
        for i in session.get_inputs()
        if i.name in available
    }


def _session_options(threads: int) -> ort.SessionOptions:
    options = ort.SessionOptions()
    options.intra_op_num_threads = max(1, threads)
    options.inter_op_num_threads = 1
    # Spinning threads busy-wait between ops; on a 2-core machine that steals the cores the
    # next op needs and roughly doubles latency.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return options


def _position_limit(folder: Path) -> int:
    """Tokens the model can take: max_position_embeddings less 2.

    Exact for RoBERTa/XLM-R models (their position ids start at 2); two tokens to spare for BERT.
    """
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        return int(config["max_position_embeddings"]) - 2
    except (OSError, ValueError, KeyError, TypeError):
        return 1 << 30


def load_reranker(
    name: str,
    models_dir: Path,
    *,
    threads: int = 2,
    batch_size: int = 16,
    max_length: int = 512,
    device: str = "cpu",
) -> CrossEncoder:
    """The cross-encoder ``name`` (a known model name or a folder path); raises RerankerUnavailable."""
    folder = find_reranker(name, models_dir)
    if folder is None:
        spec = RERANKERS.get(name)
        pull = f"Run `sensetree models pull {name}` to download it (~{spec.size_mb} MB), or put" if spec else "Put"
        raise RerankerUnavailable(
            f"Reranker {name!r} is not installed. {pull} an ONNX cross-encoder folder "
            f"(model.onnx + tokenizer.json) at {Path(models_dir) / folder_name(name)}."
        )
    return CrossEncoder(folder, name=name, threads=threads, batch_size=batch_size, max_length=max_length, device=device)
