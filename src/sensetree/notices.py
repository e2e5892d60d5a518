"""Things to tell the user once: a repair made, a model change, a settings file that could not be read.

One channel for every interface: the engine posts notices here; a response hands over the ones
not yet told (``take``), and ``status`` shows the whole session's list (``all``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable


class Notices:
    def __init__(self) -> None:
        self._seen: list[str] = []
        self._told = 0
        self._lock = threading.Lock()

    def add(self, text: str) -> None:
        with self._lock:
            self._seen.append(text)

    def add_all(self, texts: Iterable[str]) -> None:
        for text in texts:
            self.add(text)

    def take(self) -> list[str]:
        """The notices posted since the last take: each is told once."""
        with self._lock:
            fresh, self._told = self._seen[self._told:], len(self._seen)
        return fresh

    def all(self) -> list[str]:
        with self._lock:
            return list(self._seen)
