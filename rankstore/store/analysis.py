"""What an analyst asks of the backlinks: why a page ranks, which links are new, which were lost, per build.

Every answer comes from one ranking version and the in-link arrays, read
inside one snapshot.  A backlink's *contribution* is what the link passes to
its target, d·PR(v)·w(v,u)/W(v) (w/W the link's share of v's followed
out-links; 1/C(v) unweighted), read as ``votes[v]·w`` from the version; its
*share* is that over PR(u).  The rest of PR(u) comes from the random jump,
(1-d)·E(u), and from what pages without out-links pass on; the shares of
every followed backlink and those two add up to 1.  Nofollow links (unless
the ranking counted them) are listed apart, with contribution 0.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field

import numpy as np

from .errors import StoreError
from .queries import QueriesMixin
from .rankings import RankingArrays

__all__ = ["AnalysisMixin", "BacklinkReport", "InSlice", "SORTS"]

SORTS = ("pagerank", "contribution")


@dataclass
class InSlice:
    """One page's in-links: source page indices, and per link its nofollow flag, weight and first build."""

    sources: np.ndarray  # int32 page indices
    nofollow: np.ndarray | None  # bool, or None: every link follows
    weights: np.ndarray | None  # float64, or None: every link weighs 1
    born: np.ndarray  # int32 build ids


@dataclass
class BacklinkReport:
    """A page's backlinks as an analyst reads them (see the module docstring)."""

    url: str
    pagerank: float | None
    backlinks: int  # every backlink (followed or not) that passes the filter
    rows: list[dict]  # the chosen followed backlinks, best first by the sort
    nofollow_rows: list[dict] = field(default_factory=list)  # nofollow links, best PageRank first
    links_share: float | None = None  # of PR(u), from every followed backlink (not only those shown)
    jump_share: float | None = None  # of PR(u), from the random jump (1-d)E(u)
    sinks_share: float | None = None  # of PR(u), what pages without out-links pass on (and rounding)


class AnalysisMixin(QueriesMixin):
    """Backlink analysis; part of :class:`~rankstore.store.Store`."""

    db: sqlite3.Connection

    def in_slice(self, page_id: int) -> InSlice:
        """The in-links of page ``page_id`` with everything the in-link arrays keep about each."""
        row = self.db.execute(
            "SELECT first, offsets, sources, nofollow, weights, born FROM in_links WHERE first <= ?"
            " ORDER BY first DESC LIMIT 1",
            (page_id - 1,),
        ).fetchone()
        empty = np.zeros(0, dtype=np.int32)
        if row is None:
            return InSlice(empty, None, None, empty)
        first, offsets, sources, nofollow, weights, born = row
        at = page_id - 1 - first
        if 4 * (at + 1) >= len(offsets):
            return InSlice(empty, None, None, empty)
        start, stop = np.frombuffer(offsets, dtype=np.int32, count=2, offset=4 * at).tolist()
        count = stop - start
        found = np.frombuffer(sources, dtype=np.int32, count=count, offset=4 * start)
        flags = np.frombuffer(nofollow, dtype=bool, count=count, offset=start) if nofollow else None
        weight = np.frombuffer(weights, dtype=np.float64, count=count, offset=8 * start) if weights else None
        if born:
            births = np.frombuffer(born, dtype=">i4", count=count, offset=4 * start).astype(np.int32)
        else:
            births = np.full(count, self._graph_born(), dtype=np.int32)
        return InSlice(found, flags, weight, births)

    def _graph_born(self) -> int:
        """The build that first saw every link, while one did (0 when the store does not know)."""
        row = self.db.execute("SELECT value FROM meta WHERE key = 'graph_born'").fetchone()
        return int(row[0]) if row and row[0] else 0

    def since_build(self, since: str) -> int:
        """A build id from ``since``: a build number, or a date/time (the last build started by then)."""
        text = since.strip()
        if text.isdigit():
            build = int(text)
            if self.db.execute("SELECT 1 FROM builds WHERE id = ?", (build,)).fetchone() is None:
                raise StoreError(f"no build {build} (`rankstore builds` lists them)")
            return build
        for form in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d"):
            try:
                moment = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.strptime(text, form))
                break
            except ValueError:
                continue
        else:
            raise StoreError(f"{since!r}: give a build number or a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, UTC)")
        if len(text) == 10:  # a day: the builds of that day are after it
            moment = moment[:10] + "T00:00:00Z"
        row = self.db.execute("SELECT max(id) FROM builds WHERE started_at < ?", (moment,)).fetchone()
        return row[0] or 0

    def backlink_report(
        self,
        url: str,
        name: str = "pagerank",
        sort: str = "pagerank",
        since: int | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> BacklinkReport:
        """The backlinks of ``url`` with their contribution and share, new since build ``since`` if given."""
        if sort not in SORTS:
            raise ValueError(f"sort must be one of {', '.join(SORTS)}, not {sort!r}")
        with self.snapshot():
            ranking_id, _ = self.ranking_head(name)
            arrays = self.ranking_arrays(ranking_id)
            params = self.ranking_params(ranking_id)
            target = self.page_id(url)
            if target is None:
                raise StoreError(f"{url}: not in the store")
            links = self.in_slice(target)
            counted = np.ones(len(links.sources), dtype=bool)
            if links.nofollow is not None and not params.get("include_nofollow", False):
                counted = ~links.nofollow
            contribution = self._contributions(arrays, links, counted, params)
            pagerank = float(arrays.scores[target - 1]) if target - 1 < arrays.pages else None
            report = BacklinkReport(url, pagerank, 0, [])
            if contribution is not None and pagerank:
                report.links_share = float(contribution.sum() / pagerank)
                report.jump_share = self._jump(ranking_id, target, arrays.pages, params) / pagerank
                rest = 1.0 - report.links_share - report.jump_share
                report.sinks_share = 0.0 if abs(rest) < 1e-12 else rest  # rounding, not rank
            chosen = np.ones(len(links.sources), dtype=bool) if since is None else links.born > since
            report.backlinks = int(chosen.sum())
            followed = np.flatnonzero(chosen & counted)
            if sort == "contribution" and contribution is not None:
                values = contribution[followed]
                order = np.lexsort((arrays.positions_of(links.sources[followed]), -values))
                picked = followed[order[offset : offset + limit]]
            else:
                best = arrays.best_of(links.sources[followed], offset + limit)[offset:]
                picked = followed[best]
            report.rows = self._link_rows(arrays, links, picked, contribution, pagerank, target)
            others = np.flatnonzero(chosen & ~counted)
            if len(others):
                best = arrays.best_of(links.sources[others], limit)
                report.nofollow_rows = self._link_rows(arrays, links, others[best], None, pagerank, target)
        return report

    def _contributions(
        self, arrays: RankingArrays, links: InSlice, counted: np.ndarray, params: dict
    ) -> np.ndarray | None:
        """What each in-link passes to its target in this version (0 for a link that casts no vote)."""
        if arrays.votes is None:
            return None
        inside = links.sources < arrays.pages
        votes = np.zeros(len(links.sources))
        votes[inside] = arrays.votes[links.sources[inside]]
        if links.weights is not None and params.get("weighted", True):
            votes *= links.weights
        votes[~counted] = 0.0
        return votes

    def _jump(self, ranking_id: int, target: int, pages: int, params: dict) -> float:
        """(1-d)·E(u): what the random jump gives page ``target``."""
        damping = float(params.get("damping", 0.85))
        teleport = self.teleport_of(ranking_id)
        if teleport is None:
            return (1.0 - damping) / pages
        ids, weights = teleport
        at = np.flatnonzero(ids == target)
        return (1.0 - damping) * float(weights[at[0]]) if len(at) else 0.0

    def _link_rows(
        self,
        arrays: RankingArrays,
        links: InSlice,
        picked: np.ndarray,
        contribution: np.ndarray | None,
        pagerank: float | None,
        target: int,
    ) -> list[dict]:
        indices = links.sources[picked].tolist()
        rows = self._rows(arrays, indices)
        anchors = (
            dict(
                self.db.execute(
                    f"SELECT src, anchor FROM link_notes WHERE dst = ? AND src IN ({','.join('?' * len(indices))})"
                    " AND anchor IS NOT NULL",
                    [target, *(i + 1 for i in indices)],
                )
            )
            if indices
            else {}
        )
        for row, at, index in zip(rows, picked.tolist(), indices):
            row["nofollow"] = bool(links.nofollow[at]) if links.nofollow is not None else False
            row["anchor"] = anchors.get(index + 1)
            value = float(contribution[at]) if contribution is not None else (0.0 if row["nofollow"] else None)
            row["contribution"] = value
            row["share"] = value / pagerank if value is not None and pagerank else None
            row["first_seen"] = int(links.born[at]) or None
        return rows

    def lost_backlinks(
        self, url: str, name: str = "pagerank", since: int | None = None, limit: int = 50, offset: int = 0
    ) -> list[dict]:
        """Links to ``url`` that a recrawl of their source page no longer found (and that have not come back),
        lost after build ``since`` if given; best PageRank of the source first."""
        with self.snapshot():
            arrays = self.ranking_arrays(self.ranking_head(name)[0])
            target = self.page_id(url)
            if target is None:
                raise StoreError(f"{url}: not in the store")
            lost = self.db.execute(
                "SELECT src, first_build, last_build, lost_build FROM lost_links WHERE dst = ? AND lost_build > ?"
                " ORDER BY lost_build DESC",
                (target, since or 0),
            ).fetchall()
            present = set((self.in_slice(target).sources + 1).tolist())
            latest: dict[int, tuple] = {}
            for src, first, last, gone in lost:  # newest loss of each source, if the link is still gone
                if src not in present and src not in latest:
                    latest[src] = (first, last, gone)
            sources = np.array(sorted(latest), dtype=np.int64) - 1
            best = arrays.best_of(sources, offset + limit)[offset:] if len(sources) else np.zeros(0, dtype=np.int64)
            indices = sources[best].tolist()
            rows = self._rows(arrays, indices) if indices else []
        for row, index in zip(rows, indices):
            first, last, gone = latest[index + 1]
            row.update(first_seen=first, last_seen=last, lost_in=gone)
        return rows

    def build_history(self) -> list[dict]:
        """Each build with the links it found new and the links it lost."""
        born: dict[int, int] = {}
        for (blob,) in self.db.execute("SELECT born FROM in_links"):
            if blob:
                for build, count in zip(*np.unique(np.frombuffer(blob, dtype=">i4"), return_counts=True)):
                    born[int(build)] = born.get(int(build), 0) + int(count)
        uniform = self._graph_born()
        if uniform:
            total = self.db.execute("SELECT value FROM meta WHERE key = 'graph_links'").fetchone()
            born[uniform] = born.get(uniform, 0) + (int(total[0]) if total else 0)
        for build, count in self.db.execute(
            "SELECT first_build, count(*) FROM lost_links WHERE first_build IS NOT NULL GROUP BY first_build"
        ):
            born[build] = born.get(build, 0) + count  # found by that build, lost since
        lost = dict(self.db.execute("SELECT lost_build, count(*) FROM lost_links GROUP BY lost_build"))
        return [
            {
                "build": build_id,
                "started_at": started,
                "finished_at": finished,
                "status": status,
                "pages": pages,
                "links": links,
                "new_links": born.get(build_id, 0),
                "lost_links": lost.get(build_id, 0),
            }
            for build_id, started, finished, status, pages, links in self.db.execute(
                "SELECT id, started_at, finished_at, status, pages, links FROM builds ORDER BY id"
            )
        ]
