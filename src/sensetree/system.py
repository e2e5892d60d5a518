"""What differs between operating systems about processes: how a stop is asked for, and whether a process lives.

Windows has no SIGTERM to receive: a console program is asked to stop by Ctrl+C (SIGINT, Python's
KeyboardInterrupt), Ctrl+Break, or the console window closing, which its C runtime both delivers
as SIGBREAK (the window then gives the program about five seconds). POSIX systems send SIGTERM
(systemd, launchd, ``kill``). Everything here imports and runs on every system.
"""

from __future__ import annotations

import os
import sys
import threading
import weakref

_left_running: weakref.WeakSet[threading.Thread] = weakref.WeakSet()


def leave_running(thread: threading.Thread) -> None:
    """Note a daemon thread that may still be inside native code (a model, LanceDB) when the process ends
    (an abandoned model call, a scan that does not look at the stop flag: ``interfaces/exits.py``)."""
    _left_running.add(thread)


def threads_left_running() -> list[threading.Thread]:
    """The noted threads still running: finalizing the interpreter around one of them aborts the process."""
    return [thread for thread in list(_left_running) if thread.is_alive()]


# Asked of a process to stop, by system: SIGTERM where it exists as a request, SIGBREAK on Windows.
STOP_SIGNALS = ("SIGBREAK",) if os.name == "nt" else ("SIGTERM",)


def process_alive(pid: int) -> bool:
    """Whether a process with this id runs on this machine.

    ``os.kill(pid, 0)`` asks that on POSIX; on Windows it would send Ctrl+C (signal 0 is CTRL_C_EVENT)
    or kill the process, so the process is opened and its exit code read instead.
    """
    if pid <= 0:
        return False
    if os.name == "nt":
        return _windows_process_alive(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's: it exists
        return True
    return True


def _windows_process_alive(pid: int) -> bool:
    if sys.platform != "win32":  # only called there; the test also tells a type checker that ctypes.windll exists
        raise OSError("a Windows process is looked up on Windows only")
    import ctypes

    query_limited_information, still_active = 0x1000, 259
    kernel32 = ctypes.windll.kernel32
    handle = kernel32.OpenProcess(query_limited_information, False, pid)
    if not handle:
        return ctypes.get_last_error() == 5  # access denied: it exists
    try:
        code = ctypes.c_ulong()
        return bool(kernel32.GetExitCodeProcess(handle, ctypes.byref(code))) and code.value == still_active
    finally:
        kernel32.CloseHandle(handle)
