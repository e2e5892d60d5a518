"""Sentences as evidence: which sentences of the excerpts answer a question, and which excerpt an
answer's sentence rests on.

A small model reads slowly (about a hundred prompt tokens a second on two cores), so the prompt
carries the sentences of each excerpt that best match the question rather than whole chunks.
They are ranked the way the search ranks chunks: the same embedder and BM25, fused by RRF.
After the answer, each of its sentences is matched to the sentences the model was shown, which
is how a citation the model forgot is attached and a wrong one corrected.
"""

from __future__ import annotations

import functools
import math
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ..search.fusion import rrf_of_scores as rrf
from ..store.terms import content_words as terms
from ..store.terms import snowball

MAX_SENTENCE_CHARS = 320  # a longer "sentence" (a table row, a list) is cut into pieces of this size
GAP = " … "
MIN_EXCERPTS = 3  # excerpts that keep their best sentence however small the budget: recall matters more
TOP_EXCERPT_SENTENCES = 2  # the search's best excerpt keeps two: often a title, then the sentence that answers

# a sentence ends at . ! ? before a capital or a digit, at a blank line, and at a line break before a
# capital (a title, a heading); a line that wraps mid-sentence (lower case next) goes on
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[^a-z\s])|\s*\n\s*\n\s*|[ \t]*\n\s*(?=[A-Z0-9\[(\-•*])")

# numbers an answer may write in digits where the text spells them out, or the other way round
NUMBER_WORDS = {
    w: str(n)
    for n, w in enumerate(
        """zero one two three four five six seven eight nine ten eleven
twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty""".split()
    )
}
NUMBER_WORDS.update({w: str(10 * n) for n, w in enumerate("thirty forty fifty sixty seventy eighty ninety".split(), 3)})
_ASCII_LETTERS = re.compile(r"[a-z]+")

Embed = Callable[[Sequence[str]], np.ndarray]


def split_sentences(text: str) -> list[str]:
    """Sentences, titles and list items; over-long ones cut into pieces, so that any of them fits a small budget."""
    out = []
    for sentence in _SENTENCE_END.split(text):
        sentence = " ".join(sentence.split())
        while len(sentence) > MAX_SENTENCE_CHARS:
            cut = sentence.rfind(" ", 0, MAX_SENTENCE_CHARS)
            cut = cut if cut > MAX_SENTENCE_CHARS // 2 else MAX_SENTENCE_CHARS
            out.append(sentence[:cut].rstrip())
            sentence = sentence[cut:].lstrip()
        if sentence:
            out.append(sentence)
    return out


def claim_terms(text: str) -> set[str]:
    """The terms by which a claim is matched to the question and the excerpts: English words by
    their Snowball stem ("discusses" is the question's "discuss"), numbers in digits ("twenty" is
    "20"). Only claims are matched this way; the excerpts' sentences are picked on the words as written."""
    return {NUMBER_WORDS.get(w) or (_stem(w) if _ASCII_LETTERS.fullmatch(w) else w) for w in terms(text)}


def asked_terms(question: str) -> set[str]:
    """The terms a question states. A number glued into a name ("t(14;19)", "COVID-19", "A4") is not
    the question stating that number: "14" still answers "how many cases of t(14;19)?"."""
    return claim_terms(" ".join(_without_glued_numbers(token) for token in question.split()))


def _without_glued_numbers(token: str) -> str:
    bare = token.strip("?!.,;:\"'()[]")
    return token if _PLAIN_NUMBER.fullmatch(bare) else re.sub(r"\d+", " ", token)


_PLAIN_NUMBER = re.compile(r"[\d.,%]*")
_STEM_LOCK = threading.Lock()  # a PyStemmer stemmer is not thread-safe; answers run in several threads


@functools.lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    with _STEM_LOCK:
        return snowball("english").stemWord(word)


# how answers open ("Based on the excerpts provided, ...", "According to my files, ..."): no claim in them
FRAMING = frozenset(
    claim_terms("""according based excerpt excerpts provided file files user my text states mentions
mentioned says question answer""")
)


def coverage(question: str, text: str) -> float:
    """The share of the question's content words that the text contains (1 for a question without any)."""
    asked = set(terms(question))
    return len(asked & set(terms(text))) / len(asked) if asked else 1.0


def bm25(
    query: Sequence[str], docs: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75
) -> tuple[list[str], np.ndarray]:
    """BM25 of one query against a handful of short documents (the statistics are theirs alone),
    term by term: the query's terms found, and a (terms x documents) matrix whose columns sum to
    each document's score."""
    n = len(docs)
    lengths = np.array([len(d) for d in docs], dtype=float)
    average = max(lengths.mean(), 1.0) if n else 1.0
    frequency = Counter(t for d in docs for t in set(d))
    counts = [Counter(d) for d in docs]
    found = [t for t in dict.fromkeys(query) if frequency.get(t)]
    rows = []
    for term in found:
        idf = math.log(1 + (n - frequency[term] + 0.5) / (frequency[term] + 0.5))
        tf = np.array([c.get(term, 0) for c in counts], dtype=float)
        rows.append(idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths / average)))
    return found, np.array(rows).reshape(len(found), n)


class Evidence:
    """Ranks sentences against a text with an embedder (query and passage roles) and BM25.

    ``embed_query``/``embed_passages`` may be None (or fail): the ranking is then lexical only.
    """

    def __init__(self, embed_query: Callable[[str], np.ndarray] | None = None, embed_passages: Embed | None = None):
        self.embed_query, self.embed_passages = embed_query, embed_passages

    def _dense(self, query: str | None, sentences: Sequence[str]) -> np.ndarray | None:
        if self.embed_passages is None or not sentences:
            return None
        try:
            passages = self.embed_passages(list(sentences))
            if query is None:
                return passages
            return passages @ (self.embed_query(query) if self.embed_query else self.embed_passages([query])[0])
        except Exception:  # noqa: BLE001 - an endpoint that fails leaves the lexical ranking, never an error
            return None

    def pick(self, query: str, excerpts: Sequence[str], budget: int) -> list[str]:
        """The excerpts (best first) cut to their sentences that best answer ``query``, ``budget``
        characters in all.

        Each excerpt kept keeps at least its best sentence (the first its two best); when even those
        do not all fit, the lowest-ranked excerpts go (the first ``MIN_EXCERPTS`` always stay), so the
        numbering has no hole. Then the budget goes to the best sentence left, one at a time, where the words of the
        question that its excerpt already shows count no more (a title and the sentence that
        answers, rather than a title and its paraphrase). The sentences keep their order, and
        `` … `` marks what was left out between them.
        """
        if sum(map(len, excerpts)) <= budget:
            return list(excerpts)
        pieces = [list(dict.fromkeys(split_sentences(e))) for e in excerpts]  # a sense may repeat the text's start
        flat = [(i, j) for i, p in enumerate(pieces) for j in range(len(p))]
        sentences = [pieces[i][j] for i, j in flat]
        words = [set(terms(s)) for s in sentences]
        found, contributions = bm25(terms(query), [terms(s) for s in sentences])
        dense = self._dense(query, sentences)
        covered: list[set[str]] = [set() for _ in pieces]

        def scores() -> np.ndarray:
            fresh = np.array([[t not in covered[i] for i, _ in flat] for t in found], dtype=float)
            lexical = (contributions * fresh.reshape(contributions.shape)).sum(axis=0)
            return rrf(lexical) if dense is None else rrf(lexical, np.clip(dense, 1e-6, None))

        chosen: set[int] = set()
        used, kept = 0, 0

        def take(k: int) -> None:
            nonlocal used
            chosen.add(k)
            used += len(sentences[k]) + len(GAP)
            covered[flat[k][0]].update(words[k])

        for i in range(len(pieces)):  # the best sentence(s) of each excerpt first, while they fit
            for _ in range(TOP_EXCERPT_SENTENCES if i == 0 else 1):
                current = scores()
                candidates = [k for k, (owner, _) in enumerate(flat) if owner == i and k not in chosen]
                best = max(candidates, key=lambda k: current[k], default=None)
                if best is None or (i >= MIN_EXCERPTS and used + len(sentences[best]) + len(GAP) > budget):
                    break
                take(best)
            if i >= MIN_EXCERPTS and not any(flat[k][0] == i for k in chosen):
                break
            kept = i + 1
        while True:
            current = scores()
            fits = [
                k
                for k in range(len(flat))
                if k not in chosen and flat[k][0] < kept and used + len(sentences[k]) + len(GAP) <= budget
            ]
            if not fits:
                break
            take(max(fits, key=lambda k: current[k]))
        return [
            _joined(p, sorted(j for k, (owner, j) in enumerate(flat) if owner == i and k in chosen))
            for i, p in enumerate(pieces[:kept])
        ]

    def support(self, claims: Sequence[str], evidence: Sequence[str], question: str = "") -> np.ndarray:
        """How well each evidence sentence supports each claim: a (claims x evidence) matrix in [0, 1].

        The mean of two views: the share of the claim's content words (weighted by rarity in the
        evidence) that the evidence sentence contains, and the embeddings' cosine. The words the
        claim shares with the question do not count: "the tweezers used a 1064 nm laser" is
        supported by the excerpt that has "1064 nm", not by the one that has "tweezers".
        """
        if not claims or not evidence:
            return np.zeros((len(claims), len(evidence)))
        asked = asked_terms(question) | FRAMING
        claimed = [claim_terms(c) - asked or claim_terms(c) for c in claims]
        evidence_terms = [claim_terms(e) for e in evidence]
        frequency = Counter(t for e in evidence_terms for t in e)
        lexical = np.zeros((len(claims), len(evidence)))
        for a, words in enumerate(claimed):
            weights = {w: math.log(1 + len(evidence) / (1 + frequency.get(w, 0))) for w in words}
            total = sum(weights.values())
            if total:
                for b, found in enumerate(evidence_terms):
                    lexical[a, b] = sum(weights[w] for w in words & found) / total
        vectors = self._dense(None, [*claims, *evidence])
        if vectors is None:
            return lexical
        dense = np.clip(vectors[: len(claims)] @ vectors[len(claims) :].T, 0.0, 1.0)
        return (lexical + dense) / 2


def _joined(sentences: list[str], keep: list[int]) -> str:
    out = ""
    for k, j in enumerate(keep):
        if k and j != keep[k - 1] + 1:
            out += GAP
        elif k:
            out += " "
        out += sentences[j]
    if keep and keep[0] > 0:
        out = "… " + out
    if keep and keep[-1] < len(sentences) - 1:
        out += " …"
    return out


@dataclass
class Sentence:
    """One sentence of an answer with its citations: what the model wrote, and what the answer shows."""

    text: str
    written: list[int]  # [n] the model wrote (valid sources only)
    cited: list[int]  # [n] the answer shows
    how: str  # model, attached, corrected; none or unsupported (no excerpt supports it)
    support: dict[int, str] = field(default_factory=dict)  # per cited source, the shown sentence that supports it best
    at: tuple[int, int] | None = None  # where the sentence (with its markers) sits in the answer's text
    spans: list[CitedSpan] = field(default_factory=list)  # per cited source, where its support sits in the file

    def as_dict(self) -> dict:
        return {
            "text": self.text,
            "written": self.written,
            "cited": self.cited,
            "how": self.how,
            "at": list(self.at) if self.at else None,
            "spans": [s.as_dict() for s in self.spans],
        }


@dataclass
class CitedSpan:
    """Where the sentence that supports a claim sits in a cited file's text (the text the preview shows):
    characters [start, end); ``exact`` False when only the chunk it came from could be found (start and
    end None: not even that)."""

    n: int
    path: str
    chunk_index: int | None
    quote: str  # the sentence as the model was shown it
    start: int | None
    end: int | None
    exact: bool

    def as_dict(self) -> dict:
        span = {"start": self.start, "end": self.end} if self.start is not None and self.end is not None else None
        return {
            "n": self.n,
            "path": self.path,
            "chunk_index": self.chunk_index,
            "quote": self.quote,
            "span": span,
            "exact": self.exact,
        }
