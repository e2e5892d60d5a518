"""Damage a power cut or a bad disk leaves in the index, how it is found and how it is repaired.

- **The catalog's write-ahead log.** SQLite checks every WAL frame's checksum and silently
  drops the frames from the first bad one on: the catalog opens, but recent commits are gone.
  ``read_wal`` looks at the log before SQLite does, and ``wal_problem`` compares it with what
  SQLite accepted: a damaged header, or committed frames past the accepted end, mean lost
  commits. (A log cut exactly on a frame boundary is indistinguishable from commits that never
  happened; the next scan re-detects those changes anyway.)
- **The catalog file.** A file SQLite cannot open, or whose pages are corrupt, is moved aside
  and ``salvage_catalog`` copies into a fresh one whatever rows can still be read.
- **The vectors.** ``verify`` / ``roll_back`` (LanceDB versions) live with the store (``repair.py``).
- **Both.** After any repair the two stores may disagree; ``reconcile`` makes the catalog true
  to the vectors: an ``indexed`` row whose vectors are missing or stale is queued again, and
  vectors of files the catalog does not know are dropped (a scan finds those files again).
"""

from __future__ import annotations

import shutil
import sqlite3
import struct
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from .catalog import Catalog
from .chunks import ChunkStore

_WAL_MAGIC = (0x377F0682, 0x377F0683)  # the low bit says the checksums are big-endian
_TABLES = ("roots", "folders", "meta", "senses", "files")


@dataclass(frozen=True)
class WalScan:
    """What the WAL file held before SQLite opened it."""

    header_ok: bool
    commit_frames: list[int] = field(default_factory=list)  # 1-based frames that end a transaction


def _checksum(data: bytes, big_endian: bool) -> tuple[int, int]:
    """SQLite's WAL checksum: two running 32-bit sums over pairs of words."""
    words = struct.unpack((">" if big_endian else "<") + f"{len(data) // 4}I", data)
    s0 = s1 = 0
    for x0, x1 in zip(words[0::2], words[1::2]):
        s0 = (s0 + x0 + s1) & 0xFFFFFFFF
        s1 = (s1 + x1 + s0) & 0xFFFFFFFF
    return s0, s1


def read_wal(database: Path) -> WalScan | None:
    """Scan ``<database>-wal`` (header and frame headers only); None when there is no log to lose."""
    try:
        data = Path(f"{database}-wal").read_bytes()
    except FileNotFoundError:
        return None
    if not data:
        return None
    if len(data) < 32:
        return WalScan(header_ok=False)
    magic, _version, page_size, _seq, salt1, salt2, ck1, ck2 = struct.unpack(">8I", data[:32])
    if (
        magic not in _WAL_MAGIC
        or not 512 <= page_size <= 65536
        or _checksum(data[:24], big_endian=bool(magic & 1)) != (ck1, ck2)
    ):
        return WalScan(header_ok=False)
    frame = 24 + page_size
    commits = []
    # Whole frames only: a partial last frame is a write the crash interrupted, never acknowledged.
    for number, offset in enumerate(range(32, len(data) - frame + 1, frame), start=1):
        _page, commit, s1, s2 = struct.unpack(">4I", data[offset : offset + 16])
        if commit and (s1, s2) == (salt1, salt2):  # other salts: frames of an older, finished log
            commits.append(number)
    return WalScan(header_ok=True, commit_frames=commits)


def wal_problem(scan: WalScan | None, accepted_frames: int) -> str | None:
    """Why commits in the log were lost, or None when SQLite kept every committed frame."""
    if scan is None:
        return None
    if not scan.header_ok:
        return "its header is damaged, so SQLite ignored every change it held"
    lost = [n for n in scan.commit_frames if n > accepted_frames]
    if lost:
        return f"{len(lost)} committed change(s) after frame {accepted_frames} failed their checksums and were dropped"
    return None


@dataclass
class Salvage:
    catalog: Catalog
    damaged_copy: Path
    rows: dict[str, int]  # table -> rows copied

    def describe(self, reason: str) -> str:
        kept = ", ".join(f"{n} {table}" for table, n in self.rows.items() if n) or "nothing"
        message = (
            f"The catalog was damaged ({reason}); it was rebuilt from what could still be read "
            f"(kept: {kept}; the damaged file is {self.damaged_copy.name}). "
            "Files it lost will be indexed again by `sensetree index`."
        )
        if not self.rows.get("roots"):
            message += " No root could be recovered: add your folders again with `sensetree add`."
        return message


def salvage_catalog(path: Path) -> Salvage:
    """Move a damaged catalog aside and copy the rows SQLite can still read into a fresh one.

    Each table is read from both ends (rowid ascending, then descending), so one bad page in
    the middle loses only the rows stored on it.
    """
    stamp = time.strftime("%Y%m%d-%H%M%S")
    damaged = path.with_name(f"{path.stem}.damaged-{stamp}{path.suffix}")
    for suffix in ("", "-wal", "-shm"):
        source = Path(f"{path}{suffix}")
        if source.exists():
            shutil.move(str(source), f"{damaged}{suffix}")
    catalog = Catalog(path)
    rows = {table: 0 for table in _TABLES}
    try:
        old = sqlite3.connect(f"file:{damaged}?mode=ro", uri=True)
    except sqlite3.DatabaseError:
        return Salvage(catalog, damaged, rows)
    try:
        for table in _TABLES:
            try:
                old_columns = {r[1] for r in old.execute(f"PRAGMA table_info({table})")}
            except sqlite3.DatabaseError:
                continue
            columns = [c for c in catalog.columns(table) if c in old_columns]
            found = _readable_rows(old, table, columns)
            catalog.insert_rows(table, columns, found.values())
            rows[table] = len(found)
    finally:
        old.close()
    return Salvage(catalog, damaged, rows)


def _readable_rows(db: sqlite3.Connection, table: str, columns: list[str]) -> dict[int, tuple]:
    found: dict[int, tuple] = {}
    if not columns:
        return found
    for order in ("ASC", "DESC"):
        try:
            for row in db.execute(f"SELECT rowid, {', '.join(columns)} FROM {table} ORDER BY rowid {order}"):
                found[row[0]] = row[1:]
        except sqlite3.DatabaseError:
            continue
    return found


def reconcile(catalog: Catalog, store: ChunkStore) -> tuple[int, int]:
    """Make the catalog true to the vectors; returns (files queued again, files whose vectors were dropped).

    A ``keyword`` or ``indexed`` row needs exactly its ``chunks`` rows, numbered from 0, all of
    its stored content hash, and an ``indexed`` one a vector in each (else it goes back to
    ``keyword``); a ``failed`` row its context entry. Pending rows are replaced when stored.
    """
    stored: dict[str, tuple[set[int], set[str | None]]] = defaultdict(lambda: (set(), set()))
    unembedded: set[str] = set()
    table = store.table.handle
    if table is not None:
        for batch in table.search().select(["path", "chunk_index", "content_hash"]).limit(None).to_batches(65536):
            for path, index, content_hash in zip(*(batch.column(c).to_pylist() for c in range(3))):
                stored[path][0].add(index)
                stored[path][1].add(content_hash)
        for batch in table.search().where("vector IS NULL").select(["path"]).limit(None).to_batches(65536):
            unembedded.update(batch.column(0).to_pylist())
    requeue, embed_again = [], []
    known = set()
    for row in catalog.files.all():
        known.add(row.path)
        indexes, hashes = stored.get(row.path, (set(), set()))
        whole = indexes == set(range(row.chunks)) and row.chunks > 0
        if row.status in ("keyword", "indexed") and not (whole and hashes == {row.content_hash}):
            requeue.append(row.path)
        elif row.status == "indexed" and row.path in unembedded:
            embed_again.append(row.path)
        elif row.status == "failed" and not whole:
            requeue.append(row.path)
    for path in requeue:
        catalog.states.requeue(path)
    catalog.states.unmark_embedded(embed_again)
    orphans = [path for path in stored if path not in known]
    store.writes.delete_paths(orphans)
    return len(requeue) + len(embed_again), len(orphans)
