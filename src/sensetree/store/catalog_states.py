"""Every change of a file's status, in one place (the transitions are listed on ``catalog_rows.Status``)."""

from __future__ import annotations

import time
from typing import Iterable, Sequence

from ..paths import folds_case, is_under
from .catalog_files import Files
from .catalog_rows import BACK_TO_PENDING, FAILED, INDEXED, KEYWORD, PENDING, StoredText
from .catalog_sql import UNDER, Sql, bounds

FOLDERS_PER_WRITE = 100  # three parameters each: within any SQLite's limit of 999


class States:
    def __init__(self, sql: Sql, files: Files):
        self._sql = sql
        self._files = files  # the reads a change starts from: an archive's members, the failed rows

    def upsert_pending(self, rows: Iterable[tuple[str, str, str, int, float, int, float | None, int | None]]) -> None:
        """(path, root, kind, size, mtime, members, ctime, inode): queue new or changed entries, keeping their
        stored hash."""
        now = time.time()
        self._sql.many(
            "INSERT INTO files(path, root, kind, size, mtime, members, ctime, inode, status, attempts, error, updated_at) "
            f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, '{PENDING}', 0, NULL, ?) ON CONFLICT(path) DO UPDATE SET "
            "root = excluded.root, kind = excluded.kind, size = excluded.size, mtime = excluded.mtime, "
            f"members = excluded.members, ctime = excluded.ctime, inode = excluded.inode, {BACK_TO_PENDING}, "
            "updated_at = excluded.updated_at",
            ((*row, now) for row in rows),
        )

    def set_identity(self, rows: Iterable[tuple[float | None, int | None, str]]) -> None:
        """(ctime, inode, path): what a row written before those columns existed is, without queueing it."""
        self._sql.many("UPDATE files SET ctime = ?, inode = ? WHERE path = ?", rows)

    def prioritize(self, *found: str) -> int:
        """Put files, or the files under folders, first in line for whichever phase they wait for: one write for
        all of ``found`` (a search's results), which waits for a writer holding the catalog once, not per file."""
        return self._update_under(found, "priority = ?", (time.time(),), f"status IN ('{PENDING}', '{KEYWORD}')")

    def _update_under(self, folders: Sequence[str], assignment: str, values: tuple, condition: str) -> int:
        """``UPDATE files SET <assignment>`` for the rows at or under any of ``folders`` that meet ``condition``."""
        exact = [f for f in folders if not folds_case(f)]  # the key range is exact where case counts
        folded = [f for f in folders if folds_case(f)]  # elsewhere the range is the whole table: is_under decides
        changed = 0
        for start in range(0, len(exact), FOLDERS_PER_WRITE):
            part = exact[start : start + FOLDERS_PER_WRITE]
            changed += self._sql.change(
                f"UPDATE files SET {assignment} WHERE {condition} AND ({' OR '.join([UNDER] * len(part))})",
                (*values, *(bound for folder in part for bound in bounds(folder))),
            )
        if folded:
            rows = [
                r[0]
                for r in self._sql.run(f"SELECT path FROM files WHERE {condition}")
                if any(is_under(r[0], folder) for folder in folded)
            ]
            self._sql.many(f"UPDATE files SET {assignment} WHERE path = ?", ((*values, p) for p in rows))
            changed += len(rows)
        return changed

    def mark_keyword(self, items: Iterable[StoredText]) -> None:
        """Only called once the text rows are stored: findable by keyword from now on."""
        now = time.time()
        self._sql.many(
            f"UPDATE files SET status = '{KEYWORD}', content_hash = ?, mtime = ?, size = ?, doc_type = ?, chunks = ?, "
            "attempts = CASE WHEN ? IS NULL THEN attempts ELSE attempts + 1 END, error = ?, ocr_wanted = ?, notes = ?, "
            "updated_at = ? WHERE path = ?",
            (
                (
                    i.content_hash,
                    i.mtime,
                    i.size,
                    i.doc_type,
                    i.chunks,
                    i.error,
                    i.error,
                    i.ocr_wanted,
                    i.notes,
                    now,
                    i.path,
                )
                for i in items
            ),
        )

    def replace_archive_members(self, archive: str, root: str, members: Iterable[tuple[str, int, float]]) -> list[str]:
        """The rows of an archive's members (path, size, mtime) after a new read of it, queued to be stored;
        returns the paths of members it no longer holds, whose rows are gone (their chunks are the caller's).

        A member keeps its count of attempts: reading its archive again is no fresh start for it."""
        members = list(members)
        kept = {path for path, _, _ in members}
        gone = [p for p in self._files.under(archive) if p != archive and p not in kept]
        self.delete(gone)
        now = time.time()
        self._sql.many(
            "INSERT INTO files(path, root, kind, size, mtime, members, status, attempts, error, updated_at) "
            f"VALUES (?, ?, 'member', ?, ?, 0, '{PENDING}', 0, NULL, ?) ON CONFLICT(path) DO UPDATE SET "
            f"root = excluded.root, kind = 'member', size = excluded.size, mtime = excluded.mtime, status = '{PENDING}', "
            "error = NULL, updated_at = excluded.updated_at",
            ((path, root, size, mtime, now) for path, size, mtime in members),
        )
        return gone

    def mark_embedded(self, paths: Iterable[str]) -> None:
        """Every chunk has its vector: ``indexed``, or ``failed`` for a context entry of an unreadable file.

        A failed file keeps no content hash, so a retry extracts it again instead of skipping it.
        """
        self._sql.many(
            f"UPDATE files SET status = CASE WHEN error IS NULL THEN '{INDEXED}' ELSE '{FAILED}' END, "
            "content_hash = CASE WHEN error IS NULL THEN content_hash END, priority = 0, updated_at = ?, "
            "attempts = CASE WHEN error IS NULL THEN 0 ELSE attempts END "
            f"WHERE path = ? AND status = '{KEYWORD}'",
            ((time.time(), p) for p in paths),
        )

    def unmark_embedded(self, paths: Iterable[str]) -> None:
        """Their text is stored whole but some vectors are missing: back to the semantic phase's queue."""
        self._sql.many(
            f"UPDATE files SET status = '{KEYWORD}' WHERE path = ? AND status = '{INDEXED}'", ((p,) for p in paths)
        )

    def forget_hashes(self, paths: Iterable[str]) -> None:
        """Their vectors are about to be swapped: a crash midway must not leave a hash vouching for them."""
        self._sql.many("UPDATE files SET content_hash = NULL WHERE path = ?", ((p,) for p in paths))

    def mark_failed(self, path: str, error: str, *, max_attempts: int) -> int:
        """Count one failure; the row turns ``failed`` once it has failed ``max_attempts`` times. Returns the count."""
        with self._sql.lock:
            self._sql.run(
                "UPDATE files SET attempts = attempts + 1, error = ?, status = CASE WHEN attempts + 1 >= ? "
                f"THEN '{FAILED}' ELSE status END, updated_at = ? WHERE path = ?",
                (error, max_attempts, time.time(), path),
            )
            rows = self._sql.run("SELECT attempts FROM files WHERE path = ?", (path,))
        return rows[0][0] if rows else 0

    def requeue(self, path: str) -> None:
        """Index this row again from scratch (no stored hash to skip on)."""
        self._sql.run(f"UPDATE files SET {BACK_TO_PENDING}, content_hash = NULL WHERE path = ?", (path,))

    def requeue_for_repair(self, path: str, reason: str, *, max_attempts: int) -> None:
        """Its stored text is not what the catalog says: store it again, counting an attempt, so that a file
        whose text never comes out the same fails (with ``reason``) instead of going round for ever."""
        self._sql.run(
            "UPDATE files SET content_hash = NULL, attempts = attempts + 1, status = CASE WHEN attempts + 1 >= ? "
            f"THEN '{FAILED}' ELSE '{PENDING}' END, error = CASE WHEN attempts + 1 >= ? THEN ? ELSE error END, "
            "updated_at = ? WHERE path = ?",
            (max_attempts, max_attempts, reason, time.time(), path),
        )

    def set_members(self, path: str, members: int) -> None:
        self._sql.run("UPDATE files SET members = ? WHERE path = ?", (members, path))

    def retry(self, prefix: str | None = None) -> int:
        """Requeue failed rows (all, or those at or under ``prefix``); returns how many."""
        rows = [r for r in self._files.failed() if prefix is None or is_under(r.path, prefix)]
        self._sql.many(f"UPDATE files SET {BACK_TO_PENDING} WHERE path = ?", ((r.path,) for r in rows))
        return len(rows)

    def delete(self, paths: Iterable[str]) -> None:
        paths = list(paths)
        self._sql.many("DELETE FROM files WHERE path = ?", ((p,) for p in paths))
        self._sql.many("DELETE FROM senses WHERE path = ? AND pinned = 0", ((p,) for p in paths))

    def requeue_all(self) -> None:
        """After a model change: every row pending, no stored hash (its vectors are gone)."""
        self._sql.run(f"UPDATE files SET {BACK_TO_PENDING}, content_hash = NULL, chunks = 0")
