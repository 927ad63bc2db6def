"""The crawl's frontier and its order: which known URL to fetch next, with no fetching and no I/O.

Three orders (Cho, Garcia-Molina and Page, 1998; the paper's section 7.2):

``breadth``    first discovered, first fetched (FIFO).
``backlinks``  the most in-links from the pages fetched so far first, counted as links are found.
``pagerank``   the highest PageRank of the graph known so far first: the pages fetched and the URLs they
               link to, ranked by :func:`rankstore.solver.pagerank` every ``rerank_every`` pages fetched.
               Between two rankings a newly fetched page passes its share of its current estimate to
               each of its targets (its score over its out-links, damped, as one step of the power
               method would), so that a URL found since the last ranking is not left at nothing.

The whole frontier is re-ordered at every ranking: a priority is a number per known URL, and the next
URLs are the queued ones with the largest (the earliest discovered among equals), taken by a pass over
the array.  A pass costs microseconds at tens of thousands of URLs, so no heap has to be kept up to date.
The same object orders the real crawl (:mod:`rankstore.crawl.run`) and :func:`simulate` over a graph
known ahead, which is both the fast test of the order and the check of a real crawl's.
"""

from __future__ import annotations

import enum
import fnmatch
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..solver import Graph, pagerank
from ..urls import host_of, site_of

__all__ = ["Order", "Scope", "Frontier", "simulate", "top_share", "ASSETS", "DAMPING"]

DAMPING = 0.85
# Files a link may name that are no pages: not fetched (their responses would hold no links).
ASSETS = re.compile(r"\.(png|gif|jpe?g|ico|css|js|svg|woff2?|ttf|txt|gz|zip|bz2|xz|pdf|epub|map|json)(\?.*)?$", re.I)


class Order(enum.Enum):
    PAGERANK = "pagerank"
    BACKLINKS = "backlinks"
    BREADTH = "breadth"


@dataclass(frozen=True)
class Scope:
    """Which URLs the crawl may fetch: those matching one of ``patterns`` (shell globs on the whole URL),
    or with none given those of the seeds' sites (:func:`rankstore.urls.site_of`: registered domain, or
    an IP address or ``localhost`` with its port); never an asset by its name (:data:`ASSETS`)."""

    sites: frozenset[str]
    patterns: tuple[str, ...] = ()

    @classmethod
    def of_seeds(cls, seeds: Iterable[str], patterns: Sequence[str] = ()) -> Scope:
        return cls(frozenset(site_of(host_of(url)) for url in seeds), tuple(patterns))

    def __contains__(self, url: object) -> bool:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")) or ASSETS.search(url):
            return False
        if self.patterns:
            return any(fnmatch.fnmatchcase(url, pattern) for pattern in self.patterns)
        return site_of(host_of(url)) in self.sites


class Frontier:
    """URLs known to a crawl, the links between them, and which to fetch next in ``order``."""

    def __init__(self, order: Order, in_scope: Callable[[str], bool], rerank_every: int = 100):
        self.order = order
        self.in_scope = in_scope
        self.rerank_every = max(1, rerank_every)
        self.ids: dict[str, int] = {}
        self.urls: list[str] = []
        self._src: list[int] = []
        self._dst: list[int] = []
        self._priority = np.full(1024, -np.inf)
        self._queued = np.zeros(1024, dtype=bool)
        self._done = np.zeros(1024, dtype=bool)
        self._taken = np.zeros(1024, dtype=bool)  # handed to the fetcher, not answered yet: not queued again
        self._backlinks = np.zeros(1024)
        self._scores = np.zeros(0)  # the last ranking's scores, by id (ids past its end found since)
        self.fetched = 0
        self.rankings = 0  # PageRank solves run
        self._since_ranking = 0

    # ---- what the crawl tells it

    def seed(self, urls: Iterable[str]) -> None:
        """Start URLs: queued first, whatever the order."""
        for url in urls:
            node = self._node(url)
            if self._new(node):
                self._queued[node] = True
                self._priority[node] = np.inf

    def fetched_page(self, url: str, links: Iterable[str], rank: bool = True) -> None:
        """``url`` was fetched and links to ``links`` (canonical URLs the crawl may follow).  ``rank``:
        False while a resumed crawl replays its pages, ranked once at the end (:meth:`rerank`)."""
        source = self._node(url)
        self._finish(source)
        targets = sorted({self._node(target) for target in links})
        self._src.extend([source] * len(targets))
        self._dst.extend(targets)
        for target in targets:
            if self._new(target) and self.in_scope(self.urls[target]):
                self._queued[target] = True
                self._priority[target] = self._initial(target)
        self._backlinks[targets] += 1
        if self.order is Order.BACKLINKS:
            live = np.array(targets, dtype=np.int64)
            live = live[self._queued[live]]
            self._priority[live] = self._backlinks[live]
        elif self.order is Order.PAGERANK and targets:
            share = self._scores[source] if source < len(self._scores) else 1.0 / max(len(self.urls), 1)
            live = np.array(targets, dtype=np.int64)
            live = live[self._queued[live]]
            self._priority[live] += DAMPING * share / len(targets)
        self.fetched += 1
        self._since_ranking += 1
        if rank and self.order is Order.PAGERANK and self._since_ranking >= self.rerank_every:
            self.rerank()

    def failed(self, url: str) -> None:
        """``url`` could not be fetched (refused by robots.txt, a network error): never asked again this run."""
        self._finish(self._node(url))

    def rerank(self) -> None:
        """PageRank of the graph known so far becomes the queued URLs' priorities."""
        self._since_ranking = 0
        if self.order is not Order.PAGERANK or not self._src:
            return
        n = len(self.urls)
        graph = Graph.from_edges(np.array(self._src), np.array(self._dst), n)
        start = np.full(n, 1.0 / n)
        if len(self._scores):  # warm start: the last ranking's scores, the URLs found since at the mean
            start[: len(self._scores)] = self._scores
        result = pagerank(graph, DAMPING, tol=1e-8, start=start, method="power")
        self._scores = result.scores
        self.rankings += 1
        queued = self._queued[:n]
        self._priority[:n] = np.where(queued, self._scores, -np.inf)

    # ---- what the crawl asks

    def take(self, count: int) -> list[str]:
        """The next ``count`` URLs to fetch (fewer if fewer are queued), in order; no longer queued."""
        n = len(self.urls)
        queued = int(self._queued[:n].sum())
        count = min(count, queued)
        if count <= 0:
            return []
        priority = self._priority[:n]
        if self.order is Order.BREADTH:
            chosen = np.flatnonzero(self._queued[:n])[:count]
        elif count == 1:
            chosen = np.array([int(np.argmax(priority))])  # the first of the largest: the earliest discovered
        else:
            # the count-th largest priority, then every URL at or above it, the earliest discovered first
            # among equals (a partition, not a sort of the whole frontier)
            bar = np.partition(priority, n - count)[n - count]
            ahead = np.flatnonzero(priority >= bar)
            chosen = ahead[np.lexsort((ahead, -priority[ahead]))][:count]
        self._queued[chosen] = False
        self._taken[chosen] = True
        self._priority[chosen] = -np.inf
        return [self.urls[node] for node in chosen]

    def put_back(self, urls: Iterable[str]) -> None:
        """URLs taken but not fetched (the crawl stopped first): queued again at their order's priority."""
        for url in urls:
            node = self.ids[url]
            self._taken[node] = False
            if not self._done[node]:
                self._queued[node] = True
                self._priority[node] = self._initial(node)

    @property
    def queued(self) -> int:
        return int(self._queued[: len(self.urls)].sum())

    def known_graph(self) -> tuple[list[str], np.ndarray, np.ndarray]:
        """The URLs known and the links found, as ids into them."""
        return list(self.urls), np.array(self._src, dtype=np.int64), np.array(self._dst, dtype=np.int64)

    # ---- inside

    def _new(self, node: int) -> bool:
        return not (self._done[node] or self._queued[node] or self._taken[node])

    def _finish(self, node: int) -> None:
        self._done[node] = True
        self._queued[node] = False
        self._taken[node] = False
        self._priority[node] = -np.inf

    def _initial(self, node: int) -> float:
        if self.order is Order.BACKLINKS:
            return float(self._backlinks[node])
        if self.order is Order.PAGERANK:
            return float(self._scores[node]) if node < len(self._scores) else 0.0
        return -float(node)

    def _node(self, url: str) -> int:
        node = self.ids.get(url)
        if node is not None:
            return node
        node = len(self.urls)
        self.ids[url] = node
        self.urls.append(url)
        if node == len(self._priority):
            grow = len(self._priority)
            self._priority = np.concatenate([self._priority, np.full(grow, -np.inf)])
            self._queued = np.concatenate([self._queued, np.zeros(grow, dtype=bool)])
            self._done = np.concatenate([self._done, np.zeros(grow, dtype=bool)])
            self._taken = np.concatenate([self._taken, np.zeros(grow, dtype=bool)])
            self._backlinks = np.concatenate([self._backlinks, np.zeros(grow)])
        return node


def simulate(
    links: Mapping[str, Sequence[str]],
    seeds: Sequence[str],
    order: Order,
    max_pages: int,
    rerank_every: int = 100,
    in_scope: Callable[[str], bool] | None = None,
) -> list[str]:
    """The order a crawl of a graph known ahead (``links``: each page's out-links) fetches its pages in,
    one at a time, with the same :class:`Frontier` as the real crawl; a URL that is not a key of
    ``links`` is fetched and found to have no links."""
    frontier = Frontier(order, in_scope or (lambda url: True), rerank_every)
    frontier.seed(seeds)
    fetched: list[str] = []
    while len(fetched) < max_pages:
        taken = frontier.take(1)
        if not taken:
            break
        frontier.fetched_page(taken[0], links.get(taken[0], ()))
        fetched.append(taken[0])
    return fetched


def top_share(fetched_order: Sequence[str], top: set[str], fractions: Sequence[float], total: int) -> list[float]:
    """For each fraction of ``total`` pages, the share of ``top`` fetched by then in ``fetched_order``."""
    position = {url: index for index, url in enumerate(fetched_order)}
    shares = []
    for fraction in fractions:
        budget = int(round(fraction * total))
        shares.append(sum(1 for url in top if position.get(url, budget) < budget) / len(top))
    return shares
