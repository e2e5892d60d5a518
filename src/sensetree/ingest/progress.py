"""Live indexing figures: the two phases' counts (keyword-ready N / M, semantic N / M), per-stage throughput, ETA."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..notices import meaning_sentence

RATE_SMOOTHING = 0.3  # weight of the newest batch in the embedding rate


@dataclass
class Stage:
    """What one stage did in this run: how much, in how many seconds of its own time."""

    count: int = 0
    seconds: float = 0.0

    def add(self, count: int, seconds: float) -> None:
        self.count += count
        self.seconds += seconds

    @property
    def per_s(self) -> float:
        return self.count / self.seconds if self.seconds > 0 else 0.0


@dataclass
class Progress:
    files: int = 0  # catalog rows: files and block folders
    keyword: int = 0  # past the keyword phase: findable by keyword (or failed for good)
    semantic: int = 0  # past the semantic phase: every chunk has its vector (or failed for good)
    chunks_left: int = 0  # stored chunks still without a vector
    files_done: int = 0  # files the keyword phase finished in this run (stored, unchanged, gone or failed)
    failed: int = 0  # files that failed in this run
    current: str = ""
    phase: str = ""  # 'keyword', 'ocr' or 'semantic' while one runs
    paused: str = ""  # why the queue is waiting, if it is
    slowed: str = ""  # why indexing rests between steps, if it does (on battery: ingest/pace.py)
    started: float = field(default_factory=time.monotonic)
    extraction: Stage = field(default_factory=Stage)  # files
    ocr: Stage = field(default_factory=Stage)  # pages read by OCR
    sense: Stage = field(default_factory=Stage)  # files whose sense a model wrote
    embedding: Stage = field(default_factory=Stage)  # chunks
    embed_rate: float = 0.0  # chunks/s of the latest semantic batches, smoothed
    sent_to_model: int = 0  # texts the embedding model was asked for in this run; the other chunks reused a vector

    def note_batch_rate(self, chunks: int, seconds: float) -> None:
        if chunks and seconds > 0:
            rate = chunks / seconds
            self.embed_rate = (
                rate if not self.embed_rate else (1 - RATE_SMOOTHING) * self.embed_rate + RATE_SMOOTHING * rate
            )

    @property
    def semantic_eta(self) -> float | None:
        """Seconds until every stored chunk has its vector, at the recent rate; None before a rate is known."""
        if not self.chunks_left:
            return 0.0
        return self.chunks_left / self.embed_rate if self.embed_rate > 0 else None

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def as_dict(self) -> dict[str, Any]:
        eta = self.semantic_eta
        return {
            "files": self.files,
            "keyword_ready": self.keyword,
            "semantic": self.semantic,
            "chunks_left": self.chunks_left,
            "files_done": self.files_done,
            "failed": self.failed,
            "current": self.current,
            "phase": self.phase,
            "paused": self.paused,
            "slowed": self.slowed,
            "embed_rate": round(self.embed_rate, 3),
            "sent_to_model": self.sent_to_model,
            "semantic_eta_s": None if eta is None else round(eta, 1),
            "meaning": meaning_sentence(self.files, self.semantic, eta if self.embed_rate > 0 else None),
            "stages": {
                "extraction": _stage("files", self.extraction),
                "ocr": _stage("pages", self.ocr),
                "sense": _stage("files", self.sense),
                "embedding": _stage("chunks", self.embedding),
            },
        }


def _stage(unit: str, stage: Stage) -> dict[str, float]:
    return {unit: stage.count, "seconds": round(stage.seconds, 3), "per_s": round(stage.per_s, 2)}
