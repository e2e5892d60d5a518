"""Waiting for an embedding endpoint that is down, instead of failing every file (design §7.2)."""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Callable, TypeVar

from ..errors import SenseTreeError
from ..models.embeddings import EndpointUnavailable, wait_time
from .progress import Progress

log = logging.getLogger(__name__)
T = TypeVar("T")
WAIT_META = "endpoint_wait"  # {"reason", "until"}: why the vectors wait, for `status` in another process
WAIT_SLACK = 30.0  # seconds a waiting record outlives its next retry: a killed process's record fades


class IndexingPaused(SenseTreeError, RuntimeError):
    """The embedding endpoint stayed down longer than we were asked to wait; files stay pending."""


def wait_for_endpoint(
    call: Callable[[], T],
    progress: Progress,
    max_wait: float,
    stop: threading.Event,
    notify: Callable[[Progress], None],
    record: Callable[[str, str], None] | None = None,
    cleared: bool = False,
) -> T:
    """``call()``, retried with backoff while the endpoint is unavailable; IndexingPaused after ``max_wait`` seconds.

    ``progress.paused`` says why the queue waits, for as long as it does; ``record`` (the catalog's
    ``set_meta``) keeps it for ``status`` in another process (``recorded_wait``), given up included, until a
    call succeeds after a wait (or at once with ``cleared``: the first call of a run).
    """
    attempt, waited = 0, 0.0
    while True:
        try:
            result = call()
            progress.paused = ""
            if record is not None and (attempt or cleared):
                record(WAIT_META, "")
            return result
        except EndpointUnavailable as exc:
            delay = wait_time(attempt, exc.retry_after)
            if waited + delay > max_wait:
                progress.paused = ""
                message = f"{exc}; gave up after waiting {waited:.0f} s, files stay pending"
                if record is not None:  # true until the next run reaches the model
                    record(WAIT_META, json.dumps({"reason": message, "until": None}))
                raise IndexingPaused(message) from exc
            progress.paused = f"{exc}; retrying in {delay:.0f} s"
            if record is not None:
                record(WAIT_META, json.dumps({"reason": progress.paused, "until": time.time() + delay + WAIT_SLACK}))
            log.warning(progress.paused)
            notify(progress)
            if stop.wait(delay):
                raise IndexingPaused("stopped while the endpoint was down") from exc
            waited += delay
            attempt += 1


def recorded_wait(value: str | None) -> str:
    """Why the vectors wait for the embedding model, as an indexing process recorded it (``WAIT_META``); ""
    when nothing waits, or the record is older than the retry it announced (its process is gone)."""
    try:
        state = json.loads(value) if value else None
    except ValueError:
        return ""
    if not isinstance(state, dict) or not isinstance(state.get("reason"), str):
        return ""
    until = state.get("until")
    if until is not None and (not isinstance(until, (int, float)) or time.time() > until):
        return ""
    return state["reason"]
