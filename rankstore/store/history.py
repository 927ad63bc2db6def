"""A target's links and rank across builds and ranking versions: ``rankstore history`` and ``rankstore watch``.

The store keeps no graph per build; each build's backlinks are rebuilt from
what it keeps of every link's life:

* a **current** link (in the in-link arrays) carries the build that first saw
  it (its ``born``; ``graph_born`` when one build saw every link) and is
  present from that build on;
* a **lost** link (a row of ``lost_links``: first, last and losing build) was
  present from its first build up to, not including, the build whose recrawl
  of its page no longer found it.  A link lost and found again has both: a
  lost row for its first life, a current link born in the build that found
  it again.  A first build not known (NULL, 0) reads as before every build.

So a link is **present at build b** when one of its lives began at or before
b and had not ended at or before b.  A page not crawled again by a build keeps
its links, as the store does.  A target's **backlinks** at b are the distinct
(linking page, target page) pairs present at b, leaving out the target's own
links as :func:`analysis.target_links` does: a page's links to itself, a host's
links from its own pages, a site's links from any page of its hosts.  Its
**referring hosts** (**sites**) at b are the distinct hosts (sites) of those
linking pages.  **New** in b is what is present at b and was not at the build
before it (all of it at the first build); **lost** in b what was present at the
build before and is not at b.  Each build of ``builds`` counts, whatever it
loaded: one that crawled nothing of the target's neighbourhood shows no change.

The ranks come from every version of the level's ranking (pages for a URL,
hosts for a host, sites for a site): score, place (1 + the nodes of the version
scoring more, as every view reads ties) and the nodes it ranked; each version
names the build whose graph it ranked (``rankings.build``; None when not known).
A new version drops the scores of all but the ``keep`` newest (``rank --keep``, 2
by default), so an older version is listed with no score or place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .analysis import page_hosts_and_sites
from .errors import StoreError
from .sets import distinct

if TYPE_CHECKING:
    from . import Store

__all__ = [
    "Target", "LinkLives", "BuildRow", "VersionRow", "BuildPoint", "RankPoint", "TargetHistory", "Change",
    "resolve_target", "link_lives", "builds", "versions", "present_at", "kept", "rank_of", "target_history", "change",
    "DEFAULT_RANKINGS",
]  # fmt: skip

DEFAULT_RANKINGS = {"page": "pagerank", "host": "hostrank", "site": "siterank"}  # each level's ranking by default

_FOREVER = np.iinfo(np.int64).max  # the end of a current link's life
_IN_CHUNK = 500  # target pages a lost_links query asks for at once


@dataclass(frozen=True)
class Target:
    """What a history is of: a page, a host or a site, by its store number and its pages."""

    level: str  # 'page', 'host' or 'site'
    name: str  # the URL, host or site as the store names it
    node: int  # its index in a ranking of its level (page, host or site id - 1)
    pages: np.ndarray  # int64 page indices of its pages, ascending


@dataclass(frozen=True)
class LinkLives:
    """Every life of every link into a target from outside it: one entry per life (a link lost and found
    again has two), as int64 arrays of one length."""

    sources: np.ndarray  # linking page index
    targets: np.ndarray  # target page index
    hosts: np.ndarray  # the linking page's host id (0: not numbered yet)
    sites: np.ndarray  # the linking page's site id (0: not numbered yet)
    first: np.ndarray  # the build that first saw it (0: before every build the store knows)
    end: np.ndarray  # the build that lost it (a very large number while it is current)

    def __len__(self) -> int:
        return len(self.sources)


@dataclass(frozen=True)
class BuildRow:
    build: int
    started_at: str | None


@dataclass(frozen=True)
class VersionRow:
    ranking_id: int
    version: int
    build: int | None
    created_at: str


def resolve_target(store: Store, url: str | None = None, host: str | None = None, site: str | None = None) -> Target:
    """The target named by exactly one of a canonical URL, a host (with its port, if any) or a site; a
    :class:`StoreError` when the store does not know it."""
    if url is not None:
        page = store.pages.page_id(url)
        if page is None:
            raise StoreError(f"{url}: not in the store")
        return Target("page", url, page - 1, np.array([page - 1], dtype=np.int64))
    if host is not None:
        number = store.hosts.host_id(host)
        if number is None:
            raise StoreError(f"{host}: no such host in the store (hosts are named as in URLs, with a port if any)")
        return Target("host", host, number - 1, store.hosts.pages_of_host(number).astype(np.int64))
    assert site is not None
    number = store.sites.site_id(site)
    if number is None:
        raise StoreError(f"{site}: no such site in the store (a site is a registered domain, as `top --level site`)")
    return Target("site", site, number - 1, np.asarray(store.sites.pages_of_site(number), dtype=np.int64))


def link_lives(store: Store, target: Target) -> LinkLives:
    """Every life of every link into ``target`` from outside it (see the module docstring), read in one pass
    over its in-links and its rows of ``lost_links``.  Call inside a snapshot."""
    from .analysis import in_slices

    current, targets = in_slices(store, target.pages)
    sources = [current.sources.astype(np.int64)]
    dsts = [targets.astype(np.int64)]
    first = [np.asarray(current.born, dtype=np.int64)]
    end = [np.full(len(current.sources), _FOREVER, dtype=np.int64)]
    pages = target.pages.tolist()
    lost: list[tuple[int, int, int, int | None]] = []
    for start in range(0, len(pages), _IN_CHUNK):
        chunk = [page + 1 for page in pages[start : start + _IN_CHUNK]]
        lost += store.db.execute(
            f"SELECT src, dst, lost_build, first_build FROM lost_links WHERE dst IN ({','.join('?' * len(chunk))})",
            chunk,
        ).fetchall()
    if lost:
        rows = np.array([(s, d, gone, born or 0) for s, d, gone, born in lost], dtype=np.int64)
        sources.append(rows[:, 0] - 1)
        dsts.append(rows[:, 1] - 1)
        end.append(rows[:, 2])
        first.append(rows[:, 3])
    src = np.concatenate(sources)
    dst = np.concatenate(dsts)
    hosts, sites = page_hosts_and_sites(store, src)
    if target.level == "page":
        outside = src != dst
    elif target.level == "host":
        outside = hosts != target.node + 1
    else:
        outside = sites != target.node + 1
    first_builds, ends = np.concatenate(first), np.concatenate(end)
    if outside.all():  # a page's links (its links to itself are apart already): no copy of millions
        return LinkLives(src, dst, hosts, sites, first_builds, ends)
    return LinkLives(
        src[outside], dst[outside], hosts[outside], sites[outside], first_builds[outside], ends[outside]
    )  # fmt: skip


def present_at(lives: LinkLives, build: int) -> np.ndarray:
    """Which lives hold at ``build``: begun at or before it, not ended at or before it (a mask)."""
    return (lives.first <= build) & (lives.end > build)


def builds(store: Store) -> list[BuildRow]:
    """Every build of the store, oldest first."""
    return [BuildRow(b, started) for b, started in store.db.execute("SELECT id, started_at FROM builds ORDER BY id")]


def versions(store: Store, name: str, level: str) -> list[VersionRow]:
    """Every version of ranking ``name`` of ``level``, oldest first.  A :class:`StoreError` when ``name`` has
    versions of another level only."""
    found = store.db.execute(
        "SELECT id, version, build, created_at, level FROM rankings WHERE name = ? ORDER BY version", (name,)
    ).fetchall()
    other = {row[4] for row in found} - {level}
    if found and not any(row[4] == level for row in found):
        raise StoreError(f"ranking {name!r} ranks {'/'.join(sorted(other))}s, not {level}s: give one of {level}s")
    return [VersionRow(i, v, b, created) for i, v, b, created, lvl in found if lvl == level]


def kept(store: Store, ranking_id: int) -> bool:
    """Whether the store still holds a ranking version's scores: a new version drops those of every version
    of its name but the one before it (:meth:`.rankings.Rankings.write_ranking`)."""
    return (
        store.db.execute("SELECT 1 FROM ranking_blocks WHERE ranking_id = ? LIMIT 1", (ranking_id,)).fetchone()
        is not None
    )


def rank_of(store: Store, ranking_id: int, node: int) -> tuple[float | None, int | None, int]:
    """(score, place, nodes) of node index ``node`` in a ranking version: its place 1 + the nodes scoring more;
    score and place None for a node the version does not rank (numbered since), or for a version whose scores
    are dropped (:func:`kept`).  Reads the few blocks it needs."""
    nodes = store.db.execute("SELECT pages FROM rankings WHERE id = ?", (ranking_id,)).fetchone()[0]
    if node >= nodes or not kept(store, ranking_id):
        return None, None, nodes
    reader = store.rankings.rows_reader(ranking_id, 1)
    return float(reader.scores[node]), int(reader.places([node])[0]) + 1, nodes


@dataclass(frozen=True)
class BuildPoint:
    """A target's backlinks, referring hosts and referring sites as of one build: how many, how many new in
    it, how many lost in it (see the module docstring)."""

    build: int
    started_at: str | None
    backlinks: int
    new_backlinks: int
    lost_backlinks: int
    referring_hosts: int
    new_hosts: int
    lost_hosts: int
    referring_sites: int
    new_sites: int
    lost_sites: int


@dataclass(frozen=True)
class RankPoint:
    """A target in one version of its level's ranking.  ``score``, ``percentile`` and ``place`` are None
    where the version does not rank it (numbered since) or its scores are no longer kept."""

    ranking_id: int
    version: int
    build: int | None  # the build whose graph the version ranked (None: not known)
    created_at: str
    kept: bool  # False: the store has dropped this version's scores (it keeps a ranking's two newest)
    score: float | None
    percentile: float | None  # the share of the version's nodes scoring at most as much, 0-100
    place: int | None  # 1 + the nodes of the version scoring more
    nodes: int  # the nodes the version ranks


@dataclass
class TargetHistory:
    """A target's links over builds and rank over ranking versions, oldest first."""

    target: str  # the URL, host or site
    level: str  # 'page', 'host' or 'site'
    ranking: str  # the ranking whose versions ``ranks`` reads
    builds: list[BuildPoint]
    ranks: list[RankPoint]


@dataclass(frozen=True)
class _Grouped:
    """The lives grouped by one measure (their link, linking host or linking site), sorted once: which of its
    values are present at a build is then one pass over the lives, not a sort a build."""

    values: np.ndarray  # each group's value, ascending (0, a host or site not numbered yet, left out)
    starts: np.ndarray  # where each group's lives start in the order
    first: np.ndarray  # the lives' first builds, in the order
    end: np.ndarray  # the lives' ends, in the order

    @classmethod
    def of(cls, values: np.ndarray, lives: LinkLives) -> _Grouped:
        if len(values) and int(values.max()) < 1 << 31:  # value and life packed: one plain sort orders both
            order = np.sort(values << 32 | np.arange(len(values), dtype=np.int64)) & 0xFFFFFFFF
        else:  # a link's key: mostly in order already (in-links come by target, then source), a merge of runs
            order = np.argsort(values, kind="stable")
        ordered = values[order]
        keep = ordered != 0
        ordered, order = ordered[keep], order[keep]
        starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]])) if len(ordered) else order
        return cls(ordered[starts], starts, lives.first[order], lives.end[order])

    def present(self, build: int) -> np.ndarray:
        """Which groups have a life at ``build`` (a mask over ``values``)."""
        if not len(self.values):
            return np.zeros(0, dtype=bool)
        return np.logical_or.reduceat((self.first <= build) & (self.end > build), self.starts)


class _Lives:
    """The links' lives counted by build, without grouping them: a link's lives never overlap (a recrawl that
    loses a link cannot find it again in the same build), so the links present at a build are the lives
    present then, and a link new (lost) in a build is a life begun (ended) since the build before."""

    def __init__(self, lives: LinkLives) -> None:
        self.first, self.end = lives.first, lives.end
        self.begun = self._by_build(lives.first)
        self.ended = self._by_build(lives.end[lives.end != _FOREVER])

    @staticmethod
    def _by_build(builds: np.ndarray) -> np.ndarray:
        """How many of ``builds`` fall at or before each build id (cumulative counts, by id)."""
        return np.cumsum(np.bincount(builds)) if len(builds) else np.zeros(1, dtype=np.int64)

    def _upto(self, counts: np.ndarray, build: int) -> int:
        return int(counts[min(build, len(counts) - 1)]) if build >= 0 else 0

    def counts(self, build: int, before: int) -> list[int]:
        """[present at ``build``, new since ``before``, lost since ``before``] (``before``: -1 for none)."""
        present = self._upto(self.begun, build) - self._upto(self.ended, build)
        new = self._upto(self.begun, build) - self._upto(self.begun, before)
        lost = self._upto(self.ended, build) - self._upto(self.ended, before)
        return [present, new, lost]


class _Steady:
    """Distinct values (linking hosts, sites) by build, where most lives span every build: those values are
    marked once in a table by value (no sort of millions), and only the other lives' values are sorted, a build
    at a time.  A value of a steady life is present at every build, so it is never new after the first build
    nor ever lost; the rest is counted among the few."""

    def __init__(self, values: np.ndarray, lives: LinkLives, first_build: int) -> None:
        steady = (lives.first <= first_build) & (lives.end == _FOREVER) & (values > 0)
        self.first_build = first_build
        self.marked = np.zeros(int(values.max(initial=0)) + 1, dtype=bool)
        self.marked[values[steady]] = True
        self.marked[0] = False
        self.steady = int(self.marked.sum())
        rest = ~steady & (values > 0)
        self.values, self.first, self.end = values[rest], lives.first[rest], lives.end[rest]
        self._last: tuple[int, np.ndarray] | None = None

    def _others(self, build: int) -> np.ndarray:
        """The values present at ``build`` that no steady life has, distinct and ascending (the last build's
        kept: it is the next build's build before)."""
        if self._last is not None and self._last[0] == build:
            return self._last[1]
        found = np.zeros(0, dtype=np.int64)
        if build >= 0:
            held = self.values[(self.first <= build) & (self.end > build)]
            found = distinct(held[~self.marked[held]])
        self._last = (build, found)
        return found

    def counts(self, build: int, before: int) -> list[int]:
        was = self._others(before)  # before ``now``: the build before is the one asked last
        now = self._others(build)
        steady_now = self.steady if build >= self.first_build else 0
        steady_was = self.steady if before >= self.first_build else 0
        new = int(len(np.setdiff1d(now, was, assume_unique=True))) + steady_now - steady_was
        lost = int(len(np.setdiff1d(was, now, assume_unique=True)))
        return [steady_now + len(now), new, lost]


# past this share of lives that do not span every build, the values are grouped by a sort instead
_STEADY_MOST_OTHERS = 0.25


def _grouped(lives: LinkLives, first_build: int) -> tuple[_Lives, _Steady | _Grouped, _Steady | _Grouped]:
    """The lives counted as links (target page, linking page), and by linking host and linking site."""
    spanning = (lives.first <= first_build) & (lives.end == _FOREVER)
    if len(spanning) and (len(spanning) - int(spanning.sum())) <= _STEADY_MOST_OTHERS * len(spanning):
        return _Lives(lives), _Steady(lives.hosts, lives, first_build), _Steady(lives.sites, lives, first_build)
    return _Lives(lives), _Grouped.of(lives.hosts, lives), _Grouped.of(lives.sites, lives)


def target_history(
    store: Store, url: str | None = None, host: str | None = None, site: str | None = None, ranking: str | None = None
) -> TargetHistory:
    """The history of a page (``url``, canonical), a host or a site: a :class:`BuildPoint` for each build and
    a :class:`RankPoint` for each version of ``ranking`` (by default the level's: ``pagerank``, ``hostrank``,
    ``siterank``; none when the store has no such ranking and none was named).  The rules are the module
    docstring's."""
    from ..display import percentile

    with store.snapshot():
        target = resolve_target(store, url, host, site)
        every = builds(store)
        links, *groups = _grouped(link_lives(store, target), every[0].build if every else 0)
        points = []
        before = [np.zeros(len(group.values), dtype=bool) for group in groups]
        previous = -1
        for row in every:
            counts = links.counts(row.build, previous)
            for at, group in enumerate(groups):
                if isinstance(group, _Steady):
                    counts += group.counts(row.build, previous)
                    continue
                now = group.present(row.build)
                was = before[at]
                counts += [int(now.sum()), int((now & ~was).sum()), int((was & ~now).sum())]
                before[at] = now
            points.append(BuildPoint(row.build, row.started_at, *counts))
            previous = row.build
        name = ranking or DEFAULT_RANKINGS[target.level]
        found = versions(store, name, target.level)
        if ranking is not None and not found:
            store.rankings.ranking(name)  # says which rankings there are
        ranks = []
        for version in found:
            score, place, nodes = rank_of(store, version.ranking_id, target.node)
            share = None if place is None else round(float(percentile(place - 1, nodes)), 4)
            ranks.append(
                RankPoint(version.ranking_id, version.version, version.build, version.created_at,
                          kept(store, version.ranking_id), score, share, place, nodes)
            )  # fmt: skip
    return TargetHistory(target.name, target.level, name, points, ranks)


@dataclass(frozen=True)
class Change:
    """What changed for a target from build ``previous`` (0: none before) to build ``build``: the links and
    referring sites present at one and not the other, as store numbers."""

    target: Target
    build: int
    previous: int
    backlinks: int  # present at ``build``
    referring_sites: int  # present at ``build``
    new_links: np.ndarray  # int64 (linking page index, target page index) rows
    lost_links: np.ndarray
    new_sites: np.ndarray  # int64 site ids
    lost_sites: np.ndarray
    site_links: dict[int, int]  # each new or lost site's linking pages (at ``build``; at ``previous`` if lost)


def change(store: Store, target: Target, build: int, previous: int) -> Change:
    """What changed for ``target`` from build ``previous`` to ``build`` (call inside a snapshot)."""
    lives = link_lives(store, target)
    links, sites = _Grouped.of(lives.targets << 32 | lives.sources, lives), _Grouped.of(lives.sites, lives)
    now, was = links.present(build), links.present(previous)
    sites_now, sites_was = sites.present(build), sites.present(previous)
    new_sites, lost_sites = sites.values[sites_now & ~sites_was], sites.values[sites_was & ~sites_now]
    counted: dict[int, int] = {}
    for chosen, mask in ((new_sites, present_at(lives, build)), (lost_sites, present_at(lives, previous))):
        if len(chosen):  # each site's linking pages: the distinct (site, linking page) pairs of the lives in mask
            linking = lives.sites[mask] << 32 | lives.sources[mask]
            linking = np.sort(linking[np.isin(lives.sites[mask], chosen)])
            linking = linking[np.concatenate([[True], linking[1:] != linking[:-1]])] >> 32 if len(linking) else linking
            counts = np.searchsorted(linking, chosen, side="right") - np.searchsorted(linking, chosen, side="left")
            counted.update(zip(chosen.tolist(), counts.tolist()))

    def pairs(keys: np.ndarray) -> np.ndarray:  # (linking page, target page) rows of (target << 32 | source) keys
        return np.stack([keys & 0xFFFFFFFF, keys >> 32], axis=1) if len(keys) else np.zeros((0, 2), dtype=np.int64)

    return Change(
        target, build, previous, int(now.sum()), int(sites_now.sum()), pairs(links.values[now & ~was]),
        pairs(links.values[was & ~now]), new_sites, lost_sites, counted,
    )  # fmt: skip
