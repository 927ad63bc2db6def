"""The pages the proxy's user viewed (``visits``), and forgetting them.

A build of the proxy's record (:mod:`rankstore.sources.record`) writes a row a
view: the page, the time, and the identity of the record line that told it
(its primary key), so that building a grown record again adds only its new
lines' views.  :meth:`Visits.counts` counts them by page, host or site, for a
ranking personalised by visits and for usage against rank.

:meth:`Visits.forget` takes a host's pages, or the views before a date, out
of the store: the views, the pages' crawled content (out-links, their notes,
titles, history), and the names of the pages no kept link points to (their
rows stay, as page ids index every array, under a URL that names nothing);
ranking versions that ranked a forgotten page are dropped.  The freed pages
of the file are then rewritten by ``VACUUM`` and the log emptied, so that no
byte of the file names what was forgotten.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from .base import Part
from .pages import pack_targets, unpack_targets, url_key

if TYPE_CHECKING:
    from ..sources.record import Visit

__all__ = ["Visits", "VisitCounts", "ForgetReport", "FORGOTTEN_HOST"]

_IN_CHUNK = 500
FORGOTTEN_HOST = "forgotten.invalid"  # the host of a forgotten page's URL (RFC 2606: never a real one)


@dataclass(frozen=True)
class VisitCounts:
    """Views counted at a level: ``ids`` (page, host or site ids, ascending) and ``counts`` beside them."""

    level: str
    ids: np.ndarray
    counts: np.ndarray


@dataclass
class ForgetReport:
    """What :meth:`Visits.forget` took out of the store."""

    visits: int = 0  # views deleted
    pages: int = 0  # pages whose crawled content went
    renamed: int = 0  # of those (and the host's pages only linked to), the ones whose URL no longer names them
    links: int = 0  # links from pages kept to the forgotten host's pages
    hosts: int = 0  # hosts whose name went (every page of theirs forgotten)
    sites: int = 0  # sites whose name went (every host of theirs forgotten)
    rankings: list[str] = field(default_factory=list)  # ranking versions dropped, as "name vN"


def _in(ids: Sequence[int]) -> Iterable[tuple[list[int], str]]:
    """``ids`` in chunks, each with its SQL placeholders."""
    for start in range(0, len(ids), _IN_CHUNK):
        chunk = list(ids[start : start + _IN_CHUNK])
        yield chunk, ",".join("?" * len(chunk))


class Visits(Part):
    """Views of pages from the proxy's record; part of :class:`~rankstore.store.Store`."""

    def add(self, visits: Sequence[Visit]) -> int:
        """Store views (their pages added if the store lacks them), in one transaction; a view whose line is
        stored already is passed over.  Returns the views new to the store."""
        if not visits:
            return 0
        with self.transaction():
            ids = self.store.pages.page_ids([visit.url for visit in visits]).tolist()
            before = self.count()
            self.db.executemany(
                "INSERT OR IGNORE INTO visits (line, page_id, at) VALUES (?, ?, ?)",
                ((visit.line, page_id, visit.at) for visit, page_id in zip(visits, ids)),
            )
            return self.count() - before

    def count(self) -> int:
        return self.db.execute("SELECT count(*) FROM visits").fetchone()[0]

    def counts(self, since: datetime | None = None, level: str = "page") -> VisitCounts:
        """Views since ``since`` (all when None) counted by page, host or site (by the store's numbering of
        hosts and sites, derived at each build's end)."""
        if level not in ("page", "host", "site"):
            raise ValueError(f"level {level!r}: page, host or site")
        sql = "SELECT page_id, count(*) FROM visits" + (" WHERE at >= ?" if since is not None else "")
        rows = self.db.execute(sql + " GROUP BY page_id ORDER BY page_id", (int(since.timestamp()),) if since else ())
        flat = np.array([value for row in rows for value in row], dtype=np.int64).reshape(-1, 2)
        ids, counts = flat[:, 0], flat[:, 1]
        if level == "page":
            return VisitCounts(level, ids, counts)
        hosts = self.store.hosts.page_hosts()
        known = ids <= len(hosts)
        ids, counts = hosts[ids[known] - 1].astype(np.int64), counts[known]
        if level == "site":
            sites = self.store.sites.host_sites()
            known = (ids > 0) & (ids <= len(sites))
            ids, counts = sites[ids[known] - 1].astype(np.int64), counts[known]
        kept = ids > 0  # a page or host numbered since the last build's end has none yet
        total = np.bincount(ids[kept], weights=counts[kept]).astype(np.int64)
        found = np.flatnonzero(total)
        return VisitCounts(level, found.astype(np.int64), total[found])

    # ------------------------------------------------------------------ forget

    def forget(self, host: str | None = None, before: datetime | None = None) -> ForgetReport:
        """Take out of the store the views of ``host``'s pages before ``before`` (either alone: every view of
        the host, or every view before the date).  A page left without views loses its crawled content;
        with ``host`` alone, every page of the host does, and the links kept pages had to them go too.  A
        forgotten page that no kept link points to is renamed (``http://forgotten.invalid/ID``), and so is
        a host (a site) all of whose pages (hosts) are; ranking versions that ranked a forgotten page are
        dropped (rank again).  Then the file is rewritten (``VACUUM``) and its log emptied: no byte of it
        names what was forgotten."""
        if host is None and before is None:
            raise ValueError("forget what: a host, a date, or both")
        whole_host = host is not None and before is None
        report = ForgetReport()
        self.store.graph.ensure_graph()
        self.db.execute("PRAGMA secure_delete = ON")  # what is deleted is zeroed as it goes
        try:
            with self.transaction():
                report.visits, viewed = self._delete_views(host, before)
                if whole_host:
                    assert host is not None
                    forgotten = [row[0] for row in self.db.execute("SELECT id FROM pages WHERE host = ?", (host,))]
                else:
                    forgotten = self._unviewed(viewed)
                crawled = self._drop_content(forgotten)
                report.pages = crawled
                if whole_host:
                    assert host is not None
                    report.links = self._drop_links_to(forgotten, host)
                self.store.graph.derive_graph()
                renamed = self._nameless(forgotten)
                report.renamed = len(renamed)
                report.hosts, report.sites = self._rename(renamed)
                report.rankings = self._drop_rankings(forgotten)
                if crawled or renamed:
                    self.db.execute("INSERT INTO titles (titles) VALUES ('rebuild')")
        finally:
            self.db.execute("PRAGMA secure_delete = FAST")
        self.db.execute("VACUUM")  # every page of the file written anew: freed pages and slack hold nothing
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.store.mapped.prune(wipe=True)  # the dropped versions' mapped files, overwritten before they go
        return report

    def _delete_views(self, host: str | None, before: datetime | None) -> tuple[int, list[int]]:
        where: list[str] = []
        args: list[object] = []
        if host is not None:
            where.append("page_id IN (SELECT id FROM pages WHERE host = ?)")
            args.append(host)
        if before is not None:
            where.append("at < ?")
            args.append(int(before.timestamp()))
        condition = " AND ".join(where)
        viewed = [row[0] for row in self.db.execute(f"SELECT DISTINCT page_id FROM visits WHERE {condition}", args)]
        deleted = self.db.execute(f"DELETE FROM visits WHERE {condition}", args).rowcount
        return deleted, viewed

    def _unviewed(self, pages: Sequence[int]) -> list[int]:
        """Of ``pages``, those no view is left of."""
        left: set[int] = set()
        for chunk, marks in _in(pages):
            left.update(
                row[0]
                for row in self.db.execute(f"SELECT DISTINCT page_id FROM visits WHERE page_id IN ({marks})", chunk)
            )
        return [page for page in pages if page not in left]

    def _drop_content(self, pages: Sequence[int]) -> int:
        """The pages' out-links, their notes and history, title and capture: gone.  Returns how many had
        been crawled."""
        crawled = 0
        for chunk, marks in _in(pages):
            crawled += self.db.execute(
                f"SELECT count(*) FROM pages WHERE crawled AND id IN ({marks})", chunk
            ).fetchone()[0]
            for table, column in (
                ("out_links", "src"),
                ("link_notes", "src"),
                ("link_births", "src"),
                ("lost_links", "src"),
                ("lost_links", "dst"),
            ):
                self.db.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", chunk)
            self.db.execute(
                "UPDATE pages SET title = NULL, crawled = 0, status = NULL, canonical_url = NULL, fetched_at = NULL"
                f" WHERE id IN ({marks})",
                chunk,
            )
        return crawled

    def _drop_links_to(self, pages: Sequence[int], host: str) -> int:
        """The links kept pages have to ``pages`` (read from the in-link arrays, still those from before):
        taken out of their out-links, notes and births.  Returns how many."""
        gone = set(pages)
        sources: set[int] = set()
        for page in pages:
            linking, _ = self.store.graph.in_links_of(page)
            sources.update(int(index) + 1 for index in linking.tolist())
        sources -= gone
        dropped = 0
        targets_gone = np.fromiter(gone, dtype=np.int64, count=len(gone))
        for src in sorted(sources):
            parts = [
                row[0] for row in self.db.execute("SELECT targets FROM out_links WHERE src = ? ORDER BY part", (src,))
            ]
            targets = unpack_targets(parts)
            kept = targets[~np.isin(targets, targets_gone)]
            dropped += len(targets) - len(kept)
            self.db.execute("DELETE FROM out_links WHERE src = ?", (src,))
            self.db.executemany(
                "INSERT INTO out_links (src, part, targets) VALUES (?, ?, ?)",
                ((src, part, blob) for part, blob in enumerate(pack_targets(kept))),
            )
            for chunk, marks in _in(pages):
                self.db.execute(f"DELETE FROM link_notes WHERE src = ? AND dst IN ({marks})", [src, *chunk])
                self.db.execute(f"DELETE FROM link_births WHERE src = ? AND dst IN ({marks})", [src, *chunk])
        # a kept page's canonical link to the host names it too
        self.db.execute(
            "UPDATE pages SET canonical_url = NULL WHERE instr(canonical_url, ?) OR instr(canonical_url, ?)",
            (f"//{host}/", f"//{host}?"),
        )
        return dropped

    def _nameless(self, pages: Sequence[int]) -> list[int]:
        """Of ``pages``, those no link of the graph (derived again) points to: their URLs can go."""
        return [page for page in pages if not len(self.store.graph.in_links_of(page)[0])]

    def _rename(self, pages: Sequence[int]) -> tuple[int, int]:
        """The pages' URLs replaced by ``http://forgotten.invalid/ID`` (their URL keys with them); a host all
        of whose pages are renamed, and a site all of whose hosts are, renamed ``forgotten-ID.invalid``.
        Returns (hosts, sites) renamed."""
        for chunk, marks in _in(pages):
            old = self.db.execute(f"SELECT url FROM pages WHERE id IN ({marks})", chunk).fetchall()
            self.db.executemany("DELETE FROM page_keys WHERE url_hash = ?", ((url_key(url),) for (url,) in old))
        renamed = [(page, f"http://{FORGOTTEN_HOST}/{page}") for page in pages]
        self.db.executemany(
            "UPDATE pages SET url = ?, host = ? WHERE id = ?", ((url, FORGOTTEN_HOST, page) for page, url in renamed)
        )
        self.db.executemany(
            "INSERT OR IGNORE INTO page_keys (url_hash, page_id) VALUES (?, ?)",
            ((url_key(url), page) for page, url in renamed),
        )
        if not pages:
            return 0, 0
        page_hosts = self.store.hosts.page_hosts()
        held = np.asarray(pages, dtype=np.int64)
        held = held[held <= len(page_hosts)]
        hosts = np.unique(page_hosts[held - 1])
        hosts = hosts[hosts > 0]
        named = np.zeros(len(page_hosts), dtype=bool)  # pages whose URL still names them
        names_left = [row[0] for row in self.db.execute("SELECT id FROM pages WHERE host != ?", (FORGOTTEN_HOST,))]
        left = np.asarray(names_left, dtype=np.int64)
        named[left[left <= len(page_hosts)] - 1] = True
        still = np.unique(page_hosts[named])
        nameless_hosts = hosts[~np.isin(hosts, still)].tolist()  # hosts none of whose pages keep a name
        self.db.executemany(
            "UPDATE hosts SET name = ? WHERE id = ?", ((f"forgotten-{h}.invalid", h) for h in nameless_hosts)
        )
        if not nameless_hosts:
            return 0, 0
        self.store.hosts.key_hosts()  # the keys of the old names go with them
        host_sites = self.store.sites.host_sites()
        gone_hosts = np.asarray(nameless_hosts, dtype=np.int64)
        gone_hosts = gone_hosts[gone_hosts <= len(host_sites)]
        sites = np.unique(host_sites[gone_hosts - 1])
        named_hosts = np.ones(len(host_sites), dtype=bool)
        named_hosts[gone_hosts - 1] = False
        for (h,) in self.db.execute("SELECT id FROM hosts WHERE name LIKE 'forgotten-%.invalid'"):
            if h <= len(host_sites):
                named_hosts[h - 1] = False
        sites_still = set(np.unique(host_sites[named_hosts]).tolist())
        nameless_sites = [int(s) for s in sites.tolist() if s > 0 and s not in sites_still]
        self.db.executemany(
            "UPDATE sites SET name = ? WHERE id = ?", ((f"forgotten-{s}.invalid", s) for s in nameless_sites)
        )
        if nameless_sites:
            self.store.sites.key_sites()  # the keys of the old names go with them
        return len(nameless_hosts), len(nameless_sites)

    def _drop_rankings(self, pages: Sequence[int]) -> list[str]:
        """Ranking versions that ranked any of ``pages`` (or their hosts or sites): deleted, as "name vN"."""
        if not pages:
            return []
        first_page = min(pages)
        page_hosts = self.store.hosts.page_hosts()
        held = np.asarray(pages, dtype=np.int64)
        hosts = page_hosts[held[held <= len(page_hosts)] - 1]
        hosts = hosts[hosts > 0]
        host_sites = self.store.sites.host_sites()
        sites = host_sites[hosts[hosts <= len(host_sites)] - 1] if len(hosts) else hosts
        sites = sites[sites > 0]
        first = {
            "page": first_page,
            "host": int(hosts.min()) if len(hosts) else None,
            "site": int(sites.min()) if len(sites) else None,
        }
        dropped = []
        for ranking_id, name, version, level, ranked in self.db.execute(
            "SELECT id, name, version, level, pages FROM rankings ORDER BY name, version"
        ).fetchall():
            lowest = first.get(level)
            if lowest is not None and ranked >= lowest:
                self.db.execute("DELETE FROM ranking_blocks WHERE ranking_id = ?", (ranking_id,))
                self.db.execute("DELETE FROM rankings WHERE id = ?", (ranking_id,))
                dropped.append(f"{name} v{version}")
        return dropped
