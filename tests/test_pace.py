"""Indexing stays out of the way (ingest/pace.py): low priority, and the battery's rules, with the
power source injected."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from sensetree.ingest.indexer import Indexer
from sensetree.ingest.options import index_options
from sensetree.ingest.pace import SLOW_REST, Pace, Power, read_power
from sensetree.ingest.progress import Progress
from sensetree.ingest.sense import SenseWriter
from sensetree.ingest.workers import WorkerPool
from sensetree.operations import SearchParams
from sensetree.operations import SetParams, StatusParams
from tests.support.index import status_counts

ON_BATTERY = Power(on_battery=True, percent=41.0)
ON_MAINS = Power(on_battery=False, percent=80.0)


class Supply:
    """A power source that the test switches."""

    def __init__(self, power: Power | None):
        self.power = power

    def __call__(self) -> Power | None:
        return self.power


def test_on_mains_or_without_a_battery_indexing_never_waits():
    for power in (ON_MAINS, None):
        pace, progress = Pace("pause", Supply(power), check_seconds=0), Progress()
        started = time.monotonic()
        pace.between_steps(progress, threading.Event(), lambda p: None)
        assert time.monotonic() - started < 0.5 and not progress.paused and not progress.slowed
    pace = Pace("run", Supply(ON_BATTERY), check_seconds=0)
    assert pace.state() == ("run", "")


def test_pause_waits_for_the_charger_and_says_why():
    supply, recorded, seen = Supply(ON_BATTERY), [], []
    pace, progress = Pace("pause", supply, check_seconds=0.05, record=recorded.append), Progress()
    threading.Timer(0.5, lambda: setattr(supply, "power", ON_MAINS)).start()
    started = time.monotonic()
    pace.between_steps(progress, threading.Event(), lambda p: seen.append(p.paused))
    assert time.monotonic() - started >= 0.45
    assert seen[0] == "on battery at 41 %: indexing paused (indexing.on_battery = pause) until the charger is back"
    assert progress.paused == "" and recorded[0]["state"] == "pause" and recorded[-1]["state"] == "run"


def test_a_stop_ends_the_pause_at_once():
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    started = time.monotonic()
    Pace("pause", Supply(ON_BATTERY), check_seconds=10).between_steps(Progress(), stop, lambda p: None)
    assert time.monotonic() - started < 2


def test_slow_rests_three_times_as_long_as_it_worked():
    pace, progress = Pace("slow", Supply(ON_BATTERY), check_seconds=0), Progress()
    time.sleep(0.2)  # work
    started = time.monotonic()
    pace.between_steps(progress, threading.Event(), lambda p: None)
    assert time.monotonic() - started >= SLOW_REST * 0.2 * 0.9
    assert "slowed to a quarter" in progress.slowed and progress.as_dict()["slowed"] == progress.slowed
    pace._power = Supply(ON_MAINS)
    pace.between_steps(progress, threading.Event(), lambda p: None)
    assert progress.slowed == ""


def test_the_indexing_thread_alone_runs_at_low_priority():
    script = ("import os, threading; from sensetree.ingest.pace import lower_priority\n"
              "base = os.getpriority(os.PRIO_PROCESS, threading.get_native_id()); seen = {}\n"
              "def index(): seen['how'] = lower_priority(thread_only=True); "
              "seen['nice'] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())\n"
              "t = threading.Thread(target=index); t.start(); t.join()\n"
              "print(base, seen['nice'], os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))")
    if not sys.platform.startswith("linux"):
        pytest.skip("per-thread niceness is Linux's")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    base, indexing, searching = map(int, out)  # the test may itself run niced: compare with where it started
    assert indexing == max(base, 10) and searching == base, out  # the searches' threads untouched


@pytest.mark.slow  # starts worker processes, and indexes
def test_workers_are_niced_and_a_paused_run_shows_in_status_then_resumes(tmp_path, write_tree, make_engine):

    pool = WorkerPool(1)
    try:
        assert pool.submit(_niceness).result(timeout=60) >= 10
    finally:
        pool.stop()

    write_tree(tmp_path / "tree", {"notes.txt": "The plum harvest starts in August. " * 20})
    with make_engine(tmp_path / "data", tmp_path / "tree", index=False) as engine:
        engine.run(SetParams("indexing.on_battery", "pause"))
        engine.scan()
        supply, stop = Supply(ON_BATTERY), threading.Event()
        indexer = Indexer(engine.catalog, engine.store, lambda: engine.models.embedder, SenseWriter(None),
                          index_options(engine.settings), engine.pool, power=supply)
        indexer.pace._check_seconds = 0.1
        progress, seen = Progress(), threading.Event()
        run = threading.Thread(target=indexer.run, args=(progress,), kwargs={"on_update": lambda p: p.paused and seen.set(),
                                                                           "stop": stop})
        run.start()
        assert seen.wait(30)
        time.sleep(0.5)
        assert status_counts(engine)["pending"] == 1, "nothing is indexed while paused"
        assert "indexing paused" in engine.run(StatusParams()).as_dict()["pace"]["reason"]
        if sys.platform.startswith("linux"):  # the indexing runs on a thread of its own: the caller's is untouched
            assert os.getpriority(os.PRIO_PROCESS, run.native_id) == os.nice(0)
        supply.power = ON_MAINS
        run.join(timeout=120)
        assert not run.is_alive()
        assert status_counts(engine)["indexed"] == 1 and engine.run(StatusParams()).as_dict()["pace"] is None
        assert engine.run(SearchParams("plum harvest", rerank=False)).results


def _niceness() -> int:
    import os

    return os.nice(0)


def test_the_power_source_can_be_told_where_the_sensor_is_wrong(monkeypatch):
    monkeypatch.setenv("SENSETREE_POWER", "battery")
    assert read_power() == Power(on_battery=True)
    monkeypatch.setenv("SENSETREE_POWER", "mains")
    assert read_power() == Power(on_battery=False)
