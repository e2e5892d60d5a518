"""Reads of the chunks table: both retrieval legs (dense, BM25) and the stored chunks of files."""

from __future__ import annotations

import time
from collections import Counter
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..paths import sql_literal
from .table import ANALYSIS_FIELDS, EXACT_COLUMN, FILE_FIELDS, FTS_COLUMN, NAMES_COLUMN, ChunkTable, Layout, in_lists
from .terms import phrases, query_parts, query_terms, stop_words, written_form

if TYPE_CHECKING:
    from lancedb.query import BooleanQuery, FullTextQuery, MatchQuery, Occur

# A scope narrower than this is searched exactly, a wider one through the index with the filter applied first.
# At 1M chunks (bench/search_latency.py's table): 1,000 rows exact 6.6 ms / HNSW 13.6 ms; 20,000 rows exact
# 27.9 ms / HNSW 14.9 ms with recall@160 0.993 against exact search; 200,000 rows 239 ms / 47 ms, recall 0.979.
EXACT_SCOPE_ROWS = 10_000
MAIN_LANGUAGE_SHARE = 0.05  # a language of this share of the chunks analyses every query too
MAIN_LANGUAGES_MAX = 3  # each one adds its stems to every query: the BM25 leg slows with them
LANGUAGES_TTL = 30.0
# Spelling (search/spelling.py): the chunks a fuzzy match reads to find the indexed terms near a word
# that no chunk holds, and the terms each of its forms expands to. On NFCorpus (8,584 chunks) an exact
# check of a word costs 2-3 ms, a fuzzy match of an unknown one 5-15 ms.
NEAR_ROWS = 500
NEAR_EXPANSIONS = 50
HOLDING_CAP = 5_000
SCORED_AMONG_ROWS = 5_000  # chunks ``sparse_among`` scores at most per batch of files
# What a match in each keyword column adds to a chunk's BM25, over a match of its terms (stems and identifiers):
# a word as it is written, and a file's or its folders' name (design §2.2).
EXACT_BOOST = 1.0
NAMES_BOOST = 4.0
PIECES_BOOST = 0.2  # the numbers in an identifier the query wrote whole: they find it in pieces, never outweigh it
# A word's form counts in a short query (what someone remembers word for word): past EXACT_WORDS words, the
# boost of the words as written shrinks in proportion. In a question or a claim the forms are noise: at a
# boost of 1 for every query, BM25 lost 0.018 on SciFact and 0.009 on NFCorpus; past 2 words, SciFact
# +0.007 and NFCorpus -0.004 (past 3: +0.003, -0.006), against the index without words as written.
EXACT_WORDS = 2


class ChunkQueries:
    def __init__(self, table: ChunkTable):
        self.table = table
        self._languages: tuple[int | None, float, list[str]] = (None, -LANGUAGES_TTL, [])

    def dense(self, vector: np.ndarray, k: int, where: str | None = None) -> list[dict]:
        """The ``k`` nearest chunks by cosine distance, filtered inside LanceDB before the search."""

        def read(table) -> list[dict]:
            layout = self.table.layout(table)
            query = (
                table.search(np.asarray(vector, np.float32), vector_column_name="vector")
                .distance_type("cosine")
                .limit(k)
                .select(_hit_columns(layout.columns, "_distance"))
            )
            if where:
                query = query.where(where, prefilter=True)
            if layout.vector_index:
                if where and table.count_rows(where) < EXACT_SCOPE_ROWS:
                    query = query.bypass_vector_index()  # exact: faster than the index on so few rows
                else:
                    query = query.ef(4 * k)
            return query.to_list()

        return self.table.read(read, [])

    def sparse(self, text: str, k: int, where: str | None = None, with_vectors: bool = False) -> list[dict]:
        """The ``k`` best chunks by BM25 on the analysed text; raises ValueError without an FTS index. With
        ``with_vectors`` each hit also carries its ``vector`` (None before the semantic phase reached it):
        a keyword hit's meaning, read with the hit for a fraction of a millisecond, not looked up after."""

        def read(table) -> list[dict]:
            layout = self.table.layout(table)
            keywords = _keyword_query(text, self._main_languages(table, layout), layout.columns)
            if keywords is None:
                return []
            columns = _hit_columns(layout.columns, "_score") + (["vector"] if with_vectors else [])
            query = table.search(keywords, query_type="fts").limit(k).select(columns)
            if where:
                query = query.where(where, prefilter=True)
            if not with_vectors:
                return query.to_list()
            found = query.to_arrow()
            vectors = found["vector"].to_numpy(zero_copy_only=False)  # arrays, and None where a row has none
            hits = found.drop_columns(["vector"]).to_pylist()
            for hit, vector in zip(hits, vectors):
                hit["vector"] = None if vector is None else np.asarray(vector, np.float32)
            return hits

        return self.table.read(read, [])

    def sparse_among(self, text: str, paths: Sequence[str], where: str | None = None) -> list[dict]:
        """BM25 of the chunks of ``paths`` that hold a query term, scored as ``sparse`` scores them (the
        filter narrows which rows are scored, not the statistics): a dense hit's keyword evidence."""
        hits: list[dict] = []
        for batch in in_lists(paths):
            narrowed = f"({where}) AND {batch}" if where else batch
            hits += self.sparse(text, SCORED_AMONG_ROWS, narrowed)
        return hits

    def term_forms(self, word: str) -> list[str]:
        """A query word's terms, as ``sparse`` analyses it (as written, and stemmed)."""
        return self.table.read(
            lambda table: query_terms(word, self._main_languages(table, self.table.layout(table))).split(), []
        ) or [word]

    def main_languages(self) -> list[str]:
        """The languages of at least MAIN_LANGUAGE_SHARE of the chunks, largest first (none for an empty index)."""
        return self.table.read(lambda table: self._main_languages(table, self.table.layout(table)), [])

    def known(self, terms: Sequence[str]) -> bool:
        """Does any chunk hold one of ``terms`` (one row of an exact keyword match)? True when it cannot
        be told (no keyword index yet): nothing is corrected then."""

        def read(table) -> bool:
            return bool(
                table.search(_match(" ".join(terms)), query_type="fts")
                .select(["chunk_index", "_score"])
                .limit(1)
                .to_list()
            )

        try:
            return self.table.read(read, True)
        except (ValueError, RuntimeError):
            return True

    def near(self, terms: Sequence[str], edits: int) -> Counter[str]:
        """Indexed terms that LanceDB's fuzzy match finds within ``edits`` of ``terms`` (the terms of at
        most NEAR_ROWS matching chunks, no longer than can be that near, no stop word of the index's
        languages), each with the number of those chunks holding it. LanceDB counts a transposition
        as two edits (Levenshtein): it is asked for one more, up to two."""
        longest = max(map(len, terms)) + edits

        def read(table) -> Counter[str]:
            rows = (
                table.search(
                    _match(" ".join(terms), fuzziness=min(2, edits + 1), max_expansions=NEAR_EXPANSIONS),
                    query_type="fts",
                )
                .select([FTS_COLUMN, "_score"])
                .limit(NEAR_ROWS)
                .to_arrow()[FTS_COLUMN]
                .to_pylist()
            )
            found: Counter[str] = Counter()
            for row in rows:
                found.update({t for t in (row or "").split() if len(t) <= longest})
            stop = stop_words(list(found), ["en", *self._main_languages(table, self.table.layout(table))])
            return Counter({t: n for t, n in found.items() if t not in stop})

        try:
            return self.table.read(read, Counter())
        except (ValueError, RuntimeError):
            return Counter()

    def holding(self, term: str) -> int:
        """How many chunks hold ``term`` (an exact keyword match; at most HOLDING_CAP): spelling settles a
        tie with it."""

        def read(table) -> int:
            return (
                table.search(_match(term), query_type="fts")
                .select(["chunk_index", "_score"])
                .limit(HOLDING_CAP)
                .to_arrow()
                .num_rows
            )

        try:
            return self.table.read(read, 0)
        except (ValueError, RuntimeError):
            return 0

    def written(self, term: str) -> str:
        """A word as the files write it whose term is ``term`` (\"diabetes\" for \"diabet\"), else the term."""

        def read(table) -> list[dict]:
            columns = ["text", *(["lang"] if "lang" in table.schema.names else []), "_score"]
            return table.search(_match(term), query_type="fts").select(columns).limit(3).to_list()

        try:
            rows: list[dict] = self.table.read(read, [])
        except (ValueError, RuntimeError):
            return term
        return written_form(term, [(row["text"], row.get("lang")) for row in rows]) or term

    def unembedded(self, paths: Sequence[str], chunks: Sequence[int] = ()) -> list[dict]:
        """The stored chunks of ``paths`` that have no vector yet (only those numbered ``chunks`` when
        given), in file and chunk order."""
        rows: list[dict] = []
        numbered = f" AND chunk_index IN ({', '.join(str(int(c)) for c in sorted(set(chunks)))})" if chunks else ""
        for batch in in_lists(paths):
            where = f"{batch} AND vector IS NULL{numbered}"
            rows += self.table.read(
                lambda table: (
                    table.search()
                    .where(where)
                    .select(
                        [
                            "path",
                            "chunk_index",
                            "text",
                            "content_hash",
                            "mtime",
                            *(f.name for f in FILE_FIELDS),
                            *(f.name for f in ANALYSIS_FIELDS if f.name in table.schema.names),
                        ]
                    )
                    .limit(None)
                    .to_list()
                ),
                [],
            )
        return sorted(rows, key=lambda r: (r["path"], r["chunk_index"]))

    def unembedded_openings(self, limit: int) -> set[str]:
        """Files (at most ``limit``) whose first chunk has no vector yet: the semantic phase gives every
        file its opening's vector before the rest of any file."""
        rows = self.table.read(
            lambda table: (
                table.search().where("chunk_index = 0 AND vector IS NULL").select(["path"]).limit(limit).to_arrow()
            ),
            None,
        )
        return set(rows["path"].to_pylist()) if rows is not None else set()

    def stored_chunks(self, paths: Sequence[str]) -> dict[str, tuple[set[int], set[str | None]]]:
        """path -> (its chunk numbers, the content hashes they carry): is a file stored whole?"""
        found: dict[str, tuple[set[int], set[str | None]]] = {p: (set(), set()) for p in paths}
        for where in in_lists(paths):
            rows: list[dict] = self.table.read(
                lambda table: (
                    table.search().where(where).select(["path", "chunk_index", "content_hash"]).limit(None).to_list()
                ),
                [],
            )
            for row in rows:
                found[row["path"]][0].add(row["chunk_index"])
                found[row["path"]][1].add(row["content_hash"])
        return found

    def count_embedded(self) -> int:
        return self.table.count("vector IS NOT NULL")

    def chunk(self, path: str, chunk_index: int) -> dict | None:
        """One stored chunk: its text and, once the table has it, its location."""
        where = f"path = {sql_literal(path)} AND chunk_index = {int(chunk_index)}"

        def read(table) -> list[dict]:
            columns = ["text", *(["location"] if "location" in table.schema.names else [])]
            return table.search().where(where).select(columns).limit(1).to_list()

        rows: list[dict] = self.table.read(read, [])
        return rows[0] if rows else None

    def chunk_text(self, path: str, chunk_index: int) -> str | None:
        found = self.chunk(path, chunk_index)
        return found["text"] if found else None

    def _main_languages(self, table, layout: Layout) -> list[str]:
        """The (at most MAIN_LANGUAGES_MAX) languages of at least MAIN_LANGUAGE_SHARE of the chunks,
        largest first; counted again when the table changed, at most every LANGUAGES_TTL seconds
        (a scan of one column: ~0.1 s a million chunks)."""
        counted_at = time.monotonic()
        if self._languages[0] != layout.version and counted_at - self._languages[1] >= LANGUAGES_TTL:
            counts = (
                table.search().select(["lang"]).limit(None).to_arrow()["lang"].value_counts().to_pylist()
                if "lang" in layout.columns
                else []
            )
            total = sum(c["counts"] for c in counts) or 1
            main = [
                c["values"]
                for c in sorted(counts, key=lambda c: -c["counts"])
                if c["values"] and c["counts"] / total >= MAIN_LANGUAGE_SHARE
            ]
            self._languages = (layout.version, counted_at, main[:MAIN_LANGUAGES_MAX])
        return self._languages[2]

    def vectors_of(self, path: str) -> np.ndarray:
        """The vectors of ``path``'s embedded chunks, one row each (none while it waits for the semantic phase)."""
        where = f"path = {sql_literal(path)} AND vector IS NOT NULL"
        rows: list[dict] = self.table.read(
            lambda table: table.search().where(where).select(["vector"]).limit(100_000).to_list(), []
        )
        return np.asarray([row["vector"] for row in rows], np.float32).reshape(len(rows), self.table.dimension or 0)

    def chunks_of(self, path: str, first: int | None = None) -> list[dict]:
        """A file's stored chunks in order; only its ``first`` ones when given."""
        where = f"path = {sql_literal(path)}" + (f" AND chunk_index < {int(first)}" if first is not None else "")
        rows: list[dict] = self.table.read(
            lambda table: table.search().where(where).select(["chunk_index", "text"]).limit(100_000).to_list(), []
        )
        return sorted(rows, key=lambda r: r["chunk_index"])


def _keyword_query(text: str, languages: list[str], columns: frozenset[str]) -> BooleanQuery | None:
    """The keyword leg's query. What the query typed (its words and stems, its identifiers whole), the
    pieces of its identifiers (``PIECES_BOOST``), its words as written (``EXACT_BOOST``) and what it typed
    in the names (``NAMES_BOOST``) each add their BM25; every quoted phrase must be there, its words as
    written and in order. None for a query with nothing to match."""
    from lancedb.query import BooleanQuery, Occur, PhraseQuery

    typed, pieces, named, written = query_parts(text, languages)
    if not typed and not pieces:
        return None
    clauses: list[tuple[Occur, FullTextQuery]] = []
    if typed:
        clauses.append((Occur.SHOULD, _match(typed)))
    if pieces:
        clauses.append((Occur.SHOULD, _match(pieces, boost=PIECES_BOOST)))
    if NAMES_COLUMN in columns:  # a table of this version: its stored text has its index of the words as written
        if written:
            boost = EXACT_BOOST * min(1.0, EXACT_WORDS / len(written.split()))
            clauses.append((Occur.SHOULD, _match(written, EXACT_COLUMN, boost=boost)))
        clauses += [(Occur.MUST, PhraseQuery(phrase, EXACT_COLUMN, slop=0)) for phrase in phrases(text)]  # type: ignore[call-arg]
        if named:
            clauses.append((Occur.SHOULD, _match(named, NAMES_COLUMN, boost=NAMES_BOOST)))
    return BooleanQuery(clauses)


def _match(
    terms: str, column: str = FTS_COLUMN, *, boost: float = 1.0, fuzziness: int = 0, max_expansions: int = 50
) -> MatchQuery:
    """LanceDB's match of ``terms`` in an analysed column (its defaults: exact, 50 expansions)."""
    from lancedb.query import MatchQuery

    # lancedb 0.40 gives MatchQuery's other fields their defaults as pydantic.Field(1.0, kw_only=True), positionally,
    # which a type checker does not read as a default: it asks for every one of them.
    return MatchQuery(terms, column, boost=boost, fuzziness=fuzziness, max_expansions=max_expansions)  # type: ignore[call-arg]


def _hit_columns(columns: frozenset[str], score: str) -> list[str]:
    """What a leg reads of each hit; the newer columns once the table has them (a table from before is
    migrated on its next write or keyword-index build)."""
    newer = [name for name in ("lang", "location") if name in columns]
    return ["path", "chunk_index", "text", "content_hash", *newer, score]
