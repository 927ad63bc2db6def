"""Whether anything was committed to a store since a moment, told without a query.

SQLite's own readers tell whether their page cache still holds from the
wal-index header, in the shared memory of a WAL database (the store's ``-shm``
file): every commit writes that header anew, its change counter moved, and the
first of its two copies last (SQLite's file format, "The WAL-Index Format":
https://www.sqlite.org/walformat.html).  A reader that keeps the header it
saw when it last asked ``PRAGMA data_version`` can skip the question, and the
read lock and the code behind it, for as long as the header is the same.

The header is read before the question is asked, so a commit in between shows
as a change the next time: never the other way round.  The file stays while a
connection to the store is open (SQLite deletes it only with the last one), so
a watch lives as long as the connection it was opened beside.
"""

from __future__ import annotations

import mmap

__all__ = ["CommitWatch"]

HEADER_BYTES = 48  # the wal-index header's first copy


class CommitWatch:
    """The wal-index header of the store at ``path``, read from its ``-shm`` file as it stands."""

    def __init__(self, path: str) -> None:
        self._map: mmap.mmap | None = None
        try:
            with open(path + "-shm", "rb") as shm:
                self._map = mmap.mmap(shm.fileno(), HEADER_BYTES, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            pass  # no header to read (a store opened immutable, not in WAL mode, or -shm not made yet)

    def mark(self) -> bytes | None:
        """The header now, or None where there is none: then only SQLite can tell."""
        return None if self._map is None else self._map[:HEADER_BYTES]

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None
