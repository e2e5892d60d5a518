"""What one answer cost: when its first token showed, how fast the last round streamed, and the
prompt tokens the server read or took from its cache. Filled as the rounds stream; the ``Answer`` reports it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..models.llm import ChatTurn


@dataclass
class RunStats:
    """One answer's record; a round is one streamed model call."""

    started: float = field(default_factory=time.perf_counter)  # when the question came
    first_shown: float | None = None  # the first text the user saw, in any round
    round_shown: float | None = None  # the first text the user saw in the current round
    round_end: float | None = None
    last_chunks: int = 0  # streamed pieces of the latest round
    prompt_tokens: int | None = None  # read by the server, all rounds; None where it never said
    cached_tokens: int | None = None  # taken from its cache instead

    def round_started(self) -> None:
        self.round_shown = None

    def text_shown(self) -> None:
        now = time.perf_counter()
        self.first_shown = self.first_shown or now
        self.round_shown = self.round_shown or now

    def round_ended(self, turn: ChatTurn) -> None:
        self.round_end = time.perf_counter()
        self.last_chunks = turn.chunks
        if turn.prompt_tokens is not None:
            self.prompt_tokens = (self.prompt_tokens or 0) + turn.prompt_tokens
            self.cached_tokens = (self.cached_tokens or 0) + (turn.cached_tokens or 0)

    @property
    def ttft_s(self) -> float | None:
        """From the question to the first token of the answer shown."""
        return None if self.first_shown is None else self.first_shown - self.started

    @property
    def tokens(self) -> int:
        """Streamed pieces of the answer shown (the last round), none when it showed nothing."""
        return 0 if self.round_shown is None else self.last_chunks

    @property
    def tokens_per_s(self) -> float | None:
        if self.round_shown is None or self.round_end is None or self.last_chunks <= 1:
            return None
        elapsed = self.round_end - self.round_shown
        return (self.last_chunks - 1) / elapsed if elapsed > 0 else None
