"""The query flow, in one place and one way: words read as filters (``search/intent.py``), the scope
checked, retrieval (``search/pipeline.py``), then what the catalog adds (``search/facts.py``)."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import datetime

from .. import paths
from ..context import Context
from ..errors import BadInput
from ..filters import parse_filters
from ..operations import SearchParams, SimilarParams, TreeParams
from ..search.facts import coverage, list_copies, offline_notices, scope_problem
from ..search.intent import FEW_RESULTS, Understood, narrowed, understand
from ..search.types import Filters, SearchResponse, SimilarResponse, TreeResponse
from .registry import handles


@handles
def search(ctx: Context, params: SearchParams) -> SearchResponse:
    """The one search every interface uses; ``hybrid``/``rerank`` override the settings per call.
    Unless ``literal``, filters said in the query's words (search/intent.py) narrow it; when they
    leave little that the words alone would find, the answer says so."""
    filters = parse_filters(params.types, params.modified_after, params.modified_before)
    scope = params.scope or None
    understood = _understood(ctx, params.query, params.literal, scope)
    if understood is None:
        return _search(ctx, params, params.query, filters, scope)
    response = _search(ctx, params, understood.query, narrowed(filters, understood.filters()),
                       understood.folder or scope)
    response.query, response.understood = params.query, understood.as_dict()
    found = len(response.results)
    if found < FEW_RESULTS:  # little: would the words alone find much more?
        wider = max(params.limit, 10)
        plain = _search(ctx, replace(params, limit=wider), params.query, filters, scope)
        if len(plain.results) >= FEW_RESULTS * (found + 1):
            response.understood["literal_results"] = len(plain.results)
            said = ", ".join(f'"{words}"' for words in understood.said)
            response.notices.append(
                f"{said} read as {'filters' if len(understood.said) > 1 else 'a filter'}: {found} file"
                f"{'s' if found != 1 else ''} found; as search words {len(plain.results)}"
                f"{'+' if len(plain.results) == wider else ''} (search again with --literal, or "
                "put those words in quotes)")
    return response


def _search(ctx: Context, params: SearchParams, query: str, filters: Filters | None,
            scope: str | None) -> SearchResponse:
    hybrid = ctx.settings["retrieval.hybrid"] if params.hybrid is None else params.hybrid
    rerank = ctx.settings["retrieval.rerank"] if params.rerank is None else params.rerank
    problem = ctx.storage.recovering(lambda: _scope_problem(ctx, scope))
    if problem:
        return SearchResponse(query=query, notices=[*ctx.notices.take(), problem])
    collapse = ctx.settings["retrieval.collapse_duplicates"]
    response = ctx.storage.recovering(lambda: ctx.retriever().search(
        query, scope, params.limit, hybrid=hybrid, rerank_on=rerank, filters=filters, collapse=collapse))
    _add_catalog_facts(ctx, response, scope, collapse)
    if rerank and ctx.models.reranker_problem and _first_time(ctx, "reranker",
                                                              ctx.settings["retrieval.reranker_model"]):
        first = ctx.models.reranker_problem.split(". ")[0].rstrip(".")
        response.notices.append(f"reranking skipped: {first} (said once; `sensetree status` says how to enable it)")
    return response


def _understood(ctx: Context, query: str, literal: bool, scope: str | None) -> Understood | None:
    if literal:
        return None
    return understand(query, now=datetime.now(), folders=lambda name: _folders_named(ctx, name, scope))


def _folders_named(ctx: Context, name: str, scope: str | None) -> list[str]:
    """The folders under the roots (and the scope) called ``name``, whatever its case, shallowest first."""
    found = ctx.storage.recovering(lambda: ctx.catalog.files.folders_named(name))
    return sorted((f for f in found if scope is None or paths.is_under(f, scope)),
                  key=lambda f: (f.count("/") + f.count("\\"), f))  # Windows paths count their backslashes


def _add_catalog_facts(ctx: Context, response: SearchResponse | SimilarResponse, scope: str | None,
                       collapse: bool) -> None:
    """What the catalog adds to ranked files: every place a result's content sits, the repairs made
    on the way, the roots that are offline, and how much of the scope has vectors."""
    if collapse:
        list_copies(ctx.catalog, response)
    response.notices[:0] = ctx.notices.take()
    response.notices += [n for n in offline_notices(ctx.catalog, scope) if n not in response.notices]
    response.coverage = coverage(ctx.catalog, scope)


@handles
def similar(ctx: Context, params: SimilarParams) -> SimilarResponse:
    """Files most like one file (``sensetree similar``), from its stored vectors; its identical
    copies and its versions (most of the wording shared) apart, the versions with their dates."""
    path = ctx.reader().check(params.path)
    name = paths.name_of(path)
    problem = ctx.storage.recovering(lambda: _scope_problem(ctx, params.scope))
    if problem:
        return SimilarResponse(query=path, notices=[*ctx.notices.take(), problem])
    row = ctx.catalog.files.get(path)
    if row is None or not row.chunks:
        raise BadInput(f"{name} is not in the index (yet): `sensetree queue` says why")
    vectors = ctx.storage.recovering(lambda: ctx.store.queries.vectors_of(path))
    if not len(vectors):
        return SimilarResponse(query=path, notices=[
            f"{name} is waiting for its vectors: files like it are found once it has them "
            "(`sensetree status` shows how far the semantic phase is)"])
    copies = frozenset(copy for copy in ctx.catalog.files.with_hashes([row.content_hash]).get(row.content_hash, [])
                       if copy != path) if row.content_hash else frozenset()
    collapse = ctx.settings["retrieval.collapse_duplicates"]
    response = ctx.storage.recovering(lambda: ctx.retriever().similar(path, vectors, params.scope, params.limit,
                                                                      collapse, copies))
    _add_catalog_facts(ctx, response, params.scope, collapse)
    dated = {v.path: ctx.catalog.files.get(v.path) for v in response.versions}
    response.versions = sorted((replace(v, mtime=row.mtime if (row := dated[v.path]) else None)
                                for v in response.versions), key=lambda v: -(v.mtime or 0.0))
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
    query, scope = params.query, params.scope or None
    understood = _understood(ctx, params.query, params.literal, scope)
    if understood:
        query, scope, filters = understood.query, understood.folder or scope, narrowed(filters, understood.filters())
    problem = ctx.storage.recovering(lambda: _scope_problem(ctx, scope))
    if problem:
        return TreeResponse(params.query, None, [*ctx.notices.take(), problem])
    node, notices = ctx.storage.recovering(lambda: ctx.retriever().tree(query, scope, ctx.roots(), params.limit,
                                                                        filters))
    covered = coverage(ctx.catalog, scope)
    if covered:
        files, embedded = covered
        notices.append(f"the meaning tree covers {embedded:,} of {files:,} files ({embedded / files:.0%}); the "
                       "others are not embedded yet (search finds them by keyword meanwhile)")
    notices[:0] = ctx.notices.take()
    return TreeResponse(params.query, node, [*notices, *(n for n in offline_notices(ctx.catalog, scope)
                                                         if n not in notices)],
                        understood.as_dict() if understood else None)
