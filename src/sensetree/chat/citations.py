"""Citations: keep the ``[n]`` that point at a source, then make every claim of the answer carry one.

Small models forget to cite, or cite the wrong excerpt. Each sentence of the answer is matched to
the sentences the model was shown (``Evidence.support``); a sentence with no marker gets the
number of the excerpt that supports it best, and a marker pointing at an excerpt that supports the
sentence much less well than another is corrected. A sentence that no excerpt supports, or that
states a number no excerpt (and not the question) holds, loses its markers: a confident citation
on an unsupported claim would be worse than none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from .evidence import FRAMING, NUMBER_WORDS, Evidence, Sentence, asked_terms, claim_terms

MARKER = re.compile(r"\s?\[(\d+(?:\s*,\s*\d+)*)\]")
# where a sentence ends: after . ! ? (and the markers that follow it) before a space, or at a line break
_END = re.compile(r"[.!?]+(?:\s?\[\d+(?:\s*,\s*\d+)*\])*(?=\s|$)|\n")
_TAIL = re.compile(r"([.!?:;]*)(\s*)$")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# "the files do not say", "this is not mentioned", "I could not find"...: a sentence that says the
# excerpts lack the answer makes no claim to cite
_ABSTAIN = re.compile(
    r"\b(?:do(?:es)?\s*n[o']t|did\s*n[o']t|can\s*not|can't|could\s*n[o']t|unable\s+to)\s+"
    r"(?:say|mention|state|specify|provide|contain|include|know|find|answer|determine|give|tell)"
    r"|\bno\s+(?:information|mention|data|details|answer)\b"
    r"|\bnot\s+(?:mentioned|stated|specified|provided|given|available|found|included|say)\b",
    re.IGNORECASE,
)

SUPPORTED = 0.5  # support below this: the sentence is not from the excerpts (see bench/chat_citations.py)
CLOSE = 0.1  # a written marker stands while its excerpt supports the sentence this close to the best
MIN_TERMS = 1  # "326" answers "how many?"; what a claim needs is a word the question does not have


@dataclass
class Citations:
    text: str  # the answer with its markers checked, attached or corrected
    sentences: list[Sentence]  # every sentence that makes a claim, with how its markers came about
    dropped: list[int]  # numbers the model wrote that are no source

    @property
    def unsupported(self) -> bool:
        """The answer makes claims and no excerpt supports any of them: it may well be invented."""
        return bool(self.sentences) and all(s.how in ("none", "unsupported") for s in self.sentences)

    def numbers(self) -> set[int]:
        """Every source the answer cites, in a claim or elsewhere."""
        return set(written(self.text))


def abstains(text: str) -> bool:
    """Whether the text says that the files do not answer."""
    return bool(_ABSTAIN.search(text))


def check_markers(text: str, known: Callable[[int], bool]) -> tuple[str, list[int]]:
    """Keep ``[n]`` only where ``known(n)``; the numbers dropped are returned."""
    dropped: list[int] = []

    def keep(match: re.Match) -> str:
        numbers = [int(n) for n in re.findall(r"\d+", match.group(1))]
        good = [n for n in numbers if known(n)]
        dropped.extend(n for n in numbers if n not in good)
        lead = match.group(0)[0] if match.group(0)[0].isspace() else ""
        return f"{lead}[{', '.join(map(str, good))}]" if good else ""

    return MARKER.sub(keep, text), dropped


def pieces(text: str) -> list[str]:
    """The answer cut after each sentence; joined back they give the text unchanged."""
    out, start = [], 0
    for match in _END.finditer(text):
        out.append(text[start : match.end()])
        start = match.end()
    if start < len(text):
        out.append(text[start:])
    return out


def written(piece: str) -> list[int]:
    return [int(n) for group in MARKER.findall(piece) for n in re.findall(r"\d+", group)]


def is_claim(sentence: str, question: str) -> bool:
    """A sentence that says something: a few content words, some of them not the question's own
    (a restated question is no claim), and not a statement that the files lack the answer."""
    words = claim_terms(sentence)
    return len(words) >= MIN_TERMS and bool(words - asked_terms(question) - FRAMING) and not abstains(sentence)


def cite(text: str, shown: dict[int, list[str]], evidence: Evidence, question: str = "") -> Citations:
    """Check the markers against ``shown`` (source number -> the sentences the model saw), then
    attach or correct them sentence by sentence."""
    text, dropped = check_markers(text, lambda n: n in shown)
    parts = pieces(text)
    claims = [(k, MARKER.sub("", p).strip()) for k, p in enumerate(parts)]
    claims = [(k, c) for k, c in claims if is_claim(c, question)]
    numbers = [n for n in shown for _ in shown[n]]
    flat = [s for n in shown for s in shown[n]]
    matrix = evidence.support([c for _, c in claims], flat, question)
    known_numbers = _numbers(" ".join(flat)) | _numbers(question)
    sentences = []
    for row, (k, claim) in enumerate(claims):
        by_source = {n: 0.0 for n in shown}
        for col, n in enumerate(numbers):
            by_source[n] = max(by_source[n], float(matrix[row, col]))
        have = list(dict.fromkeys(written(parts[k])))
        best = max(by_source, key=by_source.__getitem__) if by_source else None
        top = by_source[best] if best is not None else 0.0
        if (
            best is None or top < SUPPORTED or not _numbers(claim) <= known_numbers
        ):  # not from the excerpts: flagged, uncited
            cited, how = [], "unsupported" if have else "none"
            parts[k] = MARKER.sub("", parts[k])
        elif have and max(by_source[n] for n in have) >= top - CLOSE:
            cited, how = have, "model"
        else:
            cited, how = [best], "corrected" if have else "attached"
            parts[k] = _with_markers(parts[k], cited)
        support = {}
        for n in cited:
            columns = [col for col, m in enumerate(numbers) if m == n]
            if columns:
                support[n] = flat[max(columns, key=lambda col: matrix[row, col])]
        sentences.append(Sentence(claim, have, cited, how, support))
    starts = [0]
    for part in parts:
        starts.append(starts[-1] + len(part))
    for sentence, (k, _) in zip(sentences, claims):
        part = parts[k]
        sentence.at = (starts[k] + len(part) - len(part.lstrip()), starts[k] + len(part.rstrip()))
    return Citations("".join(parts), sentences, dropped)


def _numbers(text: str) -> set[str]:
    """The numbers a text states, in digits without thousands separators ("48,000" is "48000",
    "four" is "4")."""
    spelled = {NUMBER_WORDS[w] for w in re.findall(r"[a-z]+", text.lower()) if w in NUMBER_WORDS}
    return {re.sub(r",(?=\d{3}\b)", "", n) for n in _NUMBER.findall(text)} | spelled


def _with_markers(piece: str, numbers: list[int]) -> str:
    body = MARKER.sub("", piece)
    tail = _TAIL.search(body)
    assert tail is not None  # _TAIL matches at the end of any text
    return f"{body[: tail.start()]} [{', '.join(map(str, numbers))}]{tail.group(1)}{tail.group(2)}"
