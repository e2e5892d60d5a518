"""What every handler works with: one data dir's settings, storage, models, notices and choices.

``Context`` owns a data dir: ``settings.toml``, the storage (SQLite catalog + LanceDB chunks, repaired
when damaged: ``store/storage.py``) and the models (loaded on first use: ``models/manager.py``).
Only one process writes to a data dir at a time (a lock file; on a bucket, also a lease);
any number may search, here or on other machines: ``index=URI`` makes a search node over an index it
does not write (``store/readonly.py``). The handlers (``handlers/``) take it and answer one operation
each; ``Engine`` (``engine.py``) is this context with the handlers bound and the indexing runs.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from . import paths
from .config import WIPES_INDEX, Settings, SettingsError, default_data_dir, made_data_dir
from .errors import ReadOnlyIndex
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
        self.models = Models(self.settings, self.data_dir / "models")
        s = self.settings
        if index is not None:
            where = location(index, self.data_dir / "lancedb", s["storage.endpoint"], s["storage.region"])
            self.storage: Storage | ReadOnlyStorage = ReadOnlyStorage(
                where, s["storage.refresh_seconds"], self._follow_manifest
            )
        else:
            where = location(s["storage.uri"], self.data_dir / "lancedb", s["storage.endpoint"], s["storage.region"])
            self.storage = Storage(self.data_dir, self.notices, where)
            self.storage.manifest = self._manifest
        self.choices = Choices(self.storage)
        self.pool: Pool = WorkerPool(low_priority=s["indexing.low_priority"])  # started on first use
        self.cluster: RayPool | None = None
        # a process that holds a chat model (the web app's assistant) lends it to summaries; else each opens one
        self.chat_models: Callable[[], AbstractContextManager[ChatModel]] | None = None

    @property
    def read_only(self) -> bool:
        return isinstance(self.storage, ReadOnlyStorage)

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
        self.pool.stop()
        if self.cluster is not None:
            self.cluster.shutdown()
        self.storage.close()

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
            dense_model=self.models.expected_identity(),
            spelling="off" if literal else self.settings["retrieval.spelling"],
            on_demand=self._meaning_on_demand().vectors,
            names=lambda fragments: self.catalog.files.names_like(fragments),
        )

    def _meaning_on_demand(self) -> MeaningOnDemand:
        """A search's keyword candidates embedded now (``ingest/on_demand.py``), with the model the index was
        built with; their vectors kept when this process can take the writer lock, used once when not."""

        def writer() -> AbstractContextManager[None] | None:
            if not isinstance(self.storage, Storage) or self.storage.read_only or self.storage.full:
                return None
            return self.storage.writer()

        return MeaningOnDemand(
            lambda: self.catalog,
            self.store,
            lambda: self.models.embedder_for(self.store.table.dimension),
            self.settings["retrieval.on_demand_seconds"],
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

    # settings that would wipe the index ---------------------------------------------------
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

    def refuse_wipe_on_a_guess(self) -> None:
        """An unreadable settings.toml stands in defaults: they may not wipe the index made with the real ones."""
        if (
            self.settings.unreadable
            and isinstance(self.storage, Storage)
            and self.storage.would_wipe(self.models.expected_identity())
        ):
            raise SettingsError(
                f"{self.settings.problem}. Fix that line (or `sensetree config set` a key to "
                "replace the file) before indexing: with the defaults the index would be wiped"
            )

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
