"""One PageRank problem (the graph, how the surfer moves) and what solving it gives."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .graph import Graph

__all__ = ["ConvergenceError", "Result"]


class ConvergenceError(RuntimeError):
    """The iteration did not reach ``tol`` in ``max_iter`` steps; ``.result`` holds where it got."""

    def __init__(self, message: str, result: Result):
        super().__init__(message)
        self.result = result


@dataclass
class Result:
    scores: np.ndarray
    iterations: int
    residuals: list[float] = field(default_factory=list)
    converged: bool = True
    removed_rounds: int = 0
    fell_back_after: int = 0  # BiCGSTAB's steps before it broke down and the power method took over (0: it did not)


def _normalised(vector: np.ndarray | None, n: int, name: str) -> np.ndarray:
    if vector is None:  # uniform: one value seen n times, no vector (a gigabyte at 135 million nodes)
        return np.broadcast_to(np.float64(1.0 / n), (n,))
    vector = np.asarray(vector, dtype=np.float64)
    if vector.shape != (n,):
        raise ValueError(f"{name} must have one value per page ({n}), got shape {vector.shape}")
    if not np.all(np.isfinite(vector)) or vector.min() < 0 or vector.sum() <= 0:
        raise ValueError(f"{name} must be non-negative with a positive sum")
    return vector / vector.sum()


@dataclass
class _System:
    """One PageRank problem: the graph, how the surfer moves, and how to compute it."""

    graph: Graph
    damping: float
    teleport: np.ndarray
    dangling_to: np.ndarray | None  # where rank at sinks goes; None: lost
    weighted: bool
    threads: int | None
