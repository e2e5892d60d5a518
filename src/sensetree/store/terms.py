"""Text analysis for the keyword (BM25) leg: the same words out of a stored chunk and out of a query.

LanceDB's full-text index analyses with one language for the whole table and splits words on
whitespace and punctuation, so a run of Chinese or Thai is one token and German is stemmed as
English. Here each chunk's language is detected (py3langid; a long document's on samples of its
chunks) and its words are stemmed by that language's Snowball stemmer (LanceDB's own, through
``lancedb.tokenize``, or PyStemmer's), then accents are folded (not in Vietnamese); scripts
written without spaces are cut into words: Thai, Lao, Khmer and Burmese by ICU's dictionaries,
Chinese, Japanese and Korean into overlapping character pairs (plus single characters, so a
one-character word is found too). Words keep their combining marks (Hindi matras, Thai tone
marks). The result is stored as space-separated terms in a column that a plain whitespace index
serves.

Beside the stems, what a person types is kept whole (design §2.2): identifiers and numbers
(``HAVE_LIBGEN_H``, ``parsePathspec``, ``1.7.3.3``, ``INV-2024-0042``, paths, e-mail addresses, URLs) whole
beside their pieces among the terms; a file's own name and its folders' names, on its first chunk, in a
column of their own (``name_terms``). The words as written are LanceDB's own index of the stored text
(store/upkeep.py): ``written_terms`` and ``phrases`` are what a query asks of it.

A query loses its languages' stop words and is analysed as written and under each language it
may be in and each language the index mostly holds: a word matches a chunk in any language, and
the terms of a language the index does not hold simply find nothing.

The words people see marked are chosen here too, so that every place agrees: ``marked_terms`` (a
query's words worth marking in a snippet or a preview: the CLI and the web app), ``match_keys``
(the word stems a snippet is centred on) and ``content_words`` (the assistant's evidence: the
words of a claim that must be found in its source).
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import regex

if TYPE_CHECKING:
    from pathlib import Path

# Languages that LanceDB's tokenizer can stem and has stop words for, by ISO 639-1 code.
STEMMED = {
    "ar": "Arabic",
    "da": "Danish",
    "de": "German",
    "el": "Greek",
    "en": "English",
    "es": "Spanish",
    "fi": "Finnish",
    "fr": "French",
    "hu": "Hungarian",
    "it": "Italian",
    "nb": "Norwegian",
    "nl": "Dutch",
    "nn": "Norwegian",
    "no": "Norwegian",
    "pt": "Portuguese",
    "ro": "Romanian",
    "ru": "Russian",
    "sv": "Swedish",
    "ta": "Tamil",
    "tr": "Turkish",
}
# Languages only the Snowball stemmers of PyStemmer know (no stop-word lists for them); the
# Hindi one gave XQuAD-hi BM25 0.947 -> 0.956.
SNOWBALL = {
    "ca": "catalan",
    "cs": "czech",
    "eo": "esperanto",
    "et": "estonian",
    "eu": "basque",
    "fa": "persian",
    "ga": "irish",
    "hi": "hindi",
    "hy": "armenian",
    "id": "indonesian",
    "lt": "lithuanian",
    "ne": "nepali",
    "pl": "polish",
    "sr": "serbian",
    "yi": "yiddish",
}
# Where accents tell words apart (Vietnamese tones: ma, má, mà, mả, mã, mạ), they are kept.
KEEP_ACCENTS = {"vi"}  # XQuAD-vi BM25 0.936 folded -> 0.952
DETECT_CHARS = 200  # enough for a sure guess; the cost grows with the length
NO_LANGUAGE = "zxx"  # the identifier's word for text without language (numbers, code)
SAMPLE_EVERY = 8  # a document's language is checked on every 8th chunk (and its last)
DOCUMENT_SHARE = 0.6  # ... and is the language of this share of those samples, or none
TERM_CACHE = 200_000  # words whose terms are remembered, per language (a few tens of MB at most)
QUERY_LANGUAGE_SHARE = 0.2  # a query is also analysed under any language at least this likely
SURE_CHARS = 20  # a query's language is read only from this many characters on
SURE_SHARE = 0.5  # and taken as sure from this share of the identifier's mass on

_PAIRED = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\u30fc\u3005"
_DICTIONARY = r"\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}"
_UNSPACED = regex.compile(rf"[{_PAIRED}{_DICTIONARY}]")
_ASCII_WORD = re.compile(r"[a-z0-9]+")  # _WORD on ASCII text, lowered (several times faster)
_WORD = regex.compile(rf"(?V1)[[\p{{L}}\p{{M}}\p{{N}}]--[{_PAIRED}{_DICTIONARY}]]+")
_TOKEN = regex.compile(
    rf"(?V1)(?P<paired>[{_PAIRED}]+)|(?P<dictionary>[{_DICTIONARY}]+)|(?P<word>[[\p{{L}}\p{{M}}\p{{N}}]--[{_PAIRED}{_DICTIONARY}]]+)"
)


@dataclass(frozen=True)
class Analysis:
    """What a chunk's text becomes in the index: its language (None when unsure) and its terms (stems, and
    identifiers whole and in pieces)."""

    language: str | None
    terms: str


def analyse(text: str, language: str | None = None) -> Analysis:
    """The stored form of a chunk: its language (detected unless given) and its terms."""
    text = unicodedata.normalize("NFC", text or "")
    if language is None:
        language = detect_language(text)
    return _analysed(text, language)


def analyse_document(texts: Sequence[str]) -> list[Analysis]:
    """The stored form of a document's chunks, in order.

    Detecting the language is most of the cost of analysis, and a long document (a changelog, a
    manual) is almost always in one language, while guesses from a chunk's first characters are
    noisy (a list of names or commit ids reads as Frisian or as no language): chunks sampled
    across it (every ``SAMPLE_EVERY``th and the last) are detected, and when one language holds
    at least ``DOCUMENT_SHARE`` of them, the other chunks with letters take it. Otherwise each
    chunk is detected on its own, as ``analyse`` does.
    """
    texts = [unicodedata.normalize("NFC", text or "") for text in texts]
    samples = sorted({*range(0, len(texts), SAMPLE_EVERY), len(texts) - 1}) if texts else []
    found = {i: detect_language(texts[i]) for i in samples}
    votes = Counter(language for language in found.values() if language)
    shared, count = votes.most_common(1)[0] if votes else (None, 0)
    if count < DOCUMENT_SHARE * sum(votes.values()):
        shared = None

    def language_of(i: int, text: str) -> str | None:
        if i in found:
            return found[i]
        if shared:
            return shared if _has_letters(text) else None
        return detect_language(text)

    return [_analysed(text, language_of(i, text)) for i, text in enumerate(texts)]


def _analysed(text: str, language: str | None) -> Analysis:
    words, segments = _split(text)
    wholes, pieces = identifiers(text, shorter=True)
    if not text.isascii():  # folding changes only what is not ASCII
        wholes = _words(wholes, None)
    return Analysis(language, " ".join(_words(words + pieces, language) + segments + wholes))


# An identifier or a number written as one token: word characters joined by connectors (``1.7.3.3``,
# ``inv-2024-0042``, ``have_libgen_h``, ``usr/share/doc/git``, ``a.b@example.org``, ``https://example.org/x``),
# or one word that changes case inside (``parsePathspec``, ``HTMLParser``). Kept whole beside its pieces, so
# that a query that types it whole finds it whole first, and a piece still finds it. The patterns start only
# where a word starts (a lookbehind): each text is scanned once, not once a letter.
_JOINED_ASCII = re.compile(r"(?<![a-z0-9])[a-z0-9]+(?:[._\-:/@+#~]+[a-z0-9]+)+")
_JOINED = re.compile(r"(?<!\w)\w+(?:[._\-:/@+#~]+\w+)+")
_CASED_WORD = re.compile(r"[^\W_]+")
_CAMEL = regex.compile(r"(?<=[\p{Ll}\p{N}])(?=\p{Lu})|(?<=\p{Lu})(?=\p{Lu}\p{Ll})")
_CONNECTOR = re.compile(r"[^\w]+|_+")
# A path's, an address's parts, and a version's before its revision or suffix: each whole too (``test_file.c``
# of ``gcc/testsuite/test_file.c``, ``1.07.1`` of Debian's ``1.07.1-2``, ``2.3.1`` of ``2.3.1+dfsg``).
_COARSE = re.compile(r"[/:@\-+~]+")
IDENTIFIER_CHARS = 120  # longer runs (base64, minified code) are no one's query


def identifiers(text: str, shorter: bool = False) -> tuple[list[str], list[str]]:
    """The identifiers of ``text`` whole, lower case (a path's and an address's parts whole too), and the
    pieces of them that the word split alone does not give: the parts of a word that changes case. With
    ``shorter`` (a stored text, not a query), also each identifier cut before each of its dots, where it is
    still one: ``dialog_apt_key`` of ``dialog_apt_key.py.in``, ``2.1.25`` of ``2.1.25.dfsg1``."""
    wholes: list[str] = []
    joined = _JOINED_ASCII.findall(text.lower()) if text.isascii() else _JOINED.findall(text.lower())
    for token in joined:  # each holds a connector between two words
        if len(token) > IDENTIFIER_CHARS:
            continue
        parts = (
            [token, *(p for p in _COARSE.split(token) if _CONNECTOR.search(p.strip("_")))]
            if _COARSE.search(token)
            else [token]
        )
        wholes += dict.fromkeys([*parts, *(cut for part in parts for cut in _cuts(part))] if shorter else parts)
    return wholes, _camel_pieces(text)


def _cuts(identifier: str) -> list[str]:
    """``identifier`` cut before each of its dots, each cut that is still an identifier (holds a connector)."""
    found = []
    at = identifier.find(".")
    while at > 0:
        cut = identifier[:at]
        if _CONNECTOR.search(cut.strip("_")):
            found.append(cut)
        at = identifier.find(".", at + 1)
    return found


def _camel_pieces(text: str) -> list[str]:
    """The parts of each word that changes case inside (``parse``, ``pathspec`` of ``parsePathspec``)."""
    mixed = [t for t in set(text.split()) if not (t.islower() or t.isupper() or t.istitle())]
    pieces: list[str] = []
    for word in _CASED_WORD.findall(" ".join(mixed)):
        parts = _CAMEL.split(word)
        if len(parts) > 1:  # a script without case (Thai, digits) has no parts
            pieces += [part.lower() for part in parts if part]
    return pieces


def query_terms(query: str, index_languages: Iterable[str] = ()) -> str:
    """The query's terms, each once: as written, and analysed under every language it is likely to
    be in and every language the index mostly holds (a one-word query's language is a guess); its
    identifiers whole and in pieces."""
    parts = query_parts(query, index_languages)
    return " ".join(dict.fromkeys([*parts.typed.split(), *parts.pieces.split()]))


class QueryParts(NamedTuple):
    """A query's terms by what they count for (``query_parts``)."""

    typed: str  # its words, its identifiers whole and their words
    pieces: str  # the numbers in its identifiers
    named: str  # its words and its identifiers whole, what a name is asked for
    written: str  # its words as typed, not its identifiers', what the text as written is asked for


def query_parts(query: str, index_languages: Iterable[str] = ()) -> QueryParts:
    """The query's terms in parts: what it typed (its words, its identifiers whole and their words); the
    numbers of its dotted identifiers (``2``, ``15``, ``1`` of ``2.15.1``), which find a file that holds only
    the pieces but must not outweigh one that holds the whole: every version and date of a changelog holds
    them (a number joined by a hyphen, ``1990-х``, counts whole: XQuAD-ru's years); and what a file's name is
    asked for: the words and the identifiers whole, not the identifiers' words (``json_tokener`` asks no name
    for ``json``)."""
    query = unicodedata.normalize("NFC", query or "")
    wholes, camel = identifiers(query)
    plain = " ".join(t for t in query.split() if _identifier_free(t, set(wholes)))
    languages = list(dict.fromkeys([*query_languages(query), *index_languages]))
    main = _analysed_query(plain, languages, alone=not wholes)
    whole_terms = _words(wholes, None) if not query.isascii() else wholes
    dotted = " ".join(w for w in wholes if "." in w)  # versions, dates, addresses: their numbers are pieces
    pieces = _analysed_query(" ".join([*wholes, *camel]), languages)
    numbers = {t for t in _analysed_query(dotted, languages) if t.isdigit()} if dotted else set()
    words = [t for t in pieces if t not in numbers]  # "il-6", "1990-х", "have_libgen_h": words typed all the same
    named = list(dict.fromkeys(main + whole_terms))
    typed = list(dict.fromkeys(named + words))
    written, _ = _split(plain, pairs_only=True)
    stop = stop_words(written, languages)
    return QueryParts(
        " ".join(typed),
        " ".join(t for t in dict.fromkeys(pieces) if t not in typed),
        " ".join(named),
        " ".join(dict.fromkeys([w for w in written if w not in stop] or written)),
    )


def _identifier_free(token: str, wholes: set[str]) -> bool:
    """Whether a whitespace-separated token of a query holds none of its identifiers written whole (a word
    that changes case is a word: ``parsePathspec`` is typed as ``parsepathspec``, its parts are pieces)."""
    return not any(whole in token.lower() for whole in wholes)


def _analysed_query(query: str, languages: list[str], alone: bool = True) -> list[str]:
    """A query's words analysed as written and under each of ``languages``, without their stop words (kept
    when they are all the query has, ``alone``: "the who")."""
    words, segments = _split(query, pairs_only=True)
    stop = stop_words(words, languages)
    words = [w for w in words if w not in stop] or (words if alone else [])
    terms = _words(words, None)
    for language in languages:
        terms += _words(words, language)
    return list(dict.fromkeys(terms + segments))


def written_terms(query: str, index_languages: Iterable[str] = ()) -> str:
    """The query's words as typed (not the pieces of its identifiers), each once, without stop words: what
    is asked of the index of the words as written (which folds them as it folds the text), where a chunk
    that holds them counts above one that holds only their stems (``QueryParts.written``)."""
    return query_parts(query, index_languages).written


# A phrase in quotes, as people type them: taken as written by every stage (phrases here, never read as a
# filter nor respelled in search/).
QUOTED = re.compile(r'"[^"]*"|“[^”]*”|„[^“”]*[“”]|«[^»]*»')


def phrases(query: str) -> list[str]:
    """The query's phrases in double quotes, as typed: each is matched in the words as written, in order
    (a quoted single word is a phrase of one: matched as written, never by its stem)."""
    quoted = (m.group()[1:-1] for m in QUOTED.finditer(unicodedata.normalize("NFC", query or "")))
    return [phrase.strip() for phrase in quoted if _split(phrase)[0]]


NAME_FOLDERS = 3  # the folders above a file whose names count as its names (the nearest first)
_VERSION = re.compile(r"\d+(?:\.\d+)+")


def name_terms(path: str, language: str | None = None) -> str:
    """What a file's name field holds, each term once: its name whole and without its extension, its
    words and identifiers as a chunk's terms are made, a version's shorter forms (``1.8`` of ``1.8.0``),
    and the same of the names of its ``NAME_FOLDERS`` nearest folders."""
    parts = [p for p in re.split(r"[\\/]", unicodedata.normalize("NFC", path or "")) if p]
    terms: list[str] = []
    for part in parts[-1 - NAME_FOLDERS :]:
        stem = part.rsplit(".", 1)[0] if "." in part.strip(".") else part
        terms += _words([part.lower(), stem.lower()], None) + _analysed(part, language).terms.split()
        for version in _VERSION.findall(stem):
            numbers = version.split(".")
            terms += [".".join(numbers[:n]) for n in range(2, len(numbers))]
    return " ".join(dict.fromkeys(t for t in terms if t))


def written_form(term: str, texts: Iterable[tuple[str, str | None]]) -> str | None:
    """The word most often written in ``texts`` (each with its language) whose term is ``term``: how a
    corrected query word is shown (\"diabetes\", not the stem \"diabet\")."""
    counts: Counter[str] = Counter()
    for text, language in texts:
        words, _ = _split(unicodedata.normalize("NFC", text or ""))
        words = list(dict.fromkeys(w for w in words if w[:1] == term[:1]))  # a stem keeps its first letter
        counts.update(w for w, t in zip(words, _words(words, language)) if t == term)
        counts.update(w for w, t in zip(words, _words(words, None)) if t == term)
    return counts.most_common(1)[0][0] if counts else None


@functools.lru_cache(maxsize=256)
def query_languages(query: str) -> tuple[str, ...]:
    """The languages a query is likely to be in, most likely first (the best guess always)."""
    if not query.strip():
        return ()
    ranked = list(language_shares(query).items())  # one identification a query, shared with the fusion
    return tuple(code for code, share in ranked[:3] if share >= QUERY_LANGUAGE_SHARE) or (ranked[0][0],)


@functools.lru_cache(maxsize=256)
def language_shares(query: str) -> dict[str, float]:
    """How likely the query is in each language, by the identifier (shares sum to 1)."""
    return dict(_identifier().rank(query)) if query.strip() else {}


def sure_shares(query: str) -> dict[str, float]:
    """``language_shares`` for a query of SURE_CHARS or more, else none: a shorter one is a name or a term
    whose language is a guess ("Uganda": Ganda at 0.78), which spelling and fusion must not act on."""
    return language_shares(query) if len(query) >= SURE_CHARS else {}


def sure_language(query: str) -> str | None:
    """The query's language when the identifier is sure of it (SURE_SHARE of its mass, SURE_CHARS or more)."""
    shares = sure_shares(query)
    likeliest = max(shares, key=shares.__getitem__, default=None)
    return likeliest if likeliest is not None and shares[likeliest] >= SURE_SHARE else None


def detect_language(text: str) -> str | None:
    """ISO 639-1 code of the text's language, from its first characters; None for text without letters."""
    if not _has_letters(text):
        return None
    return _identifier().classify(text[:DETECT_CHARS])[0]


@functools.lru_cache(maxsize=4096)
def text_languages(text: str) -> dict[str, float]:
    """How likely the text is in each language, by the identifier from its first characters (shares sum to 1);
    empty for text without letters. Code, lists of names and changelogs spread their mass (Bikol at 0.10)."""
    return dict(_identifier().rank(text[:DETECT_CHARS])) if _has_letters(text) else {}


def _has_letters(text: str) -> bool:
    return any(c.isalpha() for c in text[:DETECT_CHARS])


def _split(text: str, pairs_only: bool = False) -> tuple[list[str], list[str]]:
    """Words of spaced scripts, and the segments that scripts without spaces are cut into.

    A query's CJK runs give only their pairs (a lone character stays itself): a chunk holds both.
    """
    text = text.lower()
    if text.isascii():
        return _ASCII_WORD.findall(text), []
    if not _UNSPACED.search(text):
        return _WORD.findall(text), []
    words: list[str] = []
    segments: list[str] = []
    dictionary_runs: list[str] = []
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind == "word":
            words.append(match.group())
        elif kind == "paired":
            segments += _pairs(match.group(), pairs_only)
        else:
            dictionary_runs.append(match.group())
    if dictionary_runs:
        segments += _dictionary_words(" ".join(dictionary_runs))
    return words, segments


def _pairs(run: str, pairs_only: bool) -> list[str]:
    """Each overlapping pair of characters (CJK bigrams, as Lucene's CJK analyser), and each character."""
    pairs = [run[i : i + 2] for i in range(len(run) - 1)]
    return pairs if pairs and pairs_only else list(run) + pairs


def _dictionary_words(runs: str) -> list[str]:
    import lancedb

    return [
        t.text
        for t in lancedb.tokenize(
            runs,
            base_tokenizer="icu",
            max_token_length=None,
            lower_case=False,
            stem=False,
            remove_stop_words=False,
            ascii_folding=False,
        )
    ]


def stop_words(words: list[str], languages: list[str]) -> set[str]:
    """The words that are stop words in any of ``languages`` (LanceDB's lists)."""
    stop: set[str] = set()
    for language in languages:
        if language in STEMMED:
            stop.update(set(words).difference(_tokenize(words, STEMMED[language], remove_stop_words=True)))
    return stop


def _words(words: list[str], language: str | None) -> list[str]:
    """Stemmed in the language LanceDB or Snowball knows, else as written; then accents folded.
    Stemming sees the accents its language's rules expect (Russian й, French é).

    Stop words stay in the index and leave only queries: removing them from German chunks cost
    LegalQuAD 0.06 nDCG@10 (0.870 -> 0.810). Keeping each stemmed word's written form beside its
    stem cost XQuAD-ru 0.012 (ar +0.006): the index's own languages cover a query's wrongly
    guessed language instead.

    A word's term is remembered per language: most words of a folder recur thousands of times.
    """
    if not words:
        return []
    cache = _TERMS.get(language)
    if cache is None or len(cache) > TERM_CACHE:  # a new dict, not clear(): another thread may be reading
        cache = _TERMS[language] = {}
    missing = list(set(words).difference(cache))
    if missing:
        terms = _word_terms(missing, language)
        if len(terms) != len(missing):  # a filter dropped or split a word: no word-by-word mapping here
            return _word_terms(words, language)
        cache.update(zip(missing, terms))
    return list(map(cache.__getitem__, words))


_TERMS: dict[str | None, dict[str, str]] = {}  # language -> word -> its term (see _words)


def _word_terms(words: list[str], language: str | None) -> list[str]:
    stemmer = STEMMED.get(language or "")
    if stemmer:
        return _tokenize(words, stemmer, stem=True, ascii_folding=True)  # LanceDB stems, then folds
    if language in SNOWBALL:
        words = snowball(SNOWBALL[language]).stemWords(words)
    return _tokenize(words, "English", ascii_folding=True) if language not in KEEP_ACCENTS else words


def _tokenize(
    words: list[str], language: str, *, stem: bool = False, remove_stop_words: bool = False, ascii_folding: bool = False
) -> list[str]:
    """LanceDB's (Rust) filters over words already split: one term per word, but for stop words."""
    import lancedb

    return [
        t.text
        for t in lancedb.tokenize(
            " ".join(words),
            base_tokenizer="whitespace",
            language=language,
            max_token_length=None,
            lower_case=False,
            stem=stem,
            remove_stop_words=remove_stop_words,
            ascii_folding=ascii_folding,
        )
    ]


@functools.cache
def snowball(algorithm: str):
    import Stemmer

    return Stemmer.Stemmer(algorithm)


_LOCK = threading.Lock()
_LOADED: list = []


def _identifier():
    """py3langid's model (97 languages, in its wheel), loaded once per process from the arrays unpacked
    once per user (``_unpacked_model``); the wheel's own loader, which unpacks its 65 MB into the temporary
    folder each time (about 0.6 s), only where that cache cannot be had."""
    if not _LOADED:
        with _LOCK:
            if not _LOADED:
                import logging

                from py3langid.langid import MODEL_FILE, LanguageIdentifier
                from py3langid.modelio import _to_array

                try:
                    model = _unpacked_model()
                    identifier = LanguageIdentifier(  # as py3langid's modelio.load_model reads the same arrays
                        model["ptc"],
                        model["pc"],
                        model["classes"].tolist(),
                        _to_array(model["nextmove"]),
                        model["out_feat"].tolist(),
                        norm_probs=True,
                        tk_row=_to_array(model["nextmove_row"]),
                    )
                except (OSError, ValueError, KeyError) as exc:
                    logging.getLogger(__name__).warning("language model cache unusable (%s): unpacking it again", exc)
                    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
                _LOADED.append(identifier)
    return _LOADED[0]


_MODEL_ARRAYS = ("ptc", "pc", "classes", "nextmove", "nextmove_row", "out_feat")


def _unpacked_model(cache: Path | None = None) -> dict:
    """py3langid's model as arrays mapped from ``.npy`` files in the user's cache folder (the models'
    cache), unpacked from the wheel's ``model.npz.xz`` the first time, in a folder named by that file's
    sha256: another py3langid, another folder. Written aside and renamed into place whole, so a process
    that reads it never sees half of it."""
    import hashlib
    import io
    import lzma
    import os
    import shutil
    import tempfile
    from pathlib import Path

    import numpy as np
    import platformdirs
    from py3langid.langid import MODEL_DIR, MODEL_FILE

    packed = (MODEL_DIR / MODEL_FILE).read_bytes()
    cache = cache or Path(platformdirs.user_cache_dir("sensetree", appauthor=False)) / "models"
    folder = cache / f"py3langid-{hashlib.sha256(packed).hexdigest()[:16]}"
    if not folder.is_dir():
        cache.mkdir(parents=True, exist_ok=True)
        aside = Path(tempfile.mkdtemp(prefix=".py3langid-", dir=cache))
        try:
            with np.load(io.BytesIO(lzma.decompress(packed)), allow_pickle=False) as arrays:
                for name in _MODEL_ARRAYS:
                    np.save(aside / f"{name}.npy", arrays[name], allow_pickle=False)
            os.rename(aside, folder)
        except OSError:
            if not folder.is_dir():  # another process put it there first: use theirs
                raise
        finally:
            shutil.rmtree(aside, ignore_errors=True)
    return {name: np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in _MODEL_ARRAYS}


# --- the words people see marked, and the words a claim is checked by -------------------------------------

_PLAIN_WORD = re.compile(r"\w+", re.UNICODE)  # as the snippets and the evidence have always split words
_MARKED = regex.compile(r"[\p{L}\p{M}\p{N}]{2,}")  # letters with their marks (Hindi matras), digits
MATCH_STEM = 5  # words sharing their first five letters match (invoice, invoices, invoiced)
# Words that say nothing about a claim's content: kept short on purpose (English and the commonest
# function words); a claim's other words must be found in the excerpt it cites.
CONTENT_STOP = frozenset(
    """a about also an and any are as at be been but by can did do does each for from had has have he
her his how i if in into is it its many may more most much no not of on or other our she so some such than that the
their them then there these they this those to very was we were what when where which while who whom why will with
would you your""".split()
)


def marked_terms(query: str) -> list[str]:
    """The words of a query worth marking where results show text: letters and digits, two or more,
    lower case, no stop word of the query's languages (or English's), longest first."""
    words = list(dict.fromkeys(w.casefold() for w in _MARKED.findall(query or "")))
    if not words:
        return []
    stop = stop_words(words, list(dict.fromkeys([*query_languages(query), "en"])))
    return sorted((w for w in words if w not in stop), key=lambda w: (-len(w), w))


def match_keys(text: str) -> set[str]:
    """The words of ``text`` as a snippet matches them: case and accents folded, cut to ``MATCH_STEM`` letters."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    return {
        word[:MATCH_STEM]
        for word in _PLAIN_WORD.findall("".join(c for c in folded if not unicodedata.combining(c)))
        if len(word) > 1
    }


def content_words(text: str) -> list[str]:
    """The content words, lower case: no function word, no single letter (the s of "Ana's")."""
    return [w for w in _PLAIN_WORD.findall(text.lower()) if w not in CONTENT_STOP and (len(w) > 1 or w.isdigit())]
