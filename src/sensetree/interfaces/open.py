"""Opening the engine for a command: one place that also tells what opening it found."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..config import Settings, default_data_dir, place

if TYPE_CHECKING:
    from ..engine import Engine


def open_engine(
    data_dir: Path | str | None, tell: Callable[[str], None], index: str | None = None, read_only: bool = False
) -> Engine:
    """The engine of ``data_dir`` (default: the user's), after handing ``tell`` each notice opening it raised
    (a repair made, a settings file that could not be read). ``read_only``: a search node over ``index``
    (default: the index the data dir's settings name)."""
    if read_only and index is None:
        index = _own_index(Path(data_dir).expanduser() if data_dir else default_data_dir())
    from ..engine import Engine  # loaded by the commands that open it, not by every command

    engine = Engine(data_dir, index=index)
    for notice in engine.notices.take():
        tell(notice)
    return engine


def _own_index(data_dir: Path) -> str:
    """The index a data dir's settings name: ``storage.uri``, else its own folder."""
    return place(Settings.load(data_dir)["storage.uri"], data_dir) or str(data_dir / "lancedb")
