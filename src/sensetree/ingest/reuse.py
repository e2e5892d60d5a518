"""Each distinct embedded text goes to the model once per model identity.

Folders hold copies: the same licence, changelog or boilerplate paragraph in many files (34 %
of the chunks of a ``/usr/share/doc`` copy). The semantic phase asks ``VectorReuse.vectors`` for
a batch's vectors: texts repeated within the batch are embedded once, and a text embedded
before under the same model identity takes the vector stored then, byte for byte. The store is
a small SQLite file beside the catalog, keyed by (model identity, sha256 of the embedded text);
it costs about the size of the vectors themselves (1.5 KB per distinct 384-d text). The first
batch under a new model identity drops the other identities' rows: the index no longer holds them.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
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

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), timeout=30, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self.counts = ReuseCounts()
        self._model = ""  # the identity met last: a new one drops the others' rows

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def vectors(self, model: str, dimension: int, texts: Sequence[str],
                embed: Callable[[list[str]], np.ndarray]) -> np.ndarray:
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
            self._db.execute("DELETE FROM vectors WHERE model != ?", (model,))

    def _lookup(self, model: str, dimension: int, keys: set[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        wanted = list(keys)
        with self._lock:
            for start in range(0, len(wanted), LOOKUP_ROWS):
                part = wanted[start:start + LOOKUP_ROWS]
                rows = self._db.execute(
                    f"SELECT text_sha256, vector FROM vectors WHERE model = ? AND text_sha256 IN "
                    f"({','.join('?' * len(part))})", (model, *part)).fetchall()
                for key, blob in rows:
                    vector = np.frombuffer(blob, np.float32)
                    if vector.shape == (dimension,):  # another size under the same name: embed it again
                        found[key] = vector
        return found

    def _store(self, model: str, rows) -> None:
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                                     [(model, key, np.asarray(v, np.float32).tobytes()) for key, v in rows])
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise


@contextmanager
def vector_reuse(data_dir: Path, enabled: bool) -> Iterator[VectorReuse | None]:
    """The data dir's reuse store for one indexing run, or None when ``indexing.reuse_vectors`` is off."""
    if not enabled:
        yield None
        return
    reuse = VectorReuse(data_dir / VECTORS_FILE)
    try:
        yield reuse
    finally:
        reuse.close()
