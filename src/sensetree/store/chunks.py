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

from pathlib import Path

from .location import Location
from .queries import ChunkQueries
from .repair import ChunkRepair
from .table import ChunkTable
from .upkeep import ChunkUpkeep
from .writes import ChunkWrites


class ChunkStore:
    """The table's jobs, each a part sharing one connection (``table``, ``table.py``): ``queries`` (both
    legs, stored chunks), ``writes``, ``upkeep`` (indexes, migrations) and ``repair``."""

    def __init__(self, where: Path | Location, refresh_seconds: float = 0.0):
        self.table = ChunkTable(where, refresh_seconds)
        self.repair = ChunkRepair(self.table)
        self.upkeep = ChunkUpkeep(self.table, self.repair)
        self.writes = ChunkWrites(self.table, self.upkeep)
        self.queries = ChunkQueries(self.table)
