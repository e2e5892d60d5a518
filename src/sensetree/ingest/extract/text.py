"""Plain text, Markdown, source code, CSV/TSV and JSON: decoded, and kept as they are."""

from __future__ import annotations

import json
from collections.abc import Iterator

from .base import Block, Job
from .charset import require_text


def read_text(data: bytes, job: Job) -> Iterator[Block]:
    yield require_text(data)


def read_json(data: bytes, job: Job) -> Iterator[Block]:
    """Pretty-print JSON so minified files get line breaks for the chunker; keep invalid JSON as it is."""
    text = require_text(data)
    try:
        yield json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        yield text
