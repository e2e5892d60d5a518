"""Search filters from what a user types: file types (``pdf,docx`` or extensions) and days."""

from __future__ import annotations

from datetime import datetime

from .errors import BadInput
from .ingest.extract.registry import resolve_types
from .search.types import Filters


def parse_filters(
    types: str | list[str] | None = None, modified_after: str | None = None, modified_before: str | None = None
) -> Filters | None:
    """``Filters`` for ``search``/``tree``, None when nothing is asked; days are inclusive (``2026-01-01``)."""
    names = types.split(",") if isinstance(types, str) else list(types or [])
    try:
        doc_types = resolve_types(names)
        after = _day(modified_after) if modified_after else None
        before = _day(modified_before) + 86_400 if modified_before else None
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    if not (doc_types or after or before):
        return None
    return Filters(doc_types, after, before)


def _day(text: str) -> float:
    """The start of a day (YYYY-MM-DD, local time) in epoch seconds."""
    try:
        return datetime.strptime(text.strip(), "%Y-%m-%d").timestamp()
    except ValueError:
        raise ValueError(f"{text!r} is not a date; write it as YYYY-MM-DD") from None
