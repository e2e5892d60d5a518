"""The HTTP API under ``/api/`` and the web page, over one engine (``sensetree serve``).

``app.create_app`` assembles it: the guard (``security``) in front of every /api/ route, then
one router per concern (the engine's operations, opening files, chat), all sharing one ``ApiContext``.
"""

from .app import create_app
from .security import ServerOptions, is_loopback, load_token

__all__ = ["ServerOptions", "create_app", "is_loopback", "load_token"]
