"""The views' rows as users read them: display columns beside the store's rows, and stable column names.

The library computes each view once as rows (:mod:`rankstore.store.queries`,
:mod:`rankstore.store.analysis`); this module adds what both renderers show
(rank, percentile, toolbar, bar width, a link's kind, the shares that are not
pages, host rank beside page rank), names the columns of each view and says
what goes with the rows (:class:`Table` ``notes``: a stale ranking, a host
ranking answering for a page's host).  ``rankstore``'s table/CSV/JSON and the
proxy's own pages (``format=csv|json`` too) render these same rows through
:mod:`rankstore.output`: ``tests/test_analyst_pages.py`` compares the two
downloads byte for byte.

Column names, one scheme everywhere: a page's score is ``pagerank`` and its
position + 1 ``rank``; a host's score is ``host_pagerank`` and its position +
1 ``host_rank``, whether the row is a host or a page shown with its host; a
site's ``site_pagerank`` and ``site_rank`` alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from . import display
from .columns import SCORE_COLUMNS, SPAM_MASS, names
from .compare import TOP_KS, RankingRef, compare_rankings
from .output import ShareLine
from .store import BacklinkReport, Ranking, RankingNotFound, Store, StoreError, analysis
from .store.history import RankPoint, TargetHistory, target_history
from .store.levels import ESTIMATE_LEVELS
from .store.queries import search_words
from .store.schema import known_count
from .urls import host_of, site_of

if TYPE_CHECKING:
    from .watch import TargetWatch

DEFAULT_RANKING = "pagerank"  # the ranking a view reads when none is named (the CLI's --ranking default)

__all__ = [
    "ALL_ROWS",
    "Table",
    "PAGE_COLUMNS",
    "PAGE_EXTRA",
    "BACKLINK_EXTRA",
    "LOST_EXTRA",
    "HOST_COLUMNS",
    "INTERSECT_HOST_COLUMNS",
    "SITE_COLUMNS",
    "INTERSECT_SITE_COLUMNS",
    "MEMBERS",
    "HOST_RANKING_COLUMNS",
    "SITE_RANKING_COLUMNS",
    "LEVEL_COLUMNS",
    "SHOW_HOST_COLUMNS",
    "SHOW_SITE_COLUMNS",
    "ANCHOR_COLUMNS",
    "BUILD_COLUMNS",
    "EXPORT_COLUMNS",
    "EXPORT_HOST_COLUMNS",
    "EXPORT_SITE_COLUMNS",
    "EXPORT_LEVEL_COLUMNS",
    "decorate",
    "decorate_level",
    "link_columns",
    "share_lines",
    "page_columns",
    "stale_notes",
    "level_note",
    "answering_ranking",
    "top_view",
    "show_view",
    "estimate_rows",
    "ESTIMATE_EXTRA",
    "search_view",
    "backlinks_view",
    "lost_view",
    "referring_hosts_view",
    "referring_sites_view",
    "site_links_view",
    "holds_no_pages",
    "intersect_view",
    "intersect_rankings",
    "IntersectOrder",
    "anchors_view",
    "builds_view",
    "export_columns",
    "COMPARE_COLUMNS",
    "compare_view",
]

ALL_ROWS = 1 << 40  # a limit that is no limit: ``-n 0``

PAGE_COLUMNS = ["rank", "pagerank", "percentile", "toolbar", "inlinks", "bar", "url", "title"]
PAGE_EXTRA = ("spam_mass", "host_pagerank", "host_rank", "nofollow", "anchor")
# a URL whose page has no score, answered by its host's or site's rank: which level, its score, whose it is
ESTIMATE_EXTRA = ("level", "estimate", "answered_by")
BACKLINK_EXTRA = (
    "kind",
    "contribution",
    "share",
    "first_seen",
    "host_pagerank",
    "host_rank",
    "nofollow",
    "anchor",
    "target",
)
LOST_EXTRA = ("first_seen", "last_seen", "lost_in", "host_pagerank", "host_rank")
HOST_COLUMNS = [  # referring hosts
    "host",
    "pages",
    "links",
    "host_pagerank",
    "host_rank",
    "contribution",
    "share",
    "best_url",
    "best_pagerank",
]
SITE_COLUMNS = [  # referring sites
    "site",
    "hosts",
    "pages",
    "links",
    "site_pagerank",
    "site_rank",
    "contribution",
    "share",
    "best_url",
    "best_pagerank",
]
INTERSECT_HOST_COLUMNS = ["host", "host_pagerank", "host_rank"]
# linking sites by site rank alone: an intersect's, and a domain graph's referring sites (its site links)
INTERSECT_SITE_COLUMNS = ["site", "site_pagerank", "site_rank"]
MEMBERS = {"host": "pages", "site": "hosts"}  # what a host or a site counts of the level below
HOST_RANKING_COLUMNS = ["host_rank", "host_pagerank", "percentile", "toolbar", "inlinks", "pages", "bar", "host"]
SITE_RANKING_COLUMNS = ["site_rank", "site_pagerank", "percentile", "toolbar", "inlinks", "hosts", "bar", "site"]
LEVEL_COLUMNS = {"host": HOST_RANKING_COLUMNS, "site": SITE_RANKING_COLUMNS}
SHOW_HOST_COLUMNS = [*HOST_RANKING_COLUMNS[:-1], "url", "host"]  # a page answered by its host's rank
SHOW_SITE_COLUMNS = [*SITE_RANKING_COLUMNS[:-1], "url", "site"]  # a URL answered by its site's rank
ANCHOR_COLUMNS = ["anchor", "links", "contribution"]
BUILD_COLUMNS = ["build", "started_at", "finished_at", "status", "pages", "links", "new_links", "lost_links"]
EXPORT_COLUMNS = names(SCORE_COLUMNS["page"])  # declared once, with export's tables, in rankstore.columns
COMPARE_COLUMNS = [
    "ranking_a",
    "ranking_b",
    "level",
    "scored_a",
    "scored_b",
    "common",
    "spearman",
    "kendall",
    *(f"top_{k}" for k in TOP_KS),
]
EXPORT_HOST_COLUMNS = names(SCORE_COLUMNS["host"])
EXPORT_SITE_COLUMNS = names(SCORE_COLUMNS["site"])
EXPORT_LEVEL_COLUMNS = {"host": EXPORT_HOST_COLUMNS, "site": EXPORT_SITE_COLUMNS}
_BAR_PX = 20  # the CLI's bar column
_PERCENTILE_DIGITS = 4


@dataclass
class Table:
    """A view: its rows, its columns, and what must be said beside them (a stale ranking, a level)."""

    rows: list[dict]
    columns: list[str]
    notes: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # asked for, not in the store
    unranked: list[str] = field(default_factory=list)  # in the store, added since the ranking
    # a backlink report's shares that are no page (empty with --since); None: the view is no backlink report
    shares: list[ShareLine] | None = None


def _percentiles(positions, pages: int) -> list[float]:
    return display.percentile(positions, pages).round(_PERCENTILE_DIGITS).tolist()


def decorate(rows: Sequence[dict], lowest: float, highest: float) -> list[dict]:
    """Store rows -> rank, percentile, toolbar and bar columns beside the row's own; a page added since the
    ranking (no score) has none of them."""
    if not rows:
        return []
    scores = [row["pagerank"] or 0.0 for row in rows]
    pages = rows[0]["pages"]
    places = [row["place"] if row["place"] is not None else pages for row in rows]
    percentiles = _percentiles(places, pages)
    toolbars = display.toolbar(scores, pages)
    widths = display.bar_width(scores, lowest, highest, _BAR_PX)
    out = []
    for row, pct, tb, width in zip(rows, percentiles, toolbars, widths):
        ranked = row["pagerank"] is not None
        item = {
            "url": row["url"],
            "title": row["title"],
            "pagerank": row["pagerank"],
            "percentile": pct if ranked else None,
            "toolbar": int(tb) if ranked else None,
            "rank": (row["place"] + 1) if row["place"] is not None else None,
            "inlinks": row["inlinks"],
            "bar": int(width),
        }
        if row.get("extra") is not None:
            item["spam_mass"] = row["extra"]
        for key in ("nofollow", "anchor"):
            if key in row:
                item[key] = row[key]
        out.append(item)
    return out


def decorate_level(rows: Sequence[dict], level: str, lowest: float, highest: float) -> list[dict]:
    """Host (or site) rows of a ranking of that level (``analysis.top_nodes``, ``lookup_nodes``) -> rank, score,
    percentile, toolbar and bar among the ranking's hosts (sites), with what each holds of the level below
    (a host's pages, a site's hosts) and its in-links: the columns of ``LEVEL_COLUMNS[level]``."""
    if not rows:
        return []
    members = MEMBERS[level]
    count = rows[0][f"{level}s"]
    scores = [row["pagerank"] or 0.0 for row in rows]
    places = [row["place"] if row["place"] is not None else count for row in rows]
    percentiles = _percentiles(places, count)
    toolbars = display.toolbar(scores, count)
    widths = display.bar_width(scores, lowest, highest, _BAR_PX)
    return [
        {
            f"{level}_rank": row["place"] + 1 if row["place"] is not None else None,
            f"{level}_pagerank": row["pagerank"],
            "percentile": pct if row["pagerank"] is not None else None,
            "toolbar": int(tb) if row["pagerank"] is not None else None,
            "inlinks": row["inlinks"],
            members: row[members],
            "bar": int(width),
            level: row[level],
        }
        for row, pct, tb, width in zip(rows, percentiles, toolbars, widths)
    ]


def link_columns(rows: Sequence[dict], lowest: float, highest: float) -> list[dict]:
    """Backlink rows (a report's, or lost links'): kind, contribution, share and builds beside the page's."""
    decorated = decorate(rows, lowest, highest)
    for item, row in zip(decorated, rows):
        item["kind"] = "nofollow" if row.get("nofollow") else "link"
        for key in ("contribution", "share", "first_seen", "last_seen", "lost_in", "target"):
            if key in row:
                item[key] = row[key]
    return decorated


def share_lines(report: BacklinkReport, listed: Sequence[dict], whole_host: bool) -> list[ShareLine]:
    """The lines that are not pages: the shares of the backlinks not listed, of the page's links to itself
    (never listed as backlinks), of the random jump and of pages without out-links (with a whole host's
    internal links); with ``listed`` they add up to 1."""
    if report.links_share is None:
        return []
    rest = report.links_share - sum(row["share"] for row in listed if row.get("share"))
    out = [ShareLine("other_backlinks", "other backlinks", 0.0 if abs(rest) < 1e-12 else rest)]
    if report.self_share:
        out.append(ShareLine("links_to_itself", "its links to itself", report.self_share))
    out.append(ShareLine("random_jump", "random jump", report.jump_share))
    if whole_host:
        sinks = ShareLine(
            "internal_links_and_pages_without_out_links",
            "internal links and pages without out-links",
            report.sinks_share,
        )
    else:
        sinks = ShareLine("pages_without_out_links", "pages without out-links", report.sinks_share)
    return [*out, sinks]


def page_columns(rows: Sequence[dict], extra: Sequence[str]) -> list[str]:
    """The columns of decorated rows: the page columns, then those of ``extra`` that any row has."""
    present = {key for row in rows for key in row}
    return PAGE_COLUMNS + [key for key in extra if key in present]


def with_host_ranks(store: Store, rows: list[dict]) -> list[dict]:
    """Each page row with its host's score and rank (``host_pagerank``, ``host_rank``), once the hosts are
    ranked; the rows as they are before."""
    pages = [row for row in rows if row.get("url") is not None]
    ranks = analysis.host_ranks(store, [host_of(row["url"]) for row in pages])
    if ranks:
        for row in pages:
            row["host_pagerank"], row["host_rank"] = ranks.get(host_of(row["url"]), (None, None))
    return rows


def level_note(name: str, level: str) -> str:
    """What is said beside pages answered by a host or site ranking (``show``, the own /page)."""
    return f"{name} ranks {level}s: each URL is answered by its {level}'s rank"


def stale_notes(store: Store, ranking: Ranking) -> list[str]:
    note = store.rankings.stale_note(ranking)
    return [note] if note else []


# ------------------------------------------------------------------ the views, as the CLI and the pages ask


def answering_ranking(store: Store, name: str) -> Ranking:
    """The newest version of ranking ``name``; with the default ranking asked of a store that ranks no pages (a
    Common Crawl domain graph ranked by site), the finest level ranking it has instead (``hostrank``/``siterank``,
    else the newest of the level), as the proxy shows it.  A ranking named that is missing stays an error."""
    try:
        return store.rankings.ranking(name)
    except RankingNotFound:
        head = next((head for level in ESTIMATE_LEVELS if (head := store.levels.level_head(level)) is not None), None)
        if name != DEFAULT_RANKING or store.rankings.page_rankings() or head is None:
            raise
        return store.rankings.ranking(head.name)


def top_view(store: Store, name: str, limit: int) -> Table:
    """The best pages of a page ranking, or the best hosts (sites) of a host (site) ranking.  With the
    default ranking asked of a store that ranks no pages (a Common Crawl domain graph ranked by site), the
    finest level ranking it has, said in a note."""
    ranking = answering_ranking(store, name)
    notes = [f"the store ranks no pages: the best {ranking.level}s of {ranking.name}"] if ranking.name != name else []
    notes += stale_notes(store, ranking)
    if ranking.level != "page":
        rows = decorate_level(
            analysis.top_nodes(store, ranking.name, ranking.level, limit),
            ranking.level,
            *store.rankings.score_range(ranking),
        )
        return Table(rows, LEVEL_COLUMNS[ranking.level], notes)
    rows = decorate(store.queries.top(ranking.name, limit), *store.rankings.score_range(ranking))
    return Table(rows, page_columns(rows, PAGE_EXTRA), notes)


def show_view(store: Store, urls: Sequence[str], name: str) -> Table:
    """Pages (URLs in normal form) with their scores; a host ranking answers for each page's host (a page of
    the store), a site ranking for each URL's site (a site of the store)."""
    ranking = answering_ranking(store, name)
    notes = [f"the store ranks no pages: answered by {ranking.name}"] if ranking.name != name else []
    notes += stale_notes(store, ranking)
    name = ranking.name
    if ranking.level == "host":
        # a URL whose page the store has not is answered by its host's rank where the host is ranked, as a link
        # to it is in the proxy, and said to be so; it stays missing (exit status 1), as at the page level
        with store.snapshot():
            pages = store.pages.page_ids_for(urls)
            hosts = {url: host_of(url) for url in urls}
            found = analysis.lookup_hosts(store, list(hosts.values()), name)
        asked = [url for url in urls if hosts[url] in found and (url in pages or found[hosts[url]]["pagerank"])]
        rows = decorate_level([found[hosts[url]] for url in asked], "host", *store.rankings.score_range(ranking))
        for row, url in zip(rows, asked):
            row["url"] = url
        unranked = [url for url, row in zip(asked, rows) if row["host_pagerank"] is None]
        notes.append(level_note(name, "host"))
        missing = [url for url in urls if url not in pages]
        answered = [url for url in asked if url not in pages]
        if answered:
            notes.append(f"not in the store (answered by their host's rank): {', '.join(answered)}")
        return Table(rows, SHOW_HOST_COLUMNS, notes, missing, unranked)
    if ranking.level == "site":
        # a site is in the store without any page of it (a domain graph's): its URLs are answered by its rank
        sites = {url: site_of(host_of(url)) for url in urls}
        found = analysis.lookup_sites(store, list(sites.values()), name)
        asked = [url for url in urls if sites[url] in found]
        rows = decorate_level([found[sites[url]] for url in asked], "site", *store.rankings.score_range(ranking))
        for row, url in zip(rows, asked):
            row["url"] = url
        unranked = [url for url, row in zip(asked, rows) if row["site_pagerank"] is None]
        notes.append(level_note(name, "site"))
        return Table(rows, SHOW_SITE_COLUMNS, notes, [url for url in urls if url not in asked], unranked)
    found = store.queries.lookup(urls, name)
    rows = with_host_ranks(
        store, decorate([found[url] for url in urls if url in found], *store.rankings.score_range(ranking))
    )
    unranked = [row["url"] for row in rows if row["pagerank"] is None]
    missing = [url for url in urls if url not in found]
    estimated = estimate_rows(store, missing)
    if estimated:  # the finest level that ranks each URL answers for it, and every row says which
        for row in rows:
            row["level"] = "page"
        by_url = {row["url"]: row for row in rows} | estimated
        rows = [by_url[url] for url in dict.fromkeys(urls) if url in by_url]
        notes.append(f"not in the store (answered by their host's or site's rank): {', '.join(estimated)}")
    return Table(rows, page_columns(rows, PAGE_EXTRA + ESTIMATE_EXTRA), notes, missing, unranked)


def estimate_rows(store: Store, urls: Sequence[str]) -> dict[str, dict]:
    """Rows for URLs whose page the store does not hold, answered at the finest level ranked: their host's
    rank, else their site's (``level``, ``estimate`` the score, ``answered_by`` the host or site; rank,
    percentile, toolbar and bar within that level's ranking).  A URL with neither is left out."""
    rows: dict[str, dict] = {}
    left = list(urls)
    for level in ("host", "site"):
        head = store.levels.level_head(level) if left else None
        if head is None:
            continue
        names = {url: host_of(url) if level == "host" else site_of(host_of(url)) for url in left}
        found = store.levels.level_scores(head, set(names.values()))
        percentiles = _percentiles(found.places, head.nodes)
        toolbars = display.toolbar(found.scores, head.nodes).tolist()
        widths = display.bar_width(found.scores, head.lowest, head.highest, _BAR_PX).tolist()
        known = {
            name: (score, place, inlinks, pct, tb, width)
            for name, score, place, inlinks, pct, tb, width in zip(
                found.names,
                found.scores.tolist(),
                found.places.tolist(),
                found.inlinks.tolist(),
                percentiles,
                toolbars,
                widths,
            )
        }
        for url in left:
            if names[url] in known:
                score, place, inlinks, pct, tb, width = known[names[url]]
                rows[url] = {
                    "url": url,
                    "title": None,
                    "pagerank": None,
                    "percentile": pct,
                    "toolbar": tb,
                    "rank": place + 1,
                    "inlinks": known_count(inlinks),
                    "bar": width,
                    "level": level,
                    "estimate": score,
                    "answered_by": names[url],
                }
        left = [url for url in left if url not in rows]
    return rows


def search_view(store: Store, words: Sequence[str], name: str, limit: int, offset: int = 0) -> Table:
    ranking = store.rankings.page_ranking(name)
    rows = decorate(store.queries.search_titles(list(words), name, limit, offset), *store.rankings.score_range(ranking))
    notes = stale_notes(store, ranking)
    if search_words(words) != " ".join(words).split():
        notes.append("control characters in the search were read as spaces")
    return Table(rows, page_columns(rows, PAGE_EXTRA), notes)


def backlinks_view(
    store: Store,
    url: str | None,
    host: str | None,
    name: str,
    sort: str,
    since: int | None,
    limit: int,
    offset: int = 0,
    site: str | None = None,
) -> tuple[Table, BacklinkReport]:
    """A page's (or a whole host's, or a whole site's) backlinks with contribution, share, first build and
    host rank, then the shares that are not pages (:class:`Table` ``shares``; none with ``since``).  With the
    default ranking asked of a store that ranks no pages but hosts or sites (links extracted from a crawl,
    with Common Crawl's ranks loaded), the backlinks by their host's rank, else their site's
    (:func:`level_backlinks_view`)."""
    try:
        ranking = store.rankings.page_ranking(name)
    except RankingNotFound:
        order = level_order(store, name)
        if order is None:
            raise
        if sort != "pagerank":
            raise StoreError("sorting by contribution needs a ranking of pages: run `rankstore rank`") from None
        return level_backlinks_view(store, order, url, host, site, since, limit, offset)
    lowest, highest = store.rankings.score_range(ranking)
    report = analysis.backlink_report(store, url, name, sort, since, limit, offset, host=host, site=site)
    rows = link_columns(report.rows, lowest, highest) + link_columns(report.nofollow_rows, lowest, highest)
    with_host_ranks(store, rows)
    shares = share_lines(report, rows, host is not None or site is not None) if since is None else []
    notes = stale_notes(store, ranking)
    if report.unranked:
        notes.append(
            f"{report.unranked:,} backlinks first seen after build {report.ranked_build} are not in the graph "
            f"{ranking.label} ranked: listed without contribution or share, which are that graph's"
        )
    columns = page_columns([*rows, *(line.row() for line in shares)], BACKLINK_EXTRA)
    return Table(rows, columns, notes, shares=shares), report


LEVEL_BACKLINK_COLUMNS = ["level_rank", "estimate", "level", "answered_by", "kind", "url", "title", "first_seen",
                          "anchor"]  # fmt: skip


def level_order(store: Store, name: str) -> analysis.LevelOrder | None:
    """The host and site rankings that order backlinks when the default ranking is asked of a store that ranks
    no pages (the proxy's own choice of each level), or None: a page ranking, or no ranking at all."""
    if name != DEFAULT_RANKING or store.rankings.page_rankings():
        return None
    host, site = store.levels.level_head("host"), store.levels.level_head("site")
    if host is None and site is None:
        return None
    return analysis.LevelOrder(host.name if host else None, site.name if site else None)


def level_backlinks_view(
    store: Store,
    order: analysis.LevelOrder,
    url: str | None,
    host: str | None,
    site: str | None,
    since: int | None,
    limit: int,
    offset: int = 0,
) -> tuple[Table, BacklinkReport]:
    """Backlinks in a store that ranks no pages, by their host's rank, else their site's (``level``, its
    ``estimate`` and place, the ranking that ``answered_by``)."""
    report = analysis.level_backlinks(store, order, url, host, site, since, limit, offset)
    for row in report.rows:
        row["kind"] = "nofollow" if row["nofollow"] else "link"
    named = [f"its {level}'s rank in {name}" for level, name in (("host", order.host), ("site", order.site)) if name]
    notes = [f"the store ranks no pages: each backlink by {', else '.join(named)} (`rankstore rank` ranks pages)"]
    columns = LEVEL_BACKLINK_COLUMNS + (["target"] if any("target" in row for row in report.rows) else [])
    return Table(report.rows, columns, notes), report


def lost_view(store: Store, url: str, name: str, since: int | None, limit: int, offset: int = 0) -> Table:
    ranking = store.rankings.page_ranking(name)
    found = analysis.lost_backlinks(store, url, name, since, limit, offset)
    rows = with_host_ranks(store, link_columns(found, *store.rankings.score_range(ranking)))
    return Table(rows, page_columns(rows, LOST_EXTRA), stale_notes(store, ranking))


def referring_hosts_view(
    store: Store,
    url: str | None,
    host: str | None,
    name: str,
    sort: str,
    since: int | None,
    limit: int,
    offset: int = 0,
    site: str | None = None,
) -> Table:
    ranking = store.rankings.page_ranking(name)
    rows = analysis.referring_hosts(store, url, host, name, sort, since, limit, offset, site=site)
    return Table(rows, HOST_COLUMNS, stale_notes(store, ranking))


def referring_sites_view(
    store: Store,
    url: str | None,
    host: str | None,
    site: str | None,
    name: str,
    sort: str,
    since: int | None,
    limit: int,
    offset: int = 0,
) -> Table:
    """The sites whose pages link to a page (a host's, a site's pages), by site rank (``siterank``)."""
    ranking = store.rankings.page_ranking(name)
    rows = analysis.referring_sites(store, url, host, site, name, sort, since, limit, offset)
    return Table(rows, SITE_COLUMNS, stale_notes(store, ranking))


def holds_no_pages(store: Store) -> bool:
    """Whether the store holds no pages (a Common Crawl domain graph): a site's backlinks are its site links."""
    return store.pages.last_page_id() == 0


def site_links_view(store: Store, site: str, name: str, limit: int, offset: int = 0) -> Table:
    """A site's referring sites in a store of site links alone (a domain graph), best site rank first: by
    ranking ``name`` where it ranks sites, else by the site ranking that answers for sites."""
    found = store.levels.answering_ranking("site", name if _ranks_level(store, name, "site") else "")
    rows = analysis.site_link_referrers(store, site, found.name if found else None, limit, offset)
    notes = [f"the store holds no pages: the sites linking to {site} in its domain graph"]
    if found is None:
        notes.append("no site ranking: in no order of rank (`rankstore rank --level site` ranks them)")
    else:
        notes += stale_notes(store, found)
    return Table(rows, INTERSECT_SITE_COLUMNS, notes)


def _ranks_level(store: Store, name: str, level: str) -> bool:
    """Whether the store has a ranking ``name`` of ``level``."""
    try:
        return store.rankings.ranking(name).level == level
    except RankingNotFound:
        return False


def intersect_view(
    store: Store,
    targets: Sequence[tuple[str | None, ...]],
    mine: Sequence[tuple[str | None, ...]],
    name: str,
    by_host: bool,
    limit: int,
    offset: int = 0,
    by_site: bool = False,
) -> Table:
    """Who links to every target and not to mine: pages by a page ranking, or hosts (sites) by the host
    (site) ranking (``name`` itself when it ranks hosts (sites), else ``hostrank`` (``siterank``))."""
    order = intersect_rankings(store, name, by_host, by_site)
    notes = stale_notes(store, order.ranking) if order.ranking is not None else []
    if by_host or by_site:
        rows = analysis.intersect(
            store,
            targets,
            mine,
            name,
            by_host,
            limit,
            offset,
            host_ranking=order.host_ranking,
            by_site=by_site,
            site_ranking=order.site_ranking,
        )
        return Table(rows, INTERSECT_SITE_COLUMNS if by_site else INTERSECT_HOST_COLUMNS, notes)
    assert order.ranking is not None
    rows = decorate(
        analysis.intersect(store, targets, mine, name, False, limit, offset), *store.rankings.score_range(order.ranking)
    )
    return Table(rows, page_columns(rows, PAGE_EXTRA), notes)


@dataclass(frozen=True)
class IntersectOrder:
    """What orders an intersect (:func:`intersect_rankings`)."""

    ranking: Ranking | None  # the page ranking, or the host (site) ranking of linking hosts (sites) (None: there
    # is none, and they come in no order of rank)
    host_ranking: str  # the name of the host ranking that orders linking hosts
    site_ranking: str = "siterank"  # the name of the site ranking that orders linking sites


def intersect_rankings(store: Store, name: str, by_host: bool, by_site: bool = False) -> IntersectOrder:
    """The rankings that order an intersect by ranking ``name``: pages by it, linking hosts (sites) by it when
    it ranks hosts (sites), else by ``hostrank`` (``siterank``)."""
    if by_site:
        site_ranking = name if _ranks_level(store, name, "site") else "siterank"
        found = analysis.site_ranking(store, site_ranking) is not None
        return IntersectOrder(store.rankings.ranking(site_ranking) if found else None, "hostrank", site_ranking)
    if not by_host:
        return IntersectOrder(store.rankings.page_ranking(name), "hostrank")
    host_ranking = name if store.rankings.ranking(name).level == "host" else "hostrank"
    ranked = store.rankings.ranking(host_ranking) if analysis.host_ranking(store, host_ranking) is not None else None
    return IntersectOrder(ranked, host_ranking)


def anchors_view(store: Store, url: str, name: str, limit: int) -> Table:
    ranking = store.rankings.page_ranking(name)
    return Table(analysis.anchors(store, url, name, limit), ANCHOR_COLUMNS, stale_notes(store, ranking))


def builds_view(store: Store) -> Table:
    return Table(analysis.build_history(store), BUILD_COLUMNS)


def export_columns(store: Store, ranking: Ranking) -> dict[str, list]:
    """Every page (or host or site, for a ranking of that level) of a ranking, best first, as columns
    (``EXPORT_COLUMNS``, with ``spam_mass`` where the ranking has it; ``EXPORT_LEVEL_COLUMNS``)."""
    if ranking.level != "page":
        level = ranking.level
        rows = analysis.top_nodes(store, ranking.name, level, ALL_ROWS)
        scores = [row["pagerank"] for row in rows]
        places = [row["place"] for row in rows]
        values = [  # in the order of EXPORT_LEVEL_COLUMNS
            [row[level] for row in rows],
            scores,
            display.algorithm1(scores, ranking.pages).tolist(),
            _percentiles(places, ranking.pages),
            display.toolbar(scores, ranking.pages).tolist(),
            [p + 1 for p in places],
            [row[MEMBERS[level]] for row in rows],
            [row["inlinks"] for row in rows],
        ]
        return dict(zip(EXPORT_LEVEL_COLUMNS[level], values, strict=True))
    found = store.queries.export_rows(ranking)
    scores = [row.score for row in found]
    places = [row.place for row in found]
    values = [  # in the order of EXPORT_COLUMNS
        [row.url for row in found],
        scores,
        display.algorithm1(scores, ranking.pages).tolist(),
        _percentiles(places, ranking.pages),
        display.toolbar(scores, ranking.pages).tolist(),
        [p + 1 for p in places],
        [row.inlinks for row in found],
        [row.title for row in found],
    ]
    columns = dict(zip(EXPORT_COLUMNS, values, strict=True))
    if any(row.extra is not None for row in found):
        columns[SPAM_MASS.name] = [row.extra for row in found]
    return columns


def compare_view(store: Store, a: RankingRef, b: RankingRef | None) -> Table:
    """One row: how far ranking ``a`` agrees with ``b`` (:func:`rankstore.compare.compare_rankings`; ``b`` None:
    the version before ``a`` against it), with how many nodes each scores and how many they share."""
    found = compare_rankings(store, a, b)
    row = {
        "ranking_a": found.a.label,
        "ranking_b": found.b.label,
        "level": found.a.level,
        "scored_a": found.scored_a,
        "scored_b": found.scored_b,
        "common": found.agreement.nodes,
        "spearman": found.agreement.spearman,
        "kendall": found.agreement.kendall,
    }
    for top in found.agreement.tops:
        row[f"top_{top.k}"] = top.overlap
    notes = [
        f"over the {found.agreement.nodes:,} {found.a.level}s both score above 0; top_k: the share of A's k best "
        "that are among B's k best"
    ]
    return Table([row], COMPARE_COLUMNS, notes)


# ------------------------------------------------------------------ a target's history, and watching targets

HISTORY_COUNTS = [
    "backlinks", "new_backlinks", "lost_backlinks", "referring_hosts", "new_hosts", "lost_hosts",
    "referring_sites", "new_sites", "lost_sites",
]  # fmt: skip
HISTORY_COLUMNS = ["build", "started_at", *HISTORY_COUNTS, "version", "score", "percentile", "place"]


def history_rows(found: TargetHistory) -> list[dict]:
    """A target's history as one table (``HISTORY_COLUMNS``): a row for each build with each version of the
    ranking that ranked that build beside it (a build ranked twice gives two rows, its counts repeated; one
    not ranked, one row with no rank), then the versions whose build is not known, with no counts."""
    by_build: dict[int | None, list[RankPoint]] = {}
    for point in found.ranks:
        by_build.setdefault(point.build, []).append(point)
    rows = []
    known = set()
    for build in found.builds:
        known.add(build.build)
        counts = {"build": build.build, "started_at": build.started_at}
        counts.update({name: getattr(build, name) for name in HISTORY_COUNTS})
        ranked: list[RankPoint | None] = [*by_build.get(build.build, [])] or [None]
        for version in ranked:
            rows.append({**counts, **_rank_cells(version)})
    for build_id, points in by_build.items():
        if build_id not in known:  # not known, or a build gone from the store
            rows.extend({"build": build_id, **_rank_cells(point)} for point in points)
    return rows


def _rank_cells(point: RankPoint | None) -> dict:
    if point is None:
        return {}
    return {"version": point.version, "score": point.score, "percentile": point.percentile, "place": point.place}


def history_view(
    store: Store, url: str | None = None, host: str | None = None, site: str | None = None, ranking: str | None = None
) -> tuple[Table, TargetHistory]:
    """``rankstore history``'s table and the history it shows (for its plot)."""
    found = target_history(store, url, host, site, ranking)
    notes = [
        f"{found.level} {found.target}: builds' backlinks, referring hosts and sites; rank in {found.ranking}"
        + ("" if found.ranks else f" (no version of {found.ranking} ranks {found.level}s)")
    ]
    if found.level == "site" and store.site_links.count():
        number = store.sites.site_id(found.target)
        linking = len(store.site_links.in_links(number)) if number is not None else 0
        notes.append(
            f"the domain graph's site links keep no history: its {linking:,} sites linking to {found.target} "
            "are not counted by build"
        )
    dropped = [point.version for point in found.ranks if not point.kept]
    if dropped:
        notes.append(
            f"{found.ranking} v{dropped[0]}" + (f"-v{dropped[-1]}" if len(dropped) > 1 else "")
            + ": scores no longer kept (`rank --keep N` keeps N versions'; 2 by default), no rank shown"
        )  # fmt: skip
    return Table(history_rows(found), HISTORY_COLUMNS, notes), found


def watch_json(reports: Sequence[TargetWatch]) -> str:
    """``rankstore watch --format json``: a list with an object per target, ``changed`` beside its fields."""
    import json

    listed = [{**asdict(report), "changed": report.changed} for report in reports]
    return json.dumps(listed, indent=2, ensure_ascii=False) + "\n"


def watch_lines(reports: Sequence[TargetWatch]) -> list[str]:
    """``rankstore watch``'s text: a line per target, then its changes indented, best first."""
    lines = []
    for report in reports:
        if not report.known:
            lines.append(f"{report.target}: not in the store")
            continue
        since = f"build {report.previous_build}" if report.previous_build is not None else "the start"
        state = "changed" if report.changed else "no change"
        lines.append(
            f"{report.target}: {state} since {since} (now build {report.build}: {report.backlinks:,} backlinks, "
            f"{report.referring_sites:,} referring sites)"
        )
        for verb, count, links in (
            ("new", report.new_backlinks, report.new_links),
            ("lost", report.lost_backlinks, report.lost_links),
        ):
            if count:
                lines.append(f"  {count:,} {verb} backlink{'s' if count != 1 else ''}:")
                for link in links:
                    score = "-" if link.pagerank is None else f"{link.pagerank:.4e}"
                    onto = "" if report.level == "page" else f"  -> {link.target}"
                    lines.append(f"    {score}  {link.url}{onto}")
        for verb, count, sites in (
            ("new", report.new_sites, report.new_site_rows),
            ("lost", report.lost_sites, report.lost_site_rows),
        ):
            if count:
                lines.append(f"  {count:,} {verb} referring site{'s' if count != 1 else ''}:")
                for row in sites:
                    place = "" if row.site_rank is None else f"#{row.site_rank:,}  "
                    lines.append(f"    {place}{row.site} ({row.pages:,} linking page{'s' if row.pages != 1 else ''})")
        move = report.rank
        if move is not None and move.previous_version is not None:
            if move.moved:
                was = "-" if move.previous_place is None else f"#{move.previous_place:,}"
                now = "-" if move.place is None else f"#{move.place:,}"
                words = f"moved {was} -> {now}"
            else:
                words = "unmoved at " + ("-" if move.place is None else f"#{move.place:,}")
            lines.append(f"  rank in {move.ranking} v{move.previous_version} -> v{move.version}: {words}")
    return lines


__all__ += ["HISTORY_COUNTS", "HISTORY_COLUMNS", "history_rows", "history_view", "watch_json", "watch_lines"]


PROFILE_COLUMNS = ["toolbar", "pages"]
__all__ += ["PROFILE_COLUMNS", "profile_view"]


def profile_view(
    store: Store, name: str, url: str | None = None, host: str | None = None, site: str | None = None
) -> Table:
    """The pages linking to a target now, counted by their toolbar score (0-10, the paper's log scale): the
    shape Majestic and Ahrefs show, a natural profile's many weak linkers and few strong ones."""
    scores, pages = analysis.referrer_scores(store, name, url, host, site)
    counts = np.bincount(display.toolbar(scores, pages), minlength=11) if len(scores) else np.zeros(11, np.int64)
    rows = [{"toolbar": score, "pages": int(count)} for score, count in enumerate(counts.tolist())]
    return Table(rows, PROFILE_COLUMNS)
