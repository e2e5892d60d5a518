"""What the CLI prints about the user's files, made safe for a terminal.

File names, paths, snippets and notices come from the disk: a name may hold rich markup
(``[bold]``) or control characters (``\\x1b[31m`` recolours the terminal, ``\\r`` rewrites the
line). Every human-readable line goes through ``escape``; JSON output is left exact.
"""

from __future__ import annotations

import logging

from rich.markup import escape as _escape_markup
from rich.text import Text

from ..safe_text import printable


def escape(text: str) -> str:
    """``text`` for rich markup: control characters shown escaped (``\\x1b``), square brackets taken literally."""
    return _escape_markup(printable(text))


def indented(text: str, indent: str = "        ") -> str:
    """Several lines (a file's notes) for rich markup, each escaped and indented under its heading."""
    return "\n".join(indent + escape(line) for line in text.splitlines())


def plain(text: str, style: str = "") -> Text:
    """Running text (a snippet, an answer) as a rich ``Text``: line breaks kept, other control characters escaped."""
    return Text(printable(text, lines=True), style=style)


class PrintableLog(logging.Formatter):
    """Log lines as a terminal may show them: the paths they name escaped like every other line."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record), lines=True)


def log_warnings(fmt: str = "%(message)s") -> None:
    """Warnings and worse to stderr, escaped (``PrintableLog``)."""
    handler = logging.StreamHandler()
    handler.setFormatter(PrintableLog(fmt))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
