"""Text from the outside made safe to pass on: names and queries with lone surrogates, control characters.

Two kinds of odd text reach every boundary. A file name that is not valid UTF-8 comes back from
the OS with its bytes as lone surrogates (``surrogateescape``), and a client can send a lone
surrogate in JSON (``"\\ud800"``): neither can be encoded to UTF-8, so JSON answers, SQLite,
LanceDB and the terminal all fail on them. And a file name may hold control characters: printed
raw, ``\\x1b[31m`` recolours the user's terminal, ``\\r`` rewrites the line.
"""

from __future__ import annotations

import json
import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def has_surrogates(text: str) -> bool:
    return _SURROGATE.search(text) is not None


def without_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (an undecodable byte of a name, a broken client string) as U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def cleaned(value: Any) -> Any:
    """``value`` with every string in it (list items, dict keys and values) free of lone surrogates."""
    if isinstance(value, str):
        return without_surrogates(value)
    if isinstance(value, list):
        return [cleaned(v) for v in value]
    if isinstance(value, dict):
        return {cleaned(k): cleaned(v) for k, v in value.items()}
    return value


def clean_json(message: str) -> str:
    """A JSON message as every door reads a client's JSON: Python's reader takes a lone surrogate
    escape (``"\\ud800"``) where stricter ones refuse the whole message, and each one becomes U+FFFD,
    as in an HTTP body. What is not JSON comes back as it is, for the reader behind to refuse."""
    try:
        value = json.loads(message)
    except ValueError:
        return message
    return json.dumps(cleaned(value), ensure_ascii=False)


def printable(text: str, *, lines: bool = False) -> str:
    """``text`` as a terminal may show it: control and direction characters escaped (``\\x1b``, ``\\n``,
    ``\\u202e``), lone surrogates replaced; everything else as it is. With ``lines``, line breaks and tabs
    are kept (running text, not a name)."""
    return _CONTROL.sub(_escape_lines if lines else _escape, without_surrogates(text))


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def _escape_lines(match: re.Match[str]) -> str:
    return match.group() if match.group() in "\n\t" else _escape(match)
