"""How a command ends: on a signal, cleanly and at once; never with a traceback or a native abort.

The convention (README, "Stopping"):
- ``index``, ``index --watch`` and ``serve`` run until they are stopped: SIGTERM (a service
  manager, ``kill``) and SIGINT (Ctrl+C) are their normal end. They keep what is finished and
  exit 0 within about a second.
- Any other command cut short by Ctrl+C exits 130 (typer's), by SIGTERM as the signal ends it
  (143 in a shell), without a traceback.

A model call abandoned on a stop may still be inside onnxruntime when the command returns.
Finalizing the interpreter stops such a daemon thread by unwinding its C++ frames, and the
C++ runtime aborts ("terminate called without an active exception", exit 134). Finalizing also
takes seconds on a busy machine (LanceDB's runtime, the models). So a process that was stopped
by a signal, or has such a thread left (``system.leave_running`` notes them), flushes its output and
ends with ``os._exit``: everything worth keeping is committed and closed by then (the command
closes its engine itself), and the abandoned call's result was going to be dropped anyway.
"""

from __future__ import annotations

import errno
import logging
import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Any, Iterator

from .. import system
from ..system import threads_left_running

DISK_REFUSED = 4  # the exit code when the disk refused a write: full, read-only, not ours (README, "Exit codes")
DEBUG_ENV = "SENSETREE_DEBUG"  # set to 1: an unexpected error shows its traceback
# Ctrl+C, and the system's stop request (SIGTERM; SIGBREAK on Windows: Ctrl+Break, the console closing)
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", *system.STOP_SIGNALS) if hasattr(signal, name))
_signalled = threading.Event()  # a stop signal came: the process ends without finalizing


@contextmanager
def stopped_by_signals(stop: threading.Event, interrupt: bool = True) -> Iterator[None]:
    """SIGINT and SIGTERM set ``stop`` meanwhile; with ``interrupt``, the first one also raises
    KeyboardInterrupt in the main thread, which ends any phase at once (the scan does not look at
    ``stop``); a second one while stopping changes nothing. The handlers before are put back after.

    Outside the main thread (a command run by a test's runner in a thread) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handle(signum: int, frame: object) -> None:
        _signalled.set()
        if stop.is_set() or not interrupt:
            stop.set()
            return
        stop.set()
        raise KeyboardInterrupt

    def unraisable(report: Any) -> None:
        # The KeyboardInterrupt can land inside code Python cannot pass it out of (a weakref's callback, a
        # __del__): it would print "Exception ignored" with a traceback. The stop flag is already set, and
        # every phase heeds it: nothing is lost by dropping the report.
        if not (stop.is_set() and getattr(report, "exc_type", None) is KeyboardInterrupt):
            hook_before(report)

    hook_before = sys.unraisablehook
    before = {sent: signal.signal(sent, handle) for sent in STOP_SIGNALS}
    sys.unraisablehook = unraisable
    try:
        yield
    finally:
        sys.unraisablehook = hook_before
        for sent, handler in before.items():
            signal.signal(sent, handler)


def end_process(code: int | str | None) -> None:
    """Exit with ``code`` (as ``sys.exit`` takes it); without finalizing the interpreter after a stop
    signal or while a thread is still inside native code (see the module's note)."""
    if not _signalled.is_set() and not threads_left_running():
        raise SystemExit(code)
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            pass
    os._exit(code or 0)


def disk_refusal(error: BaseException) -> str | None:
    """One line saying why the disk refused a write (full, read-only, no permission), or None for another error.

    SQLite and LanceDB say it in their own words; the line also says what was kept.
    """
    text = str(error)
    full = (
        (isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT))
        or "No space left on device" in text
        or "database or disk is full" in text
    )
    if full:
        where = f" ({error.filename})" if isinstance(error, OSError) and error.filename else ""
        return (
            f"the disk is full{where}: stopped; everything finished is kept. Free some space and run the "
            "command again; search and status keep working meanwhile"
        )
    if (
        (isinstance(error, OSError) and error.errno == errno.EROFS)
        or "readonly database" in text
        or "Read-only file system" in text
    ):
        return (
            "the data dir is on a read-only disk: this command changes the index; status, search, tree, "
            "ask and queue still work"
        )
    if isinstance(error, OSError) and error.errno in (errno.EACCES, errno.EPERM):
        return f"permission denied: {error.filename or text}; this command needs to write there"
    return None


def report_error(error: Exception, say) -> int:
    """The exit code of a command that failed on ``error``, after telling the user in one line why
    (``say``); the traceback only with SENSETREE_DEBUG=1, where it is re-raised."""
    if os.environ.get(DEBUG_ENV) == "1":
        raise error
    refusal = disk_refusal(error)
    if refusal is not None:
        say(refusal)
        return DISK_REFUSED
    say(
        f"unexpected error: {type(error).__name__}: {error} (run again with {DEBUG_ENV}=1 to see where; "
        "please report it)"
    )
    return 1
