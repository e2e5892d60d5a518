"""The engine: one object that every interface (CLI, HTTP API, web UI, MCP) drives.

It owns a data dir: ``settings.toml``, the storage (SQLite catalog + LanceDB chunks, repaired
when damaged: ``store/storage.py``) and the models (loaded on first use: ``models/manager.py``).
Only one process writes to a data dir at a time (a lock file; on a bucket, also a lease);
any number may search, here or on other machines: ``Engine(index=URI)`` is a search node
over an index it does not write (``store/readonly.py``). The stages do the work: ``ingest/``
scans and indexes, ``search/`` answers, ``reader`` reads files for people and models. The engine's
operations take one parameter object and return one result type (``operations.py``,
``overview.py``); the interfaces parse input into those and render the results.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from . import overview, paths
from .config import (WIPES_INDEX, NeedsConfirmation, Settings, SettingsError, default_data_dir, describe, made_data_dir,
                     parse_value)
from .errors import BadInput, ReadOnlyIndex, SenseTreeError, WriterBusy
from .answers import (FileDetail, FolderMode, Ignored, Listing, ModelsCatalogue, Phases, Preview, ProbeReport, Queue,
                      Requeued, RootAdded, RootRemoved, Roots, Sense, SettingChanged, SettingsView, Status, Summary,
                      TakenBack)
from .explorer import Explorer
from .ingest.choices import Choices
from .ingest.extract import is_archive
from .ingest.indexer import Indexer, IndexingPaused, Progress
from .ingest.on_demand import MeaningOnDemand
from .ingest.options import index_options
from .ingest.reuse import vector_reuse
from .ingest.scan import ScanReport, scan
from .ingest.sense import sense_writer
from .ingest.watcher import watch
if TYPE_CHECKING:
    from .ingest.distributed import RayPool
from .ingest.workers import Pool, WorkerPool
from .models.embeddings import Embedder, EmbeddingError, EndpointUnavailable, expected_identity, unknown_model
from .models.manager import Models
from .notices import Notices, meaning_sentence
from .filters import parse_filters
from .operations import (AddRootParams, BrowseParams, CompareParams, FileParams, FolderModeParams, IgnoreParams,
                         ModelsParams, PinParams, PreviewParams, ProbeParams, QueueParams, ReindexParams,
                         RemoveRootParams, RetryParams, RootsParams, SearchParams, SenseParams, SetParams,
                         SettingsParams, SimilarParams, StatusParams, SummariseParams, TreeParams, UnignoreParams)
from .reader import Reader, RootGuard, absent, on_disk, same_file
from .search.facts import coverage, list_copies, offline_notices, scope_problem
from .search.pipeline import QueryEmbeddingFailed, Retriever
from .search.intent import Understood, narrowed, understand
from .search.types import Filters, SearchResponse, SimilarResponse, TreeResponse
from .store.catalog import Catalog
from .store.chunks import ChunkStore
from .store.location import location
from .summaries import ChatModel, Summariser, open_chat_model
from .store.manifest import SEARCH_SETTINGS, Manifest
from .store.readonly import ReadOnlyStorage
from .store.storage import Storage, disk_full

__all__ = ["Engine", "SenseTreeError", "WriterBusy"]


def _rank_consistent(response: SearchResponse) -> None:
    """Scores that never rise down the list (design §2.7): without the reranker the fused order ranks
    and the chunk's cosine is shown, so ranks 1 to 3 read 65 %, 60 %, 62 %. A result shows at most the
    score of the one above it; every interface shows this one score."""
    for above, result in zip(response.results, response.results[1:]):
        result.score = min(result.score, above.score)


class Engine:
    def __init__(self, data_dir: Path | str | None = None, index: str | None = None):
        """The engine of ``data_dir``; with ``index`` (a folder or s3:// URI), a search node that only reads
        that index, keeping in ``data_dir`` its own token, models and endpoint keys."""
        self.data_dir = Path(data_dir).expanduser() if data_dir else default_data_dir()
        made_data_dir(self.data_dir)
        self.settings = Settings.load(self.data_dir)
        self.notices = Notices()
        if self.settings.problem:
            self.notices.add(self.settings.problem)
        self.models = Models(self.settings, self.data_dir / "models")
        s = self.settings
        if index is not None:
            where = location(index, self.data_dir / "lancedb", s["storage.endpoint"], s["storage.region"])
            self.storage: Storage | ReadOnlyStorage = ReadOnlyStorage(where, s["storage.refresh_seconds"],
                                                                      self._follow_manifest)
        else:
            where = location(s["storage.uri"], self.data_dir / "lancedb", s["storage.endpoint"], s["storage.region"])
            self.storage = Storage(self.data_dir, self.notices, where)
            self.storage.manifest = self._manifest
        self.choices = Choices(self.storage)
        self.pool: Pool = WorkerPool(low_priority=s["indexing.low_priority"])  # started on first use
        self._cluster: RayPool | None = None
        # a process that holds a chat model (the web app's assistant) lends it to summaries; else each opens one
        self.chat_models: Callable[[], AbstractContextManager[ChatModel]] | None = None

    def distribute(self, address: str) -> None:
        """Index on a Ray cluster from now on (``auto``, an address, or ``local`` to start one here): its
        workers prepare files and embed chunks, this process keeps the catalog and commits
        (``ingest/distributed.py``)."""
        from .ingest.distributed import RayPool

        self.pool.stop()
        self.pool = self._cluster = RayPool(address, self.settings, self.roots)

    @property
    def read_only(self) -> bool:
        return isinstance(self.storage, ReadOnlyStorage)

    def _manifest(self) -> Manifest:
        """What a search node needs besides the chunks (``store/manifest.py``)."""
        return Manifest(self.catalog.roots.all(), {key: self.settings[key] for key in SEARCH_SETTINGS},
                        self.catalog.meta("embedding_identity") or self.models.expected_identity())

    def _follow_manifest(self, manifest: Manifest) -> None:
        """A search node searches as the writer's settings say."""
        embedding = {k: v for k, v in manifest.settings.items() if k.startswith("embedding.")}
        if any(self.settings[k] != v for k, v in embedding.items()):
            self.models.forget_embedder()
        self.settings.values.update(manifest.settings)

    def close(self) -> None:
        self.pool.stop()
        if self._cluster is not None:
            self._cluster.shutdown()
        self.storage.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def catalog(self) -> Catalog:
        return self.storage.catalog  # a repair may replace it: never keep it across calls

    @property
    def store(self) -> ChunkStore:
        return self.storage.store

    @property
    def embedder(self) -> Embedder:
        return self.models.embedder

    @property
    def models_dir(self) -> Path:
        return self.models.models_dir

    # search -----------------------------------------------------------------------
    def retriever(self, literal: bool = False) -> Retriever:
        """The retriever on the settings; ``literal``: the words as typed, no typo corrected."""
        guard = RootGuard(self.roots())
        return Retriever(self.store, self._embed_query, self.models.reranker, self.store.upkeep.build_fts_index,
                         exists=lambda path: self._exists(path, guard),
                         fusion=self.settings["retrieval.fusion"], dense_model=self.models.expected_identity(),
                         spelling="off" if literal else self.settings["retrieval.spelling"],
                         on_demand=self._meaning_on_demand().vectors)

    def _meaning_on_demand(self) -> MeaningOnDemand:
        """A search's keyword candidates embedded now (``ingest/on_demand.py``), with the model the index was
        built with; their vectors kept when this process can take the writer lock, used once when not."""
        def writer() -> AbstractContextManager[None] | None:
            if self.read_only or self.storage.read_only or self.storage.full:
                return None
            return self.storage.writer()

        return MeaningOnDemand(lambda: self.catalog, self.store,
                               lambda: self.models.embedder_for(self.store.table.dimension),
                               self.settings["retrieval.on_demand_seconds"], writer)

    def _exists(self, path: str, guard: RootGuard) -> bool:
        """Whether a result may be shown: still there, and not now a link leading out of the roots (what
        it leads to was never indexed, or was indexed before the link was put there). A search node that
        does not mount a root trusts the index for it."""
        if self.read_only and not any(paths.is_under(path, root) and os.path.isdir(root) for root in guard.roots):
            return True
        return on_disk(path) and guard.allows(path)

    def _embed_query(self, text: str):
        stored = self.catalog.meta("embedding_identity")
        try:
            embedder = self.models.embedder
            if stored and stored != embedder.identity and self.store.table.count() > 0:
                raise QueryEmbeddingFailed(f"the index was built with {stored} but the settings name "
                                           f"{embedder.identity}; run `sensetree index` to rebuild it")
            return self.models.embedder_for(self.store.table.dimension).embed_query(text)
        except EmbeddingError as exc:
            raise QueryEmbeddingFailed(f"the query could not be embedded ({exc})") from exc
        except OSError as exc:  # the model could not be prepared (built, unpacked) on a full disk: keywords still work
            if not disk_full(exc):
                raise
            raise QueryEmbeddingFailed(f"the embedding model could not be prepared: the disk is full "
                                       f"({exc.filename or exc.strerror})") from exc

    def search(self, params: SearchParams) -> SearchResponse:
        """The one search every interface uses; ``hybrid``/``rerank`` override the settings per call.
        Unless ``literal``, filters said in the query's words (search/intent.py) narrow it, to every
        folder of a name said; whenever they change what the words alone find, the answer says so
        and how many files the words alone find (``literal_results``)."""
        filters = parse_filters(params.types, params.modified_after, params.modified_before)
        scope = params.scope or None
        understood = self._understood(params.query, params.literal, scope)
        if understood is None:
            return self._search(params, params.query, filters, scope)
        response = self._search(params, understood.query, narrowed(filters, understood.filters()),
                                understood.scope or scope)
        response.query, response.understood = params.query, understood.as_dict()
        if len(understood.folders) > 1:
            response.notices.append(f"{len(understood.folders)} folders are called {paths.name_of(understood.folder)}: "
                                    f"searched all of them ({', '.join(understood.folders)})")
        wider = max(params.limit, 10)
        plain = self._search(replace(params, limit=wider), params.query, filters, scope)
        found, shown = len(response.results), [r.path for r in response.results]
        if shown != [r.path for r in plain.results[:params.limit]]:  # the filters changed what is found
            response.understood["literal_results"] = len(plain.results)
            said = ", ".join(f'"{words}"' for words in understood.said)
            first = next((r for r in plain.results if r.path not in shown), None) if plain.results else None
            top = (f"; the words alone rank {paths.name_of(first.path)} first" if first is plain.results[0] and first
                   else "")
            response.notices.append(
                f"{said} read as {'filters' if len(understood.said) > 1 else 'a filter'}: {found} file"
                f"{'s' if found != 1 else ''} found; as search words {len(plain.results)}"
                f"{'+' if len(plain.results) == wider else ''}{top} (search again with --literal, or "
                "put those words in quotes)")
        return response

    def _search(self, params: SearchParams, query: str, filters: Filters | None,
                scope: str | list[str] | None) -> SearchResponse:
        hybrid = self.settings["retrieval.hybrid"] if params.hybrid is None else params.hybrid
        rerank = self.settings["retrieval.rerank"] if params.rerank is None else params.rerank
        scopes = scope if isinstance(scope, list) else [scope]  # several: every folder of a name said
        problem = self.storage.recovering(lambda: next(filter(None, map(self._scope_problem, scopes)), None))
        if problem:
            return SearchResponse(query=query, notices=[*self.notices.take(), problem])
        collapse = self.settings["retrieval.collapse_duplicates"]
        response = self.storage.recovering(lambda: self.retriever(params.literal).search(
            query, scope, params.limit, hybrid=hybrid, rerank_on=rerank, filters=filters, collapse=collapse))
        self._add_catalog_facts(response, scope if not isinstance(scope, list) else None, collapse)
        _rank_consistent(response)
        if rerank and self.models.reranker_problem and self._first_time("reranker", self.settings["retrieval.reranker_model"]):
            first = self.models.reranker_problem.split(". ")[0].rstrip(".")
            response.notices.append(f"reranking skipped: {first} (said once; `sensetree status` says how to enable it)")
        return response

    def _understood(self, query: str, literal: bool, scope: str | None) -> Understood | None:
        if literal:
            return None
        return understand(query, now=datetime.now(), folders=lambda name: self._folders_named(name, scope))

    def _folders_named(self, name: str, scope: str | None) -> list[str]:
        """The folders under the roots (and the scope) called ``name``, whatever its case, shallowest first."""
        found = self.storage.recovering(lambda: self.catalog.files.folders_named(name))
        return sorted((f for f in found if scope is None or paths.is_under(f, scope)),
                      key=lambda f: (f.count("/") + f.count("\\"), f))  # Windows paths count their backslashes

    def _add_catalog_facts(self, response: SearchResponse, scope: str | None, collapse: bool) -> None:
        """What the catalog adds to ranked files: every place a result's content sits, the repairs made
        on the way, the roots that are offline, and how much of the scope has vectors."""
        if collapse:
            list_copies(self.catalog, response)
        self._bring_forward([r.path for r in response.results if r.signals is None or r.signals["cosine"] is None
                             or r.signals["meaning"] == "on demand"])
        response.notices[:0] = self.notices.take()
        response.notices += [n for n in offline_notices(self.catalog, scope) if n not in response.notices]
        response.coverage = coverage(self.catalog, scope)
        if response.coverage:
            response.meaning = meaning_sentence(*response.coverage, overview.phases(self.catalog).semantic_eta_s)

    def similar(self, params: SimilarParams) -> SimilarResponse:
        """Files most like one file (``sensetree similar``), from its stored vectors; its identical
        copies and its versions (most of the wording shared) apart, the versions with their dates."""
        path = self.reader().check(params.path)
        name = paths.name_of(path)
        if not on_disk(path):  # deleted since it was indexed: its vectors stay until the next scan
            raise absent(path)
        problem = self.storage.recovering(lambda: self._scope_problem(params.scope))
        if problem:
            return SimilarResponse(query=path, notices=[*self.notices.take(), problem])
        row = self.catalog.files.get(path)
        if row is None or not row.chunks:
            raise BadInput(f"{name} is not in the index (yet): `sensetree queue` says why")
        vectors = self.storage.recovering(lambda: self.store.queries.vectors_of(path))
        if not len(vectors):
            return SimilarResponse(query=path, notices=[
                f"{name} is waiting for its vectors: files like it are found once it has them "
                "(`sensetree status` shows how far the semantic phase is)"])
        copies = frozenset(copy for copy in self.catalog.files.with_hashes([row.content_hash]).get(row.content_hash, [])
                           if copy != path) if row.content_hash else frozenset()
        collapse = self.settings["retrieval.collapse_duplicates"]
        response = self.storage.recovering(lambda: self.retriever().similar(path, vectors, params.scope, params.limit,
                                                                            collapse, copies))
        self._add_catalog_facts(response, params.scope, collapse)
        dated = {v.path: self.catalog.files.get(v.path) for v in response.versions}
        response.versions = sorted((replace(v, mtime=dated[v.path].mtime if dated[v.path] else None)
                                    for v in response.versions), key=lambda v: -(v.mtime or 0.0))
        return response

    def _scope_problem(self, scope: str | None) -> str | None:
        return scope_problem(scope, self.roots(), mounted=not self.read_only)

    def _first_time(self, topic: str, about: str) -> bool:
        try:
            return self.catalog.first_time(topic, about)
        except sqlite3.OperationalError:  # a busy or read-only catalog: better said twice than never
            return True

    def tree(self, params: TreeParams) -> TreeResponse:
        """The meaning tree (``sensetree tree``), with how much of the scope it covers yet; filters said
        in the query's words narrow it as they narrow a search."""
        filters = parse_filters(params.types, params.modified_after, params.modified_before)
        query, scope = params.query, params.scope or None
        understood = self._understood(params.query, params.literal, scope)
        if understood:
            query, scope, filters = understood.query, understood.scope or scope, narrowed(filters, understood.filters())
        scopes = scope if isinstance(scope, list) else [scope]  # several: every folder of a name said
        problem = self.storage.recovering(lambda: next(filter(None, map(self._scope_problem, scopes)), None))
        if problem:
            return TreeResponse(params.query, None, [*self.notices.take(), problem])
        node, notices = self.storage.recovering(lambda: self.retriever().tree(query, scope, self.roots(), params.limit,
                                                                              filters))
        scope = scope if not isinstance(scope, list) else None  # what the coverage and offline roots are told of
        covered = coverage(self.catalog, scope)
        if covered:
            files, embedded = covered
            notices.append(f"the meaning tree covers {embedded:,} of {files:,} files ({embedded / files:.0%}); the "
                           "others are not embedded yet (search finds them by keyword meanwhile)")
        notices[:0] = self.notices.take()
        return TreeResponse(params.query, node, [*notices, *(n for n in offline_notices(self.catalog, scope)
                                                             if n not in notices)],
                            understood.as_dict() if understood else None)

    def prioritize(self, path: str) -> None:
        """The user opened this file: index it next."""
        self._bring_forward([path])

    def _bring_forward(self, found: list[str]) -> None:
        """Files someone looks at (opened, previewed, returned by a search) go first in the queue of the phase
        they wait for; a file already indexed is left as it is."""
        if self.read_only:
            return
        try:
            for path in found:
                self.catalog.states.prioritize(paths.normalize(path))
        except sqlite3.OperationalError:  # a busy or read-only catalog: the order is a courtesy
            pass

    def chunk_text(self, path: str, chunk_index: int) -> str | None:
        """The stored text of one chunk (a result's whole passage; its snippet is only a part)."""
        return self.store.queries.chunk_text(path, chunk_index)

    def browse(self, params: BrowseParams) -> Listing:
        """A folder's entries with their index statuses (``sensetree browse``, the explorer, MCP)."""
        return self.explorer().listing(params.path)

    def file_detail(self, params: FileParams) -> FileDetail:
        """Everything the web app's detail panel shows about one file or folder."""
        return FileDetail(**self.explorer().detail(params.path))

    def preview(self, params: PreviewParams) -> Preview:
        """A file's text with where one chunk (and the range ``mark``) sits in it; the file is indexed next:
        someone is looking at it."""
        start, _, end = (params.mark or "").partition(",")
        shown = self.explorer().preview(params.path, params.chunk, (int(start), int(end)) if params.mark else None)
        self.prioritize(shown["path"])
        return Preview(**shown)

    def page_image(self, path: str, page: int) -> bytes:
        """Page ``page`` of a PDF inside the roots as a PNG: the preview shows a cited sentence where it is printed."""
        return self.explorer().page_image(path, page)
    def summarise(self, params: SummariseParams, on_progress: Callable[[str], None] | None = None,
                  model: ChatModel | None = None) -> Summary:
        """A whole file, or each file of a small folder, summarised part by part on the chat model
        (``sensetree summarise``, ``ask --file``): ``summaries/work.py``. ``on_progress`` hears each step."""
        path = self.readable(params.path)
        with self._chat_model(model) as chat:
            work = Summariser(self.reader(), chat, on_progress, self._stored_sense)
            return work.folder(path, params.question) if os.path.isdir(path) else work.file(path, params.question)

    def compare(self, params: CompareParams, on_progress: Callable[[str], None] | None = None,
                model: ChatModel | None = None) -> Summary:
        """What differs between two files, from the notes on each and the passages that changed."""
        first, second = self.readable(params.path, folder=False), self.readable(params.other, folder=False)
        if same_file(first, second):
            shown = paths.name_of(first) if first == second else f"{paths.name_of(first)} and {paths.name_of(second)}"
            raise BadInput(f"{shown}: the same file twice (a link, or the same path): name two files to compare")
        with self._chat_model(model) as chat:
            return Summariser(self.reader(), chat, on_progress).compare(first, second, params.question)

    def readable(self, path: str, folder: bool = True) -> str:
        """The checked path of a file (or a folder) to read, before any model starts."""
        from .reader import archive_of

        path = self.reader().check(path)
        if os.path.isdir(path) and folder:
            return path
        if not os.path.isfile(path) and archive_of(path) is None:
            raise absent(path, why="" if folder else "compare takes two files")
        return path

    def _chat_model(self, model: ChatModel | None) -> AbstractContextManager[ChatModel]:
        if model is not None:
            return nullcontext(model)
        if self.chat_models is not None:
            return self.chat_models()
        return open_chat_model(self.settings, self.models_dir)

    def _stored_sense(self, path: str) -> str | None:
        """The summary indexing wrote for a file (by the model, or pinned by the user), if any."""
        row = self.choices.sense_of(path)
        return row.text if row and row.source in ("llm", "pinned") and row.text.strip() else None

    def explorer(self) -> Explorer:
        """Listings with index statuses, a file's detail, its text at a chunk (the web app, MCP)."""
        return Explorer(self.reader(), self.catalog, self.store)

    def reader(self, scope: str | None = None) -> Reader:
        """Reads files for people and models, never outside the roots (or outside ``scope``, a folder in them)."""
        return Reader([scope] if scope else self.roots(), self.store, index_options(self.settings).max_file_bytes,
                      self.ignored())

    # what the engine says about itself ----------------------------------------------
    def status(self, params: StatusParams = StatusParams()) -> Status:
        """Roots, counts per status, the two progress figures, the models in use, the index size, notices."""
        return self.storage.recovering(lambda: overview.status(
            self.data_dir, self.roots(), self.catalog, self.store, self.storage.size_bytes(), self.settings,
            self.models, self.notices))

    def queue(self, params: QueueParams = QueueParams()) -> Queue:
        """Failed files with their errors, then what waits for each phase (the first ``limit`` of each)."""
        return overview.queue(self.catalog, self.ignored(), params.limit)

    def phases(self) -> Phases:
        return overview.phases(self.catalog)

    def models_catalogue(self, params: ModelsParams) -> ModelsCatalogue:
        return ModelsCatalogue(**self.models.catalogue())

    def pull_reranker(self, name: str, progress: Callable[[str, int, int], None]) -> Path:
        return self.models.pull_reranker(name, progress)

    def probe(self, params: ProbeParams) -> ProbeReport:
        """Try an endpoint before saving it (the settings page's "test" buttons)."""
        return self.models.probe(params.role, params.base_url, params.model, params.api_key)

    # settings ---------------------------------------------------------------------
    def settings_view(self, params: SettingsParams) -> SettingsView:
        """Every setting with its value, default, help and type, and the models per role (the web app's
        settings panel, ``sensetree config get``)."""
        return SettingsView(describe(self.settings), self.models.by_role())

    def change_setting(self, params: SetParams) -> SettingChanged:
        """``set_setting`` with the value read by the setting's type (JSON, or text as typed at a terminal)."""
        value = params.value if isinstance(params.value, str) else json.dumps(params.value)
        parsed = parse_value(params.key, value)
        wipes = self.setting_wipes(params.key, parsed)
        if wipes and not params.confirm:
            raise NeedsConfirmation(f"changing {params.key} to {parsed!r}: {wipes}. Nothing was changed; confirm to go "
                                    f"on (`sensetree config set {params.key} VALUE --yes`, or \"confirm\": true in "
                                    "PUT /api/settings)")
        notice = self.set_setting(params.key, parsed)
        return SettingChanged(params.key, self.settings[params.key], notice)

    def setting_wipes(self, key: str, value: Any) -> str | None:
        """What setting ``key`` to ``value`` would wipe, in words (a change of embedding model on an index
        that holds files); None when it wipes nothing. ``SettingsError`` for a model that does not exist."""
        if key not in WIPES_INDEX:
            return None
        model = value if key == "embedding.model" else self.settings["embedding.model"]
        base_url = value if key == "embedding.base_url" else self.settings["embedding.base_url"]
        problem = unknown_model(model, base_url)
        if problem:
            raise SettingsError(f"{problem}. Nothing was changed")
        return self.storage.would_wipe(expected_identity(model, base_url))

    def _no_wipe_on_a_guess(self) -> None:
        """An unreadable settings.toml stands in defaults: they may not wipe the index made with the real ones."""
        if self.settings.unreadable and self.storage.would_wipe(self.models.expected_identity()):
            raise SettingsError(f"{self.settings.problem}. Fix that line (or `sensetree config set` a key to "
                                "replace the file) before indexing: with the defaults the index would be wiped")

    def set_setting(self, key: str, value: Any) -> str | None:
        """Change one setting; a change of embedding model wipes the vectors at once and says so."""
        if self.read_only and key in SEARCH_SETTINGS:
            raise ReadOnlyIndex(f"{key} is set where the index is written; this node searches as the writer says")
        self.setting_wipes(key, value)  # an unknown model is refused before anything is written or wiped
        if self.settings.unreadable and key not in WIPES_INDEX:
            self._no_wipe_on_a_guess()
        before = self.models.expected_identity()
        self.settings.set(key, value)
        if key.startswith(("embedding.", "compute.")):
            self.models.forget_embedder()
        if self.models.expected_identity() != before:
            return self.storage.match_model(self.models.expected_identity())
        return None

    # what the user chose to index (ingest/choices.py) -------------------------------------
    def roots(self) -> list[str]:
        return self.catalog.roots.all()

    def _choose(self) -> Choices:
        """The user's choices, which a search node refuses: they are made where the index is written."""
        if self.read_only:
            raise ReadOnlyIndex(f"this node only searches the index at {self.storage.location}; roots, retries and "
                                "the other choices are made where it is indexed")
        return self.choices

    def list_roots(self, params: RootsParams) -> Roots:
        return Roots(self.roots())

    def add_root(self, folder: str) -> str:
        return self._choose().add_root(folder)

    def add(self, params: AddRootParams) -> RootAdded:
        return RootAdded(self.add_root(params.path))

    def remove_root(self, folder: str) -> int:
        return self._choose().remove_root(folder)

    def remove(self, params: RemoveRootParams) -> RootRemoved:
        return RootRemoved(self.remove_root(params.path))

    def folder_mode(self, params: FolderModeParams) -> FolderMode:
        return FolderMode(self._choose().set_block(params.path, params.mode), params.mode)

    def pin(self, params: PinParams) -> Sense:
        """Pin a file's sense (a file inside the roots); the next indexing run re-indexes the file with it."""
        self.reader().check(params.path)
        self._choose().pin_sense(params.path, params.sense)
        return self.sense(SenseParams(params.path))

    def sense(self, params: SenseParams) -> Sense:
        stored = self.choices.sense_of(params.path)
        return Sense(paths.normalize(params.path), stored.text if stored else None, stored.source if stored else None,
                     bool(stored and stored.pinned))

    def retry(self, params: RetryParams) -> Requeued:
        return Requeued(self._choose().retry(params.path))

    def ignore(self, params: IgnoreParams) -> Ignored:
        return Ignored(self._choose().ignore(params.path))

    def unignore(self, params: UnignoreParams) -> TakenBack:
        return TakenBack(self._choose().unignore(params.path))

    def ignored(self) -> list[str]:
        return self.choices.ignored()

    def reindex(self, params: ReindexParams) -> Requeued:
        return Requeued(self._choose().reindex(params.path))

    # indexing ---------------------------------------------------------------------
    @contextmanager
    def writer(self, wait: float = 0) -> Iterator[None]:
        with self.storage.writer(wait):
            yield

    def scan(self) -> ScanReport:
        report = scan(self.catalog, self.store, str(self.data_dir))
        told = self.notices.all()  # a root offline for days is said once, not at every watch round
        self.notices.add_all(n for n in offline_notices(self.catalog) if n not in told)
        self.notices.add_all(f"{root} is back: its files were kept, and only what changed is indexed again"
                             for root in report.back)
        return report

    def index(self, on_update: Callable[[Progress], None] | None = None, stop: threading.Event | None = None,
              max_endpoint_wait: float | None = None, wait_for_lock: float = 0,
              interrupt: threading.Event | None = None) -> Progress:
        """Scan every root and index what is queued (keyword first, then vectors), under the writer lock.

        Returns within moments of ``stop`` being set, and early when ``interrupt`` is (the disk changed).
        A damaged catalog or vector table met on the way is repaired, and the run made once more.
        """
        return self.storage.recovering(lambda: self._index_once(on_update, stop or threading.Event(),
                                                                max_endpoint_wait, wait_for_lock, interrupt))

    def _index_once(self, on_update: Callable[[Progress], None] | None, stop: threading.Event,
                    max_endpoint_wait: float | None, wait_for_lock: float,
                    interrupt: threading.Event | None) -> Progress:
        with self.writer(wait_for_lock):
            self.storage.reconcile_if_behind()
            self.storage.follow_location()
            self.store.table.reopen()  # the last writer may have been another process that dropped the table
            self.storage.recovering(self.storage.check_vectors)  # or someone deleted it
            self._no_wipe_on_a_guess()
            self.storage.match_model(self.models.expected_identity())
            self.scan()
            self.storage.reread_archives_once(is_archive)  # members now follow the disk's rules (issue 33)
            options = index_options(self.settings)
            if max_endpoint_wait is not None:
                options.max_endpoint_wait = max_endpoint_wait
            with vector_reuse(self.data_dir, self.settings["indexing.reuse_vectors"], self.notices.add) as reuse:
                indexer = Indexer(self.catalog, self.store, self._indexing_embedder, sense_writer(self.settings),
                                  options, self.pool, reuse)
                progress = indexer.run(Progress(), on_update=on_update, stop=stop, interrupt=interrupt)
            if not stop.is_set():
                self.store.upkeep.optimize()
            return progress

    def _indexing_embedder(self) -> Embedder:
        """The embedder for a run: a down endpoint is worth waiting for; any other problem is the user's to fix."""
        try:
            if self._cluster is not None:
                embedder = self._cluster.embedder(self.store.table.dimension)
            else:
                embedder = self.models.embedder_for(self.store.table.dimension)
        except EndpointUnavailable:
            raise
        except EmbeddingError as exc:
            raise SenseTreeError(f"the embedding model is not available ({exc}); files stay pending") from exc
        self.catalog.set_meta("embedding_identity", embedder.identity)
        return embedder

    def watch(self, on_update: Callable[[Progress], None] | None = None, stop: threading.Event | None = None,
              on_round: Callable[[Progress], None] | None = None) -> None:
        """Index, then keep indexing whatever changes under the roots until ``stop`` is set.

        The watcher starts before the first round, so a change made during it is not missed. A
        change ends the semantic work of a round early: the next round scans, stores the new text
        (keyword first), then goes on embedding. Each round waits as long as it takes for a down
        embedding endpoint to come back.
        """
        stop = stop or threading.Event()
        changed = threading.Event()

        def index_round() -> None:
            changed.clear()
            try:
                progress = self.index(on_update, stop, max_endpoint_wait=float("inf"), interrupt=changed)
            except IndexingPaused:
                if stop.is_set():
                    return
                raise
            if on_round:
                on_round(progress)

        with self.writer():
            watch(self.roots(), str(self.data_dir), index_round, stop, first_round=True, changed=changed,
                  polling=self.settings["indexing.watch_polling"])
