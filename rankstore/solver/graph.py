"""The link graph as in-link CSR, the form every method and the store share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Graph"]


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

    ``weights`` (optional) holds each link's weight in the same order;
    ``out_degree`` (optional, int32) each page's out-links, where the loader
    counted them as it read them (at 2 billion links a count is a pass over
    8 GB).
    """

    n: int
    indptr: np.ndarray
    indices: np.ndarray
    weights: np.ndarray | None = None
    out_degree: np.ndarray | None = field(default=None, repr=False, compare=False)
    _out: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def from_edges(
        cls,
        src: Sequence[int] | np.ndarray,
        dst: Sequence[int] | np.ndarray,
        n: int | None = None,
        weights: Sequence[float] | np.ndarray | None = None,
    ) -> Graph:
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
    def from_sorted(cls, n: int, dst_sorted: np.ndarray, src: np.ndarray, weights: np.ndarray | None = None) -> Graph:
        """Build from links already sorted by target (no copies of the source array)."""
        return cls(n, _indptr(dst_sorted, n, len(src)), np.asarray(src, dtype=np.int32), weights)

    @property
    def links(self) -> int:
        return int(self.indptr[-1])

    def targets(self) -> np.ndarray:
        """The target of each link, in CSR order."""
        return np.repeat(np.arange(self.n, dtype=np.int32), np.diff(self.indptr))

    def out_weight(self, weighted: bool = True) -> np.ndarray:
        """Total out-link weight per page (out-degree when unweighted); computed once per graph (read-only).
        At a sink, 0, or inf when the product kept it (:meth:`remember_out_weight`): divide, do not compare."""
        key = weighted and self.weights is not None
        if key not in self._out:
            if key:
                out = np.bincount(self.indices, weights=self.weights, minlength=self.n)
            else:
                out = np.bincount(self.indices, minlength=self.n).astype(np.float64)
            self.remember_out_weight(key, out)
        return self._out[key]

    def remember_out_weight(self, weighted: bool, out: np.ndarray, at_sinks: float = 0.0) -> None:
        """Keep an out-weight computed elsewhere (the product counts it in threads).  ``at_sinks``: what it holds
        where a page has no out-links, 0, or inf where the product keeps float32 out-degrees as its divisor (the
        same array, none more at hundreds of millions of pages): v / out is 0 there either way."""
        if at_sinks == 0.0:
            out = np.asarray(out, dtype=np.float64)
        out.flags.writeable = False
        self._out[weighted and self.weights is not None] = out

    def release(self) -> None:
        """Let the links go (their arrays emptied; ``n`` stays): for a caller done with a graph of billions of
        links that others still hold a reference to."""
        self.indices = np.zeros(0, dtype=self.indices.dtype)
        self.indptr = np.zeros(1, dtype=self.indptr.dtype)
        self.weights = None
        self.out_degree = None
        self._out.clear()

    def in_degree(self) -> np.ndarray:
        return np.diff(self.indptr)

    def subgraph(self, keep: np.ndarray) -> tuple[Graph, np.ndarray]:
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

    def reversed(self) -> Graph:
        """Every link turned around (for BadRank)."""
        return Graph.from_edges(self.targets(), self.indices, self.n, self.weights)
