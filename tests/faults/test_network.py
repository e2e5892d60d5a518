"""Nothing leaves the machine (issue 33): real commands run in a network namespace of their own, under
``strace``, and every connection or datagram they try is checked: one that leaves loopback, or any DNS
query, fails the test.

The namespace has only loopback (brought up), so a lookup cannot succeed, but its attempt is still a
``connect`` or ``sendto`` that strace sees. The commands start with none of the variables that turn
telemetry off: the package must turn it off itself (``sensetree/__init__``). No endpoint is configured;
the default embedding model (multilingual E5 on onnxruntime) is the one whose runtime looked up its
telemetry host.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import sensetree
from tests.conftest import _environment

pytestmark = pytest.mark.slow  # processes under strace, models loaded

ADDRESS = re.compile(r"sa_family=(AF_INET6?), sin6?_port=htons\((\d+)\),.*?"
                     r"(?:inet_addr\(\"([^\"]+)\"\)|inet_pton\(AF_INET6, \"([^\"]+)\")")


# `serve` on a free port, asked one search over loopback with its token, then stopped (run under strace: the
# request to 127.0.0.1 is the one connection allowed).
SERVE_AND_SEARCH = """
import json, signal, subprocess, sys, urllib.parse, urllib.request
serve = subprocess.Popen([sys.executable, "-m", "sensetree.interfaces.cli", "serve", "--no-browser", "--port", "0"],
                         stdout=subprocess.PIPE, text=True)
try:
    line = serve.stdout.readline()
    url, token = line.split("running at ")[1].strip().split("/#token=")
    request = urllib.request.Request(url + "/api/search?" + urllib.parse.urlencode({"q": "otter in the estuary"}),
                                     headers={"Authorization": "Bearer " + token})
    answer = json.load(urllib.request.urlopen(request, timeout=300))
    print(json.dumps([r["path"] for r in answer["results"]]))
finally:
    serve.send_signal(signal.SIGTERM)
    serve.wait(timeout=60)
"""


def _namespace() -> list[str] | None:
    """How to enter a new network namespace here: as root, or as a user mapped to root; None if neither works."""
    if shutil.which("unshare") is None or shutil.which("strace") is None:
        return None
    for command in (["unshare", "--net"], ["unshare", "--net", "--map-root-user"]):
        if subprocess.run([*command, "true"], capture_output=True).returncode == 0:
            return command
    return None


NAMESPACE = _namespace()


def _embedded_chat_model() -> bool:
    from sensetree.models.local_llm import SMOLLM2, model_file, pick_runtime

    if pick_runtime() is None:
        return False
    try:
        return model_file(SMOLLM2.name, Path("unused")) is not None
    except Exception:
        return False
# The variables that turn telemetry off: the commands start without them (this test process has them,
# set when it imported the package).
TELEMETRY_VARIABLES = ("ORT_DISABLE_TELEMETRY", "HF_HUB_DISABLE_TELEMETRY", "HF_HUB_OFFLINE", "RAY_USAGE_STATS_ENABLED",
                       "DO_NOT_TRACK", "DISABLE_TELEMETRY")


def leaks(trace: str) -> list[str]:
    """The lines of an strace log that reach an internet address off loopback, or port 53 anywhere."""
    found = []
    for line in trace.splitlines():
        if not re.search(r"\b(connect|sendto|sendmsg|sendmmsg)\(", line):
            continue
        for _family, port, v4, v6 in ADDRESS.findall(line):
            if int(port) == 53 or not ipaddress.ip_address(v4 or v6).is_loopback:
                found.append(line)
    return found


def test_the_check_sees_a_dns_query_and_a_connection_out():
    assert leaks('12 connect(35, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.255.255.53")}, 16) = 0')
    assert leaks('12 connect(3, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), '
                 'inet_pton(AF_INET6, "2603:1030::1", &sin6_addr), sin6_scope_id=0}, 28) = -1 ENETUNREACH')
    assert not leaks('12 connect(3, {sa_family=AF_INET, sin_port=htons(8765), sin_addr=inet_addr("127.0.0.1")}, 16) = 0')
    assert not leaks('12 connect(3, {sa_family=AF_UNIX, sun_path="/run/x"}, 110) = 0')


@pytest.mark.skipif(NAMESPACE is None, reason="needs unshare (a network namespace) and strace (apt-get install strace)")
def test_index_search_status_serve_and_ask_send_nothing_off_loopback(tmp_path, write_tree, cli):
    tree, data = tmp_path / "tree", tmp_path / "data"
    write_tree(tree, {"harbour.txt": "the harbour lighthouse keeper writes about the tides",
                      "otter.md": "# Otters\n\nan otter swims in the estuary at dawn"})
    cli.run(data, "add", tree)
    environment = {key: value for key, value in _environment(data).items() if key not in TELEMETRY_VARIABLES}
    environment["PYTHONPATH"] = os.pathsep.join([str(Path(sensetree.__file__).parents[1]),
                                                 os.environ.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "sensetree.interfaces.cli"]
    traces = []
    runs = [["index"], ["search", "otter in the estuary"], ["status"], [sys.executable, "-c", SERVE_AND_SEARCH]]
    if _embedded_chat_model():  # the assistant on the embedded model (no chat endpoint configured)
        runs.append(["ask", "what do the notes say about otters?"])
    for n, args in enumerate(runs):
        log = tmp_path / f"trace-{n}"
        done = subprocess.run(
            [*NAMESPACE, "sh", "-c", 'ip link set lo up 2>/dev/null; exec "$@"', "sh",
             "strace", "-f", "-qq", "-e", "trace=connect,sendto,sendmsg,sendmmsg", "-o", str(log),
             *(args if args[0] == sys.executable else [*command, *args])],
            capture_output=True, text=True, env=environment, timeout=600)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stdout + done.stderr
        name = "serve" if args[0] == sys.executable else args[0]
        traces.append((name, log.read_text(encoding="utf-8", errors="replace")))
        if name in ("search", "serve", "ask"):
            assert "otter.md" in done.stdout, done.stdout + done.stderr
    for name, trace in traces:
        assert trace, f"strace saw nothing of {name}"
        assert leaks(trace) == [], f"`sensetree {name}` tried to reach the network:\n" + "\n".join(leaks(trace)[:10])
