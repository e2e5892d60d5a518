"""Words of the language, which the typo correction (spelling.py) never rewrites.

A query word no file holds is not always a typo: "last" in "the last report" is English, and
correcting it to the nearest indexed term ("list") changes what is searched. So a word is corrected
only when it is a word neither of the index nor of the language. The language's words are the
whole-word entries of the English WordPiece vocabulary shipped in this package with MiniLM
(``models/all-MiniLM-L6-v2.tokenizer.json``, Apache-2.0): 20,362 lower-case words of four letters or
more, the commonest of English (a typo of a name, "Marchetty", or of a word, "lighthuose", is none of
them). A word is also one when it is such a word with a plural or verb ending ("reports", "lasted").
Read once per process (about 60 ms); no file, no words: nothing is protected, as before.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

from ..models import embeddings

_LETTERS = re.compile(r"[a-z]{4,}")
ENDINGS = ("s", "es", "ed", "ing")


@functools.cache
def words() -> frozenset[str]:
    try:
        vocab = json.loads(
            (Path(embeddings.__file__).parent / embeddings.MINILM_TOKENIZER).read_text(encoding="utf-8")
        )["model"]["vocab"]
    except (OSError, ValueError, KeyError):
        return frozenset()
    return frozenset(piece for piece in vocab if _LETTERS.fullmatch(piece))


def is_word(word: str) -> bool:
    """Whether ``word`` (lower case) is a common word of the language, as written or with an ending."""
    known = words()
    return word in known or any(word.endswith(end) and word[: -len(end)] in known for end in ENDINGS)
