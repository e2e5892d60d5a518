"""A minimal client for OpenAI-compatible chat endpoints (Ollama, LM Studio, llama.cpp, remote APIs)."""

from __future__ import annotations

from typing import Any

import httpx


class LLMError(RuntimeError):
    """The chat endpoint is unreachable or answered with an error; the message says which."""


class ChatClient:
    def __init__(self, base_url: str, model: str, api_key: str = "", timeout: float = 60.0):
        self.base_url = base_url.rstrip("/")
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)

    def complete(self, messages: list[dict[str, Any]], *, max_tokens: int = 400, temperature: float = 0.2,
                 no_reasoning: bool = False) -> str:
        """One non-streamed answer.

        ``no_reasoning`` asks thinking models to skip their reasoning (indexing calls must be
        fast); a server that rejects those fields is asked again without them.
        """
        body: dict[str, Any] = {"model": self.model, "messages": messages,
                                "max_tokens": max_tokens, "temperature": temperature, "stream": False}
        if no_reasoning:
            extra = {"reasoning_effort": "none", "chat_template_kwargs": {"enable_thinking": False}}
            response = self._post({**body, **extra})
            if response.status_code == 400:
                response = self._post(body)
        else:
            response = self._post(body)
        if response.status_code >= 400:
            raise LLMError(f"chat endpoint {self.base_url} answered {response.status_code}: {response.text[:200]}")
        try:
            return response.json()["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"chat endpoint {self.base_url} sent a malformed answer: {exc}") from exc

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        try:
            return self._client.post(self.base_url + "/chat/completions", json=body)
        except httpx.HTTPError as exc:
            raise LLMError(f"chat endpoint {self.base_url} unreachable: {exc}") from exc
