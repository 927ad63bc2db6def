"""Sets of integers held as sorted numpy arrays: a sort and a compare.

numpy 2's ``np.unique`` hashes integer arrays, many times slower than a sort on millions of them (3.1 s
against 0.01 s for the 4.57M pages linking to the paper store's most-linked page, which come sorted).
"""

from __future__ import annotations

import numpy as np

__all__ = ["distinct"]


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, ascending: no sort if they come sorted (a page's in-links do), then a compare."""
    if len(values) < 2:
        return np.asarray(values).copy()
    ordered = values if bool((values[1:] >= values[:-1]).all()) else np.sort(values)
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]
