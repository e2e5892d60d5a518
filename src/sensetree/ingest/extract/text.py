"""Plain text, Markdown, source code, CSV/TSV, JSON and Jupyter notebooks: decoded, and kept as they are."""

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


def read_notebook(data: bytes, job: Job) -> Iterator[Block]:
    """A Jupyter notebook's markdown and code cells, in order; outputs are left out (they are results, not writing)."""
    notebook = json.loads(require_text(data))
    cells = notebook.get("cells")
    if cells is None:  # nbformat 3 kept its cells in worksheets
        cells = [cell for sheet in notebook.get("worksheets", []) for cell in sheet.get("cells", [])]
    for cell in cells:
        if cell.get("cell_type") not in ("markdown", "code"):
            continue
        source = cell.get("source", cell.get("input", ""))
        text = "".join(source) if isinstance(source, list) else str(source)
        if text.strip():
            yield text
