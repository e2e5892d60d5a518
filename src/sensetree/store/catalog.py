"""The file catalog in SQLite (WAL): roots, one row per file or block folder, senses, folder choices.

The catalog is the queue of both indexing phases. A row is ``pending`` until its text is
stored (the keyword phase), then ``keyword`` (findable by keyword) until every chunk has its
vector, then ``indexed``; ``failed`` rows keep their last error. A ``keyword`` row that carries
an error is a file whose content could not be read: it is findable by its context entry and
turns ``failed`` once that entry has its vector. A ``keyword`` row with pages waiting for OCR
(``ocr_wanted``) is read again with OCR before its vectors are made. Block folders are single
rows of kind ``block``; their members have no rows, only a count, so a huge ``node_modules``
costs one row. The files inside an archive are rows of kind ``member``, named
``<archive path>/<member path>``; they come and go with their archive.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from enum import StrEnum
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from ..paths import folder_prefix, folds_case, is_under

SCHEMA = """
CREATE TABLE IF NOT EXISTS roots (
    path TEXT PRIMARY KEY, added_at REAL NOT NULL,
    offline_since REAL,  -- missing, unmounted or unreadable since then: its entries are kept, out of results
    device INTEGER       -- the device it was on at its last full scan: an empty mount point is told apart
);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,
    root TEXT NOT NULL,
    kind TEXT NOT NULL DEFAULT 'file',      -- file | block | member (of an archive)
    size INTEGER NOT NULL DEFAULT 0,
    mtime REAL NOT NULL DEFAULT 0,
    content_hash TEXT,                      -- hash of the content whose vectors are stored
    status TEXT NOT NULL DEFAULT 'pending', -- pending | keyword | indexed | failed
    doc_type TEXT,
    chunks INTEGER NOT NULL DEFAULT 0,
    members INTEGER NOT NULL DEFAULT 0,     -- files inside a block folder
    attempts INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    updated_at REAL NOT NULL DEFAULT 0,
    priority REAL NOT NULL DEFAULT 0,       -- when the user last asked for it (preview, scope): first in line
    ocr_wanted INTEGER NOT NULL DEFAULT 0,  -- pages its text still lacks until OCR reads them
    notes TEXT,                             -- why it is indexed by context only, pages OCR could not read
    ctime REAL,                             -- inode change time (POSIX), where the OS has one
    inode INTEGER                           -- inode number, where the OS has one
);
CREATE INDEX IF NOT EXISTS files_status ON files(status);
CREATE INDEX IF NOT EXISTS files_root ON files(root);
CREATE INDEX IF NOT EXISTS files_hash ON files(content_hash);
CREATE TABLE IF NOT EXISTS senses (
    path TEXT PRIMARY KEY, sense TEXT NOT NULL, source TEXT NOT NULL, pinned INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS folders (path TEXT PRIMARY KEY, mode TEXT NOT NULL);  -- manual block | recursive
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
"""


class Status(StrEnum):
    """Where a file is in indexing. The transitions, each written once below:

    - ``pending`` -> ``keyword`` (``mark_keyword``: its text is stored, findable by keyword)
      -> ``indexed`` (``mark_embedded``: every chunk has its vector), or ``failed`` for a file whose
      context entry is all that could be stored;
    - any -> ``failed`` after ``max_attempts`` failures (``mark_failed``, ``requeue_for_repair``);
    - back to ``pending`` (``BACK_TO_PENDING``) when it changes on disk, is retried, requeued or the
      model changes; ``indexed`` -> ``keyword`` when some of its vectors went missing.
    """

    PENDING = "pending"
    KEYWORD = "keyword"
    INDEXED = "indexed"
    FAILED = "failed"


STATUSES = tuple(status.value for status in Status)
PENDING, KEYWORD, INDEXED, FAILED = Status
# Back in the queue for the keyword phase, as a fresh start (its attempts and error forgotten).
BACK_TO_PENDING = f"status = '{PENDING}', attempts = 0, error = NULL"


@dataclass(frozen=True)
class DiskState:
    """What a re-scan compares the disk against."""

    kind: str
    size: int
    mtime: float
    status: str
    ctime: float | None = None  # None where the OS has none, or the row predates the column
    inode: int | None = None


@dataclass(frozen=True)
class SenseRow:
    text: str
    source: str  # 'llm', 'excerpt', 'pinned', or 'pending' (the excerpt until the model writes one)
    pinned: bool


@dataclass(frozen=True)
class FileRow:
    path: str
    root: str
    kind: str
    size: int
    mtime: float
    content_hash: str | None
    status: str
    doc_type: str | None
    chunks: int
    members: int
    attempts: int
    error: str | None
    ocr_wanted: int = 0
    notes: str | None = None


@dataclass(frozen=True)
class StoredText:
    """A file whose text rows were just stored by the keyword phase."""

    path: str
    content_hash: str
    mtime: float
    size: int
    doc_type: str
    chunks: int
    error: str | None = None  # the content could not be read: only its context entry is stored
    ocr_wanted: int = 0       # pages still waiting for OCR
    notes: str | None = None  # for the queue: why it is context only, pages OCR could not read


def _open_read_only(path: Path) -> sqlite3.Connection:
    """Read-only, or, where SQLite cannot make the log's shared-memory file (a read-only mount), as an
    immutable file: nothing can change it there anyway."""
    uri = path.resolve().as_uri()
    try:
        db = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False, isolation_level=None)
        db.execute("SELECT COUNT(*) FROM sqlite_master").fetchall()
        return db
    except sqlite3.OperationalError:
        return sqlite3.connect(f"{uri}?immutable=1", uri=True, check_same_thread=False, isolation_level=None)


class Catalog:
    """Thread-safe access to the SQLite catalog; every write is one short transaction."""

    def __init__(self, path: Path, read_only: bool = False):
        """``read_only``: a catalog on a data dir this process cannot write (a read-only mount), opened so that
        SQLite writes nothing, not even its shared-memory file; the index is then as the last writer left it."""
        self._lock = threading.RLock()
        if read_only:
            self._db = _open_read_only(path)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), timeout=30, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=30000")
        self._db.executescript(SCHEMA)
        self._migrate()

    def _migrate(self) -> None:
        """Catalogs written by earlier versions lack the newer columns."""
        columns = self.columns("files")
        for name, definition in (("priority", "REAL NOT NULL DEFAULT 0"), ("ocr_wanted", "INTEGER NOT NULL DEFAULT 0"),
                                 ("notes", "TEXT"), ("ctime", "REAL"), ("inode", "INTEGER")):
            if name not in columns:
                self._run(f"ALTER TABLE files ADD COLUMN {name} {definition}")
        root_columns = self.columns("roots")
        for name in ("offline_since", "device"):
            if name not in root_columns:
                self._run(f"ALTER TABLE roots ADD COLUMN {name} {'REAL' if name == 'offline_since' else 'INTEGER'}")
        self._run("CREATE INDEX IF NOT EXISTS files_queue ON files(status, priority, mtime)")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def damage(self) -> str | None:
        """None when SQLite finds the file sound (``PRAGMA quick_check``), else its first complaint."""
        try:
            result = self._run("PRAGMA quick_check(1)")[0][0]
        except sqlite3.DatabaseError as exc:
            return str(exc)
        return None if result == "ok" else result

    def columns(self, table: str) -> list[str]:
        return [r[1] for r in self._run(f"PRAGMA table_info({table})")]

    def insert_rows(self, table: str, columns: list[str], rows: Iterable[tuple]) -> None:
        """Rows salvaged from a damaged catalog (store/integrity.py); existing rows win."""
        self._many(f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                   rows)

    def wal_frames(self) -> int:
        """Frames of the write-ahead log SQLite accepted when it opened it (checksums valid)."""
        return self._run("PRAGMA wal_checkpoint(PASSIVE)")[0][1]

    def _run(self, sql: str, params: Iterable = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, tuple(params)).fetchall()

    def _many(self, sql: str, rows: Iterable[Iterable]) -> None:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(sql, rows)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    # meta -------------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        rows = self._run("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def first_time(self, topic: str, about: str) -> bool:
        """True the first time ``topic`` is about ``about`` in this data dir (again when it changes):
        what the user was told once is not told before every search."""
        key = f"told:{topic}"
        if self.meta(key) == about:
            return False
        self.set_meta(key, about)
        return True

    def set_meta(self, key: str, value: str | None) -> None:
        self._run("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                  (key, value))

    # roots ------------------------------------------------------------------------
    def roots(self) -> list[str]:
        return [r[0] for r in self._run("SELECT path FROM roots ORDER BY path")]

    def add_root(self, path: str) -> None:
        self._run("INSERT OR IGNORE INTO roots(path, added_at) VALUES (?, ?)", (path, time.time()))

    def remove_root(self, path: str) -> None:
        self._run("DELETE FROM roots WHERE path = ?", (path,))

    def offline_roots(self) -> dict[str, float]:
        """Roots that were missing or unreadable at the last scan, and since when."""
        return dict(self._run("SELECT path, offline_since FROM roots WHERE offline_since IS NOT NULL ORDER BY path"))

    def root_device(self, path: str) -> int | None:
        rows = self._run("SELECT device FROM roots WHERE path = ?", (path,))
        return rows[0][0] if rows else None

    def set_root_online(self, path: str, device: int | None) -> None:
        self._run("UPDATE roots SET offline_since = NULL, device = ? WHERE path = ?", (device, path))

    def set_root_offline(self, path: str) -> None:
        """Keep the first time it was found missing: how long it has been away."""
        self._run("UPDATE roots SET offline_since = COALESCE(offline_since, ?) WHERE path = ?", (time.time(), path))

    # folders (manual choices) -------------------------------------------------------
    def folder_modes(self) -> dict[str, str]:
        return dict(self._run("SELECT path, mode FROM folders"))

    def set_folder_mode(self, path: str, mode: str | None) -> None:
        """``block`` or ``recursive`` for a folder, ``ignore`` for a file or folder, None to forget the choice."""
        if mode is None:
            self._run("DELETE FROM folders WHERE path = ?", (path,))
        else:
            self._run("INSERT INTO folders(path, mode) VALUES (?, ?) ON CONFLICT(path) DO UPDATE SET mode = excluded.mode",
                      (path, mode))

    # files ------------------------------------------------------------------------
    def file(self, path: str) -> FileRow | None:
        rows = self._run(f"SELECT {_COLUMNS} FROM files WHERE path = ?", (path,))
        return FileRow(*rows[0]) if rows else None

    def files_under(self, root: str) -> dict[str, DiskState]:
        """path -> what was seen of it on disk, for the files of a root."""
        return {r[0]: DiskState(*r[1:]) for r in self._run(
            "SELECT path, kind, size, mtime, status, ctime, inode FROM files WHERE root = ?", (root,))}

    def upsert_pending(self, rows: Iterable[tuple[str, str, str, int, float, int, float | None, int | None]]) -> None:
        """(path, root, kind, size, mtime, members, ctime, inode): queue new or changed entries, keeping their
        stored hash."""
        now = time.time()
        self._many(
            "INSERT INTO files(path, root, kind, size, mtime, members, ctime, inode, status, attempts, error, updated_at) "
            f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, '{PENDING}', 0, NULL, ?) ON CONFLICT(path) DO UPDATE SET "
            "root = excluded.root, kind = excluded.kind, size = excluded.size, mtime = excluded.mtime, "
            f"members = excluded.members, ctime = excluded.ctime, inode = excluded.inode, {BACK_TO_PENDING}, "
            "updated_at = excluded.updated_at",
            ((*row, now) for row in rows),
        )

    def set_identity(self, rows: Iterable[tuple[float | None, int | None, str]]) -> None:
        """(ctime, inode, path): what a row written before those columns existed is, without queueing it."""
        self._many("UPDATE files SET ctime = ?, inode = ? WHERE path = ?", rows)

    def files_under_prefix(self, path: str) -> list[str]:
        """The rows at ``path`` or below it (a file, or a folder's files and blocks)."""
        return [r[0] for r in self._run(f"SELECT path FROM files WHERE {_UNDER}", _under(path)) if is_under(r[0], path)]

    def blocks(self) -> list[str]:
        return [r[0] for r in self._run("SELECT path FROM files WHERE kind = 'block'")]

    def pending(self, limit: int | None = None) -> list[FileRow]:
        """Rows waiting for the keyword phase, first in line first."""
        return self._queue(f"status = '{PENDING}'", limit)

    def keyword_ready(self, limit: int | None = None) -> list[FileRow]:
        """Rows whose text is stored (OCR done) and whose vectors are not, first in line first."""
        return self._queue(f"status = '{KEYWORD}' AND ocr_wanted = 0", limit)

    def waiting_for_ocr(self, limit: int | None = None) -> list[FileRow]:
        """Rows stored without the pages only OCR can read, first in line first."""
        return self._queue(f"status = '{KEYWORD}' AND ocr_wanted > 0", limit)

    def _queue(self, condition: str, limit: int | None) -> list[FileRow]:
        """The user's last asks first, then the most recently modified: what people look for."""
        sql = f"SELECT {_COLUMNS} FROM files WHERE {condition} ORDER BY priority DESC, mtime DESC, path"
        return [FileRow(*r) for r in self._run(sql + (f" LIMIT {int(limit)}" if limit else ""))]

    def has_stored(self) -> bool:
        """Whether any row says its text is in the vector table."""
        return bool(self._run(f"SELECT 1 FROM files WHERE status != '{PENDING}' AND chunks > 0 LIMIT 1"))

    def prioritize(self, path: str) -> int:
        """Put a file, or the files under a folder, first in line for whichever phase they wait for."""
        return self._update_under(path, "priority = ?", (time.time(),), f"status IN ('{PENDING}', '{KEYWORD}')")

    def coverage(self, folder: str | None = None) -> tuple[int, int]:
        """(files, of them done with the semantic phase) at or under ``folder``, or in every root."""
        condition, params = ("1", ()) if folder is None else (_UNDER, _under(folder))
        if folder is not None and folds_case(folder):
            rows = self._run(f"SELECT path, status FROM files WHERE {condition}", params)
            statuses = [status for p, status in rows if is_under(p, folder)]
            return len(statuses), sum(s in ("indexed", "failed") for s in statuses)
        total, done = self._run(f"SELECT COUNT(*), COALESCE(SUM(status IN ('{INDEXED}', '{FAILED}')), 0) FROM files "
                                f"WHERE {condition}", params)[0]
        return total, done

    def waiting_under(self, folder: str | None = None) -> bool:
        """Whether any file at or under ``folder`` (or anywhere) still waits for its vectors (a cheap check)."""
        condition, params = ("1", ()) if folder is None else (_UNDER, _under(folder))
        rows = self._run(f"SELECT path FROM files WHERE status IN ('{PENDING}', '{KEYWORD}') AND {condition} LIMIT 1000",
                         params)
        return any(folder is None or is_under(p, folder) for (p,) in rows)

    def _update_under(self, folder: str, assignment: str, values: tuple, condition: str) -> int:
        """``UPDATE files SET <assignment>`` for the rows at or under ``folder`` that meet ``condition``."""
        if not folds_case(folder):  # the key range is exact where case counts
            with self._lock:
                cursor = self._db.execute(f"UPDATE files SET {assignment} WHERE {condition} AND {_UNDER}",
                                          (*values, *_under(folder)))
                return cursor.rowcount
        rows = [r[0] for r in self._run(f"SELECT path FROM files WHERE {condition} AND {_UNDER}", _under(folder))
                if is_under(r[0], folder)]
        self._many(f"UPDATE files SET {assignment} WHERE path = ?", ((*values, p) for p in rows))
        return len(rows)

    def noted(self, limit: int | None = None) -> list[FileRow]:
        """Files in the index with something to say: why only their context is indexed (a legacy .doc,
        an encrypted PDF), pages OCR could not read, archive members left out."""
        sql = (f"SELECT {_COLUMNS} FROM files WHERE status != '{FAILED}' AND (error IS NOT NULL OR notes IS NOT NULL) "
               "ORDER BY path")
        return [FileRow(*r) for r in self._run(sql + (f" LIMIT {int(limit)}" if limit else ""))]

    def failed(self) -> list[FileRow]:
        return [FileRow(*r) for r in self._run(f"SELECT {_COLUMNS} FROM files WHERE status = '{FAILED}' ORDER BY path")]

    def mark_keyword(self, items: Iterable[StoredText]) -> None:
        """Only called once the text rows are stored: findable by keyword from now on."""
        now = time.time()
        self._many(
            f"UPDATE files SET status = '{KEYWORD}', content_hash = ?, mtime = ?, size = ?, doc_type = ?, chunks = ?, "
            "attempts = CASE WHEN ? IS NULL THEN attempts ELSE attempts + 1 END, error = ?, ocr_wanted = ?, notes = ?, "
            "updated_at = ? WHERE path = ?",
            ((i.content_hash, i.mtime, i.size, i.doc_type, i.chunks, i.error, i.error, i.ocr_wanted, i.notes, now,
              i.path) for i in items),
        )

    def replace_archive_members(self, archive: str, root: str, members: Iterable[tuple[str, int, float]]) -> list[str]:
        """The rows of an archive's members (path, size, mtime) after a new read of it, queued to be stored;
        returns the paths of members it no longer holds, whose rows are gone (their chunks are the caller's).

        A member keeps its count of attempts: reading its archive again is no fresh start for it."""
        members = list(members)
        kept = {path for path, _, _ in members}
        gone = [p for p in self.files_under_prefix(archive) if p != archive and p not in kept]
        self.delete(gone)
        now = time.time()
        self._many(
            "INSERT INTO files(path, root, kind, size, mtime, members, status, attempts, error, updated_at) "
            f"VALUES (?, ?, 'member', ?, ?, 0, '{PENDING}', 0, NULL, ?) ON CONFLICT(path) DO UPDATE SET "
            f"root = excluded.root, kind = 'member', size = excluded.size, mtime = excluded.mtime, status = '{PENDING}', "
            "error = NULL, updated_at = excluded.updated_at",
            ((path, root, size, mtime, now) for path, size, mtime in members))
        return gone

    def mark_embedded(self, paths: Iterable[str]) -> None:
        """Every chunk has its vector: ``indexed``, or ``failed`` for a context entry of an unreadable file.

        A failed file keeps no content hash, so a retry extracts it again instead of skipping it.
        """
        self._many(
            f"UPDATE files SET status = CASE WHEN error IS NULL THEN '{INDEXED}' ELSE '{FAILED}' END, "
            "content_hash = CASE WHEN error IS NULL THEN content_hash END, priority = 0, updated_at = ?, "
            "attempts = CASE WHEN error IS NULL THEN 0 ELSE attempts END "
            f"WHERE path = ? AND status = '{KEYWORD}'",
            ((time.time(), p) for p in paths),
        )

    def unmark_embedded(self, paths: Iterable[str]) -> None:
        """Their text is stored whole but some vectors are missing: back to the semantic phase's queue."""
        self._many(f"UPDATE files SET status = '{KEYWORD}' WHERE path = ? AND status = '{INDEXED}'", ((p,) for p in paths))

    def forget_hashes(self, paths: Iterable[str]) -> None:
        """Their vectors are about to be swapped: a crash midway must not leave a hash vouching for them."""
        self._many("UPDATE files SET content_hash = NULL WHERE path = ?", ((p,) for p in paths))

    def mark_failed(self, path: str, error: str, *, max_attempts: int) -> int:
        """Count one failure; the row turns ``failed`` once it has failed ``max_attempts`` times. Returns the count."""
        with self._lock:
            self._run("UPDATE files SET attempts = attempts + 1, error = ?, status = CASE WHEN attempts + 1 >= ? "
                      f"THEN '{FAILED}' ELSE status END, updated_at = ? WHERE path = ?", (error, max_attempts, time.time(), path))
            rows = self._run("SELECT attempts FROM files WHERE path = ?", (path,))
        return rows[0][0] if rows else 0

    def move_root(self, old: str, new: str) -> None:
        """A wider root absorbed ``old``: its rows now belong to ``new``."""
        self._run("UPDATE files SET root = ? WHERE root = ?", (new, old))

    def requeue(self, path: str) -> None:
        """Index this row again from scratch (no stored hash to skip on)."""
        self._run(f"UPDATE files SET {BACK_TO_PENDING}, content_hash = NULL WHERE path = ?",
                  (path,))

    def requeue_for_repair(self, path: str, reason: str, *, max_attempts: int) -> None:
        """Its stored text is not what the catalog says: store it again, counting an attempt, so that a file
        whose text never comes out the same fails (with ``reason``) instead of going round for ever."""
        self._run("UPDATE files SET content_hash = NULL, attempts = attempts + 1, status = CASE WHEN attempts + 1 >= ? "
                  f"THEN '{FAILED}' ELSE '{PENDING}' END, error = CASE WHEN attempts + 1 >= ? THEN ? ELSE error END, "
                  "updated_at = ? WHERE path = ?", (max_attempts, max_attempts, reason, time.time(), path))

    def set_members(self, path: str, members: int) -> None:
        self._run("UPDATE files SET members = ? WHERE path = ?", (members, path))

    def retry(self, prefix: str | None = None) -> int:
        """Requeue failed rows (all, or those at or under ``prefix``); returns how many."""
        rows = [r for r in self.failed() if prefix is None or is_under(r.path, prefix)]
        self._many(f"UPDATE files SET {BACK_TO_PENDING} WHERE path = ?", ((r.path,) for r in rows))
        return len(rows)

    def delete(self, paths: Iterable[str]) -> None:
        paths = list(paths)
        self._many("DELETE FROM files WHERE path = ?", ((p,) for p in paths))
        self._many("DELETE FROM senses WHERE path = ? AND pinned = 0", ((p,) for p in paths))

    def requeue_all(self) -> None:
        """After a model change: every row pending, no stored hash (its vectors are gone)."""
        self._run(f"UPDATE files SET {BACK_TO_PENDING}, content_hash = NULL, chunks = 0")

    def phase_counts(self) -> tuple[int, int, int]:
        """(files, past the keyword phase, past the semantic phase): the two progress figures."""
        total, keyword, semantic = self._run(
            f"SELECT COUNT(*), COALESCE(SUM(status != '{PENDING}'), 0), COALESCE(SUM(status IN ('{INDEXED}', '{FAILED}')), 0) "
            "FROM files")[0]
        return total, keyword, semantic

    def total_chunks(self) -> int:
        """Chunks stored for files past the keyword phase (a failed file's context entry aside)."""
        return self._run(f"SELECT COALESCE(SUM(chunks), 0) FROM files WHERE status IN ('{KEYWORD}', '{INDEXED}')")[0][0]

    def chunks_to_embed(self) -> int:
        return self._run(f"SELECT COALESCE(SUM(chunks), 0) FROM files WHERE status = '{KEYWORD}'")[0][0]

    def counts(self) -> dict[str, int]:
        counts = {status: 0 for status in (*STATUSES, "block member")}
        for status, n in self._run("SELECT status, COUNT(*) FROM files GROUP BY status"):
            counts[status] = n
        counts["block member"] = self._run("SELECT COALESCE(SUM(members), 0) FROM files WHERE kind = 'block'")[0][0]
        return counts

    # senses -----------------------------------------------------------------------
    def sense(self, path: str) -> SenseRow | None:
        rows = self._run("SELECT sense, source, pinned FROM senses WHERE path = ?", (path,))
        return SenseRow(rows[0][0], rows[0][1], bool(rows[0][2])) if rows else None

    def paths_with_hashes(self, hashes: Iterable[str]) -> dict[str, list[str]]:
        """content hash -> the paths of the files that hold that content (copies of one file)."""
        found: dict[str, list[str]] = {}
        hashes = list(hashes)
        for start in range(0, len(hashes), 500):
            part = hashes[start:start + 500]
            for path, content_hash in self._run(f"SELECT path, content_hash FROM files WHERE content_hash IN "
                                                f"({', '.join('?' * len(part))})", part):
                found.setdefault(content_hash, []).append(path)
        return found

    def senses(self, paths: Iterable[str]) -> dict[str, SenseRow]:
        found: dict[str, SenseRow] = {}
        paths = list(paths)
        for start in range(0, len(paths), 500):
            part = paths[start:start + 500]
            found.update((r[0], SenseRow(r[1], r[2], bool(r[3]))) for r in self._run(
                f"SELECT path, sense, source, pinned FROM senses WHERE path IN ({', '.join('?' * len(part))})", part))
        return found

    def save_senses(self, items: Iterable[tuple[str, str, str]]) -> None:
        """(path, sense, source); a pinned sense is never overwritten."""
        self._many("INSERT INTO senses(path, sense, source, pinned) VALUES (?, ?, ?, 0) "
                   "ON CONFLICT(path) DO UPDATE SET sense = excluded.sense, source = excluded.source "
                   "WHERE senses.pinned = 0", items)

    def pin_sense(self, path: str, sense: str) -> None:
        self._run("INSERT INTO senses(path, sense, source, pinned) VALUES (?, ?, 'pinned', 1) "
                  "ON CONFLICT(path) DO UPDATE SET sense = excluded.sense, source = 'pinned', pinned = 1", (path, sense))

    def iter_rows(self) -> Iterator[FileRow]:
        for row in self._run(f"SELECT {_COLUMNS} FROM files ORDER BY path"):
            yield FileRow(*row)


_COLUMNS = ("path, root, kind, size, mtime, content_hash, status, doc_type, chunks, members, attempts, error, "
            "ocr_wanted, notes")
# Rows under a folder, as a range on the primary key; ``is_under`` then settles separators and case.
_UNDER = "(path = ? OR (path >= ? AND path < ?))"


def _under(folder: str) -> tuple[str, str, str]:
    """Bounds for ``_UNDER``: the folder itself, and every path that starts with it plus a separator.

    Where case does not count (Windows paths, a file system that ignores case) the range is the whole
    table, and is_under decides.
    """
    if folds_case(folder):
        return folder, "", "\U0010ffff"
    prefix = folder_prefix(folder)
    return folder.rstrip("/") or "/", prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)
