"""Site links loaded as such: the edges of a Common Crawl domain graph, whose vertices are sites.

A domain graph names no page and no host, so its edges have no place in the
page graph; they are kept at their own level, in ``site_links``, as the
in-link CSR of the sites (row ``s``, site id ``s + 1``, lists the sites
linking to it), in blocks of at most ``BLOCK_LINKS`` links and
``BLOCK_MAX_PAGES`` sites like ``in_links`` (a site with more links has a
block of its own).  Each site's sources are sorted and packed as varint gaps
(:mod:`.gaps`): ``offsets`` holds uint32 byte offsets into ``sources``, one
per site of the block and one more, native-endian as ``in_links``'s arrays.
A site's links to itself are left out and each pair is kept once: a
domain-graph edge is one link.  The table is replaced whole by each load (one
transaction), so a reader sees one graph's edges or the other's.  ``meta``
keeps how many sites the edges were numbered against (``site_links_sites``):
sites numbered later have no row and no loaded link; and how many links the
table holds (``site_links``).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import NamedTuple, Protocol

import numpy as np

from . import gaps
from .base import Part
from .errors import StoreError
from .graph import BLOCK_LINKS, BLOCK_MAX_PAGES, InLinks

__all__ = ["InLinkPart", "InLinkSource", "SiteDegrees", "SiteLinks"]

READ_THREADS = 2  # threads that unpack a graph's blocks as they are read


class InLinkPart(NamedTuple):
    """Rows ``first``, ``first + 1``... of an in-link CSR: each row's sources ascending, no repeats."""

    first: int  # the node index of the first row
    indptr: np.ndarray  # int64, from 0
    indices: np.ndarray  # int32 node indices


class SiteDegrees(NamedTuple):
    """Each site's loaded links in and out (int32, by site index), counted without keeping the links."""

    in_degree: np.ndarray
    out_degree: np.ndarray


class InLinkSource(Protocol):
    """An in-link CSR of ``n`` nodes given part by part (:class:`rankstore.linksort.LinkSorter`)."""

    n: int

    def parts(self) -> Iterator[InLinkPart]: ...


def _block_rows(part: InLinkPart) -> Iterator[tuple[int, int, bytes, bytes]]:
    """``site_links`` rows of a part: (first, sites, offsets, packed sources), cut as ``in_links``'s blocks."""
    indptr = part.indptr
    n = len(indptr) - 1
    first = 0
    while first < n:
        base = int(indptr[first])
        stop = int(np.searchsorted(indptr, base + BLOCK_LINKS, side="right")) - 1
        stop = min(max(stop, first + 1), first + BLOCK_MAX_PAGES, n)
        end = int(indptr[stop])
        packed = gaps.pack(indptr[first : stop + 1] - base, part.indices[base:end])
        yield part.first + first, stop - first, packed.offsets.tobytes(), packed.data
        first = stop


class SiteLinks(Part):
    """The site links a domain graph brings; part of :class:`~rankstore.store.Store`."""

    def replace(self, parts: Iterable[InLinkPart], sites: int) -> int:
        """Replace the store's loaded site links with the in-link CSR given as parts (in order of their first
        rows, none overlapping; site indices below ``sites``, no self-links).  Returns the links kept.  Call
        inside a write transaction: the table is empty between the delete and the inserts."""
        self.db.execute("DELETE FROM site_links")
        links = 0
        for part in parts:
            links += len(part.indices)
            self.db.executemany(
                "INSERT INTO site_links (first, sites, offsets, sources) VALUES (?, ?, ?, ?)", _block_rows(part)
            )
        self.db.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            [("site_links_sites", str(sites)), ("site_links", str(links))],
        )
        return links

    def links(self, sites: int) -> InLinks:
        """The loaded site links as the in-link CSR of ``sites`` sites (those numbered since have none).

        The sources are unpacked into one array allocated once (4 bytes a link: at 2 billion links the
        array is most of what ``rank`` holds)."""
        total = self.count()
        indices = np.empty(total, dtype=np.int32)
        counts = np.zeros(sites, dtype=np.int32)
        at = 0
        for first, bounds, sources in self._blocks(sites):
            lengths = gaps.list_lengths(bounds, sources)
            rows = len(lengths)
            counts[first : first + rows] = lengths
            kept = int(lengths.sum())
            if kept > len(indices) - at:
                raise StoreError("site_links holds more links than meta says: run `rankstore build` again")
            indices[at : at + kept] = gaps.unpack(bounds, sources, kept)
            at += kept
        indptr = np.zeros(sites + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return InLinks(sites, indptr, indices[:at], None, None)

    def degrees(self, sites: int) -> SiteDegrees:
        """Each of ``sites`` sites' loaded in-links and out-links, in one pass over the packed lists that
        keeps none of them (:func:`.gaps.tally`): what a reader needs to lay the links out in an order of
        its own before it reads them (:meth:`links_placed`).  Blocks are counted on ``READ_THREADS``
        threads, each into out-degrees of its own (two threads adding to one count would lose some)."""
        in_degree = np.zeros(sites, dtype=np.int32)
        out_degrees: dict[int, np.ndarray] = {}

        def count(first: int, bounds: np.ndarray, sources: bytes) -> None:
            mine = out_degrees.get(threading.get_ident())
            if mine is None:
                mine = out_degrees[threading.get_ident()] = np.zeros(sites, dtype=np.int32)
            gaps.tally(bounds, sources, in_degree[first : first + len(bounds) - 1], mine)

        self._each_block(sites, count)
        counted = list(out_degrees.values())
        out_degree = counted.pop() if counted else np.zeros(sites, dtype=np.int32)
        for other in counted:
            out_degree += other
        return SiteDegrees(in_degree, out_degree)

    def links_placed(self, sites: int, new_of: np.ndarray, indptr: np.ndarray) -> np.ndarray:
        """The loaded site links as the sources (int32) of an in-link CSR whose row pointers ``indptr`` the
        caller laid out (from :meth:`degrees`): site ``s``'s in-links in row ``new_of[s]``, each source
        ``t`` as ``new_of[t]`` (-1: a site with no link, in no row).  One pass, straight into place (at 2
        billion links there is no room for a copy in another order), blocks on ``READ_THREADS`` threads:
        each writes rows of its own."""
        indices = np.empty(int(indptr[-1]), dtype=np.int32)
        written: list[int] = []

        def place(first: int, bounds: np.ndarray, sources: bytes) -> None:
            rows = new_of[first : first + len(bounds) - 1]
            written.append(gaps.unpack_placed(bounds, sources, rows, indptr, new_of, indices))

        self._each_block(sites, place)
        if sum(written) != len(indices):
            raise StoreError("site_links changed while it was read: rank again")
        return indices

    def _each_block(self, sites: int, work: Callable[[int, np.ndarray, bytes], None]) -> None:
        """``work(first, bounds, sources)`` for each block (:meth:`_blocks`), on ``READ_THREADS`` threads
        while this one reads the next blocks (the unpacking releases the GIL), a few blocks ahead at most."""
        with ThreadPoolExecutor(READ_THREADS) as pool:
            pending: deque[Future] = deque()
            for block in self._blocks(sites):
                pending.append(pool.submit(work, *block))
                while len(pending) > 2 * READ_THREADS or (pending and pending[0].done()):
                    pending.popleft().result()
            for future in pending:
                future.result()

    def _blocks(self, sites: int) -> Iterator[tuple[int, np.ndarray, bytes]]:
        """Each block's first site index, its offsets (cut to the rows below ``sites``) and its packed lists,
        in order."""
        # read, not mapped: the table is read once, and mapped pages would count as the process's memory
        mapped = self.db.execute("PRAGMA mmap_size").fetchone()[0]
        self.db.execute("PRAGMA mmap_size = 0")
        try:
            for first, offsets, sources in self.db.execute(
                "SELECT first, offsets, sources FROM site_links ORDER BY first"
            ):
                bounds = np.frombuffer(offsets, dtype=np.uint32)
                rows = min(len(bounds) - 1, max(sites - first, 0))
                yield first, bounds[: rows + 1], sources
        finally:
            self.db.execute(f"PRAGMA mmap_size = {int(mapped)}")

    def in_links(self, site: int) -> np.ndarray:
        """The site indices of the loaded links into site id ``site``, ascending (one block read, as a
        page's backlinks are one slice of ``in_links``); empty for a site the loaded graph has no link into."""
        row = self.db.execute(
            "SELECT first, offsets FROM site_links WHERE first <= ? ORDER BY first DESC LIMIT 1", (site - 1,)
        ).fetchone()
        if row is None:
            return np.zeros(0, dtype=np.int32)
        first, offsets = row
        bounds = np.frombuffer(offsets, dtype=np.uint32)
        at = site - 1 - first
        if at >= len(bounds) - 1:
            return np.zeros(0, dtype=np.int32)
        lo, hi = int(bounds[at]), int(bounds[at + 1])
        # the site's own bytes of the block's sources, not the whole blob (a most-linked site's block holds
        # tens of megabytes), read in place
        with self.db.blobopen("site_links", "sources", first, readonly=True) as blob:
            blob.seek(lo)
            data = blob.read(hi - lo)
        return gaps.unpack(np.array([0, hi - lo], dtype=np.uint32), data)

    def count(self) -> int:
        """How many site links the last domain graph loaded (0 without one)."""
        row = self.db.execute("SELECT value FROM meta WHERE key = 'site_links'").fetchone()
        return int(row[0]) if row else 0
