"""``sensetree service install | uninstall | status``: watching, indexing and the web app at login.

The service is ``sensetree serve --no-browser`` on the user's data dir, run by the system's own
manager for the user's own services, at low priority so that it never competes with what the user
is doing: a systemd user unit on Linux (``Nice=``, idle I/O), a launchd agent on macOS
(``ProcessType=Background``, low-priority I/O), a scheduled task at logon on Windows (priority 7,
below normal). While it runs, ``search``, ``tree`` and ``ask`` are answered by it (``served``).

Each data dir has its own service: the platform's default data dir keeps the plain names
(``sensetree.service``, ``org.sensetree.serve``, ``SenseTree``); any other adds a short hash of its
resolved path (``sensetree-1a2b3c4d.service``), so installing or removing one never touches another's.
A data dir whose path holds a control character (a newline would start a directive of its own in a
unit) is refused before anything is written.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import plistlib
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import platformdirs
import typer

from ..config import default_data_dir, file_in_the_way, made_data_dir
from ..errors import BadInput
from . import served

NAME = "sensetree"
LABEL = "org.sensetree.serve"  # the launchd agent's label
TASK_NAME = "SenseTree"  # the Windows scheduled task's name
NICE = 10  # POSIX: lower than the user's programs (0), not starved (19)
WINDOWS_PRIORITY = 7  # Task Scheduler's BELOW_NORMAL
TASK_NS = "http://schemas.microsoft.com/windows/2004/02/mit/task"
DESCRIPTION = "SenseTree: watch, index and search your folders (web app on 127.0.0.1)"

Runner = Callable[[list[str]], subprocess.CompletedProcess]


@dataclass(frozen=True)
class Definition:
    """A service definition for one system: the file it is, where it goes, how the manager takes it."""

    system: str  # linux, darwin, win32
    path: Path  # where the definition is written
    content: bytes
    start: list[list[str]]  # commands that register and start it
    stop: list[list[str]]  # commands that stop and unregister it
    query: list[str]  # a command whose success means the manager knows it


def suffix(data_dir: Path) -> str:
    """ "" for the platform's default data dir (today's names), else "-" and 8 hex digits of the resolved path."""
    resolved = Path(data_dir).expanduser().resolve()
    default = Path(platformdirs.user_data_dir("sensetree", appauthor=False)).expanduser().resolve()
    if resolved == default:
        return ""
    return "-" + hashlib.sha256(os.fsencode(resolved)).hexdigest()[:8]


def check_path(data_dir: Path) -> None:
    """Refuse a data dir whose path holds a control character: no service manager's file can carry it safely."""
    text = str(data_dir)
    odd = sorted({c for c in text if ord(c) < 32 or 0x7F <= ord(c) < 0xA0})
    if odd:
        raise BadInput(
            f"the data dir {text!r} holds control characters ({', '.join(repr(c) for c in odd)}); "
            "a service cannot be defined for it: choose a folder whose name has none"
        )


def serve_command(data_dir: Path, port: int, system: str = sys.platform) -> list[str]:
    """The command the service runs: this Python (its virtualenv, pipx or uv tool), ``serve`` on ``data_dir``."""
    python = Path(sys.executable)
    if system == "win32" and python.with_name("pythonw.exe").exists():
        python = python.with_name("pythonw.exe")  # no console window at logon
    return [
        str(python),
        "-m",
        "sensetree.interfaces.cli",
        "serve",
        "--no-browser",
        "--port",
        str(port),
        "--data-dir",
        str(data_dir),
    ]


def systemd_unit(command: list[str]) -> str:
    """A systemd user unit (``~/.config/systemd/user/sensetree.service``)."""
    return "\n".join(
        [
            "[Unit]",
            f"Description={DESCRIPTION}",
            "After=default.target",
            "",
            "[Service]",
            "Type=exec",
            "ExecStart=" + " ".join(_systemd_quote(part) for part in command),
            "Restart=on-failure",
            "RestartSec=30",
            f"Nice={NICE}",
            "IOSchedulingClass=idle",
            "CPUSchedulingPolicy=batch",
            "KillSignal=SIGTERM",
            "TimeoutStopSec=30",
            "",
            "[Install]",
            "WantedBy=default.target",
            "",
        ]
    )


def _systemd_quote(part: str) -> str:
    """One word of ``ExecStart=``: specifiers (``%``) and variables (``$``) doubled, quoted when it has spaces."""
    word = part.replace("%", "%%").replace("$", "$$")
    if any(c in word for c in " \t\"'\\;") or not word:
        word = '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return word


def launchd_plist(command: list[str], log: Path, label: str = LABEL) -> bytes:
    """A launchd agent (``~/Library/LaunchAgents/org.sensetree.serve.plist``)."""
    return plistlib.dumps(
        {
            "Label": label,
            "ProgramArguments": command,
            "RunAtLoad": True,
            "KeepAlive": {"SuccessfulExit": False},  # restarted after a crash, not after a clean stop
            "ProcessType": "Background",
            "LowPriorityIO": True,
            "Nice": NICE,
            "ThrottleInterval": 30,
            "StandardOutPath": str(log),
            "StandardErrorPath": str(log),
        }
    )


def task_xml(command: list[str], user: str, name: str = TASK_NAME) -> str:
    """A Task Scheduler task that starts at the user's logon, in the user's session, below normal priority."""
    ET.register_namespace("", TASK_NS)

    def sub(parent: ET.Element, tag: str, text: str | None = None) -> ET.Element:
        element = ET.SubElement(parent, f"{{{TASK_NS}}}{tag}")
        element.text = text
        return element

    task = ET.Element(f"{{{TASK_NS}}}Task", version="1.2")
    info = sub(task, "RegistrationInfo")
    sub(info, "Description", DESCRIPTION)
    sub(info, "URI", f"\\{name}")
    trigger = sub(sub(task, "Triggers"), "LogonTrigger")
    sub(trigger, "Enabled", "true")
    sub(trigger, "UserId", user)
    principal = sub(sub(task, "Principals"), "Principal", None)
    principal.set("id", "Author")
    sub(principal, "UserId", user)
    sub(principal, "LogonType", "InteractiveToken")
    sub(principal, "RunLevel", "LeastPrivilege")
    settings = sub(task, "Settings")
    for tag, text in (
        ("MultipleInstancesPolicy", "IgnoreNew"),
        ("DisallowStartIfOnBatteries", "false"),
        ("StopIfGoingOnBatteries", "false"),
        ("AllowHardTerminate", "true"),
        ("StartWhenAvailable", "true"),
        ("RunOnlyIfNetworkAvailable", "false"),
        ("AllowStartOnDemand", "true"),
        ("Enabled", "true"),
        ("Hidden", "false"),
        ("RunOnlyIfIdle", "false"),
        ("ExecutionTimeLimit", "PT0S"),
        ("Priority", str(WINDOWS_PRIORITY)),
    ):
        sub(settings, tag, text)
    idle = sub(settings, "IdleSettings")
    sub(idle, "StopOnIdleEnd", "false")
    sub(idle, "RestartOnIdle", "false")
    restart = sub(settings, "RestartOnFailure")
    sub(restart, "Interval", "PT1M")
    sub(restart, "Count", "3")
    actions = sub(task, "Actions")
    actions.set("Context", "Author")
    run = sub(actions, "Exec")
    sub(run, "Command", command[0])
    sub(run, "Arguments", subprocess.list2cmdline(command[1:]))
    ET.indent(task)
    return '<?xml version="1.0" encoding="UTF-16"?>\n' + ET.tostring(task, encoding="unicode") + "\n"


def definition(
    data_dir: Path, port: int = 8765, system: str = sys.platform, home: Optional[Path] = None, legacy: bool = False
) -> Definition:
    """The service of ``data_dir`` for ``system`` (linux, darwin, win32), in ``home`` (default: the user's);
    ``legacy``: under the plain names every data dir had before each had its own."""
    check_path(data_dir)
    home = home or Path.home()
    command = serve_command(data_dir, port, system)
    own = "" if legacy else suffix(data_dir)
    if system == "darwin":
        label = f"{LABEL}{own.replace('-', '.')}"
        path = home / "Library" / "LaunchAgents" / f"{label}.plist"
        domain = f"gui/{_uid()}"
        return Definition(
            system,
            path,
            launchd_plist(command, home / "Library" / "Logs" / f"sensetree{own}.log", label),
            start=[["launchctl", "bootstrap", domain, str(path)]],
            stop=[["launchctl", "bootout", f"{domain}/{label}"]],
            query=["launchctl", "print", f"{domain}/{label}"],
        )
    if system == "win32":
        task = f"{TASK_NAME}{own}"
        path = data_dir / "sensetree-task.xml"
        user = f"{os.environ['USERDOMAIN']}\\{getpass.getuser()}" if "USERDOMAIN" in os.environ else getpass.getuser()
        return Definition(
            system,
            path,
            task_xml(command, user, task).encode("utf-16"),
            start=[["schtasks", "/Create", "/TN", task, "/XML", str(path), "/F"], ["schtasks", "/Run", "/TN", task]],
            stop=[["schtasks", "/End", "/TN", task], ["schtasks", "/Delete", "/TN", task, "/F"]],
            query=["schtasks", "/Query", "/TN", task],
        )
    config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    unit = f"{NAME}{own}.service"
    path = config / "systemd" / "user" / unit
    return Definition(
        system,
        path,
        systemd_unit(command).encode("utf-8"),
        start=[["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "enable", "--now", unit]],
        stop=[["systemctl", "--user", "disable", "--now", unit]],
        query=["systemctl", "--user", "is-enabled", unit],
    )


def _uid() -> int:
    if sys.platform == "win32":
        return 0
    return os.getuid()


def _run(command: list[str]) -> subprocess.CompletedProcess:
    """A manager command; a missing program is a failed command with its reason, not an exception."""
    if shutil.which(command[0]) is None:
        return subprocess.CompletedProcess(command, 127, "", f"{command[0]} is not available on this system")
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


@dataclass(frozen=True)
class Outcome:
    ok: bool
    lines: list[str]


def install(service: Definition, run: Runner = _run) -> Outcome:
    """Write the definition and have the manager start it; says what failed and what is left to do.
    ``BadInput`` when the definition cannot be written (a HOME that is a file, a folder not the user's)."""
    try:
        service.path.parent.mkdir(parents=True, exist_ok=True)
        service.path.write_bytes(service.content)
    except (FileExistsError, NotADirectoryError):
        raise BadInput(
            f"cannot write the service's definition {service.path}: {file_in_the_way(service.path)}"
        ) from None
    except OSError as exc:
        raise BadInput(f"cannot write the service's definition {service.path}: {exc.strerror or exc}") from None
    lines = [f"wrote {service.path}"]
    for command in service.start:
        done = run(command)
        if done.returncode != 0:
            reason = (done.stderr or done.stdout).strip().splitlines()
            lines.append(f"`{' '.join(command)}` failed: {reason[-1] if reason else f'exit status {done.returncode}'}")
            return Outcome(False, lines)
    lines.append("installed: SenseTree starts at login, and is starting now")
    return Outcome(True, lines)


def uninstall(service: Definition, run: Runner = _run) -> Outcome:
    """Stop the service and remove its definition (nothing else: the index stays)."""
    lines = []
    for command in service.stop:
        done = run(command)
        if done.returncode != 0 and service.path.exists():
            lines.append(f"`{' '.join(command)}`: {(done.stderr or done.stdout).strip() or done.returncode}")
    existed = service.path.exists()
    service.path.unlink(missing_ok=True)
    lines.append(f"removed {service.path}" if existed else "not installed")
    return Outcome(True, lines)


def state(service: Definition, data_dir: Path, run: Runner = _run) -> dict:
    """Installed (the file, and whether the manager knows it), running (a live server), and the link."""
    server = served.running(data_dir)
    return {
        "installed": service.path.exists(),
        "registered": run(service.query).returncode == 0,
        "definition": str(service.path),
        "running": server is not None,
        "pid": server.pid if server else None,
        "link": server.link if server else None,
    }


# --- the command ------------------------------------------------------------------------------------

service_app = typer.Typer(
    help="Run SenseTree in the background from login: watching, indexing, the web app.", no_args_is_help=True
)
DataDir = typer.Option(
    None, "--data-dir", help="Where the index lives (default: user data folder; SENSETREE_HOME overrides)."
)
Port = typer.Option(8765, "--port", help="The web app's port on 127.0.0.1.")


def _data_dir(data_dir: Optional[Path]) -> Path:
    folder = data_dir.expanduser() if data_dir else default_data_dir()
    try:
        check_path(folder)
    except BadInput as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    return folder.resolve()


@service_app.command("install")
def install_command(port: int = Port, data_dir: Optional[Path] = DataDir):
    """Start SenseTree at login, at low priority, as your own service; start it now."""
    folder = _data_dir(data_dir)
    try:
        made_data_dir(folder)
        outcome = install(definition(folder, port))
    except BadInput as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    for line in outcome.lines:
        typer.echo(line, err=not outcome.ok)
    if not outcome.ok:
        typer.echo(
            "the definition is written; start it with the command above once the system allows it, "
            "or run `sensetree serve` yourself",
            err=True,
        )
        raise typer.Exit(1)


def serves(service: Definition, data_dir: Path) -> bool:
    """Whether the definition written at ``service.path`` runs ``serve`` on ``data_dir``."""
    try:
        written = service.path.read_bytes()
    except OSError:
        return False
    if service.system == "darwin":
        try:
            arguments = plistlib.loads(written).get("ProgramArguments", [])
        except Exception:
            return False
        return arguments[-2:] == ["--data-dir", str(data_dir)]
    text = written.decode("utf-16" if service.system == "win32" else "utf-8", "replace")
    quoted = _systemd_quote(str(data_dir)) if service.system == "linux" else subprocess.list2cmdline([str(data_dir)])
    return any(
        line.rstrip().endswith(f"--data-dir {quoted}") or line.rstrip().endswith(f"--data-dir {quoted}</Arguments>")
        for line in text.splitlines()
    )


def _installed(folder: Path) -> Definition:
    """The data dir's service: under its own names, or under the plain ones where an older version put it."""
    own = definition(folder)
    if own.path.exists() or own == definition(folder, legacy=True):
        return own
    legacy = definition(folder, legacy=True)
    return legacy if serves(legacy, folder) else own


@service_app.command("uninstall")
def uninstall_command(data_dir: Optional[Path] = DataDir):
    """Stop the service and stop starting it at login (the index stays)."""
    for line in uninstall(_installed(_data_dir(data_dir))).lines:
        typer.echo(line)


@service_app.command("status")
def status_command(
    json_out: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
    data_dir: Optional[Path] = DataDir,
):
    """Whether the service is installed and running, and the web app's link."""
    folder = _data_dir(data_dir)
    facts = state(_installed(folder), folder)
    if json_out:
        import json

        typer.echo(json.dumps(facts, indent=2))
        return
    typer.echo(
        f"installed: {'yes' if facts['installed'] else 'no'} ({facts['definition']})"
        + ("" if facts["registered"] or not facts["installed"] else "; the system's manager does not know it")
    )
    typer.echo(f"running:   {'yes, process ' + str(facts['pid']) if facts['running'] else 'no'}")
    if facts["link"]:
        typer.echo(f"web app:   {facts['link']}")


def register(app: typer.Typer) -> None:
    app.add_typer(service_app, name="service")
