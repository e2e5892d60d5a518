"""The error tree (errors.py) as the HTTP status a caller can act on: each error carries its own
(``SenseTreeError.status``, the most specific class's); anything else is a bug, 500."""

from __future__ import annotations

from ...errors import SenseTreeError


def status_of(exc: Exception) -> int:
    """The status of an error: the API's answer, or a stream's error event after its 200 went out."""
    return exc.status if isinstance(exc, SenseTreeError) else 500
