"""Opening the engine for a command: one place that also tells what opening it found."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..engine import Engine


def open_engine(data_dir: Path | str | None, tell: Callable[[str], None]) -> Engine:
    """The engine of ``data_dir`` (default: the user's), after handing ``tell`` each notice opening it raised
    (a repair made, a settings file that could not be read)."""
    engine = Engine(data_dir)
    for notice in engine.notices.take():
        tell(notice)
    return engine
