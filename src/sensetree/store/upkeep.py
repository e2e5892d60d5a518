"""Keeping the chunks table fit to search: its indexes built and folded in, and a table written by an
earlier version migrated (file fields, keyword analysis) without re-embedding."""

from __future__ import annotations

import itertools
import logging
import time
from datetime import timedelta
from typing import Any, Sequence

import pyarrow as pa

from ..errors import StoreDamaged
from .repair import ChunkRepair
from .table import ANALYSIS_FIELDS, EXACT_COLUMN, FILE_FIELDS, FTS_COLUMN, KEYWORD_COLUMNS, NAMES_COLUMN, ChunkTable
from .terms import analyse_document, name_terms

log = logging.getLogger(__name__)

VECTOR_INDEX_MIN_ROWS = 50_000  # below this, exact search is fast enough (tens of ms) and never loses recall
# The keyword indexes on ``terms`` and ``names`` serve columns analysed in Python (store/terms.py: per-chunk
# language, stemming and stop words, words cut out of scripts written without spaces, identifiers whole), so
# they only split on spaces. The one on the stored text is LanceDB's own analysis of the words as written:
# split on what is not a letter or a digit, case and accents folded, never stemmed, with positions (phrases).
FTS_CONFIG: dict[str, Any] = dict(
    with_position=False,
    base_tokenizer="whitespace",
    max_token_length=None,
    lower_case=False,
    stem=False,
    remove_stop_words=False,
    ascii_folding=False,
)
EXACT_CONFIG: dict[str, Any] = dict(
    FTS_CONFIG, with_position=True, base_tokenizer="simple", lower_case=True, ascii_folding=True
)


def _create_keyword_index(table, column: str) -> None:
    from lancedb.index import FTS

    config = EXACT_CONFIG if column == EXACT_COLUMN else FTS_CONFIG
    table.create_index(column, config=FTS(**config), replace=True)


def analysed_columns(paths: Sequence[str], chunks: Sequence[int], texts: Sequence[str]) -> dict[str, pa.Array]:
    """The keyword columns for stored texts, in order of (path, chunk): what the keyword leg searches
    (derived, never written by hand), each file's chunks analysed together as the keyword phase does."""
    analyses = [
        analysis
        for _, group in itertools.groupby(range(len(texts)), key=paths.__getitem__)
        for analysis in analyse_document([texts[i] for i in group])
    ]
    return {
        "lang": pa.array([a.language for a in analyses], pa.string()),
        FTS_COLUMN: pa.array([a.terms for a in analyses], pa.string()),
        NAMES_COLUMN: pa.array(
            [name_terms(p, a.language) if c == 0 else "" for p, c, a in zip(paths, chunks, analyses)], pa.string()
        ),
    }


class ChunkUpkeep:
    """``repair`` tells an optimize that failed on damage from one that lost a race."""

    def __init__(self, table: ChunkTable, repair: ChunkRepair):
        self.table = table
        self.repair = repair

    def unfilled_files(self) -> bool:
        """Whether chunks written by an earlier version lack their file's type and size (``fill_file_fields``)."""
        return self.table.read(
            lambda table: (
                any(f.name not in table.schema.names for f in FILE_FIELDS) or table.count_rows("doc_type IS NULL") > 0
            ),
            False,
        )

    def fill_file_fields(self, files: dict[str, tuple[str, int]]) -> None:
        """Give the chunks of an older table their file's type and size from ``files`` (path -> (doc_type, size));
        they keep their vectors. Places in a file (pages...) come with the next read of it."""
        with self.table.write_lock:
            table = self.table.handle
            if table is None:  # no table yet: no chunk of an earlier version
                return
            self._add_file_fields(table)
            keys = table.search().where("doc_type IS NULL").select(["path", "chunk_index"]).limit(None).to_arrow()
            for start in range(0, keys.num_rows, 50_000):
                part = keys.slice(start, 50_000)
                known = [files.get(p, ("", 0)) for p in part["path"].to_pylist()]
                table.merge_insert(["path", "chunk_index"]).when_matched_update_all().execute(
                    pa.table(
                        {
                            "path": part["path"],
                            "chunk_index": part["chunk_index"],
                            "doc_type": pa.array([k[0] for k in known], pa.string()),
                            "size": pa.array([k[1] for k in known], pa.int64()),
                        }
                    )
                )

    def migrate(self, table) -> None:
        """What a table written by an earlier version lacks, before a write adds rows of this one."""
        self._add_file_fields(table)
        self._add_analysis(table)

    def _add_file_fields(self, table) -> None:
        """Columns a table written by an earlier version lacks, added empty (a change of schema only)."""
        missing = [f for f in FILE_FIELDS if f.name not in table.schema.names]
        if missing:
            table.add_columns(pa.schema(missing))
            self._create_filter_indexes(table)

    def create_indexes(self, table) -> None:
        """The indexes of a table just made: scopes, filters, keywords."""
        from lancedb.index import BTree

        table.create_index("path", config=BTree(), replace=True)
        self._create_filter_indexes(table)
        for column in KEYWORD_COLUMNS:
            _create_keyword_index(table, column)

    @staticmethod
    def _create_filter_indexes(table) -> None:
        """Filters on type and dates stay fast at a million chunks: prefilters served by indexes."""
        from lancedb.index import Bitmap, BTree

        table.create_index("doc_type", config=Bitmap(), replace=True)
        table.create_index("mtime", config=BTree(), replace=True)

    def unanalysed(self) -> bool:
        """Whether the table was written before one of the keyword columns existed (``build_fts_index``
        migrates it)."""
        return self.table.read(lambda table: any(f.name not in table.schema.names for f in ANALYSIS_FIELDS), False)

    def has_fts_index(self) -> bool:
        return self.table.read(
            lambda table: {(c,) for c in KEYWORD_COLUMNS} <= {tuple(i.columns) for i in table.list_indices()}, False
        )

    def build_fts_index(self) -> None:
        """(Re)build the keyword indexes; a table written before one of their columns existed is analysed first."""
        with self.table.write_lock:
            if self.table.handle is not None:
                self._add_analysis(self.table.handle)
                for column in KEYWORD_COLUMNS:
                    _create_keyword_index(self.table.handle, column)

    def reanalyse(self) -> int:
        """Recompute the keyword columns of every row from its stored text, keeping the vectors;
        the number of rows analysed. For a table from before the analysis, or after it changed."""
        with self.table.write_lock:
            return 0 if self.table.handle is None else self._analyse_rows(self.table.handle)

    def _add_analysis(self, table) -> None:
        """Migrate a table written before a keyword column existed (no re-embedding: about 1 ms a chunk):
        every row analysed again, as this version analyses it; an earlier version's index on ``text``
        (stemmed, without positions) is made again as this version's."""
        if any(f.name not in table.schema.names for f in ANALYSIS_FIELDS):
            log.info("analysed the stored text of %d chunks for the keyword index", self._analyse_rows(table))
            if any(index.columns == [EXACT_COLUMN] for index in table.list_indices()):
                _create_keyword_index(table, EXACT_COLUMN)

    @staticmethod
    def _analyse_rows(table, batch_rows: int = 20_000) -> int:
        missing = [f for f in ANALYSIS_FIELDS if f.name not in table.schema.names]
        if missing:
            table.add_columns(pa.schema(missing))
        stored = table.search().select(["path", "chunk_index", "text"]).limit(None).to_arrow()
        stored = stored.sort_by([("path", "ascending"), ("chunk_index", "ascending")])
        paths = stored["path"].to_pylist()
        done = start = 0
        while start < stored.num_rows:
            end = min(start + batch_rows, stored.num_rows)
            while end < stored.num_rows and paths[end] == paths[end - 1]:  # a file's chunks stay together
                end += 1
            part = stored.slice(start, end - start)
            update = pa.table(
                {
                    "path": part["path"],
                    "chunk_index": part["chunk_index"],
                    **analysed_columns(paths[start:end], part["chunk_index"].to_pylist(), part["text"].to_pylist()),
                }
            )
            start = end
            done += (
                table.merge_insert(["path", "chunk_index"]).when_matched_update_all().execute(update).num_updated_rows
            )
        return done

    def optimize(self) -> None:
        """Compact fragments and fold new rows into every index; retried on commit conflicts."""
        table = self.table.handle
        if table is None:
            return
        with self.table.write_lock:
            self._ensure_keyword_index(table)
            self._ensure_vector_index(table)
            for attempt in range(5):
                try:
                    table.optimize(cleanup_older_than=timedelta(minutes=10))
                    return
                except RuntimeError as exc:
                    if "conflict" not in str(exc).lower() or attempt == 4:
                        damage = self.repair.verify()
                        if damage:
                            raise StoreDamaged(damage) from exc
                        log.warning("optimize failed: %s", exc)
                        return
                    time.sleep(0.2 * (attempt + 1))

    @staticmethod
    def _ensure_keyword_index(table) -> None:
        """The keyword indexes, each rebuilt if it went missing: LanceDB answers a full-text query on an
        unindexed column by scanning every row (correct, 140 ms at 11k chunks and growing). Keyword
        indexes on other columns, left by earlier versions, go: each optimize updates them."""
        indexes = [i for i in table.list_indices() if i.index_type == "FTS"]
        for index in indexes:
            if len(index.columns) != 1 or index.columns[0] not in KEYWORD_COLUMNS:
                table.drop_index(index.name)
        for column in KEYWORD_COLUMNS:
            if column in table.schema.names and not any(i.columns == [column] for i in indexes):
                log.warning("the keyword index on %s was missing; rebuilding it", column)
                _create_keyword_index(table, column)

    def _ensure_vector_index(self, table) -> None:
        """An HNSW index once the table holds enough vectors that exact search gets slow."""
        if table.count_rows("vector IS NOT NULL") < VECTOR_INDEX_MIN_ROWS:
            return
        if self.has_vector_index():
            return
        from lancedb.index import HnswSq

        table.create_index("vector", config=HnswSq(distance_type="cosine"))
        self.table.connect()  # the indexes are large now: caches sized for them

    def has_vector_index(self) -> bool:
        return self.table.read(lambda table: self.table.layout(table).vector_index, False)
