"""Work that says things as it goes (the assistant's answer, a summary's progress), relayed to the
client as server-sent events while it runs."""

from __future__ import annotations

import json
import queue
import threading
from typing import Any, AsyncIterator, Callable

import anyio

Say = Callable[[str, Any], None]  # (event, data): one server-sent event
HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


async def relay(work: Callable[[Say], None], name: str, stopped: threading.Event | None = None) -> AsyncIterator[str]:
    """Run ``work`` on a worker thread and relay each event it says, as it says it; the stream ends when
    ``work`` returns. ``work`` says its own errors: whatever it raises ends the stream without a reason.

    When the client goes away, Starlette cancels this generator; ``stopped`` is then set, for ``work``
    to notice and stop.
    """
    events: queue.Queue[tuple[str, Any] | None] = queue.Queue()

    def run() -> None:
        try:
            work(lambda event, data: events.put((event, data)))
        finally:
            events.put(None)

    def next_event() -> tuple[str, Any] | None | bool:
        try:
            return events.get(timeout=0.25)
        except queue.Empty:
            return False  # nothing yet: give the event loop a chance to notice a closed connection

    threading.Thread(target=run, name=name, daemon=True).start()
    try:
        while (event := await anyio.to_thread.run_sync(next_event)) is not None:
            if isinstance(event, bool):
                continue
            kind, data = event
            yield f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
    finally:
        if stopped is not None:
            stopped.set()
