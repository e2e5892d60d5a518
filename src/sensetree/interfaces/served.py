"""Asking a running ``sensetree serve`` (the background service) instead of starting the engine again.

A command that answers a query in-process spends seconds loading the index and the models; the
service has them loaded. ``serve`` announces itself in the data dir (``server.json``: its process,
address and port; the token is ``server.token``, readable by its owner only), and the commands of
the engine's operations (``operations_cli.answer``: search, status, add, config set...) and ``ask``
call its HTTP API when it answers, printing the same output; a change is then made by the server,
which holds the writer lock. Anything else
(no server, a dead one, an error status, a flag the API lacks) falls back to the engine in-process,
which gives the same answer or the same error. ``SENSETREE_IN_PROCESS=1`` skips the service.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from ..config import default_data_dir
from ..errors import SenseTreeError
from ..system import process_alive

log = logging.getLogger(__name__)

SERVER_FILE = "server.json"
TOKEN_FILE = "server.token"  # written by the server (api.security)
CONNECT_SECONDS = 2.0
ANSWER_SECONDS = 600.0


@dataclass(frozen=True)
class Server:
    url: str
    token: str
    pid: int

    @property
    def link(self) -> str:
        """The web app's address, signed in."""
        return f"{self.url}/#token={self.token}"


def announce(data_dir: Path, host: str, port: int) -> Path | None:
    """Write ``server.json`` for this process; ``withdraw`` removes it. None where the data dir
    cannot be written (a read-only disk, a search node): the server runs, commands open the index."""
    path = data_dir / SERVER_FILE
    local = host if host not in ("0.0.0.0", "::", "") else "127.0.0.1"
    if ":" in local:
        local = f"[{local}]"
    temporary = path.with_name(f".{SERVER_FILE}.{os.getpid()}")
    try:
        temporary.write_text(json.dumps({"pid": os.getpid(), "url": f"http://{local}:{port}"}), encoding="utf-8")
        os.replace(temporary, path)
    except OSError as exc:
        log.info("not announced in %s (%s): commands open the index themselves", data_dir, exc)
        return None
    return path


def withdraw(path: Path | None) -> None:
    """Remove ``server.json`` when it is still this process's (a newer server may have replaced it)."""
    if path is None:
        return
    try:
        if json.loads(path.read_text(encoding="utf-8")).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError, AttributeError):
        pass


def running(data_dir: Path | str | None) -> Server | None:
    """The server announced in ``data_dir`` (default: the user's) when its process is alive; None otherwise."""
    if os.environ.get("SENSETREE_IN_PROCESS", "") not in ("", "0"):
        return None
    folder = Path(data_dir).expanduser() if data_dir else default_data_dir()
    try:
        facts = json.loads((folder / SERVER_FILE).read_text(encoding="utf-8"))
        token = (folder / TOKEN_FILE).read_text(encoding="utf-8").strip()
        server = Server(str(facts["url"]), token, int(facts["pid"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return server if token and process_alive(server.pid) else None


def get(server: Server, path: str, params: dict[str, Any]) -> dict | None:
    """``GET`` an API path; the JSON body, or None when the server does not answer it with 200."""
    return send(server, "GET", path, params)


def post(server: Server, path: str, body: dict[str, Any]) -> dict | None:
    """``POST`` a JSON body to an API path (a change the server makes, beside its own indexing); the
    JSON answer, or None when the server does not answer it with 200 (the command then makes the same
    change itself, or says the same error: the changes are idempotent)."""
    return send(server, "POST", path, body)


def send(server: Server, method: str, path: str, params: dict[str, Any]) -> dict | None:
    """An operation's request: ``params`` in the query string (GET, DELETE) or as a JSON body (POST, PUT)."""
    if method in ("GET", "DELETE"):
        return _answer(method, server, path, params={k: v for k, v in params.items() if v is not None})
    return _answer(method, server, path, json=params)


def _answer(method: str, server: Server, path: str, **request: Any) -> dict | None:
    import httpx

    try:
        response = httpx.request(
            method,
            server.url + path,
            headers=_auth(server),
            timeout=httpx.Timeout(ANSWER_SECONDS, connect=CONNECT_SECONDS),
            **request,
        )
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


class AskFailed(SenseTreeError):
    """The server took the question and said why it could not answer it."""


def ask(
    server: Server,
    question: str,
    scope: str | None,
    on_token: Callable[[str], None] | None = None,
    on_step: Callable[[dict], None] | None = None,
) -> dict | None:
    """The assistant's answer (``Answer.as_dict()``), streamed through ``on_token``/``on_step`` as it comes.

    None when the server could not be asked (nothing was streamed yet): the caller answers in-process.
    Raises ``AskFailed`` with the server's reason, or when the stream breaks after it began."""

    def heard(event: str, data: dict) -> None:
        if event == "token" and on_token:
            on_token(data["text"])
        elif event == "step" and on_step:
            on_step(data)

    return _follow(
        server,
        "/api/chat",
        {"question": question, "scope": scope},
        heard,
        "the server could not answer",
        "the server ended the answer without finishing it",
    )


def operate(
    server: Server, path: str, body: dict[str, Any], on_progress: Callable[[str], None] | None = None
) -> dict | None:
    """A long operation's result (a summary), its progress streamed through ``on_progress`` as it comes
    (``POST /api/<name>/stream``). None when the server could not be asked; ``AskFailed`` with the
    server's reason otherwise, a refusal of the request itself included (as the engine here would refuse it)."""

    def heard(event: str, data: dict) -> None:
        if event == "progress" and on_progress:
            on_progress(data["text"])

    return _follow(
        server,
        path,
        body,
        heard,
        "the server could not do it",
        "the server ended the stream without finishing",
        refusals=(400, 403, 404, 422),
    )


def _follow(
    server: Server,
    path: str,
    body: dict[str, Any],
    heard: Callable[[str, dict], None],
    failed: str,
    unfinished: str,
    refusals: tuple[int, ...] = (),
) -> dict | None:
    """The ``done`` event's data of a server-sent stream, every event before it handed to ``heard``. None
    when the server could not be asked (nothing was streamed yet, or a status other than ``refusals``);
    ``AskFailed`` for an ``error`` event, a refusal, or a stream that broke or ended after it began."""
    import httpx

    began = False
    try:
        with httpx.stream(
            "POST",
            server.url + path,
            json=body,
            headers=_auth(server),
            timeout=httpx.Timeout(ANSWER_SECONDS, connect=CONNECT_SECONDS),
        ) as response:
            if response.status_code != 200:
                if response.status_code in refusals:
                    raise AskFailed(_detail(response.read()))
                return None
            for event, data in _events(response.iter_lines()):
                began = True
                if event == "error":
                    raise AskFailed(data.get("message", failed))
                if event == "done":
                    return data
                heard(event, data)
    except httpx.HTTPError as exc:
        if not began:
            return None
        raise AskFailed(f"the connection to the server broke off ({exc})") from None
    if not began:
        return None
    raise AskFailed(unfinished)


def _detail(raw: bytes) -> str:
    try:
        detail = json.loads(raw).get("detail")
    except (ValueError, AttributeError):
        detail = None
    if isinstance(detail, list):  # FastAPI's validation errors
        detail = "; ".join(str(d.get("msg", d)) for d in detail if isinstance(d, dict))
    return str(detail or raw.decode("utf-8", "replace")[:200])


def _events(lines: Iterator[str]) -> Iterator[tuple[str, dict]]:
    """Server-sent events as (name, JSON data)."""
    name, data = "message", []
    for line in lines:
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and data:
            yield name, json.loads("\n".join(data))
            name, data = "message", []


def _auth(server: Server) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.token}"}
