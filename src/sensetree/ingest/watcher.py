"""Keep the index true to the disk: watch the roots and re-index after changes settle.

File-system events only say *that* something changed under a root; the catalog diff of a
re-scan (stat only, a fraction of a second for ten thousand files) says *what*, which
covers creations, edits, renames, deletions and ignore-rule changes with one mechanism.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from .. import paths

DEBOUNCE_SECONDS = 1.0


class _Changes(FileSystemEventHandler):
    def __init__(self, ignore: str, also: threading.Event | None):
        self._ignore = ignore
        self._also = also
        self.last_event = 0.0
        self.pending = threading.Event()

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        if paths.is_under(str(event.src_path), self._ignore):
            return  # our own data dir
        self.last_event = time.monotonic()
        self.pending.set()
        if self._also is not None:
            self._also.set()


def watch(roots: list[str], data_dir: str, on_change: Callable[[], None], stop: threading.Event,
          debounce: float = DEBOUNCE_SECONDS, first_round: bool = False, changed: threading.Event | None = None) -> None:
    """Call ``on_change`` once changes under ``roots`` have been quiet for ``debounce`` seconds, until ``stop``.

    ``first_round`` calls it once right away, with the observer already running: what changes during
    that call is seen and gets a round of its own. ``changed`` is set at every change as it happens,
    so that a long round can end early and let the next one scan.
    """
    handler = _Changes(data_dir, changed)
    observer = Observer()
    for root in roots:
        observer.schedule(handler, root, recursive=True)
    observer.start()
    if first_round:
        handler.pending.set()  # last_event is 0: no debounce
    try:
        while not stop.is_set():
            if handler.pending.wait(0.2) and time.monotonic() - handler.last_event >= debounce:
                handler.pending.clear()
                on_change()
    finally:
        observer.stop()
        observer.join(timeout=5)
