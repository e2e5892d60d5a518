"""An index this process only reads: a search node (``sensetree serve --read-only --index URI``).

It has no catalog of its own: the writer's stays with the writer. What a search asks of the
catalog (the roots, the embedding model's identity) comes from the manifest beside the
chunks, read again every ``refresh_seconds``, into a catalog held in memory that nothing else
fills: the queue and the per-file statuses are the writer's to show. New commits show within
``refresh_seconds`` too (LanceDB's read consistency interval). Anything that would write is
refused with ``ReadOnlyIndex``; nothing is ever repaired here, since the index is not ours.
"""

from __future__ import annotations

import threading
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Callable, TypeVar

from ..errors import ReadOnlyIndex
from .catalog import Catalog
from .chunks import ChunkStore
from .location import Location
from .manifest import Manifest, read_manifest

T = TypeVar("T")
SIZE_TTL = 60.0  # listing a bucket to size it is not worth doing for every status call


class ReadOnlyStorage:
    def __init__(self, where: Location, refresh_seconds: float, on_manifest: Callable[[Manifest], None]):
        self.location = where
        self.refresh_seconds = refresh_seconds
        self._on_manifest = on_manifest
        self._catalog = Catalog(Path(":memory:"))
        self._read_at = -float("inf")
        self._lock = threading.Lock()
        self._size: tuple[float, int] = (-SIZE_TTL, 0)
        self.manifest: Manifest | None = None
        self.refresh()
        if self.manifest is None:
            raise ReadOnlyIndex(
                f"no index at {where}: no writer has published one there yet "
                "(run `sensetree index` with storage.uri set to it)"
            )
        self.store: ChunkStore = ChunkStore(where, refresh_seconds)

    @property
    def catalog(self) -> Catalog:
        if time.monotonic() - self._read_at >= self.refresh_seconds:
            self.refresh()
        return self._catalog

    def refresh(self) -> None:
        """Read the manifest again and make the in-memory catalog say what it says."""
        with self._lock:
            self._read_at = time.monotonic()
            manifest = read_manifest(self.location)
            if manifest is None or manifest == self.manifest:
                return
            self.manifest = manifest
            for root in set(self._catalog.roots.all()) - set(manifest.roots):
                self._catalog.roots.remove(root)
            for root in manifest.roots:
                self._catalog.roots.add(root)
            self._catalog.set_meta("embedding_identity", manifest.embedding_identity)
        self._on_manifest(manifest)

    def writer(self, wait: float = 0) -> AbstractContextManager[None]:
        raise ReadOnlyIndex(
            f"this process only reads the index at {self.location}; changes are made where it is indexed"
        )

    def writer_free(self) -> bool:
        return False

    def recovering(self, operation: Callable[[], T]) -> T:
        return operation()  # the index is not ours to repair

    def reconcile_if_behind(self) -> None:
        raise ReadOnlyIndex(f"this process only reads the index at {self.location}")

    def size_bytes(self) -> int:
        measured_at, size = self._size
        if time.monotonic() - measured_at >= SIZE_TTL:
            self._size = (time.monotonic(), self.location.size_bytes())
        return self._size[1]

    def close(self) -> None:
        self._catalog.close()
