"""The disk scan: compare what is under the roots with the catalog, by stat only (no hashing).

New and changed entries are queued for the keyword phase, deleted ones leave the catalog and
the store. The content hash, computed later by the keyword phase, decides whether a changed
mtime really changed anything. The members of an archive are not on disk to be seen: they
leave with their archive, and are read again when it changes.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import PurePath

from .. import paths
from ..store.catalog import Catalog
from ..store.chunks import ChunkStore
from .walker import walk


@dataclass(frozen=True)
class ScanReport:
    new: int
    changed: int
    deleted: int
    seconds: float


def scan(catalog: Catalog, store: ChunkStore, exclude: str) -> ScanReport:
    """Queue new and changed entries under every root, purge deleted ones; ``exclude`` is our own data dir."""
    started = time.perf_counter()
    manual = catalog.folder_modes()
    exclude = paths.path_key(exclude)
    new = changed = 0
    deleted: list[str] = []
    for root in catalog.roots():
        known = catalog.files_under(root)
        seen: set[str] = set()
        queued = []
        if os.path.isdir(root):
            for entry in walk(root, manual):
                if paths.is_under(entry.path, exclude):
                    continue
                seen.add(entry.path)
                old = known.get(entry.path)
                if old is None:
                    new += 1
                elif (old.kind, old.size, old.mtime) != (entry.kind, entry.size, entry.mtime):
                    changed += 1
                else:
                    continue
                queued.append((entry.path, root, entry.kind, entry.size, entry.mtime, entry.members))
        catalog.upsert_pending(queued)
        gone = {p for p, state in known.items() if p not in seen and state.kind != "member"}
        deleted += [*gone, *(p for p, state in known.items()
                             if state.kind == "member" and any(str(up) in gone for up in PurePath(p).parents))]
    if deleted:
        store.delete_paths(deleted)
        catalog.delete(deleted)
    return ScanReport(new, changed, len(deleted), time.perf_counter() - started)
