"""Answers of the engine's operations that belong to no search stage: a folder's listing and what a
change to the queue did. Light on purpose: every interface imports them (a command answered by a
running server loads neither the stores nor the models)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Entry:
    name: str
    path: str
    is_dir: bool
    kind: str                  # file, folder or block
    status: str | None         # indexed, keyword, pending, failed, block, block member, ignored, not indexed
    doc_type: str | None = None
    chunks: int = 0
    error: str | None = None
    members: int = 0


@dataclass
class Listing:
    path: str | None
    parent: str | None
    entries: list[Entry] = field(default_factory=list)
    more: int = 0  # entries left out past LIST_ENTRIES

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "parent": self.parent, "entries": [asdict(e) for e in self.entries],
                "more": self.more}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Listing:
        return cls(d["path"], d["parent"], [Entry(**e) for e in d["entries"]], d["more"])


@dataclass(frozen=True)
class Requeued:
    """How many files go back to the queue (``retry``, ``reindex``)."""

    requeued: int

    def as_dict(self) -> dict:
        return {"requeued": self.requeued}

    @classmethod
    def from_dict(cls, d: dict) -> Requeued:
        return cls(int(d["requeued"]))


@dataclass(frozen=True)
class Ignored:
    """How many paths were left out of the index (``ignore``)."""

    ignored: int

    def as_dict(self) -> dict:
        return {"ignored": self.ignored}

    @classmethod
    def from_dict(cls, d: dict) -> Ignored:
        return cls(int(d["ignored"]))


@dataclass(frozen=True)
class TakenBack:
    """The path ``unignore`` gave back to the index (the next scan picks it up)."""

    path: str

    def as_dict(self) -> dict:
        return {"path": self.path}

    @classmethod
    def from_dict(cls, d: dict) -> TakenBack:
        return cls(str(d["path"]))
