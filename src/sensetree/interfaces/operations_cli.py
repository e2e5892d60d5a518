"""CLI commands made from the engine's operations (``operations.py``): each parameter becomes an
argument or option from its ``Doc``, ``--json`` prints the result's one JSON shape, and without
it the command's renderer prints it. A running ``serve`` answers a question, and makes a change
(it holds the writer lock), when there is one."""

from __future__ import annotations

import inspect
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Optional, cast

import typer

from ..errors import SenseTreeError
from ..operations import OPERATIONS, Operation, Param
from . import served


@dataclass(frozen=True)
class Terminal:
    """What one command adds to its operation at a terminal: options of its own (how to print, a batch
    file), how to print a result with them, and another way to run when one of them asks for it."""

    options: tuple[inspect.Parameter, ...] = ()
    render: Callable[[Any, dict[str, Any]], None] | None = None  # (result, the values given and own options)
    instead: Callable[[dict[str, Any], dict[str, Any], Optional[Path]], bool] | None = None  # True: it ran
    command: bool = True  # False: no command of its own (another command runs it with ``answer``)


def add_commands(
    app: typer.Typer,
    open_engine: Callable[[Optional[Path]], Any],
    terminals: dict[str, Terminal],
    print_json: Callable[[Any], None],
    fail: Callable[[str], None],
    data_dir_option: Any,
    json_option: Any,
) -> None:
    """One command per operation on ``app``; the CLI's own helpers are passed in. An operation without a
    renderer prints its result as JSON."""
    for op in OPERATIONS.values():
        terminal = terminals.get(op.name, Terminal())
        if not terminal.command:
            continue
        run = _runner(op, terminal, open_engine, print_json, fail)
        signature = inspect.Signature(
            [
                *(_cli_parameter(p) for p in op.fields()),
                *terminal.options,
                inspect.Parameter("json_out", inspect.Parameter.KEYWORD_ONLY, default=json_option, annotation=bool),
                inspect.Parameter(
                    "data_dir", inspect.Parameter.KEYWORD_ONLY, default=data_dir_option, annotation=Optional[Path]
                ),
            ]
        )
        run.__signature__ = signature  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
        app.command(name=op.name, help=op.summary)(run)


def _cli_parameter(param: Param) -> inspect.Parameter:
    doc = param.doc
    default = None if param.required else param.default
    if doc.argument:  # optional here, so that another way to run (a batch file) may stand in; the parse asks for it
        declared = typer.Argument(default, help=doc.help, show_default=False)
    else:
        flags = [doc.flag or "--" + param.name.replace("_", "-"), *([doc.short] if doc.short else [])]
        declared = typer.Option(... if param.required else default, *flags, help=doc.help, min=doc.ge, max=doc.le)
    kind = Optional[param.type] if param.optional or default is None else param.type
    return inspect.Parameter(param.name, inspect.Parameter.KEYWORD_ONLY, default=declared, annotation=kind)


def _runner(
    op: Operation,
    terminal: Terminal,
    open_engine: Callable[[Optional[Path]], Any],
    print_json: Callable[[Any], None],
    fail: Callable[[str], None],
) -> Callable[..., None]:
    names = {p.name for p in op.fields()}

    def run(**values: Any) -> None:
        json_out, data_dir = values.pop("json_out"), values.pop("data_dir")
        own = {name: values.pop(name) for name in list(values) if name not in names}
        try:
            if terminal.instead and terminal.instead(values, {**own, "json": json_out}, data_dir):
                return
            missing = next((p for p in op.fields() if p.doc.argument and p.required and values[p.name] is None), None)
            if missing:
                fail(f"give a {missing.name.upper()}: {missing.doc.help}")
                return
            result = answer(op, op.parse(values, typed=True), data_dir, open_engine, _progress if op.progress else None)
        except SenseTreeError as exc:
            fail(str(exc))
            return
        if json_out or terminal.render is None:
            print_json(result.as_dict())
        else:
            terminal.render(result, {**values, **own})

    return run


def answer(
    op: Operation,
    params: Any,
    data_dir: Optional[Path],
    open_engine: Callable[[Optional[Path]], Any],
    progress: Callable[[Any], None] | None = None,
) -> Any:
    """``op``'s result for ``params``: from a running server when there is one (it holds the writer lock,
    so it makes a change), from the engine in this process otherwise. ``progress`` hears a long
    operation's steps (a server streams them as they come)."""
    params = _absolute_paths(op, params)
    server = None if op.local else served.running(data_dir)
    if server:
        if progress is not None:
            answered = served.operate(server, op.route + "/stream", asdict(params), progress)
        else:
            answered = served.send(server, op.verb, op.route, op.query(params) if op.in_query else asdict(params))
        if answered:
            return cast(Any, op.result).from_dict(answered)  # every result type reads its JSON back
    with open_engine(data_dir) as engine:
        return op.run(engine, params, bounded=False, **({"on_progress": progress} if progress else {}))


def _progress(text: str) -> None:
    """A long operation's step, on stderr (stdout keeps the result, JSON included)."""
    from rich.console import Console

    from .terminal import escape

    Console(stderr=True, highlight=False).print(f"[dim]  ⋯ {escape(text)}[/]")


def _absolute_paths(op: Operation, params: Any) -> Any:
    """A path typed in a shell that names something there is taken from there (the server and the
    engine run elsewhere); any other is left for the engine (relative to a root)."""
    changed = {
        p.name: os.path.abspath(getattr(params, p.name))
        for p in op.fields()
        if p.name in ("path", "other", "scope")
        and getattr(params, p.name)
        and not os.path.isabs(getattr(params, p.name))
        and os.path.lexists(getattr(params, p.name))
    }
    return replace(params, **changed)
