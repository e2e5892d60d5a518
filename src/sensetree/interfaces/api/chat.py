"""The assistant, answering as server-sent events."""

from __future__ import annotations

import json
import queue
import threading
from typing import Any, AsyncIterator

import anyio
from fastapi import APIRouter, Depends
from fastapi.responses import StreamingResponse

from ...chat.agent import ChatError
from ...chat.sessions import AnswerStopped, ChatSessions
from ...errors import SenseTreeError
from ...operations import AskParams
from .context import ApiContext, context
from .operations import body_model

router = APIRouter()
ChatBody = body_model(AskParams)  # the question, its scope, the conversation it goes on with


@router.post("/api/chat", summary="Ask the assistant; the answer streams as server-sent events",
             response_class=StreamingResponse)
def chat(body: ChatBody, ctx: ApiContext = Depends(context)) -> StreamingResponse:
    return StreamingResponse(_chat_events(ctx.chats, body), media_type="text/event-stream",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


async def _chat_events(chats: ChatSessions, body: ChatBody) -> AsyncIterator[str]:
    """Run the answer on a worker thread and relay what it says, as it says it.

    When the page stops the answer, the connection closes and Starlette cancels this generator;
    ``finally`` then tells the worker, which cuts off the model's stream.
    """
    events: queue.Queue[tuple[str, Any] | None] = queue.Queue()
    stopped = threading.Event()

    def work() -> None:
        try:
            answer = chats.ask(body.question, body.scope or None, body.conversation,
                               on_start=lambda conv, model: events.put(("start", {"conversation": conv, "model": model})),
                               on_token=lambda text: events.put(("token", {"text": text})),
                               on_step=lambda step: events.put(("step", step.as_dict())), stopped=stopped)
            events.put(("done", answer.as_dict()))
        except AnswerStopped:
            pass
        except (ChatError, SenseTreeError) as exc:
            events.put(("error", {"message": str(exc)}))
        except Exception as exc:  # the stream must end with a reason, not a dropped connection
            events.put(("error", {"message": f"unexpected error: {type(exc).__name__}: {exc}"}))
        finally:
            events.put(None)

    def next_event() -> tuple[str, Any] | None | bool:
        try:
            return events.get(timeout=0.25)
        except queue.Empty:
            return False  # nothing yet: give the event loop a chance to notice a closed connection

    threading.Thread(target=work, name="chat", daemon=True).start()
    try:
        while (event := await anyio.to_thread.run_sync(next_event)) is not None:
            if event is False:
                continue
            name, data = event
            yield f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
    finally:
        stopped.set()
