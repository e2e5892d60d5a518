"""The LanceDB ``chunks`` table: one row per chunk, with its vector, for both retrieval legs.

Design notes (measured in shared/research/lancedb.md):
- A BTREE on ``path`` turns folder-scoped queries from seconds into milliseconds at 1M rows.
- The native full-text index searches rows added after it was built (the unindexed tail is
  scanned), so keyword results are current right after a write; ``optimize()`` after each
  burst folds the tail in and compacts the fragments that small commits leave behind.
- Writes batch many files per commit: one delete of their old rows, one append. The keyword
  phase stores rows without a vector (null), so they are found by BM25 at once; the semantic
  phase fills the vectors in with one ``merge_insert`` per batch (one atomic commit). Null
  vectors take no part in vector search, with or without a vector index.
- The connection re-checks the latest version on every read, so a search process sees
  what the indexer process just wrote without reopening.
"""

from __future__ import annotations

import itertools
import logging
import re
import shutil
import threading
import time
from dataclasses import astuple, dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

import numpy as np
import pyarrow as pa

from ..errors import BadInput, StoreDamaged
from ..paths import sql_literal
from .location import LocalLocation, Location
from .terms import analyse, analyse_document, query_terms

log = logging.getLogger(__name__)
T = TypeVar("T")

TABLE = "chunks"
VECTOR_INDEX_MIN_ROWS = 50_000  # below this, exact search is fast enough (tens of ms) and never loses recall
# A scope narrower than this is searched exactly, a wider one through the index with the filter applied first.
# At 1M chunks (bench/search_latency.py's table): 1,000 rows exact 6.6 ms / HNSW 13.6 ms; 20,000 rows exact
# 27.9 ms / HNSW 14.9 ms with recall@160 0.993 against exact search; 200,000 rows 239 ms / 47 ms, recall 0.979.
EXACT_SCOPE_ROWS = 10_000
# The keyword index serves ``terms``, the stored text analysed in Python (store/terms.py: per-chunk
# language, stemming and stop words, words cut out of scripts written without spaces), so the index
# itself only splits on spaces.
FTS_COLUMN = "terms"
FTS_CONFIG = dict(with_position=False, base_tokenizer="whitespace", max_token_length=None, lower_case=False,
                  stem=False, remove_stop_words=False, ascii_folding=False)
MAIN_LANGUAGE_SHARE = 0.05  # a language of this share of the chunks analyses every query too
MAIN_LANGUAGES_MAX = 3      # each one adds its stems to every query: the BM25 leg slows with them
LANGUAGES_TTL = 30.0
ANALYSIS_FIELDS = (pa.field("lang", pa.string()), pa.field(FTS_COLUMN, pa.string()))


@dataclass(frozen=True)
class ChunkRow:
    path: str
    chunk_index: int
    text: str
    vector: np.ndarray | None  # None until the semantic phase embeds the chunk
    content_hash: str
    mtime: float
    location: str | None = None  # JSON list of the places it covers: [{"page": 3}, {"page": 4}]
    doc_type: str = ""           # the file's, for filters (pdf, docx, markdown...)
    size: int = 0                # the file's bytes, for filters
    lang: str | None = None      # the keyword analysis of ``text`` (terms.py), when the caller made it
    terms: str | None = None     # already (in a worker process); else the store makes it


# Columns of the file a chunk belongs to, kept on every chunk so that filters run inside LanceDB.
FILE_FIELDS = (pa.field("location", pa.string()), pa.field("doc_type", pa.string()), pa.field("size", pa.int64()))


def schema(dimension: int) -> pa.Schema:
    return pa.schema([
        pa.field("path", pa.string(), nullable=False),
        pa.field("chunk_index", pa.int32(), nullable=False),
        pa.field("text", pa.string()),
        pa.field("vector", pa.list_(pa.float32(), dimension)),
        pa.field("content_hash", pa.string()),
        pa.field("mtime", pa.float64()),
        pa.field("embed_model", pa.string()),
        *FILE_FIELDS,
        *ANALYSIS_FIELDS,
    ])


def _analysis(rows: Sequence[ChunkRow]) -> dict[str, pa.Array]:
    """``lang`` and ``terms`` of the rows: as the caller analysed them, or analysed here."""
    pairs = [(r.lang, r.terms) if r.terms is not None else astuple(analyse(r.text)) for r in rows]
    return {"lang": pa.array([lang for lang, _ in pairs], pa.string()),
            FTS_COLUMN: pa.array([terms for _, terms in pairs], pa.string())}


def analysed_columns(paths: Sequence[str], texts: Sequence[str]) -> dict[str, pa.Array]:
    """``lang`` and ``terms`` for stored texts, in order of (path, chunk): what the keyword leg searches
    (derived, never written by hand), each file's chunks analysed together as the keyword phase does."""
    analyses = [analysis for _, group in itertools.groupby(range(len(texts)), key=paths.__getitem__)
                for analysis in analyse_document([texts[i] for i in group])]
    return {"lang": pa.array([a.language for a in analyses], pa.string()),
            FTS_COLUMN: pa.array([a.terms for a in analyses], pa.string())}


@dataclass(frozen=True)
class _Layout:
    """What one version of the table holds besides rows: its columns, whether it has a vector index."""

    table: Any  # the handle it was read from: a table made anew numbers its versions from 1 again
    version: int
    columns: frozenset[str]
    vector_index: bool


STORE_ERRORS = (ValueError, RuntimeError)
"""What LanceDB raises when it refuses a write's input (or finds a file damaged: ``verify()`` tells which)."""


class DimensionMismatch(BadInput):
    """A vector of the wrong size; refused at write time, never mixed in (design §1.5)."""


IN_LIST_PATHS = 400  # paths per ``path IN (...)`` filter: longer ones slow LanceDB's planner down


def _in_lists(paths: Sequence[str]) -> list[str]:
    """``path IN (...)`` filters covering ``paths``, ``IN_LIST_PATHS`` at a time."""
    return ["path IN (" + ", ".join(sql_literal(p) for p in paths[start:start + IN_LIST_PATHS]) + ")"
            for start in range(0, len(paths), IN_LIST_PATHS)]


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


class ChunkStore:
    """The table in a folder (``Path``), or at a ``Location`` (a folder or a bucket: ``location.py``).

    ``refresh_seconds`` is how stale a read may be: 0 checks for a newer version on every read
    (free on a local disk, the default); a search node on a bucket saves that round trip per
    read by checking every few seconds instead.
    """

    def __init__(self, where: Path | Location, refresh_seconds: float = 0.0):
        self.location = LocalLocation(where) if isinstance(where, Path) else where
        self.directory = None if self.location.remote else self.location.directory
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
        self._refresh = timedelta(seconds=refresh_seconds)
        self._connect()
        self._write_lock = threading.RLock()
        self._languages: tuple[int | None, float, list[str]] = (None, -LANGUAGES_TTL, [])
        self._layout: _Layout | None = None

    def _connect(self) -> None:
        """Lance caches opened indexes and per-version metadata for the life of the process, by
        default up to 6 GB + 1 GB. Every commit makes new versions of both (about 2.4 MB per
        watch round on 600 files), so a server that re-indexes all day grew by hundreds of MB;
        the bounds (``cache_bounds``) keep the live indexes and drop the old versions first.
        A bucket is not listed for that: a node searching one keeps Lance's defaults."""
        import lancedb

        index_bytes, metadata_bytes = LANCE_DEFAULT_CACHES if self.directory is None else cache_bounds(self.directory)
        self._session = lancedb.Session(index_cache_size_bytes=index_bytes, metadata_cache_size_bytes=metadata_bytes)
        self._db = lancedb.connect(self.location.uri, read_consistency_interval=self._refresh, session=self._session,
                                   storage_options=self.location.storage_options or None)
        self._table = None
        self._layout = None

    def cache_bytes(self) -> int:
        """What Lance's index and metadata caches hold now."""
        return self._session.size_bytes

    @property
    def table(self):
        """The table, or None before the first write."""
        if self._table is None:
            try:
                self._table = self._db.open_table(TABLE)
            except (ValueError, FileNotFoundError):
                return None
        return self._table

    def reopen(self) -> None:
        """Forget the open handle: another process may have dropped and recreated the table."""
        self._table = None
        self._layout = None

    def _layout_of(self, table) -> _Layout:
        """The columns and indexes of the table's current version, read once a version: each look at
        them checks for a newer version (~0.3 ms on a local disk), and a search needs both."""
        version = table.version
        layout = self._layout
        if layout is None or layout.table is not table or layout.version != version:
            layout = _Layout(table, version, frozenset(table.schema.names),
                             any(i.columns == ["vector"] for i in table.list_indices()))
            self._layout = layout
        return layout

    def _read(self, read: Callable[[Any], T], empty: T) -> T:
        """``read(table)``, or ``empty`` before the first write; a handle made stale by another
        process dropping the table (a model change) is reopened once instead of failing the read."""
        table = self.table
        if table is None:
            return empty
        try:
            return read(table)
        except (RuntimeError, ValueError, OSError) as exc:
            if "not found" not in str(exc).lower():
                raise
        self.reopen()
        table = self.table
        return empty if table is None else read(table)

    @property
    def dimension(self) -> int | None:
        return self._read(lambda table: table.schema.field("vector").type.list_size, None)

    def count(self, where: str | None = None) -> int:
        return self._read(lambda table: table.count_rows(where), 0)

    # writes (the single writer only) ------------------------------------------------
    def replace_files(self, paths: Sequence[str], rows: Sequence[ChunkRow], model: str, dimension: int) -> None:
        """Swap the rows of ``paths`` for ``rows`` in one commit, so that a reader never sees those files
        gone between a delete and an append (a whole tree re-indexed at once would vanish from search)."""
        data = self._arrow(rows, model, dimension)
        with self._write_lock:
            table = self.table
            if table is not None and table.schema.field("vector").type.list_size != dimension:
                raise DimensionMismatch(f"the index holds {self.dimension}-d vectors, not {dimension}-d")
            if table is None:
                if rows:  # "null": rows of the keyword phase have no vector yet, on purpose
                    self._table = self._db.create_table(TABLE, data=data, schema=schema(dimension),
                                                        on_bad_vectors="null")
                    self._create_scalar_indexes()
                return
            self._add_file_fields(table)
            self._add_analysis(table)
            stored = [batch for batch in _in_lists(paths) if table.count_rows(batch)]
            if not stored:  # new files (a first run): a plain append, without the join a merge makes
                if rows:
                    table.add(data, on_bad_vectors="null")
            elif not rows:
                for condition in stored:
                    table.delete(condition)
            else:  # one commit: chunks matched on (path, chunk_index) updated, new ones added, the rest dropped
                (table.merge_insert(["path", "chunk_index"]).when_matched_update_all().when_not_matched_insert_all()
                 .when_not_matched_by_source_delete(" OR ".join(f"({c})" for c in stored))
                 .execute(data, on_bad_vectors="null"))

    def set_vectors(self, rows: Sequence[ChunkRow], model: str, dimension: int) -> None:
        """Give stored chunks their vectors (and chunk 0 its final text) in one atomic commit.

        Rows are matched on (path, chunk_index); a row that is no longer stored is not added back.
        """
        if not rows:
            return
        data = self._arrow(rows, model, dimension)
        with self._write_lock:
            table = self.table
            if table is None:
                return
            table.merge_insert(["path", "chunk_index"]).when_matched_update_all().execute(data)

    @staticmethod
    def _arrow(rows: Sequence[ChunkRow], model: str, dimension: int) -> pa.Table:
        """Rows as an Arrow table of the schema; a row without a vector gets a null one (and no model)."""
        bad = [r for r in rows if r.vector is not None and r.vector.shape != (dimension,)]
        if bad:
            raise DimensionMismatch(f"{bad[0].path}: vector of shape {bad[0].vector.shape}, the index holds {dimension}")
        missing = [r.vector is None for r in rows]
        blank = np.zeros(dimension, np.float32)
        values = np.concatenate([blank if r.vector is None else r.vector for r in rows]) if rows else np.zeros(0)
        return pa.table({
            "path": pa.array([r.path for r in rows], pa.string()),
            "chunk_index": pa.array([r.chunk_index for r in rows], pa.int32()),
            "text": pa.array([r.text for r in rows], pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(values.astype(np.float32)), dimension,
                                                        mask=pa.array(missing, pa.bool_())),
            "content_hash": pa.array([r.content_hash for r in rows], pa.string()),
            "mtime": pa.array([r.mtime for r in rows], pa.float64()),
            "embed_model": pa.array([None if gap else model for gap in missing], pa.string()),
            "location": pa.array([r.location for r in rows], pa.string()),
            "doc_type": pa.array([r.doc_type for r in rows], pa.string()),
            "size": pa.array([r.size for r in rows], pa.int64()),
            **_analysis(rows),
        }, schema=schema(dimension))

    def delete_paths(self, paths: Sequence[str]) -> None:
        table = self.table
        if table is None or not paths:
            return
        with self._write_lock:
            for batch in _in_lists(paths):
                table.delete(batch)

    def wipe(self) -> None:
        """Drop every vector (a model change); the next write recreates the table."""
        with self._write_lock:
            if TABLE in self._db.list_tables().tables:
                self._db.drop_table(TABLE)
            self._table = None

    def unfilled_files(self) -> bool:
        """Whether chunks written by an earlier version lack their file's type and size (``fill_file_fields``)."""
        return self._read(lambda table: any(f.name not in table.schema.names for f in FILE_FIELDS)
                          or table.count_rows("doc_type IS NULL") > 0, False)

    def fill_file_fields(self, files: dict[str, tuple[str, int]]) -> None:
        """Give the chunks of an older table their file's type and size from ``files`` (path -> (doc_type, size));
        they keep their vectors. Places in a file (pages...) come with the next read of it."""
        with self._write_lock:
            table = self.table
            self._add_file_fields(table)
            keys = table.search().where("doc_type IS NULL").select(["path", "chunk_index"]).limit(None).to_arrow()
            for start in range(0, keys.num_rows, 50_000):
                part = keys.slice(start, 50_000)
                known = [files.get(p, ("", 0)) for p in part["path"].to_pylist()]
                table.merge_insert(["path", "chunk_index"]).when_matched_update_all().execute(pa.table({
                    "path": part["path"], "chunk_index": part["chunk_index"],
                    "doc_type": pa.array([k[0] for k in known], pa.string()),
                    "size": pa.array([k[1] for k in known], pa.int64())}))

    def _add_file_fields(self, table) -> None:
        """Columns a table written by an earlier version lacks, added empty (a change of schema only)."""
        missing = [f for f in FILE_FIELDS if f.name not in table.schema.names]
        if missing:
            table.add_columns(pa.schema(missing))
            self._create_filter_indexes(table)

    def _create_scalar_indexes(self) -> None:
        from lancedb.index import FTS, BTree

        self._table.create_index("path", config=BTree(), replace=True)
        self._create_filter_indexes(self._table)
        self._table.create_index(FTS_COLUMN, config=FTS(**FTS_CONFIG), replace=True)

    @staticmethod
    def _create_filter_indexes(table) -> None:
        """Filters on type and dates stay fast at a million chunks: prefilters served by indexes."""
        from lancedb.index import BTree, Bitmap

        table.create_index("doc_type", config=Bitmap(), replace=True)
        table.create_index("mtime", config=BTree(), replace=True)

    def has_fts_index(self) -> bool:
        return self._read(lambda table: any(i.columns == [FTS_COLUMN] for i in table.list_indices()), False)

    def build_fts_index(self) -> None:
        """(Re)build the keyword index; a table written before ``terms`` existed is analysed first."""
        from lancedb.index import FTS

        with self._write_lock:
            if self.table is not None:
                self._add_analysis(self.table)
                self.table.create_index(FTS_COLUMN, config=FTS(**FTS_CONFIG), replace=True)

    def reanalyse(self) -> int:
        """Recompute ``lang`` and ``terms`` of every row from its stored text, keeping the vectors;
        the number of rows analysed. For a table from before the analysis, or after it changed."""
        with self._write_lock:
            return 0 if self.table is None else self._analyse_rows(self.table)

    def _add_analysis(self, table) -> None:
        """Migrate a table written before ``terms`` existed (no re-embedding: about 1 ms a chunk);
        its old keyword index, on ``text``, goes."""
        if FTS_COLUMN not in table.schema.names:
            log.info("analysed the stored text of %d chunks for the keyword index", self._analyse_rows(table))
            for index in table.list_indices():
                if index.columns == ["text"]:
                    table.drop_index(index.name)

    @staticmethod
    def _analyse_rows(table, batch_rows: int = 20_000) -> int:
        if FTS_COLUMN not in table.schema.names:
            table.add_columns(pa.schema(list(ANALYSIS_FIELDS)))
        stored = table.search().select(["path", "chunk_index", "text"]).limit(None).to_arrow()
        stored = stored.sort_by([("path", "ascending"), ("chunk_index", "ascending")])
        paths = stored["path"].to_pylist()
        done = start = 0
        while start < stored.num_rows:
            end = min(start + batch_rows, stored.num_rows)
            while end < stored.num_rows and paths[end] == paths[end - 1]:  # a file's chunks stay together
                end += 1
            part = stored.slice(start, end - start)
            update = pa.table({"path": part["path"], "chunk_index": part["chunk_index"],
                               **analysed_columns(paths[start:end], part["text"].to_pylist())})
            start = end
            done += table.merge_insert(["path", "chunk_index"]).when_matched_update_all().execute(update).num_updated_rows
        return done

    def optimize(self) -> None:
        """Compact fragments and fold new rows into every index; retried on commit conflicts."""
        table = self.table
        if table is None:
            return
        with self._write_lock:
            self._ensure_keyword_index(table)
            self._ensure_vector_index(table)
            for attempt in range(5):
                try:
                    table.optimize(cleanup_older_than=timedelta(minutes=10))
                    return
                except RuntimeError as exc:
                    if "conflict" not in str(exc).lower() or attempt == 4:
                        damage = self.verify()
                        if damage:
                            raise StoreDamaged(damage) from exc
                        log.warning("optimize failed: %s", exc)
                        return
                    time.sleep(0.2 * (attempt + 1))

    @staticmethod
    def _ensure_keyword_index(table) -> None:
        """The keyword index on ``terms``, rebuilt if it went missing: LanceDB answers a full-text query
        on an unindexed column by scanning every row (correct, 140 ms at 11k chunks and growing).
        Keyword indexes on other columns, left by earlier versions, go: each optimize updates them."""
        from lancedb.index import FTS

        indexes = [i for i in table.list_indices() if i.index_type == "FTS"]
        for index in indexes:
            if index.columns != [FTS_COLUMN]:
                table.drop_index(index.name)
        if FTS_COLUMN in table.schema.names and not any(i.columns == [FTS_COLUMN] for i in indexes):
            log.warning("the keyword index was missing; rebuilding it")
            table.create_index(FTS_COLUMN, config=FTS(**FTS_CONFIG), replace=True)

    def _ensure_vector_index(self, table) -> None:
        """An HNSW index once the table holds enough vectors that exact search gets slow."""
        if table.count_rows("vector IS NOT NULL") < VECTOR_INDEX_MIN_ROWS:
            return
        if self.has_vector_index():
            return
        from lancedb.index import HnswSq

        table.create_index("vector", config=HnswSq(distance_type="cosine"))
        self._connect()  # the indexes are large now: caches sized for them

    def has_vector_index(self) -> bool:
        return self._read(lambda table: self._layout_of(table).vector_index, False)

    # reads ------------------------------------------------------------------------
    def dense(self, vector: np.ndarray, k: int, where: str | None = None) -> list[dict]:
        """The ``k`` nearest chunks by cosine distance, filtered inside LanceDB before the search."""

        def read(table) -> list[dict]:
            layout = self._layout_of(table)
            query = (table.search(np.asarray(vector, np.float32), vector_column_name="vector")
                     .distance_type("cosine").limit(k).select(_hit_columns(layout.columns, "_distance")))
            if where:
                query = query.where(where, prefilter=True)
            if layout.vector_index:
                if where and table.count_rows(where) < EXACT_SCOPE_ROWS:
                    query = query.bypass_vector_index()  # exact: faster than the index on so few rows
                else:
                    query = query.ef(4 * k)
            return query.to_list()

        return self._read(read, [])

    def sparse(self, text: str, k: int, where: str | None = None) -> list[dict]:
        """The ``k`` best chunks by BM25 on the analysed text; raises ValueError without an FTS index."""
        def read(table) -> list[dict]:
            layout = self._layout_of(table)
            terms = query_terms(text, self._main_languages(table, layout))
            if not terms:
                return []
            query = (table.search(terms, query_type="fts", fts_columns=FTS_COLUMN)
                     .limit(k).select(_hit_columns(layout.columns, "_score")))
            if where:
                query = query.where(where, prefilter=True)
            return query.to_list()

        return self._read(read, [])

    def unembedded(self, paths: Sequence[str]) -> list[dict]:
        """The stored chunks of ``paths`` that have no vector yet, in file and chunk order."""
        rows: list[dict] = []
        for batch in _in_lists(paths):
            where = f"{batch} AND vector IS NULL"
            rows += self._read(lambda table: table.search().where(where)
                               .select(["path", "chunk_index", "text", "content_hash", "mtime",
                                        *(f.name for f in FILE_FIELDS), *(f.name for f in ANALYSIS_FIELDS)])
                               .limit(None).to_list(), [])
        return sorted(rows, key=lambda r: (r["path"], r["chunk_index"]))

    def stored_chunks(self, paths: Sequence[str]) -> dict[str, tuple[set[int], set[str | None]]]:
        """path -> (its chunk numbers, the content hashes they carry): is a file stored whole?"""
        found: dict[str, tuple[set[int], set[str | None]]] = {p: (set(), set()) for p in paths}
        for where in _in_lists(paths):
            rows = self._read(lambda table: table.search().where(where).select(["path", "chunk_index", "content_hash"])
                              .limit(None).to_list(), [])
            for row in rows:
                found[row["path"]][0].add(row["chunk_index"])
                found[row["path"]][1].add(row["content_hash"])
        return found

    def count_embedded(self) -> int:
        return self.count("vector IS NOT NULL")

    def chunk(self, path: str, chunk_index: int) -> dict | None:
        """One stored chunk: its text and, once the table has it, its location."""
        where = f"path = {sql_literal(path)} AND chunk_index = {int(chunk_index)}"

        def read(table) -> list[dict]:
            columns = ["text", *(["location"] if "location" in table.schema.names else [])]
            return table.search().where(where).select(columns).limit(1).to_list()

        rows = self._read(read, [])
        return rows[0] if rows else None

    def chunk_text(self, path: str, chunk_index: int) -> str | None:
        found = self.chunk(path, chunk_index)
        return found["text"] if found else None

    def _main_languages(self, table, layout: _Layout) -> list[str]:
        """The (at most MAIN_LANGUAGES_MAX) languages of at least MAIN_LANGUAGE_SHARE of the chunks,
        largest first; counted again when the table changed, at most every LANGUAGES_TTL seconds
        (a scan of one column: ~0.1 s a million chunks)."""
        counted_at = time.monotonic()
        if self._languages[0] != layout.version and counted_at - self._languages[1] >= LANGUAGES_TTL:
            counts = (table.search().select(["lang"]).limit(None).to_arrow()["lang"].value_counts().to_pylist()
                      if "lang" in layout.columns else [])
            total = sum(c["counts"] for c in counts) or 1
            main = [c["values"] for c in sorted(counts, key=lambda c: -c["counts"])
                    if c["values"] and c["counts"] / total >= MAIN_LANGUAGE_SHARE]
            self._languages = (layout.version, counted_at, main[:MAIN_LANGUAGES_MAX])
        return self._languages[2]

    def vectors_of(self, path: str) -> np.ndarray:
        """The vectors of ``path``'s embedded chunks, one row each (none while it waits for the semantic phase)."""
        rows = self._read(lambda table: table.search().where(f"path = {sql_literal(path)} AND vector IS NOT NULL")
                          .select(["vector"]).limit(100_000).to_list(), [])
        return np.asarray([row["vector"] for row in rows], np.float32).reshape(len(rows), self.dimension or 0)

    def chunks_of(self, path: str) -> list[dict]:
        rows = self._read(lambda table: table.search().where(f"path = {sql_literal(path)}")
                          .select(["chunk_index", "text"]).limit(100_000).to_list(), [])
        return sorted(rows, key=lambda r: r["chunk_index"])

    # damage (power cuts, torn writes) ------------------------------------------------
    def verify(self) -> str | None:
        """None when every row of the latest version reads back whole; else what is broken.

        Reads every column of every row, so it costs a full scan: it runs when something has
        already failed, never on the way of a search.
        """
        try:
            table = self._db.open_table(TABLE)
        except (ValueError, FileNotFoundError):
            return None  # no table yet
        except Exception as exc:  # lance raises RuntimeError, ValueError, OSError... on torn files
            return one_line(exc)
        return _read_back(table)

    def roll_back(self) -> int | None:
        """Return to the newest version that reads back whole, and that version; None when no version
        does, and the table is then dropped (every file must be indexed again).

        A manifest that does not even open (torn, zero bytes, garbage) is moved to ``damaged/``;
        older versions keep their own manifests, so LanceDB then opens the one before it.
        """
        with self._write_lock:
            self._table = None
            # A bucket's puts are whole or absent: only a local disk tears a manifest.
            versions = self.directory / f"{TABLE}.lance" / "_versions" if self.directory else None
            quarantine = self.directory / "damaged" if self.directory else None
            while True:
                try:
                    table = self._db.open_table(TABLE)
                    break
                except (ValueError, FileNotFoundError):
                    if versions is None or not versions.is_dir():
                        return None
                    table = None
                except Exception:
                    table = None
                if versions is None or quarantine is None:
                    break
                manifests = sorted(versions.glob("*.manifest"), key=_manifest_version)
                if not manifests:
                    break
                quarantine.mkdir(exist_ok=True)
                shutil.move(str(manifests[-1]), str(quarantine / f"{time.time_ns()}-{manifests[-1].name}"))
            if table is not None:
                try:
                    kept = sorted((v["version"] for v in table.list_versions()), reverse=True)
                except Exception:
                    kept = []
                for version in kept[:20]:
                    try:
                        table.checkout(version)
                    except Exception:
                        continue
                    if _read_back(table) is None:
                        if version != kept[0]:
                            table.restore(version)
                        return version
            try:
                self._db.drop_table(TABLE)
            except Exception:
                if self.directory is not None:
                    shutil.rmtree(self.directory / f"{TABLE}.lance", ignore_errors=True)
            return None


def _hit_columns(columns: frozenset[str], score: str) -> list[str]:
    """What a leg reads of each hit; the newer columns once the table has them (a table from before is
    migrated on its next write or keyword-index build)."""
    newer = [name for name in ("lang", "location") if name in columns]
    return ["path", "chunk_index", "text", "content_hash", *newer, score]


def _read_back(table) -> str | None:
    """Decode every column of every row of ``table``'s checked-out version."""
    try:
        for _ in table.search().limit(None).to_batches(8192):
            pass
        table.count_rows()
    except Exception as exc:
        return one_line(exc)
    return None


def _manifest_version(manifest: Path) -> int:
    """Manifests are named by version, or by u64::MAX - version (LanceDB's v2 naming, newest first)."""
    number = int(manifest.stem)
    return (2**64 - 1) - number if number >= 2**63 else number


def one_line(exc: BaseException) -> str:
    """The error in one line, without the Rust source locations lance appends."""
    message = " ".join(re.sub(r",? /\S+\.rs:\d+:\d+", "", str(exc)).split()) or type(exc).__name__
    return message if len(message) <= 300 else message[:299] + "…"
