"""Indexing inside a long-running process (the web app): index, then watch, with live progress.

One thread runs ``Engine.index`` whenever something may have changed: at start, when the
watcher sees the disk settle, and when the user asks (retry, re-index, a new root). Actions
that must hold the writer lock themselves (a model change, removing a root, ignoring a file)
run inside ``paused()``, which stops the current round at its next file and resumes after.
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

from ..engine import Engine
from ..errors import SenseTreeError, WriterBusy
from ..handlers.indexing import IndexingPaused, Progress, watch_roots
from ..system import leave_running

log = logging.getLogger(__name__)

BUSY_RETRY_SECONDS = 5.0


class BackgroundIndexer:
    def __init__(self, engine: Engine, watch_disk: bool = True):
        self.engine = engine
        self.watch_disk = watch_disk
        self.progress = Progress()
        self._worked = Progress()  # the latest round that did some work: its throughput stays on show
        self.running = False
        self.problem = ""  # why indexing is not happening (another writer, no model...), shown in the queue
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._round_stop = threading.Event()
        self._gate = threading.Lock()  # held by a round, or by a paused() action
        self._threads: list[threading.Thread] = []
        self._watch_stop = threading.Event()
        self._watched: list[str] = []

    def start(self) -> None:
        self._wake.set()
        loop = threading.Thread(target=self._loop, name="indexer", daemon=True)
        loop.start()
        self._threads.append(loop)

    def stop(self, timeout: float = 30) -> bool:
        """Stop indexing and watching; False if a thread is still at work after ``timeout`` seconds
        (a scan of a large tree does not look at the stop flag): it is noted as left running."""
        self._stop.set()
        self._round_stop.set()
        self._watch_stop.set()
        self._wake.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        busy = [thread for thread in self._threads if thread.is_alive()]
        for thread in busy:
            leave_running(thread)
        return not busy

    def kick(self) -> None:
        """Run a round soon (something was requeued, or the disk changed)."""
        self._wake.set()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Stop the current round, run the caller's action with the writer lock free, then index again."""
        self._round_stop.set()
        with self._gate:
            self._round_stop.clear()
            yield
        self.kick()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            if self._stop.is_set():
                return
            self._wake.clear()
            self._follow_roots()
            with self._gate:
                if self._round_stop.is_set():
                    continue
                self._round()

    def _round(self) -> None:
        self.running = True
        try:
            self.engine.index(
                on_update=self._update, stop=self._round_stop, max_endpoint_wait=float("inf"), interrupt=self._wake
            )
            self.problem = ""
        except WriterBusy as exc:
            self.problem = str(exc)
            threading.Timer(BUSY_RETRY_SECONDS, self.kick).start()
        except SenseTreeError as exc:
            self.problem = str(exc)
        except IndexingPaused as exc:  # stopped while waiting for a down endpoint: files stay pending
            self.problem = str(exc)
        except Exception as exc:  # never let the web app lose its indexer silently
            log.exception("indexing round failed")
            self.problem = f"indexing stopped on an unexpected error: {type(exc).__name__}: {exc}"
        finally:
            self.running = False
            self.progress.current = ""

    def _update(self, progress: Progress) -> None:
        self.progress = progress
        if progress.files_done or progress.embedding.count:
            self._worked = progress

    def _follow_roots(self) -> None:
        """(Re)start the disk watcher when the roots changed."""
        roots = self.engine.roots()
        if not self.watch_disk or roots == self._watched:
            return
        self._watch_stop.set()
        self._watch_stop = threading.Event()
        self._watched = roots
        if roots:
            watcher = threading.Thread(target=self._watch, args=(roots, self._watch_stop), name="watcher", daemon=True)
            watcher.start()
            self._threads.append(watcher)

    def _watch(self, roots: list[str], stop: threading.Event) -> None:
        try:
            watch_roots(self.engine, self.kick, stop, roots=roots)
        except OSError as exc:  # e.g. inotify limits: indexing still works on request
            self.problem = f"cannot watch the roots for changes ({exc}); changes are picked up on request"

    def snapshot(self) -> dict[str, Any]:
        """The live figures of the queue view and the status bar: keyword-ready N / M, semantic N / M, ETA."""
        figures = self.progress.as_dict()
        worked = self._worked.as_dict()
        figures.update(
            running=self.running,
            paused=self.progress.paused or self.problem,
            stages=worked["stages"],
            files_done=worked["files_done"],
            failed=worked["failed"],
        )
        return figures
