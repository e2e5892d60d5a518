"""Sentences as evidence: which sentences of the excerpts answer a question, and which excerpt an
answer's sentence rests on.

A small model reads slowly (about a hundred prompt tokens a second on two cores), so the prompt
carries the sentences of each excerpt that best match the question rather than whole chunks.
They are ranked the way the search ranks chunks: the same embedder and BM25, fused by RRF.
After the answer, each of its sentences is matched to the sentences the model was shown, which
is how a citation the model forgot is attached and a wrong one corrected.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

RRF_K = 60
MAX_SENTENCE_CHARS = 320  # a longer "sentence" (a table row, a list) is cut into pieces of this size
GAP = " … "

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[^a-z])|\s*\n\s*")
_WORD = re.compile(r"\w+", re.UNICODE)
# words that say nothing about the content; kept short on purpose (English and the commonest function words)
_STOP = frozenset("""a an and are as at be been but by can did do does for from had has have he her his how i if in
into is it its may more most no not of on or our she so such than that the their them then there these they this
those to was we were what when where which while who whom why will with would you your""".split())

Embed = Callable[[Sequence[str]], np.ndarray]


def split_sentences(text: str) -> list[str]:
    """Sentences, and lines; over-long ones cut into pieces, so that any of them fits a small budget."""
    out = []
    for sentence in _SENTENCE_END.split(text):
        sentence = sentence.strip()
        while len(sentence) > MAX_SENTENCE_CHARS:
            cut = sentence.rfind(" ", 0, MAX_SENTENCE_CHARS)
            cut = cut if cut > MAX_SENTENCE_CHARS // 2 else MAX_SENTENCE_CHARS
            out.append(sentence[:cut].rstrip())
            sentence = sentence[cut:].lstrip()
        if sentence:
            out.append(sentence)
    return out


def terms(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


def bm25(query: Sequence[str], docs: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75) -> np.ndarray:
    """BM25 of one query against a handful of short documents (the statistics are theirs alone)."""
    n = len(docs)
    if not n:
        return np.zeros(0)
    lengths = np.array([len(d) for d in docs], dtype=float)
    average = max(lengths.mean(), 1.0)
    frequency = Counter(t for d in docs for t in set(d))
    scores = np.zeros(n)
    counts = [Counter(d) for d in docs]
    for term in set(query):
        df = frequency.get(term, 0)
        if not df:
            continue
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        tf = np.array([c.get(term, 0) for c in counts], dtype=float)
        scores += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths / average))
    return scores


def rrf(*scores: np.ndarray) -> np.ndarray:
    """Reciprocal rank fusion of score arrays over the same items (a zero score does not count)."""
    fused = np.zeros(len(scores[0]))
    for leg in scores:
        ranks = np.empty(len(leg), dtype=int)
        ranks[np.argsort(-leg, kind="stable")] = np.arange(1, len(leg) + 1)
        fused += np.where(leg > 0, 1.0 / (RRF_K + ranks), 0.0)
    return fused


class Evidence:
    """Ranks sentences against a text with an embedder (query and passage roles) and BM25.

    ``embed_query``/``embed_passages`` may be None (or fail): the ranking is then lexical only.
    """

    def __init__(self, embed_query: Callable[[str], np.ndarray] | None = None,
                 embed_passages: Embed | None = None):
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

    def rank(self, query: str, sentences: Sequence[str]) -> np.ndarray:
        """A fused score per sentence, higher is better."""
        lexical = bm25(terms(query), [terms(s) for s in sentences])
        dense = self._dense(query, sentences)
        return rrf(lexical) if dense is None else rrf(lexical, np.clip(dense, 1e-6, None))

    def pick(self, query: str, excerpts: Sequence[str], budget: int) -> list[str]:
        """Each excerpt cut to its sentences that best answer ``query``, ``budget`` characters in all.

        Every excerpt keeps at least its best sentence, so no numbered source disappears; the
        sentences keep their order, and `` … `` marks what was left out between them.
        """
        pieces = [split_sentences(e) for e in excerpts]
        if sum(map(len, excerpts)) <= budget:
            return list(excerpts)
        flat = [(i, j) for i, p in enumerate(pieces) for j in range(len(p))]
        scores = self.rank(query, [pieces[i][j] for i, j in flat]) if flat else np.zeros(0)
        order = [flat[k] for k in np.argsort(-scores, kind="stable")]
        chosen: set[tuple[int, int]] = set()
        for i in range(len(pieces)):  # the best sentence of each excerpt first
            best = next((ij for ij in order if ij[0] == i), None)
            if best:
                chosen.add(best)
        used = sum(len(pieces[i][j]) + len(GAP) for i, j in chosen)
        for i, j in order:
            cost = len(pieces[i][j]) + len(GAP)
            if (i, j) not in chosen and used + cost <= budget:
                chosen.add((i, j))
                used += cost
        return [_joined(p, sorted(j for (k, j) in chosen if k == i)) for i, p in enumerate(pieces)]

    def support(self, claims: Sequence[str], evidence: Sequence[str]) -> np.ndarray:
        """How well each evidence sentence supports each claim: a (claims x evidence) matrix in [0, 1].

        The mean of two views: the share of the claim's content words (weighted by rarity in
        the evidence) that the evidence sentence contains, and the embeddings' cosine.
        """
        if not claims or not evidence:
            return np.zeros((len(claims), len(evidence)))
        claim_terms = [set(terms(c)) for c in claims]
        evidence_terms = [set(terms(e)) for e in evidence]
        frequency = Counter(t for e in evidence_terms for t in e)
        lexical = np.zeros((len(claims), len(evidence)))
        for a, words in enumerate(claim_terms):
            weights = {w: math.log(1 + len(evidence) / (1 + frequency.get(w, 0))) for w in words}
            total = sum(weights.values())
            if total:
                for b, found in enumerate(evidence_terms):
                    lexical[a, b] = sum(weights[w] for w in words & found) / total
        vectors = self._dense(None, [*claims, *evidence])
        if vectors is None:
            return lexical
        dense = np.clip(vectors[:len(claims)] @ vectors[len(claims):].T, 0.0, 1.0)
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
    written: list[int]   # [n] the model wrote (valid sources only)
    cited: list[int]     # [n] the answer shows
    how: str             # model, attached, corrected, none

    def as_dict(self) -> dict:
        return {"text": self.text, "written": self.written, "cited": self.cited, "how": self.how}
