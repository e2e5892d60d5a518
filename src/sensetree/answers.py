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


@dataclass
class Note:
    """What the model noted of one part of a file (or a folder's file, or a change between two files):
    the summary cites it by ``n``, and ``where`` says which pages or part it covers."""

    n: int
    path: str
    name: str
    where: str                    # "pp. 3–5", "part 2 of 7", "its stored summary", "changed on p. 4"
    text: str
    location: dict | None = None  # the first place it covers: {"page": 3}
    cited: bool = False


@dataclass
class Summary:
    """A whole file, a small folder or two files summarised part by part (``summarise``, ``compare``)."""

    kind: str                     # file, folder or compare
    paths: list[str]
    question: str | None
    summary: str                  # the whole, each sentence citing notes as [n]
    notes: list[Note] = field(default_factory=list)
    parts: int = 0                # parts the model read
    notices: list[str] = field(default_factory=list)
    model: str = ""
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "paths": self.paths, "question": self.question, "summary": self.summary,
                "notes": [asdict(n) for n in self.notes], "parts": self.parts, "notices": self.notices,
                "model": self.model, "seconds": round(self.seconds, 3)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Summary:
        return cls(d["kind"], list(d["paths"]), d.get("question"), d["summary"], [Note(**n) for n in d["notes"]],
                   int(d["parts"]), list(d["notices"]), d.get("model", ""), float(d.get("seconds", 0.0)))
