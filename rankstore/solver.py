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

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp

__all__ = [
    "DANGLING",
    "METHODS",
    "ConvergenceError",
    "Graph",
    "Result",
    "pagerank",
    "pagerank_dense",
]

DANGLING = ("uniform", "source", "remove", "leak")
METHODS = ("power", "bicgstab")
_THREAD_MIN_LINKS = 2_000_000
_CHUNK = 16_000_000  # links a thread handles at once while setting up


class ConvergenceError(RuntimeError):
    """The iteration did not reach ``tol`` in ``max_iter`` steps; ``.result`` holds where it got."""

    def __init__(self, message: str, result: "Result"):
        super().__init__(message)
        self.result = result


def _indptr(dst_sorted: np.ndarray, n: int, links: int) -> np.ndarray:
    # int32 row pointers while they fit: scipy then keeps the int32 column
    # indices as they are instead of widening both to int64 (8 bytes a link).
    dtype = np.int32 if links < 2**31 - 1 else np.int64
    indptr = np.zeros(n + 1, dtype=dtype)
    np.cumsum(np.bincount(dst_sorted, minlength=n), out=indptr[1:])
    return indptr


@dataclass
class Graph:
    """A link graph as in-link CSR: row ``i`` lists the pages linking to page ``i``.

    ``weights`` (optional) holds each link's weight in the same order.
    """

    n: int
    indptr: np.ndarray
    indices: np.ndarray
    weights: np.ndarray | None = None

    @classmethod
    def from_edges(
        cls,
        src: Sequence[int] | np.ndarray,
        dst: Sequence[int] | np.ndarray,
        n: int | None = None,
        weights: Sequence[float] | np.ndarray | None = None,
    ) -> "Graph":
        """Build from parallel arrays of link sources and targets (page indices).

        Links are a set: a repeated (src, dst) pair counts once (its largest weight).
        """
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        if n is None:
            n = int(max(src.max(initial=-1), dst.max(initial=-1)) + 1)
        if len(src) and (src.min() < 0 or dst.min() < 0 or src.max() >= n or dst.max() >= n):
            raise ValueError("link endpoints must be page indices in [0, n)")
        key = dst * n + src
        if weights is None:
            key = np.sort(key)  # then drop repeats: np.unique took 0.78 s for rust-doc's 773k links, this 0.015 s
            key = key[np.concatenate([key[:1] == key[:1], key[1:] != key[:-1]])]
            w = None
        else:
            w_all = np.asarray(weights, dtype=np.float64)
            order = np.lexsort((-w_all, key))
            key_sorted = key[order]
            first = np.ones(len(key_sorted), dtype=bool)
            first[1:] = key_sorted[1:] != key_sorted[:-1]
            key = key_sorted[first]
            w = w_all[order][first]
        dst_sorted = key // n
        indices = (key - dst_sorted * n).astype(np.int32)
        return cls(n, _indptr(dst_sorted, n, len(indices)), indices, w)

    @classmethod
    def from_sorted(cls, n: int, dst_sorted: np.ndarray, src: np.ndarray, weights: np.ndarray | None = None) -> "Graph":
        """Build from links already sorted by target (no copies of the source array)."""
        return cls(n, _indptr(dst_sorted, n, len(src)), np.asarray(src, dtype=np.int32), weights)

    @property
    def links(self) -> int:
        return int(self.indptr[-1])

    def targets(self) -> np.ndarray:
        """The target of each link, in CSR order."""
        return np.repeat(np.arange(self.n, dtype=np.int32), np.diff(self.indptr))

    def out_weight(self, weighted: bool = True) -> np.ndarray:
        """Total out-link weight per page (out-degree when unweighted)."""
        if weighted and self.weights is not None:
            return np.bincount(self.indices, weights=self.weights, minlength=self.n)
        return np.bincount(self.indices, minlength=self.n).astype(np.float64)

    def in_degree(self) -> np.ndarray:
        return np.diff(self.indptr)

    def subgraph(self, keep: np.ndarray) -> tuple["Graph", np.ndarray]:
        """The graph induced by the pages where ``keep`` is true, and their old indices."""
        old = np.flatnonzero(keep)
        new_index = np.full(self.n, -1, dtype=np.int64)
        new_index[old] = np.arange(len(old))
        dst = self.targets()
        mask = keep[dst] & keep[self.indices]
        weights = self.weights[mask] if self.weights is not None else None
        return (
            Graph.from_sorted(len(old), new_index[dst[mask]], new_index[self.indices[mask]], weights),
            old,
        )

    def reversed(self) -> "Graph":
        """Every link turned around (for BadRank)."""
        return Graph.from_edges(self.targets(), self.indices, self.n, self.weights)


@dataclass
class Result:
    scores: np.ndarray
    iterations: int
    residuals: list[float] = field(default_factory=list)
    converged: bool = True
    removed_rounds: int = 0


def _normalised(vector: np.ndarray | None, n: int, name: str) -> np.ndarray:
    if vector is None:
        return np.full(n, 1.0 / n)
    vector = np.asarray(vector, dtype=np.float64)
    if vector.shape != (n,):
        raise ValueError(f"{name} must have one value per page ({n}), got shape {vector.shape}")
    if not np.all(np.isfinite(vector)) or vector.min() < 0 or vector.sum() <= 0:
        raise ValueError(f"{name} must be non-negative with a positive sum")
    return vector / vector.sum()


try:  # scipy's own kernels: y += A x in place (A @ x allocates y), and the row gather behind A[rows]
    from scipy.sparse._sparsetools import csr_matvec as _csr_matvec
    from scipy.sparse._sparsetools import csr_row_index as _csr_row_index
except ImportError:  # pragma: no cover - a scipy without them: A @ x, and A[rows] copied out
    _csr_matvec = None

    def _csr_row_index(count, rows, indptr, indices, values, out_indices, out_values):
        picked = sp.csr_matrix((values, indices, indptr), shape=(len(indptr) - 1, len(indptr) - 1))[rows]
        out_indices[:] = picked.indices
        out_values[:] = picked.data


_PIECE = 1 << 16  # elements a vector operation handles at once: its temporaries stay in cache


# Vector operations in numpy, not BLAS: OpenBLAS wakes threads of its own for
# a long vector, and they spin on the cores the product's threads need (on the
# 10M-page benchmark graph the power method swept ~15% fewer links a second).

def _l1(vector: np.ndarray) -> float:
    """The L1 norm, in float64, a cache-sized piece at a time (no vector-sized temporary)."""
    total = 0.0
    scratch = np.empty(min(len(vector), _PIECE), dtype=vector.dtype)
    for lo in range(0, len(vector), _PIECE):
        piece = vector[lo : lo + _PIECE]
        part = scratch[: len(piece)]
        np.abs(piece, out=part)
        total += float(np.add.reduce(part, dtype=np.float64))
    return total


_CALL_LINKS = 1 << 16  # links one kernel call multiplies: its stand-in values (all ones) stay in cache
_GROUPS = (32, 8, 1)  # out-degree thresholds of the inner page order (see _page_groups)


def _row_cuts(indptr: np.ndarray, start: int, stop: int, links: int) -> list[int]:
    """Row boundaries from ``start`` to ``stop`` with about ``links`` links between them (more for a long row)."""
    at = np.arange(int(indptr[start]), int(indptr[stop]), links, dtype=indptr.dtype)  # same dtype: no copy of indptr
    return sorted(set((np.searchsorted(indptr, at, "right") - 1).tolist()) | {start, stop})


def _page_groups(out_degree: np.ndarray) -> np.ndarray:
    """Each page's group in the product's inner page order: the pages it reads most first, sinks last.

    The product reads z[j] once per out-link of page j, and the gathers from
    all over z are what it waits on (on the 10M-page benchmark graph, with
    every gather made local instead, it ran 2.6x faster).  So pages go in
    groups by out-degree: 32 or more (there, 2% of the pages, with a third of
    the links: their values stay in the cores' caches), 8-31, 1-7, and the
    sinks, which are never read, last.  Within a group pages keep their
    relative order, which keeps a site's pages together.  Measured on that
    graph (float32 product, side by side): 11-15% faster than in the given
    order; plain out-degree order, 3%; only the sinks last, 0-3%.
    """
    group = np.zeros(len(out_degree), dtype=np.int8)
    for threshold in _GROUPS:
        group += out_degree < threshold
    return group


class _Product:
    """out = fill + P z, written in place, on row blocks in threads, with pages in an inner order.

    M = P·diag(inverse), with P the links (row i lists the pages linking to
    page i; their weights when weighted) and ``inverse[dtype]`` = scale /
    out-weight per page (0 at sinks).  Callers pass z = inverse·x, so that
    out = fill + M x.  Without weights P's values are all ones and no array of
    them is kept: the kernel runs on ``_CALL_LINKS`` links at a time against
    one small array of ones, so the matrix costs 4 bytes a link (its column
    indices) in float32 and float64 alike.

    Pages are renumbered once (:func:`_page_groups`): callers move vectors in
    with :meth:`inner` and the answer out with :meth:`outer`.  The sinks are
    the inner pages [live, n).

    scipy releases the GIL inside its CSR kernel, so the row blocks run in
    parallel; the fill and any per-block follow-up (``after``) run in the
    block's thread too, on memory the product has just touched.  A float32
    ``z`` is multiplied in float32 (``single=True`` keeps float32 copies of
    ``inverse`` and of any weights).
    """

    def __init__(self, graph: Graph, weighted: bool, threads: int | None, scale: float = 1.0,
                 single: bool = False):
        n, links, indptr, indices = graph.n, graph.links, graph.indptr, graph.indices
        weights = graph.weights if weighted else None
        self.n = n
        threads = threads or min(os.cpu_count() or 1, 8)
        threads = threads if threads > 1 and links >= _THREAD_MIN_LINKS else 1
        self.pool = ThreadPoolExecutor(threads) if threads > 1 else None
        kinds = [np.dtype(np.float64)] + ([np.dtype(np.float32)] if single else [])

        # setup runs on row ranges of about _CHUNK links (bounded temporaries), spread over the threads
        cuts = _row_cuts(indptr, 0, n, _CHUNK)
        shares = [list(zip(cuts[:-1], cuts[1:]))[k::threads] for k in range(threads)]

        def count(share: list, by: np.ndarray | None) -> np.ndarray:
            total = np.zeros(n, dtype=np.int64 if by is None else np.float64)
            for start, stop in share:  # bincount widens to int64: a chunk at a time
                lo, hi = int(indptr[start]), int(indptr[stop])
                total += np.bincount(indices[lo:hi], None if by is None else by[lo:hi], minlength=n)
            return total

        degree = sum(self._map(lambda share: count(share, None), shares), np.zeros(n, dtype=np.int64))
        self.order = np.argsort(_page_groups(degree), kind="stable").astype(np.int32)
        self.live = int(np.count_nonzero(degree))
        out = degree if weights is None else sum(self._map(lambda share: count(share, weights), shares))
        with np.errstate(divide="ignore"):
            inverse = np.where(out > 0, scale / out, 0.0)[self.order]
        del degree, out
        self.inverse = {kind: inverse.astype(kind, copy=False) for kind in kinds}

        # the links in the inner order: row by row of it, each row's links as they were
        new_of = np.empty(n, dtype=np.int32)
        new_of[self.order] = np.arange(n, dtype=np.int32)
        in_degree = np.diff(indptr)
        new_indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(in_degree[self.order], out=new_indptr[1:])
        self.indices = np.empty(links, dtype=np.int32)
        self.values = None if weights is None else {kind: np.empty(links, dtype=kind) for kind in kinds}
        rows = self.order.astype(indptr.dtype, copy=False)  # scipy's kernels take one index type
        weights = None if weights is None else np.ascontiguousarray(weights, dtype=np.float64)

        def renumber(share: list) -> None:
            """Copy the links of rows [a, b) of the inner order (scipy's row gather), then rename their sources."""
            for a, b in share:
                lo, hi = int(new_indptr[a]), int(new_indptr[b])
                part = self.indices[lo:hi]
                if weights is None:  # the kernel copies a value beside each index: the index itself, to the same place
                    _csr_row_index(b - a, rows[a:b], indptr, indices, indices, part, part)
                else:
                    _csr_row_index(b - a, rows[a:b], indptr, indices, weights, part, self.values[kinds[0]][lo:hi])
                part[:] = np.take(new_of, part)

        cuts = _row_cuts(new_indptr, 0, n, _CHUNK // 16)  # smaller: np.take's result is a temporary
        self._map(renumber, [list(zip(cuts[:-1], cuts[1:]))[k::threads] for k in range(threads)])
        if self.values is not None and single:
            self.values[kinds[1]][:] = self.values[kinds[0]]
        del new_of
        self.ones = {kind: np.ones(min(links, _CALL_LINKS), dtype=kind) for kind in kinds}

        # row blocks with about the same number of links, one a thread, and each block's kernel calls
        # (their row pointers are all the product keeps of new_indptr)
        block_cuts = [0, n]
        if threads > 1:
            block_cuts = np.searchsorted(new_indptr, np.linspace(0, links, threads + 1)).tolist()
            block_cuts[0], block_cuts[-1] = 0, n
        self.blocks = [(start, stop, self._calls(new_indptr, start, stop))
                       for start, stop in zip(block_cuts[:-1], block_cuts[1:]) if stop > start]

    def _calls(self, indptr: np.ndarray, start: int, stop: int) -> list[tuple]:
        """The kernel calls for rows [start, stop): ``_CALL_LINKS`` links each, a long row over several.

        Each is (first row, row after the last, row pointers local to the
        call, first link, link after the last); the kernel adds each row's sum
        to ``out``, so a row cut between two calls gets both parts.
        """
        calls = []
        los = np.arange(int(indptr[start]), int(indptr[stop]), _CALL_LINKS, dtype=np.int64)
        his = np.minimum(los + _CALL_LINKS, int(indptr[stop]))
        firsts = np.searchsorted(indptr, los, "right") - 1  # the rows holding each call's first link
        lasts = np.searchsorted(indptr, his - 1, "right") - 1  # ... and its last
        for first, last, lo, hi in zip(firsts.tolist(), lasts.tolist(), los.tolist(), his.tolist()):
            local = np.clip(indptr[first : last + 2] - lo, 0, hi - lo).astype(self.indices.dtype)
            calls.append((first, last + 1, local, lo, hi))
        return calls

    def inner(self, vector: np.ndarray) -> np.ndarray:
        """A vector over the graph's pages, in the inner order."""
        return vector[self.order]

    def outer(self, vector: np.ndarray) -> np.ndarray:
        """A vector in the inner order, back over the graph's pages."""
        out = np.empty_like(vector)
        out[self.order] = vector
        return out

    def _map(self, function: Callable, items: list) -> list:
        if self.pool is None:
            return [function(item) for item in items]
        return [future.result() for future in [self.pool.submit(function, item) for item in items]]

    def __call__(self, z: np.ndarray, out: np.ndarray, fill: float | np.ndarray = 0.0,
                 after: Callable[[int, int], object] | None = None) -> list:
        """out = fill + P z; returns ``after(start, stop)`` of each row block."""
        n, indices, kind = self.n, self.indices, z.dtype
        ones = self.ones[kind]
        values = None if self.values is None else self.values[kind]

        def block(start: int, stop: int, calls: list) -> object:
            out[start:stop] = fill if np.ndim(fill) == 0 else fill[start:stop]
            for first, end, local, lo, hi in calls:
                data = ones[: hi - lo] if values is None else values[lo:hi]
                if _csr_matvec is None:
                    out[first:end] += sp.csr_matrix((data, indices[lo:hi], local), shape=(end - first, n)) @ z
                else:
                    _csr_matvec(end - first, n, local, indices[lo:hi], data, z, out[first:end])
            return after(start, stop) if after is not None else None

        return self._map(lambda b: block(*b), self.blocks)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()


@dataclass
class _System:
    """One PageRank problem: the graph, how the surfer moves, and how to compute it."""

    graph: Graph
    damping: float
    teleport: np.ndarray
    dangling_to: np.ndarray | None  # where rank at sinks goes; None: lost
    weighted: bool
    threads: int | None


_REFRESH = 1e-3  # a float32 run ends once its change has shrunk this much below the last float64 step's
_NOISE = 1.001  # ... or once it stops shrinking by the damping factor: rounding noise


def _power(system: "_System", tol: float, max_iter: int, start: np.ndarray,
           callback: Callable[[int, float], None] | None) -> Result:
    """The paper's iteration x <- dMx + d(rank at sinks)D + (1-d)E, in mixed precision.

    Successive changes obey delta' = A delta for the linear part A of the
    iteration, so most steps iterate the change in float32 (the product then
    gathers from a vector half the size, which stays in cache more) and sum
    the changes of a float32 run in float32; a float64 step adds that sum to
    the scores, held in float64, and computes x' = A x + (1-d)E from the
    scores themselves.  Such a step starts each float32 run and ends the
    iteration: float32 rounding never accumulates across runs, and the
    stopping rule is the float64 iteration's, since the last step is a float64
    one whose L1 change is below ``tol``.  As ||A v||_1 <= d ||v||_1 for every
    v, a float32 change that stops shrinking by d is rounding noise: a float64
    step follows at once.  Without damping (d = 1) nothing pulls rounding
    errors back and every step is a float64 one.
    """
    damping, dangling_to = system.damping, system.dangling_to
    mixed = damping < 1
    product = _Product(system.graph, system.weighted, system.threads, scale=damping, single=mixed)
    try:
        n, live = product.n, product.live
        inverse, inverse32 = product.inverse[np.dtype(np.float64)], product.inverse.get(np.dtype(np.float32))
        teleport = product.inner(system.teleport)
        x = product.inner(start)
        y = np.empty_like(x)
        scaled = np.empty_like(x)  # z = inverse·x, what a float64 step multiplies
        change = np.empty(n, dtype=np.float32)  # the last change, times inverse: what a float32 step multiplies
        following = np.empty_like(change)
        run = np.zeros(n, dtype=np.float32)  # the changes of the float32 steps since the last float64 step
        uniform_teleport = bool(np.all(teleport == teleport[0]))
        base = (1.0 - damping) * (teleport[0] if uniform_teleport else teleport)
        del teleport
        has_sinks = dangling_to is not None and live < n
        uniform_dangling = dangling_to is not None and bool(np.all(dangling_to == dangling_to[0]))
        if dangling_to is not None and not uniform_dangling:
            dangling_to = product.inner(dangling_to)

        def spread(mass: float) -> float | np.ndarray:
            """The rank ``mass`` that sinks pass on, spread over the pages it goes to."""
            if not has_sinks:
                return 0.0
            return damping * mass * (dangling_to[0] if uniform_dangling else dangling_to)

        def sinks_mass(vector: np.ndarray) -> float:
            return float(vector[live:].sum(dtype=np.float64)) if has_sinks else 0.0

        def settle() -> None:
            """Add the float32 steps' changes to the scores."""
            if mixed:
                np.add(x, run, out=x)
                run[:] = 0

        def double_step() -> float:
            nonlocal mass
            settle()
            np.multiply(x, inverse, out=scaled)
            product(scaled, y, base + spread(sinks_mass(x)))
            np.subtract(y, x, out=y)  # the change
            np.add(x, y, out=x)
            mass = sinks_mass(y)
            if mixed:
                change[:] = y
                np.multiply(change, inverse32, out=change)
            return _l1(y)

        def single_step() -> float:
            nonlocal mass
            fill = spread(mass)
            fill = np.float32(fill) if np.ndim(fill) == 0 else fill.astype(np.float32)
            new = following

            def add(start: int, stop: int) -> tuple[float, float]:
                """Add the block's change to the run's; its L1 norm and its sinks' share; scale it for the next step.

                One pass, a cache-sized piece at a time: each piece of the
                change is read from memory once for all four.
                """
                l1 = at_sinks = 0.0
                scratch = np.empty(min(stop - start, _PIECE), dtype=np.float32)
                for lo in range(start, stop, _PIECE):
                    hi = min(lo + _PIECE, stop)
                    piece, part = new[lo:hi], scratch[: hi - lo]
                    np.add(run[lo:hi], piece, out=run[lo:hi])
                    np.abs(piece, out=part)
                    l1 += float(np.add.reduce(part))
                    if has_sinks and hi > live:
                        at_sinks += float(piece[max(live - lo, 0):].sum(dtype=np.float64))
                    np.multiply(piece, inverse32[lo:hi], out=piece)
                return l1, at_sinks

            parts = product(change, new, fill, after=add)
            mass = sum(part[1] for part in parts)
            return float(sum(part[0] for part in parts))

        mass = 0.0  # the rank at the sinks in the last change
        residuals: list[float] = []
        residual = previous = float("inf")
        level, exact = float("inf"), False
        for iteration in range(1, max_iter + 1):
            if not mixed or not residuals or (not exact and (residual < tol or residual < level * _REFRESH
                                                or residual > damping * previous * _NOISE)):
                residual = level = double_step()
                exact = True
            else:
                previous = residual
                residual = single_step()
                change, following = following, change
                exact = False
            residuals.append(residual)
            if callback is not None:
                callback(iteration, residual)
            if exact and residual < tol:
                return Result(product.outer(x), iteration, residuals, True)
        settle()
        return Result(product.outer(x), max_iter, residuals, False)
    finally:
        product.close()


class _Pieces:
    """Fused vector passes, a cache-sized piece at a time, the pieces shared by the product's threads.

    ``run(kernel, width)`` calls ``kernel(lo, hi, scratch)`` for every piece
    [lo, hi) of [0, n) (numpy releases the GIL inside its loops, so the two
    halves overlap; ``scratch`` is two piece-sized rows) and returns the sums
    of the ``width`` numbers each call returns, added in piece order: the
    answer does not depend on the threads.
    """

    def __init__(self, n: int, product: "_Product"):
        self.n, self.product = n, product
        self.starts = list(range(0, n, _PIECE)) or [0]
        halves = 2 if product.pool is not None and len(self.starts) > 1 else 1
        cut = (len(self.starts) + 1) // 2
        self.halves = [(0, cut), (cut, len(self.starts))] if halves == 2 else [(0, len(self.starts))]

    def run(self, kernel: Callable[[int, int, np.ndarray], tuple], width: int = 0) -> np.ndarray:
        partials = np.zeros((len(self.starts), width))
        n, starts = self.n, self.starts

        def half(span: tuple[int, int]) -> None:
            scratch = np.empty((2, _PIECE))
            for k in range(*span):
                lo = starts[k]
                hi = min(lo + _PIECE, n)
                found = kernel(lo, hi, scratch[:, : hi - lo])
                if width:
                    partials[k] = found

        self.product._map(half, self.halves)
        return partials.sum(axis=0)


def _bicgstab(system: "_System", tol: float, max_iter: int, start: np.ndarray,
              callback: Callable[[int, float], None] | None) -> Result:
    """Solve (I - dM - d s dangling^T) x = (1-d) E with BiCGSTAB, stopping at ||r||/||b|| < tol.

    Two products a step, but far fewer steps than the power method (18 instead
    of 103 on rust-doc, for a 100x smaller error).  Written out here, in place
    on seven n-vectors (x, r, r0, p, v, t, and inverse·p or inverse·s for the
    product), rather than scipy's version, which allocates new vectors at
    every step; the vector updates around the two products are fused into
    five passes over cache-sized pieces (:class:`_Pieces`), which also gather
    the rank at the sinks that the next product needs.
    """
    damping, dangling_to = system.damping, system.dangling_to
    product = _Product(system.graph, system.weighted, system.threads, scale=damping)
    n, live, inverse = product.n, product.live, product.inverse[np.dtype(np.float64)]
    pieces = _Pieces(n, product)
    has_sinks = dangling_to is not None and live < n
    uniform_dangling = dangling_to is not None and len(dangling_to) == 1
    if dangling_to is not None and not uniform_dangling:
        dangling_to = product.inner(dangling_to)
    einsum = np.einsum

    def sinks_sum(vector: np.ndarray, lo: int, hi: int) -> float:
        """The part of ``vector`` at sinks among pages [lo, hi) (the sinks are the pages from ``live`` on)."""
        return float(vector[max(lo, live) : hi].sum()) if has_sinks and hi > live else 0.0

    def moved(scaled: np.ndarray, out: np.ndarray, at_sinks: float) -> None:
        """out = (dM + d s dangling^T) vector, given inverse·vector and the part of ``vector`` at sinks.

        A x is then x - out; callers take that difference in their next pass.
        """
        fill = 0.0
        if has_sinks:
            mass = damping * at_sinks
            fill = mass * dangling_to[0] if uniform_dangling else mass * dangling_to
        product(scaled, out, fill)

    try:
        x = product.inner(start)
        r = np.empty_like(x)
        scaled = x * inverse  # inverse·(the vector the next product multiplies)
        moved(scaled, r, sinks_sum(x, 0, n))
        b = product.inner(system.teleport)
        b *= 1.0 - damping
        b_norm = float(np.linalg.norm(b))
        np.subtract(r, x, out=r)
        np.add(r, b, out=r)  # r = b - A x
        del b
        r0 = r.copy()
        p = np.zeros_like(x)
        v = np.zeros_like(x)
        t = np.empty_like(x)
        rho = alpha = omega = 1.0
        residuals: list[float] = []
        rho_new, r_norm = (float(value) for value in pieces.run(
            lambda lo, hi, _: (einsum("i,i->", r0[lo:hi], r[lo:hi]), einsum("i,i->", r[lo:hi], r[lo:hi])), 2))
        converged = b_norm == 0 or math.sqrt(r_norm) <= tol * b_norm
        steps = 0
        while not converged and steps < max_iter:
            steps += 1
            if rho_new == 0.0:
                break  # breakdown: r is orthogonal to r0
            beta = (rho_new / rho) * (alpha / omega)

            def new_direction(lo: int, hi: int, scratch: np.ndarray) -> tuple:
                """p = beta (p - omega v) + r, and inverse·p; p's part at sinks."""
                piece = p[lo:hi]
                np.multiply(v[lo:hi], omega, out=scratch[0])
                np.subtract(piece, scratch[0], out=piece)
                np.multiply(piece, beta, out=piece)
                np.add(piece, r[lo:hi], out=piece)
                np.multiply(piece, inverse[lo:hi], out=scaled[lo:hi])
                return (sinks_sum(p, lo, hi),)

            (p_sinks,) = pieces.run(new_direction, 1)
            moved(scaled, v, float(p_sinks))

            def direction_applied(lo: int, hi: int, _: np.ndarray) -> tuple:
                """v = A p; (r0, v)."""
                np.subtract(p[lo:hi], v[lo:hi], out=v[lo:hi])
                return (einsum("i,i->", r0[lo:hi], v[lo:hi]),)

            (r0_v,) = pieces.run(direction_applied, 1)
            alpha = rho_new / float(r0_v)

            def half_step(lo: int, hi: int, scratch: np.ndarray) -> tuple:
                """s = r - alpha v (kept in r), and inverse·s; ||s||^2 and s's part at sinks."""
                piece = r[lo:hi]
                np.multiply(v[lo:hi], alpha, out=scratch[0])
                np.subtract(piece, scratch[0], out=piece)
                np.multiply(piece, inverse[lo:hi], out=scaled[lo:hi])
                return einsum("i,i->", piece, piece), sinks_sum(r, lo, hi)

            s_norm, s_sinks = pieces.run(half_step, 2)
            if math.sqrt(s_norm) <= tol * b_norm:

                def finish(lo: int, hi: int, scratch: np.ndarray) -> tuple:
                    """x += alpha p; ||alpha p||_1."""
                    step = scratch[0]
                    np.multiply(p[lo:hi], alpha, out=step)
                    np.add(x[lo:hi], step, out=x[lo:hi])
                    np.abs(step, out=step)
                    return (step.sum(),)

                (l1,) = pieces.run(finish, 1)
                converged = True
            else:
                moved(scaled, t, float(s_sinks))

                def s_applied(lo: int, hi: int, _: np.ndarray) -> tuple:
                    """t = A s; (t, s), (t, t)."""
                    np.subtract(r[lo:hi], t[lo:hi], out=t[lo:hi])
                    return einsum("i,i->", t[lo:hi], r[lo:hi]), einsum("i,i->", t[lo:hi], t[lo:hi])

                t_s, t_t = pieces.run(s_applied, 2)
                omega = float(t_s) / float(t_t)

                def full_step(lo: int, hi: int, scratch: np.ndarray) -> tuple:
                    """x += alpha p + omega s; r = s - omega t; ||r||^2, (r0, r), ||alpha p + omega s||_1."""
                    piece, step, other = r[lo:hi], scratch[0], scratch[1]
                    np.multiply(p[lo:hi], alpha, out=step)
                    np.multiply(piece, omega, out=other)
                    np.add(step, other, out=step)
                    np.add(x[lo:hi], step, out=x[lo:hi])
                    np.multiply(t[lo:hi], omega, out=other)
                    np.subtract(piece, other, out=piece)
                    np.abs(step, out=step)
                    return einsum("i,i->", piece, piece), einsum("i,i->", r0[lo:hi], piece), step.sum()

                r_norm, rho_next, l1 = pieces.run(full_step, 3)
                converged = math.sqrt(r_norm) <= tol * b_norm
            rho, rho_new = rho_new, float(rho_next) if not converged else rho_new
            residuals.append(float(l1))
            if callback is not None:
                callback(steps, residuals[-1])
        x = product.outer(x)
    finally:
        product.close()
    if dangling_to is not None and x.sum() > 0:
        x /= x.sum()
    return Result(x, steps, residuals or [0.0], converged)


def _dangling_layers(graph: Graph) -> list[np.ndarray]:
    """Pages removed round by round: each round takes every page left without out-links."""
    remaining_out = np.bincount(graph.indices, minlength=graph.n)
    removed = np.zeros(graph.n, dtype=bool)
    layers = []
    frontier = np.flatnonzero(remaining_out == 0)
    while len(frontier):
        removed[frontier] = True
        layers.append(frontier)
        starts = graph.indptr[frontier]
        counts = graph.indptr[frontier + 1] - starts
        total = int(counts.sum())
        if total == 0:
            break
        # positions of the removed pages' in-links in the CSR arrays, without a Python loop
        offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
        sources = graph.indices[np.repeat(starts, counts) + offsets]
        np.subtract.at(remaining_out, sources, 1)
        candidates = np.unique(sources)
        frontier = candidates[(remaining_out[candidates] == 0) & ~removed[candidates]]
    return layers


def _transition(graph: Graph, weighted: bool, scale: float = 1.0) -> sp.csr_matrix:
    out = graph.out_weight(weighted)
    with np.errstate(divide="ignore"):
        inverse = np.where(out > 0, scale / out, 0.0)
    data = inverse[graph.indices]
    if weighted and graph.weights is not None:
        data = data * graph.weights
    return sp.csr_matrix((data, graph.indices, graph.indptr), shape=(graph.n, graph.n), copy=False)


def _remove_and_restore(solve, system: _System, tol, max_iter, start, callback) -> Result:
    graph, damping, teleport = system.graph, system.damping, system.teleport
    layers = _dangling_layers(graph)
    if not layers:
        return solve(_System(graph, damping, teleport, teleport, system.weighted, system.threads),
                     tol, max_iter, start, callback)
    removed = np.zeros(graph.n, dtype=bool)
    for layer in layers:
        removed[layer] = True
    if removed.all():
        raise ValueError("dangling='remove': every page is removed (the graph has no cycle)")
    core, old = graph.subgraph(~removed)
    scale = teleport[old].sum()
    core_teleport = teleport[old] / scale if scale > 0 else np.full(len(old), 1.0 / len(old))
    core_start = start[old] / start[old].sum() if start[old].sum() > 0 else core_teleport
    result = solve(_System(core, damping, core_teleport, None, system.weighted, system.threads),
                   tol, max_iter, core_start, callback)
    scores = np.zeros(graph.n)
    scores[old] = result.scores
    # Restore in reverse removal order: a page removed in round k only gets
    # rank from the core and from pages removed in later rounds, with the
    # original out-degrees (seed 002's back-substitution).
    transition = _transition(graph, system.weighted)
    per_unit = 1.0 / scale if scale > 0 else 0.0
    for layer in reversed(layers):
        scores[layer] = (1.0 - damping) * per_unit * teleport[layer] + damping * (transition[layer] @ scores)
    result.scores = scores / scores.sum()
    result.iterations += len(layers)
    result.removed_rounds = len(layers)
    return result


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
    :param method: ``power`` (the paper's iteration; ``tol`` bounds the L1 change
        of an iteration) or ``bicgstab`` (a Krylov solve of the same linear
        system, 2-3x fewer products; ``tol`` bounds its relative residual).
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
    teleport = _normalised(personalization, graph.n, "personalization")
    initial = teleport if start is None else _normalised(start, graph.n, "start")
    solve = _bicgstab if method == "bicgstab" and damping < 1 else _power
    dangling_to = {"uniform": np.full(1, 1.0 / graph.n), "source": teleport, "leak": None, "remove": None}[dangling]
    system = _System(graph, damping, teleport, dangling_to, weights, threads)
    if dangling == "remove":
        result = _remove_and_restore(solve, system, tol, max_iter, initial, callback)
    else:
        result = solve(system, tol, max_iter, initial, callback)
    if not result.converged:
        raise ConvergenceError(
            f"PageRank did not converge to tol={tol:g} in {max_iter} iterations "
            f"(last L1 residual {result.residuals[-1]:.3g})",
            result,
        )
    return result


def pagerank_dense(
    adjacency: np.ndarray,
    damping: float = 0.85,
    personalization: np.ndarray | None = None,
    dangling: str = "uniform",
) -> np.ndarray:
    """The exact reference, ``x = (I - dM)^-1 (1-d) E``, dense: for tests on small graphs.

    ``adjacency[i, j]`` is the weight of the link i -> j (0 for none).
    """
    adjacency = np.asarray(adjacency, dtype=np.float64)
    n = adjacency.shape[0]
    teleport = _normalised(personalization, n, "personalization")
    out = adjacency.sum(axis=1)
    transition = np.zeros((n, n))
    for page in range(n):
        if out[page] > 0:
            transition[:, page] = adjacency[page] / out[page]
        elif dangling == "uniform":
            transition[:, page] = 1.0 / n
        elif dangling == "source":
            transition[:, page] = teleport
        elif dangling != "leak":
            raise ValueError(f"pagerank_dense has no {dangling!r} strategy")
    return np.linalg.solve(np.eye(n) - damping * transition, (1.0 - damping) * teleport)
