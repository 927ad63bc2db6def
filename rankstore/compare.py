"""How far two rankings agree: rank correlations and the overlap of their best nodes.

``rankstore compare`` asks it of two rankings of one level (ours against
Common Crawl's, ``compare hostrank cc-pagerank``), or of two versions of one
ranking (``compare pagerank``: the one before against the newest).

**Common nodes.**  Both versions are arrays by node index; a node counts when
both hold it (a node numbered after a version is not in it) and both score it
above 0.  A 0 says nothing of order: a node Common Crawl's ranks file does not
name (:mod:`rankstore.imported`), one no host links to (harmonic centrality
0), one a personalised ranking's source cannot reach.

**The measures** (:func:`agreement`), over the common nodes' scores, each
exact (no sampling: both correlations are O(n log n) in scipy, seconds at
tens of millions of nodes):

* Spearman's rho (Spearman, "The proof and measurement of association
  between two things", Am. J. Psychol. 15, 1904): Pearson's correlation of the
  ranks, equal scores given their average rank (``scipy.stats.spearmanr``).
* Kendall's tau-b (Kendall, "The treatment of ties in ranking problems",
  Biometrika 33, 1945): concordant less discordant pairs over the pairs not
  tied, tau-b's tie correction (``scipy.stats.kendalltau``, Knight's
  O(n log n) algorithm, J. Am. Stat. Assoc. 61, 1966).
* Top-k overlap |top_k(A) ∩ top_k(B)| / k for k in 10, 100, 1,000 (the
  "intersection" measure of top-k lists; Fagin, Kumar and Sivakumar,
  "Comparing top k lists", SIAM J. Discrete Math. 17, 2003): top_k of a
  ranking is its k best common nodes, equal scores by node id as the store
  orders them.  None where fewer than k nodes are common.

With fewer than two common nodes, or a ranking that scores them all alike,
a correlation is not defined: None.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .store import Ranking, Store
from .store.rankings import order_by_score

__all__ = ["TOP_KS", "Agreement", "Comparison", "CompareError", "RankingRef", "agreement", "compare_rankings"]

TOP_KS = (10, 100, 1000)
_VERSIONED = re.compile(r"(.+)@([0-9]+)")


class CompareError(Exception):
    """Two rankings that cannot be compared (levels differ, a version not kept, no node in common)."""


@dataclass(frozen=True)
class RankingRef:
    """A ranking as the user names it: ``NAME`` (its newest version) or ``NAME@VERSION``."""

    name: str
    version: int | None = None

    @classmethod
    def parse(cls, text: str) -> RankingRef:
        found = _VERSIONED.fullmatch(text)
        if found is None:
            return cls(text)
        return cls(found.group(1), int(found.group(2)))

    def __str__(self) -> str:
        return self.name if self.version is None else f"{self.name}@{self.version}"


@dataclass(frozen=True)
class TopOverlap:
    k: int
    shared: int | None  # nodes in both top k; None where fewer than k nodes are common
    overlap: float | None  # shared / k


@dataclass(frozen=True)
class Agreement:
    """What :func:`agreement` finds of two score vectors over the same nodes."""

    nodes: int
    spearman: float | None
    kendall: float | None
    tops: tuple[TopOverlap, ...]


@dataclass(frozen=True)
class Comparison:
    """Two ranking versions, how many nodes each scores above 0, and their agreement over the common ones."""

    a: Ranking
    b: Ranking
    scored_a: int
    scored_b: int
    agreement: Agreement


def agreement(a: np.ndarray, b: np.ndarray, ks: Sequence[int] = TOP_KS) -> Agreement:
    """Spearman's rho, Kendall's tau-b and the top-k overlaps of two score vectors (same nodes, same order).

    Ties in a top k are broken by index, as :func:`~rankstore.store.rankings.order_by_score` orders a ranking.
    """
    from scipy import stats

    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError("two score vectors over the same nodes are needed")
    n = len(a)
    spearman = kendall = None
    if n >= 2 and np.ptp(a) > 0 and np.ptp(b) > 0:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scipy's warnings for what is checked above
            spearman = float(stats.spearmanr(a, b).statistic)
            kendall = float(stats.kendalltau(a, b).statistic)
    tops = []
    best_a = order_by_score(a)
    best_b = order_by_score(b)
    for k in ks:
        if k > n:
            tops.append(TopOverlap(k, None, None))
            continue
        shared = len(np.intersect1d(best_a[:k], best_b[:k], assume_unique=True))
        tops.append(TopOverlap(k, shared, shared / k))
    return Agreement(n, spearman, kendall, tuple(tops))


def _version(store: Store, ref: RankingRef) -> Ranking:
    if ref.version is not None and ref.version < 1:
        raise CompareError(f"{ref}: versions are numbered from 1")
    return store.rankings.ranking(ref.name, ref.version)


def compare_rankings(
    store: Store, a: RankingRef, b: RankingRef | None = None, ks: Sequence[int] = TOP_KS
) -> Comparison:
    """Ranking ``a`` against ``b``; ``b`` None: the version of ``a`` before the one named against it (the newest,
    for a bare name).  Raises :class:`CompareError` for rankings of two levels, a version whose scores are no
    longer kept (a ranking keeps its newest two) and no common node; ``RankingNotFound`` for a name or version
    the store has not."""
    with store.snapshot():
        if b is None:
            newest = _version(store, a)
            if newest.version <= 1:
                raise CompareError(f"{newest.label} is the first version of {newest.name}: nothing before it")
            first, second = store.rankings.ranking(a.name, newest.version - 1), newest
        else:
            first, second = _version(store, a), _version(store, b)
        if first.level != second.level:
            raise CompareError(
                f"{first.label} ranks {first.level}s and {second.label} {second.level}s: compare rankings of one level"
            )
        arrays = [store.rankings.ranking_arrays(ranking.id) for ranking in (first, second)]
    for ranking, held in zip((first, second), arrays):
        if held.pages < ranking.pages:
            raise CompareError(f"{ranking.label}'s scores are no longer kept (a ranking keeps its newest two versions)")
    left, right = arrays[0].scores, arrays[1].scores
    both = min(len(left), len(right))
    common = np.flatnonzero((left[:both] > 0) & (right[:both] > 0))
    if not len(common):
        raise CompareError(f"{first.label} and {second.label} score no {first.level} above 0 in common")
    found = agreement(left[common], right[common], ks)
    return Comparison(first, second, int(np.count_nonzero(left > 0)), int(np.count_nonzero(right > 0)), found)
