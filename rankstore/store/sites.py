"""Sites: each host's registered domain as a number, the level above hosts (``rank --level site``).

A site is what :func:`rankstore.urls.site_of` gives a host: the Public
Suffix List's eTLD+1 (``example.co.uk``, ``user.github.io``), or the host
itself, port and all, where it has none (an IP address, ``localhost``).
Site ids are given in order of first appearance and never change, so a site
ranking stays valid when later builds add sites.  ``host_sites`` keeps each
host's site id as big-endian int32 in blocks of :data:`SITE_BLOCK` hosts, as
``page_hosts`` keeps each page's host; ``sites.hosts`` counts them.

The site graph (``rank --level site``) is the host graph folded through each
host's site, with the site links a Common Crawl domain graph loaded
(:mod:`.site_links`): an edge from site A to site B when any page of A links
to a page of B (links within a site left out), weighted by the number of such
page links, as hosts are; a loaded domain-graph edge counts as one link.
Where the host graph is the page graph (every page its own host: a Common
Crawl host graph), each pair of sites is one link of weight 1, as Common
Crawl's HostToDomainGraph folds hosts into domains (its edges deduplicated).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from ..urls import sites_of
from .base import Part
from .hosts import LevelGraph, ensure_named, fold_links

__all__ = ["Sites", "SiteBatch", "SITE_BLOCK"]

SITE_BLOCK = 1 << 14  # hosts per host_sites row


@dataclass(frozen=True)
class SiteBatch:
    """Sites as columns, in id order."""

    ids: tuple[int, ...]
    names: tuple[str, ...]
    hosts: tuple[int, ...]


class Sites(Part):
    """Sites of hosts, and the site graph; part of :class:`~rankstore.store.Store`."""

    def derive_sites(self) -> None:
        """Number the sites of hosts added since the last time (call inside a write transaction)."""
        done = self._meta_int("sites_hosts")
        last = self.store.hosts.host_count()
        if last <= done:
            return
        known = dict(self.db.execute("SELECT name, id FROM sites"))
        fresh: dict[str, int] = {}
        start = done - done % SITE_BLOCK  # the first block that changes, written again whole
        ids = np.zeros(last - start, dtype=np.int32)
        if start < done:
            ids[: done - start] = self._site_block(start)[: done - start]
        cursor = self.db.execute("SELECT id, name FROM hosts WHERE id > ? ORDER BY id", (done,))
        while rows := cursor.fetchmany(1 << 16):
            names = sites_of([host for _, host in rows])
            for site in dict.fromkeys(names):  # in order of first appearance
                if site not in known:
                    known[site] = fresh[site] = len(known) + 1
            first = rows[0][0] - 1 - start  # hosts are numbered one after the other
            ids[first : first + len(rows)] = np.fromiter(map(known.__getitem__, names), np.int32, len(names))
        self.db.executemany(
            "INSERT INTO sites (id, name, hosts) VALUES (?, ?, 0)", ((number, name) for name, number in fresh.items())
        )
        counts = np.bincount(ids[done - start :], minlength=len(known) + 1)
        changed = np.flatnonzero(counts)
        self.db.executemany(
            "UPDATE sites SET hosts = hosts + ? WHERE id = ?", zip(counts[changed].tolist(), changed.tolist())
        )
        self.db.executemany(
            "INSERT OR REPLACE INTO host_sites (first, sites) VALUES (?, ?)",
            (
                (first, ids[first - start : first - start + SITE_BLOCK].astype(">i4").tobytes())
                for first in range(start, last, SITE_BLOCK)
            ),
        )
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('sites_hosts', ?)", (str(last),))

    def ensure_sites(self, names: Sequence[str]) -> np.ndarray:
        """The ids of sites named (int64, in order), numbering those the store has not after the known ones:
        a site may come without a host (a Common Crawl domain graph or ranks file names sites directly).
        Call inside a write transaction."""
        return ensure_named(self.db, "sites", "hosts", names)

    def _meta_int(self, key: str) -> int:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return int(row[0]) if row else 0

    def sites_behind(self) -> bool:
        """Whether some host has no site number yet (a build was cut short before numbering them)."""
        return self._meta_int("sites_hosts") < self.store.hosts.host_count()

    def _site_block(self, first: int) -> np.ndarray:
        row = self.db.execute("SELECT sites FROM host_sites WHERE first = ?", (first,)).fetchone()
        return np.frombuffer(row[0], dtype=">i4").astype(np.int32) if row else np.zeros(0, dtype=np.int32)

    def host_sites(self) -> np.ndarray:
        """Each host's site id by host index (0 for a host numbered since sites were last numbered)."""
        key = self.db.execute("SELECT value FROM meta WHERE key = 'sites_hosts'").fetchone()
        cached = getattr(self, "_host_sites", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        blobs = [row[0] for row in self.db.execute("SELECT sites FROM host_sites ORDER BY first")]
        sites = np.frombuffer(b"".join(blobs), dtype=">i4").astype(np.int32)
        self._host_sites = (key, sites)
        return sites

    def site_batches(self, size: int = 1 << 16) -> Iterator[SiteBatch]:
        """Every site in id order, ``size`` at a time, as columns."""
        cursor = self.db.execute("SELECT id, name, hosts FROM sites ORDER BY id")
        while rows := cursor.fetchmany(size):
            yield SiteBatch(*zip(*rows))

    def site_id(self, name: str) -> int | None:
        row = self.db.execute("SELECT id FROM sites WHERE name = ?", (name,)).fetchone()
        return row[0] if row else None

    def site_names(self, ids) -> dict[int, str]:
        ids = list(ids)
        found: dict[int, str] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            found.update(
                self.db.execute(f"SELECT id, name FROM sites WHERE id IN ({','.join('?' * len(chunk))})", chunk)
            )
        return found

    def site_count(self) -> int:
        """How many sites: the largest id, as ids are given one after the other."""
        return self.db.execute("SELECT coalesce(max(id), 0) FROM sites").fetchone()[0]

    def site_graph(self, include_nofollow: bool = False) -> LevelGraph:
        """The site graph (see the module docstring) as in-link CSR over the site ids."""
        hosts = self.store.hosts.host_graph(include_nofollow)
        sites = self.host_sites()
        count = self.site_count()
        if len(sites) < hosts.n or (hosts.n and int(sites[: hosts.n].min()) == 0):
            raise RuntimeError("sites are not numbered for every host: run `rankstore build` again")
        dst = np.repeat(sites[: hosts.n], np.diff(hosts.indptr))
        src = sites[hosts.indices]
        weights, host_members = hosts.weights, hosts.members
        del hosts
        loaded = self.store.site_links.links(count)
        if len(loaded.indices):
            dst = np.concatenate([dst, np.repeat(np.arange(1, count + 1, dtype=np.int32), np.diff(loaded.indptr))])
            src = np.concatenate([src, loaded.indices + 1])
            if weights is not None:
                weights = np.concatenate([weights, np.ones(len(loaded.indices))])
        # a Common Crawl host graph (one page a host, however the hosts were numbered) folds as Common Crawl
        # folds it: each pair of sites once
        graph = fold_links(count, dst, src, weights, once=self.store.hosts.each_host_one_page())
        graph.members = self._sites_in_graph(count, host_members, loaded)
        return graph

    def _sites_in_graph(self, count: int, hosts: np.ndarray | None, loaded) -> np.ndarray | None:
        """The sites that are nodes of the site graph: those of a host with pages, and those a domain graph's
        links name (a site only a ranks file names is none); None when that is every site."""
        sites = self.host_sites()
        members = np.zeros(count, dtype=bool)
        with_pages = sites[: len(hosts)][hosts] if hosts is not None else sites
        members[with_pages[with_pages > 0] - 1] = True
        if len(loaded.indices):
            members[: len(loaded.indptr) - 1] |= np.diff(loaded.indptr) > 0
            members[loaded.indices] = True
        return None if members.all() else members
