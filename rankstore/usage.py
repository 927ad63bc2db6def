"""Usage against rank (the paper's section 7.1): what you visited beside what PageRank says of it.

Each page (host, site) viewed in the proxy's record (``Visits.counts``, since a
date if given) is listed with its views, its PageRank in a ranking of the same
level, and two positions among the visited alone, 1 the first:

* ``visit_rank``: its place by views, "the rank the visits alone would give";
* ``pagerank_rank``: its place by the ranking's score.

Ties share the mean of the places they hold (as Spearman's rank correlation
does), so that a hundred pages viewed once stand together in the middle of
their block rather than at its head.  ``rank`` is its place among all of the
ranking's nodes, as ``rankstore top`` numbers them.

``log2_over`` = log2(visit_rank / pagerank_rank): how many doublings higher
PageRank places it than your visits do.  Above 0, PageRank ranks it above your
use of it (over-ranked); below 0, below (under-ranked); 0, even.  A ratio of
positions, not their difference, because a move from 1st to 4th means more
than from 101st to 104th.  The rows come most over- or under-ranked first
(largest ``|log2_over|``; at the same size over-ranked first, then more views,
then by name); a node the ranking has no score for (added since it was
written) comes last, ``pagerank_says`` ``unranked``.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from datetime import datetime
from enum import Enum

import numpy as np

from .ranking import VisitSource, visit_teleport
from .store import Ranking, RankingNotFound, Store

__all__ = ["Said", "UsageRow", "Usage", "UsageError", "DEFAULT_RANKINGS", "usage", "usage_rows", "scatter_png"]

DEFAULT_RANKINGS = {"page": "pagerank", "host": "hostrank", "site": "siterank"}  # the global ranking of a level
COLUMNS_AFTER_NAME = ["visits", "visit_rank", "pagerank", "pagerank_rank", "rank", "log2_over", "pagerank_says"]


class UsageError(ValueError):
    """Usage that cannot be computed as asked: no visits, or a ranking of another level."""


class Said(Enum):
    """What PageRank says of a node against your visits (the sign of ``log2_over``)."""

    OVER = "over"  # ranked above your use of it
    UNDER = "under"
    EVEN = "even"
    UNRANKED = "unranked"  # the ranking has no score for it


@dataclass(frozen=True)
class UsageRow:
    name: str  # the page's URL, the host's or the site's name
    visits: int
    visit_rank: float  # place by views among the visited (ties: their mean place)
    pagerank: float | None
    pagerank_rank: float | None  # place by the ranking's score among the visited
    rank: int | None  # place among all of the ranking's nodes (ties by id, as `rankstore top`)
    log2_over: float | None  # log2(visit_rank / pagerank_rank): > 0 over-ranked by PageRank
    said: Said


@dataclass(frozen=True)
class Usage:
    level: str
    ranking: Ranking
    since: datetime | None
    rows: list[UsageRow]  # in the module's order: most over- or under-ranked first
    notes: list[str]


def _names(store: Store, level: str, ids: list[int]) -> dict[int, str]:
    if level == "page":
        return store.pages.urls_of(ids)
    if level == "host":
        return store.hosts.host_names(ids)
    return store.sites.site_names(ids)


def _order(row: UsageRow) -> tuple:
    if row.log2_over is None:
        return (1, 0.0, 0.0, -row.visits, row.name)
    return (0, -abs(row.log2_over), -row.log2_over, -row.visits, row.name)


def usage(store: Store, level: str = "page", since: datetime | None = None, ranking: str | None = None) -> Usage:
    """Every node of ``level`` viewed since ``since``, beside ranking ``ranking`` (the level's global one when
    None), in the order of the module docstring.  UsageError when there are no such views, or the ranking
    ranks another level; RankingNotFound when there is no such ranking."""
    from .ranking import RankingError

    try:
        ids, views = visit_teleport(store, level, VisitSource(since))
    except RankingError as error:
        raise UsageError(str(error)) from error
    try:
        chosen = store.rankings.ranking(ranking or DEFAULT_RANKINGS[level])
    except RankingNotFound as error:
        if ranking is not None or level == "page":
            raise
        # the level's own ranking, not made yet: say how to make it
        raise RankingNotFound(f"{error}: rank the {level}s first (`rankstore rank --level {level}`)") from None
    if chosen.level != level:
        raise UsageError(f"{chosen.name} ranks {chosen.level}s: give --level {chosen.level}, or a ranking of {level}s")
    # the version's arrays, by id - 1: the proxy's reader keeps them for its next request
    arrays = store.rankings.ranking_arrays(chosen.id, votes=False)
    found = ids <= arrays.pages  # a node numbered since the version was written has no score in it
    index = np.where(found, ids - 1, 0)
    score = np.where(found, arrays.scores[index], np.nan)
    overall = arrays.places(index) + 1  # its place in the whole ranking, as `top` numbers it
    # scipy.stats is imported here, not with the module: the proxy imports this module for its /usage page, and
    # scipy.stats is most of the proxy's start
    from scipy.stats import rankdata

    by_visits = rankdata(-views, method="average")
    by_pagerank = np.full(len(ids), np.nan)
    by_pagerank[found] = rankdata(-score[found], method="average")
    names = _names(store, level, [int(i) for i in ids])
    rows = []
    for k, node in enumerate(ids.tolist()):
        if not found[k]:
            rows.append(
                UsageRow(names[node], int(views[k]), float(by_visits[k]), None, None, None, None, Said.UNRANKED)
            )
            continue
        over = math.log2(by_visits[k] / by_pagerank[k])
        said = Said.OVER if over > 0 else Said.UNDER if over < 0 else Said.EVEN
        rows.append(
            UsageRow(
                names[node],
                int(views[k]),
                float(by_visits[k]),
                float(score[k]),
                float(by_pagerank[k]),
                int(overall[k]),
                over,
                said,
            )
        )
    rows.sort(key=_order)
    notes = []
    stale = store.rankings.stale_note(chosen)
    if stale:
        notes.append(stale)
    unranked = int((~found).sum())
    if unranked:
        notes.append(f"{unranked:,} {level}s visited have no score in {chosen.label}: rank again to place them")
    return Usage(level, chosen, since, rows, notes)


def _place(place: float) -> float | int:
    """A place as it is written: a whole one as an integer (3, not 3.0); a tie's mean place as it is (3.5)."""
    return int(place) if float(place).is_integer() else place


def usage_rows(found: Usage, limit: int | None = None) -> list[dict]:
    """The rows as the CLI and the proxy's page write them (CSV, JSON, table): the name column is the level's."""
    key = "url" if found.level == "page" else found.level
    rows = found.rows if limit is None else found.rows[:limit]
    return [
        {
            key: row.name,
            "visits": row.visits,
            "visit_rank": _place(row.visit_rank),
            "pagerank": row.pagerank,
            "pagerank_rank": None if row.pagerank_rank is None else _place(row.pagerank_rank),
            "rank": None if row.rank is None else _place(row.rank),
            "log2_over": None if row.log2_over is None else round(row.log2_over, 6),
            "pagerank_says": row.said.value,
        }
        for row in rows
    ]


def usage_columns(level: str) -> list[str]:
    return ["url" if level == "page" else level, *COLUMNS_AFTER_NAME]


def scatter_png(found: Usage) -> bytes:
    """A PNG: log visits against log PageRank, a point a node the ranking scores above 0 (a log axis has no 0),
    the over-ranked in one colour and the under-ranked in another."""
    import matplotlib

    matplotlib.use("Agg")  # no display: bytes are rendered
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.4, 4.4), dpi=90)
    try:
        drawn = [(row, row.pagerank) for row in found.rows if row.pagerank is not None and row.pagerank > 0]
        for said, colour in ((Said.OVER, "#c0392b"), (Said.UNDER, "#2471a3"), (Said.EVEN, "#555555")):
            points = [(row, score) for row, score in drawn if row.said is said]
            if points:
                axes.scatter(
                    [row.visits for row, _ in points],
                    [score for _, score in points],
                    s=14,
                    c=colour,
                    label=f"{said.value}-ranked by PageRank" if said is not Said.EVEN else "even",
                )
        axes.margins(0.15)  # no point under the legend or on a frame's edge
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlabel("visits (log)")
        axes.set_ylabel(f"{found.ranking.name} (log)")
        axes.set_title(f"Usage against rank: {len(drawn):,} {found.level}s")
        if drawn:
            axes.legend(fontsize="small")
        else:
            axes.text(0.5, 0.5, "no visited node with a score above 0", ha="center", transform=axes.transAxes)
        figure.tight_layout()
        out = io.BytesIO()
        figure.savefig(out, format="png", metadata={"Software": None})
        return out.getvalue()
    finally:
        plt.close(figure)
