"""JSON schemas of the operations' results, derived from the result types with pydantic's
``TypeAdapter`` where an answer's JSON is its dataclass fields (``answers.Fields``: status, queue,
roots, a file's sense, detail and preview, the settings, the models...). The HTTP routes document
those responses in OpenAPI (``api/operations.py``). The search answers (search, tree, similar), a
listing and a summary write their own JSON (renamed and rounded fields) and have no derived schema yet.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import TypeAdapter

from ..answers import Fields
from ..operations import Operation


def declared(result: type) -> bool:
    """Whether ``result``'s JSON is its dataclass fields, so that its type is its schema."""
    return isinstance(result, type) and issubclass(result, Fields)


@functools.cache
def adapter(result: type) -> TypeAdapter[Any]:
    if not declared(result):
        raise TypeError(f"{result.__name__} writes its own JSON: no schema is derived from its type")
    return TypeAdapter(result)


def result_schema(op: Operation) -> dict[str, Any] | None:
    """The JSON schema of ``op``'s answer, or None where its result writes its own JSON."""
    return adapter(op.result).json_schema(mode="serialization") if declared(op.result) else None
