"""Store -> CSR -> solver -> ranking written back, and the variants of the seeds.

Variants, each a named ranking:

* ``pagerank``: uniform rank source E.
* personalised (``sources``): E on chosen pages, or on the root page of every
  server (``source_roots``; the paper's section 6).
* personalised by your visits (``visits``, a :class:`VisitSource`): E on the
  pages (hosts, sites at ``level``) the proxy's record saw you view, each
  weighted by its views (since a date, if given): the paper's section 6 with
  your browsing as the bookmarks.
* topic-sensitive (``topic:NAME``): E on the pages of a topic (seed 002).
* ``trust`` (TrustRank): E on trusted pages; each page's relative Spam Mass is
  stored with it (below).
* ``badrank``: the reversed graph with E on flagged pages: rank flows from a
  bad page to the pages that link to it (seed 000).

Seeds (``--source``, ``--topic``, ``--trusted``, ``--flagged``) are
:class:`Seeds`, each URL a :class:`SeedUrl` that knows its file and line.
:func:`check_seeds` resolves every seed list of a run against the store before
anything is ranked: a URL that is not in the store, or not an http(s) URL, is
a :class:`SeedProblem` (``FILE:LINE: URL ...`` under the option's name),
skipped, or refused under ``strict``; a list left with no page is an error.
So a run that fails for its seeds writes no ranking at all.

Spam Mass (Gyöngyi, Berkhin, Garcia-Molina and Pedersen, "Link spam
detection based on mass estimation", VLDB 2006, section 3): the relative
mass of page x is ``m~_x = (p_x - p'_x) / p_x``, where ``p`` is PageRank with
the uniform jump vector (each page 1/n) and ``p'`` is the core-based PageRank,
whose jump vector ``w`` gives ``gamma/n`` to each page of the good core (the
trusted pages) and 0 to the others.  The paper scales ``w`` so that the core
stands for all good pages, of which it is a small sample: ``gamma = g·n/|core|``
for an estimated fraction ``g`` of good pages, so that ``|w| = g`` (the
paper's estimate for its web graph was ``g = 0.85``, the default of
``good_fraction``).  PageRank is linear in its jump vector, so with a dangling
rule that does not depend on E, ``p' = g·PR(core, normalised)`` and a page
that only good pages reach scores about 0, a spam farm's target about 1 (its
rank comes from the farm), and a trusted page a little below 0 while the core
is a fair sample of the good pages (its own jump is scaled by ``gamma``; the
fewer the trusted pages, the lower).  ``p`` and ``p'`` are solved in the same
run with the ranking's damping, weights, nofollow and dangling rule; where the
rule is ``source`` (jump by E), both use the uniform jump at sinks, which is
what ``source`` means for ``p``, so that p' is on p's scale.

Nofollow links cast no vote unless ``include_nofollow``.  The previous version
of the same ranking is the warm start (the paper, section 3.1: a good initial
assignment speeds convergence).  Ranking again on the graph and with the
parameters (and seeds) that the newest version ranked writes nothing
(:class:`Unchanged`) unless ``force``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np

from .choices import ENGINES, LEVELS
from .solver import MEMORY_SHARE, Graph, Result, choose_method, in_sums, inner_order, pagerank, solve_bytes
from .stop_at import stop_at
from .store import Ranking, RankingNotFound, Store
from .store.hosts import LevelGraph
from .store.rankings import order_by_score
from .urls import canonical

__all__ = [
    "ENGINES",
    "GOOD_FRACTION",
    "RankOptions",
    "RankOutcome",
    "VisitSource",
    "NO_VISITS",
    "visit_teleport",
    "Unchanged",
    "SeedUrl",
    "Seeds",
    "SeedProblem",
    "SeedCheck",
    "read_seed_file",
    "check_seeds",
    "spam_mass",
    "LoadedGraph",
    "Problem",
    "Solver",
    "load_graph",
    "load_host_graph",
    "load_site_graph",
    "load_level_graph",
    "other_in_links",
    "rank",
    "scipy_solver",
    "RankingError",
]


GOOD_FRACTION = 0.85  # the share of good pages Gyöngyi et al. (2006) estimated for their web graph


class RankingError(Exception):
    """A ranking that cannot be computed as asked (unknown URLs, empty store...)."""


@dataclass(frozen=True)
class SeedUrl:
    """One seed URL as the user wrote it, and where: a file's line, or the command line (no file)."""

    url: str
    file: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class Seeds:
    """A seed list (E's pages) from one option: its URLs in order, and once resolved their page ids."""

    option: str  # the option that gave them (``--source``, ``--topic``, ``--trusted``, ``--flagged``)
    urls: tuple[SeedUrl, ...]
    file: str | None = None  # the file they were read from; None: the command line
    page_ids: tuple[int, ...] | None = None  # set by :func:`check_seeds`: the pages in the store, each once
    kept: tuple[str, ...] = ()  # the URLs (as written) that name those pages

    @classmethod
    def from_urls(cls, option: str, urls: Sequence[str]) -> Seeds:
        """URLs given on the command line."""
        return cls(option, tuple(SeedUrl(url) for url in urls))

    @property
    def resolved(self) -> bool:
        return self.page_ids is not None

    @property
    def origin(self) -> str:
        return f"{self.option} {self.file}" if self.file else self.option


@dataclass(frozen=True)
class SeedProblem:
    """A seed URL that names no page of the store, and why; said as ``OPTION FILE:LINE: URL reason``."""

    option: str
    seed: SeedUrl
    reason: str  # "is not in the store", "is not an http(s) URL"

    def __str__(self) -> str:
        where = f"{self.option} {self.seed.file}:{self.seed.line}" if self.seed.file else self.option
        return f"{where}: {self.seed.url} {self.reason}"


@dataclass
class SeedCheck:
    """Every job of a run with its seeds resolved, and the seed URLs skipped on the way."""

    jobs: list[RankOptions]
    skipped: list[SeedProblem]


def read_seed_file(path: str, option: str) -> Seeds:
    """The URLs of a seed file: the first field of each line; blank lines and ``#`` comments are skipped.

    Raises OSError when the file cannot be read; the URLs are checked by :func:`check_seeds`.
    """
    urls = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            text = line.strip()
            if text and not text.startswith("#"):
                urls.append(SeedUrl(text.split()[0], path, number))
    return Seeds(option, tuple(urls), path)


def _resolve(store: Store, seeds: Seeds) -> tuple[Seeds, list[SeedProblem]]:
    problems = []
    canonical_of: dict[SeedUrl, str] = {}
    for seed in seeds.urls:
        normal = canonical(seed.url)
        if normal is None:
            problems.append(SeedProblem(seeds.option, seed, "is not an http(s) URL"))
        else:
            canonical_of[seed] = normal
    found = store.pages.page_ids_for(list(canonical_of.values()))
    ids: dict[int, None] = {}
    kept = []
    for seed, normal in canonical_of.items():
        if normal in found:
            ids.setdefault(found[normal])
            kept.append(seed.url)
        else:
            problems.append(SeedProblem(seeds.option, seed, "is not in the store"))
    problems.sort(key=lambda problem: problem.seed.line or 0)
    return replace(seeds, page_ids=tuple(ids), kept=tuple(kept)), problems


def check_seeds(store: Store, jobs: Sequence[RankOptions], strict: bool = False) -> SeedCheck:
    """Resolve every seed list of ``jobs`` against the store, before any of them is ranked.

    A seed URL that is not an http(s) URL, or not in the store, is skipped
    (listed in the result), or refused when ``strict``; a seed list left
    with no page is refused.  Either refusal is a :class:`RankingError`
    naming the option, the file and the line; so is a job on your visits
    (``visits``) when there are none (since its date) to rank from.
    """
    checked: list[RankOptions] = []
    skipped: list[SeedProblem] = []
    for job in jobs:
        if job.visits is not None:  # views to rank from, before the graph is read
            visit_teleport(store, job.level, job.visits)
        sources, trusted, flagged = (
            _checked(store, seeds, strict, skipped) for seeds in (job.sources, job.trusted, job.flagged)
        )
        checked.append(replace(job, sources=sources, trusted=trusted, flagged=flagged))
    return SeedCheck(checked, skipped)


def _checked(store: Store, seeds: Seeds | None, strict: bool, skipped: list[SeedProblem]) -> Seeds | None:
    """``seeds`` resolved (see :func:`check_seeds`); what was skipped is added to ``skipped``."""
    if seeds is None or seeds.resolved:
        return seeds
    seeds, problems = _resolve(store, seeds)
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    if problems and strict:
        raise RankingError(f"{problems[0]}{more}; --strict refuses them")
    if not seeds.page_ids:
        if not problems:
            raise RankingError(f"{seeds.origin}: no URL")
        source = seeds.file or "the command line"
        raise RankingError(f"{problems[0]}{more}; no URL of {source} is left to rank from")
    skipped += problems
    return seeds


NO_VISITS = (
    "the store has no visits: record your browsing with `pagerank-proxy --record DIR`, then `rankstore build DIR`"
)


@dataclass(frozen=True)
class VisitSource:
    """E from the visits the store holds (the proxy's record, built): views since ``since`` (all when None),
    counted at the ranking's level."""

    since: datetime | None = None


def visit_teleport(store: Store, level: str, source: VisitSource) -> tuple[np.ndarray, np.ndarray]:
    """The ids visited at ``level`` and their views, for E; RankingError when there are none to rank from."""
    counts = store.visits.counts(None, level)
    if len(counts.ids) == 0:
        raise RankingError(NO_VISITS)
    if source.since is not None:
        counts = store.visits.counts(source.since, level)
        if len(counts.ids) == 0:
            raise RankingError(
                f"no visits since {source.since.isoformat().replace('+00:00', 'Z')}: the store's visits are all "
                "before it (give an earlier --since, or none)"
            )
    return counts.ids, counts.counts.astype(np.float64)


@dataclass
class RankOptions:
    name: str = "pagerank"
    damping: float = 0.85
    tol: float = 1e-10
    max_iter: int = 1000
    dangling: str | None = None  # None: uniform for pagerank, source for variants with an E
    include_nofollow: bool = False
    weighted: bool = True
    sources: Seeds | None = None  # personalised (or a topic): E on these pages
    source_roots: bool = False
    visits: VisitSource | None = None  # personalised by your visits: E on what you viewed, weighted by views
    trusted: Seeds | None = None  # TrustRank: E on these pages, and Spam Mass against PageRank
    flagged: Seeds | None = None  # BadRank: E on these pages, on the reversed graph
    good_fraction: float = GOOD_FRACTION  # Spam Mass: the share of the pages taken to be good (module docstring)
    strict: bool = False  # refuse a seed URL that is not in the store, rather than skip it
    force: bool = False  # rank even when the newest version ranked this graph with these parameters
    warm_start: bool = True
    method: str = "auto"  # BiCGSTAB unless memory binds (rankstore.solver.choose_method)
    level: str = "page"  # or "host", "site": the host or site graph (see rankstore.store.hosts, .sites)
    engine: str = "scipy"  # which engine solves it; recorded with the version (spark: the power method)
    keep: int = 2  # versions whose scores are kept, this one among them (0: every one): history reads them


@dataclass
class RankOutcome:
    ranking: Ranking
    result: Result
    seconds: float
    warm_from: int | None = None
    cold_iterations: int | None = None
    write_seconds: float = 0.0  # writing the version, after ``seconds``

    @property
    def iterations_saved(self) -> int | None:
        if self.warm_from is None or self.cold_iterations is None:
            return None
        return self.cold_iterations - self.result.iterations


@dataclass
class Unchanged:
    """Nothing written: ``ranking``, the newest version, ranked this graph with these parameters and seeds."""

    ranking: Ranking

    @property
    def message(self) -> str:
        return f"{self.ranking.label} unchanged: the graph and parameters are those it ranked (--force ranks again)"


@dataclass
class LoadedGraph:
    # the id of each node of the graph: ascending, but for a domain graph's sites (in the solver's order)
    page_ids: np.ndarray
    graph: Graph
    seconds: float
    members: np.ndarray | None = None  # a level's nodes of the graph (LevelGraph.members); None: every node
    # how many ids the level has, when the graph leaves some out (hosts or sites without pages or links, which
    # score 0): the ranking is written for all of them
    ids: int | None = None
    # each node's count of in-links as every view shows it, where it is not the graph's in-degree: a page's
    # backlinks, the other pages linking to it, followed or not (:func:`other_in_links`)
    inlinks: np.ndarray | None = None

    def nodes_said(self, level: str) -> str:
        """The graph's nodes in words, and of how many when it leaves some out: every line of a run says the
        same two numbers (the ranking is written for all, those left out at 0)."""
        if self.ids is None or self.ids == self.graph.n:
            return f"{self.graph.n:,} {level}s"
        return f"{self.graph.n:,} {level}s with a page or a link (of {self.ids:,})"


@dataclass
class Problem:
    """One ranking's maths as every engine gets it: the graph as ranked, E, the sinks' rule, the stopping rule.

    Built once by :func:`rank` from the store and the options, so that the
    engines share E, the dangling rule, the weights, nofollow and the warm
    start, and differ only in how they iterate.
    """

    graph: Graph
    damping: float
    personalization: np.ndarray | None
    dangling: str
    tol: float
    max_iter: int
    start: np.ndarray | None
    weighted: bool


Solver = Callable[[Problem, Callable[[int, float], None] | None], Result]


def scipy_solver(method: str = "auto") -> Solver:
    """The scipy engine: :func:`rankstore.solver.pagerank` with ``method``."""

    def solve(problem: Problem, callback: Callable[[int, float], None] | None = None) -> Result:
        return pagerank(
            problem.graph,
            problem.damping,
            problem.personalization,
            problem.dangling,
            problem.tol,
            problem.max_iter,
            start=problem.start,
            weights=problem.weighted,
            callback=callback,
            method=method,
        )

    return solve


def rankable_level(store: Store) -> str:
    """The finest level the store can rank: pages, or sites where it holds a domain graph alone (sites and their
    links, no page: what ``build --rank`` ranks)."""
    return "site" if store.pages.last_page_id() == 0 and store.sites.site_count() else "page"


def load_graph(store: Store, include_nofollow: bool = False) -> LoadedGraph:
    """The store's link graph as the solver's in-link CSR: the store's own arrays, read in one pass."""
    started = time.perf_counter()
    store.ensure_derived()
    links = store.graph.in_links()
    if links.n == 0:
        if store.sites.site_count():  # a domain graph alone: sites and their links, no page to rank
            raise RankingError(
                "the store has no pages, only sites (a domain graph): rank them with `rankstore rank --level site`"
            )
        raise RankingError("the store has no pages: run `rankstore build` first")
    indptr, indices, weights = links.indptr, links.indices, links.weights
    inlinks = other_in_links(indptr, indices)  # of every link, before the nofollow ones are left out
    if links.nofollow is not None and not include_nofollow:
        follow = ~links.nofollow
        kept = np.zeros(len(follow) + 1, dtype=np.int64)
        np.cumsum(follow, out=kept[1:])
        indptr, indices = kept[indptr], indices[follow]
        weights = weights[follow] if weights is not None else None
    if weights is not None and bool(np.all(weights == 1.0)):
        weights = None
    if indptr[-1] < 2**31 - 1:
        indptr = indptr.astype(np.int32)  # the solver keeps int32 row pointers while they fit
    graph = Graph(links.n, indptr, indices, weights)
    ids = np.arange(1, links.n + 1, dtype=np.int64)
    return LoadedGraph(ids, graph, time.perf_counter() - started, inlinks=inlinks)


_SELF_CHUNK = 1 << 24  # links looked at once for links to themselves: bounded temporaries on graphs of any size


def other_in_links(indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Each page's in-links from other pages, followed or not (int32), of the in-link CSR ``indptr``/``indices``:
    the count of its backlinks that every view shows, the length of their list (a page's links to itself
    count in its rank but are none of its backlinks).  One pass over the links a chunk at a time: no array
    of the graph's size beside the graph."""
    n = len(indptr) - 1
    counts = np.diff(indptr).astype(np.int32)
    first = 0
    while first < n:
        stop = int(np.searchsorted(indptr, indptr[first] + _SELF_CHUNK, side="right")) - 1
        stop = min(max(stop, first + 1), n)
        start, end = int(indptr[first]), int(indptr[stop])
        if end > start:
            targets = np.repeat(np.arange(first, stop, dtype=np.int32), np.diff(indptr[first : stop + 1]))
            own = targets[indices[start:end] == targets]
            if len(own):
                np.subtract.at(counts, own, 1)
        first = stop
    return counts


def load_host_graph(store: Store, include_nofollow: bool = False) -> LoadedGraph:
    """The host graph as the solver's in-link CSR, weighted by the page links between hosts."""
    started = time.perf_counter()
    return _level_graph(store.hosts.host_graph(include_nofollow), "pages", started)


def load_site_graph(store: Store, include_nofollow: bool = False) -> LoadedGraph:
    """The site graph as the solver's in-link CSR: the host graph folded into sites, with the site links a
    domain graph loaded (:mod:`rankstore.store.sites`).  A domain graph alone is read straight into the
    solver's inner order (:func:`rankstore.solver.inner_order`): its node ids are then in that order."""
    started = time.perf_counter()
    ordered = store.sites.ordered_site_graph(inner_order, include_nofollow)
    if isinstance(ordered, LevelGraph):  # hosts link: folded by site
        return _level_graph(ordered, "sites", started)
    if len(ordered.order) == 0:
        raise RankingError("the store has no sites: run `rankstore build` first")
    indptr = ordered.indptr.astype(np.int32) if ordered.indptr[-1] < 2**31 - 1 else ordered.indptr
    graph = Graph(len(ordered.order), indptr, ordered.indices, None, ordered.out_degree)
    ids = ordered.order + 1  # int32, as _level_graph's
    return LoadedGraph(ids, graph, time.perf_counter() - started, None, ordered.count)


def load_level_graph(store: Store, level: str, include_nofollow: bool = False) -> LoadedGraph:
    """The graph of ``level`` (one of :data:`rankstore.choices.LEVELS`) as the solver's in-link CSR."""
    loaders = {"page": load_graph, "host": load_host_graph, "site": load_site_graph}
    if level not in loaders:
        raise RankingError(f"level must be one of {', '.join(LEVELS)}, not {level!r}")
    return loaders[level](store, include_nofollow)


def _level_graph(nodes: LevelGraph, what: str, started: float) -> LoadedGraph:
    if nodes.n == 0:
        raise RankingError(f"the store has no {what}: run `rankstore build` first")
    # int32 ids (4 bytes a node less beside the solver's vectors, at 135 million sites)
    ids = np.arange(1, nodes.n + 1, dtype=np.int32 if nodes.n < 2**31 - 1 else np.int64)
    count = None
    if nodes.members is not None:
        # hosts (sites) no link names and no page holds are no nodes: left out of the graph, so that they score
        # 0 and the others as in the graph without them (no rank source vector to say so)
        count = nodes.n
        ids = ids[nodes.members]
        nodes = _without_others(nodes)
    indptr = nodes.indptr.astype(np.int32) if nodes.indptr[-1] < 2**31 - 1 else nodes.indptr
    weights = nodes.weights
    if weights is not None and bool(np.all(weights == 1.0)):
        weights = None  # the product then keeps no value per link
    graph = Graph(nodes.n, indptr, nodes.indices, weights)
    return LoadedGraph(ids, graph, time.perf_counter() - started, None, count)


_RENAME_LINKS = 1 << 24  # links renamed at once


def _without_others(nodes: LevelGraph) -> LevelGraph:
    """The graph of ``nodes.members`` alone, renumbered in place (the others have no link in or out)."""
    assert nodes.members is not None
    kept = np.flatnonzero(nodes.members)
    new_index = np.full(nodes.n, -1, dtype=np.int32)
    new_index[kept] = np.arange(len(kept), dtype=np.int32)
    if int(np.diff(nodes.indptr)[~nodes.members].max(initial=0)) > 0:
        raise RankingError("a node outside the graph has links: run `rankstore build` again")
    indices = nodes.indices
    for lo in range(0, len(indices), _RENAME_LINKS):
        part = indices[lo : lo + _RENAME_LINKS]
        part[:] = np.take(new_index, part)
        if len(part) and int(part.min()) < 0:
            raise RankingError("a node outside the graph has links: run `rankstore build` again")
    # the rows left out are empty: the kept rows' links stay where they are
    indptr = np.append(nodes.indptr[kept], nodes.indptr[-1])
    return LevelGraph(len(kept), indptr, indices, nodes.weights)


def _indicator(page_ids: np.ndarray, seeds: Seeds) -> np.ndarray:
    """E over the pages: 1 on each seed page (resolved by :func:`check_seeds`), 0 elsewhere."""
    assert seeds.page_ids is not None
    vector = np.zeros(len(page_ids))
    vector[np.searchsorted(page_ids, np.asarray(seeds.page_ids, dtype=np.int64))] = 1.0
    return vector


def _warm_start(
    store: Store, name: str, page_ids: np.ndarray, teleport: tuple[np.ndarray, np.ndarray] | None
) -> tuple[np.ndarray | None, Ranking | None]:
    """The previous version's scores as the start, when it had the same rank source E.

    Under another E the pages that this one never reaches held rank: a start
    there is not 0, and the solve leaves rounding errors of either sign where
    the answer is exactly 0 (from 0 every iterate stays 0 there: the pages E
    reaches link only to pages E reaches).
    """
    try:
        previous = store.rankings.ranking(name)
    except RankingNotFound:
        return None, None
    before = store.rankings.teleport_of(previous.id)
    if not _same_teleport(before, teleport):
        return None, None
    old_ids, old_scores = store.rankings.scores_of(previous.id)
    if len(old_ids) == 0:
        return None, None
    # pages new since then start with an average share
    return _by_page(page_ids, old_ids, old_scores, old_scores.mean()), previous


def _by_page(page_ids: np.ndarray, ids: np.ndarray, values: np.ndarray, fill: float) -> np.ndarray:
    """``values`` (keyed by page id ``ids``) laid out by page index; ``fill`` where a page has none."""
    if len(ids) == len(page_ids) and np.array_equal(ids, page_ids):
        return np.asarray(values, dtype=np.float64).copy()  # the same pages: no search
    out = np.full(len(page_ids), fill)
    if len(page_ids) > 1 and not bool(np.all(page_ids[1:] > page_ids[:-1])):  # ids in an order of the solver's
        index = np.full(int(max(page_ids.max(), ids.max(initial=0))) + 1, -1, dtype=np.int64)
        index[page_ids] = np.arange(len(page_ids))
        where = index[ids]
        out[where[where >= 0]] = np.asarray(values)[where >= 0]
        return out
    where = np.searchsorted(page_ids, ids)
    valid = (where < len(page_ids)) & (page_ids[np.minimum(where, len(page_ids) - 1)] == ids)
    out[where[valid]] = values[valid]
    return out


def rank(
    store: Store,
    options: RankOptions,
    callback: Callable[[int, float], None] | None = None,
    loaded: LoadedGraph | None = None,
    solver: Solver | None = None,
    status: Callable[[str], None] | None = None,
    release: bool = False,
) -> RankOutcome | Unchanged:
    """Compute one ranking and store it as a new version of ``options.name``.

    ``release``: the caller's last use of ``loaded``, whose graph's links are let go (:meth:`Graph.release`)
    once the votes are counted, before the version is written: at 135 million sites the writing needs that
    memory.

    ``solver`` iterates (the scipy engine with ``options.method`` when None;
    :class:`rankstore.spark.engine.SparkSolver` for ``engine="spark"``);
    everything else, from the store to the version written in one
    transaction, is this function's whatever the engine.  ``status`` hears
    of the steps after the iterations (a big version takes a while to write),
    and of seed URLs skipped when the seeds were not checked by
    :func:`check_seeds` first.  Returns :class:`Unchanged`, having written
    nothing, when the newest version ranked the same graph with the same
    parameters and seeds (unless ``options.force``).
    """
    started = time.perf_counter()
    if options.engine not in ENGINES:
        raise RankingError(f"engine must be one of {', '.join(ENGINES)}, not {options.engine!r}")
    own_solver = solver is None  # made here from options.method: made again once "auto" is resolved
    if solver is None:
        if options.engine != "scipy":
            raise RankingError(f"engine {options.engine!r} needs its solver (rankstore.spark.engine.SparkSolver)")
        solver = scipy_solver(options.method)
    method = options.method if options.engine == "scipy" else "power"
    try:
        level = store.rankings.ranking(options.name).level
    except RankingNotFound:
        level = options.level
    if level != options.level:  # its readers would look one level's ids up as the other's
        raise RankingError(f"{options.name} ranks {level}s: give another --name for a ranking of {options.level}s")
    if options.level != "page":
        if options.sources or options.source_roots or options.trusted or options.flagged:
            raise RankingError(
                f"--level {options.level} ranks {options.level}s with a uniform rank source or your visits: "
                "no --source, --trusted, --flagged"
            )
        loaded = loaded or load_level_graph(store, options.level, options.include_nofollow)
    if any(seeds is not None and not seeds.resolved for seeds in (options.sources, options.trusted, options.flagged)):
        check = check_seeds(store, [options], options.strict)
        options = check.jobs[0]
        for seed in check.skipped:
            if status is not None:
                status(f"skipped {seed}")
    loaded = loaded or load_graph(store, options.include_nofollow)
    page_ids, graph = loaded.page_ids, loaded.graph
    personalization = None
    kind = "pagerank"
    if options.sources or options.source_roots:
        kind = "personalized"
        personalization = np.zeros(len(page_ids))
        if options.sources:
            personalization += _indicator(page_ids, options.sources)
        if options.source_roots:
            roots = store.pages.root_page_ids()
            if not roots:
                raise RankingError("--source-roots: the store has no root pages (scheme://host/)")
            personalization[np.searchsorted(page_ids, roots)] = 1.0
    if options.visits is not None:
        kind = "visits"
        visited, views = visit_teleport(store, options.level, options.visits)
        # a domain graph's site ids come in the solver's order: laid out by id, whatever the order
        personalization = _by_page(np.asarray(page_ids, dtype=np.int64), visited, views, 0.0)
        if not personalization.any():  # visited, but built since the graph was read: nothing of it to rank
            raise RankingError(f"no {options.level} you visited is in the graph: run `rankstore build` again")
    if options.trusted:
        kind = "trust"
        personalization = _indicator(page_ids, options.trusted)
    if options.flagged:
        kind = "badrank"
        personalization = _indicator(page_ids, options.flagged)
        graph = graph.reversed()
    dangling = options.dangling or ("uniform" if personalization is None else "source")
    if method == "auto":
        method = choose_method(graph)
        if method == "power" and status is not None:
            status(
                f"the power method: BiCGSTAB would hold about {solve_bytes(graph, 'bicgstab') / 2**30:.1f} GiB, "
                f"more than {MEMORY_SHARE:.0%} of this machine's memory"
            )
        if own_solver:
            solver = scipy_solver(method)
    params = {
        "kind": kind,
        "engine": options.engine,
        "method": method,
        "damping": options.damping,
        "tol": options.tol,
        "max_iter": options.max_iter,
        "dangling": dangling,
        "include_nofollow": options.include_nofollow,
        "weighted": options.weighted,
        "sources": list(options.sources.kept) if options.sources else [],
        "source_roots": options.source_roots,
        **(_visit_params(options.visits) if options.visits is not None else {}),
        "trusted": len(options.trusted.page_ids or ()) if options.trusted else 0,
        "flagged": len(options.flagged.page_ids or ()) if options.flagged else 0,
        "links": graph.links,
    }
    if loaded.inlinks is not None:  # a version ranked before counted the solver graph's in-links (its own too)
        params["inlinks"] = "others"
    if kind == "trust":
        params["good_fraction"] = options.good_fraction
    teleport = None
    if personalization is not None:
        chosen = np.flatnonzero(personalization)
        teleport = (page_ids[chosen], personalization[chosen] / personalization.sum())
    if not options.force:
        same = _same_as_newest(store, options, params, teleport, loaded.ids or len(page_ids))
        if same is not None:
            return Unchanged(same)
    start, previous = (None, None)
    if options.warm_start:
        start, previous = _warm_start(store, options.name, page_ids, teleport)
    problem = Problem(
        graph, options.damping, personalization, dangling, options.tol, options.max_iter, start, options.weighted
    )
    result = solver(problem, callback)
    if result.fell_back_after:
        params["method"] = "power"
        params["bicgstab_broke_down_after"] = result.fell_back_after
        if status is not None:
            status(f"BiCGSTAB broke down after {result.fell_back_after} steps: the power method ranked instead")
    # PageRank is never negative: a Krylov solve can leave a rounding error of either sign where the exact
    # score is 0 (a page the rank source never reaches), and a bar or a warm start must not read it as a score
    if bool((result.scores < 0).any()):
        result.scores = np.maximum(result.scores, 0.0)
    extra = None
    if kind == "trust":
        extra = spam_mass(problem, result.scores, options.good_fraction, solver)
    params["warm_from"] = previous.version if previous is not None else None
    params["nodes"] = graph.n  # scored: those of the level left out of the graph (no page, no link) score 0
    params["load_seconds"] = round(loaded.seconds, 3)
    scores = result.scores
    in_degree = loaded.inlinks if loaded.inlinks is not None else loaded.graph.in_degree()
    if loaded.ids is not None:  # the ids the graph left out score 0, with no link in or out
        at = page_ids - 1
        scores, in_degree = _spread(scores, at, loaded.ids), _spread(in_degree, at, loaded.ids)
        extra = None if extra is None else _spread(extra, at, loaded.ids)
    assert scores is not None and in_degree is not None
    votes = linked = None
    if kind != "badrank":  # BadRank flows against the links: a link's share of it is not a vote for its target
        votes = link_votes(graph, result.scores, options.damping, options.weighted)
        linked = link_mass(graph, votes, options.weighted)
    if release:
        del problem
        graph.release()
        loaded.graph.release()
    if votes is not None and linked is not None and loaded.ids is not None:
        at = page_ids - 1
        votes, linked = _spread(votes, at, loaded.ids), _spread(linked, at, loaded.ids)
    if loaded.ids is not None:
        page_ids = np.arange(1, loaded.ids + 1, dtype=np.int64)
        result.scores = scores
    best = order_by_score(scores).astype(np.int32)
    cold = store.rankings.cold_iterations(options.name) if previous is not None else None
    seconds = time.perf_counter() - started
    if status is not None:
        left_out = ""
        if len(page_ids) != loaded.graph.n:  # the lines before said the graph's nodes: this one says both
            left_out = f" ({loaded.graph.n:,} with a page or a link, the rest at 0)"
        status(f"writing {options.name}: {len(page_ids):,} {options.level}s{left_out}")
    stop_at("rank-solved")
    ranking = store.rankings.write_ranking(
        options.name,
        params,
        result.iterations,
        result.residuals,
        page_ids,
        scores,
        in_degree,
        extra,
        seconds,
        votes=votes,
        linked=linked,
        teleport=teleport,
        level=options.level,
        best=best,
        keep=options.keep,
    )
    written = time.perf_counter() - started - seconds
    return RankOutcome(ranking, result, seconds, previous.version if previous else None, cold, written)


def _visit_params(source: VisitSource) -> dict:
    """What a visits ranking says of its E beside the weights stored with it: from when the views count."""
    return {"visits_since": source.since.isoformat() if source.since is not None else None}


# what a version's params say of its run (and, ``nodes``, of its result), not of what it ranked
_RUN_FIELDS = ("warm_from", "load_seconds", "nodes")


def _spread(values: np.ndarray, at: np.ndarray, count: int) -> np.ndarray:
    """``values`` of some indices ``at``, laid out over ``count`` (0 elsewhere)."""
    out = np.zeros(count, dtype=values.dtype)
    out[at] = values
    return out


def _same_as_newest(
    store: Store,
    options: RankOptions,
    params: dict,
    teleport: tuple[np.ndarray, np.ndarray] | None,
    pages: int,
) -> Ranking | None:
    """The newest version of ``options.name`` when it ranked this graph with these parameters and seeds."""
    try:
        newest = store.rankings.ranking(options.name)
    except RankingNotFound:
        return None
    build = store.rankings.newest_build()
    if newest.build is None or newest.build != build or newest.pages != pages or newest.level != options.level:
        return None
    ranked = {key: value for key, value in newest.params.items() if key not in _RUN_FIELDS}
    if ranked != params:
        return None
    return newest if _same_teleport(store.rankings.teleport_of(newest.id), teleport) else None


def _same_teleport(before: tuple[np.ndarray, np.ndarray] | None, after: tuple[np.ndarray, np.ndarray] | None) -> bool:
    """Whether two rank sources E (page ids and weights, None for uniform) are the same."""
    if before is None or after is None:
        return before is after
    return bool(np.array_equal(before[0], after[0]) and np.array_equal(before[1], after[1]))


def link_votes(graph: Graph, scores: np.ndarray, damping: float, weighted: bool) -> np.ndarray:
    """d·PR(v)/W(v) for each page v: what each unit of its followed out-links' weight passes on (0 for sinks).

    A link v -> u of weight w contributes ``votes[v] * w`` to PR(u) (the
    paper's R(u) = c Σ R(v)/N_v, weighted); the rest of PR(u) comes from the
    random jump and from the rank sinks pass on.
    """
    out = graph.out_weight(weighted)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(out > 0, damping * scores / out, 0.0)


def link_mass(graph: Graph, votes: np.ndarray, weighted: bool) -> np.ndarray:
    """Σ over each page u's in-links of votes[v]·w: the part of PR(u) that its backlinks give it."""
    return in_sums(graph, votes, weighted)


def spam_mass(problem: Problem, trust: np.ndarray, good_fraction: float, solver: Solver) -> np.ndarray:
    """Relative Spam Mass ``(p - p') / p`` of every page (Gyöngyi et al. 2006; the module docstring).

    ``problem`` is the TrustRank problem (E on the good core), ``trust`` its
    scores.  ``p`` is PageRank with a uniform E and ``problem``'s damping,
    weights, stopping rule and dangling rule, solved here; ``p'`` is the
    core-based PageRank, its jump vector scaled to ``good_fraction``: by
    linearity ``good_fraction`` times PageRank with E on the core, which is
    ``trust`` itself unless the dangling rule follows E (``source``), when it
    is solved again with the uniform rule that ``p`` uses.  NaN where p is 0.
    """
    uniform_sinks = "uniform" if problem.dangling == "source" else problem.dangling
    plain = replace(problem, personalization=None, dangling=uniform_sinks, start=None)
    p = solver(plain, None).scores
    core_based = trust
    if uniform_sinks != problem.dangling:
        core_based = solver(replace(problem, dangling=uniform_sinks, start=trust), None).scores
    scaled = good_fraction * core_based
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0, (p - scaled) / p, np.nan)
