"""Typos forgiven: a query word that no file has is spelled as the nearest word the index holds.

The BM25 leg matches whole terms, so one typo in a name ("Marchetty" for "Marchetti") leaves only
the dense leg, which is weak on names. Here each word of the query that the index does not know
at all (none of its analysed forms is in any chunk) and is worth correcting (four letters or more,
no digit) is compared with the indexed terms that LanceDB's fuzzy full-text match finds near it
(``store/queries.py``: ``ChunkQueries.known`` and ``ChunkQueries.near``). A term within
``max_edits`` of one of the word's forms (or of its beginning: the index holds stems), counted as
the optimal string alignment distance (a Damerau-Levenshtein distance: a substitution, deletion,
insertion or transposition of two neighbouring letters is one edit; LanceDB's fuzzy match counts a
transposition as two, so it is asked for one edit more), is a candidate; those near a form come
before those near the beginning, then the nearest win, then the one in the most chunks. A term
must begin with the word's first letter: typos seldom hit it, and a real word the files lack
("letter") would otherwise become another one ("butter"). Words the index knows are never touched, nor
common words of the language (``lexicon.py``: "last" is no typo of "list"), nor words with no term
near enough. What a person typed is never taken away (issue 39): a word that a file's or folder's name
under a root holds is known too, even to an index whose keyword terms hold no names ("Urlaub" named a
folder of holiday photos and became "umlaut"), and words in quotes are searched as typed.

This module is pure: the lookups are passed in (the lexicon by default), so it is tested without an index.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence

import regex

from ..notices import AS_TYPED
from ..store.terms import QUOTED, sure_language
from . import lexicon

MIN_LETTERS = 4  # shorter words are left alone: too many real words are one edit apart
# A typo is the exception in a query. When this many of its checked words are unknown to the index, the query
# is in another language than the files (or names them without their names) and none of them is a typo:
# "corrected" into the files' words, Vietnamese questions over Turkish paragraphs searched for Turkish words
# that mean nothing of the question, and the hybrid fell 0.850 -> 0.790 (XQuAD tr <- vi, 80 questions, E5).
FOREIGN_WORDS = 3
SHORT_WORD = 5  # up to this many letters one edit is forgiven, two beyond it
STEM_END = 4  # a stemmer drops at most this many letters of a word's end ("-ational")
_WORD = re.compile(r"\w+", re.UNICODE)
_ALPHABETIC = regex.compile(r"[\p{Latin}\p{Greek}\p{Cyrillic}]+")
_MARKS = regex.compile(r"\p{M}+")
_NAME_RUN = regex.compile(r"[\p{L}\p{M}\p{N}]+")  # "_", "-", "." and the separators split a name
_CAMEL_HUMP = regex.compile(r"\p{Lu}?[\p{Ll}\p{M}]+|\p{Lu}+(?![\p{Ll}])|\p{N}+")  # "UrlaubJuli2024": Urlaub, Juli, 2024


def max_edits(word: str) -> int:
    return 1 if len(word) <= SHORT_WORD else 2


def edit_distance(a: str, b: str, cap: int | None = None) -> int:
    """Optimal string alignment distance (Damerau-Levenshtein without edits inside a transposed pair).
    With ``cap``, any distance above it may be returned as ``cap + 1`` (the search stops early)."""
    if a == b:
        return 0
    if cap is not None and abs(len(a) - len(b)) > cap:
        return cap + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, start=1):
            cost = 0 if ca == cb else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if cap is not None and min(current) > cap:
            return cap + 1
        previous2, previous = previous, current
    return previous[-1]


def checked_words(query: str) -> list[str]:
    """The query's words that may be corrected, lower case, each once: outside quotes (a quoted word is
    searched as typed), MIN_LETTERS or more, all letters of the Latin, Greek or Cyrillic alphabets. Not
    Arabic script, where clitics attach to words and plurals are broken (جوائز, جائزة) beyond what the
    keyword analysis folds, so a form no file has is seldom a typo: on XQuAD's Arabic questions a third of
    the queries were "corrected" ("ماذا" into "ماخذ") and hybrid nDCG@10 fell 0.970 -> 0.961, where Russian
    rose 0.967 -> 0.970 (E5, 300 queries each). Nor the scripts written without spaces or with their own
    segmentation (Thai, CJK, Indic)."""
    unquoted = QUOTED.sub(" ", query.lower())
    words = (w for w in _WORD.findall(unquoted) if len(w) >= MIN_LETTERS and _ALPHABETIC.fullmatch(w))
    return list(dict.fromkeys(words))


def distance(word: str, forms: Sequence[str], term: str) -> tuple[int, int]:
    """How far an indexed term is from a query word: (edits, 0) to the nearest of the word's analysed
    ``forms``, else (edits, 1) to the word's beginning (an index of stems holds "prenat" for
    "prenatal": the typo "prneatal" is one edit from "prenat" only with its end dropped, as a stemmer
    drops it; the beginning keeps all but STEM_END of the word's letters). What is compared is
    forgiven ``max_edits`` of its own length (the stem "chunk" of "chunks" one edit, not two);
    farther counts as ``max_edits(word) + 1``."""
    limit = max_edits(word)

    def within(text: str) -> int:  # the edits forgiven are those of the text compared: a stem is shorter
        edits = edit_distance(text, term, max_edits(text))
        return edits if edits <= max_edits(text) else limit + 1

    best = min((within(form) for form in forms or [word]), default=limit + 1)
    if best <= limit:
        return best, 0
    for length in range(max(len(term) - limit, len(word) - STEM_END, 1), min(len(term) + limit, len(word) - 1) + 1):
        best = min(best, within(word[:length]))
    return min(best, limit + 1), 1


def choose(
    word: str, forms: Sequence[str], near: Mapping[str, int], count: Callable[[str], int] | None = None
) -> str | None:
    """The indexed term for ``word`` (analysed as ``forms``): of the terms in ``near`` (term -> number of
    chunks holding it) that begin with its first letter and are within ``max_edits(word)`` of it, those near
    a form before those near its beginning (``distance``), then the nearest, then the most common, then the
    longest; None when no term is near enough. ``count(term)``, when given, says how many chunks of the
    whole index hold a term, for the terms still tied on the first two: ``near`` counts only the chunks a
    fuzzy match read, which favour the rarer terms (they score higher) once there are more than it reads."""
    limit = max_edits(word)
    close: list[tuple[int, int, int, int, str]] = []
    for term, found in near.items():
        if found <= 0 or len(term) < MIN_LETTERS or term in forms or term[0] != word[0]:
            continue  # a typo seldom hits the first letter: "letter" is not "butter" misspelt
        edits, by_beginning = distance(word, forms, term)
        if edits <= limit:
            close.append((by_beginning, edits, -found, -len(term), term))
    if not close:
        return None
    best = min(close)
    tied = [key for key in close if key[:2] == best[:2]]
    if count is not None and len(tied) > 1:
        best = min((by_beginning, edits, -count(term), -size, term) for by_beginning, edits, _, size, term in tied)
    return best[4]


def probes(word: str) -> list[str]:
    """The beginnings of ``word`` that an index of stems may hold near (a typo can keep the stemmer from
    cutting its ending: "toxqcity" is no form of "toxic"), longest first."""
    return [word[:n] for n in range(len(word) - 1, max(MIN_LETTERS, len(word) - STEM_END) - 1, -1)]


def corrections(
    query: str,
    forms: Callable[[str], list[str]],
    known: Callable[[list[str]], bool],
    near: Callable[[list[str], int], Mapping[str, int]],
    count: Callable[[str], int] | None = None,
    is_word: Callable[[str], bool] = lexicon.is_word,
    named: Callable[[list[str]], bool] = lambda forms: False,
) -> dict[str, str]:
    """word -> the indexed term it is searched as, for the words of ``query`` that no chunk holds and
    that are no word of the language (``is_word``: lexicon.py; "last" is not "list" misspelt); none where
    ``FOREIGN_WORDS`` or more of them are unknown (the query is in another language).

    ``forms(word)``: the word's analysed terms (as written, stemmed); ``known(forms)``: does any chunk hold
    one of them, asked first of the word as typed, which spares analysing the words the index holds as
    written (the first analysis of a process loads the language identifier, a second or more);
    ``named(forms)``: does the name of a file or folder hold one of them (``in_names``), asked last, once;
    ``near(forms, edits)``: indexed terms near them, with their chunk counts (asked
    again with the word's beginnings when none is near its forms); ``count(term)``: the chunks holding a
    term, to settle a tie."""
    unknown: dict[str, list[str]] = {}
    for word in checked_words(query):
        if is_word(word) or known([word]):
            continue
        terms = forms(word) or [word]
        others = [term for term in terms if term != word]
        if not (others and known(others)) and not named(terms):
            unknown[word] = terms
    if len(unknown) >= FOREIGN_WORDS:
        return {}  # another language than the files': nothing to correct
    found: dict[str, str] = {}
    for word, terms in unknown.items():
        limit = max_edits(word)
        term = choose(word, terms, near(terms, limit), count)
        if term is None and probes(word):
            term = choose(word, terms, near(probes(word), limit), count)
        if term is not None:
            found[word] = term
    return found


def in_another_language(query: str, index_languages: Sequence[str]) -> bool:
    """Whether ``query`` is surely written in a language none of the index's main languages is
    (``store.terms.sure_language``): its words the files lack are that language's, not typos. Two unknown
    Vietnamese words of a question over Turkish paragraphs, "corrected", still turned the question into
    Turkish words for both legs."""
    language = sure_language(query) if index_languages else None
    return language is not None and language not in index_languages


def respelled(query: str, spelled: Mapping[str, str]) -> str:
    """The query with each corrected word (any case) outside quotes replaced by its correction."""
    if not spelled:
        return query

    def words(text: str) -> str:
        return _WORD.sub(lambda m: spelled.get(m.group().lower(), m.group()), text)

    parts, done = [], 0
    for quoted in QUOTED.finditer(query):
        parts += [words(query[done : quoted.start()]), quoted.group()]
        done = quoted.end()
    return "".join([*parts, words(query[done:])])


def folded(text: str) -> str:
    """``text`` in lower case without accents: a name's word and a query word compared alike."""
    return _MARKS.sub("", unicodedata.normalize("NFKD", text)).casefold()


def name_words(name: str) -> set[str]:
    """The words of a file's or folder's name (or a path of them), folded: its runs of letters and digits
    ("urlaub_juli-2024.txt": urlaub, juli, 2024, txt), and the humps of a run in camel case as well
    ("UrlaubJuli": urlaubjuli, urlaub, juli)."""
    words = set()
    for run in _NAME_RUN.findall(name):
        words.add(folded(run))
        words.update(folded(hump) for hump in _CAMEL_HUMP.findall(run))
    words.discard("")  # a run of marks alone folds to nothing
    return words


def in_names(forms: Sequence[str], names: Callable[[list[str]], Iterable[str]]) -> bool:
    """Whether the name of a file or folder holds one of a word's ``forms`` as a word of its own.
    ``names(fragments)``: the names (paths below their roots) that may hold one of ``fragments``."""
    wanted = sorted({folded(form) for form in forms if form})
    if not wanted:
        return False
    for name in names(wanted):
        plain = folded(name)  # a word of the name is in the whole name folded: most names go no further
        if any(word in plain for word in wanted) and name_words(name).intersection(wanted):
            return True
    return False


def notice(query: str, spelled: Mapping[str, str]) -> str:
    """What the person is told: the query searched, why, and how to search the words as typed (named as
    each surface names it: ``notices.for_surface``)."""
    missing = ", ".join(f'"{word}"' for word in spelled)
    return (
        f'showing results for "{respelled(query, spelled)}" (searched for "{query}": no file has {missing}; '
        f"search again with {AS_TYPED} for the words as typed)"
    )
