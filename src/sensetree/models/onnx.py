"""What the ONNX embedders share: an onnxruntime session set up for a small machine, and unit rows."""

from __future__ import annotations

import os

import numpy as np

from .devices import DeviceSession, Feeds


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Each row to unit length as float32, so that a dot product is the cosine."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)


def runtime():
    """onnxruntime, with its telemetry events off (``sensetree/__init__`` has set ``ORT_DISABLE_TELEMETRY``
    before it was imported; this says it again to the runtime, for a process that imported it first)."""
    import onnxruntime as ort

    ort.disable_telemetry_events()
    return ort


def onnx_session(
    path: str | os.PathLike, threads: int, device: str = "cpu", probe: Feeds | None = None, role: str = "embedder"
) -> DeviceSession:
    """An onnxruntime session on ``device`` (``models/devices.py``: ``probe`` is the small input its
    first run is checked with), set up for a small machine shared with the user's work."""
    ort = runtime()

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # The arena keeps the peak of every batch shape it saw (1.5 GB after a few long batches).
    options.enable_cpu_mem_arena = False
    # Idle spinning threads double per-query latency on a 2-core machine.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return DeviceSession(
        role,
        device,
        lambda providers: ort.InferenceSession(str(path), options, providers=providers),
        lambda cpu: probe or {},
    )
