"""The connection to the ``chunks`` table, shared by the store's parts (``chunks.py``): the open handle,
its caches, and the reads that survive another process dropping the table."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypeVar

import numpy as np
import pyarrow as pa

from ..paths import sql_literal
from .location import LocalLocation, Location

if TYPE_CHECKING:
    from lancedb.table import Table

T = TypeVar("T")

TABLE = "chunks"
FTS_COLUMN = "terms"  # what the keyword index serves: the stored text analysed in Python (store/terms.py)
# The stored text itself is indexed too, as written: LanceDB splits it into words, folds case and accents and
# keeps their positions (phrases); nothing is stemmed.
EXACT_COLUMN = "text"
NAMES_COLUMN = "names"  # a file's name and its folders' names, on its first chunk only
KEYWORD_COLUMNS = (FTS_COLUMN, EXACT_COLUMN, NAMES_COLUMN)  # each with a keyword index of its own
ANALYSIS_FIELDS = (
    pa.field("lang", pa.string()),
    pa.field(FTS_COLUMN, pa.string()),
    pa.field(NAMES_COLUMN, pa.string()),
)


@dataclass(frozen=True)
class ChunkRow:
    path: str
    chunk_index: int
    text: str
    vector: np.ndarray | None  # None until the semantic phase embeds the chunk
    content_hash: str
    mtime: float
    location: str | None = None  # JSON list of the places it covers: [{"page": 3}, {"page": 4}]
    doc_type: str = ""  # the file's, for filters (pdf, docx, markdown...)
    size: int = 0  # the file's bytes, for filters
    lang: str | None = None  # the keyword analysis of ``text`` (terms.py), when the caller made it
    terms: str | None = None  # already (in a worker process); else the store makes it


# Columns of the file a chunk belongs to, kept on every chunk so that filters run inside LanceDB.
FILE_FIELDS = (pa.field("location", pa.string()), pa.field("doc_type", pa.string()), pa.field("size", pa.int64()))


def schema(dimension: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("path", pa.string(), nullable=False),
            pa.field("chunk_index", pa.int32(), nullable=False),
            pa.field("text", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dimension)),
            pa.field("content_hash", pa.string()),
            pa.field("mtime", pa.float64()),
            pa.field("embed_model", pa.string()),
            *FILE_FIELDS,
            *ANALYSIS_FIELDS,
        ]
    )


@dataclass(frozen=True)
class Layout:
    """What one version of the table holds besides rows: its columns, whether it has a vector index."""

    table: Any  # the handle it was read from: a table made anew numbers its versions from 1 again
    version: int
    columns: frozenset[str]
    vector_index: bool


IN_LIST_PATHS = 400  # paths per ``path IN (...)`` filter: longer ones slow LanceDB's planner down


def in_lists(paths: Sequence[str]) -> list[str]:
    """``path IN (...)`` filters covering ``paths``, ``IN_LIST_PATHS`` at a time."""
    return [
        "path IN (" + ", ".join(sql_literal(p) for p in paths[start : start + IN_LIST_PATHS]) + ")"
        for start in range(0, len(paths), IN_LIST_PATHS)
    ]


INDEX_CACHE_BYTES = 128 * 1024 * 1024
METADATA_CACHE_BYTES = 32 * 1024 * 1024
LANCE_DEFAULT_CACHES = (6 * 1024**3, 1024**3)
LARGE_INDEXES_BYTES = 64 * 1024 * 1024


def cache_bounds(directory: Path) -> tuple[int, int]:
    """Index and metadata cache sizes for the store in ``directory``.

    While the indexes on disk are small (no vector index: under VECTOR_INDEX_MIN_ROWS chunks)
    the bounds hold the live ones. Past LARGE_INDEXES_BYTES, Lance's defaults: at 1M chunks the
    bounded index cache could not hold the HNSW index and the dense leg took 861 ms p50
    (bench/search_latency.py), so a large index keeps the old growth instead.
    """
    indices = directory / f"{TABLE}.lance" / "_indices"
    size = sum(f.stat().st_size for f in indices.rglob("*") if f.is_file()) if indices.is_dir() else 0
    return LANCE_DEFAULT_CACHES if size > LARGE_INDEXES_BYTES else (INDEX_CACHE_BYTES, METADATA_CACHE_BYTES)


class ChunkTable:
    """The table in a folder (``Path``), or at a ``Location`` (a folder or a bucket: ``location.py``).

    ``refresh_seconds`` is how stale a read may be: 0 checks for a newer version on every read
    (free on a local disk, the default); a search node on a bucket saves that round trip per
    read by checking every few seconds instead. ``write_lock`` is held by every part that commits.
    """

    def __init__(self, where: Path | Location, refresh_seconds: float = 0.0):
        self.location = LocalLocation(where) if isinstance(where, Path) else where
        self.directory: Path | None = self.location.directory if isinstance(self.location, LocalLocation) else None
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
        self._refresh = timedelta(seconds=refresh_seconds)
        self.connect()
        self.write_lock = threading.RLock()
        self._layout: Layout | None = None

    def connect(self) -> None:
        """Lance caches opened indexes and per-version metadata for the life of the process, by
        default up to 6 GB + 1 GB. Every commit makes new versions of both (about 2.4 MB per
        watch round on 600 files), so a server that re-indexes all day grew by hundreds of MB;
        the bounds (``cache_bounds``) keep the live indexes and drop the old versions first.
        A bucket is not listed for that: a node searching one keeps Lance's defaults."""
        import lancedb

        index_bytes, metadata_bytes = LANCE_DEFAULT_CACHES if self.directory is None else cache_bounds(self.directory)
        self._session = lancedb.Session(index_cache_size_bytes=index_bytes, metadata_cache_size_bytes=metadata_bytes)
        self.db = lancedb.connect(
            self.location.uri,
            read_consistency_interval=self._refresh,
            session=self._session,
            storage_options=self.location.storage_options or None,
        )
        self._table: Table | None = None
        self._layout = None

    def cache_bytes(self) -> int:
        """What Lance's index and metadata caches hold now."""
        return self._session.size_bytes

    @property
    def handle(self) -> Table | None:
        """The open LanceDB table, or None before the first write."""
        if self._table is None:
            try:
                self._table = self.db.open_table(TABLE)
            except (ValueError, FileNotFoundError):
                return None
        return self._table

    def create(self, data: pa.Table, dimension: int):
        """Make the table with its first rows and hold it open; rows of the keyword phase have no vector
        yet, on purpose ("null")."""
        self._table = self.db.create_table(TABLE, data=data, schema=schema(dimension), on_bad_vectors="null")
        return self._table

    def reopen(self) -> None:
        """Forget the open handle: another process may have dropped and recreated the table."""
        self._table = None
        self._layout = None

    def layout(self, table) -> Layout:
        """The columns and indexes of the table's current version, read once a version: each look at
        them checks for a newer version (~0.3 ms on a local disk), and a search needs both."""
        version = table.version
        layout = self._layout
        if layout is None or layout.table is not table or layout.version != version:
            layout = Layout(
                table,
                version,
                frozenset(table.schema.names),
                any(i.columns == ["vector"] for i in table.list_indices()),
            )
            self._layout = layout
        return layout

    def read(self, read: Callable[[Any], T], empty: T) -> T:
        """``read(table)``, or ``empty`` before the first write; a handle made stale by another
        process dropping the table (a model change) is reopened once instead of failing the read."""
        table = self.handle
        if table is None:
            return empty
        try:
            return read(table)
        except (RuntimeError, ValueError, OSError) as exc:
            if "not found" not in str(exc).lower():
                raise
        self.reopen()
        table = self.handle
        return empty if table is None else read(table)

    @property
    def dimension(self) -> int | None:
        return self.read(lambda table: table.schema.field("vector").type.list_size, None)

    def count(self, where: str | None = None) -> int:
        return self.read(lambda table: table.count_rows(where), 0)
