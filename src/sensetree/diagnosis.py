"""What this install has and lacks, and getting it (``doctor``, ``models prepare``): the models' install
state (``models/install.py``) as the engine's answer. Light on purpose: ``sensetree doctor`` runs without
opening the data dir's stores (they may be what is wrong), and loads no model."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from .answers import Diagnosis
from .models import install

# The states a model is in, for an interface to show each its own way.
READY, FIRST_USE, FETCH, MISSING, ENDPOINT, OFF = (
    install.READY,
    install.FIRST_USE,
    install.FETCH,
    install.MISSING,
    install.ENDPOINT,
    install.OFF,
)


def diagnosis(data_dir: Path | str | None) -> Diagnosis:
    """What this install has per model role, what is missing and how to get it, where things live; it reads
    the settings of ``data_dir`` only."""
    return Diagnosis(**install.diagnose(Path(data_dir) if data_dir is not None else None))


def prepare_models(data_dir: Path | str | None, say: Callable[[str], None]) -> None:
    """Fetch and build now the models the first search or question would; ``ModelError`` when one cannot be had."""
    install.prepare(Path(data_dir) if data_dir is not None else None, say)
