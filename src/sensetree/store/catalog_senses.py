"""Each file's sense (one line on what it is): written by the indexer, or pinned by the user."""

from __future__ import annotations

from typing import Iterable

from .catalog_rows import SenseRow
from .catalog_sql import Sql


class Senses:
    def __init__(self, sql: Sql):
        self._sql = sql

    def of(self, path: str) -> SenseRow | None:
        rows = self._sql.run("SELECT sense, source, pinned FROM senses WHERE path = ?", (path,))
        return SenseRow(rows[0][0], rows[0][1], bool(rows[0][2])) if rows else None

    def many(self, paths: Iterable[str]) -> dict[str, SenseRow]:
        found: dict[str, SenseRow] = {}
        paths = list(paths)
        for start in range(0, len(paths), 500):
            part = paths[start : start + 500]
            found.update(
                (r[0], SenseRow(r[1], r[2], bool(r[3])))
                for r in self._sql.run(
                    f"SELECT path, sense, source, pinned FROM senses WHERE path IN ({', '.join('?' * len(part))})", part
                )
            )
        return found

    def save(self, items: Iterable[tuple[str, str, str]]) -> None:
        """(path, sense, source); a pinned sense is never overwritten."""
        self._sql.many(
            "INSERT INTO senses(path, sense, source, pinned) VALUES (?, ?, ?, 0) "
            "ON CONFLICT(path) DO UPDATE SET sense = excluded.sense, source = excluded.source "
            "WHERE senses.pinned = 0",
            items,
        )

    def pin(self, path: str, sense: str) -> None:
        self._sql.run(
            "INSERT INTO senses(path, sense, source, pinned) VALUES (?, ?, 'pinned', 1) "
            "ON CONFLICT(path) DO UPDATE SET sense = excluded.sense, source = 'pinned', pinned = 1",
            (path, sense),
        )
