"""Keep the index true to the disk: watch the roots and re-index after changes settle.

File-system events only say *that* something changed under a root; the catalog diff of a
re-scan (stat only, a fraction of a second for ten thousand files) says *what*, which
covers creations, edits, renames, deletions and ignore-rule changes with one mechanism.

Each system's native backend (inotify, FSEvents, ReadDirectoryChangesW; watchdog picks it) sees
local changes as they happen. A network drive's are made on another machine and never reach it,
so a root on one is polled instead (``indexing.watch_polling``: auto, on or off).
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from .. import fs_rules, paths

DEBOUNCE_SECONDS = 1.0
POLL_SECONDS = 5.0  # how often a polled root is listed again
POLLING_CHOICES = ("auto", "on", "off")


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


def polled(root: str, polling: str = "auto") -> bool:
    """Whether ``root`` is watched by listing it again and again rather than by the system's events."""
    if polling not in POLLING_CHOICES:
        raise ValueError(f"watch polling is one of {', '.join(POLLING_CHOICES)}, not {polling!r}")
    return polling == "on" or (polling == "auto" and fs_rules.is_network(root))


def watch(roots: list[str], data_dir: str, on_change: Callable[[], None], stop: threading.Event,
          debounce: float = DEBOUNCE_SECONDS, first_round: bool = False, changed: threading.Event | None = None,
          polling: str = "auto", poll_seconds: float = POLL_SECONDS) -> None:
    """Call ``on_change`` once changes under ``roots`` have been quiet for ``debounce`` seconds, until ``stop``.

    ``first_round`` calls it once right away, with the observer already running: what changes during
    that call is seen and gets a round of its own. ``changed`` is set at every change as it happens,
    so that a long round can end early and let the next one scan. ``polling`` picks the roots that are
    polled (see ``polled``), every ``poll_seconds``.
    """
    handler = _Changes(data_dir, changed)
    native: BaseObserver = Observer()
    polling_observer = PollingObserver(timeout=poll_seconds)
    for root in roots:
        (polling_observer if polled(root, polling) else native).schedule(handler, root, recursive=True)
    observers = [o for o in (native, polling_observer) if o.emitters]
    for observer in observers:
        observer.start()
    if first_round:
        handler.pending.set()  # last_event is 0: no debounce
    try:
        while not stop.is_set():
            if handler.pending.wait(0.2) and time.monotonic() - handler.last_event >= debounce:
                handler.pending.clear()
                on_change()
    finally:
        for observer in observers:
            observer.stop()
        for observer in observers:
            observer.join(timeout=5)
