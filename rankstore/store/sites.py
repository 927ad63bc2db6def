"""Sites: each host's registered domain as a number, the level above hosts (``rank --level site``).

A site is what :func:`rankstore.urls.site_of` gives a host: the Public
Suffix List's eTLD+1 (``example.co.uk``, ``user.github.io``), or the host
itself, port and all, where it has none (an IP address, ``localhost``).
Site ids are given in order of first appearance and never change, so a site
ranking stays valid when later builds add sites.  ``host_sites`` keeps each
host's site id as big-endian int32 in blocks of :data:`SITE_BLOCK` hosts, as
``page_hosts`` keeps each page's host.  ``sites.hosts`` is a site's number of
hosts: the larger of the store's own (its hosts in ``host_sites``) and the
count a Common Crawl domain graph gave (the hosts Common Crawl found of it);
0 where neither is known (a site only a ranks file or a domain graph's line
without a count names), which readers show as not known, never as 0.

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

import glob
import itertools
import json
import os
import shutil
import sqlite3
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..urls import sites_of
from . import key_buckets
from .base import Part
from .hosts import LevelGraph, ensure_named, fold_links
from .mapped import read_ahead
from .pages import url_keys
from .schema import SITES_BY_NAME
from .site_links import InLinkPart

if TYPE_CHECKING:
    import pyarrow as pa

# pyarrow is imported by the bulk numbering that uses it, not with the store: a command that numbers a few
# sites (a build of an edge list, a rank) starts without it

__all__ = ["OrderedSiteGraph", "Sites", "SiteBatch", "SITE_BLOCK"]

SITE_BLOCK = 1 << 14  # hosts per host_sites row
BULK = 100_000  # names at once from which ensure_sites numbers them in bulk (JSON into SQL, not 500 at a time)
BULK_KNOWN = 5_000_000  # sites a store may hold for a bulk numbering to drop sites_by_name and make it again
_INSERT_ROWS = 1 << 20  # sites inserted by one statement
_MARK_LINKS = 1 << 24  # links marked at once
# the site fold (site_graph): up to FOLD_IN_MEMORY links (page links and loaded site links) fold at once in memory
# (a key array a link, beside the links mapped to sites); more are read from the page graph's in-link blocks and
# mapped FOLD_SLICE links at a time into a LinkSorter whose buckets hold FOLD_BUCKET_LINKS links on average and
# whose memory bound is FOLD_MEMORY (None: the sorter's own); a bound well below the sorter's own, as a loaded
# domain graph and the folded graph are held beside it, and keys spilled are written and read back once each: the
# fold's memory then stops growing with the links early, for no time measured
FOLD_IN_MEMORY = 1 << 24
FOLD_SLICE = 1 << 20
FOLD_BUCKET_LINKS = 1 << 25
FOLD_MEMORY: int | None = 1 << 28


@dataclass(frozen=True)
class _FreshKeys:
    """The name keys of sites a bulk numbering numbered, a chunk an array, in the order numbered."""

    hashes: list[np.ndarray]  # int64
    ids: list[np.ndarray]  # int32, beside them


@dataclass(frozen=True)
class SiteBatch:
    """Sites as columns, in id order."""

    ids: tuple[int, ...]
    names: tuple[str, ...]
    hosts: tuple[int | None, ...]  # None: not known (see the module's doc)


@dataclass(frozen=True)
class OrderedSiteGraph:
    """The site graph as in-link CSR over its nodes in an order its reader chose: node ``i`` is site index
    ``order[i]``; the sites not in ``order`` (no page, no link) are no nodes."""

    count: int  # the sites numbered (ids 1..count)
    order: np.ndarray  # int32 site indices, one a node
    indptr: np.ndarray  # int64
    indices: np.ndarray  # int32 node indices
    out_degree: np.ndarray  # int32, by node: counted as the links were, so that no reader counts them again


class Sites(Part):
    """Sites of hosts, and the site graph; part of :class:`~rankstore.store.Store`."""

    def derive_sites(self) -> None:
        """Number the sites of hosts added since the last time (call inside a write transaction)."""
        done = self._meta_int("sites_hosts")
        last = self.store.hosts.host_count()
        if last <= done:
            return
        start = done - done % SITE_BLOCK  # the first block that changes, written again whole
        ids = np.zeros(last - start, dtype=np.int32)
        if start < done:
            ids[: done - start] = self._site_block(start)[: done - start]
        cursor = self.db.execute("SELECT id, name FROM hosts WHERE id > ? ORDER BY id", (done,))
        # the names of one chunk looked up (and numbered) at once: a store with a domain graph's 135 million
        # sites is never read whole
        while rows := cursor.fetchmany(1 << 16):
            names = sites_of([host for _, host in rows])
            first = rows[0][0] - 1 - start  # hosts are numbered one after the other
            ids[first : first + len(rows)] = self.ensure_sites(names)
        changed = np.flatnonzero(np.bincount(ids[done - start :]))
        # a site's own hosts counted whole, not added to sites.hosts: that may hold a domain graph's count
        own = self._own_hosts(changed, ids, start)
        self.db.executemany("UPDATE sites SET hosts = max(hosts, ?) WHERE id = ?", zip(own.tolist(), changed.tolist()))
        self.db.executemany(
            "INSERT OR REPLACE INTO host_sites (first, sites) VALUES (?, ?)",
            (
                (first, ids[first - start : first - start + SITE_BLOCK].astype(">i4").tobytes())
                for first in range(start, last, SITE_BLOCK)
            ),
        )
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('sites_hosts', ?)", (str(last),))

    def _own_hosts(self, changed: np.ndarray, ids: np.ndarray, start: int) -> np.ndarray:
        """How many hosts of the store each site of ``changed`` (ascending) has: those of ``ids`` (the hosts'
        site ids from host index ``start`` on) and those of the ``host_sites`` blocks before it."""
        own = np.bincount(ids, minlength=int(changed[-1]) + 1 if len(changed) else 0)[changed]
        if start and len(changed):
            for (blob,) in self.db.execute("SELECT sites FROM host_sites WHERE first < ?", (start,)):
                block = np.frombuffer(blob, dtype=">i4").astype(np.int64)
                at = np.minimum(np.searchsorted(changed, block), len(changed) - 1)
                own += np.bincount(at[changed[at] == block], minlength=len(changed))
        return own

    def _hosts_at_least(self, ids: np.ndarray, hosts: np.ndarray) -> None:
        """``sites.hosts`` of sites ``ids`` raised to ``hosts`` where that is larger (0: no count given)."""
        given = hosts > 0
        self.db.executemany(
            "UPDATE sites SET hosts = max(hosts, ?) WHERE id = ?", zip(hosts[given].tolist(), ids[given].tolist())
        )

    def ensure_sites(self, names: Sequence[str] | pa.Array, hosts: np.ndarray | None = None) -> np.ndarray:
        """The ids of sites named (int64, in order), numbering those the store has not after the known ones:
        a site may come without a host (a Common Crawl domain graph or ranks file names sites directly).
        ``hosts``: each name's number of hosts as a domain graph counts them (0: not given), kept in
        ``sites.hosts`` where larger than what it holds.  Call inside a write transaction.

        Many names at once (a domain graph's vertices, :data:`BULK` or more, a list or a pyarrow string
        array) go to SQL as JSON arrays, a million a statement.  Into a store of at most
        :data:`BULK_KNOWN` sites they go without ``sites_by_name``, which :meth:`reindex` makes again,
        sorted, once the last of them is in: a name repeated across such calls is found then, not here."""
        if len(names) < BULK and not _is_arrow(names):
            if self._unindexed:
                raise RuntimeError("sites are being numbered in bulk: reindex() first")
            named = ensure_named(self.db, "sites", "hosts", names, key_buckets.SITES)
            if hosts is not None:
                self._hosts_at_least(named, hosts)
            return named
        import pyarrow as pa
        import pyarrow.compute as pc

        column = names if isinstance(names, pa.Array) else pa.array(names, pa.string())
        encoded = pc.dictionary_encode(column.cast(pa.string()))
        unique, position = encoded.dictionary, encoded.indices.to_numpy(zero_copy_only=False)
        self.named_again += len(column) - len(unique)
        count = self.site_count()
        if not self._unindexed and count <= BULK_KNOWN:
            self.db.execute("DROP INDEX IF EXISTS sites_by_name")
            # the new names' keys are hashed as they are numbered and added once, in order, by reindex(); until
            # then no reader probes them
            self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('sites_keyed', '0')")
            self._unindexed = True
            self._fresh = _FreshKeys([], [])
            self._known = self._names_and_ids() if count else None
        if self._unindexed:
            ids = np.zeros(len(unique), dtype=np.int64)
            if self._known is not None:
                known_names, known_ids = self._known
                at = pc.index_in(unique, value_set=known_names).to_numpy(zero_copy_only=False)
                found = ~np.isnan(at) if at.dtype.kind == "f" else at >= 0
                ids[found] = known_ids[at[found].astype(np.int64)]
        else:
            ids = self._ids_of(unique)
        counted = None if hosts is None else _largest_by(position, hosts, len(unique))
        fresh = np.flatnonzero(ids == 0)
        if counted is not None and len(fresh) < len(ids):
            known = np.flatnonzero(ids)
            self._hosts_at_least(ids[known], counted[known])
        ids[fresh] = np.arange(count + 1, count + 1 + len(fresh))
        for lo in range(0, len(fresh), _INSERT_ROWS):
            chunk = fresh[lo : lo + _INSERT_ROWS]
            if counted is None:
                self.db.execute(
                    "INSERT INTO sites (id, name, hosts) SELECT key + ?, value, 0 FROM json_each(?)",
                    (int(ids[chunk[0]]), _json_array(unique.take(pa.array(chunk)))),
                )
            else:  # "COUNT NAME" in one JSON string: a second array beside the names would be joined row by row
                prefixed = pc.binary_join_element_wise(
                    pa.array(counted[chunk]).cast(pa.string()), unique.take(pa.array(chunk)), " "
                )
                self.db.execute(
                    "INSERT INTO sites (id, name, hosts) SELECT key + ?, substr(v, i + 1), CAST(substr(v, 1, i - 1)"
                    " AS INTEGER) FROM (SELECT key, value AS v, instr(value, ' ') AS i FROM json_each(?))",
                    (int(ids[chunk[0]]), _json_array(prefixed)),
                )
            keys = url_keys(unique.take(pa.array(chunk)).to_pylist())
            if self._fresh is not None:
                self._fresh.hashes.append(keys)
                self._fresh.ids.append(ids[chunk].astype(np.int32))
            else:
                key_buckets.add(self.db, key_buckets.SITES, keys, ids[chunk])
        return ids[position]

    _unindexed = False  # sites_by_name dropped by a bulk numbering, not yet made again
    named_again = 0  # names a bulk numbering was given more than once in one call (each numbered once)
    _known: tuple[pa.Array, np.ndarray] | None = None  # the sites held before a bulk numbering: names, ids
    _fresh: _FreshKeys | None = None  # the keys of the sites a bulk numbering numbered, until reindex() adds them

    def _names_and_ids(self) -> tuple[pa.Array, np.ndarray]:
        import pyarrow as pa

        rows = self.db.execute("SELECT name, id FROM sites ORDER BY id").fetchall()
        return pa.array([name for name, _ in rows], pa.string()), np.array([i for _, i in rows], dtype=np.int64)

    def _ids_of(self, names: pa.Array) -> np.ndarray:
        """The ids of ``names`` (distinct) by ``sites_by_name``; 0 for a name the store has not."""
        ids = np.zeros(len(names), dtype=np.int64)
        for lo in range(0, len(names), _INSERT_ROWS):
            chunk = names.slice(lo, _INSERT_ROWS)
            rows = self.db.execute(
                "SELECT j.key, s.id FROM json_each(?) j JOIN sites s ON s.name = j.value", (_json_array(chunk),)
            ).fetchall()
            if rows:
                at, found = np.array(rows, dtype=np.int64).T
                ids[lo + at] = found
        return ids

    def reindex(self) -> dict[int, int]:
        """Make ``sites_by_name`` again after a bulk numbering (call in its transaction).  A name numbered
        twice keeps its first id: returns {later id: first id} of those, whose rows are deleted (their ids
        stay unused)."""
        if not self._unindexed:
            return {}
        self._unindexed, self._known = False, None
        try:
            self.db.execute(SITES_BY_NAME)
            self._key_fresh({})
            return {}
        except sqlite3.IntegrityError:
            pass
        self.db.execute("CREATE INDEX sites_by_name_repeated ON sites (name)")
        again: dict[int, int] = {}
        for ids in self.db.execute(
            "SELECT group_concat(id) FROM (SELECT name, id FROM sites ORDER BY name, id) GROUP BY name"
            " HAVING count(*) > 1"
        ):
            first, *later = (int(number) for number in ids[0].split(","))
            again.update(dict.fromkeys(later, first))
        self.db.executemany(  # the first keeps the larger count of hosts
            "UPDATE sites SET hosts = max(hosts, (SELECT hosts FROM sites WHERE id = ?)) WHERE id = ?", again.items()
        )
        self.db.executemany("DELETE FROM sites WHERE id = ?", ((number,) for number in again))
        self.db.execute("DROP INDEX sites_by_name_repeated")
        self.db.execute(SITES_BY_NAME)
        self._key_fresh(again)
        return again

    def _key_fresh(self, again: dict[int, int]) -> None:
        """The keys of the sites a bulk numbering numbered, added to those held (those of the ``again`` ids,
        whose rows were deleted, left out): no name read back.  Without them (a numbering another process
        began), every site's key is written again from its name."""
        fresh, self._fresh = self._fresh, None
        if fresh is None:
            self.key_sites()
            return
        hashes = np.concatenate(fresh.hashes) if fresh.hashes else np.zeros(0, np.int64)
        ids = np.concatenate(fresh.ids) if fresh.ids else np.zeros(0, np.int32)
        fresh.hashes.clear()
        fresh.ids.clear()
        if again:
            kept = ~np.isin(ids, np.fromiter(again, dtype=np.int32, count=len(again)))
            hashes, ids = hashes[kept], ids[kept]
        key_buckets.add(self.db, key_buckets.SITES, hashes, ids)
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('sites_keyed', '1')")

    def key_sites(self) -> None:
        """The sites' name keys (:mod:`.key_buckets`) written again from every site's name (after a bulk
        numbering, or a migration)."""
        key_buckets.write_from_names(self.db, key_buckets.SITES, "sites")
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('sites_keyed', '1')")

    def site_keys(self, last: int) -> key_buckets.HeldKeys:
        """Every site's name key, in key order (a hash two names share with id 0), those of sites numbered
        after ``last`` left out: read in bulk, two blobs a bucket, no name read."""
        return key_buckets.read(self.db, key_buckets.SITES, last)

    def ids_by_key(self, names: Iterable[str]) -> dict[str, int]:
        """{name: site id} of the names whose hash the sites' keys hold (0: a hash two sites' names share,
        or two of the names asked: to ask by name), each name's bucket read once."""
        return key_buckets.ids_by_key(self.db, key_buckets.SITES, names)

    def keyed(self) -> bool:
        """Whether the sites' name keys hold every site (not while a bulk numbering has yet to write them)."""
        return self.db.execute("SELECT value FROM meta WHERE key = 'sites_keyed'").fetchone() != ("0",)

    def abandon_bulk(self) -> None:
        """Forget a bulk numbering whose transaction rolled back (the index is back with it)."""
        self._unindexed, self._known, self._fresh = False, None, None

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
        # mapped (:mod:`.mapped`): one copy for every process, where each read it whole (4 bytes a host)
        sites = self.store.mapped.blocks_array("host-sites", "host_sites", "sites", key[0] if key else None)
        self._host_sites = (key, sites)
        return sites

    def site_batches(self, size: int = 1 << 16) -> Iterator[SiteBatch]:
        """Every site in id order, ``size`` at a time, as columns."""
        cursor = self.db.execute("SELECT id, name, nullif(hosts, 0) FROM sites ORDER BY id")
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

    def hosts_of_site(self, site: int) -> np.ndarray:
        """Host ids (1-based) of every host of a site."""
        sites = self.host_sites()
        read_ahead(sites)
        return np.flatnonzero(sites == site) + 1

    def pages_of_site(self, site: int) -> np.ndarray:
        """Page indices of every page of a site's hosts."""
        hosts = self.hosts_of_site(site)
        if not len(hosts):
            return np.zeros(0, np.int64)
        page_hosts = self.store.hosts.page_hosts()
        read_ahead(page_hosts)
        if len(hosts) == 1:
            return np.flatnonzero(page_hosts == hosts[0])
        member = np.zeros(int(hosts[-1]) + 1, dtype=bool)  # a table by host id: one pass over the pages
        member[hosts] = True
        return np.flatnonzero(member[np.minimum(page_hosts, len(member) - 1)] & (page_hosts < len(member)))

    def site_count(self) -> int:
        """How many sites: the largest id, as ids are given one after the other."""
        return self.db.execute("SELECT coalesce(max(id), 0) FROM sites").fetchone()[0]

    def site_graph(self, include_nofollow: bool = False) -> LevelGraph:
        """The site graph (see the module docstring) as in-link CSR over the site ids.

        The host graph is never held: its links come from the page graph's in-link blocks a slice at a time
        (:meth:`.Hosts.host_links`) and are mapped to sites as they come.  Up to :data:`FOLD_IN_MEMORY` links
        (page links and loaded site links together) are folded at once by :func:`.fold_links`; more go
        :data:`FOLD_SLICE` at a time into a :class:`~rankstore.linksort.LinkSorter` (spilling beside the
        store), so that the fold of a host graph of hundreds of millions of hosts holds a host id a page, a
        site id a host, the sorter's bound and the folded graph, never an array a host link: the same graph
        either way."""
        self.store.ensure_derived()
        with self.snapshot():
            return self._folded(include_nofollow)

    def _folded(self, include_nofollow: bool) -> LevelGraph:
        """:meth:`site_graph`, inside its snapshot."""
        sites = self.host_sites()
        count = self.site_count()
        host_members = self.store.hosts.host_members()
        loaded = self.store.site_links.links(count)
        links = self._host_links_as_sites(sites, include_nofollow)
        first = next(links, None)
        if first is None:
            # no link between hosts: the loaded domain graph is the site graph as it is stored, already
            # coalesced and without self-links (at 2 billion links no key array a link is made to fold it)
            members = self._sites_in_graph(count, host_members, loaded)
            return LevelGraph(count, loaded.indptr, loaded.indices, None, members)
        # a Common Crawl host graph (one page a host, however the hosts were numbered) folds as Common Crawl
        # folds it: each pair of sites once; any other counts the page links between two sites
        once = self.store.hosts.each_host_one_page()
        page_links, nofollow = self.store.graph.graph_counts()
        # the page links bound the host links (those within a host are none), which are not counted before
        # they are read
        total = page_links - (0 if include_nofollow else nofollow) + len(loaded.indices)
        loaded_links = _slices(_MappedRows(loaded.indptr, loaded.indices, None), FOLD_SLICE)
        pieces = _after(first, itertools.chain(links, loaded_links))
        del first
        if total <= FOLD_IN_MEMORY:
            graph = _fold_at_once(count, pieces, once)
        else:
            graph = self._fold_bounded(count, pieces, total, once)
        graph.members = self._sites_in_graph(count, host_members, loaded)
        return graph

    def _host_links_as_sites(self, sites: np.ndarray, include_nofollow: bool) -> Iterator[_SiteLinks]:
        """The host graph's links (:meth:`.Hosts.host_links`), each as a link between its hosts' sites, about
        :data:`FOLD_SLICE` at a time; ``sites``: each host's site id by host index."""
        hosts = self.store.hosts.host_count()
        numbered = len(sites) >= hosts and not (hosts and int(sites[:hosts].min()) == 0)
        for links in self.store.hosts.host_links(include_nofollow, FOLD_SLICE):
            if not numbered:
                raise RuntimeError("sites are not numbered for every host: run `rankstore build` again")
            mapped = _SiteLinks(sites[links.dst - 1], sites[links.src - 1])
            del links  # the host ids let go while the sites are folded
            yield mapped

    def _hosts_link(self, include_nofollow: bool) -> bool:
        """Whether any page links to a page of another host (read up to the first such link)."""
        links = self.store.hosts.host_links(include_nofollow, step=1)
        try:
            return next(links, None) is not None
        finally:
            links.close()

    def ordered_site_graph(
        self, order_of: Callable[[np.ndarray, np.ndarray], np.ndarray], include_nofollow: bool = False
    ) -> OrderedSiteGraph | LevelGraph:
        """The site graph.  When it is a loaded domain graph alone (no link between hosts: nothing to fold),
        read in two passes straight into the order ``order_of(out_degree, members)`` gives (the members' site
        indices; both arguments by site index): the links are counted (:meth:`.SiteLinks.degrees`), laid
        out, then unpacked into place, so that no copy of them in another order is made (at 2 billion links
        it would not fit beside them).  Otherwise folded by site, as :meth:`site_graph` gives it."""
        self.store.ensure_derived()
        if self.store.site_links.count() == 0 or self._hosts_link(include_nofollow):
            return self.site_graph(include_nofollow)
        host_members = self.store.hosts.host_members()
        count = self.site_count()
        in_degree, out_degree = self.store.site_links.degrees(count)
        members = self._with_pages(count, host_members)
        members |= in_degree > 0
        members |= out_degree > 0
        order = np.asarray(order_of(out_degree, members), dtype=np.int32)
        if len(order) != int(np.count_nonzero(members)) or not members[order].all():
            raise ValueError("order_of: not each node of the site graph once")
        del members
        new_of = np.full(count, -1, dtype=np.int32)
        new_of[order] = np.arange(len(order), dtype=np.int32)
        indptr = np.zeros(len(order) + 1, dtype=np.int64)
        np.cumsum(in_degree[order], out=indptr[1:])
        del in_degree
        out_degree = out_degree[order]
        indices = self.store.site_links.links_placed(count, new_of, indptr)
        return OrderedSiteGraph(count, order, indptr, indices, out_degree)

    def _fold_bounded(self, count: int, pieces: Iterable[_SiteLinks], total: int, once: bool) -> LevelGraph:
        """:func:`.fold_links` of the links ``pieces`` gives, slice by slice through a LinkSorter: memory
        bounded by its ``memory``, one slice and the largest bucket, beside the folded graph itself (its parts
        gathered, then copied into arrays of the pairs kept, each part let go once copied).  ``total``: about
        how many links come (the buckets' size)."""
        from ..linksort import BUCKET_ROWS, LinkSorter  # here: linksort imports the store's site_links

        # a LinkSorter bucket of sites holding about FOLD_BUCKET_LINKS links, at most 32767 buckets (the
        # sorter's radix pass on 16-bit bucket numbers)
        bucket_rows = min(BUCKET_ROWS, max(count * FOLD_BUCKET_LINKS // max(total, 1), -(-count // 32767), 1))
        where = os.path.dirname(os.path.abspath(self.store.path))
        # a folder of its own (not the build's spill folder, which a LinkSorter empties on start), so that a
        # build or another ranking of the store at the same time keeps its files; named by this process, so
        # that what a killed ranking left is known as such and goes
        prefix = os.path.join(where, os.path.basename(self.store.path) + "-fold-")
        for left in glob.glob(glob.escape(prefix) + "*"):
            owner = left[len(prefix) :]
            if owner.isdigit() and not _running(int(owner)):
                shutil.rmtree(left, ignore_errors=True)
        folder = f"{prefix}{os.getpid()}"
        indptr = np.zeros(count + 1, dtype=np.int64)
        kept_indices: list[np.ndarray] = []
        kept_weights: list[np.ndarray] = []
        at = 0
        with LinkSorter(count, folder, FOLD_MEMORY, bucket_rows, summed=not once) as sorter:
            for piece in pieces:
                sorter.add(piece.src - 1, piece.dst - 1)  # a link within a site goes here
                del piece
            folded = sorter.parts() if once else sorter.weighted_parts()
            for item in folded:
                links, summed = (item, None) if isinstance(item, InLinkPart) else (item.links, item.weights)
                kept_indices.append(links.indices)
                if summed is not None:
                    kept_weights.append(summed)
                indptr[links.first + 1 : links.first + len(links.indptr)] = at + links.indptr[1:]
                at += len(links.indices)
                del item, links, summed
        return LevelGraph(
            count,
            indptr,
            _joined(kept_indices, at, np.int32),
            _joined(kept_weights, at, np.float64) if not once else None,
        )

    def _with_pages(self, count: int, hosts: np.ndarray | None) -> np.ndarray:
        """By site index: True at a site with a host that has pages (``hosts``: the host graph's members)."""
        sites = self.host_sites()
        members = np.zeros(count, dtype=bool)
        with_pages = sites[: len(hosts)][hosts] if hosts is not None else sites
        members[with_pages[with_pages > 0] - 1] = True
        return members

    def _sites_in_graph(self, count: int, hosts: np.ndarray | None, loaded) -> np.ndarray | None:
        """The sites that are nodes of the site graph: those of a host with pages, and those a domain graph's
        links name (a site only a ranks file names is none); None when that is every site."""
        members = self._with_pages(count, hosts)
        if len(loaded.indices):
            members[: len(loaded.indptr) - 1] |= np.diff(loaded.indptr) > 0
            for lo in range(0, len(loaded.indices), _MARK_LINKS):  # numpy widens an index array to int64: a slice
                members[loaded.indices[lo : lo + _MARK_LINKS]] = True
        return None if members.all() else members


@dataclass(frozen=True)
class _MappedRows:
    """An in-link CSR whose nodes fold into sites (``site_of``: each node's site id by node index) or are the
    sites themselves, by index (``site_of`` None: the loaded domain graph)."""

    indptr: np.ndarray
    indices: np.ndarray
    site_of: np.ndarray | None


@dataclass(frozen=True)
class _SiteLinks:
    """Links between site ids (from 1), ``src[i] -> dst[i]``, each one link (a site's links to itself among
    them, for the fold to leave out)."""

    dst: np.ndarray
    src: np.ndarray


def _slices(rows: _MappedRows, step: int) -> Iterator[_SiteLinks]:
    """The links of ``rows`` as site links, about ``step`` at a time (whole rows: a row with more, alone)."""
    n = len(rows.indptr) - 1
    first = 0
    while first < n:
        last = int(np.searchsorted(rows.indptr, rows.indptr[first] + step, side="right")) - 1
        last = min(max(last, first + 1), n)
        lo, hi = int(rows.indptr[first]), int(rows.indptr[last])
        if hi > lo:
            counts = np.diff(rows.indptr[first : last + 1])
            if rows.site_of is None:
                dst = np.repeat(np.arange(first + 1, last + 1, dtype=np.int32), counts)
                src = rows.indices[lo:hi] + 1
            else:
                dst = np.repeat(rows.site_of[first:last], counts)
                src = rows.site_of[rows.indices[lo:hi]]
            yield _SiteLinks(dst, src)
        first = last


def _after(first: _SiteLinks, rest: Iterator[_SiteLinks]) -> Iterator[_SiteLinks]:
    """``first``, then what ``rest`` gives, ``first`` let go once it is folded."""
    yield first
    del first
    yield from rest


def _fold_at_once(count: int, pieces: Iterable[_SiteLinks], once: bool) -> LevelGraph:
    """:func:`.fold_links` of every link ``pieces`` gives at once (a key array a link: for small graphs)."""
    given = list(pieces)
    if not given:
        return fold_links(count, np.zeros(0, np.int32), np.zeros(0, np.int32), None, once=once)
    dst = np.concatenate([piece.dst for piece in given])
    src = np.concatenate([piece.src for piece in given])
    del given
    return fold_links(count, dst, src, None, once=once)


def _joined(parts: list[np.ndarray], size: int, dtype: type) -> np.ndarray:
    """``parts`` one after the other in one array of ``size``, each part let go once copied (the list
    emptied), so that the parts and the whole are not held twice over."""
    whole: np.ndarray = np.empty(size, dtype=dtype)
    at = 0
    parts.reverse()
    while parts:
        part = parts.pop()
        whole[at : at + len(part)] = part
        at += len(part)
        del part
    return whole


def _running(pid: int) -> bool:
    """Whether process ``pid`` still runs (one of another user's does too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _largest_by(position: np.ndarray, values: np.ndarray, count: int) -> np.ndarray:
    """The largest of ``values`` at each of ``count`` positions (``position[i]`` of ``values[i]``; 0 where none)."""
    if len(position) == count:  # each name once: dictionary_encode numbered them in order
        return np.asarray(values, dtype=np.int64)
    largest = np.zeros(count, dtype=np.int64)
    np.maximum.at(largest, position, values)
    return largest


def _is_arrow(names: object) -> bool:
    """Whether ``names`` is a pyarrow array (none can be before pyarrow is imported)."""
    pa = sys.modules.get("pyarrow")
    return pa is not None and isinstance(names, pa.Array)


def _json_array(names: pa.Array) -> str:
    """A JSON array of strings: joined in C when no name needs escaping (a domain graph's never do)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(names) == 0:
        return "[]"
    if pc.any(pc.match_substring_regex(names, r'["\\\x00-\x1f]')).as_py():
        return json.dumps(names.to_pylist())
    whole = pa.ListArray.from_arrays(pa.array([0, len(names)], pa.int32()), names.cast(pa.string()))
    return '["' + pc.binary_join(whole, '","')[0].as_py() + '"]'
