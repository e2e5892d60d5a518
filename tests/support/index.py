"""What an index holds, as tests check it after indexing: through the engine's public operations
(``sensetree``: a file's detail, status, the queue, a folder's listing) wherever one answers; and,
for what no operation tells (which chunks have vectors, the chunks table's own rows and versions),
``stores``: the catalog and the chunks table opened by themselves on the data dir, as the store's
own unit tests open them, never reached through the engine."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, NamedTuple

from sensetree import BrowseParams, Engine, Entry, FileDetail, FileParams, QueueParams, StatusParams

if TYPE_CHECKING:
    from sensetree.store.catalog import Catalog
    from sensetree.store.chunks import ChunkStore


def detail(engine: Engine, path: str | Path) -> FileDetail:
    """What the index says of one file or folder on disk (``sensetree file``): status None when it has no entry."""
    found: FileDetail = engine.run(FileParams(os.path.normpath(str(path))))
    return found


def status(engine: Engine, path: str | Path) -> str | None:
    """The file's status in the index (indexed, keyword, pending, failed, block), None when it has no entry."""
    return detail(engine, path).status


def texts(engine: Engine, path: str | Path) -> list[str]:
    """The text of each chunk of a file, in order, as the index stores it (its head included)."""
    return [chunk["text"] for chunk in detail(engine, path).chunks]


def status_counts(engine: Engine) -> dict[str, int]:
    """Files per status (``sensetree status``)."""
    found: dict[str, int] = engine.run(StatusParams()).counts
    return found


def chunk_count(engine: Engine) -> int:
    """The chunks in the index (``sensetree status``)."""
    found: int = engine.run(StatusParams()).chunks
    return found


def failed(engine: Engine) -> list[str]:
    """The failed files, as the queue lists them."""
    return [row.path for row in engine.run(QueueParams()).failed]


def entry(engine: Engine, path: str | Path) -> Entry:
    """The entry of ``path`` in its folder's listing (``sensetree browse``): a block's ``members`` too."""
    path = os.path.normpath(str(path))
    return next(e for e in engine.run(BrowseParams(os.path.dirname(path))).entries if e.path == path)


class Stores(NamedTuple):
    catalog: Catalog
    chunks: ChunkStore


@contextmanager
def catalog(data_dir: str | Path, write: bool = False) -> Iterator[Catalog]:
    """The catalog of ``data_dir``, opened by itself (no chunks table: cheap enough to poll); read-only
    unless a fault test must ``write`` a row or a state as an older version or a crash left it."""
    from sensetree.store.catalog import Catalog

    opened = Catalog(Path(data_dir) / "catalog.sqlite", read_only=not write)
    try:
        yield opened
    finally:
        opened.close()


@contextmanager
def stores(data_dir: str | Path) -> Iterator[Stores]:
    """The catalog and the chunks table of ``data_dir``, opened by themselves (another connection than an
    engine's): for a test that checks what the stages wrote where no operation tells it."""
    from sensetree.store.catalog import Catalog
    from sensetree.store.chunks import ChunkStore

    catalog = Catalog(Path(data_dir) / "catalog.sqlite", read_only=True)
    try:
        yield Stores(catalog, ChunkStore(Path(data_dir) / "lancedb"))
    finally:
        catalog.close()


def catalog_row(engine: Engine, path: str | Path) -> Any:
    """The catalog's own row of ``path`` (``store.catalog_rows.FileRow``), None when it has none: for a
    path ``file`` cannot show (gone from disk, an archive's member) or a field it does not (content hash)."""
    with catalog(engine.data_dir) as opened:
        return opened.files.get(os.path.normpath(str(path)))


def stored_chunks(engine: Engine, path: str | Path) -> list[dict[str, Any]]:
    """The chunks table's rows of ``path``, for a path no longer on disk."""
    with stores(engine.data_dir) as stored:
        return stored.chunks.queries.chunks_of(os.path.normpath(str(path)))


def embedded_chunks(engine: Engine) -> int:
    """How many chunks have a vector (the table's own count; status counts files, not chunks)."""
    with stores(engine.data_dir) as stored:
        return stored.chunks.queries.count_embedded()


def catalog_rows(engine: Engine) -> list[Any]:
    """Every row of the catalog (``store.catalog_rows.FileRow``), as the stages left them."""
    with catalog(engine.data_dir) as opened:
        return list(opened.files.all())


def table_rows(engine: Engine, *columns: str) -> list[dict[str, Any]]:
    """Every row of the chunks table, with ``columns`` ([] before there is a table): for the invariants
    of the store itself (no duplicate chunk, no orphan vector, which model made each vector)."""
    with stores(engine.data_dir) as stored:
        handle = stored.chunks.table.handle
        return [] if handle is None else handle.search().select(list(columns)).limit(None).to_list()


def catalog_under(engine: Engine, folder: str | Path) -> list[str]:
    """The catalog's paths under ``folder``: an archive's members among them, which are no paths on disk."""
    with catalog(engine.data_dir) as opened:
        return list(opened.files.under(str(folder)))
