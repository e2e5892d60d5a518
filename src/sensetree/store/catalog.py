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
from pathlib import Path
from typing import Iterable

from .catalog_files import Files
from .catalog_roots import Roots
from .catalog_rows import DiskState, FileRow, SenseRow, StoredText
from .catalog_senses import Senses
from .catalog_sql import Sql
from .catalog_states import States

# The row types callers meet, importable from here with the catalog itself.
__all__ = ["Catalog", "DiskState", "FileRow", "SenseRow", "StoredText"]

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
    """The SQLite catalog: its connection and schema here, its jobs in parts that share the connection:
    ``roots`` (and the user's folder choices), ``files`` (reads, the queues), ``states`` (every status
    change), ``senses``."""

    def __init__(self, path: Path, read_only: bool = False):
        """``read_only``: a catalog on a data dir this process cannot write (a read-only mount), opened so that
        SQLite writes nothing, not even its shared-memory file; the index is then as the last writer left it."""
        if read_only:
            self._sql = Sql(_open_read_only(path))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(str(path), timeout=30, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA busy_timeout=30000")
            db.executescript(SCHEMA)
            self._sql = Sql(db)
            self._migrate()
        self.roots = Roots(self._sql)
        self.files = Files(self._sql)
        self.states = States(self._sql, self.files)
        self.senses = Senses(self._sql)

    def _migrate(self) -> None:
        """Catalogs written by earlier versions lack the newer columns."""
        columns = self.columns("files")
        for name, definition in (
            ("priority", "REAL NOT NULL DEFAULT 0"),
            ("ocr_wanted", "INTEGER NOT NULL DEFAULT 0"),
            ("notes", "TEXT"),
            ("ctime", "REAL"),
            ("inode", "INTEGER"),
        ):
            if name not in columns:
                self._sql.run(f"ALTER TABLE files ADD COLUMN {name} {definition}")
        root_columns = self.columns("roots")
        for name in ("offline_since", "device"):
            if name not in root_columns:
                self._sql.run(f"ALTER TABLE roots ADD COLUMN {name} {'REAL' if name == 'offline_since' else 'INTEGER'}")
        self._sql.run("CREATE INDEX IF NOT EXISTS files_queue ON files(status, priority, mtime)")

    def close(self) -> None:
        self._sql.close()

    def damage(self) -> str | None:
        """None when SQLite finds the file sound (``PRAGMA quick_check``), else its first complaint."""
        try:
            result = self._sql.run("PRAGMA quick_check(1)")[0][0]
        except sqlite3.DatabaseError as exc:
            return str(exc)
        return None if result == "ok" else result

    def columns(self, table: str) -> list[str]:
        return [r[1] for r in self._sql.run(f"PRAGMA table_info({table})")]

    def insert_rows(self, table: str, columns: list[str], rows: Iterable[tuple]) -> None:
        """Rows salvaged from a damaged catalog (store/integrity.py); existing rows win."""
        self._sql.many(
            f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", rows
        )

    def wal_frames(self) -> int:
        """Frames of the write-ahead log SQLite accepted when it opened it (checksums valid)."""
        return self._sql.run("PRAGMA wal_checkpoint(PASSIVE)")[0][1]

    def meta(self, key: str) -> str | None:
        rows = self._sql.run("SELECT value FROM meta WHERE key = ?", (key,))
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
        self._sql.run(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )
