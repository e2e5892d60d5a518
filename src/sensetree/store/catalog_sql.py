"""The catalog's one SQLite connection, shared by its parts: thread-safe, every write one short transaction."""

from __future__ import annotations

import sqlite3
import threading
from typing import Any, Iterable, Sequence

from ..paths import folder_prefix, folds_case


class Sql:
    def __init__(self, db: sqlite3.Connection):
        self._db = db
        self.lock = threading.RLock()  # re-entrant: a part may hold it across several statements

    def run(self, sql: str, params: Iterable = ()) -> list[tuple]:
        with self.lock:
            return self._db.execute(sql, tuple(params)).fetchall()

    def change(self, sql: str, params: Iterable = ()) -> int:
        """One write; returns how many rows it changed."""
        with self.lock:
            return self._db.execute(sql, tuple(params)).rowcount

    def many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """One write of many rows (each a sequence of the statement's parameters), in one transaction."""
        with self.lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(sql, rows)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def close(self) -> None:
        with self.lock:
            self._db.close()


# Rows under a folder, as a range on the primary key; ``is_under`` then settles separators and case.
UNDER = "(path = ? OR (path >= ? AND path < ?))"


def bounds(folder: str) -> tuple[str, str, str]:
    """Bounds for ``UNDER``: the folder itself, and every path that starts with it plus a separator.

    Where case does not count (Windows paths, a file system that ignores case) the range is the whole
    table, and is_under decides.
    """
    if folds_case(folder):
        return folder, "", "\U0010ffff"
    prefix = folder_prefix(folder)
    return folder.rstrip("/") or "/", prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)
