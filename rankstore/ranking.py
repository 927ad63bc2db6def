"""Store -> CSR -> solver -> ranking written back, and the variants of the seeds.

Variants, each a named ranking:

* ``pagerank``: uniform rank source E.
* personalised (``sources``): E on chosen pages, or on the root page of every
  server (``source_roots``; the paper's section 6).
* topic-sensitive (``topic:NAME``): E on the pages of a topic (seed 002).
* ``trust`` (TrustRank): E on trusted pages; each page's Spam Mass
  ``(P - T) / P`` against the ``pagerank`` ranking is stored with it.
* ``badrank``: the reversed graph with E on flagged pages: rank flows from a
  bad page to the pages that link to it (seed 000).

Nofollow links cast no vote unless ``include_nofollow``.  The previous version
of the same ranking is the warm start (the paper, section 3.1: a good initial
assignment speeds convergence).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .choices import ENGINES
from .solver import Graph, Result, in_sums, pagerank
from .store import Ranking, RankingNotFound, Store
from .urls import canonical

__all__ = [
    "ENGINES",
    "RankOptions",
    "RankOutcome",
    "LoadedGraph",
    "Problem",
    "Solver",
    "load_graph",
    "rank",
    "scipy_solver",
    "RankingError",
]


class RankingError(Exception):
    """A ranking that cannot be computed as asked (unknown URLs, empty store...)."""


@dataclass
class RankOptions:
    name: str = "pagerank"
    damping: float = 0.85
    tol: float = 1e-10
    max_iter: int = 1000
    dangling: str | None = None  # None: uniform for pagerank, source for variants with an E
    include_nofollow: bool = False
    weighted: bool = True
    sources: Sequence[str] = ()
    source_roots: bool = False
    trusted: Sequence[str] = ()
    flagged: Sequence[str] = ()
    warm_start: bool = True
    method: str = "bicgstab"
    level: str = "page"  # or "host": the host graph (see rankstore.store.hosts)
    engine: str = "scipy"  # which engine solves it; recorded with the version (spark: the power method)


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
class LoadedGraph:
    page_ids: np.ndarray
    graph: Graph
    seconds: float


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


def scipy_solver(method: str = "bicgstab") -> Solver:
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


def load_graph(store: Store, include_nofollow: bool = False) -> LoadedGraph:
    """The store's link graph as the solver's in-link CSR: the store's own arrays, read in one pass."""
    started = time.perf_counter()
    store.ensure_graph()
    links = store.in_links()
    if links.n == 0:
        raise RankingError("the store has no pages: run `rankstore build` first")
    indptr, indices, weights = links.indptr, links.indices, links.weights
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
    return LoadedGraph(np.arange(1, links.n + 1, dtype=np.int64), graph, time.perf_counter() - started)


def load_host_graph(store: Store, include_nofollow: bool = False) -> LoadedGraph:
    """The host graph as the solver's in-link CSR, weighted by the page links between hosts."""
    started = time.perf_counter()
    hosts = store.host_graph(include_nofollow)
    if hosts.n == 0:
        raise RankingError("the store has no pages: run `rankstore build` first")
    indptr = hosts.indptr.astype(np.int32) if hosts.indptr[-1] < 2**31 - 1 else hosts.indptr
    weights = hosts.weights
    if weights is not None and bool(np.all(weights == 1.0)):
        weights = None  # the product then keeps no value per link
    graph = Graph(hosts.n, indptr, hosts.indices, weights)
    return LoadedGraph(np.arange(1, hosts.n + 1, dtype=np.int64), graph, time.perf_counter() - started)


def _indicator(store: Store, page_ids: np.ndarray, urls: Sequence[str], what: str) -> np.ndarray:
    wanted = {}
    for url in urls:
        normal = canonical(url)
        if normal is None:
            raise RankingError(f"{what}: {url!r} is not an http(s) URL")
        wanted[normal] = url
    found = store.page_ids_for(list(wanted))
    missing = [wanted[url] for url in wanted if url not in found]
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise RankingError(f"{what}: not in the store: {shown}")
    vector = np.zeros(len(page_ids))
    vector[np.searchsorted(page_ids, list(found.values()))] = 1.0
    return vector


def _warm_start(store: Store, name: str, page_ids: np.ndarray) -> tuple[np.ndarray | None, Ranking | None]:
    try:
        previous = store.ranking(name)
    except RankingNotFound:
        return None, None
    old_ids, old_scores = store.scores_of(previous.id)
    if len(old_ids) == 0:
        return None, None
    # pages new since then start with an average share
    return _by_page(page_ids, old_ids, old_scores, old_scores.mean()), previous


def _by_page(page_ids: np.ndarray, ids: np.ndarray, values: np.ndarray, fill: float) -> np.ndarray:
    """``values`` (keyed by page id ``ids``) laid out by page index; ``fill`` where a page has none."""
    if len(ids) == len(page_ids) and np.array_equal(ids, page_ids):
        return np.asarray(values, dtype=np.float64).copy()  # the same pages: no search
    out = np.full(len(page_ids), fill)
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
) -> RankOutcome:
    """Compute one ranking and store it as a new version of ``options.name``.

    ``solver`` iterates (the scipy engine with ``options.method`` when None;
    :class:`rankstore.spark.engine.SparkSolver` for ``engine="spark"``);
    everything else, from the store to the version written in one
    transaction, is this function's whatever the engine.  ``status`` hears
    of the steps after the iterations (a big version takes a while to write).
    """
    started = time.perf_counter()
    if options.engine not in ENGINES:
        raise RankingError(f"engine must be one of {', '.join(ENGINES)}, not {options.engine!r}")
    if solver is None:
        if options.engine != "scipy":
            raise RankingError(f"engine {options.engine!r} needs its solver (rankstore.spark.engine.SparkSolver)")
        solver = scipy_solver(options.method)
    method = options.method if options.engine == "scipy" else "power"
    if options.level == "host":
        if options.sources or options.source_roots or options.trusted or options.flagged:
            raise RankingError("--level host ranks hosts with a uniform rank source: no --source, --trusted, --flagged")
        loaded = loaded or load_host_graph(store, options.include_nofollow)
    loaded = loaded or load_graph(store, options.include_nofollow)
    page_ids, graph = loaded.page_ids, loaded.graph
    personalization = None
    kind = "pagerank"
    if options.sources or options.source_roots:
        kind = "personalized"
        personalization = np.zeros(len(page_ids))
        if options.sources:
            personalization += _indicator(store, page_ids, options.sources, "--source")
        if options.source_roots:
            roots = store.root_page_ids()
            if not roots:
                raise RankingError("--source-roots: the store has no root pages (scheme://host/)")
            personalization[np.searchsorted(page_ids, roots)] = 1.0
    if options.trusted:
        kind = "trust"
        personalization = _indicator(store, page_ids, options.trusted, "--trusted")
    if options.flagged:
        kind = "badrank"
        personalization = _indicator(store, page_ids, options.flagged, "--flagged")
        graph = graph.reversed()
    dangling = options.dangling or ("uniform" if personalization is None else "source")
    start, previous = (None, None)
    if options.warm_start:
        start, previous = _warm_start(store, options.name, page_ids)
    problem = Problem(
        graph, options.damping, personalization, dangling, options.tol, options.max_iter, start, options.weighted
    )
    result = solver(problem, callback)
    extra = None
    if kind == "trust":
        extra = _spam_mass(store, page_ids, result.scores, loaded, options, solver)
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
        "sources": list(options.sources),
        "source_roots": options.source_roots,
        "trusted": len(options.trusted),
        "flagged": len(options.flagged),
        "links": graph.links,
        "warm_from": previous.version if previous is not None else None,
        "load_seconds": round(loaded.seconds, 3),
    }
    votes = linked = teleport = None
    if kind != "badrank":  # BadRank flows against the links: a link's share of it is not a vote for its target
        votes = link_votes(graph, result.scores, options.damping, options.weighted)
        linked = link_mass(graph, votes, options.weighted)
    if personalization is not None:
        chosen = np.flatnonzero(personalization)
        teleport = (page_ids[chosen], personalization[chosen] / personalization.sum())
    cold = store.cold_iterations(options.name) if previous is not None else None
    seconds = time.perf_counter() - started
    if status is not None:
        status(f"writing {options.name}: {len(page_ids):,} {'hosts' if options.level == 'host' else 'pages'}")
    ranking = store.write_ranking(
        options.name,
        params,
        result.iterations,
        result.residuals,
        page_ids,
        result.scores,
        loaded.graph.in_degree(),
        extra,
        seconds,
        votes=votes,
        linked=linked,
        teleport=teleport,
        level=options.level,
    )
    written = time.perf_counter() - started - seconds
    return RankOutcome(ranking, result, seconds, previous.version if previous else None, cold, written)


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


def _spam_mass(store: Store, page_ids, trust, loaded: LoadedGraph, options: RankOptions, solver: Solver) -> np.ndarray:
    """Spam Mass (P - T) / P per page, P from the ``pagerank`` ranking (computed by the same engine if missing)."""
    try:
        ids, scores = store.scores_of(store.ranking("pagerank").id)
        plain = _by_page(page_ids, ids, scores, 0.0)
    except RankingNotFound:
        problem = Problem(
            loaded.graph, options.damping, None, "uniform", options.tol, options.max_iter, None, options.weighted
        )
        plain = solver(problem, None).scores
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(plain > 0, (plain - trust) / plain, np.nan)
