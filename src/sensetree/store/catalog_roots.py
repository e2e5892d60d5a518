"""The roots, whether each is online, and the user's choices about the folders under them."""

from __future__ import annotations

import time

from .catalog_sql import Sql


class Roots:
    def __init__(self, sql: Sql):
        self._sql = sql

    def all(self) -> list[str]:
        return [r[0] for r in self._sql.run("SELECT path FROM roots ORDER BY path")]

    def add(self, path: str) -> None:
        self._sql.run("INSERT OR IGNORE INTO roots(path, added_at) VALUES (?, ?)", (path, time.time()))

    def remove(self, path: str) -> None:
        self._sql.run("DELETE FROM roots WHERE path = ?", (path,))

    def move(self, old: str, new: str) -> None:
        """A wider root absorbed ``old``: its rows now belong to ``new``."""
        self._sql.run("UPDATE files SET root = ? WHERE root = ?", (new, old))

    def offline(self) -> dict[str, float]:
        """Roots that were missing or unreadable at the last scan, and since when."""
        return dict(
            self._sql.run("SELECT path, offline_since FROM roots WHERE offline_since IS NOT NULL ORDER BY path")
        )

    def device(self, path: str) -> int | None:
        rows = self._sql.run("SELECT device FROM roots WHERE path = ?", (path,))
        return rows[0][0] if rows else None

    def set_online(self, path: str, device: int | None) -> None:
        self._sql.run("UPDATE roots SET offline_since = NULL, device = ? WHERE path = ?", (device, path))

    def set_offline(self, path: str) -> None:
        """Keep the first time it was found missing: how long it has been away."""
        self._sql.run("UPDATE roots SET offline_since = COALESCE(offline_since, ?) WHERE path = ?", (time.time(), path))

    def folder_modes(self) -> dict[str, str]:
        return dict(self._sql.run("SELECT path, mode FROM folders"))

    def set_folder_mode(self, path: str, mode: str | None) -> None:
        """``block`` or ``recursive`` for a folder, ``ignore`` for a file or folder, None to forget the choice."""
        if mode is None:
            self._sql.run("DELETE FROM folders WHERE path = ?", (path,))
        else:
            self._sql.run(
                "INSERT INTO folders(path, mode) VALUES (?, ?) ON CONFLICT(path) DO UPDATE SET mode = excluded.mode",
                (path, mode),
            )
