"""Polling for the tests: wait until something the product does in the background has happened."""

from __future__ import annotations

import time
from typing import Callable


def wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> bool:
    """True as soon as ``condition()`` holds; after ``timeout`` seconds, its last answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()
