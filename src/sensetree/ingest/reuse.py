"""Each distinct embedded text goes to the model once per model identity.

Folders hold copies: the same licence, changelog or boilerplate paragraph in many files (34 %
of the chunks of a ``/usr/share/doc`` copy). The semantic phase asks ``VectorReuse.vectors`` for
a batch's vectors: texts repeated within the batch are embedded once, and a text embedded
before under the same model identity takes the vector stored then, byte for byte. The store is
a small SQLite file beside the catalog, keyed by (model identity, sha256 of the embedded text);
it costs about the size of the vectors themselves (1.5 KB per distinct 384-d text). The first
batch under a new model identity drops the other identities' rows: the index no longer holds them.

The store is a cache: a file SQLite cannot read (junk, a folder in its place, a bad page met later)
is set aside as ``vectors.damaged-<time>.sqlite`` and a fresh one started, with one line said
(``say``), as the catalog's repair does; its texts are embedded again.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

VECTORS_FILE = "vectors.sqlite"

SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model TEXT NOT NULL,
    text_sha256 BLOB NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, text_sha256)
) WITHOUT ROWID;
"""
LOOKUP_ROWS = 500  # hashes per SELECT (SQLite's variable limit is 32,766 today, 999 on old builds)


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


@dataclass
class ReuseCounts:
    """What reuse saved: texts the phase needed, and how many of them the model was asked for."""

    texts: int = 0
    sent: int = 0

    @property
    def reused(self) -> int:
        return self.texts - self.sent


class VectorReuse:
    """Vectors of texts embedded before, by model identity; thread-safe, one short transaction per write."""

    def __init__(self, path: Path, say: Callable[[str], None] | None = None):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._say = say or (lambda message: None)
        self._lock = threading.Lock()
        try:
            self._db = _open(path)
        except sqlite3.DatabaseError as exc:
            if not _is_damage(exc, path):
                raise
            self._db = self._set_aside(exc)
        self.counts = ReuseCounts()
        self._model = ""  # the identity met last: a new one drops the others' rows

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _set_aside(self, exc: BaseException) -> sqlite3.Connection:
        """Move the damaged store (and its journal) aside and start an empty one; say so once."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        damaged = self.path.with_name(f"{self.path.stem}.damaged-{stamp}{self.path.suffix}")
        for suffix in ("", "-wal", "-shm"):
            source = Path(f"{self.path}{suffix}")
            if source.exists() or source.is_symlink():
                shutil.move(str(source), f"{damaged}{suffix}")
        self._say(
            f"The vector reuse cache was damaged ({exc}); it was set aside as {damaged.name} and started "
            "afresh: texts embedded before are embedded again."
        )
        return _open(self.path)

    def _healing(self, work: Callable[[], object], fallback: object) -> object:
        """Run ``work`` on the store (lock held); a damaged page met now sets the store aside and
        answers ``fallback`` (a cache miss)."""
        try:
            return work()
        except sqlite3.DatabaseError as exc:
            if not _is_damage(exc, self.path):
                raise
            try:
                self._db.close()
            except sqlite3.Error:
                pass
            self._db = self._set_aside(exc)
            return fallback

    def vectors(
        self, model: str, dimension: int, texts: Sequence[str], embed: Callable[[list[str]], np.ndarray]
    ) -> np.ndarray:
        """The texts' vectors, row for row; ``embed`` is called once, with the distinct texts never seen
        under ``model`` (or not at all when there are none). Its vectors are kept for next time."""
        if model != self._model:
            self.keep_only(model)
            self._model = model
        keys = [text_key(t) for t in texts]
        known = self._lookup(model, dimension, set(keys))
        missing: dict[bytes, str] = {}
        for key, text in zip(keys, texts):
            if key not in known and key not in missing:
                missing[key] = text
        if missing:
            fresh = embed(list(missing.values()))
            self._store(model, zip(missing, fresh))
            known.update(zip(missing, fresh))
        self.counts.texts += len(texts)
        self.counts.sent += len(missing)
        if not texts:
            return np.zeros((0, dimension), np.float32)
        return np.stack([np.asarray(known[key], np.float32) for key in keys])

    def keep_only(self, model: str) -> None:
        """Forget the vectors of every other model identity (the index no longer holds them)."""
        with self._lock:
            self._healing(lambda: self._db.execute("DELETE FROM vectors WHERE model != ?", (model,)), None)

    def _lookup(self, model: str, dimension: int, keys: set[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        wanted = list(keys)

        def look() -> dict[bytes, np.ndarray]:
            for start in range(0, len(wanted), LOOKUP_ROWS):
                part = wanted[start : start + LOOKUP_ROWS]
                rows = self._db.execute(
                    f"SELECT text_sha256, vector FROM vectors WHERE model = ? AND text_sha256 IN "
                    f"({','.join('?' * len(part))})",
                    (model, *part),
                ).fetchall()
                for key, blob in rows:
                    vector = np.frombuffer(blob, np.float32)
                    if vector.shape == (dimension,):  # another size under the same name: embed it again
                        found[key] = vector
            return found

        with self._lock:
            return self._healing(look, {})  # type: ignore[return-value]

    def _store(self, model: str, rows) -> None:
        values = [(model, key, np.asarray(v, np.float32).tobytes()) for key, v in rows]

        def store() -> None:
            self._db.execute("BEGIN")
            try:
                self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", values)
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

        with self._lock:
            self._healing(store, None)


def _open(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(str(path), timeout=30, check_same_thread=False, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(SCHEMA)
    except BaseException:
        db.close()
        raise
    return db


def _is_damage(exc: sqlite3.DatabaseError, path: Path) -> bool:
    """Damage, not a busy or read-only store: junk or a bad page, or something other than a file in its place."""
    if path.exists() and not path.is_file():
        return True
    if not isinstance(exc, sqlite3.OperationalError):
        return True  # "file is not a database", "database disk image is malformed"
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text


@contextmanager
def vector_reuse(
    data_dir: Path, enabled: bool, say: Callable[[str], None] | None = None
) -> Iterator[VectorReuse | None]:
    """The data dir's reuse store for one indexing run, or None when ``indexing.reuse_vectors`` is off;
    ``say`` is told when a damaged store was set aside."""
    if not enabled:
        yield None
        return
    reuse = VectorReuse(data_dir / VECTORS_FILE, say)
    try:
        yield reuse
    finally:
        reuse.close()
