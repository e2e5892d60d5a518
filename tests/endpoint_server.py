"""A real OpenAI-compatible HTTP server on loopback, for tests of the endpoint paths.

Embeddings are computed by the bundled MiniLM, so vectors are genuine. The server can be
stopped and restarted on the same port and told to misbehave (500, 429 with Retry-After,
malformed JSON, wrong dimension) to exercise the failure handling. Its chat route answers
with a short description built from the request, so the sense writer's protocol can be
checked; the real language model is tested elsewhere.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from sensetree.models.embeddings import load_embedder


class EndpointServer:
    def __init__(self, port: int = 0):
        self.embedder = load_embedder("minilm")
        self.mode = "ok"
        self.failures_left = 0  # with a failing mode: how many calls fail before it turns ok again
        self.embedding_inputs: list[str] = []
        self.chat_requests: list[dict] = []
        self._server: ThreadingHTTPServer | None = None
        self.port = port
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self))
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def fail(self, mode: str, times: int = 10**9) -> None:
        self.mode, self.failures_left = mode, times

    def _current_mode(self) -> str:
        if self.mode != "ok" and self.failures_left > 0:
            self.failures_left -= 1
            return self.mode
        self.mode = "ok"
        return "ok"


def _handler(server: EndpointServer):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._send(200, json.dumps({"data": [{"id": "test-model"}]}).encode())

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            mode = server._current_mode()
            if mode == "500":
                return self._send(500, b'{"error": "internal"}')
            if mode == "429":
                return self._send(429, b'{"error": "slow down"}', {"Retry-After": "1"})
            if mode == "malformed":
                return self._send(200, b'{"data": [{"embedding": [0.1, ')
            if self.path.endswith("/embeddings"):
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                server.embedding_inputs.extend(texts)
                vectors = server.embedder.embed_passages(texts)
                if mode == "wrong_dim":
                    vectors = np.concatenate([vectors, vectors], axis=1)
                data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
                return self._send(200, json.dumps({"object": "list", "data": data, "model": body.get("model")}).encode())
            if self.path.endswith("/chat/completions"):
                server.chat_requests.append(body)
                user = body["messages"][-1]["content"]
                name = user.splitlines()[0].removeprefix("File name: ")
                answer = f"This document is a test file named {name}. It concerns the zorblat project."
                return self._send(200, json.dumps({"choices": [{"message": {"role": "assistant", "content": answer}}]}).encode())
            self._send(404, b'{"error": "not found"}')

    return Handler
