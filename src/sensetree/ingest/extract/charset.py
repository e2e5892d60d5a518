"""Bytes to text in whatever encoding they were written: BOMs, UTF-8, BOM-less UTF-16, then a guess."""

from __future__ import annotations

import codecs
import re

import charset_normalizer

from . import limits
from .base import NotText

# UTF-32 first: its little-endian BOM starts with the UTF-16 one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f\ufffd]")


def decode(data: bytes) -> str | None:
    """Bytes to str, or None when the bytes are not text in any encoding we recognise."""
    text: str | None
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            text = data[len(bom) :].decode(encoding, errors="replace")
            break
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        # Valid UTF-8 that is full of control characters may be UTF-16 without a BOM; if its
        # NULs are not laid out like UTF-16's, they are stray (padding, C strings): spaces.
        sample = data[: limits.DETECT_SAMPLE]
        if text is not None and not looks_printable(text[: limits.PRINTABLE_SAMPLE]) and not _looks_like_utf16(sample):
            text = text.replace("\x00", " ")
        if text is None or not looks_printable(text[: limits.PRINTABLE_SAMPLE]):
            guessed = _guess_encoding(sample)
            if guessed is None:
                return None
            text = data.decode(guessed, errors="replace")
    return text if looks_printable(text[: limits.PRINTABLE_SAMPLE]) else None


def require_text(data: bytes) -> str:
    """`decode`, raising `NotText` for binary data."""
    text = decode(data)
    if text is None:
        raise NotText
    return text


def looks_printable(sample: str) -> bool:
    """Text has almost no control characters; binary decoded as text is full of them."""
    return len(_UNPRINTABLE.findall(sample)) <= len(sample) * 0.05


def _guess_encoding(sample: bytes) -> str | None:
    # A UTF-8 file with a few bad bytes (a truncated copy, one stray Latin-1
    # character) is still UTF-8: guessing another codec would garble every
    # accented letter in it.
    as_utf8 = sample.decode("utf-8", errors="replace")
    bad = as_utf8.count("\ufffd")
    good = len(as_utf8) - len(as_utf8.encode("ascii", errors="ignore")) - bad
    if good > bad:
        return "utf-8"
    matches = charset_normalizer.from_bytes(sample)
    best = matches.best()
    if best is None:
        return None
    # charset-normalizer scores Western European text identically in cp1252,
    # cp1250 and friends and then picks by name; cp1252 is what such files are
    # written in on Windows.
    for match in matches:
        same_score = (match.chaos, match.coherence) == (best.chaos, best.coherence)
        if same_score and "cp1252" in match.could_be_from_charset:
            return "cp1252"
    return best.encoding


def _looks_like_utf16(sample: bytes) -> bool:
    """BOM-less UTF-16 of mostly Latin text: a zero in most bytes on one side (odd or even) only."""
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    return max(even, odd) >= 0.3 * (len(sample) // 2) and min(even, odd) <= 0.1 * max(even, odd)
