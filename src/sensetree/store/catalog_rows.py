"""What the catalog's rows are, and the statuses a file goes through: shared by the catalog's parts."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Status(StrEnum):
    """Where a file is in indexing. The transitions, each written once in ``catalog_states.States``:

    - ``pending`` -> ``keyword`` (``mark_keyword``: its text is stored, findable by keyword)
      -> ``indexed`` (``mark_embedded``: every chunk has its vector), or ``failed`` for a file whose
      context entry is all that could be stored;
    - any -> ``failed`` after ``max_attempts`` failures (``mark_failed``, ``requeue_for_repair``);
    - back to ``pending`` (``BACK_TO_PENDING``) when it changes on disk, is retried, requeued or the
      model changes; ``indexed`` -> ``keyword`` when some of its vectors went missing.
    """

    PENDING = "pending"
    KEYWORD = "keyword"
    INDEXED = "indexed"
    FAILED = "failed"


STATUSES = tuple(status.value for status in Status)
PENDING, KEYWORD, INDEXED, FAILED = Status
# Back in the queue for the keyword phase, as a fresh start (its attempts and error forgotten).
BACK_TO_PENDING = f"status = '{PENDING}', attempts = 0, error = NULL"


@dataclass(frozen=True)
class DiskState:
    """What a re-scan compares the disk against."""

    kind: str
    size: int
    mtime: float
    status: str
    ctime: float | None = None  # None where the OS has none, or the row predates the column
    inode: int | None = None


@dataclass(frozen=True)
class SenseRow:
    text: str
    source: str  # 'llm', 'excerpt', 'pinned', or 'pending' (the excerpt until the model writes one)
    pinned: bool


@dataclass(frozen=True)
class FileRow:
    path: str
    root: str
    kind: str
    size: int
    mtime: float
    content_hash: str | None
    status: str
    doc_type: str | None
    chunks: int
    members: int
    attempts: int
    error: str | None
    ocr_wanted: int = 0
    notes: str | None = None


# The columns of a FileRow, in its order.
COLUMNS = (
    "path, root, kind, size, mtime, content_hash, status, doc_type, chunks, members, attempts, error, ocr_wanted, notes"
)


@dataclass(frozen=True)
class StoredText:
    """A file whose text rows were just stored by the keyword phase."""

    path: str
    content_hash: str
    mtime: float
    size: int
    doc_type: str
    chunks: int
    error: str | None = None  # the content could not be read: only its context entry is stored
    ocr_wanted: int = 0  # pages still waiting for OCR
    notes: str | None = None  # for the queue: why it is context only, pages OCR could not read
