"""Every MCP tool answers every input (issue 42, item 3): a real ``sensetree mcp`` stdio session, one
for the whole module, is sent the hostile strings of ``tests/support/hostile.py`` and hypothesis' own
text in every string parameter of every tool it lists; each call must be answered (a result or an
error) within seconds, as readable JSON, and the session must stay alive.

The client is written here, line by line as a hostile one would: the SDK's client cannot even send a
lone surrogate (its JSON writer refuses one), while ``json.dumps`` writes it as the escape ``"\\ud800"``.
"""

from __future__ import annotations

import itertools
import json
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.hostile import STRINGS

pytestmark = pytest.mark.slow  # a server process

ANSWER_SECONDS = 15  # a call's answer; the first search loads the model, so the session is warmed first
CASES = 100  # hypothesis examples, each one tool call


class Wire:
    """A JSON-RPC client on a ``sensetree mcp`` process's stdin and stdout."""

    def __init__(self, data: Path, errors: Path):
        self.errors = errors.open("w", encoding="utf-8")
        self.process = subprocess.Popen([sys.executable, "-m", "sensetree.interfaces.cli", "mcp", "--data-dir",
                                         str(data)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors)
        self.ids = itertools.count(1)
        self.buffer = b""
        self.calls = 0
        self.tools: dict[str, tuple[list[str], list[str]]] = {}

    def ask(self, method: str, params: dict, within: float = ANSWER_SECONDS) -> dict:
        """The answer to one request (notifications the server sends meanwhile are skipped)."""
        number = next(self.ids)
        self._send({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
        deadline = time.monotonic() + within
        while True:
            message = json.loads(self._line(deadline))
            if message.get("id") == number:
                return message

    def call(self, tool: str, arguments: dict) -> dict:
        self.calls += 1
        return self.ask("tools/call", {"name": tool, "arguments": arguments})

    def tell(self, method: str) -> None:
        self._send({"jsonrpc": "2.0", "method": method})

    def _send(self, message: dict) -> None:
        self.process.stdin.write(json.dumps(message).encode("ascii") + b"\n")  # a lone surrogate as its escape
        self.process.stdin.flush()

    def _line(self, deadline: float) -> bytes:
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            assert left > 0 and self.process.poll() is None, "no answer in time" if left <= 0 else "the server died"
            if select.select([self.process.stdout], [], [], left)[0]:
                chunk = self.process.stdout.read1(65536)
                assert chunk, "the server closed its output"
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode("utf-8")  # strict: an answer is text

    def close(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        finally:
            if self.process.poll() is None:
                self.process.kill()
            self.errors.close()


@pytest.fixture(scope="module")
def wire(tmp_path_factory, make_engine, write_tree):
    base = tmp_path_factory.mktemp("mcp-inputs")
    write_tree(base / "docs", {"lighthouse/keeper_log.txt": "The lighthouse keeper logged the lamp repairs.",
                               "invoices/march_consulting.txt": "Invoice for March consulting, IBAN enclosed."})
    make_engine(base / "data", base / "docs").close()
    client = Wire(base / "data", base / "stderr.log")
    client.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "hostile", "version": "1"}}, within=120)
    client.tell("notifications/initialized")
    warm = client.call("search_files", {"query": "lighthouse lamp"})  # loads the model once
    assert not warm["result"]["isError"]
    client.tools = _string_params(client)
    yield client
    client.close()
    assert "Traceback" not in (base / "stderr.log").read_text(encoding="utf-8")


def _string_params(wire: Wire) -> dict[str, tuple[list[str], list[str]]]:
    """Each tool's string parameters, and those of them it requires."""
    tools = wire.ask("tools/list", {})["result"]["tools"]
    found = {}
    for tool in tools:
        schema = tool["inputSchema"]
        strings = [name for name, spec in schema["properties"].items()
                   if spec.get("type") == "string" or {"type": "string"} in spec.get("anyOf", [])]
        found[tool["name"]] = (strings, schema.get("required", []))
    return found


def _check(answer: dict, tool: str, arguments: dict) -> None:
    assert "result" in answer or "error" in answer, (tool, arguments, answer)
    text = json.dumps(answer)
    assert "Traceback" not in text and "unexpected error" not in text, (tool, arguments, text[:500])


BENIGN = {"query": "lighthouse", "path": "/nowhere/missing.txt", "other": "/nowhere/other.txt"}


def test_every_tool_answers_a_lone_surrogate_and_a_nul_in_every_string(wire):
    """The regression first: a lone surrogate in any argument went unanswered for good."""
    client = wire
    assert len(client.tools) == 7
    for tool, (strings, required) in client.tools.items():
        for name, value in itertools.product(strings, ("\ud800", "a\udcffb", "\x00")):
            arguments = {**{r: BENIGN[r] for r in required}, name: value}
            _check(client.call(tool, arguments), tool, arguments)


HOSTILE = st.one_of(
    st.sampled_from(STRINGS),
    st.text(max_size=40),
    st.builds("".join, st.lists(st.sampled_from(STRINGS + ["/", "..", "\ud800", "\u202e", "\x00"]), max_size=4)),
)


@settings(max_examples=CASES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_tool_answers_hostile_strings(wire, data):
    client = wire
    tool = data.draw(st.sampled_from(sorted(client.tools)))
    strings, required = client.tools[tool]
    arguments = {name: data.draw(HOSTILE, label=name) for name in strings
                 if name in required or data.draw(st.booleans(), label=f"give {name}")}
    _check(client.call(tool, arguments), tool, arguments)


def test_the_session_is_alive_after_them_all(wire):
    client = wire
    found = client.call("search_files", {"query": "invoice for March consulting"})
    assert not found["result"]["isError"]
    assert found["result"]["structuredContent"]["results"][0]["name"] == "march_consulting.txt"
    assert client.process.poll() is None
    print(f"{client.calls} tool calls answered in one session")
