"""What the user chose to index, and how: roots, block folders, ignored paths, retries, re-indexing,
and senses corrected by hand. Each choice is kept in the catalog; the next indexing run acts on it."""

from __future__ import annotations

import os

from .. import fs_rules, paths
from ..errors import SenseTreeError
from ..store.catalog import Catalog, SenseRow
from ..store.chunks import ChunkStore
from ..store.readonly import ReadOnlyStorage
from ..store.storage import Storage


class Choices:
    def __init__(self, storage: Storage | ReadOnlyStorage):  # a search node's: it refuses every change
        self.storage = storage

    @property
    def catalog(self) -> Catalog:
        return self.storage.catalog

    @property
    def store(self) -> ChunkStore:
        return self.storage.store

    def add_root(self, folder: str) -> str:
        path = fs_rules.true_case(paths.normalize(folder))
        if not os.path.isdir(path):
            raise SenseTreeError(f"{folder} is not a folder")
        if path in self.catalog.roots.all():
            return path
        for root in self.catalog.roots.all():
            if paths.is_under(path, root):
                raise SenseTreeError(f"{path} is already indexed as part of the root {root}")
        for root in self.catalog.roots.all():
            if paths.is_under(root, path):  # a wider root absorbs the narrower one
                self.catalog.roots.remove(root)
                self.catalog.roots.move(root, path)
        self.catalog.roots.add(path)
        return path

    def remove_root(self, folder: str) -> int:
        key = paths.path_key(folder)
        path = next((root for root in self.catalog.roots.all() if paths.path_key(root) == key), None)
        if path is None:
            raise SenseTreeError(f"{folder} is not a root; roots: {', '.join(self.catalog.roots.all()) or 'none'}")
        with self.storage.writer():
            gone = list(self.catalog.files.in_root(path))
            self.store.writes.delete_paths(gone)
            self.catalog.states.delete(gone)
            self.catalog.roots.remove(path)
        return len(gone)

    def set_block(self, folder: str, mode: str | None) -> str:
        """``block``, ``recursive`` (index the contents) or None (back to the heuristics)."""
        path = fs_rules.true_case(paths.normalize(folder))
        if not os.path.isdir(path):
            raise SenseTreeError(f"{folder} is not a folder")
        if path in self.catalog.roots.all() and mode == "block":
            raise SenseTreeError("a root is never a block")
        self.catalog.roots.set_folder_mode(self._inside_roots(path), mode)
        return path

    def pin_sense(self, path: str, sense: str) -> None:
        """Correct a file's sense by hand; it is pinned (never overwritten) and the file re-indexed with it."""
        norm = paths.normalize(path)
        if self.catalog.files.get(norm) is None:
            raise SenseTreeError(f"{path} is not in the index")
        self.catalog.senses.pin(norm, sense.strip())
        self.catalog.states.requeue(norm)

    def sense_of(self, path: str) -> SenseRow | None:
        """The sense stored for a file, under the same key ``pin_sense`` writes."""
        return self.catalog.senses.of(paths.normalize(path))

    def retry(self, path: str | None = None) -> int:
        return self.catalog.states.retry(paths.normalize(path) if path else None)

    def ignore(self, path: str | None = None) -> int:
        """Leave a file or folder out of the index for good (all failed files when ``path`` is None)."""
        targets = [r.path for r in self.catalog.files.failed()] if path is None else [self._inside_roots(path)]
        with self.storage.writer():
            for target in targets:
                self.catalog.roots.set_folder_mode(target, "ignore")
                gone = self.catalog.files.under(target)
                self.store.writes.delete_paths(gone)
                self.catalog.states.delete(gone)
        return len(targets)

    def unignore(self, path: str) -> str:
        """Undo ``ignore``: the next scan picks the path up again."""
        norm = paths.normalize(path)
        if self.catalog.roots.folder_modes().get(norm) != "ignore":
            raise SenseTreeError(f"{path} is not ignored")
        self.catalog.roots.set_folder_mode(norm, None)
        return norm

    def ignored(self) -> list[str]:
        return sorted(p for p, mode in self.catalog.roots.folder_modes().items() if mode == "ignore")

    def reindex(self, path: str) -> int:
        """Index a file, or every file under a folder, again from scratch (the next run does it)."""
        targets = self.catalog.files.under(self._inside_roots(path))
        for target in targets:
            self.catalog.states.requeue(target)
        return len(targets)

    def _inside_roots(self, path: str) -> str:
        norm = paths.normalize(path)
        if not any(paths.is_under(norm, root) for root in self.catalog.roots.all()):
            raise SenseTreeError(f"{path} is outside every indexed root")
        return norm
