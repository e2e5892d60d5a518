"""The sense of a file (design §1.4) and the contextual text built from it.

A sense says first what the document *is*, then its key facts. Chunk 0 carries it in its
stored text, so it is keyword-searchable; later chunks carry the file name and the start
of the sense in their embedded text, so a chunk deep in a file still knows whose it is.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass

from ..config import Settings
from ..models.llm import ChatClient, LLMError
from ..store.stored_text import sense_head, without_head

log = logging.getLogger(__name__)

SENSE_INPUT_CHARS = 4000
SENSE_MAX_CHARS = 1200
SENSE_MIN_TEXT = 120
FALLBACK_CHARS = 300
PREFIX_SENSE_CHARS = 180
PAUSE_AFTER_FAILURE = 60.0  # seconds the excerpt is used without asking a sense endpoint that just failed

SENSE_PROMPT = (
    "You describe documents for a personal search index. In 2 to 4 factual sentences, say first "
    "what the document is (invoice, contract, course notes, CV, bank statement, meeting minutes, "
    "source code, ...), who or what it concerns, then its key facts: dates, amounts, subject, "
    "people, organisations. Write in the document's language. No preamble, no markdown."
)


def excerpt_sense(text: str) -> str:
    """The silent fallback: the first 300 characters, newlines as spaces."""
    return re.sub(r"\s+", " ", text[: FALLBACK_CHARS * 2]).strip()[:FALLBACK_CHARS]


@dataclass(frozen=True)
class Sense:
    text: str
    source: str  # 'llm', 'excerpt' or 'pinned'


class SenseWriter:
    """Writes senses with a chat model when one is configured; otherwise, or on failure, the excerpt.

    After a failure the endpoint is left alone for a minute: a server that hangs would otherwise
    cost its full timeout on every file and stall the queue.
    """

    def __init__(self, client: ChatClient | None = None):
        self._client = client
        self._paused_until = 0.0

    @property
    def uses_model(self) -> bool:
        return self._client is not None

    def write(self, text: str, *, name: str, folder: str, doc_type: str, qualify: bool = True) -> Sense:
        if (
            self._client is None
            or not qualify
            or len(text.strip()) < SENSE_MIN_TEXT
            or time.monotonic() < self._paused_until
        ):
            return Sense(excerpt_sense(text), "excerpt")
        user = (
            f"File name: {name}\nFolder: {folder}\nType: {doc_type}\n\n"
            f"Beginning of the content:\n{text[:SENSE_INPUT_CHARS]}"
        )
        try:
            answer = self._client.complete(
                [{"role": "system", "content": SENSE_PROMPT}, {"role": "user", "content": user}],
                max_tokens=320,
                no_reasoning=True,
            )
        except LLMError as exc:
            log.info(
                "sense for %s falls back to the excerpt, and the endpoint is left alone for %.0f s: %s",
                name,
                PAUSE_AFTER_FAILURE,
                exc,
            )
            self._paused_until = time.monotonic() + PAUSE_AFTER_FAILURE
            return Sense(excerpt_sense(text), "excerpt")
        answer = re.sub(r"<think>.*?</think>", "", answer, flags=re.S).strip()
        if not answer:
            return Sense(excerpt_sense(text), "excerpt")
        return Sense(answer[:SENSE_MAX_CHARS], "llm")


def stored_texts(chunks: list[str], sense: str, doc_type: str) -> list[str]:
    """What the index keeps (BM25, snippets, rerank): chunk 0 prefixed by ``[type] sense``."""
    if not chunks:
        return []
    return [sense_head(sense, doc_type) + chunks[0], *chunks[1:]]


def embedding_context(sense: str, file_name: str) -> str:
    """What stands before every chunk after the first when it is embedded: ``name · sense[:180]``."""
    flat_sense = re.sub(r"\s+", " ", sense).strip()
    return f"{file_name} · {flat_sense[:PREFIX_SENSE_CHARS]}"


def embedded_text(chunk_index: int, stored: str, context: str, sense_source: str) -> str:
    """What the embedding model sees: later chunks behind their file's context; chunk 0 as stored,
    except when its sense is the excerpt fallback. That sense is chunk 0's own first 300 characters,
    so the head would make the model read them twice and push the chunk's end past a 256-token
    model's window (57 % of SciFact's first chunks with MiniLM). Without it, SciFact's dense leg
    gains 0.007-0.009 nDCG@10 with MiniLM (docs/benchmarks.md)."""
    if chunk_index > 0:
        return f"{context}\n\n{stored}"
    return without_head(stored) if sense_source == "excerpt" else stored


def sense_writer(settings: Settings) -> SenseWriter:
    """A writer on the sense endpoint the settings name, or the excerpt fallback alone."""
    s = settings
    if s["sense.base_url"] and s["sense.model"]:
        return SenseWriter(ChatClient(s["sense.base_url"], s["sense.model"], s["sense.api_key"], s["sense.timeout"]))
    return SenseWriter(None)
