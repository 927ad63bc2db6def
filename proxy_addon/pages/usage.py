"""/usage: usage against rank (the paper's section 7.1), as ``rankstore usage`` gives it, with a scatter plot.

``/usage[?level=page|host|site][&since=DATE][&ranking=NAME][&n=ROWS][&format=csv|json]``: the rows of
:func:`rankstore.usage.usage`, most over- and under-ranked by PageRank first, and a scatter plot of log visits
against log PageRank rendered by the library (:func:`rankstore.usage.scatter_png`) and put in the page as a
``data:`` URI: the page is one response, its URL the whole view, and no script draws anything.  This page's
policy is the others' with ``img-src data:`` alone added (:data:`CSP`).

The ranking is the proxy's own at page level (``ranking=`` names another), ``hostrank`` or ``siterank`` at
those levels.
"""

from __future__ import annotations

import base64

from rankstore.sources.record import parse_moment
from rankstore.store import RankingNotFound
from rankstore.usage import DEFAULT_RANKINGS, UsageError, scatter_png, usage, usage_columns, usage_rows

from ..markup import escape, format_score, proxy_url
from ..ranks import Ranks
from .layout import CSP as PAGES_CSP
from .layout import FORMATS, BadRequest, download, html_response
from .params import CSV_ROWS, Query, choice, first, number

__all__ = ["usage_page", "CSP"]

LEVELS = ("page", "host", "site")
# the pages' policy with images from data: URIs, the plot's alone: still no script, no other origin
CSP = PAGES_CSP.replace("img-src 'none'", "img-src data:")


def usage_page(ranks: Ranks, query: Query):
    level = choice(query, "level", LEVELS)
    fmt = choice(query, "format", FORMATS)
    limit = number(query, "n", 100, 1, CSV_ROWS)
    since_text = first(query, "since").strip()
    try:
        since = parse_moment(since_text) if since_text else None
    except ValueError:
        raise BadRequest("since must be a UTC date: YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ.") from None
    store = ranks.store()
    name = first(query, "ranking").strip() or (ranks.ranking if level == "page" else DEFAULT_RANKINGS[level])
    try:
        found = usage(store, level, since, name)
    except RankingNotFound:
        names = [known.name for known in store.rankings.all()]
        raise BadRequest(f"No ranking {name!r}; the store has: {', '.join(names) or 'none'}.") from None
    except UsageError as problem:
        raise BadRequest(str(problem)) from None
    rows = usage_rows(found, limit)
    if fmt != "html":
        return download(fmt, usage_columns(level), rows, "usage")
    shared = {"level": level, "ranking": found.ranking.name, "n": str(limit)}
    if since_text:
        shared["since"] = since_text
    image = base64.b64encode(scatter_png(found)).decode("ascii")
    body = [
        _form(level, since_text, limit),
        f"<p>{len(found.rows):,} {level}s you visited{_since(since_text)}, by how far {escape(found.ranking.name)}"
        " places them from where your visits do: over-ranked (PageRank higher than your use) and under-ranked "
        "first. log2 over = log2(place by visits / place by PageRank); ties share their mean place.</p>",
        f'<p class="views"><a href="{escape(proxy_url("/usage", **shared))}">Link to this view</a> '
        f'<a href="{escape(proxy_url("/usage", **shared, format="csv"))}">Download CSV</a> '
        f'<a href="{escape(proxy_url("/usage", **shared, format="json"))}">JSON</a></p>',
        f'<p><img src="data:image/png;base64,{image}" width="576" height="396" '
        f'alt="Log visits against log {escape(found.ranking.name)}, a point a {level} you visited"></p>',
        _table(rows, level),
    ]
    status, headers, page = html_response(f"Usage against {found.ranking.name}", "".join(body), found.notes)
    headers["Content-Security-Policy"] = CSP
    return status, headers, page


def _since(text: str) -> str:
    return f" since {escape(text)}" if text else ""


def _place(value: float | None) -> str:
    return "&#8211;" if value is None else f"{value:,.1f}".removesuffix(".0")


def _table(rows: list[dict], level: str) -> str:
    if not rows:
        return "<p>Nothing visited.</p>"
    key = "url" if level == "page" else level
    lines = [
        f"<table><tr><th>{level.capitalize()}</th><th>Visits</th><th>By visits</th><th>PageRank</th>"
        "<th>By PageRank</th><th>Rank</th><th>log2 over</th><th>PageRank says</th></tr>"
    ]
    for row in rows:
        over = "&#8211;" if row["log2_over"] is None else f"{row['log2_over']:+.2f}"
        rank = "&#8211;" if row["rank"] is None else f"#{row['rank']:,}"
        lines.append(
            f'<tr><td>{escape(row[key])}</td><td class="n">{row["visits"]:,}</td>'
            f'<td class="n">{_place(row["visit_rank"])}</td><td class="n">{format_score(row["pagerank"])}</td>'
            f'<td class="n">{_place(row["pagerank_rank"])}</td><td class="n">{rank}</td><td class="n">{over}</td>'
            f"<td>{escape(row['pagerank_says'])}</td></tr>"
        )
    lines.append("</table>")
    return "".join(lines)


def _form(level: str, since: str, limit: int) -> str:
    options = "".join(
        f'<option value="{value}"{" selected" if value == level else ""}>{value}s</option>' for value in LEVELS
    )
    return (
        f'<form action="{proxy_url("/usage")}" method="get">'
        f'<label>Count by <select name="level">{options}</select></label> '
        f'<label>since <input type="text" name="since" value="{escape(since)}" placeholder="2026-11-01"></label> '
        f'<input type="hidden" name="n" value="{limit}">'
        "<button>Show</button></form>"
    )
