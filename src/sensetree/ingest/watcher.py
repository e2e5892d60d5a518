"""Keep the index true to the disk: watch the roots and re-index after changes settle.

File-system events only say *that* something changed under a root; the catalog diff of a
re-scan (stat only, a fraction of a second for ten thousand files) says *what*, which
covers creations, edits, renames, deletions and ignore-rule changes with one mechanism.

Each system's native backend (inotify, FSEvents, ReadDirectoryChangesW; watchdog picks it) sees
local changes as they happen. A network drive's are made on another machine and never reach it,
so a root on one is polled instead (``indexing.watch_polling``: auto, on or off).

The roots themselves are looked at every ROOT_CHECK_SECONDS: a root that does not exist (yet) is
said once and watched as soon as it appears; one deleted and made anew (a new folder under the
same name, which the old watch cannot see) is watched again; either is a change, and gets a round.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Callable

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch
from watchdog.observers.polling import PollingObserver

from .. import fs_rules, paths

log = logging.getLogger(__name__)

DEBOUNCE_SECONDS = 1.0
POLL_SECONDS = 5.0  # how often a polled root is listed again
POLLING_CHOICES = ("auto", "on", "off")
ROOT_CHECK_SECONDS = 1.0


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
        self.note()

    def note(self) -> None:
        """Something changed: a round once it has been quiet for the debounce time."""
        self.last_event = time.monotonic()
        self.pending.set()
        if self._also is not None:
            self._also.set()


def polled(root: str, polling: str = "auto") -> bool:
    """Whether ``root`` is watched by listing it again and again rather than by the system's events."""
    if polling not in POLLING_CHOICES:
        raise ValueError(f"watch polling is one of {', '.join(POLLING_CHOICES)}, not {polling!r}")
    return polling == "on" or (polling == "auto" and fs_rules.is_network(root))


class _RootWatches:
    """One watch per root that exists, kept in step with the folder that is there now."""

    def __init__(self, observer_for: Callable[[str], BaseObserver], handler: _Changes, roots: list[str]):
        self._observer_for, self._handler, self._roots = observer_for, handler, roots
        self._watches: dict[str, tuple[tuple[int, int], BaseObserver, ObservedWatch]] = {}
        self._missing: set[str] = set()

    def refresh(self) -> bool:
        """Watch the roots as they are now; True when one appeared, went or was made anew."""
        moved = False
        for root in self._roots:
            identity = _identity(root)
            known = self._watches.get(root)
            if known is not None and known[0] == identity:
                continue
            if known is not None:
                moved = True
                del self._watches[root]
                try:
                    known[1].unschedule(known[2])
                except (KeyError, OSError):
                    pass  # its emitter already stopped with the folder it watched
            if identity is None:
                if root not in self._missing:
                    log.warning(
                        "%s does not exist or cannot be read: watching the other roots; it is picked up "
                        "when it is back",
                        root,
                    )
                    self._missing.add(root)
                continue
            try:
                observer = self._observer_for(root)
                self._watches[root] = (identity, observer, observer.schedule(self._handler, root, recursive=True))
            except OSError as exc:
                log.warning("cannot watch %s (%s): it is looked at again in a moment", root, exc.strerror or exc)
                continue
            if root in self._missing:
                self._missing.discard(root)
                moved = True
        return moved


def _identity(root: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(root)
    except (OSError, ValueError):
        return None
    return (stat.st_dev, stat.st_ino) if os.path.isdir(root) else None


def watch(
    roots: list[str],
    data_dir: str,
    on_change: Callable[[], None],
    stop: threading.Event,
    debounce: float = DEBOUNCE_SECONDS,
    first_round: bool = False,
    changed: threading.Event | None = None,
    polling: str = "auto",
    poll_seconds: float = POLL_SECONDS,
) -> None:
    """Call ``on_change`` once changes under ``roots`` have been quiet for ``debounce`` seconds, until ``stop``.

    ``first_round`` calls it once right away, with the observer already running: what changes during
    that call is seen and gets a round of its own. ``changed`` is set at every change as it happens,
    so that a long round can end early and let the next one scan. ``polling`` picks the roots that are
    polled (see ``polled``), every ``poll_seconds``.
    """
    handler = _Changes(data_dir, changed)
    native: BaseObserver = Observer()
    polling_observer = PollingObserver(timeout=poll_seconds)
    watches = _RootWatches(lambda root: polling_observer if polled(root, polling) else native, handler, roots)
    watches.refresh()
    observers = (native, polling_observer)
    for observer in observers:
        observer.start()
    if first_round:
        handler.pending.set()  # last_event is 0: no debounce
    checked = time.monotonic()
    try:
        while not stop.is_set():
            if time.monotonic() - checked >= ROOT_CHECK_SECONDS:
                checked = time.monotonic()
                if watches.refresh():
                    handler.note()
            if handler.pending.wait(0.2) and time.monotonic() - handler.last_event >= debounce:
                handler.pending.clear()
                on_change()
    finally:
        for observer in observers:
            observer.stop()
        for observer in observers:
            observer.join(timeout=5)
