"""Check an OpenAI-compatible endpoint before the user relies on it: reachable, model present, dimension.

Used by the settings page's "test endpoint" buttons. ``GET /models`` says which models the
server has (Ollama, LM Studio, llama.cpp and OpenAI all answer it); an embedding endpoint is
also asked for one vector, so the user sees the dimension the index would get.
"""

from __future__ import annotations

import httpx

from ..answers import ProbeReport
from .embeddings import EmbeddingError, OpenAIEmbeddings


def probe_endpoint(role: str, base_url: str, model: str, api_key: str = "", timeout: float = 10.0) -> ProbeReport:
    if not base_url:
        return ProbeReport(False, False, None, None, f"no {role} endpoint is set (the local default is used)")
    base = base_url.rstrip("/")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with httpx.Client(timeout=timeout, headers=headers) as client:
            response = client.get(base + "/models")
    except httpx.HTTPError as exc:
        return ProbeReport(False, False, None, None, f"unreachable: {exc or type(exc).__name__}")
    present: bool | None = None
    if response.status_code == 200:
        try:
            ids = [m.get("id") for m in response.json().get("data", [])]
            present = (model in ids) if model else None
        except (ValueError, AttributeError, TypeError):
            present = None
    elif response.status_code in (401, 403):
        return ProbeReport(False, True, None, None, f"reachable, but the API key was refused ({response.status_code})")
    if present is False:
        return ProbeReport(False, True, False, None, f"reachable, but it has no model {model!r}")
    if role != "embedding":
        found = "model present" if present else "model list not available"
        return ProbeReport(True, True, present, None, f"reachable, {found}")
    try:
        dimension = OpenAIEmbeddings(base, model, api_key, timeout=timeout).dimension
    except EmbeddingError as exc:
        return ProbeReport(False, True, present, None, f"reachable, but embedding failed: {exc}")
    found = "model present" if present else "model answered"
    return ProbeReport(True, True, present, dimension, f"reachable, {found}, dimension {dimension}")
