"""The models a data dir's settings name, each loaded on first use: a ``status`` call never pays for one."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable

from ..config import Settings
from ..errors import BadInput
from .devices import Placement, requested_device
from .embeddings import (
    BUNDLED,
    Embedder,
    EmbeddingError,
    EndpointUnavailable,
    canonical_model,
    expected_identity,
    load_embedder,
    model_of,
)
from .probe import ProbeReport, probe_endpoint
from .registry import find_reranker, list_rerankers, pull_reranker
from .reranker import CrossEncoder, RerankerUnavailable, load_reranker


class Models:
    def __init__(self, settings: Settings, models_dir: Path, kept: Callable[[], str | None] = lambda: None):
        """``kept`` tells the identity of the model the index was made with while the settings name another
        and that change, which would wipe the index, is not confirmed (``Context.unconfirmed_change``): that
        model stays in force until then."""
        self.settings = settings
        self.models_dir = models_dir
        self._kept = kept
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
                model, base_url = s["embedding.model"], s["embedding.base_url"]
                kept = self._kept()
                if kept is not None:
                    named = model_of(kept)
                    if named is None:
                        raise EmbeddingError(
                            f"the index was made with {kept}, which this install cannot load, and the "
                            "settings' model is not confirmed yet (it would wipe the index)"
                        )
                    model, base_url = named
                self._embedder = load_embedder(
                    model,
                    base_url,
                    s["embedding.api_key"],
                    s["embedding.dimensions"],
                    s["embedding.threads"],
                    s["indexing.batch_size"],
                    requested_device(s, "embedder"),
                )
            return self._embedder

    def embedder_for(self, dimension: int | None) -> Embedder:
        """The embedder, refused when it now gives vectors of another size than the index holds (an
        endpoint that serves another model under the same name); it is probed again next time."""
        embedder = self.embedder
        if dimension is not None and embedder.dimension != dimension:
            self.forget_embedder()
            raise EndpointUnavailable(
                f"the embedding endpoint gives {embedder.dimension}-d vectors but the index "
                f"holds {dimension}-d ones; check the model it serves"
            )
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
                self._reranker = load_reranker(
                    name, self.models_dir, device=requested_device(self.settings, "reranker")
                )
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
        return (
            f"{name} is not installed, so results keep their fused order. Enable it with "
            f"`sensetree models pull {name}` (online) or put an ONNX cross-encoder folder in {self.models_dir}"
        )

    # every role -------------------------------------------------------------------------
    def by_role(self) -> dict[str, list[dict[str, Any]]]:
        """Per role: the models that are installed or can be pulled, and which one is in use."""
        from .local_llm import DEFAULT_MODEL, EMBEDDED, installed, pick_runtime

        s = self.settings
        embedding = [
            {
                "name": name,
                "installed": True,
                "active": not s["embedding.base_url"] and canonical_model(s["embedding.model"]) == name,
                "note": about,
            }
            for name, about in BUNDLED.items()
        ]
        if s["embedding.base_url"]:
            embedding.append(
                {
                    "name": s["embedding.model"],
                    "installed": True,
                    "active": True,
                    "note": f"endpoint {s['embedding.base_url']}",
                }
            )
        rerankers = [
            {
                "name": r["name"],
                "installed": r["installed"],
                "active": r["name"] == s["retrieval.reranker_model"],
                "note": r["where"] or f"{r['size']}, {r['licence']}; sensetree models pull {r['name']}",
            }
            for r in list_rerankers(self.models_dir)
        ]
        chat_name = s["chat.model"] or DEFAULT_MODEL
        runtime = pick_runtime(s["chat.runtime"])
        chat = [
            {
                "name": name,
                "installed": runtime is not None and installed(name, self.models_dir),
                "active": not s["chat.base_url"] and chat_name == name,
                "note": f"embedded ({runtime.name})" if runtime else "needs xllamacpp (make install)",
            }
            for name in EMBEDDED
        ]
        if s["chat.base_url"]:
            chat.append(
                {
                    "name": s["chat.model"] or "default",
                    "installed": True,
                    "active": True,
                    "note": f"endpoint {s['chat.base_url']}",
                }
            )
        return {"embedding": embedding, "reranker": rerankers, "chat": chat}

    def catalogue(self) -> dict[str, list[dict[str, Any]]]:
        """The bundled embedding models (which one is in use) and the rerankers the registry knows."""
        current = self.settings["embedding.model"]
        return {
            "embedding": [{"name": n, "about": a, "in_use": n == current} for n, a in BUNDLED.items()],
            "rerankers": list_rerankers(self.models_dir),
        }

    def pull_reranker(self, name: str, progress: Callable[[str, int, int], None]) -> Path:
        """Download a reranker into the models folder (online only); ``ModelDownloadError`` says why not."""
        return pull_reranker(name, self.models_dir, progress)

    def probe(
        self, role: str, base_url: str | None = None, model: str | None = None, api_key: str | None = None
    ) -> ProbeReport:
        """Reachable, model present, dimension: for the settings' values or the ones about to be saved."""
        if role not in ("embedding", "sense", "chat"):
            raise BadInput(f"unknown role {role!r}; use embedding, sense or chat")
        s = self.settings
        return probe_endpoint(
            role,
            s[f"{role}.base_url"] if base_url is None else base_url,
            s[f"{role}.model"] if model is None else model,
            s[f"{role}.api_key"] if api_key is None else api_key,
        )
