"""CLI commands made from the engine's operations (``operations.py``): each parameter becomes an
argument or option from its ``Doc``, ``--json`` prints the result's one JSON shape, and without
it the result type's renderer prints it. A running ``serve`` answers when there is one, as for
``search``."""

from __future__ import annotations

import inspect
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Optional

import typer

from ..errors import SenseTreeError
from ..operations import OPERATIONS, Operation, Param
from . import served

Render = Callable[[Any], None]


def add_commands(app: typer.Typer, open_engine: Callable[[Optional[Path]], Any], renderers: dict[type, Render],
                 print_json: Callable[[Any], None], fail: Callable[[str], None], data_dir_option: Any,
                 json_option: Any) -> None:
    """One command per operation on ``app``; the CLI's own helpers are passed in. A result type without a
    renderer prints as its JSON."""
    for op in OPERATIONS.values():
        render = renderers.get(op.result, lambda result: print_json(result.as_dict()))
        run = _runner(op, open_engine, render, print_json, fail)
        run.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
            *(_cli_parameter(p) for p in op.fields()),
            inspect.Parameter("json_out", inspect.Parameter.KEYWORD_ONLY, default=json_option, annotation=bool),
            inspect.Parameter("data_dir", inspect.Parameter.KEYWORD_ONLY, default=data_dir_option,
                              annotation=Optional[Path])])
        run.__annotations__ = {p.name: p.annotation for p in run.__signature__.parameters.values()}
        app.command(name=op.name, help=op.summary)(run)


def _cli_parameter(param: Param) -> inspect.Parameter:
    doc = param.doc
    default = None if param.required else param.default
    if doc.argument:
        declared = typer.Argument(... if param.required else default, help=doc.help, show_default=False)
    else:
        flags = [doc.flag or "--" + param.name.replace("_", "-"), *([doc.short] if doc.short else [])]
        declared = typer.Option(... if param.required else default, *flags, help=doc.help, min=doc.ge, max=doc.le)
    kind = Optional[param.type] if param.optional or default is None else param.type
    return inspect.Parameter(param.name, inspect.Parameter.KEYWORD_ONLY, default=declared, annotation=kind)


def _runner(op: Operation, open_engine: Callable[[Optional[Path]], Any], render: Render,
            print_json: Callable[[Any], None], fail: Callable[[str], None]) -> Callable[..., None]:
    def run(**values: Any) -> None:
        json_out, data_dir = values.pop("json_out"), values.pop("data_dir")
        try:
            params = op.parse(values)
            params = _absolute_paths(op, params)
            server = served.running(data_dir)
            answer = server and served.get(server, op.route, op.query(params))
            if answer:
                result = op.result.from_dict(answer)
            else:
                with open_engine(data_dir) as engine:
                    result = op.run(engine, params)
        except SenseTreeError as exc:
            fail(str(exc))
            return
        if json_out:
            print_json(result.as_dict())
        else:
            render(result)
    return run


def _absolute_paths(op: Operation, params: Any) -> Any:
    """A path typed in a shell that names something there is taken from there (the server and the
    engine run elsewhere); any other is left for the engine (relative to a root)."""
    changed = {p.name: os.path.abspath(getattr(params, p.name)) for p in op.fields()
               if p.name in ("path", "scope") and getattr(params, p.name)
               and not os.path.isabs(getattr(params, p.name)) and os.path.lexists(getattr(params, p.name))}
    return replace(params, **changed)
