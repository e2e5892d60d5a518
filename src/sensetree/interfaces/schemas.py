"""JSON schemas of the operations' results, derived from the result types with pydantic's
``TypeAdapter`` (``answers.adapter``): every result is an ``answers.Fields`` dataclass whose JSON is
its annotated fields (a field renamed by its ``alias``, a float ``Rounded``, a field ``exclude``d), so
the JSON an interface sends, the way a served answer is read back, and its schema come from one
declaration. The HTTP routes document those responses in OpenAPI (``api/operations.py``).
"""

from __future__ import annotations

from typing import Any

from ..answers import Fields, adapter
from ..operations import Operation

__all__ = ["adapter", "declared", "result_schema"]


def declared(result: type) -> bool:
    """Whether ``result``'s JSON is derived from its type, so that its type is its schema."""
    return isinstance(result, type) and issubclass(result, Fields)


def result_schema(op: Operation) -> dict[str, Any]:
    """The JSON schema of ``op``'s answer (as written: field aliases, rounded floats)."""
    if not declared(op.result):
        raise TypeError(f"{op.result.__name__} is not a result type (answers.Fields)")
    schema: dict[str, Any] = adapter(op.result).json_schema(mode="serialization", by_alias=True)
    return schema
