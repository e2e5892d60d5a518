"""Reads of the files table: one file's row, the queues of both phases, and the counts progress shows."""

from __future__ import annotations

from typing import Iterable, Iterator, Sequence

from ..paths import folds_case, is_under, name_of
from .catalog_rows import COLUMNS, FAILED, INDEXED, KEYWORD, PENDING, STATUSES, DiskState, FileRow
from .catalog_sql import UNDER, Sql, bounds

NAMES_READ = 20_000  # names read for one word at most: over 100,000 paths, half beyond ASCII, about 0.2 s


def _like_escaped(text: str) -> str:
    """``text`` as a LIKE pattern matches it (with ``ESCAPE '\\'``): its wildcards and escapes taken as written."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class Files:
    def __init__(self, sql: Sql):
        self._sql = sql

    def get(self, path: str) -> FileRow | None:
        rows = self._sql.run(f"SELECT {COLUMNS} FROM files WHERE path = ?", (path,))
        return FileRow(*rows[0]) if rows else None

    def in_root(self, root: str) -> dict[str, DiskState]:
        """path -> what was seen of it on disk, for the files of a root."""
        return {
            r[0]: DiskState(*r[1:])
            for r in self._sql.run(
                "SELECT path, kind, size, mtime, status, ctime, inode FROM files WHERE root = ?", (root,)
            )
        }

    def under(self, path: str) -> list[str]:
        """The rows at ``path`` or below it (a file, or a folder's files and blocks)."""
        return [
            r[0] for r in self._sql.run(f"SELECT path FROM files WHERE {UNDER}", bounds(path)) if is_under(r[0], path)
        ]

    def folders_named(self, name: str, limit: int = 20) -> list[str]:
        """Folders at or under a root, holding indexed files, whose own name is ``name``, whatever its case (a
        folder said in a query: "invoices in Work"); at most ``limit``. A folder above a root is none of
        them: with the root ~/Work/files, "in Work" is no folder to search. SQLite's LIKE folds ASCII letters
        only: a name differing from the folder's in the case of another letter ("über", "Über") is not found."""
        wanted = name.casefold()
        like = _like_escaped(name)
        below = "substr(path, length(root) + 1)"
        rows = self._sql.run(
            f"SELECT path, root FROM files WHERE {below} LIKE ? ESCAPE '\\' OR {below} LIKE ? ESCAPE '\\' LIMIT 5000",
            (f"%/{like}/%", f"%\\\\{like}\\\\%"),
        )  # Windows paths: an escaped backslash
        roots = [root for (root,) in self._sql.run("SELECT path FROM roots")]
        found: dict[str, None] = {root: None for root in roots if name_of(root).casefold() == wanted}
        for path, root in rows:
            sep = "\\" if "\\" in path and "/" not in path else "/"
            parts = path[len(root) :].split(sep)
            for end, part in enumerate(parts[:-1]):
                if part and part.casefold() == wanted:
                    found[root + sep.join(parts[: end + 1])] = None
            if len(found) >= limit:
                break
        return list(found)[:limit]

    def names_like(self, fragments: Sequence[str], limit: int = NAMES_READ) -> list[str]:
        """The paths below their roots (the names of the files and folders under a root, ``/Fotos/urlaub.jpg``)
        that may hold one of ``fragments``: those holding it in any case of ASCII letters (LIKE), and every one
        with a character beyond ASCII, which LIKE neither folds nor unaccents (the caller compares their
        words: a word typed that a name holds is no typo, search/spelling.py); at most ``limit``, no block."""
        below = "substr(path, length(root) + 1)"
        patterns = [f"%{_like_escaped(fragment)}%" for fragment in fragments]
        likes = "".join(f"{below} LIKE ? ESCAPE '\\' OR " for _ in patterns)
        rows = self._sql.run(
            f"SELECT {below} FROM files WHERE kind != 'block' AND ({likes}{below} GLOB ?) LIMIT ?",
            (*patterns, "*[^\x01-\x7f]*", limit),
        )
        return [r[0] for r in rows]

    def blocks(self) -> list[str]:
        return [r[0] for r in self._sql.run("SELECT path FROM files WHERE kind = 'block'")]

    def pending(self, limit: int | None = None) -> list[FileRow]:
        """Rows waiting for the keyword phase, first in line first."""
        return self._queue(f"status = '{PENDING}'", limit)

    def keyword_ready(self, limit: int | None = None) -> list[FileRow]:
        """Rows whose text is stored (OCR done) and whose vectors are not, first in line first."""
        return self._queue(f"status = '{KEYWORD}' AND ocr_wanted = 0", limit)

    def waiting_for_ocr(self, limit: int | None = None) -> list[FileRow]:
        """Rows stored without the pages only OCR can read, first in line first."""
        return self._queue(f"status = '{KEYWORD}' AND ocr_wanted > 0", limit)

    def _queue(self, condition: str, limit: int | None) -> list[FileRow]:
        """The user's last asks first, then the most recently modified: what people look for."""
        sql = f"SELECT {COLUMNS} FROM files WHERE {condition} ORDER BY priority DESC, mtime DESC, path"
        return [FileRow(*r) for r in self._sql.run(sql + (f" LIMIT {int(limit)}" if limit else ""))]

    def has_stored(self) -> bool:
        """Whether any row says its text is in the vector table."""
        return bool(self._sql.run(f"SELECT 1 FROM files WHERE status != '{PENDING}' AND chunks > 0 LIMIT 1"))

    def coverage(self, folder: str | None = None) -> tuple[int, int]:
        """(files, of them done with the semantic phase) at or under ``folder``, or in every root."""
        condition, params = ("1", ()) if folder is None else (UNDER, bounds(folder))
        if folder is not None and folds_case(folder):
            rows = self._sql.run(f"SELECT path, status FROM files WHERE {condition}", params)
            statuses = [status for p, status in rows if is_under(p, folder)]
            return len(statuses), sum(s in ("indexed", "failed") for s in statuses)
        total, done = self._sql.run(
            f"SELECT COUNT(*), COALESCE(SUM(status IN ('{INDEXED}', '{FAILED}')), 0) FROM files WHERE {condition}",
            params,
        )[0]
        return total, done

    def waiting_under(self, folder: str | None = None) -> bool:
        """Whether any file at or under ``folder`` (or anywhere) still waits for its vectors (a cheap check)."""
        condition, params = ("1", ()) if folder is None else (UNDER, bounds(folder))
        rows = self._sql.run(
            f"SELECT path FROM files WHERE status IN ('{PENDING}', '{KEYWORD}') AND {condition} LIMIT 1000", params
        )
        return any(folder is None or is_under(p, folder) for (p,) in rows)

    def noted(self, limit: int | None = None) -> list[FileRow]:
        """Files in the index with something to say: why only their context is indexed (a legacy .doc,
        an encrypted PDF), pages OCR could not read, archive members left out."""
        sql = (
            f"SELECT {COLUMNS} FROM files WHERE status != '{FAILED}' AND (error IS NOT NULL OR notes IS NOT NULL) "
            "ORDER BY path"
        )
        return [FileRow(*r) for r in self._sql.run(sql + (f" LIMIT {int(limit)}" if limit else ""))]

    def failed(self) -> list[FileRow]:
        return [
            FileRow(*r) for r in self._sql.run(f"SELECT {COLUMNS} FROM files WHERE status = '{FAILED}' ORDER BY path")
        ]

    def phase_counts(self) -> tuple[int, int, int]:
        """(files, past the keyword phase, past the semantic phase): the two progress figures."""
        total, keyword, semantic = self._sql.run(
            f"SELECT COUNT(*), COALESCE(SUM(status != '{PENDING}'), 0), COALESCE(SUM(status IN ('{INDEXED}', '{FAILED}')), 0) "
            "FROM files"
        )[0]
        return total, keyword, semantic

    def total_chunks(self) -> int:
        """Chunks stored for files past the keyword phase (a failed file's context entry aside)."""
        return self._sql.run(f"SELECT COALESCE(SUM(chunks), 0) FROM files WHERE status IN ('{KEYWORD}', '{INDEXED}')")[
            0
        ][0]

    def chunks_to_embed(self) -> int:
        return self._sql.run(f"SELECT COALESCE(SUM(chunks), 0) FROM files WHERE status = '{KEYWORD}'")[0][0]

    def counts(self) -> dict[str, int]:
        counts = {status: 0 for status in (*STATUSES, "block member")}
        for status, n in self._sql.run("SELECT status, COUNT(*) FROM files GROUP BY status"):
            counts[status] = n
        counts["block member"] = self._sql.run("SELECT COALESCE(SUM(members), 0) FROM files WHERE kind = 'block'")[0][0]
        return counts

    def with_hashes(self, hashes: Iterable[str]) -> dict[str, list[str]]:
        """content hash -> the paths of the files that hold that content (copies of one file)."""
        found: dict[str, list[str]] = {}
        hashes = list(hashes)
        for start in range(0, len(hashes), 500):
            part = hashes[start : start + 500]
            for path, content_hash in self._sql.run(
                f"SELECT path, content_hash FROM files WHERE content_hash IN ({', '.join('?' * len(part))})", part
            ):
                found.setdefault(content_hash, []).append(path)
        return found

    def all(self) -> Iterator[FileRow]:
        for row in self._sql.run(f"SELECT {COLUMNS} FROM files ORDER BY path"):
            yield FileRow(*row)
