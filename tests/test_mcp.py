"""``sensetree mcp``: the real MCP client from the ``mcp`` package drives the real server, launched as
``sensetree mcp`` over stdio and over streamable HTTP, on a small real index (MiniLM for speed).

Every way out of the roots (``..``, links, a prefix sibling, another drive, URL-encoded climbs) must
come back as a tool error, with nothing of the file behind it and no traceback anywhere.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from contextlib import asynccontextmanager

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from sensetree.interfaces.api import load_token
from tests.support.corpus import build_corpus

pytestmark = pytest.mark.slow  # real MCP servers over stdio and HTTP

SECRET = "outside-secret-7391"
EVIL = "evil twin next door"
SERVER = [sys.executable, "-m", "sensetree.interfaces.cli", "mcp"]


@pytest.fixture(scope="module")
def index(tmp_path_factory, make_engine):
    """A root ``Docs`` (the test corpus, a long file, links out), a prefix sibling and a secret beside it."""
    base = tmp_path_factory.mktemp("mcp")
    root, secret, evil = base / "Docs", base / "secret", base / "DocsEvil"
    files = build_corpus(root)
    secret.mkdir()
    evil.mkdir()
    (secret / "s.txt").write_text(f"the vault code is {SECRET}", encoding="utf-8")
    (evil / "evil.txt").write_text(EVIL, encoding="utf-8")
    (root / "long").mkdir()
    (root / "long" / "ledger.txt").write_text("Ledger of the lighthouse repairs. " * 1000, encoding="utf-8")
    os.symlink(secret, root / "link_out")
    os.symlink(secret / "s.txt", root / "file_out.txt")
    data = base / "data"
    make_engine(data, root).close()
    return {"base": base, "root": root, "data": data, "files": files}


@asynccontextmanager
async def stdio_session(index):
    """The server as an assistant launches it; its stderr goes to a file the test reads afterwards."""
    params = StdioServerParameters(command=SERVER[0], args=[*SERVER[1:], "--data-dir", str(index["data"])])
    with open(index["base"] / "stderr.log", "a", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120) as client:
            yield client


def run(test):
    anyio.run(test)


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def test_stdio_tools_search_tree_read_and_list(index):
    root, files = index["root"], index["files"]

    async def session():
        async with stdio_session(index) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {"search_files", "meaning_tree", "read_file", "list_directory", "similar_files",
                                  "summarise_file", "compare_files"}
            assert tools["search_files"].input_schema["required"] == ["query"]
            assert {"query", "scope", "limit"} <= set(tools["search_files"].input_schema["properties"])
            assert tools["read_file"].input_schema["required"] == ["path"]
            assert all(t.description and t.output_schema and t.annotations.read_only_hint for t in tools.values())

            tender = "submission deadline for the library renovation tender"
            found = await client.call_tool("search_files", {"query": tender})
            assert not found.is_error, text_of(found)
            first = found.structured_content["results"][0]
            assert first["path"] == str(files["docx"]) and first["rank"] == 1
            assert 0 < first["score"] <= 1 and first["snippet"] and first["name"] == "tender_2026.docx"

            scoped = await client.call_tool("search_files", {"query": "on-call rotation and WAL archiving",
                                                             "scope": str(root / "notes"), "limit": 3})
            results = scoped.structured_content["results"]
            assert results and results[0]["path"] == str(files["markdown"]) and len(results) <= 3
            assert all(r["path"].startswith(str(root / "notes") + os.sep) for r in results)

            # issue 39: the notice names this tool's own control, and the tool has it
            assert tools["search_files"].input_schema["properties"]["literal"]["type"] == "boolean"
            said = await client.call_tool("search_files", {"query": "on-call rotation and WAL archiving in notes"})
            told = [n for n in said.structured_content["notices"] if "read as a filter" in n]
            assert told and "literal=true" in told[0] and "--literal" not in told[0], told
            typed = await client.call_tool("search_files", {"query": "on-call rotation and WAL archiving in notes",
                                                            "literal": True})
            assert not any("read as a filter" in n for n in typed.structured_content["notices"])
            assert any(not r["path"].startswith(str(root / "notes") + os.sep)
                       for r in typed.structured_content["results"])

            mapped = await client.call_tool("meaning_tree", {"query": "quarterly revenue report of Hollowbrook"})
            tree = mapped.structured_content["tree"]
            assert tree["path"] == str(root) and tree["is_dir"]
            node, depth = tree, 0
            while node["children"]:
                assert len(node["children"]) <= 8
                heats = [c["heat"] for c in node["children"]]
                assert heats == sorted(heats, reverse=True)
                node, depth = node["children"][0], depth + 1
            assert node["path"] == str(files["pdf"]) and not node["is_dir"] and depth <= 4
            assert tree["omitted"] >= 0 and tree["heat"] == node["heat"]

            read = (await client.call_tool("read_file", {"path": str(files["docx"])})).structured_content
            assert "14 March 2026" in read["text"] and read["doc_type"] == "docx" and not read["truncated"]
            long = (await client.call_tool("read_file", {"path": str(root / "long" / "ledger.txt")})).structured_content
            assert long["truncated"] and len(long["text"]) == 20_000 < long["total_chars"]
            assert "20000" in long["note"]
            for path in (str(files["percent_dir"]), "100%_backup/old_notes.txt"):  # a literal % in a folder name
                percent = await client.call_tool("read_file", {"path": path})
                assert not percent.is_error and "HM-44-0921" in percent.structured_content["text"], path
            missing = await client.call_tool("read_file", {"path": str(root / "reports" / "gone.txt")})
            assert missing.is_error and "list_directory shows" in missing.content[0].text  # NotFound, one line

            listing = (await client.call_tool("list_directory", {"path": str(root)})).structured_content
            entries = {e["name"]: e for e in listing["entries"]}
            assert entries["reports"]["is_dir"] and entries["reports"]["kind"] == "folder"
            assert entries["node_modules"]["kind"] == "block" and ".hidden" not in entries
            assert listing["path"] == str(root) and listing["more"] == 0
            reports = (await client.call_tool("list_directory", {"path": str(root / "reports")})).structured_content
            statuses = {e["name"]: (e["status"], e["error"]) for e in reports["entries"]}
            assert statuses["q3_revenue.pdf"] == ("indexed", None)
            assert statuses["broken.pdf"][0] == "failed" and statuses["broken.pdf"][1]
            roots = (await client.call_tool("list_directory", {"path": ""})).structured_content
            assert [e["path"] for e in roots["entries"]] == [str(root)]

    run(session)
    assert "Traceback" not in (index["base"] / "stderr.log").read_text(encoding="utf-8")


def test_stdio_refuses_every_way_out_of_the_roots(index):
    base, root = index["base"], index["root"]
    escapes = [
        str(root / ".." / "secret" / "s.txt"),     # ..
        "../secret/s.txt",                         # .. relative to the root
        "/etc/passwd",                             # an absolute path elsewhere
        str(base / "secret" / "s.txt"),
        str(root / "link_out" / "s.txt"),          # a folder link out of the root
        str(root / "file_out.txt"),                # a file link out of the root
        str(base / "DocsEvil" / "evil.txt"),       # a sibling sharing the root's prefix
        "C:\\Windows\\win.ini",                    # another drive
        "C:/Users/someone/secret.txt",
        "\\\\server\\share\\secret.txt",           # a UNC share
        "%2e%2e/secret/s.txt",                     # URL-encoded climbs are taken literally: no such file
        str(root) + "/%2e%2e/secret/s.txt",
        "..%2fsecret%2fs.txt",
        "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "",
    ]
    folders = [str(root / ".."), str(root / "link_out"), str(base / "DocsEvil"), "/etc", "C:\\", "%2e%2e",
               str(root) + "/%2e%2e"]

    async def session():
        async with stdio_session(index) as client:
            calls = [("read_file", {"path": p}) for p in escapes]
            calls += [("list_directory", {"path": p}) for p in folders]
            calls += [(tool, {"query": "vault code", "scope": p}) for tool in ("search_files", "meaning_tree")
                      for p in (str(base / "DocsEvil"), str(base / "secret"), str(root / "link_out"), "/etc", "D:\\")]
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                text = text_of(result)
                assert result.is_error, (name, arguments, text)
                assert SECRET not in text and EVIL not in text and "root:" not in text, (name, arguments, text)
                assert "Traceback" not in text and text.strip(), (name, arguments, text)
            refused = await client.call_tool("read_file", {"path": str(base / "DocsEvil" / "evil.txt")})
            assert "refused" in text_of(refused) and "outside the folders you may read" in text_of(refused)
            linked = await client.call_tool("read_file", {"path": str(root / "file_out.txt")})
            assert "through a link" in text_of(linked)
            # a link to a file outside the roots is never indexed, so no search can hand out its text
            linked_hits = await client.call_tool("search_files", {"query": "the vault code"})
            assert not linked_hits.is_error and SECRET not in text_of(linked_hits)
            assert str(root / "file_out.txt") not in [r["path"] for r in linked_hits.structured_content["results"]]
            bad_limit = await client.call_tool("search_files", {"query": "tender", "limit": 500})
            assert bad_limit.is_error and "limit" in text_of(bad_limit)

    run(session)
    assert "Traceback" not in (index["base"] / "stderr.log").read_text(encoding="utf-8")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, within: float = 60) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"the MCP server did not listen on {port}")


def _with_token(url: str, token: str | None):
    """The streamable HTTP transport, sending ``token`` as ``serve``'s clients do (none: no header)."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    return streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))


def test_streamable_http_on_loopback(index):
    port = free_port()
    command = [*SERVER, "--http", "--port", str(port), "--data-dir", str(index["data"])]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    token = load_token(index["data"])
    try:
        wait_for_port(port, process)

        async def session():
            async with Client(_with_token(f"http://127.0.0.1:{port}/mcp", token), read_timeout_seconds=120) as client:
                assert len((await client.list_tools()).tools) == 7  # search_files, meaning_tree, read_file, list_directory, similar_files, summarise_file, compare_files
                found = await client.call_tool("search_files", {"query": "invoice for March consulting", "limit": 5})
                assert found.structured_content["results"][0]["path"] == str(index["files"]["email"])
                refused = await client.call_tool("read_file", {"path": "/etc/passwd"})
                assert refused.is_error and "root:" not in text_of(refused)

        run(session)
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert f"http://127.0.0.1:{port}/mcp" in stderr and "Traceback" not in stderr


def _started(process: subprocess.Popen) -> tuple[int, str, list[str]]:
    """The port and token a ``mcp --http`` process printed on stderr, and every line it printed before listening."""
    lines = []
    while True:
        line = process.stderr.readline()
        if not line:
            pytest.fail("the MCP server ended before it listened:\n" + "".join(lines))
        lines.append(line)
        if line.startswith("token: "):
            break
    port = int(re.search(r"http://127\.0\.0\.1:(\d+)/mcp", "".join(lines)).group(1))
    return port, lines[-1].split()[1], lines


def test_streamable_http_needs_the_servers_token_and_port_0_takes_a_free_one(index):
    """Any local process could call read_file on an open port: every request needs the token, as serve's API does."""
    command = [*SERVER, "--http", "--port", "0", "--data-dir", str(index["data"])]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port, token, lines = _started(process)
        assert port != 0 and token == load_token(index["data"])  # the token serve prints, the same file
        assert sum(token in line for line in lines) == 1, "the token is printed once"
        url = f"http://127.0.0.1:{port}/mcp"
        hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "probe", "version": "1"}}}
        accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token},
                        {"Authorization": f"Bearer {token[:-1]}"}):
            refused = httpx.post(url, json=hello, headers={**accept, **headers}, timeout=30)
            assert refused.status_code == 401 and "token" in refused.json()["detail"], headers
        assert httpx.get(url, timeout=30).status_code == 401
        other_host = httpx.post(url, json=hello, headers={**accept, "Authorization": f"Bearer {token}",
                                                          "Host": "evil.example:80"}, timeout=30)
        assert other_host.status_code == 403

        async def session():
            async with Client(_with_token(url, token), read_timeout_seconds=120) as client:
                found = await client.call_tool("search_files", {"query": "invoice for March consulting", "limit": 5})
                assert found.structured_content["results"][0]["path"] == str(index["files"]["email"])

            with pytest.raises(Exception):
                async with Client(_with_token(url, None), read_timeout_seconds=30) as client:
                    await client.call_tool("read_file", {"path": str(index["files"]["email"])})

        run(session)

        # a lone surrogate in a tool call is read as U+FFFD, as over stdio and in a web API body (issue 42)
        signed = {**accept, "Authorization": f"Bearer {token}"}
        opened = httpx.post(url, json=hello, headers=signed, timeout=30)
        signed["mcp-session-id"] = opened.headers["mcp-session-id"]
        httpx.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=signed, timeout=30)
        call = b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search_files", ' \
               b'"arguments": {"query": "invoice \\ud800 for March consulting"}}}'
        answered = httpx.post(url, content=call, headers=signed, timeout=60)
        assert answered.status_code == 200, answered.text
        data = json.loads(next(line[5:] for line in answered.text.splitlines() if line.startswith("data:")))
        assert data["result"]["structuredContent"]["query"] == "invoice \ufffd for March consulting"
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert "Traceback" not in stderr


def test_a_port_in_use_is_said_not_a_traceback(index):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run([*SERVER, "--http", "--port", str(port), "--data-dir", str(index["data"])],
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "choose another --port" in done.stderr and "Traceback" not in done.stderr
