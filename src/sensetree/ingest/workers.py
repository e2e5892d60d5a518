"""Where indexing work runs so that it can always be stopped, bounded and kept off the main thread.

- The keyword phase prepares files (hash, extraction, chunking) in worker *processes*: the
  extractors are mostly Python and hold the GIL, so processes give every core to it; a file
  that takes too long is cut off by killing its worker; and what a reader allocated goes
  back to the system when its worker is replaced (every WORKER_TASKS files).
- Model calls (embeddings, senses) run on a daemon thread that the indexer waits for while
  watching its stop flag: a Ctrl+C or SIGTERM never waits for a slow model to finish. Such a
  thread may still be inside native code when the process ends: ``system.threads_left_running`` tells
  the command to exit without finalizing the interpreter around it (interfaces/exits.py).
- Worker processes start with SIGINT blocked: a Ctrl+C reaches the whole terminal's process
  group, and the parent stops its workers itself; a worker still importing would otherwise
  print a ``KeyboardInterrupt`` traceback. (SIGTERM is blocked too until a worker runs.)
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Callable, Iterator, Protocol, TypeVar

from pebble import ProcessPool, ThreadPool

from ..errors import Interrupted
from ..system import leave_running
from .pace import lower_priority

log = logging.getLogger(__name__)
T = TypeVar("T")

POLL_SECONDS = 0.05
WORKER_TASKS = 2000  # files per worker process before it is replaced: leaks of the readers stay bounded
# (a new worker spends about 3 s of CPU importing LanceDB and loading the language model)
STARTUP_SECONDS = 30.0  # a worker process that has not answered by then will not: read files in this process


@contextmanager
def ctrl_c_blocked() -> Iterator[None]:
    """SIGINT blocked in this thread meanwhile: the worker processes started here (and the pool's threads
    that replace them) inherit the block, so a Ctrl+C, which the terminal sends to every process of the
    group, never interrupts a worker in the middle of starting (its traceback would reach the terminal).
    The command handles it and stops the workers. SIGTERM stays as it is: the pool stops a worker with
    it, and a worker still starting must die of it at once, silently.

    Only where the OS has signal masks (not on Windows: see ``interfaces/launcher.py``).
    """
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    # multiprocessing starts its resource tracker with the first spawned process, and unblocks SIGINT
    # in the calling thread once it has: started first, it leaves the block below alone.
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _worker_started(low_priority: bool) -> None:
    """In each worker, once it runs: below normal priority unless the user turned that off (SIGINT stays
    blocked, and pebble ignores it too)."""
    if low_priority:
        lower_priority()


class Stopped(Interrupted):
    """The stop flag was set while waiting: the work in flight is abandoned, nothing half-done is kept."""


_stops: list[threading.Event] = []  # the stop flags of the phases submitting work now: a start heeds them too


@contextmanager
def stops_starting(stop: threading.Event) -> Iterator[None]:
    """Meanwhile ``stop`` also ends the wait for the first worker process: a Ctrl+C or SIGTERM sent to
    the process group while the workers start kills them, and the wait would otherwise run to
    STARTUP_SECONDS before the phase saw its flag."""
    _stops.append(stop)
    try:
        yield
    finally:
        _stops.remove(stop)


def worker_count() -> int:
    """One worker per core, at least one; the semantic phase needs the cores when the keyword phase is idle."""
    return max(1, min(os.cpu_count() or 1, 4))


class Pool(Protocol):
    """Where the keyword phase prepares files: ``WorkerPool`` (this machine's processes) or
    ``distributed.RayPool`` (a cluster's workers)."""

    @property
    def workers(self) -> int:
        """How many files may be in flight at once."""

    def submit(self, function: Callable[..., T], *args, timeout: float | None = None) -> Future: ...

    def stop(self) -> None:
        """Abandon the work in flight (a stop); the next ``submit`` starts afresh."""


class WorkerPool:
    """Worker processes started on first use (``spawn``: the parent's model threads are not forked).

    Where processes cannot start (a sandbox that forbids them, an interpreter the user may not
    run again, as after dropping privileges), files are read on threads of this process instead:
    slower, and without the per-file time limit, but everything else holds.
    """

    def __init__(self, workers: int | None = None, low_priority: bool = True):
        self._workers = workers or worker_count()
        self._low_priority = low_priority  # the workers yield to the user's work (ingest/pace.py)
        self._pool: ProcessPool | ThreadPool | None = None
        self._in_process = False
        self._lock = threading.Lock()

    @property
    def workers(self) -> int:
        return self._workers

    def submit(self, function: Callable[..., T], *args, timeout: float | None = None) -> Future:
        """Run ``function(*args)`` in a worker; past ``timeout`` seconds the worker is killed and the
        future raises ``TimeoutError``; a worker that dies raises ``pebble.ProcessExpired``."""
        with self._lock:
            if self._pool is None or not self._pool.active:
                self._pool = self._start()
            if isinstance(self._pool, ThreadPool):
                return self._pool.schedule(function, args=args)
            return self._pool.schedule(function, args=args, timeout=timeout)

    def _start(self) -> ProcessPool | ThreadPool:
        if not self._in_process:
            pool = ProcessPool(
                max_workers=self._workers,
                max_tasks=WORKER_TASKS,
                initializer=_worker_started,
                initargs=(self._low_priority,),
                context=multiprocessing.get_context("spawn"),
            )
            try:
                with ctrl_c_blocked():  # the workers, and the pool's threads that replace them, inherit it
                    started = pool.schedule(os.getpid)
                _wait_for_start(started)
                return pool
            except Stopped:
                pool.stop()
                pool.join(timeout=2)
                raise
            except Exception as exc:  # whatever keeps a process from starting
                log.warning(
                    "worker processes could not start (%s); files are read in this process",
                    f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__,
                )
                pool.stop()
                self._in_process = True
            except BaseException:  # a Ctrl+C while they start: they must not outlive this process
                pool.stop()
                pool.join()
                raise
        return ThreadPool(max_workers=self._workers)

    def stop(self) -> None:
        """Kill the workers now (what they were doing is abandoned); the next submit starts new ones."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.stop()
            pool.join(timeout=2)


def _wait_for_start(started: Future) -> None:
    """The first worker's answer, within STARTUP_SECONDS (``TimeoutError`` past them); ``Stopped`` as soon
    as a phase's stop flag is set."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        try:
            started.result(timeout=POLL_SECONDS)
            return
        except TimeoutError:
            if any(stop.is_set() for stop in _stops):
                raise Stopped() from None
            if time.monotonic() > deadline:
                raise


def call_interruptibly(function: Callable[[], T], stop: threading.Event, lock: threading.Lock | None = None) -> T:
    """``function()`` on a daemon thread, returning its result, or raising ``Stopped`` as soon as ``stop`` is set.

    ``lock`` is held for the call's whole life, also after it was abandoned, so that the next
    call on the same model waits for it rather than running beside it.
    """
    done = threading.Event()
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            if lock is None:
                outcome["value"] = function()
            else:
                with lock:
                    outcome["value"] = function()
        except BaseException as exc:  # handed to the waiting thread
            outcome["error"] = exc
        finally:
            done.set()

    thread = threading.Thread(target=run, name="model-call", daemon=True)
    leave_running(thread)
    thread.start()
    while not done.wait(POLL_SECONDS):
        if stop.is_set():
            raise Stopped()
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]
