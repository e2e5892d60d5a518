"""The models a data dir's settings name, each loaded on first use: a ``status`` call never pays for one."""

from __future__ import annotations

import threading
from pathlib import Path

from ..config import Settings
from .devices import Placement, requested_device
from .embeddings import Embedder, EndpointUnavailable, expected_identity, load_embedder
from .registry import find_reranker
from .reranker import CrossEncoder, RerankerUnavailable, load_reranker


class Models:
    def __init__(self, settings: Settings, models_dir: Path):
        self.settings = settings
        self.models_dir = models_dir
        self._embedder: Embedder | None = None
        self._reranker: CrossEncoder | None = None
        self._reranker_problem: str | None = None
        self._lock = threading.Lock()

    # embeddings -----------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                s = self.settings
                self._embedder = load_embedder(s["embedding.model"], s["embedding.base_url"], s["embedding.api_key"],
                                               s["embedding.dimensions"], s["embedding.threads"], s["indexing.batch_size"],
                                               requested_device(s, "embedder"))
            return self._embedder

    def embedder_for(self, dimension: int | None) -> Embedder:
        """The embedder, refused when it now gives vectors of another size than the index holds (an
        endpoint that serves another model under the same name); it is probed again next time."""
        embedder = self.embedder
        if dimension is not None and embedder.dimension != dimension:
            self.forget_embedder()
            raise EndpointUnavailable(f"the embedding endpoint gives {embedder.dimension}-d vectors but the index "
                                      f"holds {dimension}-d ones; check the model it serves")
        return embedder

    def placements(self) -> list[Placement]:
        """Where the models loaded so far run, and why (the others are planned: ``describe_devices``)."""
        loaded = [getattr(model, "placement", None) for model in (self._embedder, self._reranker)]
        return [p for p in loaded if p is not None]

    def forget_embedder(self) -> None:
        """The settings changed: load again on next use."""
        with self._lock:
            self._embedder = None

    def expected_identity(self) -> str:
        """The identity the configured embedder will have, without loading it (for model-change checks)."""
        return expected_identity(self.settings["embedding.model"], self.settings["embedding.base_url"])

    # reranking ------------------------------------------------------------------------
    def reranker(self) -> CrossEncoder | None:
        """The cross-encoder, or None (and a reason in ``reranker_problem``) when it cannot load."""
        name = self.settings["retrieval.reranker_model"]
        with self._lock:
            if self._reranker is not None and self._reranker.name == name:
                return self._reranker
            try:
                self._reranker = load_reranker(name, self.models_dir, device=requested_device(self.settings, "reranker"))
                self._reranker_problem = None
            except RerankerUnavailable as exc:
                self._reranker, self._reranker_problem = None, str(exc)
            return self._reranker

    @property
    def reranker_problem(self) -> str | None:
        """Why the configured reranker could not be loaded, after an attempt; None when it loaded."""
        return self._reranker_problem

    def reranker_status(self) -> str:
        if not self.settings["retrieval.rerank"]:
            return "off (retrieval.rerank = false)"
        name = self.settings["retrieval.reranker_model"]
        if find_reranker(name, self.models_dir):
            return f"{name} (failed to load: {self._reranker_problem})" if self._reranker_problem else name
        return (f"{name} is not installed, so results keep their fused order. Enable it with "
                f"`sensetree models pull {name}` (online) or put an ONNX cross-encoder folder in {self.models_dir}")
