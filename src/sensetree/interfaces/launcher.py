"""The ``sensetree`` command's entry point: quiet on Ctrl+C from its first moment.

Importing the command takes a second or more (LanceDB, onnxruntime, FastAPI), and a Ctrl+C
meanwhile would print the traceback of whichever import it fell in. Until the command is
loaded, SIGINT ends the process at once with 130, as the shell expects; nothing has been done yet.
"""

from __future__ import annotations

import os
import signal


def _quit_on_interrupt(signum: int, frame: object) -> None:
    os._exit(130)


def main() -> None:
    signal.signal(signal.SIGINT, _quit_on_interrupt)
    from .cli import main as command  # the slow part

    signal.signal(signal.SIGINT, signal.default_int_handler)
    command()


if __name__ == "__main__":
    main()
