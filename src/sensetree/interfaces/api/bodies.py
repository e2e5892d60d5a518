"""The request bodies of the API, with what each field means (they show in /openapi.json)."""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, Field


class PathBody(BaseModel):
    path: str = Field(description="an absolute path inside a root")


class OpenBody(BaseModel):
    path: str = Field(description="an absolute path inside a root")
    page: Optional[int] = Field(None, ge=1, description="the page to open at, where the viewer takes one")


class OptionalPathBody(BaseModel):
    path: Optional[str] = Field(None, description="a path inside a root; omitted = every failed file")


class FolderModeBody(BaseModel):
    path: str
    mode: Optional[str] = Field(None, description="block, recursive, or null to go back to the heuristics")


class SenseBody(BaseModel):
    path: str
    sense: str = Field(max_length=4000)


class SettingBody(BaseModel):
    key: str
    value: Any = Field(description="a JSON value of the setting's type, or text to parse")


class EndpointTestBody(BaseModel):
    role: str = Field(description="embedding, sense or chat")
    base_url: Optional[str] = None
    model: Optional[str] = None
    api_key: Optional[str] = None


class ChatBody(BaseModel):
    question: str = Field(min_length=1, max_length=10_000)
    scope: Optional[str] = None
    conversation: Optional[str] = None
