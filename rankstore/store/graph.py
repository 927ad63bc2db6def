"""The link graph as packed arrays: ``in_links``, the in-link CSR that ``rank`` and backlinks read.

It is derived from ``out_links`` and ``link_notes`` at the end of each build
(:meth:`Graph.derive_graph`) and replaced in one transaction, so a reader
sees the old graph or the new one.  ``meta`` records the build it was derived
after; ``rank`` derives it again when a build was interrupted since.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .base import Part

if TYPE_CHECKING:
    from .analysis import InSlice

__all__ = ["Graph", "InLinkBlock", "InLinks"]

BLOCK_LINKS = 1 << 16  # links per in_links block (a page with more has a block of its own)
BLOCK_MAX_PAGES = 1 << 13
INLINE_BYTES = 1 << 20  # a block's sources up to this size come whole with the query that finds it
_CHUNK = 1 << 24  # links converted at once: bounded temporaries on graphs of any size
_ROWS = 1 << 18  # out_links rows read at once
_IN_CHUNK = 500  # ids a query names at most
READ_THREADS = 8  # connections that read a big graph at once (they wait on the disk, not on a core)
PARALLEL_BYTES = 1 << 26  # link sources from which the graph is read by READ_THREADS connections


@dataclass(frozen=True)
class InLinkBlock:
    """One block of the in-link CSR: the pages from index ``first`` on and their linking pages' indices."""

    first: int  # page index of the block's first target
    counts: np.ndarray  # int64: in-links of each target page of the block
    sources: np.ndarray  # int32 page indices, target by target
    nofollow: np.ndarray | None  # bool per link; None: every link is followed
    weights: np.ndarray | None  # float64 per link; None: every link weighs 1
    born: np.ndarray | None  # int32 first build per link; None: the store's ``graph_born`` for every link


@dataclass
class InLinks:
    """The whole in-link CSR: row ``i`` (page id ``i + 1``) lists the indices of the pages linking to it."""

    n: int
    indptr: np.ndarray
    indices: np.ndarray
    nofollow: np.ndarray | None  # bool per link, None when no link is nofollow
    weights: np.ndarray | None  # float64 per link, None when every link weighs 1


class _GraphChanged(Exception):
    """A reader saw another graph than the store's connection: a build replaced it meanwhile."""


class Graph(Part):
    """The graph's packed arrays; part of :class:`~rankstore.store.Store`."""

    def ensure_graph(self) -> None:
        """Derive the graph's arrays again if a build was interrupted since they were."""
        if not self.graph_is_current():
            with self.transaction():
                self.derive_graph()

    def graph_is_current(self) -> bool:
        """Whether ``in_links`` reflects every page and link in the store."""
        meta = dict(self.db.execute("SELECT key, value FROM meta WHERE key IN ('graph_build', 'graph_pages')"))
        last = self.db.execute("SELECT max(id) FROM builds").fetchone()[0]
        pages = self.db.execute("SELECT max(id) FROM pages").fetchone()[0] or 0
        return meta.get("graph_build") == str(last) and meta.get("graph_pages") == str(pages)

    def derive_graph(self) -> None:
        """Rebuild ``in_links`` from ``out_links`` and ``link_notes`` (call inside a write transaction)."""
        n = self.db.execute("SELECT max(id) FROM pages").fetchone()[0] or 0
        count = self.db.execute("SELECT count(*) FROM pages").fetchone()[0]
        if count != n:
            raise RuntimeError(f"page ids are not dense ({count} pages, largest id {n})")
        total = self.db.execute("SELECT coalesce(sum(length(targets)), 0) / 4 FROM out_links").fetchone()[0]
        key = np.empty(total, dtype=np.int64)  # target index * n + source index: the CSR's order once sorted
        filled = 0
        cursor = self.db.execute("SELECT src, targets FROM out_links ORDER BY src, part")
        while rows := cursor.fetchmany(_ROWS):
            sources, parts = zip(*rows)
            lengths = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts)) // 4
            part = key[filled : filled + int(lengths.sum())]
            part[:] = np.frombuffer(b"".join(parts), dtype=">i4")
            part -= 1
            part *= max(n, 1)
            part += np.repeat(np.asarray(sources, dtype=np.int64) - 1, lengths)
            filled += len(part)
        key.sort()
        nofollow, weights = self._notes_along(key, n)
        born, born_all = self._births_along(key, n)
        births = [row[0] for row in self.db.execute("SELECT DISTINCT build FROM link_births ORDER BY build")]
        first_crawl = self.db.execute("SELECT min(first_build) FROM pages").fetchone()[0]
        indptr = np.searchsorted(key, np.arange(n + 1, dtype=np.int64) * max(n, 1))
        indices = np.empty(len(key), dtype=np.int32)
        for start in range(0, len(key), _CHUNK):
            np.remainder(key[start : start + _CHUNK], max(n, 1), out=indices[start : start + _CHUNK], casting="unsafe")
        del key
        self.db.execute("DELETE FROM in_links")
        self.db.executemany(
            "INSERT INTO in_links (first, pages, offsets, sources, nofollow, weights, born)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            _blocks(indptr, indices, nofollow, weights, born),
        )
        last = self.db.execute("SELECT max(id) FROM builds").fetchone()[0]
        self.db.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            [
                ("graph_build", str(last)),
                ("graph_pages", str(n)),
                ("graph_links", str(len(indices))),
                ("graph_nofollow", str(int(nofollow.sum()) if nofollow is not None else 0)),
                ("graph_born", str(born_all if born_all is not None else "")),
                ("graph_births", ",".join(map(str, births))),
                ("graph_first", str(first_crawl or "")),
            ],
        )

    def _births_along(self, key: np.ndarray, n: int) -> tuple[np.ndarray | None, int | None]:
        """The build that first saw each link in ``key`` order; or (None, that build) when one build saw them all.

        A link is as old as its source page's first crawl unless ``link_births`` says it came later.
        """
        low, high = self.db.execute(
            "SELECT min(first_build), max(first_build) FROM pages WHERE first_build IS NOT NULL"
        ).fetchone()
        if low == high and self.db.execute("SELECT 1 FROM link_births LIMIT 1").fetchone() is None:
            return None, low
        first = np.zeros(max(n, 1), dtype=np.int32)
        rows = np.array(
            self.db.execute("SELECT id, first_build FROM pages WHERE first_build IS NOT NULL").fetchall(),
            dtype=np.int64,
        ).reshape(-1, 2)
        first[rows[:, 0] - 1] = rows[:, 1]
        born = np.empty(len(key), dtype=np.int32)
        for start in range(0, len(key), _CHUNK):
            born[start : start + _CHUNK] = first[key[start : start + _CHUNK] % max(n, 1)]
        births = np.array(self.db.execute("SELECT src, dst, build FROM link_births").fetchall(), dtype=np.int64)
        if len(births):
            wanted = (births[:, 1] - 1) * n + births[:, 0] - 1
            at = np.minimum(np.searchsorted(key, wanted), max(len(key) - 1, 0))
            found = key[at] == wanted if len(key) else np.zeros(len(wanted), dtype=bool)
            born[at[found]] = births[found, 2]
        return born, None

    def new_in_links(self, page_id: int, links: InSlice) -> np.ndarray:
        """Which of page ``page_id``'s in-links (its :class:`~rankstore.store.analysis.InSlice`) are new: first
        seen by their source page's latest crawl.  So a link is new against its own page's previous crawl, which
        did not have it, whatever other pages later builds recrawled; a page crawled once has only new links,
        but for the store's first crawl, which is where every link starts.  A bool per link.

        A link's first build (``born``) is at most its page's latest crawl: a link born in the build the
        graph reflects is new without asking; one born in the store's first build is new only if a birth
        was recorded for it then (an older capture loaded later); the rest are checked against their pages'
        latest crawl, a primary-key look-up each, so the cost grows with the links born since the first build.
        """
        new = np.zeros(len(links.sources), dtype=bool)
        if links.uniform is not None or not len(links.sources):
            return new  # one build saw every link: the store's first
        meta = dict(
            self.db.execute(
                "SELECT key, value FROM meta WHERE key IN ('graph_build', 'graph_births', 'graph_first')"
            ).fetchall()
        )
        if "graph_first" not in meta:  # a graph derived before these were noted with it: asked of the tables
            meta["graph_first"] = str(self.db.execute("SELECT min(first_build) FROM pages").fetchone()[0] or "")
            meta["graph_births"] = ",".join(
                str(b) for (b,) in self.db.execute("SELECT DISTINCT build FROM link_births")
            )
        first = int(meta["graph_first"] or 0)
        latest = int(meta.get("graph_build") or 0)
        born = links.born
        new[born == latest] = latest > first
        asked = np.flatnonzero((born > first) & (born < latest))
        if len(asked):
            sources = (links.sources[asked].astype(np.int64) + 1).tolist()
            crawled: dict[int, int] = {}
            distinct = sorted(set(sources))
            for start in range(0, len(distinct), _IN_CHUNK):
                chunk = distinct[start : start + _IN_CHUNK]
                crawled.update(
                    self.db.execute(f"SELECT id, build_id FROM pages WHERE id IN ({','.join('?' * len(chunk))})", chunk)
                )
            new[asked] = born[asked] == np.array([crawled.get(src) or 0 for src in sources], dtype=np.int64)
        if str(first) in meta["graph_births"].split(","):  # births recorded in the first build itself
            asked = np.flatnonzero(born == first)
            sources = (links.sources[asked].astype(np.int64) + 1).tolist()
            found: set[int] = set()
            for start in range(0, len(sources), _IN_CHUNK):
                chunk = sources[start : start + _IN_CHUNK]
                found.update(
                    src
                    for (src,) in self.db.execute(
                        "SELECT b.src FROM link_births b JOIN pages p ON p.id = b.src AND p.build_id = b.build"
                        f" WHERE b.dst = ? AND b.src IN ({','.join('?' * len(chunk))})",
                        [page_id, *chunk],
                    )
                )
            if found:
                new[asked] = np.isin(links.sources[asked].astype(np.int64) + 1, list(found))
        return new

    def _notes_along(self, key: np.ndarray, n: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Nofollow flags and weights of the links in ``key`` order, from ``link_notes``."""
        rows = self.db.execute(
            "SELECT src, dst, nofollow, weight FROM link_notes WHERE nofollow OR weight != 1.0"
        ).fetchall()
        if not rows:
            return None, None
        notes = np.array(rows, dtype=np.float64)
        at = np.searchsorted(key, (notes[:, 1].astype(np.int64) - 1) * n + notes[:, 0].astype(np.int64) - 1)
        valid = at < len(key)
        valid[valid] = (
            key[at[valid]] == (notes[valid, 1].astype(np.int64) - 1) * n + notes[valid, 0].astype(np.int64) - 1
        )
        nofollow = weights = None
        if notes[valid, 2].any():
            nofollow = np.zeros(len(key), dtype=bool)
            nofollow[at[valid]] = notes[valid, 2] != 0
        if (notes[valid, 3] != 1.0).any():
            weights = np.ones(len(key))
            weights[at[valid]] = notes[valid, 3]
        return nofollow, weights

    def in_links(self) -> InLinks:
        """The whole in-link CSR, read in one pass (a big graph by several connections at once)."""
        rows, n = self._in_link_rows()
        counts, offsets, sources, flags, weights = [], [], [], [], []
        any_flags = any_weights = False
        for offs, srcs, nofollow, wts in rows:
            rel = np.frombuffer(offs, dtype=np.int32)
            counts.append(np.diff(rel))
            sources.append(np.frombuffer(srcs, dtype=np.int32))
            links = len(sources[-1])
            flags.append(nofollow)
            weights.append(wts)
            any_flags |= nofollow is not None
            any_weights |= wts is not None
            offsets.append(links)
        del rows
        indptr = np.zeros(n + 1, dtype=np.int64)
        if counts:
            np.cumsum(np.concatenate(counts), out=indptr[1:])
        indices = np.concatenate(sources) if sources else np.zeros(0, dtype=np.int32)
        del sources
        nofollow = weight = None
        if any_flags:
            nofollow = np.concatenate(
                [
                    np.frombuffer(f, dtype=bool) if f is not None else np.zeros(k, dtype=bool)
                    for f, k in zip(flags, offsets)
                ]
            )
        if any_weights:
            weight = np.concatenate(
                [np.frombuffer(w, dtype=np.float64) if w is not None else np.ones(k) for w, k in zip(weights, offsets)]
            )
        return InLinks(n, indptr, indices, nofollow, weight)

    def in_link_blocks(self) -> Iterator[InLinkBlock]:
        """The in-link CSR a block at a time, in target order (``rankstore export --what links``)."""
        for first, offsets, sources, nofollow, weights, born in self.db.execute(
            "SELECT first, offsets, sources, nofollow, weights, born FROM in_links ORDER BY first"
        ):
            yield InLinkBlock(
                first,
                np.diff(np.frombuffer(offsets, dtype=np.int32)).astype(np.int64),
                np.frombuffer(sources, dtype=np.int32),
                np.frombuffer(nofollow, dtype=bool) if nofollow else None,
                np.frombuffer(weights, dtype=np.float64) if weights else None,
                np.frombuffer(born, dtype=">i4").astype(np.int32) if born else None,
            )

    def _in_link_rows(self) -> tuple[list[tuple], int]:
        """(offsets, sources, nofollow, weights) of every ``in_links`` block in order, and the graph's pages.

        A block's blobs span a chain of overflow pages that SQLite reads one
        after the other, so one reader waits on the disk page by page;
        :data:`READ_THREADS` connections reading ranges of blocks at once keep
        the disk busy.  Everything comes from the version of the graph of one
        read transaction of the store's connection: each reader first checks
        that it sees that version (``meta``'s stamp of the graph); if one does
        not (a build replaced the graph meanwhile), or inside a transaction of
        the caller's (whose changes the readers would not see), or for a store
        that is no file, the store's connection reads it all itself.
        """
        columns = "SELECT offsets, sources, nofollow, weights FROM in_links"
        alone = self.db.in_transaction or self.store.path == ":memory:" or READ_THREADS < 2
        with self.snapshot():
            stamp = self._graph_stamp(self.db)
            n = int(dict(stamp)["graph_pages"])
            sizes = self.db.execute("SELECT first, length(sources) FROM in_links ORDER BY first").fetchall()
            total = sum(size for _, size in sizes)
            if alone or total < PARALLEL_BYTES or len(sizes) < 2:
                return self.db.execute(f"{columns} ORDER BY first").fetchall(), n
            ends = np.cumsum([size for _, size in sizes])
            bounds = np.searchsorted(ends, np.linspace(0, total, READ_THREADS + 1)[1:-1], "right")
            cuts = sorted({0, 1 << 62, *(sizes[int(b)][0] for b in bounds if 0 < b < len(sizes))})
            query = f"{columns} WHERE first >= ? AND first < ? ORDER BY first"
            changed = threading.Event()

            def read(lo: int, hi: int) -> list[tuple]:
                db = self.store.reader()
                try:
                    db.execute("BEGIN")
                    if changed.is_set() or self._graph_stamp(db) != stamp:
                        changed.set()  # the others stop too, rather than read a graph for nothing
                        raise _GraphChanged
                    return db.execute(query, (lo, hi)).fetchall()
                finally:
                    db.close()

            try:
                with ThreadPoolExecutor(len(cuts) - 1) as pool:
                    parts = list(pool.map(read, cuts[:-1], cuts[1:]))
            except (_GraphChanged, sqlite3.Error):
                return self.db.execute(f"{columns} ORDER BY first").fetchall(), n
            return [row for part in parts for row in part], n

    @staticmethod
    def _graph_stamp(db: sqlite3.Connection) -> list:
        return db.execute(
            "SELECT key, value FROM meta WHERE key IN ('graph_build', 'graph_pages', 'graph_links') ORDER BY key"
        ).fetchall()

    def graph_arrays(self, include_nofollow: bool = False):
        """(page ids, link sources, link targets, link weights), sources and targets as page indices."""
        self.store.ensure_derived()
        links = self.in_links()
        dst = np.repeat(np.arange(links.n, dtype=np.int64), np.diff(links.indptr))
        src = links.indices.astype(np.int64)
        weights = links.weights if links.weights is not None else np.ones(len(src))
        if links.nofollow is not None and not include_nofollow:
            follow = ~links.nofollow
            src, dst, weights = src[follow], dst[follow], weights[follow]
        return np.arange(1, links.n + 1, dtype=np.int64), src, dst, weights

    def in_links_of(self, page_id: int) -> tuple[np.ndarray, np.ndarray | None]:
        """(indices of the pages linking to ``page_id``, their nofollow flags or None): one block's slice."""
        row = self.db.execute(
            "SELECT first, length(offsets), length(nofollow), CASE WHEN length(sources) <= ?2 THEN offsets END,"
            " CASE WHEN length(sources) <= ?2 THEN sources END, CASE WHEN length(sources) <= ?2 THEN nofollow END"
            " FROM in_links WHERE first <= ?1 ORDER BY first DESC LIMIT 1",
            (page_id - 1, INLINE_BYTES),
        ).fetchone()
        if row is None:
            return np.zeros(0, dtype=np.int32), None
        first, offsets_size, nofollow_size, offsets, sources, nofollow = row
        at = page_id - 1 - first
        if 4 * (at + 1) >= offsets_size:
            return np.zeros(0, dtype=np.int32), None
        if sources is not None:  # a small block: it came whole with the row
            start, stop = np.frombuffer(offsets, dtype=np.int32, count=2, offset=4 * at).tolist()
            found = np.frombuffer(sources, dtype=np.int32, count=stop - start, offset=4 * start)
            flags = np.frombuffer(nofollow, dtype=bool, count=stop - start, offset=start) if nofollow else None
            return found, flags
        start, stop = np.frombuffer(self.in_links_part("offsets", first, 4 * at, 8), dtype=np.int32).tolist()
        found = np.frombuffer(self.in_links_part("sources", first, 4 * start, 4 * (stop - start)), dtype=np.int32)
        flags = None
        if nofollow_size:
            flags = np.frombuffer(self.in_links_part("nofollow", first, start, stop - start), dtype=bool)
        return found, flags

    def in_links_part(self, column: str, row: int, offset: int, size: int) -> bytes:
        """``size`` bytes at ``offset`` of an ``in_links`` blob, read alone (SQLite's incremental blob I/O copies
        once where a query copies twice: a page with many backlinks has a block of its own, megabytes long)."""
        if size <= 0:
            return b""
        with self.db.blobopen("in_links", column, row, readonly=True) as blob:
            blob.seek(offset)
            return blob.read(size)

    def graph_counts(self) -> tuple[int, int]:
        """(links, nofollow links), as of the last derived graph, or counted from ``out_links``."""
        meta = dict(self.db.execute("SELECT key, value FROM meta WHERE key IN ('graph_links', 'graph_nofollow')"))
        if self.graph_is_current() and "graph_links" in meta:
            return int(meta["graph_links"]), int(meta["graph_nofollow"])
        links = self.db.execute("SELECT coalesce(sum(length(targets)), 0) / 4 FROM out_links").fetchone()[0]
        nofollow = self.db.execute("SELECT count(*) FROM link_notes WHERE nofollow").fetchone()[0]
        return links, nofollow


def _blocks(
    indptr: np.ndarray,
    indices: np.ndarray,
    nofollow: np.ndarray | None,
    weights: np.ndarray | None,
    born: np.ndarray | None = None,
):
    """``in_links`` rows: runs of target pages of at most BLOCK_LINKS links (or one page) and BLOCK_MAX_PAGES pages."""
    n = len(indptr) - 1
    first = 0
    while first < n:
        base = indptr[first]
        stop = int(np.searchsorted(indptr, base + BLOCK_LINKS, side="right")) - 1
        stop = min(max(stop, first + 1), first + BLOCK_MAX_PAGES, n)
        end = indptr[stop]
        yield (
            first,
            stop - first,
            (indptr[first : stop + 1] - base).astype(np.int32).tobytes(),
            indices[base:end].tobytes(),
            nofollow[base:end].tobytes() if nofollow is not None and nofollow[base:end].any() else None,
            weights[base:end].tobytes() if weights is not None and (weights[base:end] != 1.0).any() else None,
            born[base:end].astype(">i4").tobytes() if born is not None else None,
        )
        first = stop
