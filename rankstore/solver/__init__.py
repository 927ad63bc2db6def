"""PageRank with numpy/scipy sparse maths: no SQLite, no I/O.

The model (Page & Brin 1998, sections 2.4-2.7; the seeds' notes): a random
surfer follows an out-link of the current page with probability ``damping``
(links weighted by their weight, normalised per source page) and otherwise
jumps to a page drawn from the rank source E (``personalization``; uniform by
default).  ``dangling`` says what happens at a page without out-links:

``uniform``  the surfer jumps to any page, uniformly (sinks link to every page;
             the Wikipedia seed, networkx and igraph's default).
``source``   the surfer jumps by E; this is the paper's section 2.6 iteration,
             where the rank lost each step (``d = |R_i| - |R_i+1|``) is given
             back through E.
``remove``   the paper's section 2.7: dangling pages are removed iteratively
             (a page whose links all lead to removed pages becomes dangling in
             turn), PageRank is solved on what is left, and the removed pages
             are restored in reverse order, one layer per removal round (seed
             002's back-substitution).
``leak``     the seeds' plain formula ``PR = (1-d)E + d sum PR(T)/C(T)``: the
             rank that reaches a sink is lost, so scores sum to less than 1.

Scores sum to 1 (the paper's "algorithm 2") except with ``leak``; multiply by
the number of pages for the notes' "algorithm 1" scale.

Two methods: ``power``, the paper's iteration (this function's default), and
``bicgstab``, a Krylov solve of the same linear system in far fewer steps (the
default of ``rankstore rank``).  BiCGSTAB runs in float64; the power method
iterates the *change* between steps in float32, and a float64 step, which
starts each float32 run and ends the iteration, adds the run's changes to the
float64 scores and steps from them, so its answer is the float64 iteration's
(float32 alone stalled near an L1 residual of 1e-7 at 10M pages, as measured
for the issue).  The sparse product runs on row blocks in threads, since
scipy releases the GIL inside it, with the pages in an order of its own that
keeps more of its reads in cache (:class:`_Product`).
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from ..choices import DANGLING, METHODS
from . import product
from .bicgstab import _bicgstab
from .dangling import _remove_and_restore
from .graph import Graph
from .power import _power
from .product import in_sums, inner_order
from .reference import pagerank_dense
from .system import ConvergenceError, Result, _normalised, _System

__all__ = [
    "DANGLING",
    "METHODS",
    "ConvergenceError",
    "choose_method",
    "solve_bytes",
    "Graph",
    "Result",
    "in_sums",
    "inner_order",
    "pagerank",
    "pagerank_dense",
]


MEMORY_SHARE = 2 / 3  # of the machine's memory, what a solve may hold before the method is chosen for memory
# vectors of n float64 a rank holds besides the graph, the node ids (one) with each method's own.  BiCGSTAB: six
# (x, r, p, v, t, inverse·p), its float32 shadow residual, the product's inverse and the out-degrees.  The power
# method: three float64 (x, the next, inverse·x), three float32 (its change, the next change, their run), the
# inverse in both widths and the out-degrees.  Past COPY_LINKS (the graph multiplied as given) the inverse and
# the out-degrees are one array of float32 out-degrees, with a byte a node marking the sinks, the ids are int32,
# and BiCGSTAB makes its shadow vector as it goes.
VECTORS = {"bicgstab": 9.5, "power": 8.0}
VECTORS_AS_GIVEN = {"bicgstab": 7.125, "power": 5.625}


def machine_memory() -> int:
    """Bytes of memory of this machine (0 if unknown)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def solve_bytes(graph: Graph, method: str) -> int:
    """About the bytes a rank of ``graph`` by ``method`` holds at most: the graph (twice, up to
    :data:`.product.COPY_LINKS` links, where the product keeps it in an order of its own) and the vectors."""
    held = graph.indptr.nbytes + graph.indices.nbytes + (graph.weights.nbytes if graph.weights is not None else 0)
    if graph.links <= product.COPY_LINKS:
        return int(2 * held + VECTORS[method] * 8 * graph.n)
    return int(held + VECTORS_AS_GIVEN[method] * 8 * graph.n)


def choose_method(graph: Graph, memory: int | None = None) -> str:
    """``auto``: BiCGSTAB (fewer products), unless it would hold more than :data:`MEMORY_SHARE` of ``memory``
    (the machine's) where the power method would not: then the power method, which needs fewer vectors."""
    budget = MEMORY_SHARE * (machine_memory() if memory is None else memory)
    if budget and solve_bytes(graph, "bicgstab") > budget and solve_bytes(graph, "power") <= budget:
        return "power"
    return "bicgstab"


def _solve(solve, dangling: str, system: _System, tol, max_iter, initial, callback) -> Result:
    if dangling == "remove":
        return _remove_and_restore(solve, system, tol, max_iter, initial, callback)
    return solve(system, tol, max_iter, initial, callback)


def pagerank(
    graph: Graph,
    damping: float = 0.85,
    personalization: np.ndarray | None = None,
    dangling: str = "uniform",
    tol: float = 1e-10,
    max_iter: int = 1000,
    start: np.ndarray | None = None,
    weights: bool = True,
    callback: Callable[[int, float], None] | None = None,
    threads: int | None = None,
    method: str = "power",
) -> Result:
    """PageRank of every page of ``graph``.

    :param damping: probability of following a link (the paper's c; 0.85 by custom).
    :param personalization: the rank source E, one non-negative value per page
        (normalised here); uniform when None.
    :param dangling: ``uniform``, ``source``, ``remove`` or ``leak`` (module docstring).
    :param tol: stop when the L1 change between iterations falls below this.
    :param max_iter: raise :class:`ConvergenceError` past this many iterations.
    :param start: initial scores (a warm start, e.g. the previous ranking); E when None.
    :param weights: use the graph's link weights (normalised per source page).
    :param callback: called with (iteration, L1 residual) after each iteration.
    :param method: ``auto`` (:func:`choose_method`), ``power`` (the paper's iteration; ``tol`` bounds the L1 change
        of an iteration) or ``bicgstab`` (a Krylov solve of the same linear
        system, 2-3x fewer products; ``tol`` bounds its L1 residual relative to
        (1-d)·E's, which keeps the scores within about ``tol`` of the exact ones
        in L1: at most 2·tol once they sum to 1; see :mod:`.bicgstab`).
        With damping 1 there is no linear system to solve: power only.
    :returns: :class:`Result` with the scores, iterations and each iteration's residual.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    if dangling not in DANGLING:
        raise ValueError(f"dangling must be one of {', '.join(DANGLING)}, not {dangling!r}")
    if not 0 <= damping <= 1:
        raise ValueError(f"damping must be in [0, 1], got {damping}")
    if graph.n == 0:
        return Result(np.zeros(0), 0, [], True)
    if method == "auto":
        method = choose_method(graph)
    teleport = _normalised(personalization, graph.n, "personalization")
    initial = teleport if start is None else _normalised(start, graph.n, "start")
    solve = _bicgstab if method == "bicgstab" and damping < 1 else _power
    dangling_to = {"uniform": np.full(1, 1.0 / graph.n), "source": teleport, "leak": None, "remove": None}[dangling]
    system = _System(graph, damping, teleport, dangling_to, weights, threads)
    result = _solve(solve, dangling, system, tol, max_iter, initial, callback)
    if not result.converged and solve is _bicgstab:
        # BiCGSTAB can break down where the power method cannot (on a long chain of pages its residual grows
        # to overflow): the power method, from the same start, answers instead, its steps after the failed ones
        tried = len(result.residuals)
        result = _solve(_power, dangling, system, tol, max_iter, initial, callback)
        result.fell_back_after = tried
    if not result.converged:
        raise ConvergenceError(
            f"PageRank did not converge to tol={tol:g} in {max_iter} iterations "
            f"(last L1 residual {result.residuals[-1] if result.residuals else float('nan'):.3g})",
            result,
        )
    return result
