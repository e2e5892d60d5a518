"""A real OpenAI-compatible HTTP server on loopback, for tests of the endpoint paths.

Embeddings are computed by the bundled MiniLM, so vectors are genuine. The server can be
stopped and restarted on the same port and told to misbehave (500, 429 with Retry-After,
malformed JSON, wrong dimension, a dropped connection, a delay before every answer) to
exercise the failure handling. Its chat route answers with a short description built from
the request, streamed when asked, so the sense writer's and the assistant's protocols can be
checked; the real language model is tested elsewhere. ``EndlessChatEndpoint`` streams one
answer for a minute, to test stopping an answer.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from sensetree.models.embeddings import load_embedder


class EndpointServer:
    def __init__(self, port: int = 0):
        self.embedder = load_embedder("minilm")
        self.mode = "ok"
        self.failures_left = 0  # with a failing mode: how many calls fail before it turns ok again
        self.healthy_left = 0   # with a failing mode: how many calls still succeed before the failures start
        self.delay = 0.0        # seconds every embedding or chat call waits before answering (a slow endpoint)
        self.retry_after = "1"  # the Retry-After header of a 429
        self.calls: list[tuple[float, str, str]] = []  # (monotonic time, path, mode) of every embedding or chat call
        self.embedding_inputs: list[str] = []
        self.chat_requests: list[dict] = []
        self._server: ThreadingHTTPServer | None = None
        self._mode_lock = threading.Lock()  # requests arrive on several threads
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

    def fail(self, mode: str, times: int = 10**9, after: int = 0) -> None:
        self.mode, self.failures_left, self.healthy_left = mode, times, after

    def _current_mode(self) -> str:
        with self._mode_lock:
            if self.healthy_left > 0:
                self.healthy_left -= 1
                return "ok"
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
            headers = {"Content-Type": "application/json", **(headers or {})}
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            try:
                self.wfile.write(body)
            except ConnectionError:  # the client gave up waiting (a slow-endpoint test)
                pass

        def do_GET(self) -> None:
            self._send(200, json.dumps({"data": [{"id": "test-model"}]}).encode())

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            if not self.path.endswith(("/embeddings", "/chat/completions")):
                return self._send(404, b'{"error": "not found"}')
            mode = server._current_mode()
            server.calls.append((time.monotonic(), self.path, mode))
            time.sleep(server.delay)
            if mode == "drop":  # the server dies mid-request: the connection closes without an answer
                self.close_connection = True
                return
            if mode == "500":
                return self._send(500, b'{"error": "internal"}')
            if mode == "401":
                return self._send(401, b'{"error": {"message": "Incorrect API key provided"}}')
            if mode == "404":
                return self._send(404, b'{"error": {"message": "model not found, try pulling it first"}}')
            if mode == "429":
                return self._send(429, b'{"error": "slow down"}', {"Retry-After": server.retry_after})
            if mode == "malformed":
                if body.get("stream"):
                    return self._send(200, b'data: {"choices": [{"delta": {"content": "The ', {"Content-Type": "text/event-stream"})
                return self._send(200, b'{"data": [{"embedding": [0.1, ')
            if self.path.endswith("/embeddings"):
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                server.embedding_inputs.extend(texts)
                vectors = server.embedder.embed_passages(texts)
                if mode == "wrong_dim":
                    vectors = np.concatenate([vectors, vectors], axis=1)
                data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
                return self._send(200, json.dumps({"object": "list", "data": data, "model": body.get("model")}).encode())
            server.chat_requests.append(body)
            user = body["messages"][-1]["content"]
            name = user.splitlines()[0].removeprefix("File name: ")
            answer = f"This document is a test file named {name}. It concerns the zorblat project."
            if body.get("stream"):
                events = [{"choices": [{"delta": {"content": word + " "}}]} for word in answer.split()]
                events.append({"choices": [{"delta": {}, "finish_reason": "stop"}]})
                stream = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
                return self._send(200, stream.encode(), {"Content-Type": "text/event-stream"})
            return self._send(200, json.dumps({"choices": [{"message": {"role": "assistant", "content": answer}}]}).encode())

    return Handler


class _StreamingChatEndpoint:
    """An OpenAI-compatible chat endpoint on loopback that streams each answer; ``stream(wfile)``
    writes one answer's events (the subclass's part)."""

    def __init__(self):
        self.requests = 0
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if not self.path.endswith("/chat/completions"):
                    self.send_error(404)
                    return
                endpoint.requests += 1
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                endpoint.stream(self.wfile)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def stream(self, wfile) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


_DONE = b'data: {"choices": [{"delta": {}, "finish_reason": "stop"}]}\n\ndata: [DONE]\n\n'


class EndlessChatEndpoint(_StreamingChatEndpoint):
    """An OpenAI-compatible chat endpoint whose first answer streams a word every 0.1 s for a
    minute; it records when the caller hangs up. Later answers are one word."""

    def __init__(self):
        self.hung_up = threading.Event()
        super().__init__()

    def stream(self, wfile) -> None:
        words = 600 if self.requests == 1 else 1
        try:
            for _ in range(words):
                wfile.write(b'data: {"choices": [{"delta": {"content": "word "}}]}\n\n')
                wfile.flush()
                time.sleep(0.1 if words > 1 else 0)
            wfile.write(_DONE)
        except (BrokenPipeError, ConnectionResetError):
            self.hung_up.set()


class ScriptedChatEndpoint(_StreamingChatEndpoint):
    """An OpenAI-compatible chat endpoint that streams one set answer, a few words at a time, to every question."""

    def __init__(self, answer: str):
        self.answer = answer
        super().__init__()

    def stream(self, wfile) -> None:
        for word in re.findall(r"\S+\s*", self.answer):
            delta = json.dumps({"choices": [{"delta": {"content": word}}]})
            wfile.write(f"data: {delta}\n\n".encode())
        wfile.write(_DONE)
        wfile.flush()
