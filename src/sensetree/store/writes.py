"""Commits to the chunks table (the single writer only): many files per commit, so that a reader never
sees a file half replaced."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa

from ..errors import BadInput
from .table import FTS_COLUMN, NAMES_COLUMN, TABLE, ChunkRow, ChunkTable, in_lists, schema
from .terms import Analysis, analyse, name_terms
from .upkeep import ChunkUpkeep

STORE_ERRORS = (ValueError, RuntimeError)
"""What LanceDB raises when it refuses a write's input (or finds a file damaged: ``verify()`` tells which)."""


class DimensionMismatch(BadInput):
    """A vector of the wrong size; refused at write time, never mixed in (design §1.5)."""


def _analysis(rows: Sequence[ChunkRow]) -> dict[str, pa.Array]:
    """The keyword columns of the rows: as the caller analysed them, or analysed here; names from the path."""
    analyses = [Analysis(r.lang, r.terms) if r.terms is not None else analyse(r.text) for r in rows]
    return {
        "lang": pa.array([a.language for a in analyses], pa.string()),
        FTS_COLUMN: pa.array([a.terms for a in analyses], pa.string()),
        NAMES_COLUMN: pa.array(
            [name_terms(r.path, a.language) if r.chunk_index == 0 else "" for r, a in zip(rows, analyses)], pa.string()
        ),
    }


class ChunkWrites:
    """``upkeep`` indexes a table a write makes, and migrates an older one before writing to it."""

    def __init__(self, table: ChunkTable, upkeep: ChunkUpkeep):
        self.table = table
        self.upkeep = upkeep

    def replace_files(self, paths: Sequence[str], rows: Sequence[ChunkRow], model: str, dimension: int) -> None:
        """Swap the rows of ``paths`` for ``rows`` in one commit, so that a reader never sees those files
        gone between a delete and an append (a whole tree re-indexed at once would vanish from search)."""
        data = self._arrow(rows, model, dimension)
        with self.table.write_lock:
            table = self.table.handle
            if table is not None and table.schema.field("vector").type.list_size != dimension:
                raise DimensionMismatch(f"the index holds {self.table.dimension}-d vectors, not {dimension}-d")
            if table is None:
                if rows:
                    self.upkeep.create_indexes(self.table.create(data, dimension))
                return
            self.upkeep.migrate(table)
            stored = [batch for batch in in_lists(paths) if table.count_rows(batch)]
            if not stored:  # new files (a first run): a plain append, without the join a merge makes
                if rows:
                    table.add(data, on_bad_vectors="null")
            elif not rows:
                for condition in stored:
                    table.delete(condition)
            else:  # one commit: chunks matched on (path, chunk_index) updated, new ones added, the rest dropped
                (
                    table.merge_insert(["path", "chunk_index"])
                    .when_matched_update_all()
                    .when_not_matched_insert_all()
                    .when_not_matched_by_source_delete(" OR ".join(f"({c})" for c in stored))
                    .execute(data, on_bad_vectors="null")
                )

    def set_vectors(self, rows: Sequence[ChunkRow], model: str, dimension: int) -> None:
        """Give stored chunks their vectors (and chunk 0 its final text) in one atomic commit.

        Rows are matched on (path, chunk_index); a row that is no longer stored is not added back.
        """
        if not rows:
            return
        data = self._arrow(rows, model, dimension)
        with self.table.write_lock:
            table = self.table.handle
            if table is None:
                return
            table.merge_insert(["path", "chunk_index"]).when_matched_update_all().execute(data)

    def resize(self, dimension: int) -> None:
        """Give a table that holds no vector yet ``dimension``-d vectors: one stored while the model was away
        (design §7.2) took a guessed size. Its rows are written again in one commit (every vector still null),
        and its indexes made again. A table holding vectors of another size is left as it is: they never mix."""
        with self.table.write_lock:
            table = self.table.handle
            if table is None or table.schema.field("vector").type.list_size == dimension:
                return
            if table.count_rows("vector IS NOT NULL"):
                return
            self.upkeep.migrate(table)
            stored = table.to_arrow()
            wanted = schema(dimension)
            columns = {
                name: pa.nulls(stored.num_rows, wanted.field(name).type) if name == "vector" else stored[name]
                for name in wanted.names
            }
            resized = self.table.db.create_table(
                TABLE, pa.table(columns, schema=wanted), mode="overwrite", on_bad_vectors="null"
            )
            self.table.reopen()
            self.upkeep.create_indexes(resized)

    @staticmethod
    def _arrow(rows: Sequence[ChunkRow], model: str, dimension: int) -> pa.Table:
        """Rows as an Arrow table of the schema; a row without a vector gets a null one (and no model)."""
        bad = [r for r in rows if r.vector is not None and r.vector.shape != (dimension,)]
        if bad:
            shape = getattr(bad[0].vector, "shape", None)
            raise DimensionMismatch(f"{bad[0].path}: vector of shape {shape}, the index holds {dimension}")
        missing = [r.vector is None for r in rows]
        blank = np.zeros(dimension, np.float32)
        values = np.concatenate([blank if r.vector is None else r.vector for r in rows]) if rows else np.zeros(0)
        return pa.table(
            {
                "path": pa.array([r.path for r in rows], pa.string()),
                "chunk_index": pa.array([r.chunk_index for r in rows], pa.int32()),
                "text": pa.array([r.text for r in rows], pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(values.astype(np.float32)), dimension, mask=pa.array(missing, pa.bool_())
                ),
                "content_hash": pa.array([r.content_hash for r in rows], pa.string()),
                "mtime": pa.array([r.mtime for r in rows], pa.float64()),
                "embed_model": pa.array([None if gap else model for gap in missing], pa.string()),
                "location": pa.array([r.location for r in rows], pa.string()),
                "doc_type": pa.array([r.doc_type for r in rows], pa.string()),
                "size": pa.array([r.size for r in rows], pa.int64()),
                **_analysis(rows),
            },
            schema=schema(dimension),
        )

    def delete_paths(self, paths: Sequence[str]) -> None:
        table = self.table.handle
        if table is None or not paths:
            return
        with self.table.write_lock:
            for batch in in_lists(paths):
                table.delete(batch)

    def wipe(self) -> None:
        """Drop every vector (a model change); the next write recreates the table."""
        with self.table.write_lock:
            if TABLE in self.table.db.list_tables().tables:
                self.table.db.drop_table(TABLE)
            self.table.reopen()
