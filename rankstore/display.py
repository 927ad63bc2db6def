"""How a score is shown: percentile, the toolbar's 0-10, bar width. Shared by CLI and proxy.

All functions take numpy arrays (or scalars) and are vectorised.

* **percentile**: the share of pages ranked at or below this one, from its
  position in the ranking (0 = best) and the number of pages; the paper shows
  percentiles beside PageRank.
* **toolbar**: Google's toolbar showed 0-10 on a log scale; seed 000 estimates
  the base at 6-7 of the "algorithm 1" PageRank (sum to N, average page 1).
  Here: 0 below an average page, then one step per factor of 6.5, at most 10.
* **bar width**: proportional to log PageRank (the paper's section 7.3), from
  1 px for the lowest score above 0 of the ranking to ``max_px`` for the
  highest; 0 px for a page scored 0 (a personalised ranking's rank source
  cannot reach it), which the renderers say in words.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["TOOLBAR_BASE", "percentile", "percentile_text", "toolbar", "bar_width", "algorithm1"]

TOOLBAR_BASE = 6.5


def algorithm1(score, pages):
    """The notes' "algorithm 1" scale: ranks summing to N (the average page is 1)."""
    return np.asarray(score, dtype=np.float64) * pages


def percentile(place, pages):
    """The share of the ``pages`` nodes that score at most as much, in percent, from ``place``: how many score
    more (``RankingArrays.places``).  100 for the best, 100/N for a last alone; equal scores share their best
    place and so one percentile, in every view (a run of ties reads as its first node).

    The weak percentile rank of a score (``scipy.stats.percentileofscore(..., kind="weak")``).
    """
    place = np.asarray(place, dtype=np.float64)
    return np.where(pages > 0, 100.0 * (pages - place) / np.maximum(pages, 1), 0.0)


def percentile_text(value: float | None, digits: int = 2) -> str:
    """A percentile as shown, rounded down: only the best node (and those tied with it) reads 100, where
    rounding would give the second of 37,330 pages (99.997) a 100.00 too.  A dash where there is none."""
    if value is None:
        return "\u2013"
    scale = 10**digits
    # the product of a value already rounded to four places can land a hair below it: nudged up before the floor
    return f"{math.floor(value * scale + 1e-9) / scale:.{digits}f}"


def toolbar(score, pages):
    value = algorithm1(score, pages)
    with np.errstate(divide="ignore", invalid="ignore"):
        steps = np.floor(np.log(np.maximum(value, 1e-300)) / np.log(TOOLBAR_BASE)) + 1
    return np.clip(np.where(value >= 1, steps, 0), 0, 10).astype(np.int64)


def bar_width(score, lowest: float, highest: float, max_px: int = 40):
    """Pixels, log-scaled between the ranking's lowest positive and highest score; 0 for a score of 0 or none.

    ``lowest`` is the lowest score above 0 (``Store.rankings.score_range``); one of 0 or
    less is taken as ``highest``, so that every positive score still gets a bar.
    """
    score = np.asarray(score, dtype=np.float64)
    if not highest > 0:
        return np.zeros(score.shape, dtype=np.int64)
    if not lowest > 0:
        lowest = highest
    span = np.log(highest) - np.log(lowest)
    with np.errstate(divide="ignore", invalid="ignore"):
        fraction = (np.log(np.maximum(score, lowest)) - np.log(lowest)) / span if span > 0 else np.ones(score.shape)
    width = 1 + np.round(fraction * (max_px - 1))
    return np.where(score > 0, width, 0).astype(np.int64)
