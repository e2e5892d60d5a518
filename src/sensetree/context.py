"""What every handler works with: one data dir's settings, storage, models, notices and choices.

``Context`` owns a data dir: ``settings.toml``, the storage (SQLite catalog + LanceDB chunks, repaired
when damaged: ``store/storage.py``) and the models (loaded on first use: ``models/manager.py``).
Only one process writes to a data dir at a time (a lock file; on a bucket, also a lease);
any number may search, here or on other machines: ``index=URI`` makes a search node over an index it
does not write (``store/readonly.py``). The handlers (``handlers/``) take it and answer one operation
each; ``Engine`` (``engine.py``) is this context with the handlers bound and the indexing runs.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from . import paths
from .config import (
    WIPES_INDEX,
    NeedsConfirmation,
    Settings,
    SettingsError,
    default_data_dir,
    made_data_dir,
    place,
)
from .errors import DataDirUnusable, ReadOnlyIndex
from .ingest.choices import Choices
from .ingest.on_demand import MeaningOnDemand
from .ingest.options import index_options
from .ingest.scan import ScanReport, scan
from .ingest.workers import Pool, WorkerPool
from .models.embeddings import Embedder, EmbeddingError, expected_identity, unknown_model
from .models.manager import Models
from .notices import Notices
from .reader import Reader, RootGuard, on_disk
from .search.facts import offline_notices
from .search.pipeline import QueryEmbeddingFailed, Retriever
from .store.catalog import Catalog
from .store.chunks import ChunkStore
from .store.location import location
from .store.manifest import SEARCH_SETTINGS, Manifest
from .store.readonly import ReadOnlyStorage
from .store.storage import Storage, disk_full
from .summaries import ChatModel

if TYPE_CHECKING:
    from .ingest.distributed import RayPool

log = logging.getLogger(__name__)


class Context:
    def __init__(self, data_dir: Path | str | None = None, index: str | None = None):
        """The context of ``data_dir``; with ``index`` (a folder or s3:// URI), a search node that only reads
        that index, keeping in ``data_dir`` its own token, models and endpoint keys."""
        self.data_dir = Path(data_dir).expanduser() if data_dir else default_data_dir()
        made_data_dir(self.data_dir)
        self.settings = Settings.load(self.data_dir)
        self.notices = Notices()
        if self.settings.problem:
            self.notices.add(self.settings.problem)
        self.models = Models(self.settings, self.data_dir / "models", self._kept_model)
        self._held_told: set[str] = set()
        s = self.settings
        self.storage_problem: str | None = None  # why the index storage.uri names cannot be opened
        self._storage: Storage | ReadOnlyStorage | None
        if index is not None:
            where = location(index, self.data_dir / "lancedb", s["storage.endpoint"], s["storage.region"])
            self._storage = ReadOnlyStorage(where, s["storage.refresh_seconds"], self._follow_manifest)
        else:
            self._storage = self._named_storage()
        self._choices = Choices(self._storage) if self._storage is not None else None
        self.pool: Pool = WorkerPool(low_priority=s["indexing.low_priority"])  # started on first use
        self.cluster: RayPool | None = None
        # a process that holds a chat model (the web app's assistant) lends it to summaries; else each opens one
        self.chat_models: Callable[[], AbstractContextManager[ChatModel]] | None = None
        self.on_demand = self._meaning_on_demand()

    def _named_storage(self) -> Storage | None:
        """The storage where ``storage.uri`` says (a folder read against the data dir). One it names that cannot
        be opened (a bucket without credentials, a folder that cannot be made) leaves the settings usable, so
        that `config get` and `config set` still work to undo it; every other use of the index says why."""
        s = self.settings
        uri = place(s["storage.uri"], self.data_dir)
        try:
            where = location(uri, self.data_dir / "lancedb", s["storage.endpoint"], s["storage.region"])
            storage = Storage(self.data_dir, self.notices, where)
        except Exception as exc:  # whatever the place's own client raises (botocore's NoCredentialsError...)
            if not uri:
                raise
            self.storage_problem = (
                f"the index at storage.uri {s['storage.uri']!r} cannot be opened ({type(exc).__name__}: {exc}); "
                "fix that, or `sensetree config set storage.uri ''` for the data dir's own index"
            )
            self.notices.add(self.storage_problem)
            return None
        storage.manifest = self._manifest
        return storage

    @property
    def storage(self) -> Storage | ReadOnlyStorage:
        if self._storage is None:
            raise DataDirUnusable(self.storage_problem or "the index is not open")
        return self._storage

    @property
    def choices(self) -> Choices:
        if self._choices is None:
            raise DataDirUnusable(self.storage_problem or "the index is not open")
        return self._choices

    @property
    def read_only(self) -> bool:
        return isinstance(self._storage, ReadOnlyStorage)

    def _manifest(self) -> Manifest:
        """What a search node needs besides the chunks (``store/manifest.py``)."""
        return Manifest(
            self.catalog.roots.all(),
            {key: self.settings[key] for key in SEARCH_SETTINGS},
            self.catalog.meta("embedding_identity") or self.models.expected_identity(),
        )

    def _follow_manifest(self, manifest: Manifest) -> None:
        """A search node searches as the writer's settings say."""
        embedding = {k: v for k, v in manifest.settings.items() if k.startswith("embedding.")}
        if any(self.settings[k] != v for k, v in embedding.items()):
            self.models.forget_embedder()
        self.settings.values.update(manifest.settings)

    def close(self) -> None:
        self.on_demand.close()
        self.pool.stop()
        if self.cluster is not None:
            self.cluster.shutdown()
        if self._storage is not None:
            self._storage.close()

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
        return Retriever(
            self.store,
            self._embed_query,
            self.models.reranker,
            self.store.upkeep.build_fts_index,
            exists=lambda path: self._exists(path, guard),
            fusion=self.settings["retrieval.fusion"],
            dense_model=self._kept_model() or self.models.expected_identity(),
            spelling="off" if literal else self.settings["retrieval.spelling"],
            on_demand=self.on_demand.vectors,
            names=lambda fragments: self.catalog.files.names_like(fragments),
        )

    def _meaning_on_demand(self) -> MeaningOnDemand:
        """A search's keyword candidates embedded now (``ingest/on_demand.py``), with the model the index was
        built with; their vectors kept when this process can take the writer lock, used once when not. One per
        context: its searches share the model, and ``close`` waits for a late write."""

        def writer() -> AbstractContextManager[None] | None:
            if not isinstance(self.storage, Storage) or self.storage.read_only or self.storage.full:
                return None
            return self.storage.writer()

        return MeaningOnDemand(
            lambda: self.catalog,
            lambda: self.store,
            lambda: self.models.embedder_for(self.store.table.dimension),
            lambda: self.settings["retrieval.on_demand_seconds"],
            writer,
        )

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
                raise QueryEmbeddingFailed(
                    f"the index was built with {stored} but the settings name "
                    f"{embedder.identity}; run `sensetree index` to rebuild it"
                )
            return self.models.embedder_for(self.store.table.dimension).embed_query(text)
        except EmbeddingError as exc:
            raise QueryEmbeddingFailed(f"the query could not be embedded ({exc})") from exc
        except OSError as exc:  # the model could not be prepared (built, unpacked) on a full disk: keywords still work
            if not disk_full(exc):
                raise
            raise QueryEmbeddingFailed(
                f"the embedding model could not be prepared: the disk is full ({exc.filename or exc.strerror})"
            ) from exc

    def reader(self, scope: str | None = None) -> Reader:
        """Reads files for people and models, never outside the roots (or outside ``scope``, a folder in them)."""
        return Reader(
            [scope] if scope else self.roots(), self.store, index_options(self.settings).max_file_bytes, self.ignored()
        )

    def bring_forward(self, found: list[str]) -> None:
        """Files someone looks at (opened, previewed, returned by a search) go first in the queue of the phase
        they wait for; a file already indexed is left as it is."""
        if self.read_only:
            return
        try:
            self.catalog.states.prioritize(*(paths.normalize(path) for path in found))
        except sqlite3.OperationalError:  # a busy or read-only catalog: the order is a courtesy
            pass

    # the one gate in front of every wipe (design §8) -------------------------------------
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
        if not isinstance(self.storage, Storage):  # a search node wipes nothing: it follows the writer
            return None
        return self.storage.would_wipe(expected_identity(model, base_url))

    def _model_change_wipes(self) -> str | None:
        """What bringing the index in line with the settings' embedding model would wipe, in words; None when
        they name the model it was made with, or it holds nothing (a search node follows its writer)."""
        if not isinstance(self._storage, Storage):
            return None
        wanted = self.models.expected_identity()
        wipes = self._storage.would_wipe(wanted)
        return f"the settings name the embedding model {wanted}; changing to it, {wipes}" if wipes else None

    def unconfirmed_change(self) -> str | None:
        """A change of the settings that would wipe the index and is not confirmed, whichever door it came
        through (settings.toml edited by hand, defaults standing in for an unreadable one): what it would wipe,
        that nothing was, and how to go on, as ``status`` says it; None when there is none. Until it is
        confirmed the index keeps its model (``Models``: searches and indexing go on with it)."""
        wipes = self._model_change_wipes()
        if wipes is None:
            return None
        kept = self.catalog.meta("embedding_identity") or "its own model"
        if self.settings.unreadable:
            return f"{self.settings.problem}. With the defaults {wipes}: nothing was wiped, and {kept} is kept until that line is fixed"
        return (
            f"{wipes}. Nothing was wiped: searches and indexing go on with {kept} until the change is confirmed "
            f"(`sensetree config set embedding.model {self.settings['embedding.model']} --yes`), or the setting set back"
        )

    def _kept_model(self) -> str | None:
        """The identity of the model the index was made with, while an unconfirmed change names another."""
        if self._model_change_wipes() is None:
            return None
        return self.catalog.meta("embedding_identity") or "an unrecorded model"

    def refuse_unconfirmed_change(self, confirm: bool) -> None:
        """The gate, for a command that can ask: ``NeedsConfirmation`` saying what the settings' model would wipe
        unless ``confirm``; a ``SettingsError`` whatever ``confirm`` when the settings are defaults standing in
        for an unreadable settings.toml (they may not wipe the index made with the real ones)."""
        wipes = self._model_change_wipes()
        if wipes is None:
            return
        if self.settings.unreadable:
            raise SettingsError(
                f"{self.settings.problem}. Fix that line (or `sensetree config set` a key to replace the file) "
                f"before indexing: with the defaults {wipes}"
            )
        if not confirm:
            raise NeedsConfirmation(f"{wipes}. Nothing was changed; confirm to go on (`sensetree index --yes`)")

    def refuse_wipe_on_a_guess(self) -> None:
        """An unreadable settings.toml stands in defaults: they may not wipe the index made with the real ones."""
        if self.settings.unreadable:
            self.refuse_unconfirmed_change(confirm=True)

    def follow_model(self, confirm: bool = False) -> str | None:
        """The gate, for every process: the index brought in line with the settings' embedding model when that
        wipes nothing or is confirmed (never on defaults standing in for unreadable settings), returning the
        wipe's notice if one was made. An unconfirmed change is held: the index and its model are kept, and the
        log says why once (``status`` says it for as long as it is held)."""
        storage = self.writable()
        held = self.unconfirmed_change()
        if held and (not confirm or self.settings.unreadable):
            if held not in self._held_told:
                self._held_told.add(held)
                log.warning("%s", held)
            return None
        notice = storage.match_model(self.models.expected_identity())
        if notice:
            self.models.forget_embedder()  # the model kept in force until now gives way
        return notice

    # what the user chose to index (ingest/choices.py) -------------------------------------
    def roots(self) -> list[str]:
        return self.catalog.roots.all()

    def ignored(self) -> list[str]:
        return self.choices.ignored()

    def writable(self) -> Storage:
        """The storage, which a search node refuses to change (``ReadOnlyIndex``)."""
        if not isinstance(self.storage, Storage):
            raise ReadOnlyIndex(
                f"this node only searches the index at {self.storage.location}; it is changed where it is indexed"
            )
        return self.storage

    def choose(self) -> Choices:
        """The user's choices, which a search node refuses: they are made where the index is written."""
        if self.read_only:
            raise ReadOnlyIndex(
                f"this node only searches the index at {self.storage.location}; roots, retries and "
                "the other choices are made where it is indexed"
            )
        return self.choices

    # indexing ---------------------------------------------------------------------
    @contextmanager
    def writer(self, wait: float = 0) -> Iterator[None]:
        with self.storage.writer(wait):
            yield

    def scan(self) -> ScanReport:
        report = scan(self.catalog, self.store, str(self.data_dir))
        told = self.notices.all()  # a root offline for days is said once, not at every watch round
        self.notices.add_all(n for n in offline_notices(self.catalog) if n not in told)
        self.notices.add_all(
            f"{root} is back: its files were kept, and only what changed is indexed again" for root in report.back
        )
        return report
