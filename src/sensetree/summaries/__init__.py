"""Whole files and folders for the assistant: read in parts that fit the chat model's context window,
each part summarised (noting its pages), then the whole from those notes (``work.py``); the parts
themselves are cut in ``parts.py``, and ``model.py`` opens the chat model the settings name."""

from .model import ChatModel, open_chat_model
from .parts import TextPart, split_parts
from .work import Summariser

__all__ = ["ChatModel", "Summariser", "TextPart", "open_chat_model", "split_parts"]
