"""The engine: one object that every interface (CLI, HTTP API, web UI, MCP) drives.

It owns the data dir: ``settings.toml``, the SQLite catalog, the LanceDB chunks table and
the models, loaded lazily so that a ``status`` call never pays for a model it does not use.
Only one process writes to a data dir at a time (a lock file); any number may search.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

from filelock import FileLock, Timeout

from . import paths
from .browse import Browser
from .config import DEFAULTS, Settings, default_data_dir
from .ingest.indexer import Indexer, IndexingPaused, IndexOptions, Progress, wait_for_endpoint
from .ingest.sense import SenseWriter
from .ingest.walker import walk
from .ingest.watcher import watch
from .models.embeddings import Embedder, EmbeddingError, EndpointUnavailable, expected_identity, load_embedder
from .models.llm import ChatClient
from .models.probe import ProbeReport, probe_endpoint
from .models.reranker import CrossEncoder, RerankerUnavailable, load_reranker
from .search.pipeline import QueryEmbeddingFailed, Retriever
from .search.types import SearchResponse, TreeNode
from .store import integrity
from .store.catalog import Catalog
from .store.chunks import ChunkStore, StoreDamaged

log = logging.getLogger(__name__)
T = TypeVar("T")


class SenseTreeError(Exception):
    """A problem the user can act on; the message says what and how."""


class WriterBusy(SenseTreeError):
    """Another process holds the data dir's writer lock."""


@dataclass(frozen=True)
class ScanReport:
    new: int
    changed: int
    deleted: int
    seconds: float


class Engine:
    def __init__(self, data_dir: Path | str | None = None):
        self.data_dir = Path(data_dir).expanduser() if data_dir else default_data_dir()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.settings = Settings.load(self.data_dir)
        self._writer_lock = FileLock(str(self.data_dir / "writer.lock"))
        self.notices: list[str] = []  # things to tell the user once (model change, disabled stage...)
        self._catalog_behind = False  # the catalog lost commits: reconcile it with the vectors
        self.catalog = self._open_catalog()
        self.store = ChunkStore(self.data_dir / "lancedb")
        self._embedder: Embedder | None = None
        self._reranker: CrossEncoder | None = None
        self._reranker_problem: str | None = None
        self._reranker_told = False
        self._models_lock = threading.Lock()
        if self.settings.problem:
            self.notices.append(self.settings.problem)
        if self._catalog_behind and self._writer_free():
            self._reconcile()

    def close(self) -> None:
        self.catalog.close()
        if self._writer_lock.is_locked:
            self._writer_lock.release(force=True)

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # models -----------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        with self._models_lock:
            if self._embedder is None:
                s = self.settings
                self._embedder = load_embedder(s["embedding.model"], s["embedding.base_url"], s["embedding.api_key"],
                                               s["embedding.dimensions"], s["embedding.threads"], s["indexing.batch_size"])
            return self._embedder

    @property
    def models_dir(self) -> Path:
        return self.data_dir / "models"

    def reranker(self) -> CrossEncoder | None:
        """The cross-encoder, or None (and a reason in ``reranker_problem``) when it cannot load."""
        name = self.settings["retrieval.reranker_model"]
        with self._models_lock:
            if self._reranker is not None and self._reranker.name == name:
                return self._reranker
            try:
                self._reranker = load_reranker(name, self.models_dir)
                self._reranker_problem = None
            except RerankerUnavailable as exc:
                self._reranker, self._reranker_problem = None, str(exc)
            return self._reranker

    @property
    def reranker_problem(self) -> str | None:
        """Why the configured reranker could not be loaded, after an attempt; None when it loaded."""
        return self._reranker_problem

    def _embed_query(self, text: str):
        stored = self.catalog.meta("embedding_identity")
        try:
            embedder = self.embedder
            if stored and stored != embedder.identity and self.store.count() > 0:
                raise QueryEmbeddingFailed(
                    f"the index was built with {stored} but the settings name {embedder.identity}; "
                    "run `sensetree index` to rebuild it")
            self._check_dimension(embedder)
            return embedder.embed_query(text)
        except EmbeddingError as exc:
            raise QueryEmbeddingFailed(f"the query could not be embedded ({exc})") from exc

    def _check_dimension(self, embedder: Embedder) -> None:
        """Refuse an endpoint that now serves vectors of another size under the same model name."""
        held = self.store.dimension
        if held is not None and embedder.dimension != held:
            self._embedder = None  # probe again next time: the endpoint may have been fixed
            raise EndpointUnavailable(f"the embedding endpoint gives {embedder.dimension}-d vectors but the index "
                                      f"holds {held}-d ones; check the model it serves")

    def _indexing_embedder(self) -> Embedder:
        """The embedder for a run: a down endpoint is worth waiting for; any other problem is the user's to fix."""
        try:
            embedder = self.embedder
        except EndpointUnavailable:
            raise
        except EmbeddingError as exc:
            raise SenseTreeError(f"the embedding model is not available ({exc}); files stay pending") from exc
        self._check_dimension(embedder)
        return embedder

    def retriever(self) -> Retriever:
        return Retriever(self.store, self._embed_query, self.reranker, self.store.build_fts_index,
                         fusion=self.settings["retrieval.fusion"], dense_model=self.expected_identity())

    def _check_scope(self, scope: str | None) -> str | None:
        if scope and not any(paths.is_under(scope, root) for root in self.roots()):
            return f"{scope} is outside every indexed root ({', '.join(self.roots()) or 'none yet'})"
        if scope and not os.path.isdir(scope):
            return f"{scope} is a file; a scope is a folder" if os.path.exists(scope) else f"{scope} does not exist"
        return None

    def search(self, query: str, scope: str | None = None, limit: int = 20, *,
               hybrid: bool | None = None, rerank: bool | None = None) -> SearchResponse:
        """The one search every interface uses; ``hybrid``/``rerank`` override the settings per call."""
        hybrid = self.settings["retrieval.hybrid"] if hybrid is None else hybrid
        rerank = self.settings["retrieval.rerank"] if rerank is None else rerank
        repairs = len(self.notices)
        problem = self._recovering(lambda: self._check_scope(scope))
        if problem:
            return SearchResponse(query=query, notices=[*self.notices[repairs:], problem])
        response = self._recovering(lambda: self.retriever().search(query, scope, limit, hybrid=hybrid,
                                                                    rerank_on=rerank))
        response.notices[:0] = self.notices[repairs:]  # a repair made on the way
        if rerank and self._reranker_problem and not self._reranker_told:
            response.notices.append(f"reranking skipped: {self._reranker_problem}")
            self._reranker_told = True
        return response

    def tree(self, query: str, scope: str | None = None, limit: int = 400) -> tuple[TreeNode | None, list[str]]:
        repairs = len(self.notices)
        problem = self._recovering(lambda: self._check_scope(scope))
        if problem:
            return None, [*self.notices[repairs:], problem]
        node, notices = self._recovering(lambda: self.retriever().tree(query, scope, self.roots(), limit))
        return node, [*self.notices[repairs:], *notices]

    def expected_identity(self) -> str:
        return expected_identity(self.settings["embedding.model"], self.settings["embedding.base_url"])

    def sense_writer(self) -> SenseWriter:
        s = self.settings
        if s["sense.base_url"] and s["sense.model"]:
            return SenseWriter(ChatClient(s["sense.base_url"], s["sense.model"], s["sense.api_key"], s["sense.timeout"]))
        return SenseWriter(None)

    # settings ---------------------------------------------------------------------
    def set_setting(self, key: str, value: Any) -> str | None:
        """Change one setting; a change of embedding model wipes the vectors at once and says so."""
        before = self.expected_identity()
        self.settings.set(key, value)
        if key.startswith("embedding."):
            self._embedder = None
        if self.expected_identity() != before:
            return self._check_model(force=True)
        return None

    def _check_model(self, force: bool = False) -> str | None:
        """Wipe the vectors when the embedding model differs from the one that built them (SPEC §2)."""
        stored = self.catalog.meta("embedding_identity")
        wanted = self.expected_identity()
        if stored == wanted and not force:
            return None
        if stored is None and self.store.count() == 0:
            self.catalog.set_meta("embedding_identity", wanted)
            return None
        if stored == wanted:
            return None
        with self.writer():
            self.store.wipe()
            self.catalog.requeue_all()
            self.catalog.set_meta("embedding_identity", wanted)
        message = (f"Embedding model changed ({stored or 'unknown'} -> {wanted}): the vectors were wiped and every "
                   "file will be re-indexed; results come back progressively.")
        self.notices.append(message)
        return message

    # roots ------------------------------------------------------------------------
    def roots(self) -> list[str]:
        return self.catalog.roots()

    def add_root(self, folder: str) -> str:
        path = paths.normalize(folder)
        if not os.path.isdir(path):
            raise SenseTreeError(f"{folder} is not a folder")
        if path in self.roots():
            return path
        for root in self.roots():
            if paths.is_under(path, root):
                raise SenseTreeError(f"{path} is already indexed as part of the root {root}")
        for root in self.roots():
            if paths.is_under(root, path):  # a wider root absorbs the narrower one
                self.catalog.remove_root(root)
                self.catalog.move_root(root, path)
        self.catalog.add_root(path)
        return path

    def remove_root(self, folder: str) -> int:
        path = paths.normalize(folder)
        if path not in self.roots():
            raise SenseTreeError(f"{folder} is not a root; roots: {', '.join(self.roots()) or 'none'}")
        with self.writer():
            gone = [p for p in self.catalog.files_under(path)]
            self.store.delete_paths(gone)
            self.catalog.delete(gone)
            self.catalog.remove_root(path)
        return len(gone)

    def set_block(self, folder: str, mode: str | None) -> str:
        """``block``, ``recursive`` (index the contents) or None (back to the heuristics)."""
        path = paths.normalize(folder)
        if not os.path.isdir(path):
            raise SenseTreeError(f"{folder} is not a folder")
        if path in self.roots() and mode == "block":
            raise SenseTreeError("a root is never a block")
        if not any(paths.is_under(path, r) for r in self.roots()):
            raise SenseTreeError(f"{path} is not inside any root")
        self.catalog.set_folder_mode(path, mode)
        return path

    # indexing ---------------------------------------------------------------------
    @contextmanager
    def writer(self, wait: float = 0) -> Iterator[None]:
        """Hold the data dir's writer lock; raises WriterBusy when another process holds it."""
        try:
            self._writer_lock.acquire(timeout=wait)
        except Timeout:
            raise WriterBusy(f"another sensetree process is indexing {self.data_dir}; "
                             "wait for it to finish or stop it") from None
        try:
            yield
        finally:
            self._writer_lock.release()

    def scan(self) -> ScanReport:
        """Compare the disk with the catalog (stat only, no hashing): queue new and changed, purge deleted."""
        started = time.perf_counter()
        manual = self.catalog.folder_modes()
        exclude = paths.path_key(str(self.data_dir))
        new = changed = 0
        deleted: list[str] = []
        for root in self.roots():
            known = self.catalog.files_under(root)
            seen: set[str] = set()
            queued = []
            if os.path.isdir(root):
                for entry in walk(root, manual):
                    if paths.is_under(entry.path, exclude):
                        continue
                    seen.add(entry.path)
                    old = known.get(entry.path)
                    if old is None:
                        new += 1
                    elif old[0] != entry.kind or old[1] != entry.size or old[2] != entry.mtime:
                        changed += 1
                    else:
                        continue
                    queued.append((entry.path, root, entry.kind, entry.size, entry.mtime, entry.members))
            self.catalog.upsert_pending(queued)
            deleted += [p for p in known if p not in seen]
        if deleted:
            self.store.delete_paths(deleted)
            self.catalog.delete(deleted)
        return ScanReport(new, changed, len(deleted), time.perf_counter() - started)

    def index_options(self) -> IndexOptions:
        s = self.settings
        return IndexOptions(chunk_size=s["indexing.chunk_size"], overlap=s["indexing.overlap"],
                            max_file_bytes=int(s["indexing.max_file_mb"] * 1024 * 1024),
                            qualify_documents=s["indexing.qualify_documents"],
                            qualify_context=s["indexing.qualify_context"],
                            max_endpoint_wait=s["indexing.endpoint_wait"])

    def index(self, on_update: Callable[[Progress], None] | None = None, stop: threading.Event | None = None,
              max_endpoint_wait: float | None = None, wait_for_lock: float = 0) -> Progress:
        """Scan every root and index what is pending, under the writer lock; compacts at the end.

        A damaged catalog or vector table met on the way is repaired, and the run made once more.
        """
        return self._recovering(lambda: self._index_once(on_update, stop, max_endpoint_wait, wait_for_lock))

    def _index_once(self, on_update: Callable[[Progress], None] | None, stop: threading.Event | None,
                    max_endpoint_wait: float | None, wait_for_lock: float) -> Progress:
        with self.writer(wait_for_lock):
            if self._catalog_behind:
                self._reconcile()
            self.store.reopen()  # the last writer may have been another process that dropped the table
            self._check_model()
            self.scan()
            options = self.index_options()
            if max_endpoint_wait is not None:
                options.max_endpoint_wait = max_endpoint_wait
            # An endpoint that is down before its first answer is waited for like one that goes down mid-run.
            progress = Progress()
            embedder = wait_for_endpoint(self._indexing_embedder, progress, options.max_endpoint_wait,
                                         stop or threading.Event(), on_update or (lambda p: None))
            progress.started = time.monotonic()
            indexer = Indexer(self.catalog, self.store, embedder, self.sense_writer(), options)
            self.catalog.set_meta("embedding_identity", embedder.identity)
            try:
                return indexer.run(progress, on_update=on_update, stop=stop)
            finally:
                self.store.optimize()

    def watch(self, on_update: Callable[[Progress], None] | None = None, stop: threading.Event | None = None,
              on_round: Callable[[Progress], None] | None = None) -> None:
        """Index, then keep indexing whatever changes under the roots until ``stop`` is set.

        The watcher starts before the first round, so a change made during it is not missed, and
        each round waits as long as it takes for a down embedding endpoint to come back.
        """
        stop = stop or threading.Event()

        def index_round() -> None:
            try:
                progress = self.index(on_update, stop, max_endpoint_wait=float("inf"))
            except IndexingPaused:
                if stop.is_set():
                    return
                raise
            if on_round:
                on_round(progress)

        with self.writer():
            watch(self.roots(), str(self.data_dir), index_round, stop, first_round=True)

    # damage (power cuts, torn writes; see store/integrity.py) -------------------------
    def _writer_free(self) -> bool:
        """No other process writes to the data dir now, so what is on disk is settled."""
        try:
            with self.writer():
                return True
        except WriterBusy:
            return False

    def _open_catalog(self) -> Catalog:
        """The catalog, salvaged when SQLite cannot open it; a log that lost commits is noted for repair."""
        path = self.data_dir / "catalog.sqlite"
        wal = integrity.read_wal(path) if self._writer_free() else None
        try:
            catalog = Catalog(path)
        except sqlite3.DatabaseError as exc:
            return self._salvage_catalog(str(exc))
        problem = integrity.wal_problem(wal, catalog.wal_frames()) if wal else None
        if problem:
            self.notices.append(f"The catalog's write-ahead log was damaged: {problem}. Its last changes were "
                                "lost; the catalog was checked against the vectors and what it lost will be "
                                "indexed again.")
            self._catalog_behind = True
        return catalog

    def _salvage_catalog(self, reason: str) -> Catalog:
        with self.writer():
            salvage = integrity.salvage_catalog(self.data_dir / "catalog.sqlite")
        self.notices.append(salvage.describe(reason))
        self._catalog_behind = True
        return salvage.catalog

    def _reconcile(self) -> None:
        with self.writer():
            requeued, dropped = self._recovering(lambda: integrity.reconcile(self.catalog, self.store))
        self._catalog_behind = False
        if requeued or dropped:
            self.notices.append(f"Checked against the vectors: {requeued} file(s) will be indexed again, and the "
                                f"vectors of {dropped} file(s) the catalog no longer lists were dropped.")

    def _recovering(self, operation: Callable[[], T]) -> T:
        """Run ``operation``; when it fails on a damaged catalog or vector table, repair it and run once more."""
        try:
            return operation()
        except (SenseTreeError, IndexingPaused, EmbeddingError, QueryEmbeddingFailed):
            raise
        except (sqlite3.DatabaseError, RuntimeError, ValueError, OSError) as exc:
            if not self._repair(exc):
                raise
        return operation()

    def _repair(self, error: Exception) -> bool:
        """Repair the store ``error`` came from if one of its files is damaged; False when none is."""
        if isinstance(error, sqlite3.DatabaseError):
            reason = self.catalog.damage()
            if reason is None:
                return False  # a busy or locked database, not a damaged one
            with self.writer():
                self.catalog.close()
                self.catalog = self._salvage_catalog(reason)
        else:
            reason = str(error) if isinstance(error, StoreDamaged) else self.store.verify()
            if reason is None:
                return False
            with self.writer():
                version = self.store.roll_back()
            if version is None:
                self.notices.append(f"The vector index was damaged ({reason}) and no earlier version of it reads "
                                    "back whole: it was rebuilt empty, and every file will be indexed again.")
            else:
                self.notices.append(f"The vector index was damaged ({reason}); it was rolled back to its last "
                                    f"sound version ({version}), and the files written since will be indexed again.")
        self._reconcile()
        return True

    # reports ----------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        return self._recovering(self._status)

    def _status(self) -> dict[str, Any]:
        counts = self.catalog.counts()
        index_files = [*(self.data_dir / "lancedb").rglob("*"), *self.data_dir.glob("catalog.sqlite*")]
        size = sum(f.stat().st_size for f in index_files if f.is_file())
        return {
            "data_dir": str(self.data_dir),
            "roots": self.roots(),
            "counts": counts,
            "chunks": self.store.count(),
            "embedding_model": self.catalog.meta("embedding_identity") or self.expected_identity(),
            "sense_model": self.settings["sense.model"] or "excerpt fallback (no sense endpoint configured)",
            "reranker": self._reranker_status(),
            "index_bytes": size,
            "notices": list(self.notices),
        }

    def _reranker_status(self) -> str:
        if not self.settings["retrieval.rerank"]:
            return "off (retrieval.rerank = false)"
        name = self.settings["retrieval.reranker_model"]
        from .models.registry import find_reranker

        if find_reranker(name, self.models_dir):
            return f"{name} (failed to load: {self._reranker_problem})" if self._reranker_problem else name
        return (f"{name} is not installed, so results keep their fused order. Enable it with "
                f"`sensetree models pull {name}` (online) or put an ONNX cross-encoder folder in {self.models_dir}")

    def queue(self) -> dict[str, list[dict[str, Any]]]:
        def view(row) -> dict[str, Any]:
            return {"path": row.path, "kind": row.kind, "status": row.status, "attempts": row.attempts,
                    "error": row.error}
        return {"failed": [view(r) for r in self.catalog.failed()],
                "pending": [view(r) for r in self.catalog.pending()]}

    def pin_sense(self, path: str, sense: str) -> None:
        """Correct a file's sense by hand; it is pinned (never overwritten) and the file re-indexed with it."""
        norm = paths.normalize(path)
        row = self.catalog.file(norm)
        if row is None:
            raise SenseTreeError(f"{path} is not in the index")
        self.catalog.pin_sense(norm, sense.strip())
        self.catalog.requeue(norm)

    def retry(self, path: str | None = None) -> int:
        return self.catalog.retry(paths.normalize(path) if path else None)

    def ignore(self, path: str | None = None) -> int:
        """Leave a file or folder out of the index for good (all failed files when ``path`` is None)."""
        targets = [r.path for r in self.catalog.failed()] if path is None else [self._inside_roots(path)]
        with self.writer():
            for target in targets:
                self.catalog.set_folder_mode(target, "ignore")
                gone = self.catalog.files_under_prefix(target)
                self.store.delete_paths(gone)
                self.catalog.delete(gone)
        return len(targets)

    def unignore(self, path: str) -> str:
        """Undo ``ignore``: the next scan picks the path up again."""
        norm = paths.normalize(path)
        if self.catalog.folder_modes().get(norm) != "ignore":
            raise SenseTreeError(f"{path} is not ignored")
        self.catalog.set_folder_mode(norm, None)
        return norm

    def ignored(self) -> list[str]:
        return sorted(p for p, mode in self.catalog.folder_modes().items() if mode == "ignore")

    def reindex(self, path: str) -> int:
        """Index a file, or every file under a folder, again from scratch (the next run does it)."""
        targets = self.catalog.files_under_prefix(self._inside_roots(path))
        for target in targets:
            self.catalog.requeue(target)
        return len(targets)

    def _inside_roots(self, path: str) -> str:
        norm = paths.normalize(path)
        if not any(paths.is_under(norm, root) for root in self.roots()):
            raise SenseTreeError(f"{path} is outside every indexed root")
        return norm

    def browser(self) -> Browser:
        """Read-only views for the explorer: folder listings with statuses, file details, previews."""
        return Browser(self.catalog, self.store, self.roots())

    def settings_view(self) -> list[dict[str, Any]]:
        """Every setting with its value, default, help and type, and whether changing it re-indexes everything."""
        return [{"key": key, "value": self.settings[key], "default": default, "help": about,
                 "type": type(default).__name__, "secret": key.endswith("api_key"),
                 "reindex": key in ("embedding.model", "embedding.base_url")}
                for key, (default, about) in DEFAULTS.items()]

    def models_view(self) -> dict[str, list[dict[str, Any]]]:
        """Per role: the models that are installed or can be pulled, and which one is in use."""
        from .chat.local_model import DEFAULT_MODEL, EMBEDDED, model_file, runtime_installed
        from .models.embeddings import BUNDLED, canonical_model
        from .models.registry import list_rerankers

        s = self.settings
        embedding = [{"name": name, "installed": True, "active": not s["embedding.base_url"] and
                      canonical_model(s["embedding.model"]) == name, "note": about} for name, about in BUNDLED.items()]
        if s["embedding.base_url"]:
            embedding.append({"name": s["embedding.model"], "installed": True, "active": True,
                              "note": f"endpoint {s['embedding.base_url']}"})
        rerankers = [{"name": r["name"], "installed": r["installed"], "active": r["name"] == s["retrieval.reranker_model"],
                      "note": r["where"] or f"{r['size']}, {r['licence']}; sensetree models pull {r['name']}"}
                     for r in list_rerankers(self.models_dir)]
        chat_name = s["chat.model"] or DEFAULT_MODEL
        runtime = runtime_installed()
        chat = [{"name": name, "installed": runtime and model_file(name, self.models_dir) is not None,
                 "active": not s["chat.base_url"] and chat_name == name,
                 "note": "embedded (llama-cpp-python)" if runtime else "needs the llm extra"} for name in EMBEDDED]
        if s["chat.base_url"]:
            chat.append({"name": s["chat.model"] or "default", "installed": True, "active": True,
                         "note": f"endpoint {s['chat.base_url']}"})
        return {"embedding": embedding, "reranker": rerankers, "chat": chat}

    def test_endpoint(self, role: str, base_url: str | None = None, model: str | None = None,
                      api_key: str | None = None) -> ProbeReport:
        """Reachable, model present, dimension: for the settings' values or the ones about to be saved."""
        if role not in ("embedding", "sense", "chat"):
            raise SenseTreeError(f"unknown role {role!r}; use embedding, sense or chat")
        s = self.settings
        return probe_endpoint(role, s[f"{role}.base_url"] if base_url is None else base_url,
                              s[f"{role}.model"] if model is None else model,
                              s[f"{role}.api_key"] if api_key is None else api_key)
