"""The engine's handlers, one module per area; each handler answers one operation (``operations.py``)
and is bound to it by ``@handles`` (``registry.py``). Adding an operation: its declaration in
``operations.py`` and one ``@handles`` function in the module of its area.

    search      search, tree, similar: words read as filters, retrieval, what the catalog adds
    files       browse, file, preview, read, and a PDF page as an image
    summaries   summarise, compare
    library     roots, add, remove, folder-mode, sense, pin, retry, reindex, ignore, unignore
    overview    status, queue
    settings    settings, set, models, endpoint-test
    indexing    index (once, or watching), one run (``Engine.index``), the embedder it uses, the disk watcher
"""

from __future__ import annotations

from typing import Any, Callable

from . import files, indexing, library, overview, search, settings, summaries  # noqa: F401  (each registers its handlers)
from .registry import HANDLERS, operation_taking

__all__ = ["HANDLERS", "handler_for"]


def handler_for(params: type) -> Callable[..., Any]:
    """The handler of the operation whose parameter class is ``params``."""
    return HANDLERS[operation_taking(params).name]
