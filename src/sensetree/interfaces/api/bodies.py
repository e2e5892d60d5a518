"""The request bodies of the API, with what each field means (they show in /openapi.json)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, field_validator

from ...safe_text import without_surrogates


class Body(BaseModel):
    """A JSON request body. JSON may carry a lone surrogate (``"\\ud800"``), which is not text: no index,
    model or answer can hold it, so each one becomes U+FFFD before anything else sees the body."""

    @field_validator("*", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> Any:
        return cleaned(value)


def cleaned(value: Any) -> Any:
    """``value`` with every string in it (list items, dict keys and values) free of lone surrogates."""
    if isinstance(value, str):
        return without_surrogates(value)
    if isinstance(value, list):
        return [cleaned(v) for v in value]
    if isinstance(value, dict):
        return {cleaned(k): cleaned(v) for k, v in value.items()}
    return value
