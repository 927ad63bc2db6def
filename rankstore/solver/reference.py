"""The exact reference, dense: for tests on small graphs, beside the methods they check."""

from __future__ import annotations

import numpy as np

from .system import _normalised

__all__ = ["pagerank_dense"]


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
