"""The sparse product M x on row blocks in threads, and the vector passes both methods share.

No BLAS and no I/O: numpy, and the rows' kernel (:data:`row_sums`: the C twin
``_fastproduct``, else scipy's CSR kernel), which releases the GIL.  With the C
twin built, scipy is not imported: its import is a good part of a small rank's
time, and ``_fastproduct.gather_rows`` does the setup's row gather.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

import numpy as np

from .graph import Graph

_THREAD_MIN_LINKS = 2_000_000
_CHUNK = 16_000_000  # links a thread handles at once while setting up
# links past which the product multiplies the graph as given rather than a copy of it in an order of its own
# (see _Product._as_given)
COPY_LINKS = 1 << 30


try:
    from . import _fastproduct  # type: ignore[attr-defined]
except ImportError:  # no compiler at install time: the Python twin, on scipy's kernels
    _fastproduct = None


@cache
def _scipy_kernels() -> tuple[Callable | None, Callable]:
    """scipy's own kernels: y += A x in place (A @ x allocates y; None where scipy lacks it), and the row
    gather behind A[rows].  Imported when first asked: the C twin needs neither."""
    import scipy.sparse as sp

    try:
        from scipy.sparse._sparsetools import csr_matvec, csr_row_index

        return csr_matvec, csr_row_index
    except ImportError:  # pragma: no cover - a scipy without them: A @ x, and A[rows] copied out

        def row_index(count, rows, indptr, indices, values, out_indices, out_values):
            picked = sp.csr_matrix((values, indices, indptr), shape=(len(indptr) - 1, len(indptr) - 1))[rows]
            out_indices[:] = picked.indices
            out_values[:] = picked.data

        return None, row_index


def _gather_rows(rows, indptr, indices, values, out_indices, out_values) -> None:
    """The links of ``rows`` one after another into ``out_indices`` (their ``values``, if any, into
    ``out_values``), without the GIL: the C twin, else scipy's gather."""
    if _fastproduct is not None:
        _fastproduct.gather_rows(rows, indptr, indices, values, out_indices, out_values)
    elif values is None:  # scipy's kernel copies a value beside each index: the index itself, to the same place
        _scipy_kernels()[1](len(rows), rows, indptr, indices, indices, out_indices, out_indices)
    else:
        _scipy_kernels()[1](len(rows), rows, indptr, indices, values, out_indices, out_values)


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


def _grouped_order(group: np.ndarray) -> np.ndarray:
    """``np.argsort(group, kind="stable")`` as int32, for a few groups: each group's pages in turn (a page of
    a group past the sinks' is left out)."""
    return np.concatenate([np.flatnonzero(group == value).astype(np.int32) for value in range(len(_GROUPS) + 1)])


def inner_order(out_degree: np.ndarray, members: np.ndarray | None = None) -> np.ndarray:
    """The pages (those where ``members`` is true, when given) in the product's inner order, as int32.

    For a loader that can lay a graph's rows out as it reads them: a graph
    read in this order from its out-degrees is multiplied as it is, where
    another would be copied into it (:class:`_Product`), or, past
    :data:`COPY_LINKS`, multiplied in an order that keeps fewer of its
    gathers in cache."""
    group = _page_groups(out_degree)
    if members is not None:
        group[~members] = len(_GROUPS) + 1
    return _grouped_order(group)


_SUM_LINKS = 1 << 20  # links in one row range of in_sums (its calls take _CALL_LINKS at a time)


def _kernel_calls(indptr: np.ndarray, start: int, stop: int, dtype: np.dtype) -> list[tuple]:
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
        local = np.clip(indptr[first : last + 2] - lo, 0, hi - lo).astype(dtype)
        calls.append((first, last + 1, local, lo, hi))
    return calls


def python_row_sums(
    indptr: np.ndarray,
    indices: np.ndarray,
    values: np.ndarray | None,
    z: np.ndarray,
    out: np.ndarray,
    start: int,
    stop: int,
    fill: Any = 0.0,
) -> None:
    """out[i] = fill + Σ over row i's links k of values[k]·z[indices[k]], for rows i in [start, stop).

    Without values, each link adds z[indices[k]].  The reference for
    ``_fastproduct.row_sums``, its C twin, which gives the same sums bit for
    bit: scipy's CSR kernel on ``out`` filled first, so that each row starts
    from ``fill`` (in z's type) and adds its links in order.
    ``_CALL_LINKS`` links a call (a long row over several calls), against one
    small array of ones when there are no values: no temporary the size of
    the links.
    """
    out[start:stop] = fill if np.ndim(fill) == 0 else fill[start:stop]
    ones = np.ones(min(int(indptr[stop]) - int(indptr[start]), _CALL_LINKS), dtype=z.dtype)
    n = len(z)
    csr_matvec = _scipy_kernels()[0]
    for first, end, local, lo, hi in _kernel_calls(indptr, start, stop, indices.dtype):
        data = ones[: hi - lo] if values is None else values[lo:hi]
        if csr_matvec is None:  # pragma: no cover - adds each row's sum to out: not the same bits
            import scipy.sparse as sp

            out[first:end] += sp.csr_matrix((data, indices[lo:hi], local), shape=(end - first, n)) @ z
        else:
            csr_matvec(end - first, n, local, indices[lo:hi], data, z, out[first:end])


def c_row_sums(
    indptr: np.ndarray,
    indices: np.ndarray,
    values: np.ndarray | None,
    z: np.ndarray,
    out: np.ndarray,
    start: int,
    stop: int,
    fill: Any = 0.0,
) -> None:
    """:func:`python_row_sums`, in C: it asks for the sources ahead of their use (the product waits on them)."""
    fill = float(fill) if np.ndim(fill) == 0 else np.ascontiguousarray(fill, dtype=z.dtype)  # as the twin casts it
    _fastproduct.row_sums(indptr, indices, values, z, out, start, stop, fill)


ROW_SUMS = {"python": python_row_sums} | ({} if _fastproduct is None else {"c": c_row_sums})
"""The kernels that compute a product's rows; the tests run the solver on each."""

row_sums = c_row_sums if _fastproduct is not None else python_row_sums
"""The kernel the product uses: the C twin where it was built."""


def in_sums(graph: Graph, values: np.ndarray, weighted: bool = True, threads: int | None = None) -> np.ndarray:
    """P·values: for each page, Σ over its in-links of values[source] (times the link's weight when weighted).

    :data:`row_sums` on row ranges of about ``_SUM_LINKS`` links in threads.
    """
    n, indptr = graph.n, graph.indptr
    if indptr.dtype not in (np.int32, np.int64) or not indptr.flags.c_contiguous:
        indptr = np.ascontiguousarray(indptr, dtype=np.int64)  # a Graph is a plain dataclass: any arrays
    indices = np.ascontiguousarray(graph.indices, dtype=np.int32)
    weights = None if not weighted or graph.weights is None else np.ascontiguousarray(graph.weights, np.float64)
    values = np.ascontiguousarray(values, dtype=np.float64)
    out = np.zeros(n)
    if graph.links == 0:
        return out
    cuts = _row_cuts(indptr, 0, n, _SUM_LINKS)
    kernel = row_sums

    def run(start: int, stop: int) -> None:
        kernel(indptr, indices, weights, values, out, start, stop)

    threads = min(threads or os.cpu_count() or 1, 8, len(cuts) - 1)
    if threads > 1 and graph.links >= _THREAD_MIN_LINKS:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(run, cuts[:-1], cuts[1:]))
    else:
        run(0, n)
    return out


class _Product:
    """out = fill + P z, written in place, on row blocks in threads, with pages in an inner order.

    M = P·diag(inverse), with P the links (row i lists the pages linking to
    page i; their weights when weighted) and ``inverse[dtype]`` = scale /
    out-weight per page (0 at sinks).  Callers pass z = inverse·x, so that
    out = fill + M x.  Without weights P's values are all ones and no array of
    them is kept, so the matrix costs 4 bytes a link (its column indices) in
    float32 and float64 alike.  :data:`row_sums` computes each block's rows.

    Pages are renumbered once (:func:`_page_groups`): callers move vectors in
    with :meth:`inner` and the answer out with :meth:`outer`.  The sinks are
    the inner pages [live, n), or, past :data:`COPY_LINKS` links, where the
    graph has them (no renumbering: :meth:`_as_given`); :meth:`sinks_sum` sums
    a vector's part at them either way.

    Both kernels release the GIL, so the row blocks run in parallel; the fill
    and any per-block follow-up (``after``) run in the block's thread too, on
    memory the product has just touched.  A float32 ``z`` is multiplied in
    float32 (``single=True`` keeps float32 copies of ``inverse`` and of any
    weights).
    """

    def __init__(self, graph: Graph, weighted: bool, threads: int | None, scale: float = 1.0, single: bool = False):
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

        degree = graph.out_degree  # counted by the loader, else here
        if degree is None:
            degree = sum(self._map(lambda share: count(share, None), shares), np.zeros(n, dtype=np.int64))
        group = _page_groups(degree)
        # a graph its loader laid out in the inner order (:func:`inner_order`, the out-degrees counted as it
        # read them) is multiplied as it is: no copy
        laid_out = graph.out_degree is not None and not bool((group[1:] < group[:-1]).any())
        self.ordered = links <= COPY_LINKS and not laid_out
        self.order = _grouped_order(group) if self.ordered else np.zeros(0, dtype=np.int32)
        del group
        self.live = int(np.count_nonzero(degree))
        out = degree if weights is None else sum(self._map(lambda share: count(share, weights), shares))
        self.scale = scale
        self.divisor: np.ndarray | None = None  # float32 out-degrees, inf at sinks: scaled = x / divisor * scale
        self.inverse: dict = {}
        if links > COPY_LINKS and weights is None and (not len(out) or int(out.max()) < 2**24):
            # no float64 inverse (a gigabyte at 135 million pages): an out-degree is an integer, exact in float32
            # (below 2**24), and x / degree * scale is as exact as x * (scale / degree); the ranking's votes
            # divide by the same array
            self.divisor = np.where(out > 0, out, np.inf).astype(np.float32)
            graph.remember_out_weight(False, self.divisor, at_sinks=np.inf)
        else:
            graph.remember_out_weight(weights is not None, out)  # the ranking's votes need it again
            with np.errstate(divide="ignore", invalid="ignore"):  # 0/0 where a page has no out-links (damping 0)
                inverse = np.where(out > 0, scale / out, 0.0)
            inverse = inverse[self.order] if self.ordered else inverse
            self.inverse = {kind: inverse.astype(kind, copy=False) for kind in kinds}
            del inverse
        del out
        # the loader's count is remembered as the out-weight now (the same numbers): half a gigabyte at 135
        # million pages, not held beside the solve's vectors twice
        graph.out_degree = None

        self.sinks: np.ndarray | None = None  # by page, in the given order: True at a sink (unordered only)
        if not self.ordered:
            self._as_given(graph, degree, threads, kinds, weights)
            return

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
            """Copy the links of rows [a, b) of the inner order (a row gather), then rename their sources."""
            for a, b in share:
                lo, hi = int(new_indptr[a]), int(new_indptr[b])
                part = self.indices[lo:hi]
                if weights is None:
                    _gather_rows(rows[a:b], indptr, indices, None, part, None)
                else:
                    assert self.values is not None
                    _gather_rows(rows[a:b], indptr, indices, weights, part, self.values[kinds[0]][lo:hi])
                part[:] = np.take(new_of, part)  # noqa: F821 (bound above; deleted once every call is done)

        del degree
        cuts = _row_cuts(new_indptr, 0, n, _CHUNK // 16)  # smaller: np.take's result is a temporary
        self._map(renumber, [list(zip(cuts[:-1], cuts[1:]))[k::threads] for k in range(threads)])
        if self.values is not None and single:
            self.values[kinds[1]][:] = self.values[kinds[0]]
        del new_of
        self.indptr = new_indptr.astype(np.int32) if links < 2**31 - 1 else new_indptr

        # row blocks with about the same number of links, one a thread
        block_cuts = [0, n]
        if threads > 1:
            block_cuts = np.searchsorted(new_indptr, np.linspace(0, links, threads + 1)).tolist()
            block_cuts[0], block_cuts[-1] = 0, n
        self.blocks = [(start, stop) for start, stop in zip(block_cuts[:-1], block_cuts[1:]) if stop > start]

    def _as_given(self, graph: Graph, degree: np.ndarray, threads: int, kinds: list, weights) -> None:
        """Past :data:`COPY_LINKS`, the graph's own arrays in the order given, no copy in an order of the
        product's own (4 bytes a link: at Common Crawl's 2 billion domain links the two would not fit 16
        GiB); the sinks are then where they are, marked in :attr:`sinks`."""
        self.sinks = degree == 0
        self.indices, self.indptr = graph.indices, graph.indptr
        self.values = None if weights is None else {kind: weights.astype(kind, copy=False) for kind in kinds}
        cuts = [0, graph.n]
        if threads > 1:
            cuts = np.searchsorted(graph.indptr, np.linspace(0, graph.links, threads + 1)).tolist()
            cuts[0], cuts[-1] = 0, graph.n
        self.blocks = [(start, stop) for start, stop in zip(cuts[:-1], cuts[1:]) if stop > start]

    def scaled(self, vector: np.ndarray, out: np.ndarray, lo: int = 0, hi: int | None = None) -> None:
        """out[lo:hi] = inverse·vector[lo:hi] (float64), what a product multiplies."""
        piece, into = vector[lo:hi], out[lo:hi]
        if self.divisor is None:
            np.multiply(piece, self.inverse[np.dtype(np.float64)][lo:hi], out=into)
        else:
            np.divide(piece, self.divisor[lo:hi], out=into)
            np.multiply(into, self.scale, out=into)

    def scale_in_place(self, vector: np.ndarray, lo: int = 0, hi: int | None = None) -> None:
        """vector[lo:hi] = inverse·vector[lo:hi], in the vector's own type (float32 for the power method's
        change)."""
        piece = vector[lo:hi]
        if self.divisor is None:
            np.multiply(piece, self.inverse[piece.dtype][lo:hi], out=piece)
        else:
            np.divide(piece, self.divisor[lo:hi], out=piece)
            np.multiply(piece, piece.dtype.type(self.scale), out=piece)

    @property
    def has_sinks(self) -> bool:
        return self.live < self.n

    def sinks_sum(self, vector: np.ndarray, lo: int, hi: int) -> float:
        """The part of ``vector`` (in the inner order) at sinks among pages [lo, hi), summed in float64."""
        if self.sinks is not None:
            return float(np.add.reduce(vector[lo:hi], where=self.sinks[lo:hi], dtype=np.float64))
        return float(vector[max(lo, self.live) : hi].sum(dtype=np.float64)) if hi > self.live else 0.0

    def inner(self, vector: np.ndarray) -> np.ndarray:
        """A vector over the graph's pages, in the inner order (a copy)."""
        return vector[self.order] if self.ordered else np.array(vector)

    def outer(self, vector: np.ndarray) -> np.ndarray:
        """A vector in the inner order, back over the graph's pages."""
        if not self.ordered:
            return vector
        out = np.empty_like(vector)
        out[self.order] = vector
        return out

    def _map(self, function: Callable, items: list) -> list:
        if self.pool is None:
            return [function(item) for item in items]
        return [future.result() for future in [self.pool.submit(function, item) for item in items]]

    def __call__(
        self, z: np.ndarray, out: np.ndarray, fill: Any = 0.0, after: Callable[[int, int], object] | None = None
    ) -> list:
        """out = fill + P z; returns ``after(start, stop)`` of each row block."""
        indptr, indices, kernel = self.indptr, self.indices, row_sums
        values = None if self.values is None else self.values[z.dtype]

        def block(start: int, stop: int) -> object:
            kernel(indptr, indices, values, z, out, start, stop, fill)
            return after(start, stop) if after is not None else None

        return self._map(lambda b: block(*b), self.blocks)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()


class _Pieces:
    """Fused vector passes, a cache-sized piece at a time, the pieces shared by the product's threads.

    ``run(kernel, width)`` calls ``kernel(lo, hi, scratch)`` for every piece
    [lo, hi) of [0, n) (numpy releases the GIL inside its loops, so the two
    halves overlap; ``scratch`` is two piece-sized rows) and returns the sums
    of the ``width`` numbers each call returns, added in piece order: the
    answer does not depend on the threads.
    """

    def __init__(self, n: int, product: _Product):
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
