"""The paper's section 2.7: dangling pages removed round by round, then restored (seed 002's back-substitution)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .graph import Graph
from .system import Result, _System

if TYPE_CHECKING:
    import scipy.sparse as sp


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
    import scipy.sparse as sp  # here, as this rule alone needs it: a rank by another starts without scipy

    out = graph.out_weight(weighted).astype(np.float64)  # float32 out-degrees past COPY_LINKS
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
        return solve(
            _System(graph, damping, teleport, teleport, system.weighted, system.threads), tol, max_iter, start, callback
        )
    removed = np.zeros(graph.n, dtype=bool)
    for layer in layers:
        removed[layer] = True
    if removed.all():
        raise ValueError("dangling='remove': every page is removed (the graph has no cycle)")
    core, old = graph.subgraph(~removed)
    scale = teleport[old].sum()
    core_teleport = teleport[old] / scale if scale > 0 else np.full(len(old), 1.0 / len(old))
    core_start = start[old] / start[old].sum() if start[old].sum() > 0 else core_teleport
    result = solve(
        _System(core, damping, core_teleport, None, system.weighted, system.threads),
        tol,
        max_iter,
        core_start,
        callback,
    )
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
