"""The assistant, answering as server-sent events."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, AsyncIterator

from fastapi import APIRouter, Depends
from fastapi.responses import StreamingResponse

from ...chat.agent import ChatError
from ...chat.sessions import AnswerStopped, ChatSessions
from ...errors import SenseTreeError
from ...operations import AskParams
from .bodies import Body
from .context import ApiContext, context
from .events import HEADERS, Say, relay
from .operations import body_model

router = APIRouter()
if TYPE_CHECKING:
    ChatBody = Body
else:
    ChatBody = body_model(AskParams)  # the question, its scope, the conversation it goes on with


@router.post(
    "/api/chat", summary="Ask the assistant; the answer streams as server-sent events", response_class=StreamingResponse
)
def chat(body: ChatBody, ctx: ApiContext = Depends(context)) -> StreamingResponse:
    return StreamingResponse(_chat_events(ctx.chats, body), media_type="text/event-stream", headers=HEADERS)


def _chat_events(chats: ChatSessions, body: ChatBody) -> AsyncIterator[str]:
    """The answer, run on a worker thread, relayed as it says it.

    When the page stops the answer, the connection closes and the relay sets ``stopped``; the worker
    then cuts off the model's stream.
    """
    stopped = threading.Event()

    def work(say: Say) -> None:
        try:
            answer = chats.ask(
                AskParams(**body.model_dump()),
                on_start=lambda conv, model: say("start", {"conversation": conv, "model": model}),
                on_token=lambda text: say("token", {"text": text}),
                on_step=lambda step: say("step", step.as_dict()),
                stopped=stopped,
            )
            say("done", answer.as_dict())
        except AnswerStopped:
            pass
        except (ChatError, SenseTreeError) as exc:
            say("error", {"message": str(exc)})
        except Exception as exc:  # the stream must end with a reason, not a dropped connection
            say("error", {"message": f"unexpected error: {type(exc).__name__}: {exc}"})

    return relay(work, "chat", stopped)
