"""``sensetree chat`` and ``sensetree ask``: the assistant in a terminal.

The answer streams as the model writes it; each tool call shows up as it happens; the numbered
sources follow, so every ``[n]`` in the answer can be traced to a file and the excerpt behind it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Optional

import typer
from rich.console import Console

from .. import paths
from ..errors import SenseTreeError
from ..operations import AskParams, params_of
from ..safe_text import printable
from . import served
from .open import open_engine
from .terminal import escape

if TYPE_CHECKING:  # the assistant and the engine load with the commands that run them here
    from ..chat import Step
    from ..engine import Engine

console = Console(highlight=False)
errors = Console(stderr=True, highlight=False)

DataDir = typer.Option(
    None, "--data-dir", help="Where the index lives (default: user data folder; SENSETREE_HOME overrides)."
)
ASKED = {p.name: p.doc for p in params_of(AskParams)}  # the question's parameters, declared in operations.py
Scope = typer.Option(None, "--scope", help=ASKED["scope"].help)

_STEP_STYLE = {
    "search_files": "cyan",
    "seed": "cyan",
    "read_file": "cyan",
    "list_directory": "cyan",
    "fallback": "yellow",
    "trim": "yellow",
    "limit": "yellow",
    "citations": "yellow",
    "notice": "yellow",
}


class _Stream:
    """Prints tokens as they come and puts each step on a line of its own."""

    def __init__(self) -> None:
        self.mid_line = False

    def token(self, text: str) -> None:
        text = printable(text, lines=True)  # a model may repeat what a file holds, escape sequences included
        console.file.write(text)
        console.file.flush()
        self.mid_line = not text.endswith("\n")

    def step(self, step: Step) -> None:
        self.step_of(step.as_dict())

    def step_of(self, step: dict[str, str]) -> None:
        self.end_line()
        style = _STEP_STYLE.get(step["kind"], "dim")
        console.print(f"[{style}]  ⋯ {escape(step['text'])}[/]")

    def progress(self, text: str) -> None:
        """A long operation's step (a summary's "part 3 of 12"), on stderr: stdout keeps the result."""
        self.end_line()
        errors.print(f"[dim]  ⋯ {escape(text)}[/]")

    def end_line(self) -> None:
        if self.mid_line:
            console.file.write("\n")
            self.mid_line = False


def _print_sources(result: dict[str, Any]) -> None:
    """The sources of an answer, from its JSON shape (``Answer.as_dict()``, in-process or served)."""
    if not result["sources"]:
        console.print("[dim]no sources: nothing in your files matched[/]")
        return
    console.print("[bold]Sources[/]")
    for s in result["sources"]:
        where = s["location_label"] or (f"chunk {s['chunk_index']}" if s["chunk_index"] is not None else "read in full")
        score = f"{s['score'] * 100:.0f}% · " if s["score"] is not None else ""
        mark = "[green]✓[/]" if s["cited"] else " "
        console.print(f" {mark}[bold][{s['n']}][/] {escape(s['path'])} [dim]({score}{where})[/]")
        console.print(f"      [dim]{escape(s['snippet'])}[/]")
    stats = result["stats"]
    if stats["ttft_s"] is not None:
        rate = f" · {stats['tokens_per_s']:.1f} tokens/s" if stats["tokens_per_s"] else ""
        console.print(f"[dim]first token after {stats['ttft_s']:.1f} s{rate}[/]")


def print_summary(result: dict[str, Any]) -> None:
    """A summary (``Summary.as_dict()``): the whole, then the notes it cites with their pages or parts."""
    console.print(printable(result["summary"], lines=True))
    if result["notes"]:
        console.print("[bold]Notes[/]")
    for note in result["notes"]:
        mark = "[green]✓[/]" if note["cited"] else " "
        console.print(f" {mark}[bold][{note['n']}][/] {escape(note['name'])} [dim]({escape(note['where'])})[/]")
        console.print(f"      [dim]{escape(note['text'])}[/]")
    for notice in result["notices"]:
        errors.print(f"[yellow]{escape(notice)}[/]")
    console.print(f"[dim]{result['parts']} part(s) read in {result['seconds']:.1f} s on {escape(result['model'])}[/]")


def _engine(data_dir: Optional[Path]) -> Engine:
    engine = open_engine(data_dir, lambda notice: errors.print(f"[yellow]{escape(notice)}[/]"))
    if not engine.roots():
        errors.print(
            "[yellow]nothing is indexed yet: answers will have no sources "
            "(run `sensetree add FOLDER` then `sensetree index`)[/]"
        )
    return engine


def _fail(message: str) -> NoReturn:
    errors.print(f"[red]error:[/] {escape(message)}")
    raise typer.Exit(1)


def chat(scope: Optional[str] = Scope, data_dir: Optional[Path] = DataDir):
    """Talk with the assistant about your files (Ctrl-D or /quit to leave)."""
    from ..chat import ChatError, ChatSessions

    stream = _Stream()
    conversation: list[str] = []  # the one this terminal goes on with, once the first answer starts it
    with _engine(data_dir) as engine, ChatSessions(engine) as sessions:
        try:
            label = sessions.backend().label
        except ChatError as exc:
            _fail(str(exc))
        console.print(
            f"[dim]{escape(label)} · {escape(paths.normalize(scope) if scope else 'all roots')} · "
            "Ctrl-D or /quit to leave[/]"
        )
        while True:
            try:
                question = console.input("[bold green]you›[/] ").strip()
            except (EOFError, KeyboardInterrupt):
                console.print()
                return
            if question in {"/quit", "/exit"}:
                return
            if not question:
                continue
            try:
                result = sessions.ask(
                    AskParams(question, scope, conversation[-1] if conversation else None),
                    lambda started, _label: conversation.append(started),
                    stream.token,
                    stream.step,
                )
            except ChatError as exc:
                stream.end_line()
                errors.print(f"[red]error:[/] {escape(str(exc))}")
                continue
            except KeyboardInterrupt:
                stream.end_line()
                errors.print("[yellow](answer interrupted)[/]")
                continue
            stream.end_line()
            _print_sources(result.as_dict())


def ask(
    question: Optional[str] = typer.Argument(
        None, help=ASKED["question"].help + " With --file: what to look for (without one, a summary)."
    ),
    scope: Optional[str] = Scope,
    files: Optional[list[str]] = typer.Option(
        None,
        "--file",
        help="Read this whole file (or each file of a small "
        "folder) instead of searching; twice: compare the two files.",
    ),
    json_out: bool = typer.Option(
        False, "--json", help="Print {answer, sources, steps} as JSON (with --file: {summary, notes, parts, notices})."
    ),
    data_dir: Optional[Path] = DataDir,
):
    """Ask one question; the answer cites the files it comes from. With --file, about whole files."""
    if files:
        _ask_files(files, question, json_out, data_dir)
        return
    if not question:
        _fail("give a QUESTION, or --file PATH to summarise a file")
    stream = _Stream()
    result = _served_answer(question, scope, None if json_out else stream, data_dir)
    if result is None:  # no server: the same sessions in this process, for one question
        from ..chat import ChatError, ChatSessions

        with _engine(data_dir) as engine, ChatSessions(engine) as sessions:
            try:
                asked = AskParams(question, scope)
                answered = (
                    sessions.ask(asked) if json_out else sessions.ask(asked, on_token=stream.token, on_step=stream.step)
                )
                result = answered.as_dict()
            except ChatError as exc:
                stream.end_line()
                _fail(str(exc))
    if json_out:
        sys.stdout.write(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
    else:
        stream.end_line()
        _print_sources(result)


def _ask_files(files: list[str], question: Optional[str], json_out: bool, data_dir: Optional[Path]) -> None:
    """``ask --file``: one file or folder summarised, or two files compared (the engine's operations)."""
    import os
    from contextlib import suppress

    from ..operations import OPERATIONS
    from .operations_cli import answer

    if len(files) > 2:
        _fail("--file takes one file or folder to summarise, or two files to compare")
    paths_given = [os.path.abspath(f) if os.path.lexists(f) else f for f in files]
    values = {"path": paths_given[0], "question": question}
    if len(files) == 2:
        values["other"] = paths_given[1]
    op = OPERATIONS["compare" if len(files) == 2 else "summarise"]
    stream = _Stream()
    try:
        result = answer(op, op.parse(values, typed=True), data_dir, _engine, stream.progress).as_dict()
    except SenseTreeError as exc:
        _fail(str(exc))
        return
    with suppress(BrokenPipeError):
        if json_out:
            sys.stdout.write(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
        else:
            print_summary(result)


def _served_answer(
    question: str, scope: Optional[str], stream: Optional[_Stream], data_dir: Optional[Path]
) -> Optional[dict[str, Any]]:
    """The answer of the running service, streamed to ``stream``; None when no service answers."""
    server = served.running(data_dir)
    if server is None:
        return None
    try:
        # the server's working folder is not this one: a relative scope is made absolute here
        return served.ask(
            server,
            question,
            scope and paths.normalize(scope),
            stream.token if stream else None,
            stream.step_of if stream else None,
        )
    except served.AskFailed as exc:
        if stream:
            stream.end_line()
        _fail(str(exc))
        raise


def register(app: typer.Typer) -> None:
    app.command()(chat)
    app.command()(ask)
