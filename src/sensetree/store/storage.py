"""A data dir's persistent state: the catalog, the chunk store, and the lock that lets one process write.

The chunks live in the data dir, or wherever ``storage.uri`` says (a folder, a bucket:
``location.py``); on a bucket, the writer also holds a lease there (``lease.py``), and each
time it lets go it leaves beside the chunks what a search node needs (``manifest.py``).

It also repairs what a power cut or a bad disk leaves behind (``integrity`` finds the damage):
an operation that fails on a damaged catalog or vector table is repaired, told about in the
notices, and run once more (``recovering``). After any repair the catalog is reconciled with
the vectors, so the next indexing run redoes exactly what was lost.
"""

from __future__ import annotations

import errno
import os
import shutil
import socket
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from filelock import FileLock, Timeout

from ..errors import DataDirReadOnly, SenseTreeError, StoreDamaged, WriterBusy
from ..notices import Notices
from . import integrity
from .catalog import Catalog
from .chunks import ChunkStore
from .lease import WriterLease
from .location import LocalLocation, Location, S3Location
from .manifest import Manifest, publish
from .table import TABLE

T = TypeVar("T")
WRITE_REFUSED = (errno.EROFS, errno.EACCES, errno.EPERM)  # a read-only mount, a folder that is not ours
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
SQLITE_FULL = 13  # "database or disk is full"
SQLITE_IOERR = 10  # "disk I/O error": also what SQLite says when its shared-memory file cannot grow
ROOM_BYTES = 1 << 20  # less free space than this, and an I/O error at open is the disk being full


def disk_full(error: BaseException) -> bool:
    """Whether ``error`` says the disk (or a quota) is full, in Python's, SQLite's or LanceDB's words.

    A full disk is not damage: nothing is repaired or moved aside for it, and reads go on."""
    if isinstance(error, OSError) and error.errno in DISK_FULL:
        return True
    if isinstance(error, sqlite3.Error) and getattr(error, "sqlite_errorcode", None) == SQLITE_FULL:
        return True
    text = str(error)
    return "No space left on device" in text or "database or disk is full" in text or "Disk quota exceeded" in text


class Storage:
    def __init__(self, data_dir: Path, notices: Notices, where: Location | None = None):
        self.data_dir = data_dir
        self.notices = notices
        self.location = where or LocalLocation(data_dir / "lancedb")
        self._writer_lock = FileLock(str(data_dir / "writer.lock"))
        self._lease = (
            WriterLease(self.location, f"{socket.gethostname()}:{data_dir}")
            if isinstance(self.location, S3Location)
            else None
        )  # remote: a bucket
        self._depth = 0  # writer() calls in progress in this process: the lease is taken once
        self.manifest: Callable[[], Manifest] | None = None  # what to leave beside the chunks (the engine's)
        self._published: bytes | None = None
        self._catalog_behind = False  # the catalog lost commits: reconcile it with the vectors
        # a read-only mount or a folder not ours: the commands that read still work, the others say why not
        self.read_only = data_dir.is_dir() and not os.access(data_dir, os.W_OK)
        self.full = False  # the disk was full when the catalog opened: reads only, writing says why not
        self.catalog = self._open_catalog()
        self.store: ChunkStore = ChunkStore(self.location)
        if self._catalog_behind and self.writer_free():
            self.reconcile()
        if self.writer_free():
            self.recovering(self.check_vectors)  # a table LanceDB cannot open is damage: rolled back first
        self._migrate()

    def _migrate(self) -> None:
        """A chunks table written by an earlier version gets what filters need, without re-embedding."""
        if not self.writer_free() or not self.recovering(self.store.upkeep.unfilled_files):
            return
        with self.writer():
            files = {row.path: (row.doc_type or "", row.size) for row in self.catalog.files.all()}
            self.recovering(lambda: self.store.upkeep.fill_file_fields(files))

    def close(self) -> None:
        self.catalog.close()
        if self._writer_lock.is_locked:
            self._writer_lock.release(force=True)

    # the one writer ---------------------------------------------------------------------
    @contextmanager
    def writer(self, wait: float = 0) -> Iterator[None]:
        """Hold the data dir's writer lock (and a bucket's lease); raises WriterBusy when another process holds it."""
        if self.full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.data_dir))
        try:
            self._writer_lock.acquire(timeout=wait)
        except Timeout:  # held by another thread of this process (a server indexing), or by another process
            holder = "this sensetree process is already" if self._depth else "another sensetree process is"
            raise WriterBusy(f"{holder} indexing {self.data_dir}; wait for it to finish or stop it") from None
        except OSError as exc:
            if exc.errno not in WRITE_REFUSED:
                raise
            raise DataDirReadOnly(
                f"the data dir {self.data_dir} is read-only ({exc.strerror}): this command "
                "changes the index; status, search, tree, ask and queue still work"
            ) from None
        try:
            if self._depth == 0 and self._lease is not None:
                self._lease.acquire()
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._let_go()
        finally:
            self._writer_lock.release()

    def _let_go(self) -> None:
        """Leave the manifest beside the chunks, then the lease."""
        try:
            if self.manifest is not None:
                self._published = publish(self.location, self.manifest(), self._published)
        finally:
            if self._lease is not None:
                self._lease.release()

    def writer_free(self) -> bool:
        """No other process writes to the data dir now, so what is on disk is settled."""
        try:
            with self.writer():
                return True
        except (WriterBusy, DataDirReadOnly):
            return False
        except OSError as exc:  # a full disk: nothing is settled by this process until there is room
            if disk_full(exc):
                return False
            raise

    # damage ---------------------------------------------------------------------------
    def recovering(self, operation: Callable[[], T]) -> T:
        """Run ``operation``; when it fails on a damaged catalog or vector table, repair it and run once more.

        ``StoreDamaged`` is repaired; every other error of ours passes through untouched. What SQLite or
        LanceDB raise (their errors are ``RuntimeError``, ``ValueError`` or ``OSError``, raised inside
        their own code) is damage only when the check of their files finds some; the same kinds raised
        anywhere else (a bug, a file being indexed) pass through without a check.
        """
        try:
            return operation()
        except StoreDamaged as exc:
            if not self._repair(exc):
                raise
        except SenseTreeError:
            raise
        except (sqlite3.DatabaseError, RuntimeError, ValueError, OSError) as exc:
            if not (isinstance(exc, sqlite3.DatabaseError) or raised_by_the_store(exc)) or not self._repair(exc):
                raise
        return operation()

    # issue 33: archive members follow the disk's rules (walker.member_reason); issue 42: a nested archive's
    # own ignore files too, and a folder whose ignore file is too large to read is held back
    ARCHIVE_RULES = "disk-rules-2"

    def reread_archives_once(self, is_archive: Callable[[str], bool]) -> int:
        """Once per data dir, after the rule for archive members changed: every archive is read again, so
        that members the new rule leaves out (a ``.env`` in a backup) leave an index made before it.
        Returns how many were queued."""
        if self.catalog.meta("archive_rules") == self.ARCHIVE_RULES:
            return 0
        archives = [row.path for row in self.catalog.files.all() if row.kind == "file" and is_archive(row.path)]
        for path in archives:
            self.catalog.states.requeue(path)
        self.catalog.set_meta("archive_rules", self.ARCHIVE_RULES)
        return len(archives)

    def would_wipe(self, wanted: str) -> str | None:
        """What ``match_model(wanted)`` would wipe, in words; None when it would wipe nothing."""
        stored = self.catalog.meta("embedding_identity")
        chunks = self.store.table.count()
        if stored == wanted or chunks == 0:  # an empty table loses nothing
            return None
        return (
            f"the index made with {stored or 'another model'} ({chunks} chunks: their vectors and keyword text) "
            "is wiped, and every file is read and embedded again"
        )

    def match_model(self, wanted: str) -> str | None:
        """Wipe the vectors when ``wanted``, the embedding model's identity, is not the one that made
        them (design §1.5): every file is indexed again. Returns the notice it adds, if it did."""
        stored = self.catalog.meta("embedding_identity")
        if stored == wanted or (stored is None and self.store.table.count() == 0):
            self.catalog.set_meta("embedding_identity", wanted)
            return None
        with self.writer():
            # the files are waiting again before their rows go: a reader that finds the table gone
            # also finds them waiting, and says so (coverage) instead of answering with nothing
            self.catalog.states.requeue_all()
            self.store.writes.wipe()
            self.catalog.set_meta("embedding_identity", wanted)
        message = (
            f"Embedding model changed ({stored or 'unknown'} -> {wanted}): the vectors were wiped and every "
            "file will be re-indexed; results come back progressively."
        )
        self.notices.add(message)
        return message

    def follow_location(self) -> None:
        """The catalog checked against the chunks when they moved (storage.uri changed): what the new
        place lacks is indexed again there."""
        uri, known = self.location.uri, self.catalog.meta("storage_uri")
        if known is not None and known != uri:
            self.reconcile()
        if known != uri:
            self.catalog.set_meta("storage_uri", uri)

    def check_vectors(self) -> None:
        """A vector table that is gone (deleted by hand, a sync tool, a backup restore) or no longer opens,
        while the catalog lists stored text: it is rebuilt from the catalog (what it lacks is indexed again)
        and the user told. Without this the catalog would vouch for vectors that are not there, and every
        search would answer nothing, for good."""
        if self.store.table.handle is not None or not self.catalog.files.has_stored():
            return
        with self.writer():
            rolled_back = None
            if self.store.table.directory is not None and (self.store.table.directory / f"{TABLE}.lance").exists():
                rolled_back = self.store.repair.roll_back()  # an earlier version that opens, or nothing
            requeued, _ = integrity.reconcile(self.catalog, self.store)
        if rolled_back is not None:  # the damage notice every other repair gives
            self.notices.add(
                f"The vector index was damaged (the vector table at {self.location.uri} did not open); "
                f"it was rolled back to its last sound version ({rolled_back}), and the files written "
                f"since ({requeued}) will be indexed again."
            )
        else:
            self.notices.add(
                f"The vector table at {self.location.uri} was missing or did not open; it was rebuilt "
                f"empty, and {requeued} file(s) will be indexed again from the catalog; results come "
                "back progressively."
            )

    def reconcile_if_behind(self) -> None:
        if self._catalog_behind:
            self.reconcile()

    def reconcile(self) -> None:
        with self.writer():
            requeued, dropped = self.recovering(lambda: integrity.reconcile(self.catalog, self.store))
        self._catalog_behind = False
        if requeued or dropped:
            self.notices.add(
                f"Checked against the vectors: {requeued} file(s) will be indexed again, and the "
                f"vectors of {dropped} file(s) the catalog no longer lists were dropped."
            )

    def _open_catalog(self) -> Catalog:
        """The catalog, salvaged when SQLite cannot open it; a log that lost commits is noted for repair."""
        path = self.data_dir / "catalog.sqlite"
        if self.read_only:
            return Catalog(path, read_only=True)
        wal = integrity.read_wal(path) if self.writer_free() else None
        try:
            catalog = Catalog(path)
        except sqlite3.DatabaseError as exc:
            if self._no_room(exc):  # SQLite could not make its log: read the catalog as it stands
                self.full = True
                return Catalog(path, read_only=True)
            return self._salvage_catalog(str(exc))
        try:
            problem = integrity.wal_problem(wal, catalog.wal_frames()) if wal else None
        except sqlite3.OperationalError as exc:
            # The check checkpoints the log into the catalog, which needs room: a run the disk filled left
            # a long log behind. SQLite reads through the log as it is; the check waits for room.
            if not disk_full(exc):
                raise
            self.full = True
            problem = None
        if problem:
            self.notices.add(
                f"The catalog's write-ahead log was damaged: {problem}. Its last changes were "
                "lost; the catalog was checked against the vectors and what it lost will be "
                "indexed again."
            )
            self._catalog_behind = True
        return catalog

    def _no_room(self, error: sqlite3.DatabaseError) -> bool:
        """The catalog failed to open because the disk is full, not because it is damaged."""
        if disk_full(error):
            return True
        code = getattr(error, "sqlite_errorcode", 0) & 0xFF
        return code == SQLITE_IOERR and shutil.disk_usage(self.data_dir).free < ROOM_BYTES

    def _salvage_catalog(self, reason: str) -> Catalog:
        with self.writer():
            salvage = integrity.salvage_catalog(self.data_dir / "catalog.sqlite")
        self.notices.add(salvage.describe(reason))
        self._catalog_behind = True
        return salvage.catalog

    def _repair(self, error: Exception) -> bool:
        """Repair the store ``error`` came from if one of its files is damaged; False when none is."""
        if disk_full(error):
            return False  # a write the disk refused: what was committed before is whole
        if isinstance(error, sqlite3.DatabaseError):
            reason = self.catalog.damage()
            if reason is None:
                return False  # a busy or locked database, not a damaged one
            with self.writer():
                self.catalog.close()
                self.catalog = self._salvage_catalog(reason)
        else:
            reason = str(error) if isinstance(error, StoreDamaged) else self.store.repair.verify()
            if reason is None:
                return False
            with self.writer():
                version = self.store.repair.roll_back()
            if version is None:
                self.notices.add(
                    f"The vector index was damaged ({reason}) and no earlier version of it reads "
                    "back whole: it was rebuilt empty, and every file will be indexed again."
                )
            else:
                self.notices.add(
                    f"The vector index was damaged ({reason}); it was rolled back to its last "
                    f"sound version ({version}), and the files written since will be indexed again."
                )
        self.reconcile()
        return True

    def size_bytes(self) -> int:
        catalog = sum(f.stat().st_size for f in self.data_dir.glob("catalog.sqlite*") if f.is_file())
        return catalog + self.location.size_bytes()


STORE_LIBRARIES = ("lancedb", "lance", "pyarrow", "sqlite3")  # where the store's files are read and written


def raised_by_the_store(error: BaseException) -> bool:
    """Whether ``error`` (or what it was raised from) came out of LanceDB, Lance, Arrow or SQLite code:
    only those read the store's files, so only their errors may mean a damaged file."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        tb = current.__traceback__
        while tb is not None:
            module = tb.tb_frame.f_globals.get("__name__", "")
            if module.split(".")[0] in STORE_LIBRARIES:
                return True
            tb = tb.tb_next
        current = current.__cause__ or current.__context__
    return False
