"""A real llama.cpp model behind a recording proxy, for the chat tests.

``LocalServer`` (the product's own code) runs a llama.cpp server on loopback; the proxy in
front passes every request through untouched, streaming included, and keeps a copy of each
body, so a test can see exactly what the agent sent and in which order. Told to, the proxy
refuses requests that carry tools the way Ollama does for a model without tool support (400,
"does not support tools"); the real model then answers the agent's retry.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

TOOLS_REFUSAL = {"error": {"message": "registry.ollama.ai/library/smollm2:135m does not support tools",
                           "type": "api_error", "param": None, "code": None}}


class RecordingProxy:
    runtime = ""  # which runtime serves the model, for the tests that depend on it

    def __init__(self, upstream: str):
        self.upstream = upstream.rstrip("/")  # e.g. http://127.0.0.1:PORT (no /v1)
        self.requests: list[dict] = []        # {"method", "path", "body"} in arrival order
        self.refuse_tools = False
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def chat_requests(self) -> list[dict]:
        return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions")]

    def clear(self) -> None:
        self.requests.clear()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(proxy: RecordingProxy):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            self._forward(None)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._forward(raw)

        def _forward(self, raw: bytes | None) -> None:
            body = json.loads(raw) if raw else None
            proxy.requests.append({"method": self.command, "path": self.path, "body": body})
            if proxy.refuse_tools and isinstance(body, dict) and body.get("tools"):
                self._send(400, json.dumps(TOOLS_REFUSAL).encode())
                return
            headers = {"Content-Type": self.headers.get("Content-Type", "application/json")}
            with httpx.Client(timeout=600) as client, client.stream(
                    self.command, proxy.upstream + self.path, content=raw, headers=headers) as upstream:
                self.send_response(upstream.status_code)
                self.send_header("Content-Type", upstream.headers.get("content-type", "application/json"))
                self.end_headers()
                for chunk in upstream.iter_raw():
                    self.wfile.write(chunk)
                    self.wfile.flush()

        def _send(self, status: int, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
