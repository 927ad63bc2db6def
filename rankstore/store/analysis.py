"""What an analyst asks of the backlinks: why a page ranks, which links are new, which were lost, per build.

Every answer comes from one ranking version and the in-link arrays, read
inside one snapshot.  A backlink's *contribution* is what the link passes to
its target, d·PR(v)·w(v,u)/W(v) (w/W the link's share of v's followed
out-links; 1/C(v) unweighted), read as ``votes[v]·w`` from the version; its
*share* is that over PR(u).  The rest of PR(u) comes from the random jump,
(1-d)·E(u), and from what pages without out-links pass on; the shares of
every followed backlink and those two add up to 1.  Nofollow links (unless
the ranking counted them) are listed apart, with contribution 0.

A page's links to itself are never listed as its backlinks: what they give
it is a share of its own (``self_share``).  A ranking ranked the graph of
one build (:attr:`~.rankings.Ranking.build`); when a later build has added
links, a link the ranked graph did not have is listed with no contribution
or share (``unranked``), and every contribution and share is that ranked
graph's, never the old scores spread over the new links.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..choices import SORTS
from ..urls import site_of
from .errors import StoreError
from .graph import INLINE_BYTES
from .mapped import gathered
from .rankings import Ranking, RankingArrays, RankingRows
from .schema import known_count
from .sets import distinct

if TYPE_CHECKING:
    from . import Store

__all__ = [
    "BacklinkReport", "InSlice", "TargetLinks", "SORTS",
    "in_slice", "page_hosts_and_sites", "referrer_scores", "graph_born", "since_build", "target_links",
    "backlink_report", "LevelOrder", "level_backlinks", "lost_backlinks", "build_history",
    "host_ranking", "host_ranks_of", "referring_hosts", "referring_sites", "site_link_referrers", "site_number",
    "page_sites", "intersect", "anchors", "level_ranking",
    "host_level_ranking", "top_nodes", "top_hosts", "top_sites", "lookup_nodes", "lookup_hosts", "lookup_sites",
    "site_ranking", "host_ranks",
]  # fmt: skip

# a level's table, and what its rows count of the level below (the rows' keys: see _level_rows)
_LEVEL_TABLES = {"host": ("hosts", "pages"), "site": ("sites", "hosts")}


@dataclass
class InSlice:
    """One page's in-links: source page indices, and per link its nofollow flag, weight and first build.

    The first builds are read when first asked for, and only if they are:
    what ranks a page or groups its hosts needs none.
    """

    sources: np.ndarray  # int32 page indices
    nofollow: np.ndarray | None  # bool, or None: every link follows
    weights: np.ndarray | None  # float64, or None: every link weighs 1
    born_source: np.ndarray | Callable[[], np.ndarray]  # int32 build ids, or their reader
    uniform: int | None = None  # the build that first saw every one of them, when one did

    @functools.cached_property
    def born(self) -> np.ndarray:
        """The build that first saw each link (int32)."""
        source = self.born_source
        return source if isinstance(source, np.ndarray) else source()


def _subset(links: InSlice, keep: np.ndarray) -> InSlice:
    """The links at ``keep`` (a mask), their first builds still read only when asked for."""
    source = links.born_source
    born: np.ndarray | Callable[[], np.ndarray] = (
        source[keep] if isinstance(source, np.ndarray) else (lambda: links.born[keep])
    )
    return InSlice(
        links.sources[keep],
        None if links.nofollow is None else links.nofollow[keep],
        None if links.weights is None else links.weights[keep],
        born,
        links.uniform,
    )


@dataclass
class TargetLinks:
    """The in-links of a target (a page, or every page of a host) that an analyst's views list."""

    links: InSlice  # from other pages (for a host: from other hosts)
    targets: np.ndarray  # each link's target page index
    pages: np.ndarray  # the target's page indices
    itself: InSlice | None = None  # a page's links to itself: not backlinks, though they give it rank


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
    self_share: float | None = None  # of PR(u), from its own links to itself (never listed as backlinks)
    unranked: int = 0  # backlinks new since the ranked build: listed without contribution or share
    ranked_build: int | None = None  # the build whose graph the ranking ranked


def _new_since(links: InSlice, since: int | None) -> np.ndarray | None:
    """Which links are new since build ``since`` (a mask), or None for all of them (no ``since``, or one build
    after it saw them all)."""
    if since is None:
        return None
    if links.uniform is not None:  # one build saw them all: all new since, or none
        return None if links.uniform > since else np.zeros(len(links.sources), dtype=bool)
    return links.born > since


def _voting(links: InSlice, params: dict) -> np.ndarray | None:
    """Which links cast a vote in a ranking of ``params`` (None: all): nofollow ones only if it counted them."""
    if links.nofollow is not None and not params.get("include_nofollow", False):
        return ~links.nofollow
    return None


def _largest(values: np.ndarray, positions_of, candidates: np.ndarray, count: int) -> np.ndarray:
    """Indices of the ``count`` largest values, largest first, ties by the candidates' rank: a partition, then a
    sort of the few that can be among them."""
    if count < len(values):
        kth = np.partition(values, len(values) - count)[len(values) - count]
        near = np.flatnonzero(values >= kth)
    else:
        near = np.arange(len(values))
    order = np.lexsort((positions_of(candidates[near]), -values[near]))
    return near[order[:count]]


def in_slice(store: Store, page_id: int) -> InSlice:
    """The in-links of page ``page_id`` with everything the in-link arrays keep about each.

    A small block comes whole with the query; a large one (a page with
    many backlinks has a block of its own) is read through SQLite's
    incremental blob I/O, which copies once where a query copies twice.
    The first builds are read when asked for (:attr:`InSlice.born`).
    """
    row = store.db.execute(
        "SELECT first, length(offsets), length(nofollow), length(weights), length(born),"
        " CASE WHEN length(sources) <= ?2 THEN offsets END, CASE WHEN length(sources) <= ?2 THEN sources END,"
        " CASE WHEN length(sources) <= ?2 THEN nofollow END, CASE WHEN length(sources) <= ?2 THEN weights END"
        " FROM in_links WHERE first <= ?1 ORDER BY first DESC LIMIT 1",
        (page_id - 1, INLINE_BYTES),
    ).fetchone()
    empty = np.zeros(0, dtype=np.int32)
    if row is None:
        return InSlice(empty, None, None, empty)
    first, offsets_size, nofollow_size, weights_size, born, *inline = row
    at = page_id - 1 - first
    if 4 * (at + 1) >= offsets_size:
        return InSlice(empty, None, None, empty)
    if inline[1] is not None:  # small: the whole block came with the row
        offsets, sources, nofollow, weights = inline
        start, stop = np.frombuffer(offsets, dtype=np.int32, count=2, offset=4 * at).tolist()
        count = stop - start
        found = np.frombuffer(sources, dtype=np.int32, count=count, offset=4 * start)
        flags = np.frombuffer(nofollow, dtype=bool, count=count, offset=start) if nofollow else None
        weight = np.frombuffer(weights, dtype=np.float64, count=count, offset=8 * start) if weights else None
    else:
        start, stop = np.frombuffer(store.graph.in_links_part("offsets", first, 4 * at, 8), dtype=np.int32).tolist()
        count = stop - start
        found = np.frombuffer(store.graph.in_links_part("sources", first, 4 * start, 4 * count), dtype=np.int32)
        flags = weight = None
        if nofollow_size:
            flags = np.frombuffer(store.graph.in_links_part("nofollow", first, start, count), dtype=bool)
        if weights_size:
            weight = np.frombuffer(store.graph.in_links_part("weights", first, 8 * start, 8 * count), dtype=np.float64)
    if not born:
        uniform = graph_born(store)
        return InSlice(found, flags, weight, np.broadcast_to(np.int32(uniform), (count,)), uniform)

    def births() -> np.ndarray:
        # the whole slice even for a report's few rows: a blob read at an offset walks the blob's chain of
        # pages from its start, so fifty reads of four bytes cost more than one of the million
        data = store.graph.in_links_part("born", first, 4 * start, 4 * count)
        return np.frombuffer(data, dtype=">i4").astype(np.int32)

    return InSlice(found, flags, weight, births)


@dataclass(frozen=True)
class _BlockRun:
    """The in-links of some pages of one ``in_links`` block: where their links lie in the block's arrays."""

    first: int  # the block's first page index (its row id)
    start: int  # the first link of the run's first page, in the block's arrays
    stop: int  # past the last link of its last page
    picks: np.ndarray  # int64 positions of the run's links from ``start`` on (a run may skip pages)
    born: bool  # whether the block keeps each link's first build


def in_slices(store: Store, pages: np.ndarray) -> tuple[InSlice, np.ndarray]:
    """The in-links of many pages at once (``pages``: ascending page indices), page after page as
    :func:`in_slice` gives each, and each link's target page index.

    A block of ``in_links`` holds the in-links of up to thousands of
    neighbouring pages, and a host's pages are mostly neighbours: each block
    that holds any of ``pages`` is found and read once, where a read a page
    would read the same block again for each of its pages.  A block too
    large to come whole with its query (one page with many backlinks) is read
    as :func:`in_slice` reads it.  The first builds are read when asked for.
    """
    sources, flags, weights, targets, runs = [], [], [], [], []
    any_flags = any_weights = False
    pages = np.asarray(pages, dtype=np.int64)
    at = 0
    while at < len(pages):
        row = store.db.execute(
            "SELECT first, pages, length(nofollow), length(weights), length(born),"
            " CASE WHEN length(sources) <= ?2 THEN offsets END, CASE WHEN length(sources) <= ?2 THEN sources END,"
            " CASE WHEN length(sources) <= ?2 THEN nofollow END, CASE WHEN length(sources) <= ?2 THEN weights END"
            " FROM in_links WHERE first <= ?1 ORDER BY first DESC LIMIT 1",
            (int(pages[at]), INLINE_BYTES),
        ).fetchone()
        if row is None:  # before the first block: no in-links
            at += 1
            continue
        first, count, nofollow_size, weights_size, born_size, offsets, block, nofollow, weight = row
        end = int(np.searchsorted(pages, first + count, side="left"))
        if end <= at:  # the page lies past the graph's pages (added since it was derived): no in-links
            at += 1
            continue
        wanted = pages[at:end] - first
        at = end
        if block is None:  # too large to come whole (a page with a block of its own): read as in_slice reads it
            for page in wanted.tolist():
                one = in_slice(store, first + page + 1)
                count = len(one.sources)
                sources.append(one.sources)
                targets.append(np.full(count, first + page, dtype=np.int64))
                flags.append(one.nofollow if one.nofollow is not None else np.zeros(count, dtype=bool))
                weights.append(one.weights if one.weights is not None else np.ones(count))
                any_flags |= one.nofollow is not None
                any_weights |= one.weights is not None
                start = int(np.frombuffer(store.graph.in_links_part("offsets", first, 4 * page, 4), dtype=np.int32)[0])
                runs.append(_BlockRun(first, start, start + count, np.arange(count, dtype=np.int64), bool(born_size)))
            continue
        bounds = np.frombuffer(offsets, dtype=np.int32).astype(np.int64)
        starts, stops = bounds[wanted], bounds[wanted + 1]
        sizes = stops - starts
        # every link of the wanted pages, page after page: a page's run of the block's arrays, then the next's
        picks = np.repeat(starts - np.cumsum(sizes) + sizes, sizes) + np.arange(int(sizes.sum()), dtype=np.int64)
        found = np.frombuffer(block, dtype=np.int32)
        sources.append(found[picks])
        targets.append(np.repeat(wanted + first, sizes))
        flags.append(np.frombuffer(nofollow, dtype=bool)[picks] if nofollow else np.zeros(len(picks), dtype=bool))
        weights.append(np.frombuffer(weight, dtype=np.float64)[picks] if weight else np.ones(len(picks)))
        any_flags |= bool(nofollow_size)
        any_weights |= bool(weights_size)
        if len(picks):
            runs.append(_BlockRun(first, int(starts[0]), int(stops[-1]), picks - int(starts[0]), bool(born_size)))
    if not sources:
        empty = np.zeros(0, dtype=np.int32)
        return InSlice(empty, None, None, empty, graph_born(store)), np.zeros(0, dtype=np.int64)
    links = np.concatenate(sources)
    target = np.concatenate(targets).astype(np.int64)
    nofollow_all = np.concatenate(flags) if any_flags else None
    weights_all = np.concatenate(weights) if any_weights else None
    if not any(run.born for run in runs):  # the store keeps no first builds: one build saw every link
        uniform = graph_born(store)
        born = np.broadcast_to(np.int32(uniform), (len(links),))
        return InSlice(links, nofollow_all, weights_all, born, uniform), target

    def births() -> np.ndarray:
        # each block's span of the wanted pages read once (a read at an offset walks the blob's pages from its
        # start: one read a block, not one a page); a block that keeps none: the build that saw every link
        parts = []
        for run in runs:
            if run.born:
                data = store.graph.in_links_part("born", run.first, 4 * run.start, 4 * (run.stop - run.start))
                parts.append(np.frombuffer(data, dtype=">i4").astype(np.int32)[run.picks])
            else:
                parts.append(np.full(len(run.picks), graph_born(store), dtype=np.int32))
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)

    return InSlice(links, nofollow_all, weights_all, births), target


def graph_born(store: Store) -> int:
    """The build that first saw every link, while one did (0 when the store does not know)."""
    row = store.db.execute("SELECT value FROM meta WHERE key = 'graph_born'").fetchone()
    return int(row[0]) if row and row[0] else 0


def since_build(store: Store, since: str) -> int:
    """A build id from ``since``: a build number, or a date/time (the last build started by then)."""
    text = since.strip()
    if text.isdigit():
        build = int(text)
        if store.db.execute("SELECT 1 FROM builds WHERE id = ?", (build,)).fetchone() is None:
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
    row = store.db.execute("SELECT max(id) FROM builds WHERE started_at < ?", (moment,)).fetchone()
    return row[0] or 0


def site_number(store: Store, site: str) -> int:
    """A site's id by name (a registered domain, as the site level names it; a host of it is taken as its
    site): a StoreError in one line for a site the store has not."""
    number = store.sites.site_id(site)
    if number is None and site_of(site) != site:
        number = store.sites.site_id(site_of(site))
    if number is None:
        raise StoreError(
            f"{site}: not in the store (a site is a registered domain, as `top --ranking siterank` names it)"
        )
    return number


def page_sites(store: Store, pages: np.ndarray) -> np.ndarray:
    """Each page's site id (int64; 0 for a page or host not numbered yet), from its host's."""
    return page_hosts_and_sites(store, pages)[1]


def page_hosts_and_sites(store: Store, pages: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each page's host id and site id (int64; 0 for a page or host not numbered yet)."""
    hosts = store.hosts.page_hosts()
    pages = np.asarray(pages, dtype=np.int64)
    host_ids = np.zeros(len(pages), dtype=np.int64)
    known = pages < len(hosts)
    host_ids[known] = gathered(hosts, pages[known])
    sites = store.sites.host_sites()
    found = np.zeros(len(pages), dtype=np.int64)
    inside = (host_ids > 0) & (host_ids <= len(sites))
    found[inside] = gathered(sites, host_ids[inside] - 1)
    return host_ids, found


def target_links(store: Store, url: str | None = None, host: str | None = None, site: str | None = None) -> TargetLinks:
    """The in-links of a page (its links to itself apart), of every page of a host (links from the host
    itself left out), or of every page of every host of a site (links from the site itself left out)."""
    if site is not None:
        site_id = site_number(store, site)
        pages = store.sites.pages_of_site(site_id)
        found, targets = in_slices(store, pages)
        outside = page_sites(store, found.sources) != site_id
        links = found if outside.all() else _subset(found, outside)
        return TargetLinks(links, targets[outside], pages)
    if host is None:
        assert url is not None
        page = store.pages.page_id(url)
        if page is None:
            raise StoreError(f"{url}: not in the store")
        links = in_slice(store, page)
        own = links.sources == page - 1
        itself = None
        if own.any():
            itself, links = _subset(links, own), _subset(links, ~own)
        return TargetLinks(
            links, np.broadcast_to(np.int64(page - 1), (len(links.sources),)), np.array([page - 1]), itself
        )
    number = store.hosts.host_id(host)
    if number is None:
        raise StoreError(f"{host}: no such host in the store (hosts are named as in URLs, with a port if any)")
    pages = store.hosts.pages_of_host(number)
    found, targets = in_slices(store, pages)
    outside = gathered(store.hosts.page_hosts(), found.sources) != number
    links = found if outside.all() else _subset(found, outside)
    return TargetLinks(links, targets[outside], pages)


def referrer_scores(
    store: Store, name: str = "pagerank", url: str | None = None, host: str | None = None, site: str | None = None
) -> tuple[np.ndarray, int]:
    """The scores, in page ranking ``name``'s newest version, of the distinct pages that link to a target now
    (as :func:`target_links` reads them; a page the version does not rank is left out), and the version's
    page count: the shape of a link profile, by the rank of who links."""
    with store.snapshot():
        ranking = store.rankings.page_ranking(name)
        arrays = store.rankings.ranking_arrays(ranking.id, votes=False)
        sources = distinct(target_links(store, url, host, site).links.sources)
        sources = sources[sources < arrays.pages]
        return np.asarray(gathered(arrays.scores, sources), dtype=np.float64), arrays.pages


def _graph_build(store: Store) -> int | None:
    """The build whose graph the in-link arrays hold."""
    row = store.db.execute("SELECT value FROM meta WHERE key = 'graph_build'").fetchone()
    return int(row[0]) if row and row[0] else None


def _unranked_links(store: Store, ranking: Ranking, links: InSlice) -> np.ndarray | None:
    """Which links the ranked graph did not have (first seen after the build it ranked), or None when it
    had them all.  A ranking whose build is not known is taken to have had them."""
    graph = _graph_build(store)
    if ranking.build is None or graph is None or ranking.build >= graph:
        return None
    if links.uniform is not None:
        return None if links.uniform <= ranking.build else np.ones(len(links.sources), dtype=bool)
    fresh = links.born > ranking.build
    return fresh if fresh.any() else None


def backlink_report(
    store: Store,
    url: str | None = None,
    name: str = "pagerank",
    sort: str = "pagerank",
    since: int | None = None,
    limit: int = 50,
    offset: int = 0,
    host: str | None = None,
    site: str | None = None,
) -> BacklinkReport:
    """The backlinks of ``url`` (or of every page of ``host``, from other hosts; or of every page of
    ``site``, from other sites) with their contribution and share, new since build ``since`` if given."""
    if sort not in SORTS:
        raise ValueError(f"sort must be one of {', '.join(SORTS)}, not {sort!r}")
    with store.snapshot():
        ranking = store.rankings.page_ranking(name)
        ranking_id = ranking.id
        arrays = store.rankings.ranking_arrays(ranking_id)
        params = store.rankings.ranking_params(ranking_id)
        found = target_links(store, url, host, site)
        links, targets, pages = found.links, found.targets, found.pages
        whole = host is not None or site is not None  # many pages, whose internal links give them rank too
        counted = _voting(links, params)  # None: every link votes
        unranked = _unranked_links(store, ranking, links)
        ranked = pages[pages < arrays.pages]
        pagerank = float(arrays.scores[ranked].sum()) if len(ranked) else None
        report = BacklinkReport(url or host or site or "", pagerank, 0, [], ranked_build=ranking.build)
        report.unranked = int(unranked.sum()) if unranked is not None else 0
        # every link's contribution is needed to sort by it, and for a whole host (whose internal links
        # give it rank too); for one page, the version keeps what all its backlinks give it together
        contribution = None
        weighted = links.weights is not None and params.get("weighted", True)
        # unweighted, a link from v gives votes[v]: sorted by contribution is sorted by the sources' votes
        by_votes = (
            sort == "contribution" and not whole and arrays.linked is not None and not weighted and unranked is None
        )
        if (sort == "contribution" and not by_votes) or whole or arrays.linked is None:
            contribution = _contributions(arrays, links, _ranked_votes(store, ranking, links, params), params)
        if arrays.votes is not None and pagerank:
            itself = _given_by_itself(store, arrays, ranking, found.itself, params)
            report.self_share = itself / pagerank if itself else None
            if not whole and arrays.linked is not None:
                # what the ranked graph's backlinks gave the page, those lost since among them
                given = float(arrays.linked[ranked].sum()) - itself
            else:
                assert contribution is not None
                given = float(contribution.sum())
            report.links_share = given / pagerank
            jump = _jump(store, ranking_id, ranked, arrays.pages, params)
            report.jump_share = jump / pagerank
            rest = 1.0 - report.links_share - report.jump_share - (report.self_share or 0.0)
            report.sinks_share = 0.0 if abs(rest) < 1e-12 else rest  # rounding, not rank
        chosen = _new_since(links, since)
        report.backlinks = len(links.sources) if chosen is None else int(chosen.sum())
        if chosen is None and counted is None:
            followed = None  # all of them: no index array over a million links
            candidates = links.sources
        else:
            mask = chosen if counted is None else counted if chosen is None else chosen & counted
            assert mask is not None
            followed = np.flatnonzero(mask)
            candidates = links.sources[followed]
        if sort == "contribution" and contribution is not None:
            values = contribution if followed is None else contribution[followed]
            order = _largest(values, arrays.positions_of, candidates, offset + limit)[offset:]
        elif by_votes and arrays.votes is not None:
            order = arrays.largest_votes_of(candidates, offset + limit)[offset:]
        else:
            order = arrays.best_of(candidates, offset + limit)[offset:]
        picked = order if followed is None else followed[order]
        if contribution is None:
            contribution = _contributions_at(arrays, links, picked, params)
            at = np.arange(len(picked))
        else:
            at = picked
        report.rows = _link_rows(store, arrays, links, picked, contribution, pagerank, targets, at, unranked)
        if counted is not None:
            others = np.flatnonzero(~counted if chosen is None else chosen & ~counted)
            if len(others):
                best = arrays.best_of(links.sources[others], limit)
                report.nofollow_rows = _link_rows(
                    store, arrays, links, others[best], None, pagerank, targets, None, unranked
                )
    return report


def _ranked_votes(store: Store, ranking: Ranking, links: InSlice, params: dict) -> np.ndarray | None:
    """Which links give their target rank in ``ranking``: those that vote and that its graph had."""
    voting = _voting(links, params)
    fresh = _unranked_links(store, ranking, links)
    if fresh is not None:
        voting = ~fresh if voting is None else voting & ~fresh
    return voting


def _given_by_itself(
    store: Store, arrays: RankingArrays, ranking: Ranking, itself: InSlice | None, params: dict
) -> float:
    """What a page's links to itself gave it in the ranked graph (0 without any)."""
    if itself is None:
        return 0.0
    own = _contributions(arrays, itself, _ranked_votes(store, ranking, itself, params), params)
    return float(own.sum()) if own is not None else 0.0


def _contributions_at(arrays: RankingArrays, links: InSlice, picked: np.ndarray, params: dict) -> np.ndarray | None:
    """What the in-links at ``picked`` pass to their target (links that vote only)."""
    if arrays.votes is None:
        return None
    sources = links.sources[picked]
    values = np.where(sources < arrays.pages, gathered(arrays.votes, np.minimum(sources, arrays.pages - 1)), 0.0)
    if links.weights is not None and params.get("weighted", True):
        values = values * links.weights[picked]
    return values


def _contributions(
    arrays: RankingArrays, links: InSlice, counted: np.ndarray | None, params: dict
) -> np.ndarray | None:
    """What each in-link passes to its target in this version (0 for a link that casts no vote)."""
    if arrays.votes is None:
        return None
    inside = links.sources < arrays.pages
    votes = np.zeros(len(links.sources))
    votes[inside] = gathered(arrays.votes, links.sources[inside])
    if links.weights is not None and params.get("weighted", True):
        votes *= links.weights
    if counted is not None:
        votes[~counted] = 0.0
    return votes


def _jump(store: Store, ranking_id: int, targets: np.ndarray, pages: int, params: dict) -> float:
    """(1-d)·ΣE(u) over the target pages (indices): what the random jump gives them, E read once."""
    damping = float(params.get("damping", 0.85))
    teleport = store.rankings.teleport_of(ranking_id)
    if teleport is None:
        return (1.0 - damping) * len(targets) / pages
    ids, weights = teleport
    return (1.0 - damping) * float(weights[np.isin(ids - 1, targets)].sum())


def _link_rows(
    store: Store,
    arrays: RankingArrays,
    links: InSlice,
    picked: np.ndarray,
    contribution: np.ndarray | None,
    pagerank: float | None,
    targets: np.ndarray,
    where: np.ndarray | None = None,
    unranked: np.ndarray | None = None,
) -> list[dict]:
    """Rows for the links at ``picked``; their contributions are ``contribution[where]`` (``picked`` by
    default: ``contribution`` may hold every link's, or only the picked ones').  A link that ``unranked``
    marks (new since the ranked build) has no contribution or share."""
    where = picked if where is None else where
    indices = links.sources[picked].tolist()
    rows = store.queries.page_rows(arrays, indices)
    pairs = list(zip((links.sources[picked] + 1).tolist(), (targets[picked] + 1).tolist()))
    anchors = _anchors_of(store, pairs)
    many = len({dst for _, dst in pairs}) > 1
    urls = store.pages.urls_of(sorted({dst for _, dst in pairs})) if many else {}
    first_seen = links.born[picked].tolist()
    for row, at, slot, pair, born in zip(rows, picked.tolist(), where.tolist(), pairs, first_seen):
        row["nofollow"] = bool(links.nofollow[at]) if links.nofollow is not None else False
        row["anchor"] = anchors.get(pair)
        value = float(contribution[slot]) if contribution is not None else (0.0 if row["nofollow"] else None)
        if unranked is not None and unranked[at]:
            value = None
        row["contribution"] = value
        row["share"] = value / pagerank if value is not None and pagerank else None
        row["first_seen"] = int(born) or None
        if many:
            row["target"] = urls.get(pair[1])
    return rows


def _anchors_of(store: Store, pairs: Sequence[tuple[int, int]]) -> dict[tuple[int, int], str]:
    """The anchor text of each link (src, dst page ids) that has one."""
    anchors: dict[tuple[int, int], str] = {}
    for start in range(0, len(pairs), 400):
        chunk = pairs[start : start + 400]
        anchors.update(
            ((src, dst), anchor)
            # the pairs drive the loop, each a search of the anchors' index by (dst, src): asked as
            # ``(src, dst) IN (VALUES ...)``, SQLite scans that whole index instead, every anchored link
            for src, dst, anchor in store.db.execute(
                "SELECT note.src, note.dst, note.anchor FROM (VALUES "
                + ",".join("(?, ?)" for _ in chunk)
                + ") AS pair CROSS JOIN link_notes AS note ON note.src = pair.column1 AND note.dst = pair.column2"
                " WHERE note.anchor IS NOT NULL",
                [value for pair in chunk for value in pair],
            )
        )
    return anchors


@dataclass(frozen=True)
class LevelOrder:
    """What orders backlinks in a store that ranks no pages: a host ranking, else a site ranking (either None)."""

    host: str | None
    site: str | None


def level_backlinks(
    store: Store,
    order: LevelOrder,
    url: str | None = None,
    host: str | None = None,
    site: str | None = None,
    since: int | None = None,
    limit: int = 50,
    offset: int = 0,
) -> BacklinkReport:
    """The backlinks of a target in a store that ranks no pages (say, ``rankstore extract``'s links into the
    watched sites from a whole crawl, with Common Crawl's host ranks loaded): best first by the linking page's
    host's score in ``order.host``; a page whose host that ranking lacks, by its site's in ``order.site``, after
    them; then the pages of neither.  Nofollow links among them (marked); no contribution or share, which
    are a page ranking's.  Each row's ``level``, ``estimate`` and ``answered_by`` say what placed it."""
    with store.snapshot():
        found = target_links(store, url, host, site)
        links = found.links
        chosen = _new_since(links, since)
        candidates = np.arange(len(links.sources), dtype=np.int64) if chosen is None else np.flatnonzero(chosen)
        sources = links.sources[candidates].astype(np.int64)
        hosts, sites = page_hosts_and_sites(store, sources)
        tier = np.full(len(candidates), 2, dtype=np.int8)  # 0: by its host, 1: by its site, 2: by neither
        score = np.zeros(len(candidates), dtype=np.float64)
        places = np.zeros(len(candidates), dtype=np.int64)
        names: dict[int, tuple[str, str]] = {}
        for level_name, ranking_name, ids, step in (("site", order.site, sites, 1), ("host", order.host, hosts, 0)):
            if ranking_name is None:
                continue
            ranked = _newest_of_level(store, ranking_name, level_name)
            if ranked is None:
                continue
            arrays = ranked[1]
            inside = (ids > 0) & (ids <= arrays.pages)
            # a score of 0 is no rank (a ranks file's nodes not named in it): the next level answers, as the bars'
            inside[inside] = arrays.scores[ids[inside] - 1] > 0
            score[inside] = arrays.scores[ids[inside] - 1]
            places[inside] = arrays.places(ids[inside] - 1)
            tier[inside] = step
            names[step] = (level_name, ranking_name)
        picked = np.lexsort((places, tier))[offset : offset + limit]  # the host-ranked first, best place first
        at = candidates[picked]
        ids = (links.sources[at] + 1).tolist()
        pages = {row[0]: row[1:] for row in store.pages.pages_by_id("url, title, crawled", ids)}
        pairs = list(zip(ids, (found.targets[at] + 1).tolist()))
        anchors = _anchors_of(store, pairs)
        many = len({dst for _, dst in pairs}) > 1
        urls = store.pages.urls_of(sorted({dst for _, dst in pairs})) if many else {}
        rows = []
        for slot, link, pair in zip(picked.tolist(), at.tolist(), pairs):
            url_of, title, crawled = pages[pair[0]]
            placed_by = names.get(int(tier[slot]))
            level, name = placed_by if placed_by is not None else (None, None)
            row = {
                "url": url_of, "title": title, "crawled": crawled,
                "nofollow": bool(links.nofollow[link]) if links.nofollow is not None else False,
                "anchor": anchors.get(pair), "first_seen": int(links.born[link]) or None,
                "level": level, "estimate": float(score[slot]) if level else None, "answered_by": name,
                "level_rank": int(places[slot]) + 1 if level else None,
            }  # fmt: skip
            if many:
                row["target"] = urls.get(pair[1])
            rows.append(row)
    return BacklinkReport(url or host or site or "", None, len(candidates), rows)


def lost_backlinks(
    store: Store, url: str, name: str = "pagerank", since: int | None = None, limit: int = 50, offset: int = 0
) -> list[dict]:
    """Links to ``url`` that a recrawl of their source page no longer found (and that have not come back),
    lost after build ``since`` if given; best PageRank of the source first.  A page's lost link to itself
    is no lost backlink, as its link to itself is no backlink."""
    with store.snapshot():
        arrays = store.rankings.ranking_arrays(store.rankings.ranking_head(name)[0])
        target = store.pages.page_id(url)
        if target is None:
            raise StoreError(f"{url}: not in the store")
        lost = store.db.execute(
            "SELECT src, first_build, last_build, lost_build FROM lost_links"
            " WHERE dst = ? AND src != dst AND lost_build > ? ORDER BY lost_build DESC",
            (target, since or 0),
        ).fetchall()
        present = set((in_slice(store, target).sources + 1).tolist())
        latest: dict[int, tuple] = {}
        for src, first, last, gone in lost:  # newest loss of each source, if the link is still gone
            if src not in present and src not in latest:
                latest[src] = (first, last, gone)
        sources = np.array(sorted(latest), dtype=np.int64) - 1
        best = arrays.best_of(sources, offset + limit)[offset:] if len(sources) else np.zeros(0, dtype=np.int64)
        indices = sources[best].tolist()
        rows = store.queries.page_rows(arrays, indices) if indices else []
    for row, index in zip(rows, indices):
        first, last, gone = latest[index + 1]
        row.update(first_seen=first, last_seen=last, lost_in=gone)
    return rows


def build_history(store: Store) -> list[dict]:
    """Each build with the links it found new and the links it lost."""
    born: dict[int, int] = {}
    for (blob,) in store.db.execute("SELECT born FROM in_links"):
        if blob:
            for build, count in zip(*np.unique(np.frombuffer(blob, dtype=">i4"), return_counts=True)):
                born[int(build)] = born.get(int(build), 0) + int(count)
    uniform = graph_born(store)
    if uniform:
        total = store.db.execute("SELECT value FROM meta WHERE key = 'graph_links'").fetchone()
        born[uniform] = born.get(uniform, 0) + (int(total[0]) if total else 0)
    for build, count in store.db.execute(
        "SELECT first_build, count(*) FROM lost_links WHERE first_build IS NOT NULL GROUP BY first_build"
    ):
        born[build] = born.get(build, 0) + count  # found by that build, lost since
    lost = dict(store.db.execute("SELECT lost_build, count(*) FROM lost_links GROUP BY lost_build"))
    gone = set(store.gone_builds())  # 'running', its process gone: cut short before it could say so
    return [
        {
            "build": build_id,
            "started_at": started,
            "finished_at": finished,
            "status": "interrupted" if build_id in gone else status,
            # a build not complete: what it committed (so far)
            **dict(zip(("pages", "links"), (pages, links) if status == "complete" else store.committed(build_id))),
            "new_links": born.get(build_id, 0),
            "lost_links": lost.get(build_id, 0),
        }
        for build_id, started, finished, status, pages, links in store.db.execute(
            "SELECT id, started_at, finished_at, status, pages, links FROM builds ORDER BY id"
        ).fetchall()
    ]


# ---------------------------------------------------------------- hosts and sites: backlinks folded into
# referring hosts, whole sites as targets, link intersect, host rank beside page rank


def _newest_of_level(store: Store, name: str, level: str) -> tuple[int, RankingArrays] | None:
    """(id, arrays) of the newest ranking ``name`` of ``level`` ('host' or 'site'), or None when there is none.

    Named apart from :func:`host_ranking`, whose name the views that take a host ranking's name
    (``host_ranking=``) would hide."""
    found = _newest_id_of_level(store, name, level)
    return (found, store.rankings.ranking_arrays(found)) if found is not None else None


def _newest_id_of_level(store: Store, name: str, level: str) -> int | None:
    """The id of the newest version of ranking ``name`` of ``level``, or None when there is none."""
    row = store.db.execute(
        "SELECT id FROM rankings WHERE name = ? AND level = ? ORDER BY version DESC LIMIT 1", (name, level)
    ).fetchone()
    return row[0] if row else None


def host_ranking(store: Store, name: str = "hostrank") -> tuple[int, RankingArrays] | None:
    """(id, arrays) of the newest host-level ranking ``name``, or None when there is none."""
    return _newest_of_level(store, name, "host")


def host_ranks_of(
    store: Store, page_indices: Sequence[int], name: str = "hostrank"
) -> list[tuple[str, float | None, int | None]]:
    """(host, host PageRank, host rank) of each page, from the newest host ranking (None without one)."""
    hosts = store.hosts.page_hosts()
    found = host_ranking(store, name)
    ids = [int(hosts[i]) if i < len(hosts) else 0 for i in page_indices]
    names = store.hosts.host_names(set(ids) - {0})
    out = []
    for host in ids:
        score = rank = None
        if found is not None and 0 < host <= found[1].pages:
            score, rank = float(found[1].scores[host - 1]), int(found[1].places([host - 1])[0]) + 1
        out.append((names.get(host, ""), score, rank))
    return out


def referring_hosts(
    store: Store,
    url: str | None = None,
    host: str | None = None,
    name: str = "pagerank",
    sort: str = "pagerank",
    since: int | None = None,
    limit: int = 50,
    offset: int = 0,
    host_ranking: str = "hostrank",
    site: str | None = None,
) -> list[dict]:
    """The hosts linking to a page (or to a host's or a site's pages): how many of their pages link, their
    best page, their host rank and the PageRank their links pass on, best first (by host rank where there
    is a host ranking, else by best page; or by summed contribution)."""
    return _referring(store, "host", url, host, site, name, sort, since, limit, offset, host_ranking)


def referring_sites(
    store: Store,
    url: str | None = None,
    host: str | None = None,
    site: str | None = None,
    name: str = "pagerank",
    sort: str = "pagerank",
    since: int | None = None,
    limit: int = 50,
    offset: int = 0,
    site_ranking: str = "siterank",
) -> list[dict]:
    """The sites linking to a page (or to a host's or a site's pages), as :func:`referring_hosts` gives
    hosts: how many of their hosts and pages link, their best page, their site rank (the site ranking
    ``site_ranking``) and the PageRank their links pass on, best first."""
    return _referring(store, "site", url, host, site, name, sort, since, limit, offset, site_ranking)


def _referring(
    store: Store,
    level: str,
    url: str | None,
    host: str | None,
    site: str | None,
    name: str,
    sort: str,
    since: int | None,
    limit: int,
    offset: int,
    level_name: str,
) -> list[dict]:
    """The linking pages of a target folded into their hosts (``level`` 'host') or sites ('site')."""
    with store.snapshot():
        ranking = store.rankings.page_ranking(name)
        arrays = store.rankings.ranking_arrays(ranking.id)
        params = store.rankings.ranking_params(ranking.id)
        found = target_links(store, url, host, site)
        links, pages = found.links, found.pages
        counted = _ranked_votes(store, ranking, links, params)
        if since is None or (links.uniform is not None and links.uniform > since):
            sources, kept = links.sources, None
        else:
            kept = np.flatnonzero(links.born > since)  # the links listed, as indices of the target's
            sources = links.sources[kept]
        page_hosts = store.hosts.page_hosts()
        groups = gathered(page_hosts, sources) if level == "host" else page_sites(store, sources)
        order = np.argsort(groups, kind="stable")  # by host (site)
        groups_sorted, sources_sorted = groups[order], sources[order]
        starts = (
            np.flatnonzero(np.concatenate([[True], groups_sorted[1:] != groups_sorted[:-1]]))
            if len(order)
            else np.zeros(0, dtype=np.int64)
        )
        ends = np.append(starts[1:], len(order))
        group_ids = groups_sorted[starts]
        # each group's best page: the smallest position in the order by score
        best_pages = sources_sorted[starts].astype(np.int64)
        if len(starts):
            best = np.minimum.reduceat(arrays.positions_of(sources_sorted), starts)
            ranked_best = best < arrays.pages  # a group whose linking pages are all newer than the version: any
            best_pages[ranked_best] = gathered(arrays.best, best[ranked_best])
        if url is not None:  # one target page: each linking page links to it once
            linking_pages = ends - starts
        else:
            linking_pages = _distinct_counts(groups_sorted, sources_sorted.astype(np.int64), starts)
        hosts_linking = (
            _distinct_counts(groups_sorted, gathered(page_hosts, sources_sorted).astype(np.int64), starts)
            if level == "site"
            else None
        )

        def contributions_of(at: np.ndarray) -> np.ndarray | None:
            """What the links of the groups at ``at`` pass on, summed a group: read for them alone (the votes of
            millions of linking pages are read only to sort by them)."""
            if arrays.votes is None or not len(starts):
                return None
            lengths = ends[at] - starts[at]
            within = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
            listed = order[np.repeat(starts[at], lengths) + within]  # the groups' links, group after group
            picked = listed if kept is None else kept[listed]
            values = _contributions_at(arrays, links, picked, params)
            if values is None:
                return None
            if counted is not None:
                values = np.where(counted[picked], values, 0.0)
            sums = np.zeros(len(at))
            np.add.at(sums, np.repeat(np.arange(len(at)), lengths), values)
            return sums

        summed = contributions_of(np.arange(len(starts))) if sort == "contribution" else None
        ranked = _newest_of_level(store, level_name, level)

        def best_positions(at: np.ndarray) -> np.ndarray:
            return arrays.positions_of(best_pages[at])

        if sort == "contribution" and summed is not None:
            pick = _first_by(-summed, best_positions, offset + limit)
        elif ranked is not None:
            group_positions = np.full(len(group_ids), 1 << 40, dtype=np.int64)  # the order: ties by id
            inside = (group_ids > 0) & (group_ids <= ranked[1].pages)
            group_positions[inside] = gathered(ranked[1].position, group_ids[inside] - 1)
            pick = _first_by(group_positions, best_positions, offset + limit)
        else:
            pick = _first_by(best_positions(np.arange(len(group_ids))), None, offset + limit)
        pick = pick[offset:]
        if summed is None:
            shown_sums = contributions_of(pick)
        else:
            shown_sums = summed[pick]
        # the ranks of the groups shown only (read from the ranking's arrays: millions of hosts may link)
        level_scores = np.full(len(pick), np.nan)
        level_places = np.full(len(pick), -1, dtype=np.int64)  # what is shown: ties alike
        if ranked is not None:
            shown = group_ids[pick]
            inside = (shown > 0) & (shown <= ranked[1].pages)
            level_scores[inside] = ranked[1].scores[shown[inside] - 1]
            level_places[inside] = ranked[1].places(shown[inside] - 1)
        shown_ids = group_ids[pick].tolist()
        names = store.hosts.host_names(shown_ids) if level == "host" else store.sites.site_names(shown_ids)
        best_rows = store.queries.page_rows(arrays, best_pages[pick].tolist())
        total = float(gathered(arrays.scores, pages[pages < arrays.pages]).sum()) if len(pages) else 0.0
    rows = []
    for slot, (at, page) in enumerate(zip(pick.tolist(), best_rows)):
        value = float(shown_sums[slot]) if shown_sums is not None else None
        row: dict = {level: names.get(int(group_ids[at]), "")}
        if hosts_linking is not None:
            row["hosts"] = int(hosts_linking[at])
        row |= {
            "pages": int(linking_pages[at]),
            "links": int(ends[at] - starts[at]),
            "best_url": page["url"],
            "best_pagerank": page["pagerank"],
            f"{level}_pagerank": None if np.isnan(level_scores[slot]) else float(level_scores[slot]),
            f"{level}_rank": int(level_places[slot]) + 1 if level_places[slot] >= 0 else None,
            "contribution": value,
            "share": value / total if value is not None and total else None,
        }
        rows.append(row)
    return rows


def site_link_referrers(
    store: Store, site: str, site_ranking: str | None = "siterank", limit: int = 50, offset: int = 0
) -> list[dict]:
    """The sites a loaded domain graph's links say link to ``site`` (a store of site links, no pages), best
    site rank first (the site ranking ``site_ranking``; by site id without one): each site once, as the
    domain graph keeps each pair."""
    with store.snapshot():
        number = site_number(store, site)
        sources = store.site_links.in_links(number)  # int32 site indices, ascending
        ranked = _newest_of_level(store, site_ranking, "site") if site_ranking else None
        if ranked is not None:
            arrays = ranked[1]
            # those the version ranks: a prefix (the bound as the list's own type, which numpy keeps uncast)
            inside = int(np.searchsorted(sources, sources.dtype.type(arrays.pages)))
            order = np.concatenate(
                [sources[:inside][arrays.best_of_sorted(sources[:inside], offset + limit)], sources[inside:]]
            )
        else:
            order = sources
        chosen = order[offset : offset + limit].astype(np.int64)
        names = store.sites.site_names((chosen + 1).tolist())
        rows = []
        for index in chosen.tolist():
            scored = ranked is not None and index < ranked[1].pages
            rows.append(
                {
                    "site": names.get(index + 1, ""),
                    "site_pagerank": float(ranked[1].scores[index]) if scored and ranked else None,
                    "site_rank": int(ranked[1].places([index])[0]) + 1 if scored and ranked else None,
                }
            )
    return rows


def _distinct_counts(hosts: np.ndarray, sources: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Distinct pages of each host's run (hosts sorted; a page may link to several pages of a site): the
    (host, page) keys sorted keep each host's run where it was, and a run's distinct pages are where its key
    changes.  (Sorted, not ``np.unique``d: numpy 2's ``unique`` of millions of keys hashes them, 40x slower.)"""
    if not len(starts):
        return np.zeros(0, dtype=np.int64)
    key = np.sort(hosts.astype(np.int64) << 32 | sources, kind="stable")  # mostly in order already
    changes = np.empty(len(key), dtype=np.int64)
    changes[0] = 1
    np.not_equal(key[1:], key[:-1], out=changes[1:])
    return np.add.reduceat(changes, starts)


def _first_by(primary: np.ndarray, secondary: Callable[[np.ndarray], np.ndarray] | None, count: int) -> np.ndarray:
    """The indices ``np.lexsort((secondary(all), primary))[:count]`` gives (a stable argsort of ``primary``
    without ``secondary``), with only the candidates sorted and their secondary keys read: those up to the
    ``count``-th smallest of ``primary``, found by a partition.  A host with millions of referring hosts is
    asked for a page of them."""
    if count < len(primary):
        kth = np.partition(primary, count - 1)[count - 1] if count > 0 else None
        near = np.flatnonzero(primary <= kth) if kth is not None else np.zeros(0, dtype=np.int64)
    else:
        near = np.arange(len(primary))
    keys = (primary[near],) if secondary is None else (secondary(near), primary[near])
    return near[np.lexsort(keys)[:count]]


def intersect(
    store: Store,
    targets: Sequence[tuple[str | None, ...]],
    mine: Sequence[tuple[str | None, ...]] = (),
    name: str = "pagerank",
    by_host: bool = False,
    limit: int = 50,
    offset: int = 0,
    host_ranking: str = "hostrank",
    by_site: bool = False,
    site_ranking: str = "siterank",
) -> list[dict]:
    """The pages (or hosts, or sites) that link to every target (url, host[, site]) and to none of ``mine``,
    best first: pages by page ranking ``name``, hosts by host ranking ``host_ranking``, sites by site
    ranking ``site_ranking`` (where there is one).  A site target's linking sites are those of its page
    links and those a loaded domain graph's site links give it."""
    level = "site" if by_site else "host" if by_host else None
    with store.snapshot():
        arrays = None if level else store.rankings.ranking_arrays(store.rankings.page_head(name)[0])
        hosts = store.hosts.page_hosts() if level == "host" else None

        def linking(target: tuple[str | None, ...]) -> np.ndarray:
            sources = target_links(store, *target).links.sources.astype(np.int64)
            if level != "site":
                return distinct(hosts[sources] if hosts is not None else sources)
            found = page_sites(store, sources)
            site = target[2] if len(target) > 2 else None
            if site is not None:  # a domain graph's links into it, site indices
                found = np.concatenate([found, store.site_links.in_links(site_number(store, site)) + 1])
            return distinct(found[found > 0])

        common = None
        for target in targets:
            found = linking(target)
            common = found if common is None else np.intersect1d(common, found, assume_unique=True)
        common = common if common is not None else np.zeros(0, dtype=np.int64)
        for target in mine:
            common = np.setdiff1d(common, linking(target), assume_unique=True)
        if arrays is not None:
            chosen = common[arrays.best_of(common, offset + limit)[offset:]]
            return store.queries.page_rows(arrays, chosen.tolist())
        assert level is not None
        ranked = _newest_of_level(store, site_ranking if level == "site" else host_ranking, level)
        if ranked is not None:
            positions = np.where(
                (common > 0) & (common <= ranked[1].pages),
                ranked[1].position[np.clip(common - 1, 0, ranked[1].pages - 1)],
                1 << 40,
            )
            chosen = common[np.argsort(positions, kind="stable")[offset : offset + limit]]
        else:
            chosen = common[offset : offset + limit]
        names = store.hosts.host_names(chosen.tolist()) if level == "host" else store.sites.site_names(chosen.tolist())
        return [
            {
                level: names.get(int(n), ""),
                f"{level}_pagerank": float(ranked[1].scores[n - 1]) if ranked and 0 < n <= ranked[1].pages else None,
                f"{level}_rank": int(ranked[1].places([n - 1])[0]) + 1 if ranked and 0 < n <= ranked[1].pages else None,
            }
            for n in chosen.tolist()
        ]


def anchors(store: Store, url: str, name: str = "pagerank", limit: int = 50) -> list[dict]:
    """The anchor texts of the links to ``url``, grouped (case and spacing folded), by summed contribution."""
    with store.snapshot():
        ranking = store.rankings.page_ranking(name)
        arrays = store.rankings.ranking_arrays(ranking.id)
        params = store.rankings.ranking_params(ranking.id)
        target = store.pages.page_id(url)
        if target is None:
            raise StoreError(f"{url}: not in the store")
        noted = store.db.execute(
            "SELECT src, anchor FROM link_notes WHERE dst = ?1 AND src != ?1 AND anchor IS NOT NULL", (target,)
        ).fetchall()
        if not noted:
            return []
        links = in_slice(store, target)
        contribution = _contributions(arrays, links, _ranked_votes(store, ranking, links, params), params)
        # each noted link's contribution, found by its source among the in-links (a page's are few or sorted;
        # a dict of millions of in-links would cost more than the rest)
        sources = np.asarray(links.sources, dtype=np.int64)
        order = np.argsort(sources, kind="stable")
        noted_sources = np.fromiter((src - 1 for src, _ in noted), dtype=np.int64, count=len(noted))
        at = np.minimum(np.searchsorted(sources, noted_sources, sorter=order), max(len(sources) - 1, 0))
        found = len(sources) > 0
        groups: dict[str, dict] = {}
        for (src, anchor), place in zip(noted, at.tolist()):
            text = " ".join(anchor.split())
            group = groups.setdefault(text.casefold(), {"anchor": text, "links": 0, "contribution": 0.0})
            group["links"] += 1
            index = int(order[place]) if found else -1
            if contribution is not None and index >= 0 and sources[index] == src - 1:
                group["contribution"] += float(contribution[index])
    rows = sorted(groups.values(), key=lambda g: (-g["contribution"], -g["links"], g["anchor"]))
    return rows[:limit]


def level_ranking(store: Store, name: str, level: str) -> Ranking:
    """The newest version of ranking ``name``, which must rank ``level`` ('host' or 'site')."""
    ranking = store.rankings.ranking(name)
    if ranking.level != level:
        raise StoreError(
            f"{name} ranks {ranking.level}s, not {level}s: `rankstore rank --level {level}` ranks the {level}s"
        )
    return ranking


def host_level_ranking(store: Store, name: str = "hostrank") -> Ranking:
    """The newest version of ranking ``name``, which must rank hosts."""
    return level_ranking(store, name, "host")


def _level_rows(store: Store, level: str, arrays: RankingRows, indices: Sequence[int]) -> list[dict]:
    """Rows of hosts (or sites) by index in a ranking of their level (id - 1), keyed by the level: a
    host's ``host``, ``pages`` (its pages) and ``hosts`` (hosts ranked), a site's ``site``, ``hosts`` (its
    hosts, None where not known: see :mod:`.sites`) and ``sites``; and ``pagerank``, ``position``,
    ``inlinks`` (None for one newer than the version)."""
    table, members = _LEVEL_TABLES[level]
    # a site's hosts are 0 where no count is known (a domain graph's site without one): None, not a count
    counted = f"nullif({members}, 0)" if level == "site" else members
    ids = [i + 1 for i in indices]
    known: dict[int, tuple[str, int | None]] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        known.update(
            (row[0], row[1:])
            for row in store.db.execute(
                f"SELECT id, name, {counted} FROM {table} WHERE id IN ({','.join('?' * len(chunk))})", chunk
            )
        )
    rows = []
    for index in indices:
        name, count = known.get(index + 1, ("", 0))
        ranked = index < arrays.pages
        rows.append(
            {
                level: name,
                "pagerank": float(arrays.scores[index]) if ranked else None,
                "place": int(arrays.places([index])[0]) if ranked else None,
                "inlinks": known_count(int(arrays.inlinks[index])) if ranked else None,
                members: count,
                table: arrays.pages,
            }
        )
    return rows


def top_nodes(store: Store, name: str, level: str, limit: int = 15, offset: int = 0) -> list[dict]:
    """The best hosts (or sites) of a ranking of that level (rows of :func:`_level_rows`)."""
    with store.snapshot():
        # the head of the order by score and the rows shown: what is read grows with them, not the ranking
        arrays = store.rankings.rows_reader(level_ranking(store, name, level).id, limit)
        return _level_rows(store, level, arrays, arrays.best[offset : offset + limit].tolist())


def top_hosts(store: Store, name: str = "hostrank", limit: int = 15, offset: int = 0) -> list[dict]:
    """The best hosts of a host ranking (rows of :func:`_level_rows`)."""
    return top_nodes(store, name, "host", limit, offset)


def top_sites(store: Store, name: str = "siterank", limit: int = 15, offset: int = 0) -> list[dict]:
    """The best sites of a site ranking (rows of :func:`_level_rows`)."""
    return top_nodes(store, name, "site", limit, offset)


def lookup_nodes(store: Store, names: Sequence[str], name: str, level: str) -> dict[str, dict]:
    """Rows of :func:`_level_rows` for hosts (or sites) by name, from ranking ``name`` of that level; those
    not in the store are left out."""
    number_of = store.hosts.host_id if level == "host" else store.sites.site_id
    with store.snapshot():
        arrays = store.rankings.rows_reader(level_ranking(store, name, level).id, len(names), True)
        ids = {node: number_of(node) for node in dict.fromkeys(names)}
        present = {node: number for node, number in ids.items() if number is not None}
        rows = _level_rows(store, level, arrays, [number - 1 for number in present.values()])
    return dict(zip(present, rows))


def lookup_hosts(store: Store, hosts: Sequence[str], name: str = "hostrank") -> dict[str, dict]:
    """Rows of :func:`_level_rows` for hosts by name, from host ranking ``name``; hosts not in the store
    are left out."""
    return lookup_nodes(store, hosts, name, "host")


def lookup_sites(store: Store, sites: Sequence[str], name: str = "siterank") -> dict[str, dict]:
    """Rows of :func:`_level_rows` for sites by name, from site ranking ``name``; sites not in the store
    are left out."""
    return lookup_nodes(store, sites, name, "site")


def site_ranking(store: Store, name: str = "siterank") -> tuple[int, RankingArrays] | None:
    """(id, arrays) of the newest site-level ranking ``name``, or None when there is none."""
    return _newest_of_level(store, name, "site")


def host_ranks(store: Store, hosts: Sequence[str], name: str = "hostrank") -> dict[str, tuple[float, int]]:
    """{host: (host PageRank, host rank)} from the newest host ranking ``name`` (empty without one)."""
    with store.snapshot():
        found = _newest_id_of_level(store, name, "host")
        if found is None:
            return {}
        asked = set(hosts)
        arrays = store.rankings.rows_reader(found, len(asked), True)  # a few hosts: the blocks holding them
        out = {}
        for host in asked:
            number = store.hosts.host_id(host)
            if number is not None and number <= arrays.pages:
                out[host] = (float(arrays.scores[number - 1]), int(arrays.places([number - 1])[0]) + 1)
    return out
