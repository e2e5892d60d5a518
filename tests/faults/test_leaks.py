"""Trust on a real disk (issue 24): no leak out of the roots, no serving of what indexing skips, no 500
for an odd folder or odd text, no raw escape sequences on the terminal.

One small real index (MiniLM) over a root that holds what a hostile probe found: a `.env`, a file
`.gitignore` excludes, a folder with a link loop and a name that is not UTF-8, a file named with an
escape sequence, a zip member whose path is longer than the OS takes, and a file swapped for a link
out of the root after it was indexed. Each defect is checked through the interface it was seen in:
the CLI as a process, the HTTP app (the real one, in this process), the MCP server over stdio and
the assistant's tools.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import zipfile
from pathlib import Path

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from sensetree.chat.tools import Sources, Toolbox
from sensetree.ingest.confine import NotServed
from sensetree.interfaces.api import ServerOptions, create_app
from sensetree.operations import IgnoreParams, UnignoreParams
from tests.support.index import catalog_row, stored_chunks

pytestmark = pytest.mark.slow  # an index, worker processes, CLI and MCP processes

SECRET = "vault code 7391 quartz"       # outside the root
ENV_SECRET = "API_KEY=sk-live-91af77"   # in .env
IGNORED_SECRET = "payroll figures kestrel"  # in a file .gitignore excludes
LONG_MEMBER = "/".join(["d" * 200] * 22) + "/deep.txt"  # 4,400 characters: past PATH_MAX
RED = "\x1b[31mred.txt"
PORT = 8765
TOKEN = "t" * 43


def _build(base: Path) -> dict[str, Path]:
    root, outside = base / "root", base / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(f"the {SECRET} is kept here", encoding="utf-8")
    (root / "harbour.txt").write_text("harbour lighthouse keeper notes about the tides", encoding="utf-8")
    (root / ".env").write_text(ENV_SECRET, encoding="utf-8")
    (root / ".hidden_secret.txt").write_text(ENV_SECRET, encoding="utf-8")
    (root / ".gitignore").write_text("private.txt\n", encoding="utf-8")
    (root / "private.txt").write_text(IGNORED_SECRET, encoding="utf-8")
    odd = root / "odd"
    odd.mkdir()
    (odd / "fine.txt").write_text("a fine ordinary file about otters", encoding="utf-8")
    os.symlink(odd / "loop_a", odd / "loop_b")
    os.symlink(odd / "loop_b", odd / "loop_a")
    with open(os.path.join(os.fsencode(odd), b"bad\xffname.txt"), "wb") as file:
        file.write(b"undecodable name")
    (root / RED).write_text("crimson beacon signal", encoding="utf-8")
    with zipfile.ZipFile(root / "deep.zip", "w") as archive:
        archive.writestr(LONG_MEMBER, "abyssal lantern in the deepest folder")
        archive.writestr("short.txt", "abyssal lantern near the surface")
    (root / "swapped.txt").write_text("tidal chart of the northern estuary", encoding="utf-8")
    return {"root": root, "outside": outside, "odd": odd}


@pytest.fixture(scope="module")
def disk(tmp_path_factory, make_engine):
    """The indexed root; then ``swapped.txt`` becomes a link to the secret outside (after indexing)."""
    base = tmp_path_factory.mktemp("leaks")
    where = _build(base)
    data = base / "data"
    make_engine(data, where["root"]).close()
    swapped = where["root"] / "swapped.txt"
    swapped.unlink()
    os.symlink(where["outside"] / "secret.txt", swapped)
    return {**where, "base": base, "data": data}


@pytest.fixture(scope="module")
def http(disk, make_engine):
    """The real app over the index, in this process (no indexer: nothing changes under the tests)."""
    engine = make_engine(disk["data"], index=False, model=None)
    app = create_app(engine, TOKEN, ServerOptions(port=PORT))
    client = TestClient(app, base_url=f"http://127.0.0.1:{PORT}", client=("127.0.0.1", 50000),
                        headers={"Authorization": f"Bearer {TOKEN}"}, raise_server_exceptions=False)
    yield client, engine
    engine.close()


# 1 ---------------------------------------------------------------------------------------
def test_a_file_swapped_for_a_link_out_between_scan_and_read_is_not_indexed(tmp_path, make_engine, cli):
    """Defect 1 at indexing: the worker opens the file, then checks what it opened."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(f"the {SECRET} is kept here", encoding="utf-8")
    (root / "plain.txt").write_text("an ordinary note about gardening", encoding="utf-8")
    target = root / "report.txt"
    target.write_text("a report about bicycles", encoding="utf-8")
    engine = make_engine(tmp_path / "data", root, index=False)
    scan = engine.scan

    def scan_then_swap():
        report = scan()  # the scan saw a regular file; the read comes after the swap
        target.unlink()
        os.symlink(outside / "secret.txt", target)
        return report

    engine.scan = scan_then_swap
    try:
        engine.index()
        assert all(SECRET not in chunk["text"] for chunk in stored_chunks(engine, str(target)))
        assert catalog_row(engine, str(root / "plain.txt")).status == "indexed"
    finally:
        engine.close()
    found = json.loads(cli.run(tmp_path / "data", "search", "vault code quartz", "--json").stdout)
    assert SECRET not in json.dumps(found) and str(target) not in [r["path"] for r in found["results"]]


def test_a_file_swapped_for_a_link_out_after_indexing_is_left_out_of_every_search(disk, http, cli):
    """Defect 1 at search time: the rule is in the engine, so the CLI, HTTP search and tree, the assistant's
    search and MCP (below) all leave the link out."""
    swapped = str(disk["root"] / "swapped.txt")
    found = json.loads(cli.run(disk["data"], "search", "tidal chart northern estuary", "--json").stdout)
    assert found["results"] and swapped not in [r["path"] for r in found["results"]]
    client, engine = http
    answer = client.get("/api/search", params={"q": "tidal chart northern estuary"})
    assert answer.status_code == 200 and swapped not in [r["path"] for r in answer.json()["results"]]
    tree = client.get("/api/tree", params={"q": "tidal chart northern estuary"}).json()["tree"]
    assert swapped not in json.dumps(tree)
    outcome = Toolbox(engine, None, Sources()).run("search_files", {"query": "tidal chart northern estuary"})
    assert swapped not in outcome.text


# 2 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, why", [(".env", "hidden file"), (".hidden_secret.txt", "hidden file"),
                                       ("private.txt", "excluded by the .gitignore")])
def test_what_indexing_skips_is_not_served_over_http(disk, http, name, why):
    client, engine = http
    path = str(disk["root"] / name)
    for endpoint in ("/api/preview", "/api/file"):
        answer = client.get(endpoint, params={"path": path})
        assert answer.status_code == 403, (endpoint, answer.text)
        assert why in answer.json()["detail"] and "not served" in answer.json()["detail"]
        assert ENV_SECRET not in answer.text and IGNORED_SECRET not in answer.text
    outcome = Toolbox(engine, None, Sources()).run("read_file", {"path": path})
    assert outcome.text.startswith("refused:") and why in outcome.text
    assert ENV_SECRET not in outcome.text and IGNORED_SECRET not in outcome.text
    listed = Toolbox(engine, None, Sources()).run("list_directory", {"path": str(disk["root"])}).text
    assert name not in listed and "harbour.txt" in listed


def test_what_the_user_ignored_is_not_served_either(tmp_path, make_engine):
    """`sensetree ignore` keeps a file or folder out of the index; readers refuse it too, until unignored."""
    root = tmp_path / "root"
    (root / "payroll").mkdir(parents=True)
    (root / "payroll" / "march.txt").write_text(IGNORED_SECRET, encoding="utf-8")
    (root / "notes.txt").write_text("harbour notes", encoding="utf-8")
    with make_engine(tmp_path / "data", root, index=False) as engine:
        engine.run(IgnoreParams(str(root / "payroll")))
        with pytest.raises(NotServed, match="payroll is ignored"):
            engine.reader().read_text(str(root / "payroll" / "march.txt"), 1000)
        outcome = Toolbox(engine, None, Sources()).run("read_file", {"path": str(root / "payroll" / "march.txt")})
        assert outcome.text.startswith("refused:") and IGNORED_SECRET not in outcome.text
        assert engine.reader().read_text(str(root / "notes.txt"), 1000).text == "harbour notes"
        engine.run(UnignoreParams(str(root / "payroll")))
        assert engine.reader().read_text(str(root / "payroll" / "march.txt"), 1000).text == IGNORED_SECRET


# 6, 17, 18 over HTTP ----------------------------------------------------------------------
def test_a_member_path_past_the_os_limit_is_searched_and_previewed(disk, http):
    client, _ = http
    member = f"{disk['root'] / 'deep.zip'}/{LONG_MEMBER}"
    found = client.get("/api/search", params={"q": "abyssal lantern"})
    assert found.status_code == 200 and member in [r["path"] for r in found.json()["results"]]
    shown = client.get("/api/preview", params={"path": member})
    assert shown.status_code == 200 and "deepest folder" in shown.json()["text"]
    assert client.get("/api/file", params={"path": member}).status_code == 404


def test_an_odd_folder_is_listed_not_failed(disk, http):
    """Defect 17: a link loop and a name that is not UTF-8 are shown with their problem; the rest is listed."""
    client, _ = http
    odd = disk["odd"]
    listing = client.get("/api/browse", params={"path": str(odd)})
    assert listing.status_code == 200, listing.text
    entries = {e["name"]: e for e in listing.json()["entries"]}
    assert entries["fine.txt"]["error"] is None
    assert "symbolic links" in entries["loop_a"]["error"] and "symbolic links" in entries["loop_b"]["error"]
    assert "not valid UTF-8" in entries["bad\ufffdname.txt"]["error"]
    assert client.get("/api/file", params={"path": str(odd)}).status_code == 200
    loop = client.get("/api/file", params={"path": str(odd / "loop_a")})
    assert loop.status_code == 422 and "symbolic links" in loop.json()["detail"]


def test_out_of_range_numbers_and_lone_surrogates_get_answers_not_500(disk, http):
    """Defect 18 over HTTP."""
    client, _ = http
    huge = client.get("/api/preview", params={"path": str(disk["root"] / "harbour.txt"), "chunk": 10**30})
    assert huge.status_code == 422 and "chunk" in huge.text
    assert client.get("/api/search?q=%ED%A0%80%20lighthouse").status_code == 200
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert client.put("/api/settings", json={"key": "chat.base_url", "value": f"http://127.0.0.1:{port}/v1"}).is_success
    try:
        answer = client.post("/api/chat", content=b'{"question": "\\ud800 when is the tide?"}',
                             headers={"content-type": "application/json"})
        assert answer.status_code == 200
        assert "event: error" in answer.text and "unreachable" in answer.text
    finally:
        client.put("/api/settings", json={"key": "chat.base_url", "value": ""})
    sense = client.put("/api/sense", content=f'{{"path": "{disk["root"] / "harbour.txt"}", "sense": "\\udcff notes"}}'
                       .encode(), headers={"content-type": "application/json"})
    assert sense.status_code == 200 and sense.json()["sense"] == "\ufffd notes"


# 18, 20 in the CLI ---------------------------------------------------------------------------
def test_search_queries_with_a_lone_surrogate(disk, cli, tmp_path):
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"query": "\\ud800 crimson beacon"}\n"harbour lighthouse"\n', encoding="utf-8")
    answers = json.loads(cli.run(disk["data"], "search", "--queries", queries, "--json").stdout)
    assert [a["query"] for a in answers] == ["\ufffd crimson beacon", "harbour lighthouse"]
    assert cli.run(disk["data"], "search", "--queries", queries).returncode == 0


def test_cli_output_escapes_control_characters_in_names(disk, cli):
    """Defect 20: a file named with an escape sequence is shown escaped; JSON keeps the name exact."""
    human = cli.run(disk["data"], "search", "crimson beacon signal", text=False)
    assert b"\x1b" not in human.stdout and b"\\x1b[31mred.txt" in human.stdout
    exact = json.loads(cli.run(disk["data"], "search", "crimson beacon signal", "--json").stdout)
    assert exact["results"][0]["name"] == RED
    tree = cli.run(disk["data"], "tree", "crimson beacon signal", text=False)
    assert b"\x1b" not in tree.stdout and b"\\x1b[31mred.txt" in tree.stdout


# 1, 2, 6, 17, 18 over MCP ------------------------------------------------------------------
def test_mcp_serves_what_indexing_reads_and_nothing_else(disk):
    root = disk["root"]
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "sensetree.interfaces.cli", "mcp", "--data-dir", str(disk["data"])])

    async def session():
        with open(disk["base"] / "mcp-stderr.log", "a", encoding="utf-8") as errlog:
            async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120) as client:
                for name in (".env", "private.txt"):
                    refused = await client.call_tool("read_file", {"path": str(root / name)})
                    text = "\n".join(block.text for block in refused.content if block.type == "text")
                    assert refused.is_error and "not served" in text and ENV_SECRET not in text
                deep = await client.call_tool("search_files", {"query": "abyssal lantern"})
                assert not deep.is_error
                assert f"{root / 'deep.zip'}/{LONG_MEMBER}" in [r["path"] for r in deep.structured_content["results"]]
                tidal = await client.call_tool("search_files", {"query": "tidal chart northern estuary"})
                assert str(root / "swapped.txt") not in [r["path"] for r in tidal.structured_content["results"]]
                odd = await client.call_tool("list_directory", {"path": str(disk["odd"])})
                assert not odd.is_error
                names = {e["name"]: e["error"] for e in odd.structured_content["entries"]}
                assert names["fine.txt"] is None and "not valid UTF-8" in names["bad\ufffdname.txt"]

    anyio.run(session)
    assert "Traceback" not in (disk["base"] / "mcp-stderr.log").read_text(encoding="utf-8")
