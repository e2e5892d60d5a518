"""What a search needs besides the chunks, kept beside them: a node that only reads an index needs nothing else.

The writer puts ``sensetree.json`` next to the ``chunks`` table whenever it lets go of the
index (after each indexing round, a new root, a changed setting): the roots (a scope must be
inside one), the settings that shape a search, and the identity of the embedding model that
made the vectors (the query must be embedded by the same one). Secrets (API keys) never go in:
a search node that calls an endpoint has its own settings for them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from .location import Location

MANIFEST = "sensetree.json"
VERSION = 1
SEARCH_SETTINGS = (
    "retrieval.hybrid",
    "retrieval.rerank",
    "retrieval.fusion",
    "retrieval.spelling",
    "retrieval.collapse_duplicates",
    "retrieval.on_demand_seconds",
    "retrieval.reranker_model",
    "embedding.model",
    "embedding.base_url",
    "embedding.dimensions",
    "indexing.max_file_mb",
)


@dataclass(frozen=True)
class Manifest:
    roots: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    embedding_identity: str | None = None
    version: int = VERSION

    def encode(self) -> bytes:
        return json.dumps(asdict(self), ensure_ascii=False, indent=1, sort_keys=True).encode()

    @classmethod
    def decode(cls, data: bytes) -> Manifest:
        value = json.loads(data)
        return cls(
            list(value.get("roots", [])),
            {k: v for k, v in value.get("settings", {}).items() if k in SEARCH_SETTINGS},
            value.get("embedding_identity"),
        )


def read_manifest(where: Location) -> Manifest | None:
    """The manifest at ``where``; None when no writer has put one there yet."""
    data = where.read(MANIFEST)
    if data is None:
        return None
    try:
        return Manifest.decode(data)
    except (ValueError, AttributeError, TypeError):
        return None  # torn by hand or by another program: the next writer puts it back


def publish(where: Location, manifest: Manifest, last: bytes | None) -> bytes:
    """Write ``manifest`` unless it is what was written last (``last``); the bytes now there."""
    data = manifest.encode()
    if data != last:
        where.write(MANIFEST, data)
    return data
