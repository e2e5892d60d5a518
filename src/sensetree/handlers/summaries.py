"""A whole file, a small folder or two files on the chat model (``summaries/``)."""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext
from typing import Callable

from .. import paths
from ..answers import Summary
from ..context import Context
from ..errors import BadInput
from ..operations import CompareParams, SummariseParams
from ..reader import absent, archive_of, same_file
from ..summaries import ChatModel, Summariser, open_chat_model
from .registry import handles


@handles
def summarise(
    ctx: Context,
    params: SummariseParams,
    on_progress: Callable[[str], None] | None = None,
    model: ChatModel | None = None,
) -> Summary:
    """A whole file, or each file of a small folder, summarised part by part on the chat model
    (``sensetree summarise``, ``ask --file``): ``summaries/work.py``. ``on_progress`` hears each step."""
    path = readable(ctx, params.path)
    with _chat_model(ctx, model) as chat:
        work = Summariser(ctx.reader(), chat, on_progress, lambda file: _stored_sense(ctx, file))
        return work.folder(path, params.question) if os.path.isdir(path) else work.file(path, params.question)


@handles
def compare(
    ctx: Context,
    params: CompareParams,
    on_progress: Callable[[str], None] | None = None,
    model: ChatModel | None = None,
) -> Summary:
    """What differs between two files, from the notes on each and the passages that changed."""
    first, second = readable(ctx, params.path, folder=False), readable(ctx, params.other, folder=False)
    if same_file(first, second):
        shown = paths.name_of(first) if first == second else f"{paths.name_of(first)} and {paths.name_of(second)}"
        raise BadInput(f"{shown}: the same file twice (a link, or the same path): name two files to compare")
    with _chat_model(ctx, model) as chat:
        return Summariser(ctx.reader(), chat, on_progress).compare(first, second, params.question)


def readable(ctx: Context, path: str, folder: bool = True) -> str:
    """The checked path of a file (or a folder) to read, before any model starts."""
    path = ctx.reader().check(path)
    if os.path.isdir(path) and folder:
        return path
    if not os.path.isfile(path) and archive_of(path) is None:
        raise absent(path, why="" if folder else "compare takes two files")
    return path


def _chat_model(ctx: Context, model: ChatModel | None) -> AbstractContextManager[ChatModel]:
    if model is not None:
        return nullcontext(model)
    if ctx.chat_models is not None:
        return ctx.chat_models()
    return open_chat_model(ctx.settings, ctx.models_dir)


def _stored_sense(ctx: Context, path: str) -> str | None:
    """The summary indexing wrote for a file (by the model, or pinned by the user), if any."""
    row = ctx.choices.sense_of(path)
    return row.text if row and row.source in ("llm", "pinned") and row.text.strip() else None
