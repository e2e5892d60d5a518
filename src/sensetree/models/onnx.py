"""What the ONNX embedders share: an onnxruntime session set up for a small machine, and unit rows."""

from __future__ import annotations

import os

import numpy as np


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Each row to unit length as float32, so that a dot product is the cosine."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)


def onnx_session(path: str | os.PathLike, threads: int):
    """An onnxruntime CPU session set up for a small machine shared with the user's work."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # The arena keeps the peak of every batch shape it saw (1.5 GB after a few long batches).
    options.enable_cpu_mem_arena = False
    # Idle spinning threads double per-query latency on a 2-core machine.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
