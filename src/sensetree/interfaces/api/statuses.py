"""The error tree (errors.py) as the HTTP status a caller can act on; the most specific class wins."""

from __future__ import annotations

from ...config import SettingsError
from ...errors import BadInput, ModelError, NotFound, WrongKind, ReadOnlyIndex, SenseTreeError, StoreDamaged, WriterBusy
from ...reader import OutsideRoots, Unreadable

STATUSES: dict[type[Exception], int] = {SenseTreeError: 400, BadInput: 400, OutsideRoots: 403, ReadOnlyIndex: 403,
                                        FileNotFoundError: 404, NotFound: 404, WrongKind: 422, WriterBusy: 409, Unreadable: 422, SettingsError: 422,
                                        ModelError: 503, StoreDamaged: 503}


def status_of(exc: Exception) -> int:
    """The status of an error, for a stream that reports it after its 200 went out."""
    return next((STATUSES[kind] for kind in type(exc).__mro__ if kind in STATUSES), 500)
