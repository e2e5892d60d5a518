"""Things to tell the user once: a repair made, a model change, a settings file that could not be read.

One channel for every interface: the engine posts notices here; a response hands over the ones
not yet told (``take``), and ``status`` shows the whole session's list (``all``).
"""

from __future__ import annotations

import threading
import time
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
            fresh, self._told = self._seen[self._told :], len(self._seen)
        return fresh

    def all(self) -> list[str]:
        with self._lock:
            return list(self._seen)


def meaning_sentence(files: int, embedded: int, eta_seconds: float | None, now: float | None = None) -> str:
    """How much of the index has meaning, and when the rest will, in words a person reads: "meaning for
    1,310 of 5,183 files; the rest by about 14:20" (``status``, the web app's footer, ``search --json``)."""
    if files <= 0:
        return "no files indexed yet"
    if embedded >= files:
        return f"meaning for every file ({files:,})"
    said = f"meaning for {embedded:,} of {files:,} files"
    if eta_seconds is None:
        return f"{said}; the rest once the semantic phase runs (searches embed what they find meanwhile)"
    done = time.localtime((time.time() if now is None else now) + eta_seconds)
    when = time.strftime("%H:%M" if eta_seconds < 20 * 3600 else "%a %H:%M", done)
    return f"{said}; the rest by about {when}"


# How each surface names the control that searches the words as typed (no filter read from them, no typo
# corrected). A notice says it as an answer's callers give it (HTTP's query parameter, MCP's tool argument);
# the CLI and the web app put their own control in its place (``for_surface``; the web app its switch's label).
AS_TYPED = "literal=true"
AS_TYPED_CONTROLS = {"http": AS_TYPED, "mcp": AS_TYPED, "cli": "--literal"}


def for_surface(notice: str, surface: str) -> str:
    """A notice as ``surface`` tells it: naming the control the person there has, never another surface's."""
    return notice.replace(AS_TYPED, AS_TYPED_CONTROLS[surface])
