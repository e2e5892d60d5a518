"""Where a citation points: the sentence of the file that supports the claim, as characters of the
file's text (the text the preview shows), so that a citation opens the preview at that sentence.

``cite`` knows which shown sentence supports each claim best; the agent knows the chunk each shown
sentence came from; the engine's explorer finds the sentence in the file's text (within its chunk
first), or gives the chunk's span when the sentence as shown cannot be found back (``exact`` False).
"""

from __future__ import annotations

from ..engine import Engine
from ..errors import SenseTreeError
from ..handlers import files
from .evidence import CitedSpan, Sentence
from .tools import Sources

Chunks = dict[tuple[int, str], "int | None"]  # (source number, shown sentence) -> the chunk it came from


def attach(engine: Engine, sentences: list[Sentence], sources: Sources, chunk_of: Chunks) -> None:
    """Give each cited source of each sentence its span in the file: one read of each file for all its quotes."""
    wanted: dict[str, list[tuple[Sentence, int, int | None, str]]] = {}
    for sentence in sentences:
        for n in sentence.cited:
            source, quote = sources.by_number(n), sentence.support.get(n)
            if source is None or quote is None:
                continue
            chunk = chunk_of.get((n, quote), source.chunk_index)
            wanted.setdefault(source.path, []).append((sentence, n, chunk, quote))
    if not wanted:
        return
    explorer = files.explorer(engine)
    for path, items in wanted.items():
        try:
            spans = [(s.start, s.end, s.exact) for s in explorer.quote_spans(path, [(c, q) for _, _, c, q in items])]
        except (SenseTreeError, OSError, ValueError):  # the file went or cannot be read: the citation stays, unplaced
            spans = [(None, None, False)] * len(items)
        for (sentence, n, chunk, quote), (start, end, exact) in zip(items, spans):
            sentence.spans.append(CitedSpan(n, path, chunk, quote, start, end, exact))
