"""Indexing on a Ray cluster (``sensetree index --ray``): the workers prepare files and embed chunks,
this process keeps the catalog and makes every commit.

Only where work runs changes: ``RayPool`` stands in for the local ``WorkerPool`` of the keyword
phase and ``ClusterEmbedder`` for the model of the semantic phase, so ordering, batching,
statuses and commits stay the single-machine code path. Ray places the workers (one actor per
``cluster.worker_threads`` CPUs of the cluster, spread over the nodes); each loads the embedding
model once, on its first batch.

Each worker has one call at a time, so a file's time limit counts from when its worker starts
it, and a worker cut off (too slow) or lost (its node died) takes only that file with it: the
file counts an attempt and goes back to the queue, exactly as when a local worker process
dies. A lost worker is replaced when the cluster has room for it.

The files are read where the workers are, at the same path (a share mounted on every node). A
worker that cannot see a root (its top-level names differ, or it is missing) is sent the bytes
of the files under it, read here; a block folder, a file over the size limit or one this
process cannot read either is prepared here, as a single machine would.
"""

from __future__ import annotations

import functools
import logging
import os
import queue
import threading
import time
from collections import deque
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .. import paths
from ..config import Settings
from ..errors import SenseTreeError
from ..models.devices import requested_device
from ..models.embeddings import Embedder, EmbeddingError, EndpointUnavailable
from .confine import OutsideRoots, RootGuard
from .prepare import Job, Sent, prepare

log = logging.getLogger(__name__)

WATCH_SECONDS = 0.2  # how often the time limits of running calls are checked
FINGERPRINT_NAMES = 64  # top-level names of a root compared to decide whether a worker sees the same folder
EMBED_ATTEMPTS = 3  # a batch part whose worker was lost is sent to another one this many times
# An embedding call (a whole semantic batch, about BATCH_SECONDS of the cluster's time) is cut finer than the
# workers, into runs of about equal length that each worker takes as it comes free: a worker waits at the
# batch's end for at most the last run of another, not for the slowest one's share. At 16 a run is about a
# quarter of a second; 4 runs in calls of one second each left the workers waiting at every call's end.
PIECES_PER_WORKER = 16


class IndexWorker:
    """One Ray worker: prepares files and embeds texts, with the model loaded on first use and kept."""

    def __init__(self, embedding: dict[str, Any]):
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        self._embedding = embedding
        self._embedder: Embedder | None = None

    def sees(self, fingerprints: dict[str, list[str]]) -> list[str]:
        """The roots this worker sees as the head does: same folder, same top-level names."""
        return [root for root, names in fingerprints.items() if _fingerprint(root) == names]

    def prepare(self, job: Job, sent: Sent | None = None):
        return prepare(job, sent)

    def describe(self) -> tuple[str, int]:
        embedder = self._model()
        return embedder.identity, embedder.dimension

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._model().embed_passages(texts)

    def _model(self) -> Embedder:
        if self._embedder is None:
            from ..models.embeddings import load_embedder

            e = self._embedding
            self._embedder = load_embedder(
                e["model"], e["base_url"], e["api_key"], e["dimensions"], e["threads"], e["batch_size"], e["device"]
            )
        return self._embedder


def _fingerprint(root: str) -> list[str] | None:
    try:
        return sorted(os.listdir(root))[:FINGERPRINT_NAMES]
    except OSError:
        return None


@dataclass
class _Call:
    method: str
    args: tuple
    future: Future = field(default_factory=Future)
    timeout: float | None = None
    started: float = 0.0
    timed_out: bool = False


@dataclass
class _Worker:
    actor: Any
    sees: set[str] = field(default_factory=set)
    call: _Call | None = None


class RayPool:
    """The keyword phase's ``workers.Pool`` on Ray workers (``WorkerPool`` is the local one).

    One thread of this process makes every Ray call and owns the pool's state; callers and Ray's
    completion callbacks only hand it events.
    """

    def __init__(self, address: str, settings: Settings, roots: Callable[[], list[str]]):
        try:
            import ray
        except ImportError:
            raise SenseTreeError(
                "indexing on a Ray cluster needs the cluster extra: pip install 'sensetree[cluster]'"
            ) from None
        self._ray = ray
        self._connected_here = not ray.is_initialized()  # then shutdown() disconnects this process again
        if self._connected_here:
            try:
                ray.init(
                    address=None if address == "local" else address,
                    namespace="sensetree",
                    log_to_driver=False,
                    logging_level=logging.WARNING,
                    include_dashboard=False,
                )
            except ConnectionError as exc:
                raise SenseTreeError(f"cannot reach the Ray cluster at {address}: {exc}") from None
        self._threads = max(1, settings["cluster.worker_threads"])
        self._embedding = {
            "model": settings["embedding.model"],
            "base_url": settings["embedding.base_url"],
            "api_key": settings["embedding.api_key"],
            "dimensions": settings["embedding.dimensions"],
            "threads": self._threads,
            "batch_size": settings["indexing.batch_size"],
            "device": requested_device(settings, "embedder"),
        }  # each worker checks its own device
        self._roots = roots
        self.workers = max(1, int(ray.cluster_resources().get("CPU", 1) // self._threads))
        self._events: queue.Queue[tuple] = queue.Queue()
        self._waiting: deque[_Call] = deque()
        self._idle: deque[_Worker] = deque()
        self._busy: list[_Worker] = []
        self._local = ThreadPoolExecutor(max_workers=1, thread_name_prefix="prepare-here")
        self._closed = False
        self.sent = self.here = 0  # files sent to a worker that cannot see them, files prepared here
        self._loop = threading.Thread(target=self._run, name="ray-pool", daemon=True)
        self._loop.start()

    # what callers do -------------------------------------------------------------------------
    def submit(self, function: Callable[..., Any], *args, timeout: float | None = None) -> Future:
        """``prepare(job)`` on a worker; past ``timeout`` seconds of its own time the worker is cut off and
        the future raises ``TimeoutError``; a worker lost on the way raises Ray's ``RayActorError``."""
        if function is not prepare:
            raise TypeError("the Ray pool runs prepare() only")
        return self._call("prepare", args, timeout)

    def _call(self, method: str, args: tuple, timeout: float | None = None) -> Future:
        call = _Call(method, args, timeout=timeout)
        self._events.put(("call", call))
        return call.future

    def stop(self) -> None:
        """Abandon what the workers are doing (a stop): busy workers are replaced, waiting calls dropped."""
        self._events.put(("stop",))

    def shutdown(self) -> None:
        self._events.put(("shutdown",))
        self._loop.join(timeout=10)
        self._local.shutdown(wait=False, cancel_futures=True)
        if self._connected_here:  # a process left attached would exit when that cluster goes away
            self._ray.shutdown()

    # the pool's thread -----------------------------------------------------------------------
    def _run(self) -> None:
        for _ in range(self.workers):
            self._start_worker()
        while True:
            try:
                event = self._events.get(timeout=WATCH_SECONDS)
            except queue.Empty:
                event = ("tick",)
            kind = event[0]
            if kind == "call":
                self._waiting.append(event[1])
            elif kind == "started":
                self._started(*event[1:])
            elif kind == "finished":
                self._finished(*event[1:])
            elif kind == "stop":
                self._abandon()
            elif kind == "shutdown":
                self._closed = True
                self._abandon()
                for worker in self._idle:
                    self._ray.kill(worker.actor, no_restart=True)
                return
            self._cut_off_late()
            self._dispatch()

    def _start_worker(self) -> None:
        # Any, as _Worker.actor: Ray types a handle ActorHandle | type[IndexWorker], whose methods have a .remote
        # only when decorated with @ray.method (this module imports ray only when a cluster is used).
        actor: Any = (
            self._ray.remote(IndexWorker)
            .options(num_cpus=self._threads, max_restarts=0, scheduling_strategy="SPREAD")
            .remote(self._embedding)
        )
        roots = {root: _fingerprint(root) for root in self._roots()}
        actor.sees.remote(roots).future().add_done_callback(lambda done: self._events.put(("started", actor, done)))

    def _started(self, actor: Any, done: Future) -> None:
        try:
            sees = set(done.result())
        except Exception as exc:  # it died before it could answer: another one in its place
            log.warning("a Ray worker did not start: %s", exc)
            self._start_worker()
            return
        self._idle.append(_Worker(actor, sees))

    def _dispatch(self) -> None:
        """Hand waiting calls to idle workers, one call each."""
        while self._waiting and self._idle:
            call = self._waiting.popleft()
            if call.future.cancelled():
                continue
            worker = self._idle.popleft()
            args = self._routed(call, worker)
            if args is None:  # prepared here instead
                self._idle.appendleft(worker)
                job = call.args[0]
                self._local.submit(_into, call.future, functools.partial(prepare, job))
                self.here += 1
                continue
            worker.call, call.started = call, time.monotonic()
            self._busy.append(worker)
            ref = getattr(worker.actor, call.method).remote(*args)
            ref.future().add_done_callback(lambda done, w=worker, c=call: self._events.put(("finished", w, c, done)))

    def _routed(self, call: _Call, worker: _Worker) -> tuple | None:
        """The arguments for ``worker``: a job with the file's bytes where it cannot see the root; None to
        prepare the job here."""
        if call.method != "prepare":
            return call.args
        job: Job = call.args[0]
        root = max((r for r in self._roots() if paths.is_under(job.path, r)), key=len, default=None)
        if root in worker.sees:
            return call.args
        if job.kind != "file":
            return None
        try:
            contents = RootGuard(job.roots or self._roots()).read(job.path, job.max_file_bytes)
        except (OSError, OutsideRoots):
            return None  # vanished, unreadable or led out here too: prepared here, it says so as a single machine would
        if contents.data is None:
            return None
        self.sent += 1
        return job, Sent(contents.data, contents.stat.st_mtime, len(contents.data))

    def _finished(self, worker: _Worker, call: _Call, done: Future) -> None:
        self._busy.remove(worker)
        worker.call = None
        try:
            _settle(call.future, value=done.result())
            lost = False
        except Exception as exc:
            lost = isinstance(exc, self._ray.exceptions.RayActorError)
            _settle(call.future, error=_cut_off(call) if call.timed_out else _cause(exc))
        if lost or call.timed_out:
            if not self._closed:
                self._start_worker()  # in its place, once the cluster has room for it
        elif not self._closed:
            self._idle.append(worker)

    def _cut_off_late(self) -> None:
        now = time.monotonic()
        for worker in self._busy:
            call = worker.call
            if call and call.timeout and not call.timed_out and now - call.started > call.timeout:
                call.timed_out = True
                self._ray.kill(worker.actor, no_restart=True)

    def _abandon(self) -> None:
        for call in self._waiting:
            call.future.cancel()
        self._waiting.clear()
        for worker in self._busy:
            if worker.call is not None and not worker.call.timed_out:
                worker.call.timed_out = True  # its answer is not wanted: the worker is replaced
                worker.call.future.cancel()  # and whoever waits for it stops waiting now
                self._ray.kill(worker.actor, no_restart=True)

    # the model ---------------------------------------------------------------------------
    def embedder(self, dimension: int | None) -> ClusterEmbedder:
        """The embedder of the workers; refused, as locally, when its vectors differ in size from the index's."""
        identity, size = _result(self._call("describe", ()))
        if dimension is not None and size != dimension:
            raise EndpointUnavailable(
                f"the workers' embedding model gives {size}-d vectors but the index "
                f"holds {dimension}-d ones; check the model they load"
            )
        return ClusterEmbedder(self, identity, size)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts``, in runs the workers take as they come free; a run whose worker was lost goes
        to another."""
        pieces = _runs(list(texts), 1 if self.workers == 1 else self.workers * PIECES_PER_WORKER)
        futures = [self._call("embed", (piece,)) for piece in pieces]
        vectors = []
        for piece, future in zip(pieces, futures):
            for attempt in range(EMBED_ATTEMPTS):
                try:
                    vectors.append(_result(future))
                    break
                except self._ray.exceptions.RayActorError as exc:
                    if attempt == EMBED_ATTEMPTS - 1:
                        raise EndpointUnavailable(f"Ray workers were lost while embedding: {exc}") from exc
                    future = self._call("embed", (piece,))
        return np.concatenate(vectors)


class ClusterEmbedder:
    """The workers' model as an ``Embedder`` for the semantic phase (passages only: searches embed locally).

    A stop drops the runs not done (``abandon``), so the semantic phase hands it whole batches for the
    pool to spread over the workers, rather than short calls that it could see a stop between, which
    would make every worker wait for the slowest run at the end of each call.
    """

    def __init__(self, pool: RayPool, identity: str, dimension: int):
        self._pool, self.identity, self.dimension = pool, identity, dimension

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), np.float32)
        return self._pool.embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        raise EmbeddingError("queries are embedded by the searching process, not the cluster")

    def abandon(self) -> None:
        """A stop: the runs still waiting are dropped and the busy workers replaced."""
        self._pool.stop()


def _runs(texts: list[str], count: int) -> list[list[str]]:
    """``texts`` cut, in order, into at most ``count`` runs of about equal total length (a model's time
    follows the length of what it reads)."""
    count = max(1, min(count, len(texts)))
    total = sum(len(t) for t in texts)
    runs: list[list[str]] = [[]]
    filled = 0
    for text in texts:
        if runs[-1] and len(runs) < count and filled >= total * len(runs) / count:
            runs.append([])
        runs[-1].append(text)
        filled += len(text)
    return runs


def _cut_off(call: _Call) -> BaseException:
    """What a call whose worker this pool killed ends with: past its time limit, or dropped by a stop."""
    return TimeoutError(f"cut off after {call.timeout:.0f} s") if call.timeout else CancelledError("dropped by a stop")


def _cause(exc: BaseException) -> BaseException:
    """The error the worker raised, not Ray's wrapper around it (an EndpointUnavailable stays one)."""
    from ray.exceptions import RayTaskError

    cause = getattr(exc, "cause", None) if isinstance(exc, RayTaskError) else None
    return cause if isinstance(cause, BaseException) else exc


def _result(future: Future) -> Any:
    try:
        return future.result()
    except Exception as exc:
        raise _cause(exc) from None


def _settle(future: Future, value: Any = None, error: BaseException | None = None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


def _into(future: Future, work: Callable[[], Any]) -> None:
    try:
        _settle(future, value=work())
    except Exception as exc:
        _settle(future, error=exc)
