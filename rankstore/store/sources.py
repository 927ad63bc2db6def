"""The files builds took whole (``source_files``): what lets a build of remote sources resume.

A build of files at URLs records each file once its pages (or, for a web
graph, the whole graph) are committed: its name (the URL), size, checksum of
the bytes as they came (xxh3-64), the build and when, and how many of its
records or lines could not be read.  A later build of the same sources skips
the files recorded here; a build cut short is continued by the next run of
the same sources (:meth:`SourceFiles.interrupted_build`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

from .base import Part

__all__ = ["SourceFiles", "TakenFile"]


@dataclass(frozen=True)
class TakenFile:
    """A file a build took whole: its name (URL), size in bytes, checksum (``xxh3_64:`` and hex) of its bytes
    as they came, and its records or lines that could not be read (reported when it was read).  ``build``
    and ``taken_at`` are the store's, when read back."""

    name: str
    size: int
    checksum: str
    unreadable: int = 0
    build: int | None = None
    taken_at: str | None = None


class SourceFiles(Part):
    """Part of :class:`~rankstore.store.Store`: the files builds took whole."""

    def record_taken_files(self, files: Sequence[TakenFile], build_id: int) -> None:
        """Note files as taken whole by a build (after their data is committed), in one transaction."""
        if not files:
            return
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with self.transaction():
            self.db.executemany(
                "INSERT OR REPLACE INTO source_files (name, size, checksum, build, taken_at, unreadable)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [(item.name, item.size, item.checksum, build_id, now, item.unreadable) for item in files],
            )

    def taken_files(self, names: Sequence[str]) -> set[str]:
        """Which of these files (by name) a build took whole before."""
        taken: set[str] = set()
        for start in range(0, len(names), 500):
            chunk = list(names[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = self.db.execute(f"SELECT name FROM source_files WHERE name IN ({marks})", chunk)
            taken.update(row[0] for row in rows)
        return taken

    def files_of_builds(self) -> dict[int, list[TakenFile]]:
        """{build id: the files it took whole, in the order it took them}."""
        found: dict[int, list[TakenFile]] = {}
        for name, size, checksum, unreadable, build, taken_at in self.db.execute(
            "SELECT name, size, checksum, unreadable, build, taken_at FROM source_files ORDER BY build, rowid"
        ):
            found.setdefault(build, []).append(TakenFile(name, size, checksum, unreadable, build, taken_at))
        return found

    def interrupted_build(self, sources: Sequence[str]) -> int | None:
        """The newest build, if it was cut short ('interrupted', or still 'running'), named these same sources
        and had taken a file whole: the build a new run of them continues."""
        row = self.db.execute("SELECT id, status, sources FROM builds ORDER BY id DESC LIMIT 1").fetchone()
        if row is None or row[1] not in ("running", "interrupted") or json.loads(row[2]) != list(sources):
            return None
        taken = self.db.execute("SELECT 1 FROM source_files WHERE build = ? LIMIT 1", (row[0],)).fetchone()
        return row[0] if taken else None
