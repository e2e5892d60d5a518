"""The file catalog in SQLite (WAL): roots, one row per file or block folder, senses, folder choices.

The catalog is the queue too: a row is ``pending`` until its vectors are stored, then
``indexed``; ``failed`` rows keep their last error. Block folders are single rows of kind
``block``; their members have no rows, only a count, so a huge ``node_modules`` costs one row.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

SCHEMA = """
CREATE TABLE IF NOT EXISTS roots (path TEXT PRIMARY KEY, added_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,
    root TEXT NOT NULL,
    kind TEXT NOT NULL DEFAULT 'file',      -- file | block
    size INTEGER NOT NULL DEFAULT 0,
    mtime REAL NOT NULL DEFAULT 0,
    content_hash TEXT,                      -- hash of the content whose vectors are stored
    status TEXT NOT NULL DEFAULT 'pending', -- pending | indexed | failed
    doc_type TEXT,
    chunks INTEGER NOT NULL DEFAULT 0,
    members INTEGER NOT NULL DEFAULT 0,     -- files inside a block folder
    attempts INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    updated_at REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS files_status ON files(status);
CREATE INDEX IF NOT EXISTS files_root ON files(root);
CREATE TABLE IF NOT EXISTS senses (
    path TEXT PRIMARY KEY, sense TEXT NOT NULL, source TEXT NOT NULL, pinned INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS folders (path TEXT PRIMARY KEY, mode TEXT NOT NULL);  -- manual block | recursive
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
"""

STATUSES = ("pending", "indexed", "failed")


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


class Catalog:
    """Thread-safe access to the SQLite catalog; every write is one short transaction."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(str(path), timeout=30, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=30000")
        self._db.executescript(SCHEMA)

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

    def files_under(self, root: str) -> dict[str, tuple[str, int, float, str]]:
        """path -> (kind, size, mtime, status) for a root: what a re-scan compares the disk against."""
        return {r[0]: r[1:] for r in self._run("SELECT path, kind, size, mtime, status FROM files WHERE root = ?", (root,))}

    def upsert_pending(self, rows: Iterable[tuple[str, str, str, int, float, int]]) -> None:
        """(path, root, kind, size, mtime, members): queue new or changed entries, keeping their stored hash."""
        now = time.time()
        self._many(
            "INSERT INTO files(path, root, kind, size, mtime, members, status, attempts, error, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, NULL, ?) ON CONFLICT(path) DO UPDATE SET "
            "root = excluded.root, kind = excluded.kind, size = excluded.size, mtime = excluded.mtime, "
            "members = excluded.members, status = 'pending', attempts = 0, error = NULL, updated_at = excluded.updated_at",
            ((*row, now) for row in rows),
        )

    def files_under_prefix(self, path: str) -> list[str]:
        """The rows at ``path`` or below it (a file, or a folder's files and blocks)."""
        from ..paths import is_under

        return [r[0] for r in self._run("SELECT path FROM files") if is_under(r[0], path)]

    def blocks(self) -> list[str]:
        return [r[0] for r in self._run("SELECT path FROM files WHERE kind = 'block'")]

    def pending(self, limit: int | None = None) -> list[FileRow]:
        sql = f"SELECT {_COLUMNS} FROM files WHERE status = 'pending' ORDER BY kind DESC, path"
        return [FileRow(*r) for r in self._run(sql + (f" LIMIT {int(limit)}" if limit else ""))]

    def failed(self) -> list[FileRow]:
        return [FileRow(*r) for r in self._run(f"SELECT {_COLUMNS} FROM files WHERE status = 'failed' ORDER BY path")]

    def mark_indexed(self, items: Iterable[tuple[str, str, float, int, str, int]]) -> None:
        """(path, content_hash, mtime, size, doc_type, chunks): only called once the vectors are stored."""
        now = time.time()
        self._many(
            "UPDATE files SET status = 'indexed', content_hash = ?, mtime = ?, size = ?, doc_type = ?, chunks = ?, "
            "attempts = 0, error = NULL, updated_at = ? WHERE path = ?",
            ((h, m, s, d, c, now, p) for p, h, m, s, d, c in items),
        )

    def forget_hashes(self, paths: Iterable[str]) -> None:
        """Their vectors are about to be swapped: a crash midway must not leave a hash vouching for them."""
        self._many("UPDATE files SET content_hash = NULL WHERE path = ?", ((p,) for p in paths))

    def mark_failed(self, path: str, error: str, *, max_attempts: int) -> int:
        """Count one failure; the row turns ``failed`` once it has failed ``max_attempts`` times. Returns the count."""
        with self._lock:
            self._run("UPDATE files SET attempts = attempts + 1, error = ?, status = CASE WHEN attempts + 1 >= ? "
                      "THEN 'failed' ELSE status END, updated_at = ? WHERE path = ?", (error, max_attempts, time.time(), path))
            rows = self._run("SELECT attempts FROM files WHERE path = ?", (path,))
        return rows[0][0] if rows else 0

    def set_failed_context(self, path: str, doc_type: str, chunks: int) -> None:
        """A failed file that still got its context-only entry (findable by name).

        No content hash is kept, so a retry extracts the file again instead of skipping it.
        """
        self._run("UPDATE files SET doc_type = ?, chunks = ?, content_hash = NULL WHERE path = ?",
                  (doc_type, chunks, path))

    def move_root(self, old: str, new: str) -> None:
        """A wider root absorbed ``old``: its rows now belong to ``new``."""
        self._run("UPDATE files SET root = ? WHERE root = ?", (new, old))

    def requeue(self, path: str) -> None:
        """Index this row again from scratch (no stored hash to skip on)."""
        self._run("UPDATE files SET status = 'pending', content_hash = NULL, attempts = 0, error = NULL WHERE path = ?",
                  (path,))

    def set_members(self, path: str, members: int) -> None:
        self._run("UPDATE files SET members = ? WHERE path = ?", (members, path))

    def retry(self, prefix: str | None = None) -> int:
        """Requeue failed rows (all, or those under ``prefix``); returns how many."""
        rows = [r for r in self.failed() if prefix is None or r.path == prefix.rstrip("/\\") or r.path.startswith(prefix)]
        self._many("UPDATE files SET status = 'pending', attempts = 0, error = NULL WHERE path = ?", ((r.path,) for r in rows))
        return len(rows)

    def delete(self, paths: Iterable[str]) -> None:
        paths = list(paths)
        self._many("DELETE FROM files WHERE path = ?", ((p,) for p in paths))
        self._many("DELETE FROM senses WHERE path = ? AND pinned = 0", ((p,) for p in paths))

    def requeue_all(self) -> None:
        """After a model change: every row pending, no stored hash (its vectors are gone)."""
        self._run("UPDATE files SET status = 'pending', content_hash = NULL, chunks = 0, attempts = 0, error = NULL")

    def counts(self) -> dict[str, int]:
        counts = {status: 0 for status in (*STATUSES, "block member")}
        for status, n in self._run("SELECT status, COUNT(*) FROM files GROUP BY status"):
            counts[status] = n
        counts["block member"] = self._run("SELECT COALESCE(SUM(members), 0) FROM files WHERE kind = 'block'")[0][0]
        return counts

    def total_chunks(self) -> int:
        return self._run("SELECT COALESCE(SUM(chunks), 0) FROM files WHERE status = 'indexed'")[0][0]

    # senses -----------------------------------------------------------------------
    def sense(self, path: str) -> tuple[str, str, bool] | None:
        rows = self._run("SELECT sense, source, pinned FROM senses WHERE path = ?", (path,))
        return (rows[0][0], rows[0][1], bool(rows[0][2])) if rows else None

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


_COLUMNS = "path, root, kind, size, mtime, content_hash, status, doc_type, chunks, members, attempts, error"
