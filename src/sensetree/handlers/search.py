"""The query flow, in one place and one way: words read as filters (``search/intent.py``), the scope
checked, retrieval (``search/pipeline.py``), then what the catalog adds (``search/facts.py``)."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import replace
from datetime import datetime

from .. import overview, paths
from ..context import Context
from ..errors import BadInput
from ..filters import parse_filters
from ..notices import AS_TYPED, meaning_sentence
from ..operations import SearchParams, SimilarParams, TreeParams
from ..reader import absent, on_disk
from ..search.facts import coverage, list_copies, offline_notices, scope_problem
from ..search.intent import Understood, narrowed, understand
from ..search.spelling import respelled
from ..search.types import Coverage, Filters, SearchResponse, SearchResult, SimilarResponse, TreeResponse
from .registry import handles


def _rank_consistent(response: SearchResponse) -> None:
    """Scores that never rise down the list (design §2.7): without the reranker the fused order ranks
    and the chunk's cosine is shown, so ranks 1 to 3 read 65 %, 60 %, 62 %. A result shows at most the
    score of the one above it; every interface shows this one score."""
    for above, result in zip(response.results, response.results[1:]):
        result.score = min(result.score, above.score)


@handles
def search(ctx: Context, params: SearchParams) -> SearchResponse:
    """The one search every interface uses; ``hybrid``/``rerank`` override the settings per call.
    Unless ``literal``, filters said in the query's words (search/intent.py) narrow it, to every
    folder of a name said, and a word no file has is searched as the nearest one a file has
    (search/spelling.py). What a person typed is never taken away: where filters were read, the words
    alone (every word a search word, no filter read) are searched too, and shown instead when the
    filters lose what they find (``_words_alone_win``), with a notice; whenever the filters change what
    the words alone find, the answer says so and how many files the words alone find
    (``literal_results``). A correction needs no second search: it replaces only a word that no file
    holds, in its text or its name, by one some file holds, so its keyword leg finds every file the
    words as typed find, and its dense leg as many."""
    filters = parse_filters(params.types, params.modified_after, params.modified_before)
    scope = params.scope or None
    understood = _understood(ctx, params.query, params.literal, scope)
    if understood is None:  # no filter read: a correction alone cannot lose what the words as typed find
        return _search(ctx, params, params.query, filters, scope)
    response = _search(
        ctx, params, understood.query, narrowed(filters, understood.filters()), understood.scope or scope
    )
    response.query, response.understood = params.query, understood.as_dict()
    if len(understood.folders) > 1:
        response.notices.append(
            f"{len(understood.folders)} folders are called {paths.name_of(understood.folder or '')}: "
            f"searched all of them ({', '.join(understood.folders)})"
        )
    wider = max(params.limit, 10)
    plain = _search(ctx, replace(params, limit=wider), params.query, filters, scope)  # the words alone
    said = ", ".join(f'"{words}"' for words in understood.said)
    read_as = f"{said} read as {'filters' if len(understood.said) > 1 else 'a filter'}"
    why = _words_alone_win(response, plain, ctx, respelled(understood.query, response.spelled))
    if why:
        plain.results = plain.results[: params.limit]
        plain.notices.append(
            f"{read_as}: {why}; showing what the words alone find, {plain.results[0].name} first (put those "
            "words in quotes to keep them search words)"
        )
        return plain
    found, shown = len(response.results), [r.path for r in response.results]
    if shown != [r.path for r in plain.results[: params.limit]]:  # the filters changed what is found
        response.understood["literal_results"] = len(plain.results)
        first = next((r for r in plain.results if r.path not in shown), None) if plain.results else None
        top = f"; the words alone rank {paths.name_of(first.path)} first" if first is plain.results[0] and first else ""
        response.notices.append(
            f"{read_as}: {found} file{'s' if found != 1 else ''} found; as search words {len(plain.results)}"
            f"{'+' if len(plain.results) == wider else ''}{top} (search again with {AS_TYPED}, or "
            "put those words in quotes)"
        )
    return response


def _words_alone_win(found: SearchResponse, alone: SearchResponse, ctx: Context, rest: str) -> str | None:
    """Why the words alone (``alone``: every word a search word) are shown instead of what the filters read
    from them found (``found``, searched for the ``rest`` of the words), or None. They are when the filters
    find nothing, and when no file found holds a word of the rest while the file the words alone rank first
    does: the filters took away every file holding the words ("Urlaub im Juli", the holiday's notes written
    in March; with vectors, July's files were found by meaning, none about the holiday). A filter that keeps
    files holding the words is what was asked, whatever the words alone rank first: "invoices pdf" shows
    PDFs though the words rank a DOCX first, and "gnu license since 2020" the licences of those years though
    the words alone rank first one whose text names 2020."""
    if not alone.results:
        return None
    if not found.results:
        return "no file found"
    first = alone.results[0]
    if any(_holds_words(r) for r in found.results) or not _holds_words(first):
        return None
    try:
        holds = ctx.storage.recovering(lambda: ctx.store.queries.sparse_among(rest, [first.path]))
    except (ValueError, RuntimeError):  # no keyword index: nothing to tell the files apart by
        return None
    return f'no file found holds "{rest}"' if holds else None


def _holds_words(result: SearchResult) -> bool:
    """Whether a result was found by its words (the keyword leg ranked it, or scored it above 0)."""
    return "bm25" in result.legs or bool(result.signals and result.signals.get("bm25"))


def _search(
    ctx: Context, params: SearchParams, query: str, filters: Filters | None, scope: str | list[str] | None
) -> SearchResponse:
    hybrid = ctx.settings["retrieval.hybrid"] if params.hybrid is None else params.hybrid
    rerank = ctx.settings["retrieval.rerank"] if params.rerank is None else params.rerank
    scopes = scope if isinstance(scope, list) else [scope]  # several: every folder of a name said
    problem = ctx.storage.recovering(lambda: next(filter(None, (_scope_problem(ctx, s) for s in scopes)), None))
    if problem:
        return SearchResponse(query=query, notices=[*ctx.notices.take(), problem])
    collapse = ctx.settings["retrieval.collapse_duplicates"]
    response = ctx.storage.recovering(
        lambda: ctx.retriever(params.literal).search(
            query, scope, params.limit, hybrid=hybrid, rerank_on=rerank, filters=filters, collapse=collapse
        )
    )
    _add_catalog_facts(ctx, response, scope if not isinstance(scope, list) else None, collapse)
    _rank_consistent(response)
    if (
        rerank
        and ctx.models.reranker_problem
        and _first_time(ctx, "reranker", ctx.settings["retrieval.reranker_model"])
    ):
        first = ctx.models.reranker_problem.split(". ")[0].rstrip(".")
        response.notices.append(f"reranking skipped: {first} (said once; `sensetree status` says how to enable it)")
    return response


def _understood(ctx: Context, query: str, literal: bool, scope: str | None) -> Understood | None:
    if literal:
        return None
    return understand(query, now=datetime.now(), folders=lambda name: _folders_named(ctx, name, scope))


def _folders_named(ctx: Context, name: str, scope: str | None) -> list[str]:
    """The folders at or under a root (and under the scope) called ``name``, whatever its case, shallowest first."""
    found = ctx.storage.recovering(lambda: ctx.catalog.files.folders_named(name))
    return sorted(
        (f for f in found if scope is None or paths.is_under(f, scope)), key=lambda f: (f.count("/") + f.count("\\"), f)
    )  # Windows paths count their backslashes


def _add_catalog_facts(
    ctx: Context, response: SearchResponse | SimilarResponse, scope: str | None, collapse: bool
) -> None:
    """What the catalog adds to ranked files: every place a result's content sits, the repairs made
    on the way, the roots that are offline, and how much of the scope has vectors."""
    if collapse:
        list_copies(ctx.catalog, response)
    # (the files embedded on demand were brought forward by ingest/on_demand.py already)
    ctx.bring_forward([r.path for r in response.results if r.signals is None or r.signals["cosine"] is None])
    response.notices[:0] = ctx.notices.take()
    response.notices += [n for n in offline_notices(ctx.catalog, scope) if n not in response.notices]
    found = coverage(ctx.catalog, scope)
    if found:
        response.coverage = Coverage(*found, meaning_sentence(*found, overview.phases(ctx.catalog).semantic_eta_s))


@handles
def similar(ctx: Context, params: SimilarParams) -> SimilarResponse:
    """Files most like one file (``sensetree similar``), from its stored vectors; its identical
    copies and its versions (most of the wording shared) apart, the versions with their dates."""
    path = ctx.reader().check(params.path)
    name = paths.name_of(path)
    if not on_disk(path):  # deleted since it was indexed: its vectors stay until the next scan
        raise absent(path)
    if os.path.isdir(path):
        raise absent(path, why="similar finds files like one file; to look only inside a folder, give it as the scope")
    problem = ctx.storage.recovering(lambda: _scope_problem(ctx, params.scope))
    if problem:
        return SimilarResponse(query=path, notices=[*ctx.notices.take(), problem])
    row = ctx.catalog.files.get(path)
    if row is None or not row.chunks:
        raise BadInput(f"{name} is not in the index (yet): `sensetree queue` says why")
    vectors = ctx.storage.recovering(lambda: ctx.store.queries.vectors_of(path))
    if not len(vectors):
        return SimilarResponse(
            query=path,
            notices=[
                f"{name} is waiting for its vectors: files like it are found once it has them "
                "(`sensetree status` shows how far the semantic phase is)"
            ],
        )
    copies = (
        frozenset(
            copy for copy in ctx.catalog.files.with_hashes([row.content_hash]).get(row.content_hash, []) if copy != path
        )
        if row.content_hash
        else frozenset()
    )
    collapse = ctx.settings["retrieval.collapse_duplicates"]
    response = ctx.storage.recovering(
        lambda: ctx.retriever().similar(path, vectors, params.scope, params.limit, collapse, copies)
    )
    _add_catalog_facts(ctx, response, params.scope, collapse)
    dated = {v.path: ctx.catalog.files.get(v.path) for v in response.versions}
    response.versions = sorted(
        (replace(v, mtime=row.mtime if (row := dated[v.path]) else None) for v in response.versions),
        key=lambda v: -(v.mtime or 0.0),
    )
    return response


def _scope_problem(ctx: Context, scope: str | None) -> str | None:
    return scope_problem(scope, ctx.roots(), mounted=not ctx.read_only)


def _first_time(ctx: Context, topic: str, about: str) -> bool:
    try:
        return ctx.catalog.first_time(topic, about)
    except sqlite3.OperationalError:  # a busy or read-only catalog: better said twice than never
        return True


@handles
def tree(ctx: Context, params: TreeParams) -> TreeResponse:
    """The meaning tree (``sensetree tree``), with how much of the scope it covers yet; filters said
    in the query's words narrow it as they narrow a search."""
    filters = parse_filters(params.types, params.modified_after, params.modified_before)
    query, asked = params.query, params.scope or None
    scope: str | list[str] | None = asked
    understood = _understood(ctx, params.query, params.literal, asked)
    if understood:
        query, scope, filters = understood.query, understood.scope or scope, narrowed(filters, understood.filters())
    scopes = scope if isinstance(scope, list) else [scope]  # several: every folder of a name said
    problem = ctx.storage.recovering(lambda: next(filter(None, (_scope_problem(ctx, s) for s in scopes)), None))
    if problem:
        return TreeResponse(params.query, None, [*ctx.notices.take(), problem])
    node, notices = ctx.storage.recovering(
        lambda: ctx.retriever().tree(query, scope, ctx.roots(), params.limit, filters)
    )
    told = scope if not isinstance(scope, list) else None  # what the coverage and offline roots are told of
    covered = coverage(ctx.catalog, told)
    if covered:
        files, embedded = covered
        notices.append(
            f"the meaning tree covers {embedded:,} of {files:,} files ({embedded / files:.0%}); the "
            "others are not embedded yet (search finds them by keyword meanwhile)"
        )
    notices[:0] = ctx.notices.take()
    return TreeResponse(
        params.query,
        node,
        [*notices, *(n for n in offline_notices(ctx.catalog, told) if n not in notices)],
        understood.as_dict() if understood else None,
    )
