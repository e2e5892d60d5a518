"""A data dir's persistent state: the catalog, the chunk store, and the lock that lets one process write.

It also repairs what a power cut or a bad disk leaves behind (``integrity`` finds the damage):
an operation that fails on a damaged catalog or vector table is repaired, told about in the
notices, and run once more (``recovering``). After any repair the catalog is reconciled with
the vectors, so the next indexing run redoes exactly what was lost.
"""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from filelock import FileLock, Timeout

from ..errors import SenseTreeError, WriterBusy
from ..notices import Notices
from . import integrity
from .catalog import Catalog
from .chunks import ChunkStore, StoreDamaged

T = TypeVar("T")


class Storage:
    def __init__(self, data_dir: Path, notices: Notices):
        self.data_dir = data_dir
        self.notices = notices
        self._writer_lock = FileLock(str(data_dir / "writer.lock"))
        self._catalog_behind = False  # the catalog lost commits: reconcile it with the vectors
        self.catalog = self._open_catalog()
        self.store = ChunkStore(data_dir / "lancedb")
        if self._catalog_behind and self.writer_free():
            self.reconcile()
        self._migrate()

    def _migrate(self) -> None:
        """A chunks table written by an earlier version gets what filters need, without re-embedding."""
        if not self.writer_free() or not self.recovering(self.store.unfilled_files):
            return
        with self.writer():
            files = {row.path: (row.doc_type or "", row.size) for row in self.catalog.iter_rows()}
            self.recovering(lambda: self.store.fill_file_fields(files))

    def close(self) -> None:
        self.catalog.close()
        if self._writer_lock.is_locked:
            self._writer_lock.release(force=True)

    # the one writer ---------------------------------------------------------------------
    @contextmanager
    def writer(self, wait: float = 0) -> Iterator[None]:
        """Hold the data dir's writer lock; raises WriterBusy when another process holds it."""
        try:
            self._writer_lock.acquire(timeout=wait)
        except Timeout:
            raise WriterBusy(f"another sensetree process is indexing {self.data_dir}; "
                             "wait for it to finish or stop it") from None
        try:
            yield
        finally:
            self._writer_lock.release()

    def writer_free(self) -> bool:
        """No other process writes to the data dir now, so what is on disk is settled."""
        try:
            with self.writer():
                return True
        except WriterBusy:
            return False

    # damage ---------------------------------------------------------------------------
    def recovering(self, operation: Callable[[], T], passthrough: tuple[type[BaseException], ...] = ()) -> T:
        """Run ``operation``; when it fails on a damaged catalog or vector table, repair it and run once more.

        ``passthrough`` are the caller's own errors (an endpoint that is down...), never damage.
        """
        try:
            return operation()
        except (SenseTreeError, *passthrough):
            raise
        except (sqlite3.DatabaseError, RuntimeError, ValueError, OSError) as exc:
            if not self._repair(exc):
                raise
        return operation()

    def reconcile_if_behind(self) -> None:
        if self._catalog_behind:
            self.reconcile()

    def reconcile(self) -> None:
        with self.writer():
            requeued, dropped = self.recovering(lambda: integrity.reconcile(self.catalog, self.store))
        self._catalog_behind = False
        if requeued or dropped:
            self.notices.add(f"Checked against the vectors: {requeued} file(s) will be indexed again, and the "
                             f"vectors of {dropped} file(s) the catalog no longer lists were dropped.")

    def _open_catalog(self) -> Catalog:
        """The catalog, salvaged when SQLite cannot open it; a log that lost commits is noted for repair."""
        path = self.data_dir / "catalog.sqlite"
        wal = integrity.read_wal(path) if self.writer_free() else None
        try:
            catalog = Catalog(path)
        except sqlite3.DatabaseError as exc:
            return self._salvage_catalog(str(exc))
        problem = integrity.wal_problem(wal, catalog.wal_frames()) if wal else None
        if problem:
            self.notices.add(f"The catalog's write-ahead log was damaged: {problem}. Its last changes were "
                             "lost; the catalog was checked against the vectors and what it lost will be "
                             "indexed again.")
            self._catalog_behind = True
        return catalog

    def _salvage_catalog(self, reason: str) -> Catalog:
        with self.writer():
            salvage = integrity.salvage_catalog(self.data_dir / "catalog.sqlite")
        self.notices.add(salvage.describe(reason))
        self._catalog_behind = True
        return salvage.catalog

    def _repair(self, error: Exception) -> bool:
        """Repair the store ``error`` came from if one of its files is damaged; False when none is."""
        if isinstance(error, sqlite3.DatabaseError):
            reason = self.catalog.damage()
            if reason is None:
                return False  # a busy or locked database, not a damaged one
            with self.writer():
                self.catalog.close()
                self.catalog = self._salvage_catalog(reason)
        else:
            reason = str(error) if isinstance(error, StoreDamaged) else self.store.verify()
            if reason is None:
                return False
            with self.writer():
                version = self.store.roll_back()
            if version is None:
                self.notices.add(f"The vector index was damaged ({reason}) and no earlier version of it reads "
                                 "back whole: it was rebuilt empty, and every file will be indexed again.")
            else:
                self.notices.add(f"The vector index was damaged ({reason}); it was rolled back to its last "
                                 f"sound version ({version}), and the files written since will be indexed again.")
        self.reconcile()
        return True

    def size_bytes(self) -> int:
        files = [*(self.data_dir / "lancedb").rglob("*"), *self.data_dir.glob("catalog.sqlite*")]
        return sum(f.stat().st_size for f in files if f.is_file())
