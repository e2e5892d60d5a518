"""Near-identical files: versions of one document (``report_v2.docx``, ``report_final.docx``).

Two texts are versions of each other when most of their word shingles (runs of ``SHINGLE_WORDS``
words) are shared: the Jaccard share of the two shingle sets. Shingles see wording, not topic, so
two reports on one subject share few while an edited copy shares most. Exact sets, not MinHash:
``similar`` compares one file with the few dozen nearest by meaning, where exact is cheap
(MinHash pays off when every pair of a whole index is compared).
"""

from __future__ import annotations

import re
import zlib

SHINGLE_WORDS = 5
VERSION_SHARE = 0.5  # shingles shared, of both texts' shingles, for two files to be versions of one
MAX_WORDS = 50_000  # of each text: a long file is compared by its first 50,000 words
_WORD = re.compile(r"\w+", re.UNICODE)


def shingles(text: str) -> frozenset[int]:
    """The text's runs of ``SHINGLE_WORDS`` words (case and punctuation ignored), hashed; a text shorter
    than that is one shingle of all its words."""
    words = _WORD.findall(text.casefold())[:MAX_WORDS]
    if len(words) < SHINGLE_WORDS:
        return frozenset([zlib.crc32(" ".join(words).encode())]) if words else frozenset()
    return frozenset(
        zlib.crc32(" ".join(words[i : i + SHINGLE_WORDS]).encode()) for i in range(len(words) - SHINGLE_WORDS + 1)
    )


def shared(one: frozenset[int], other: frozenset[int]) -> float:
    """The Jaccard share of two shingle sets, in [0, 1]; 0 when either is empty."""
    if not one or not other:
        return 0.0
    return len(one & other) / len(one | other)
