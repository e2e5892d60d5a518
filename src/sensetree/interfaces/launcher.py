"""The ``sensetree`` command's entry point: quiet on Ctrl+C from its first moment, in the command
and in the worker processes it starts.

Importing the command takes a second or more (LanceDB, onnxruntime, FastAPI), and a Ctrl+C
meanwhile would print the traceback of whichever import it fell in. Until the command is
loaded, SIGINT ends the process at once with 130, as the shell expects; nothing has been done yet.
"""

from __future__ import annotations

import os
import signal
import sys

if __name__ == "__mp_main__":
    # A worker process of the command: multiprocessing's spawn imports this module first, before the
    # worker's own code. A Ctrl+C is the command's to handle (it stops its workers): the worker ignores
    # it from here on. Where signal masks exist the worker starts with it blocked already
    # (ingest/workers.py); on Windows, where a Ctrl+C reaches every process of the console, this is
    # what keeps a worker that is still starting from printing a KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if os.environ.get("SENSETREE_DEBUG") != "1":  # as exits.DEBUG_ENV is read (not imported: it is slow)
        # A worker that fails outside a task (it was still starting when the command stopped and took
        # its semaphores with it) is reported by the command itself, in one line ("worker processes
        # could not start"); its own traceback would only reach the terminal. SENSETREE_DEBUG=1 shows it.
        sys.excepthook = lambda kind, value, traceback: None


def _quit_on_interrupt(signum: int, frame: object) -> None:
    os._exit(130)


def main() -> None:
    signal.signal(signal.SIGINT, _quit_on_interrupt)
    from .cli import main as command  # the slow part

    signal.signal(signal.SIGINT, signal.default_int_handler)
    command()


if __name__ == "__main__":
    main()
