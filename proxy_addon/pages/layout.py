"""The own pages' frame: style, Content-Security-Policy, headers, the page layout, tables and CSV answers.

Every string from the crawl or the request goes through :func:`escape` (from
the rewriter) on its way into a page; the policy allows no script at all and
only this module's hashed style, so even a missed escape could run nothing.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from rankstore.display import percentile_text
from rankstore.store import Ranking, Store

from ..markup import STYLE, LinkInfo, bar, escape, format_score, prose, proxy_url
from ..ranks import Ranks

if TYPE_CHECKING:  # rankstore.output and rankstore.views are imported by the views that need them, at their
    from rankstore import output  # first request: the gate, which every proxied page passes, needs neither

__all__ = [
    "CSP",
    "HEADERS",
    "BadRequest",
    "NotFound",
    "PagesUnranked",
    "layout",
    "error",
    "html_response",
    "download",
    "FORMATS",
    "rows_table",
    "host_table",
    "infos",
    "UNRANKED",
    "score_range",
    "unreached",
    "share",
    "score",
]


class BadRequest(Exception):
    """What was wrong with a request, said on a 400 page."""


class NotFound(Exception):
    """What the store does not have, said on a 404 page."""


class PagesUnranked(Exception):
    """The proxy's own page ranking was asked for where the store ranks no pages, only hosts or sites (the proxy
    started on their ranks: :func:`~proxy_addon.ranks.shown_ranking`): said on a page that points to what works."""


PAGE_STYLE = STYLE + (
    "body{font:15px/1.45 system-ui,sans-serif;margin:2em auto;max-width:60em;padding:0 1em;color:#222}"
    "h1{color:#900;font-size:1.5em}table{border-collapse:collapse;width:100%}"
    "td,th{padding:3px 6px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    "small{color:#666;overflow-wrap:anywhere}nav a{margin-right:1em}form{margin:1em 0}"
    "input[type=search],input[type=url]{width:60%;padding:4px}"
    "p.views a,p.views b{margin-right:.8em;white-space:nowrap}"
    "tr.share td{color:#555;border-bottom:none}tr.total td{font-weight:bold}"
    "mark.new{background:#fd0;color:#000;border-radius:3px;padding:0 4px;font-size:.8em}"
    "form.wide input[type=text],form.wide input[type=url]{width:45%;padding:3px;margin:2px 0}"
    "p.note{background:#fff4d6;border:1px solid #e0b040;border-radius:4px;padding:6px 10px}"
    # a score's text is as wide as its digits: the column's bars start at its left edge, the numbers at its right
    "td.n>span[data-pagerank-bar]{float:left!important;margin:.45em .6em 0 0!important}"
    # the pictures (:mod:`.charts`) scale down to the column; their text and axes take the page's colour
    "svg.chart{display:block;max-width:100%;height:auto;margin:1em 0}"
    ":root{color-scheme:light dark}"
    "@media (prefers-color-scheme:dark){body{background:#17191d;color:#ddd}h1{color:#f28b82}a{color:#8ab4f8}"
    "a:visited{color:#c58af9}td,th{border-bottom-color:#33363b}small,tr.share td{color:#aaa}"
    "p.note{background:#3a3320;border-color:#8a7030}}"
)
_STYLE_HASH = "sha256-" + base64.b64encode(hashlib.sha256(PAGE_STYLE.encode()).digest()).decode()
CSP = (
    f"default-src 'none'; style-src '{_STYLE_HASH}'; img-src 'none'; form-action http://pagerank.proxy; "
    "base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Type": "text/html; charset=utf-8",
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
}


def layout(title: str, body: str, notes: Sequence[str] = ()) -> bytes:
    """A page of ours: the navigation, the title, what must be said first (``notes``: a stale ranking, a
    level; text, escaped here), then ``body`` (markup already escaped)."""
    said = "".join(f'<p class="note" role="status">{prose(note)}</p>' for note in notes)
    nav = (
        f'<nav><a href="{proxy_url("/")}">PageRank proxy</a><a href="{proxy_url("/top")}">Top pages</a>'
        f'<a href="{proxy_url("/search")}">Search titles</a><a href="{proxy_url("/compare")}">Compare</a>'
        f'<a href="{proxy_url("/builds")}">Builds</a><a href="{proxy_url("/usage")}">Your visits</a></nav>'
    )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{PAGE_STYLE}</style></head><body>{nav}<h1>{escape(title)}</h1>{said}{body}</body></html>"
    ).encode()


def html_response(title: str, body: str, notes: Sequence[str] = ()) -> tuple[int, dict, bytes]:
    return 200, dict(HEADERS), layout(title, body, notes)


def error(status: int, message: str) -> tuple[int, dict, bytes]:
    # prose: a message of the store's names its commands in backticks, which a page shows as quotes
    return status, dict(HEADERS), layout("PageRank proxy", f"<p>{prose(message)}</p>")


FORMATS = ("html", "csv", "json")  # format=: the page, or its rows as the CLI's --format csv|json


def download(
    fmt: str,
    columns: Sequence[str],
    rows: Sequence[dict],
    name: str,
    truncated: str | None = None,
    shares: Sequence[output.ShareLine] | None = None,
    with_shares: bool = False,
) -> tuple[int, dict, bytes]:
    """Rows as the CLI writes them (:func:`rankstore.output.render`: the same columns, CSV dialect and JSON,
    a backlink report's shares as ``rankstore backlinks`` gives them, in CSV with ``with_shares``)."""
    from rankstore import output

    text = output.render(rows, columns, fmt, shares, with_shares)
    headers = {
        "Content-Type": f"{'application/json' if fmt == 'json' else 'text/csv'}; charset=utf-8",
        "X-Content-Type-Options": "nosniff",
        "Content-Disposition": f'attachment; filename="{name}.{fmt}"',
        "Cache-Control": "no-store",
    }
    if truncated:  # said beside the data, which stays plain CSV or JSON
        headers["X-Backlinks-Truncated"] = truncated
    return 200, headers, text.encode()


def score_range(ranks: Ranks, store: Store, ranking: Ranking) -> tuple[float, float]:
    """(lowest positive, highest) score of ``ranking``: the proxy's own ranking's is kept per version."""
    if ranking.name == ranks.ranking:
        return ranks.score_range(store, ranking.id)
    return store.rankings.score_range(ranking)


# A row of the store without a score: in the store, added by a build newer than the ranking's version, so "not
# ranked yet" (which `rankstore rank` cures) in its bar's tooltip and accessible name, never "not in the store"
UNRANKED = LinkInfo(None, later=True)


def infos(ranks: Ranks, rows: Sequence[dict], ranking: Ranking) -> list[LinkInfo]:
    """What a bar shows for each store row; a page newer than the ranking version is unranked."""
    ranked = [row.get("pagerank") is not None and row.get("place") is not None for row in rows]
    if not any(ranked):
        return [UNRANKED for _ in rows]
    lowest, highest = score_range(ranks, ranks.store(), ranking)
    found = iter(ranks.infos([row for row, known in zip(rows, ranked) if known], lowest, highest))
    return [next(found) if known else UNRANKED for known in ranked]


def unreached(info: LinkInfo) -> str:
    """Words beside a bar that is empty because its page scored 0 (a personalised ranking's rank source does
    not reach it); nothing otherwise."""
    return " <small>0: unreached by the rank source</small>" if info.pagerank == 0 else ""


def score(value: float | None) -> str:
    return "&#8211;" if value is None else "0" if value == 0 else format_score(value)


def share(value: float | None) -> str:
    return "&#8211;" if value is None else f"{value:.2%}"


def with_ranking(ranks: Ranks, ranking: str, **query: str) -> dict[str, str]:
    """A link's parameters with ``ranking=`` added when it is not the proxy's own."""
    return query | ({"ranking": ranking} if ranking != ranks.ranking else {})


def page_cell(row: dict, extra: str = "", ranking: dict[str, str] | None = None) -> str:
    """A page's title (linked), its URL and a link to its details; ``extra`` is markup already escaped;
    ``ranking``: ``{"ranking": name}`` for a ranking other than the proxy's own."""
    title = row.get("title") or row["url"]
    details = proxy_url("/page", url=row["url"], **(ranking or {}))
    return (
        f'<td><a href="{escape(row["url"])}">{escape(title)}</a>{extra}<br><small>{escape(row["url"])}</small> · '
        f'<a href="{escape(details)}">details</a></td>'
    )


def rows_table(ranks: Ranks, rows: Sequence[dict], ranking: Ranking, start: int = 1) -> str:
    if not rows:
        return "<p>Nothing found.</p>"
    found = infos(ranks, rows, ranking)
    chosen = with_ranking(ranks, ranking.name)
    lines = [
        "<table><tr><th>#</th><th>PageRank</th><th>Percentile</th><th>Toolbar</th><th>In-links</th><th>Page</th></tr>"
    ]
    for number, (row, info) in enumerate(zip(rows, found), start):
        nofollow = row.get("nofollow", False)
        percentile = "&#8211;" if info.percentile is None else percentile_text(info.percentile)
        lines.append(
            f'<tr data-pagerank="{"unranked" if info.pagerank is None else repr(info.pagerank)}" '
            f'data-url="{escape(row["url"])}">'
            f'<td class="n">{number}</td>'
            f'<td class="n">{bar(info, nofollow)}{format_score(info.pagerank)}{unreached(info)}</td>'
            f'<td class="n">{percentile}</td><td class="n">{info.toolbar}</td>'
            f'<td class="n">{info.inlinks:,}</td>' + page_cell(row, ranking=chosen) + "</tr>"
        )
    lines.append("</table>")
    return "".join(lines)


def host_infos(ranks: Ranks, store: Store, rows: Sequence[dict], ranking: Ranking) -> list[LinkInfo]:
    """What a bar shows for each host (site) row of a host (site) ranking (``analysis.top_nodes``,
    ``lookup_nodes``)."""
    count = f"{ranking.level}s"
    as_pages = [
        {"pagerank": row["pagerank"], "place": row["place"], "inlinks": row["inlinks"] or 0, "pages": row[count]}
        for row in rows
    ]
    ranked = [row["pagerank"] is not None for row in as_pages]
    found = iter(
        ranks.infos([row for row, known in zip(as_pages, ranked) if known], *store.rankings.score_range(ranking))
    )
    infos = [next(found) if known else UNRANKED for known in ranked]
    # a count the ranking does not know (a Common Crawl ranks file's) is left out, not shown as 0
    return [info if row["inlinks"] is not None else replace(info, inlinks=None) for row, info in zip(rows, infos)]


def host_table(ranks: Ranks, store: Store, rows: Sequence[dict], ranking: Ranking, start: int = 1) -> str:
    """Hosts (sites) of a host (site) ranking, with their bars: rank, score, percentile, toolbar, in-links,
    pages (hosts)."""
    if not rows:
        return "<p>Nothing found.</p>"
    from rankstore.views import MEMBERS

    level = ranking.level
    members = MEMBERS[level]
    lines = [
        f"<table><tr><th>#</th><th>{level.capitalize()} PageRank</th><th>Percentile</th><th>Toolbar</th>"
        f"<th>In-links</th><th>{members.capitalize()}</th><th>{level.capitalize()}</th></tr>"
    ]
    for number, (row, info) in enumerate(zip(rows, host_infos(ranks, store, rows, ranking)), start):
        percentile = "&#8211;" if info.percentile is None else percentile_text(info.percentile)
        backlinks = ""
        if level == "host":  # a host's pages are the whole-site backlinks view's target
            its = escape(proxy_url("/backlinks", url=row["host"], host="1"))
            backlinks = f' <small><a href="{its}">its backlinks</a></small>'
        lines.append(
            f'<tr data-pagerank="{"unranked" if info.pagerank is None else repr(info.pagerank)}" '
            f'data-{level}="{escape(row[level])}"><td class="n">{number}</td>'
            f'<td class="n">{bar(info)}{format_score(info.pagerank)}{unreached(info)}</td>'
            f'<td class="n">{percentile}</td><td class="n">{info.toolbar}</td>'
            f'<td class="n">{"&#8211;" if info.inlinks is None else f"{info.inlinks:,}"}</td>'
            f'<td class="n">{"&#8211;" if row[members] is None else f"{row[members]:,}"}</td>'
            f"<td>{escape(row[level])}{backlinks}</td></tr>"
        )
    lines.append("</table>")
    return "".join(lines)
