"""Waiting for an embedding endpoint that is down, instead of failing every file (design §7.2)."""

from __future__ import annotations

import logging
import threading
from typing import Callable, TypeVar

from ..errors import SenseTreeError
from ..models.embeddings import EndpointUnavailable, wait_time
from .progress import Progress

log = logging.getLogger(__name__)
T = TypeVar("T")


class IndexingPaused(SenseTreeError, RuntimeError):
    """The embedding endpoint stayed down longer than we were asked to wait; files stay pending."""


def wait_for_endpoint(
    call: Callable[[], T],
    progress: Progress,
    max_wait: float,
    stop: threading.Event,
    notify: Callable[[Progress], None],
) -> T:
    """``call()``, retried with backoff while the endpoint is unavailable; IndexingPaused after ``max_wait`` seconds.

    ``progress.paused`` says why the queue waits, for as long as it does.
    """
    attempt, waited = 0, 0.0
    while True:
        try:
            result = call()
            progress.paused = ""
            return result
        except EndpointUnavailable as exc:
            delay = wait_time(attempt, exc.retry_after)
            if waited + delay > max_wait:
                progress.paused = ""
                raise IndexingPaused(f"{exc}; gave up after waiting {waited:.0f} s, files stay pending") from exc
            progress.paused = f"{exc}; retrying in {delay:.0f} s"
            log.warning(progress.paused)
            notify(progress)
            if stop.wait(delay):
                raise IndexingPaused("stopped while the endpoint was down") from exc
            waited += delay
            attempt += 1
