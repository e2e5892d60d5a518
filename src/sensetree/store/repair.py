"""Damage to the chunks table (power cuts, torn writes): found by reading it back, repaired by going back
to a version that reads back whole (``storage.py`` decides when)."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path
from typing import Any

from .table import TABLE, ChunkTable


class ChunkRepair:
    def __init__(self, table: ChunkTable):
        self.table = table

    def verify(self) -> str | None:
        """None when every row of the latest version reads back whole; else what is broken.

        Reads every column of every row, so it costs a full scan: it runs when something has
        already failed, never on the way of a search.
        """
        try:
            table = self.table.db.open_table(TABLE)
        except (ValueError, FileNotFoundError):
            return None  # no table yet
        except Exception as exc:  # lance raises RuntimeError, ValueError, OSError... on torn files
            return one_line(exc)
        return _read_back(table)

    def roll_back(self) -> int | None:
        """Return to the newest version that reads back whole, and that version; None when no version
        does, and the table is then dropped (every file must be indexed again).

        A manifest that does not even open (torn, zero bytes, garbage) is moved to ``damaged/``;
        older versions keep their own manifests, so LanceDB then opens the one before it.
        """
        with self.table.write_lock:
            self.table.reopen()
            directory = self.table.directory
            # A bucket's puts are whole or absent: only a local disk tears a manifest.
            versions = directory / f"{TABLE}.lance" / "_versions" if directory else None
            table, absent = self._open()
            while (
                table is None and directory is not None and versions is not None and (manifests := _manifests(versions))
            ):
                (directory / "damaged").mkdir(exist_ok=True)
                shutil.move(str(manifests[-1]), str(directory / "damaged" / f"{time.time_ns()}-{manifests[-1].name}"))
                table, absent = self._open()
            if table is None and absent and (versions is None or not versions.is_dir()):
                return None  # there never was a table: nothing to drop
            version = None if table is None else _newest_sound_version(table)
            if version is None:
                try:
                    self.table.db.drop_table(TABLE)
                except Exception:
                    if directory is not None:
                        shutil.rmtree(directory / f"{TABLE}.lance", ignore_errors=True)
            return version

    def _open(self) -> tuple[Any, bool]:
        """The table as LanceDB opens it now, or None and whether LanceDB found no table at all."""
        try:
            return self.table.db.open_table(TABLE), False
        except (ValueError, FileNotFoundError):
            return None, True
        except Exception:
            return None, False


def _newest_sound_version(table) -> int | None:
    """The newest of the last 20 versions that reads back whole, restored if it is not the latest."""
    try:
        kept = sorted((v["version"] for v in table.list_versions()), reverse=True)
    except Exception:
        kept = []
    for version in kept[:20]:
        try:
            table.checkout(version)
        except Exception:
            continue
        if _read_back(table) is None:
            if version != kept[0]:
                table.restore(version)
            return version
    return None


def _read_back(table) -> str | None:
    """Decode every column of every row of ``table``'s checked-out version."""
    try:
        for _ in table.search().limit(None).to_batches(8192):
            pass
        table.count_rows()
    except Exception as exc:
        return one_line(exc)
    return None


def _manifests(versions: Path) -> list[Path]:
    """The table's manifests, oldest first."""
    return sorted(versions.glob("*.manifest"), key=_manifest_version)


def _manifest_version(manifest: Path) -> int:
    """Manifests are named by version, or by u64::MAX - version (LanceDB's v2 naming, newest first)."""
    number = int(manifest.stem)
    return (2**64 - 1) - number if number >= 2**63 else number


def one_line(exc: BaseException) -> str:
    """The error in one line, without the Rust source locations lance appends."""
    message = " ".join(re.sub(r",? /\S+\.rs:\d+:\d+", "", str(exc)).split()) or type(exc).__name__
    return message if len(message) <= 300 else message[:299] + "…"
