"""Indexing that stays out of the way: low priority, and a pace set by the battery.

The indexing thread runs at low priority (niceness 10 on Linux, the background band on macOS,
below normal on Windows), and so do the worker processes (niceness 10, or Windows' below-normal
class), so the user's own work comes first; searches, served on other threads, keep theirs. On battery, ``indexing.on_battery`` says what happens:

- ``pause``: nothing is indexed until the charger is back;
- ``slow`` (the default): indexing goes on, resting three times as long as it worked, so it
  uses about a quarter of what it would; files still become findable by keyword, just later;
- ``run``: as on the charger.

``slow`` is the default because a laptop that is rarely plugged in would otherwise never get
its new files indexed, while full speed drains a battery in an afternoon of embedding.
The state and why are in ``Progress.paused`` / ``Progress.slowed`` and, for ``status`` in
another process, in the catalog (``PACE_META``).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable

from .progress import Progress

log = logging.getLogger(__name__)

ON_BATTERY = ("pause", "slow", "run")
THREAD_PRIORITY_BELOW_NORMAL = -1  # Windows' SetThreadPriority level for the indexing thread
NICE = 10  # added to the niceness of the indexing thread and the workers (Linux, macOS)
SLOW_REST = 3.0  # seconds of rest per second of work on battery with ``slow``
MAX_REST = 30.0  # the longest single rest: a long batch does not put indexing to sleep for minutes
POWER_CHECK_SECONDS = 30.0  # how often the battery sensor is read
POWER_ENV = "SENSETREE_POWER"  # mains or battery: overrides the sensor
PACE_META = "indexing_pace"  # {"state", "reason", "at"}: for `status` in another process


@dataclass(frozen=True)
class Power:
    """What the battery sensor says."""

    on_battery: bool
    percent: float | None = None


def read_power() -> Power | None:
    """The machine's power source from psutil's battery sensor; None without a battery or a sensor.

    ``SENSETREE_POWER=mains`` (or ``battery``) overrides a sensor that is wrong: a virtual machine
    whose host reports a battery, a laptop docked on a supply the sensor does not see."""
    told = os.environ.get(POWER_ENV, "").strip().lower()
    if told in ("mains", "battery"):
        return Power(on_battery=told == "battery")
    try:
        import psutil

        battery = psutil.sensors_battery()
    except Exception:  # no sensor support on this platform, or it failed: treat as mains power
        return None
    if battery is None:
        return None
    return Power(on_battery=battery.power_plugged is False, percent=battery.percent)


def lower_priority(thread_only: bool = False) -> str:
    """Lower the priority of this process, or of the calling thread where the system allows
    (Linux threads have their own niceness); returns what was done, for the log."""
    try:
        if sys.platform == "win32" and thread_only:
            import ctypes

            kernel32 = ctypes.windll.kernel32
            kernel32.SetThreadPriority(kernel32.GetCurrentThread(), THREAD_PRIORITY_BELOW_NORMAL)
            return "thread below normal"
        if sys.platform == "win32":
            import psutil

            psutil.Process().nice(psutil.BELOW_NORMAL_PRIORITY_CLASS)
            return "below-normal priority class"
        if thread_only and sys.platform.startswith("linux"):
            native = threading.get_native_id()
            current = os.getpriority(os.PRIO_PROCESS, native)
            if current < NICE:
                os.setpriority(os.PRIO_PROCESS, native, NICE)
            return f"thread niceness {max(current, NICE)}"
        if thread_only and sys.platform == "darwin" and hasattr(os, "PRIO_DARWIN_THREAD"):
            os.setpriority(os.PRIO_DARWIN_THREAD, 0, os.PRIO_DARWIN_BG)
            return "thread in the background band"
        if thread_only:  # where a thread cannot be lowered alone, the process stays as it is
            return "unchanged (no per-thread priority here)"
        current = os.nice(0)
        if current < NICE:
            os.nice(NICE - current)
        return f"process niceness {max(current, NICE)}"
    except Exception as exc:  # never a reason to stop indexing
        log.debug("priority left as it was: %s", exc)
        return f"unchanged ({type(exc).__name__})"


class Pace:
    """Between two steps of indexing: rest or wait as the power source and ``on_battery`` say."""

    def __init__(
        self,
        on_battery: str = "slow",
        power: Callable[[], Power | None] = read_power,
        check_seconds: float = POWER_CHECK_SECONDS,
        record: Callable[[dict], None] | None = None,
    ):
        if on_battery not in ON_BATTERY:
            raise ValueError(f"indexing.on_battery takes {' or '.join(ON_BATTERY)}, not {on_battery!r}")
        self.on_battery = on_battery
        self._power = power
        self._check_seconds = check_seconds
        self._record = record or (lambda state: None)
        self._checked_at = -float("inf")
        self._state = ("run", "")
        self._working_since = time.monotonic()

    def state(self) -> tuple[str, str]:
        """('run' | 'slow' | 'pause', why), from the sensor read at most every ``check_seconds``."""
        now = time.monotonic()
        if now - self._checked_at >= self._check_seconds:
            self._checked_at = now
            power = self._power()
            if power is None or not power.on_battery or self.on_battery == "run":
                state = ("run", "")
            else:
                charge = f" at {power.percent:.0f} %" if power.percent is not None else ""
                verb = "paused" if self.on_battery == "pause" else "slowed to a quarter"
                state = (
                    self.on_battery,
                    f"on battery{charge}: indexing {verb} (indexing.on_battery = "
                    f"{self.on_battery}) until the charger is back",
                )
            if state != self._state:
                log.info("indexing pace: %s", state[1] or "full speed")
            if state != self._state or state[0] != "run":  # kept fresh while it lasts
                self._record({"state": state[0], "reason": state[1], "at": time.time()})
            self._state = state
        return self._state

    def between_steps(self, progress: Progress, stop: threading.Event, notify: Callable[[Progress], None]) -> None:
        """Called before each step: returns at once at full speed; on battery rests (``slow``) or
        waits for the charger (``pause``); returns within a fraction of a second of ``stop``."""
        state, reason = self.state()
        if state == "slow":
            rest = min(MAX_REST, SLOW_REST * (time.monotonic() - self._working_since))
            if progress.slowed != reason:
                progress.slowed = reason
                notify(progress)
            stop.wait(rest)
        elif state == "pause":
            progress.paused = reason
            notify(progress)
            while not stop.is_set() and self.state()[0] == "pause":
                stop.wait(min(1.0, self._check_seconds))
            progress.paused = ""
            notify(progress)
        elif progress.slowed:
            progress.slowed = ""
            notify(progress)
        self._working_since = time.monotonic()


def recorded_pace(value: str | None, fresh_seconds: float) -> dict | None:
    """The pace an indexing process recorded (``PACE_META``) when it is recent and not full speed."""
    try:
        pace = json.loads(value) if value else None
    except ValueError:
        return None
    if not isinstance(pace, dict) or pace.get("state") == "run":
        return None
    return pace if time.time() - float(pace.get("at", 0)) < fresh_seconds else None
