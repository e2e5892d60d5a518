"""The request bodies of the API, with what each field means (they show in /openapi.json)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, field_validator

from ...safe_text import cleaned


class Body(BaseModel):
    """A JSON request body. JSON may carry a lone surrogate (``"\\ud800"``), which is not text: no index,
    model or answer can hold it, so each one becomes U+FFFD before anything else sees the body."""

    @field_validator("*", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> Any:
        return cleaned(value)
