"""Hosts: each page's host as a number, and the host graph that ``rank --level host`` ranks.

A host is what ``pages.host`` holds: the name with its port, if any, so that
two servers on one machine are two hosts.  Host ids are given in order of
first appearance and never change, so a host ranking stays valid when later
builds add hosts.  ``page_hosts`` keeps each page's host id as big-endian
int32 in blocks of :data:`HOST_BLOCK` pages; a reader loads the whole array
once (4 bytes a page) to fold referring pages into referring hosts.

The host graph has an edge from host A to host B when any page of A links to
a page of B (links within a host are left out); its weight is the number of
such page links (followed ones, unless the ranking counts nofollow links).
:func:`fold_links` coalesces the links of one level into those of the next
(pages into hosts here, hosts into sites in :mod:`.sites`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from . import key_buckets
from .base import Part
from .mapped import read_ahead
from .pages import url_keys

__all__ = ["Hosts", "HostBatch", "HostLinks", "LevelGraph", "fold_links", "HOST_BLOCK"]

HOST_BLOCK = 1 << 14  # pages per page_hosts row
HOST_LINKS_STEP = 1 << 20  # page links of in-link blocks that host_links maps to hosts at once
_STREAM_CACHE = -8192  # SQLite's page cache (KiB) while host_links reads the in-link blocks


@dataclass
class LevelGraph:
    """The host (or site) graph as in-link CSR: row ``h`` (id ``h + 1``) lists the hosts (sites) linking to it."""

    n: int
    indptr: np.ndarray
    indices: np.ndarray  # int32 host (site) indices
    weights: np.ndarray | None  # float64: page links from that node to this one; None when each is one link
    # the nodes of the graph, by index: a host with no page (a Common Crawl ranks file names it) is none; None: all
    members: np.ndarray | None = None


def fold_links(
    n: int, dst: np.ndarray, src: np.ndarray, weights: np.ndarray | None = None, once: bool = False
) -> LevelGraph:
    """Links between nodes numbered 1..n (``src`` -> ``dst``, int arrays) as the in-link CSR of those nodes,
    a node's links to itself left out and the links between the same two nodes made one: its weight the sum
    of their ``weights``, or their number where ``weights`` is None; or, ``once``, each pair of weight 1
    (as Common Crawl folds hosts into domains).  Sparse throughout: pairs are coalesced by sorting an int64
    key a link, never in a matrix of n by n."""
    keep = src != dst
    key = (dst[keep].astype(np.int64) - 1) * max(n, 1) + (src[keep].astype(np.int64) - 1)
    kept = weights[keep] if weights is not None and not once else None
    del keep
    if kept is not None:
        order = np.argsort(key, kind="stable")
        key, kept = key[order], kept[order]
        del order
    else:
        key.sort()
    starts = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]])) if len(key) else np.zeros(0, np.int64)
    summed = None
    if kept is not None:
        summed = np.add.reduceat(kept, starts) if len(key) else np.zeros(0)
    elif not once:
        summed = np.diff(np.append(starts, len(key))).astype(np.float64)
    key = key[starts]
    indptr = np.searchsorted(key, np.arange(n + 1, dtype=np.int64) * max(n, 1))
    return LevelGraph(n, indptr, (key % max(n, 1)).astype(np.int32), summed)


def ensure_named(
    db: sqlite3.Connection, table: str, count: str, names: Sequence[str], keys: key_buckets.KeyTable
) -> np.ndarray:
    """The ids of ``names`` in ``table`` (hosts or sites), numbering those it lacks after its highest id; the
    meta counter ``count`` follows, and the names numbered here join ``keys`` (:mod:`.key_buckets`).  Shared
    by :meth:`Hosts.ensure_hosts` and :meth:`.Sites.ensure_sites`."""
    ids = np.zeros(len(names), dtype=np.int64)
    next_id = db.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()[0] + 1
    for start in range(0, len(names), 500):
        chunk = list(names[start : start + 500])
        found = dict(db.execute(f"SELECT name, id FROM {table} WHERE name IN ({','.join('?' * len(chunk))})", chunk))
        fresh = []
        for offset, name in enumerate(chunk):
            number = found.get(name)
            if number is None:
                number = found[name] = next_id
                fresh.append((next_id, name))
                next_id += 1
            ids[start + offset] = number
        db.executemany(f"INSERT INTO {table} (id, name, {count}) VALUES (?, ?, 0)", fresh)
        if fresh:
            key_buckets.add(
                db, keys, url_keys([name for _, name in fresh]), np.array([i for i, _ in fresh], dtype=np.int64)
            )
    return ids


@dataclass(frozen=True)
class HostLinks:
    """Page links between two hosts as the hosts' ids (int32, from 1): ``src[i] -> dst[i]``, one a page link,
    not coalesced (two page links between the same hosts are two)."""

    dst: np.ndarray
    src: np.ndarray


@dataclass(frozen=True)
class HostBatch:
    """Hosts as columns, in id order."""

    ids: tuple[int, ...]
    names: tuple[str, ...]
    pages: tuple[int, ...]


class Hosts(Part):
    """Hosts of pages, and the host graph; part of :class:`~rankstore.store.Store`."""

    def derive_hosts(self) -> None:
        """Number the hosts of pages added since the last time (call inside a write transaction)."""
        row = self.db.execute("SELECT value FROM meta WHERE key = 'hosts_pages'").fetchone()
        done = int(row[0]) if row else 0
        last = self.db.execute("SELECT max(id) FROM pages").fetchone()[0] or 0
        if last <= done:
            return
        known = dict(self.db.execute("SELECT name, id FROM hosts"))
        fresh: dict[str, int] = {}
        start = done - done % HOST_BLOCK  # the first block that changes, written again whole
        ids = np.zeros(last - start, dtype=np.int32)
        if start < done:
            ids[: done - start] = self._host_block(start)[: done - start]
        cursor = self.db.execute("SELECT id, host FROM pages WHERE id > ? ORDER BY id", (done,))
        while rows := cursor.fetchmany(1 << 16):
            for page_id, host in rows:
                number = known.get(host)
                if number is None:
                    number = known[host] = fresh[host] = len(known) + 1
                ids[page_id - 1 - start] = number
        self.db.executemany(
            "INSERT INTO hosts (id, name, pages) VALUES (?, ?, 0)", ((number, name) for name, number in fresh.items())
        )
        key_buckets.add(
            self.db,
            key_buckets.HOSTS,
            url_keys(list(fresh)),
            np.fromiter(fresh.values(), dtype=np.int64, count=len(fresh)),
        )
        counts = np.bincount(ids[done - start :], minlength=len(known) + 1)
        changed = np.flatnonzero(counts)
        self.db.executemany(
            "UPDATE hosts SET pages = pages + ? WHERE id = ?", zip(counts[changed].tolist(), changed.tolist())
        )
        self.db.executemany(
            "INSERT OR REPLACE INTO page_hosts (first, hosts) VALUES (?, ?)",
            (
                (first, ids[first - start : first - start + HOST_BLOCK].astype(">i4").tobytes())
                for first in range(start, last, HOST_BLOCK)
            ),
        )
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('hosts_pages', ?)", (str(last),))

    def ensure_hosts(self, names: Sequence[str]) -> np.ndarray:
        """The ids of hosts named (int64, in order), numbering those the store has not after the known ones,
        with no page (a Common Crawl ranks file names hosts), and their sites.  Call inside a write
        transaction."""
        ids = ensure_named(self.db, "hosts", "pages", names, key_buckets.HOSTS)
        self.store.sites.derive_sites()
        return ids

    def key_hosts(self) -> None:
        """The hosts' name keys (:mod:`.key_buckets`) written again from every host's name (after a migration,
        or a renaming)."""
        key_buckets.write_from_names(self.db, key_buckets.HOSTS, "hosts")

    def host_keys(self, last: int) -> key_buckets.HeldKeys:
        """Every host's name key, in key order (a hash two names share with id 0), those of hosts numbered
        after ``last`` left out: read in bulk, two blobs a bucket, no name read."""
        return key_buckets.read(self.db, key_buckets.HOSTS, last)

    def ids_by_key(self, names: Iterable[str]) -> dict[str, int]:
        """{name: host id} of the names whose hash the hosts' keys hold (0: a hash two hosts' names share,
        or two of the names asked: to ask by name), each name's bucket read once."""
        return key_buckets.ids_by_key(self.db, key_buckets.HOSTS, names)

    def hosts_behind(self) -> bool:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'hosts_pages'").fetchone()
        last = self.db.execute("SELECT max(id) FROM pages").fetchone()[0] or 0
        return (int(row[0]) if row else 0) < last

    def _host_block(self, first: int) -> np.ndarray:
        row = self.db.execute("SELECT hosts FROM page_hosts WHERE first = ?", (first,)).fetchone()
        return np.frombuffer(row[0], dtype=">i4").astype(np.int32) if row else np.zeros(0, dtype=np.int32)

    def page_hosts(self) -> np.ndarray:
        """Each page's host id by page index (0 for a page added since hosts were last numbered)."""
        key = self.db.execute("SELECT value FROM meta WHERE key = 'hosts_pages'").fetchone()
        cached = getattr(self, "_page_hosts", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        # mapped (:mod:`.mapped`): one copy for every process, where each read it whole (4 bytes a page)
        hosts = self.store.mapped.blocks_array("page-hosts", "page_hosts", "hosts", key[0] if key else None)
        self._page_hosts = (key, hosts)
        return hosts

    def host_batches(self, size: int = 1 << 16) -> Iterator[HostBatch]:
        """Every host in id order, ``size`` at a time, as columns (``rankstore export --what hosts``)."""
        cursor = self.db.execute("SELECT id, name, pages FROM hosts ORDER BY id")
        while rows := cursor.fetchmany(size):
            yield HostBatch(*zip(*rows))

    def host_id(self, name: str) -> int | None:
        row = self.db.execute("SELECT id FROM hosts WHERE name = ?", (name,)).fetchone()
        return row[0] if row else None

    def host_names(self, ids) -> dict[int, str]:
        ids = list(ids)
        found: dict[int, str] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            found.update(
                self.db.execute(f"SELECT id, name FROM hosts WHERE id IN ({','.join('?' * len(chunk))})", chunk)
            )
        return found

    def host_count(self) -> int:
        """How many hosts: the largest id, as ids are given one after the other (``count(*)`` reads the table)."""
        return self.db.execute("SELECT coalesce(max(id), 0) FROM hosts").fetchone()[0]

    def pages_of_host(self, host: int) -> np.ndarray:
        """Page indices of every page of a host."""
        hosts = self.page_hosts()
        read_ahead(hosts)
        return np.flatnonzero(hosts == host)

    @staticmethod
    def _pages_as_hosts(links, include_nofollow: bool) -> LevelGraph:
        """The host graph of a store whose every page is its own host, numbered alike (a Common Crawl host
        graph): the page graph itself, less the links of a page to itself, each link of weight 1."""
        keep = np.empty(len(links.indices), dtype=bool)
        step = 1 << 20  # rows at a time: the target of each link is a temporary the size of the links
        for first in range(0, links.n, step):
            last = min(first + step, links.n)
            lo, hi = int(links.indptr[first]), int(links.indptr[last])
            rows = np.repeat(np.arange(first, last, dtype=np.int32), np.diff(links.indptr[first : last + 1]))
            np.not_equal(links.indices[lo:hi], rows, out=keep[lo:hi])
        if links.nofollow is not None and not include_nofollow:
            keep &= ~links.nofollow
        if keep.all():
            return LevelGraph(links.n, links.indptr, links.indices, None)
        kept = np.zeros(len(keep) + 1, dtype=np.int64)
        np.cumsum(keep, out=kept[1:])
        return LevelGraph(links.n, kept[links.indptr], links.indices[keep], None)

    def hosts_without_pages(self) -> np.ndarray:
        """Ids of the hosts no page has (numbered from a Common Crawl ranks file): no node of the host graph."""
        return np.fromiter((row[0] for row in self.db.execute("SELECT id FROM hosts WHERE pages = 0")), np.int64)

    def each_host_one_page(self) -> bool:
        """Is every host's only page its root (a Common Crawl host graph, one page a host)?"""
        return self.db.execute("SELECT coalesce(max(pages), 0) <= 1 FROM hosts").fetchone()[0] == 1

    def host_graph(self, include_nofollow: bool = False) -> LevelGraph:
        """The host graph from the page graph's in-link arrays (see the module docstring); its ``members``
        leave out the hosts without pages."""
        graph = self._host_links(include_nofollow)
        graph.members = self.host_members(graph.n)
        return graph

    def host_members(self, count: int | None = None) -> np.ndarray | None:
        """The nodes of the host graph of ``count`` hosts (the store's, when None), by host index: False at a
        host without pages; None when every host has pages."""
        empty = self.hosts_without_pages()
        if not len(empty):
            return None
        members = np.ones(self.host_count() if count is None else count, dtype=bool)
        members[empty[empty <= len(members)] - 1] = False
        return members

    def host_links(
        self, include_nofollow: bool = False, step: int = HOST_LINKS_STEP
    ) -> Generator[HostLinks, None, None]:
        """The host graph's links before they are coalesced: each page link from one host to another (followed
        ones, unless ``include_nofollow``) as the two hosts' ids, about ``step`` links at a time (whole in-link
        blocks; none empty).  Streamed from the page graph's in-link blocks, so that what it holds is a host id
        a page and one slice, never an array a link of the whole graph (a host graph of billions of links is
        folded into sites from it).  Call :meth:`.Store.ensure_derived` first, and read inside a snapshot."""
        hosts = self.page_hosts()
        # read, neither mapped nor cached: the blocks are read once, and mapped or cached pages would count as the
        # process's memory (mapped: the page graph's whole size, which this stream is not to hold)
        mapped = self.db.execute("PRAGMA mmap_size").fetchone()[0]
        cached = self.db.execute("PRAGMA cache_size").fetchone()[0]
        self.db.execute("PRAGMA mmap_size = 0")
        self.db.execute(f"PRAGMA cache_size = {_STREAM_CACHE}")
        try:
            targets: list[np.ndarray] = []
            sources: list[np.ndarray] = []
            held = 0
            for block in self.store.graph.in_link_blocks():
                rows = len(block.counts)
                if block.first + rows > len(hosts):
                    raise RuntimeError("hosts are not numbered for every page: run `rankstore build` again")
                src = block.sources
                dst = np.repeat(hosts[block.first : block.first + rows], block.counts)
                if block.nofollow is not None and not include_nofollow:
                    follow = ~block.nofollow
                    src, dst = src[follow], dst[follow]
                src = hosts[src]
                between = src != dst  # a link within a host is no link of the host graph
                if not between.all():
                    src, dst = src[between], dst[between]
                if len(src):
                    targets.append(dst)
                    sources.append(src)
                    held += len(src)
                if held >= step:
                    whole = [HostLinks(np.concatenate(targets), np.concatenate(sources))]
                    targets, sources, held = [], [], 0  # the blocks let go before the slice is used
                    yield whole.pop()
            if held:
                yield HostLinks(np.concatenate(targets), np.concatenate(sources))
        finally:
            self.db.execute(f"PRAGMA cache_size = {int(cached)}")
            self.db.execute(f"PRAGMA mmap_size = {int(mapped)}")

    def _host_links(self, include_nofollow: bool) -> LevelGraph:
        self.store.ensure_derived()
        links = self.store.graph.in_links()
        hosts = self.page_hosts()
        count = self.host_count()
        if len(hosts) < links.n:
            raise RuntimeError("hosts are not numbered for every page: run `rankstore build` again")
        if count == links.n and np.array_equal(hosts[: links.n], np.arange(1, links.n + 1, dtype=np.int32)):
            return self._pages_as_hosts(links, include_nofollow)
        src = hosts[links.indices]
        dst = np.repeat(hosts[: links.n], np.diff(links.indptr))
        if links.nofollow is not None and not include_nofollow:
            src, dst = src[~links.nofollow], dst[~links.nofollow]
        return fold_links(count, dst, src)  # a pair's weight: the number of page links between the two hosts
