"""The ``sensetree`` command: a thin shell over the engine."""

from __future__ import annotations

import ctypes
import inspect
import json
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Optional

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from ..answers import Download, FileContents, PageImage, Queue, Roots, Status
from ..errors import BadInput, DataDirReadOnly, SenseTreeError
from ..notices import for_surface
from ..operations import OPERATIONS
from ..safe_text import printable, without_surrogates
from ..search.types import SearchResponse, SimilarResponse, TreeNode, TreeResponse
from .chat_cli import print_summary
from .chat_cli import register as register_chat
from .doctor import register as register_doctor
from .exits import DISK_REFUSED, end_process, report_error, stopped_by_signals
from .mcp_server import register as register_mcp
from .open import open_engine
from .operations_cli import Terminal, add_commands, answer
from .serve import register as register_serve
from .service import register as register_service
from .terminal import escape, indented, log_warnings, plain

if TYPE_CHECKING:  # the engine loads with the commands that use it: a query the service answers skips it
    from ..engine import Engine
    from ..operations import IndexProgress

app = typer.Typer(
    help="SenseTree: semantic search over your own folders, on your own machine.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
config_app = typer.Typer(help="Read and change settings (settings.toml in the data dir).", no_args_is_help=True)
models_app = typer.Typer(help="Models: what is installed, what can be pulled or prepared.", no_args_is_help=True)
app.add_typer(config_app, name="config")
app.add_typer(models_app, name="models")

console = Console()
errors = Console(stderr=True)

DataDir = typer.Option(
    None, "--data-dir", help="Where the index lives (default: user data folder; SENSETREE_HOME overrides)."
)
JsonOut = typer.Option(False, "--json", help="Print machine-readable JSON.")


def _engine(data_dir: Optional[Path]) -> Engine:
    """The engine of a command, after telling what it found on opening (a repair, a bad settings file)."""
    return open_engine(data_dir, lambda notice: errors.print(f"[yellow]{escape(notice)}[/]"))


def _print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


def _fail(message: str, code: int = 1) -> NoReturn:
    errors.print(f"[red]error:[/] {escape(message)}")
    raise typer.Exit(code)


def _run(name: str, values: dict[str, Any], data_dir: Optional[Path]) -> Any:
    """The result of the operation ``name`` for what was typed (``operations_cli.answer``: a running server
    answers when there is one); its refusal ends the command."""
    op = OPERATIONS[name]
    try:
        return answer(op, op.parse(values, typed=True), data_dir, _engine)
    except SenseTreeError as exc:
        _fail(str(exc))


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


# roots ------------------------------------------------------------------------------
@app.command()
def add(
    folders: list[Path] = typer.Argument(..., help="Folders to index in place."), data_dir: Optional[Path] = DataDir
):
    """Register folders as roots (nothing is copied; run `sensetree index` next)."""
    for folder in folders:
        added = _run("add", {"path": str(folder)}, data_dir)
        console.print(f"added root [bold]{escape(added.root)}[/]")


def _set_block(folder: Path, mode: str, outcome: str, data_dir: Optional[Path]) -> None:
    done = _run("folder-mode", {"path": str(folder), "mode": mode}, data_dir)
    console.print(f"{escape(done.path)} {outcome}; run `sensetree index`")


@app.command()
def block(folder: Path, data_dir: Optional[Path] = DataDir):
    """Index a folder as one unit (its contents stop being searchable one by one)."""
    _set_block(folder, "block", "will be indexed as one unit", data_dir)


@app.command()
def unblock(folder: Path, data_dir: Optional[Path] = DataDir):
    """Index a folder's contents file by file, even if it looks like a block."""
    _set_block(folder, "recursive", "will be indexed file by file", data_dir)


# indexing ---------------------------------------------------------------------------
def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "ETA measuring…"
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"ETA {hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"ETA {rest // 60}:{rest % 60:02d}"


def phase_lines(files: int, keyword: int, semantic: int, eta: float | None, rate: float) -> tuple[str, str]:
    """The two progress figures, as `sensetree status` and `sensetree index` print them."""
    keyword_line = f"keyword-ready {keyword:,} / {files:,}"
    semantic_line = f"semantic {semantic:,} / {files:,}"
    if semantic < files:
        semantic_line += f" · {rate:.1f} chunks/s · {_duration(eta)}" if rate else ""
    return keyword_line, semantic_line


class _PhaseFigures(ProgressColumn):
    def render(self, task: Task) -> Text:
        return Text(task.fields.get("figures", ""), style="cyan")


@app.command()
def index(
    watch: bool = typer.Option(False, "--watch", help="Keep running and index changes as they happen."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
    ray: Optional[str] = typer.Option(
        None,
        "--ray",
        is_flag=False,
        flag_value="auto",
        metavar="[ADDRESS]",
        help="Extract, OCR, chunk and embed on a Ray cluster's workers; this "
        "process commits. auto (the default), an address, or local.",
    ),
    yes: bool = typer.Option(
        False,
        "--yes",
        "-y",
        help="Go ahead when settings.toml names another embedding model than the index was made with, "
        "which wipes the index, without asking: for scripts.",
    ),
    json_out: bool = JsonOut,
    data_dir: Optional[Path] = DataDir,
):
    """Index every root: keyword first (every file findable by its words), then meaning (vectors).

    Exits when done unless --watch; Ctrl+C or SIGTERM stops within a couple of seconds, keeping
    everything finished so far. Settings that would wipe the index (another embedding model) are asked
    about on a terminal; without one, `index` refuses and `--watch` keeps the index and its model.
    """
    from ..answers import Indexed
    from ..handlers.indexing import IndexingPaused
    from ..operations import IndexParams

    log_warnings()
    with _engine(data_dir) as engine:
        if not engine.roots():
            _fail("no roots yet: add a folder with `sensetree add FOLDER`")
        if ray is not None:
            try:
                engine.distribute(ray)
            except SenseTreeError as exc:
                _fail(str(exc))
        stop = threading.Event()
        show = not quiet and not json_out and console.is_terminal
        bar = Progress(
            TextColumn("[bold]{task.description:<13}"),
            BarColumn(),
            _PhaseFigures(),
            TextColumn("{task.fields[current]}", style="dim"),
            console=errors,
            disable=not show,
            transient=False,
        )
        keyword_task = bar.add_task("keyword-ready", total=None, figures="", current="")
        semantic_task = bar.add_task("semantic", total=None, figures="", current="")

        def update(p: IndexProgress | Indexed) -> None:
            if isinstance(p, Indexed):  # a round of --watch ended
                report(p)
                return
            keyword_line, semantic_line = phase_lines(p.files, p.keyword, p.semantic, p.semantic_eta, p.embed_rate)
            current = escape(Path(p.current).name) if p.current else ""
            bar.update(
                keyword_task,
                total=p.files,
                completed=p.keyword,
                figures=keyword_line.split(" ", 1)[1],
                current=current[:50] if p.phase == "keyword" else "",
            )
            bar.update(
                semantic_task,
                total=p.files,
                completed=p.semantic,
                figures=semantic_line.split(" ", 1)[1],
                current=(f"paused: {p.paused}" if p.paused else current if p.phase == "semantic" else "")[:60],
            )

        def report(done: Indexed) -> None:
            if json_out:
                _print_json(done.as_dict())
            elif not quiet:
                keyword_line, semantic_line = phase_lines(done.files, done.keyword_ready, done.semantic, None, 0.0)
                errors.print(
                    f"{keyword_line} · {semantic_line} ({done.chunks_embedded} chunks embedded, "
                    f"{done.failed} failed)" + (" — see `sensetree queue`" if done.failed else "")
                )
                if done.stopped and done.semantic < done.files:
                    errors.print("stopped; what was not finished stays queued and resumes next time")

        op = OPERATIONS["index"]
        try:
            yes = yes or _confirmed(engine, watch)
            with stopped_by_signals(stop), bar:
                if watch:
                    errors.print("watching for changes; Ctrl+C to stop")
                    op.run(engine, IndexParams(watch=True, confirm=yes), on_progress=update, stop=stop)
                else:
                    report(op.run(engine, IndexParams(confirm=yes), on_progress=update, stop=stop))
            for notice in engine.notices.take():  # repairs made on the way
                errors.print(f"[yellow]{escape(notice)}[/]")
        except KeyboardInterrupt:
            stop.set()
            errors.print("stopped; what was not finished stays queued and resumes next time")
        except IndexingPaused as exc:
            _fail(str(exc), 3)
        except SenseTreeError as exc:
            _fail(str(exc), DISK_REFUSED if isinstance(exc, DataDirReadOnly) else 1)


def _confirmed(engine: Engine, watch: bool) -> bool:
    """On a terminal, settings that would wipe the index are asked about before indexing: True when the
    answer is yes. Without a terminal nothing is asked: ``index`` refuses, ``--watch`` keeps the index and
    its model (as it does when told no, or when the settings are defaults standing in for an unreadable file)."""
    from ..config import NeedsConfirmation, SettingsError

    try:
        engine.refuse_unconfirmed_change(confirm=False)
    except NeedsConfirmation as exc:
        if not (sys.stdin.isatty() and sys.stderr.isatty()):
            return False
        errors.print(f"[yellow]{escape(str(exc).split('. Nothing was changed')[0])}.[/]")
        if typer.confirm("Go on?", default=False, err=True):
            return True
        if not watch:
            _fail("nothing was changed")
    except SettingsError:
        if not watch:
            raise
    return False


def _print_status(status: Status) -> None:
    info = status.as_dict()
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_row("data dir", escape(info["data_dir"]))
    offline = info["offline_roots"]
    roots = [
        root
        + (
            f"  (offline since {time.strftime('%Y-%m-%d %H:%M', time.localtime(offline[root]))}: "
            "kept, out of results until it is back)"
            if root in offline
            else ""
        )
        for root in info["roots"]
    ]
    table.add_row("roots", indented("\n".join(roots), indent="") or "none (sensetree add FOLDER)")
    phases = info["phases"]
    keyword_line, semantic_line = phase_lines(
        phases["files"], phases["keyword_ready"], phases["semantic"], phases["semantic_eta_s"], phases["embed_rate"]
    )
    table.add_row("progress", f"{keyword_line} · {semantic_line}")
    if phases.get("meaning"):
        table.add_row("meaning", escape(phases["meaning"]))
    if info["pace"]:
        table.add_row("pace", escape(info["pace"]["reason"]))
    table.add_row("files", " · ".join(f"{k}: {v}" for k, v in info["counts"].items()))
    table.add_row("chunks", str(info["chunks"]))
    table.add_row("embedding", escape(info["embedding_model"]))
    table.add_row("sense", escape(info["sense_model"]))
    table.add_row("reranker", escape(info["reranker"]))
    table.add_row(
        "devices",
        indented("\n".join(f"{d['role']}: {d['device']} · {d['reason']}" for d in info["devices"]), indent=""),
    )
    table.add_row("index size", _size(info["index_bytes"]))
    if info["unconfirmed_change"]:
        table.add_row("[yellow]held[/]", f"[yellow]{escape(info['unconfirmed_change'])}[/]")
    console.print(table)


def _print_queue(queue: Queue) -> None:
    info = queue.as_dict()
    for row in info["failed"]:
        console.print(f"[red]failed[/]  {escape(row['path'])}\n{indented(row['error'] or '')}")
    for row in info["pending"]:
        console.print(
            f"[yellow]pending[/] {escape(row['path'])}" + (f"  ({escape(row['error'])})" if row["error"] else "")
        )
    for row in info["noted"]:
        why = "; ".join(part for part in (row["error"], row["notes"]) if part)
        console.print(f"[dim]noted[/]   {escape(row['path'])}\n{indented(why)}")
    if info["keyword_count"]:
        console.print(f"[cyan]{info['keyword_count']} keyword-ready[/] (findable by keyword, waiting for vectors)")
    console.print(
        f"{len(info['failed'])} failed, {info['pending_count']} pending, {info['keyword_count']} keyword-ready"
    )


def _pin_first(values: dict[str, Any], own: dict[str, Any], data_dir: Optional[Path]) -> bool:
    """``sense PATH --set TEXT``: pin the sense, then show it as ``sense PATH`` does."""
    if own["set_to"] is not None and values.get("path") is not None:
        op = OPERATIONS["pin"]  # a refusal ends the command: its runner says why
        answer(op, op.parse({"path": values["path"], "sense": own["set_to"]}, typed=True), data_dir, _engine)
        errors.print("pinned; run `sensetree index` to re-index the file with it")
    return False


SENSE = Terminal(
    options=(
        inspect.Parameter(
            "set_to",
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Optional[str],
            default=typer.Option(None, "--set", help="Correct the sense by hand (pinned)."),
        ),
    ),
    render=lambda shown, own: console.print(
        escape(shown.sense or "no sense yet (not indexed)") + (" [dim](pinned)[/]" if shown.pinned else "")
    ),
    instead=_pin_first,
)


def _print_roots(roots: Roots) -> None:
    for root in roots.roots:
        console.print(escape(root))
    if not roots.roots:
        console.print("none (sensetree add FOLDER)")


# settings ---------------------------------------------------------------------------
@config_app.command("get")
def config_get(key: Optional[str] = typer.Argument(None), json_out: bool = JsonOut, data_dir: Optional[Path] = DataDir):
    """Show one setting, or all of them."""
    view = _run("settings", {}, data_dir)
    values = view.values()
    if key is not None and key not in values:
        _fail(f"unknown setting {key!r}; known: {', '.join(sorted(values))}")
    if json_out:
        _print_json(values[key] if key else values)
    elif key:
        console.print(escape(str(values[key])))
    else:
        for setting in view.settings:
            console.print(
                f"{setting['key']} = {escape(json.dumps(setting['value']))}  [dim]# {escape(setting['help'])}[/]"
            )


@config_app.command("set")
def config_set(
    key: str,
    value: str,
    yes: bool = typer.Option(
        False,
        "--yes",
        "-y",
        help="Go ahead with a change that wipes the index (a new embedding model) without asking: for scripts.",
    ),
    data_dir: Optional[Path] = DataDir,
):
    """Change one setting (written to settings.toml). A change that wipes the index says so and asks first."""
    from ..config import NeedsConfirmation

    op = OPERATIONS["set"]
    try:
        changed = answer(op, op.parse({"key": key, "value": value, "confirm": yes}, typed=True), data_dir, _engine)
    except NeedsConfirmation as exc:
        asked = sys.stdin.isatty() and sys.stderr.isatty()
        if not asked:
            _fail(str(exc))
        errors.print(f"[yellow]{escape(str(exc).split('. Nothing was changed')[0])}.[/]")
        if not typer.confirm("Go on?", default=False, err=True):
            _fail("nothing was changed")
        changed = _run("set", {"key": key, "value": value, "confirm": True}, data_dir)
    except SenseTreeError as exc:
        _fail(str(exc))
    console.print(f"{changed.key} = {escape(json.dumps(changed.value))}")
    if changed.notice:
        errors.print(f"[yellow]{escape(changed.notice)}[/]")


# search -----------------------------------------------------------------------------
def _highlight(snippet: str, terms: list[str]) -> Text:
    """The snippet with the query's words marked (``SearchResponse.terms``: chosen once, in store/terms.py)."""
    text = plain(snippet)
    if terms:
        text.highlight_regex(re.compile("|".join(re.escape(w) for w in terms), re.IGNORECASE), "bold yellow")
    return text


def _print_understood(understood: dict | None) -> None:
    """One line: the filters read from the query's words, and what was searched."""
    if understood:
        said = " · ".join(understood["said"])
        errors.print(
            f"[cyan]understood:[/] {escape(said)} [dim]→ searching {escape(understood['query'])!r}"
            " (--literal: every word a search word)[/]"
        )


def _print_results(response: SearchResponse, explain: bool) -> None:
    _print_understood(response.understood)
    for notice in response.notices:
        errors.print(f"[yellow]{escape(for_surface(notice, 'cli'))}[/]")
    if explain and response.coverage:
        errors.print(
            f"[dim]still indexing: {escape(response.coverage.meaning)}; a file without a vector yet is judged by "
            "its keywords, and the first keyword hits are embedded for the query[/]"
        )
    if not response.results:
        console.print("no results")
    if explain and response.fusion:
        console.print(
            "[dim]fusion: " + escape(" · ".join(f"{k} {v}" for k, v in response.fusion.items() if v != "")) + "[/]"
        )
    for rank, r in enumerate(response.results, start=1):
        where = f" [cyan]{escape(r.location_label)}[/]" if r.location_label else ""
        console.print(
            f"[bold]{rank:>2}. {r.score * 100:3.0f}%[/] [bold blue]{escape(r.name)}[/]{where}  [dim]{escape(r.path)}[/]"
        )
        console.print(Text("    ") + _highlight(r.snippet, response.terms))
        if r.duplicates:
            others = len(r.duplicates)
            console.print(
                f"    [dim]also in {others} other place{'s' if others > 1 else ''}: "
                f"{escape(', '.join(r.duplicates[:3]))}{' …' if others > 3 else ''}[/]"
            )
        if explain:
            rerank = "—" if r.rerank is None else f"{r.rerank:.3f}"
            console.print(
                f"    [dim]legs: {'+'.join(r.legs) or '—'} · dense rank {r.dense_rank or '—'} · "
                f"bm25 rank {r.bm25_rank or '—'} · fused {r.fused:.4f} · rerank {rerank} · chunk {r.chunk_index}[/]"
            )
            if r.signals:
                cosine = "no vector yet" if r.signals["cosine"] is None else f"{r.signals['cosine']:.3f}"
                found = {"stored": " (its stored vector)", "on demand": " (embedded for this query)"}.get(
                    r.signals["meaning"], ""
                )
                console.print(
                    f"    [dim]carried by {escape(r.signals['carried_by'])} · cosine {cosine}{found} · "
                    f"bm25 {r.signals['bm25'] or 0:.3f}[/]"
                )


def _batch(path: Path, scope: Optional[str], limit: int) -> list[tuple[str, Optional[str], int]]:
    """The lines of a ``--queries`` file as (query, scope, limit); a bad line stops with its number."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        _fail(f"cannot read {path}: {exc}")
    batch = []
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            item = None
        if isinstance(item, (str, int, float)) and not isinstance(item, bool):
            item = {"query": str(item)}
        if not isinstance(item, dict):
            item = {}
        text, item_scope, item_limit = item.get("query"), item.get("scope", scope), item.get("limit", limit)
        if (
            not isinstance(text, str)
            or not isinstance(item_scope, (str, type(None)))
            or not isinstance(item_limit, int)
            or isinstance(item_limit, bool)
        ):
            _fail(
                f'{path}:{line_no}: expected a JSON object with a "query" string, '
                'and optionally a "scope" string and a "limit" number'
            )
        # JSON may hold a lone surrogate ("\ud800"), which is not text: it could be neither searched nor printed
        batch.append((without_surrogates(text), item_scope and without_surrogates(item_scope), item_limit))
    return batch


def _search_batch(values: dict[str, Any], own: dict[str, Any], data_dir: Optional[Path]) -> bool:
    """``search --queries FILE``: many queries, the models loaded once; the options apply to each line
    that does not say otherwise."""
    if (own["queries"] is None) == (values.get("query") is None):
        if own["queries"] is None:
            _fail("give a QUERY or --queries FILE")
        _fail("give a QUERY or --queries FILE, not both")
    if own["queries"] is None:
        return False
    op = OPERATIONS["search"]
    answers = []
    with _engine(data_dir) as engine:
        for text, scope, limit in _batch(own["queries"], values.get("scope"), values["limit"]):
            try:  # a line the search refuses (a limit of 0) is answered with why; the others go on
                answer = op.run(
                    engine,
                    op.parse({**values, "query": text, "scope": scope, "limit": limit}, typed=True),
                    bounded=False,
                )
            except BadInput as exc:
                answer = SearchResponse(text, notices=[str(exc)])
            answers.append({**answer.as_dict(), "query": text})
    if own["json"]:
        _print_json(answers)
        return True
    for answer in answers:
        console.rule(escape(answer["query"]))
        for x in answer["results"]:
            console.print(f"{x['score'] * 100:3.0f}% {escape(x['path'])}")
    return True


SEARCH = Terminal(
    options=(
        inspect.Parameter(
            "explain",
            inspect.Parameter.KEYWORD_ONLY,
            annotation=bool,
            default=typer.Option(False, "--explain", help="Show which legs found each result and its ranks."),
        ),
        inspect.Parameter(
            "queries",
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Optional[Path],
            default=typer.Option(None, "--queries", help='JSONL file of {"query", "scope"?, "limit"?}.'),
        ),
    ),
    render=lambda response, own: _print_results(response, own["explain"]),
    instead=_search_batch,
)


def _print_similar(response: SimilarResponse) -> None:
    """Versions and copies of the file first, then the files like it."""
    if response.versions:
        console.print("[bold]versions of this file[/] (most of the wording shared), newest first:")
        for v in response.versions:
            day = time.strftime("%Y-%m-%d", time.localtime(v.mtime)) if v.mtime else "—"
            console.print(
                f"  {v.shared * 100:3.0f}% shared · {day}  [bold blue]{escape(v.name)}[/]  [dim]{escape(v.path)}[/]"
            )
    if response.copies:
        console.print(f"[bold]identical copies[/]: [dim]{escape(', '.join(response.copies))}[/]")
    if response.versions or response.copies:
        console.print("[bold]files like it[/]:")
    _print_results(response, explain=False)  # no words to mark: a similar answer has no terms


def _print_tree(node: TreeNode, depth: int = 0, max_depth: int = 6) -> None:
    bar = "█" * round(node.score * 10) + "░" * (10 - round(node.score * 10))
    label = escape(node.name or "(all roots)") + ("/" if node.is_dir and node.name else "")
    console.print(
        f"{'  ' * depth}[green]{bar}[/] {node.score * 100:3.0f}% " + (f"[bold]{label}[/]" if node.is_dir else label)
    )
    if depth < max_depth:
        for child in node.children:
            _print_tree(child, depth + 1, max_depth)


def _print_listing(listing) -> None:
    """A folder's entries, folders first, each with its index status."""
    for entry in listing.entries:
        status = entry.status or ""
        why = f"  ({entry.error})" if entry.error else ""
        console.print(f"{escape(entry.name)}{'/' if entry.is_dir else ''}  [dim]{escape(status + why)}[/]")
    if listing.more:
        console.print(f"[dim]… and {listing.more} more[/]")
    if not listing.entries:
        console.print("no roots yet (sensetree add FOLDER)" if listing.path is None else "(empty)")


def _print_read(read: FileContents) -> None:
    """A file's text as a model reads it, then what was left out."""
    sys.stdout.write(printable(read.text, lines=True).rstrip("\n") + "\n")  # never a file's escape sequences
    if read.note:
        errors.print(f"[dim]{escape(read.note)}[/]")


def _write_png(image: PageImage) -> None:
    """A page as a PNG on stdout, for a file or another program (``--json``: in base64)."""
    if sys.stdout.isatty():
        _fail("the page is a PNG: send it to a file (sensetree page FILE.pdf --page 2 > page.png) or use --json")
    sys.stdout.buffer.write(image.data)
    sys.stdout.flush()


def _files(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


def _print_tree_response(response: TreeResponse) -> None:
    _print_understood(response.understood)
    for notice in response.notices:
        errors.print(f"[yellow]{escape(notice)}[/]")
    if response.tree is None:
        console.print("nothing found")
    else:
        _print_tree(response.tree)


# models -----------------------------------------------------------------------------
@models_app.command("list")
def models_list(json_out: bool = JsonOut, data_dir: Optional[Path] = DataDir):
    """Embedding models bundled with the install, and the rerankers known to the registry."""
    info = _run("models", {}, data_dir).as_dict()
    rerankers = info["rerankers"]
    if json_out:
        _print_json(info)
        return
    for m in info["embedding"]:
        console.print(f"embedding  {'*' if m['in_use'] else ' '} {escape(m['name'])}  [dim]{escape(m['about'])}[/]")
    for r in rerankers:
        state = f"installed at {r['where']}" if r["installed"] else "not installed (sensetree models pull NAME)"
        console.print(f"reranker   {escape(r['name'])}  [dim]{r['size']}, {escape(r['licence'])}, {escape(state)}[/]")


@models_app.command("pull")
def models_pull(name: str, data_dir: Optional[Path] = DataDir):
    """Download a reranker into the data dir's models folder (needs the internet)."""
    from ..operations import PullParams

    with _engine(data_dir) as engine:
        bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeRemainingColumn(),
            console=errors,
        )
        tasks: dict[str, Any] = {}

        def progress(got: Download) -> None:
            if got.file not in tasks:
                tasks[got.file] = bar.add_task(got.file, total=got.total or None)
            bar.update(tasks[got.file], completed=got.done, total=got.total or None)

        try:
            with bar:
                pulled = OPERATIONS["pull"].run(engine, PullParams(name), on_progress=progress)
        except SenseTreeError as exc:
            _fail(str(exc))
    console.print(f"{name} is ready in {escape(pulled.folder)}")


# eval --------------------------------------------------------------------------------
@app.command("eval")
def eval_command(
    dataset: Path = typer.Argument(..., help="A folder in BEIR layout."),
    mode: str = typer.Option("all", "--mode", help="dense, bm25, hybrid, hybrid+rerank or all."),
    split: str = typer.Option("test", "--split"),
    max_queries: Optional[int] = typer.Option(None, "--max-queries"),
    ignore_identical_ids: bool = typer.Option(
        False, "--ignore-identical-ids", help="Drop results whose id equals the query id."
    ),
    model: Optional[str] = typer.Option(None, "--model", help="Embedding model (default: embedding.model)."),
    json_out: bool = JsonOut,
    data_dir: Optional[Path] = DataDir,
):
    """Measure retrieval quality on a BEIR dataset: nDCG@10, Recall@10/100, MRR@10, latency."""
    from ..eval.runner import MODES, EvalError, run_eval

    modes = list(MODES) if mode == "all" else [mode]
    if any(m not in MODES for m in modes):
        _fail(f"unknown mode {mode!r}; choose from {', '.join(MODES)} or all")
    with _engine(data_dir) as engine:
        try:
            report = run_eval(
                engine,
                dataset,
                modes,
                split=split,
                max_queries=max_queries,
                ignore_identical_ids=ignore_identical_ids,
                model=model,
                log=(lambda m: None) if json_out else (lambda m: errors.print(f"[dim]{escape(m)}[/]")),
            )
        except EvalError as exc:
            _fail(str(exc))
    if json_out:
        _print_json(report)
        return
    table = Table(
        title=f"{report['dataset']} · {report['documents']} docs · {report['queries']} queries · {report['model']}"
    )
    for column in ("mode", "nDCG@10", "Recall@10", "Recall@100", "MRR@10", "p50 ms", "p95 ms"):
        table.add_column(column, justify="right" if column != "mode" else "left")
    for m in modes:
        r = report[m]
        if "skipped" in r:
            table.add_row(m, *["—"] * 6)
            continue
        table.add_row(
            m,
            *(f"{r[k]:.4f}" for k in ("ndcg@10", "recall@10", "recall@100", "mrr@10")),
            f"{r['p50_ms']:.1f}",
            f"{r['p95_ms']:.1f}",
        )
    console.print(table)
    for m in modes:
        if "skipped" in report[m]:
            errors.print(f"[yellow]{m}: {escape(report[m]['skipped'])}[/]")


add_commands(
    app,
    _engine,
    {  # the engine's operations (operations.py), declared there once
        "status": Terminal(render=lambda status, own: _print_status(status)),
        "queue": Terminal(render=lambda queue, own: _print_queue(queue)),
        "roots": Terminal(render=lambda roots, own: _print_roots(roots)),
        "add": Terminal(command=False),  # takes several folders: the command above
        "remove": Terminal(
            render=lambda done, own: console.print(
                f"removed root {escape(own['path'])} ({done.removed} entries dropped from the index)"
            )
        ),
        "sense": SENSE,
        "pin": Terminal(command=False),  # `sense PATH --set TEXT`
        "settings": Terminal(command=False),
        "set": Terminal(command=False),  # `config get`, `config set`
        "folder-mode": Terminal(command=False),  # `block`, `unblock`
        "models": Terminal(command=False),  # `models list`
        "endpoint-test": Terminal(command=False),  # the settings page's; a key is not typed on a command line
        "index": Terminal(command=False),  # its progress bar, --ray, --quiet: the command above
        "doctor": Terminal(command=False),  # runs without opening the stores: interfaces/doctor.py
        "pull": Terminal(command=False),  # `models pull`, with a bar per file
        "read": Terminal(render=lambda read, own: _print_read(read)),
        "page": Terminal(render=lambda image, own: _write_png(image)),
        "open": Terminal(
            render=lambda done, own: console.print(
                f"opened {escape(done.opened)}" + (f" at page {done.page}" if done.page else "")
            )
        ),
        "search": SEARCH,
        "similar": Terminal(render=lambda response, own: _print_similar(response)),
        "tree": Terminal(render=lambda response, own: _print_tree_response(response)),
        "summarise": Terminal(render=lambda summary, own: print_summary(summary.as_dict())),
        "compare": Terminal(render=lambda summary, own: print_summary(summary.as_dict())),
        "browse": Terminal(render=lambda listing, own: _print_listing(listing)),
        "retry": Terminal(render=lambda done, own: console.print(f"requeued {_files(done.requeued, 'failed file')}")),
        "reindex": Terminal(
            render=lambda done, own: console.print(
                f"requeued {_files(done.requeued, 'file')}; `sensetree index` reads them again"
            )
        ),
        "ignore": Terminal(
            render=lambda done, own: console.print(
                f"left {_files(done.ignored, 'path')} out of the index (`sensetree unignore PATH` takes one back)"
            )
        ),
        "unignore": Terminal(
            render=lambda done, own: console.print(
                f"{escape(done.path)} is indexed again from the next `sensetree index`"
            )
        ),
    },
    _print_json,
    _fail,
    DataDir,
    JsonOut,
)
register_chat(app)
register_mcp(app)
register_serve(app)
register_service(app)
register_doctor(app, models_app)


M_ARENA_MAX = -8  # mallopt's parameter number, from glibc's malloc.h


def fewer_malloc_arenas(arenas: int = 2) -> bool:
    """Cap glibc's malloc arenas, before the threads that would each get one start.

    By default glibc gives up to 8 per core to threads (search legs, extraction workers, the
    web server's pool, the models' own), and memory freed in one arena is not reused by the
    others: a server that indexed and searched for 150 rounds grew +198 MB this way, +64 MB
    with 2 arenas, at the same search latency (bench/memory_rounds.py). MALLOC_ARENA_MAX, if
    set, wins. Elsewhere than glibc this does nothing. True when the cap was set here.
    """
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        return ctypes.CDLL("libc.so.6").mallopt(M_ARENA_MAX, arenas) == 1
    except (OSError, AttributeError):  # musl and others have no mallopt or no such library name
        return False


def main() -> None:
    fewer_malloc_arenas()
    try:
        app()
        code: int | str | None = 0
    except SystemExit as exc:
        code = exc.code
    except SenseTreeError as exc:
        errors.print(f"[red]error:[/] {escape(str(exc))}")
        code = DISK_REFUSED if isinstance(exc, DataDirReadOnly) else 1
    except Exception as exc:  # a full or read-only disk, or a bug: one line, never a traceback
        code = report_error(exc, lambda line: errors.print(f"[red]error:[/] {escape(line)}"))
    end_process(code)


if __name__ == "__main__":
    main()
