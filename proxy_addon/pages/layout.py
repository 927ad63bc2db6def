"""The own pages' frame: style, Content-Security-Policy, headers, the page layout, tables and CSV answers.

Every string from the crawl or the request goes through :func:`escape` (from
the rewriter) on its way into a page; the policy allows no script at all and
only this module's hashed style, so even a missed escape could run nothing.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
from collections.abc import Sequence

from ..ranks import Ranks
from ..rewrite import STYLE, LinkInfo, bar, escape, format_score, proxy_url

__all__ = [
    "CSP",
    "HEADERS",
    "BadRequest",
    "layout",
    "error",
    "html_response",
    "download",
    "FORMATS",
    "rows_table",
    "infos",
    "share",
    "score",
]


class BadRequest(Exception):
    """What was wrong with a request, said on a 400 page."""


class NotFound(Exception):
    """What the store does not have, said on a 404 page."""


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


def layout(title: str, body: str) -> bytes:
    nav = (
        f'<nav><a href="{proxy_url("/")}">PageRank proxy</a><a href="{proxy_url("/top")}">Top pages</a>'
        f'<a href="{proxy_url("/search")}">Search titles</a><a href="{proxy_url("/compare")}">Compare</a>'
        f'<a href="{proxy_url("/builds")}">Builds</a></nav>'
    )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{PAGE_STYLE}</style></head><body>{nav}<h1>{escape(title)}</h1>{body}</body></html>"
    ).encode()


def html_response(title: str, body: str) -> tuple[int, dict, bytes]:
    return 200, dict(HEADERS), layout(title, body)


def error(status: int, message: str) -> tuple[int, dict, bytes]:
    return status, dict(HEADERS), layout("PageRank proxy", f"<p>{escape(message)}</p>")


FORMATS = ("html", "csv", "json")  # format=: the page, or its rows as the CLI's --format csv|json


def download(
    fmt: str, columns: Sequence[str], rows: Sequence[dict], name: str, truncated: str | None = None, ascii_only=False
) -> tuple[int, dict, bytes]:
    """Rows as the CLI writes them: CSV with ``columns`` as its header (None as an empty field), or the JSON
    list of the rows (``ascii_only`` where the CLI escapes non-ASCII)."""
    if fmt == "json":
        text = json.dumps(list(rows), indent=2, ensure_ascii=ascii_only) + "\n"
        kind = "application/json"
    else:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([row.get(c) for c in columns] for row in rows)
        text, kind = out.getvalue(), "text/csv"
    headers = {
        "Content-Type": f"{kind}; charset=utf-8",
        "X-Content-Type-Options": "nosniff",
        "Content-Disposition": f'attachment; filename="{name}.{fmt}"',
        "Cache-Control": "no-store",
    }
    if truncated:  # said beside the data, which stays plain CSV or JSON
        headers["X-Backlinks-Truncated"] = truncated
    return 200, headers, text.encode()


def infos(ranks: Ranks, rows: Sequence[dict]) -> list[LinkInfo]:
    """What a bar shows for each store row; a page newer than the ranking version is unranked."""
    ranked = [row.get("pagerank") is not None and row.get("position") is not None for row in rows]
    if not any(ranked):
        return [LinkInfo(None) for _ in rows]
    store = ranks.store()
    lowest, highest = ranks.score_range(store, store.ranking_head(ranks.ranking)[0])
    found = iter(ranks.infos([row for row, known in zip(rows, ranked) if known], lowest, highest))
    return [next(found) if known else LinkInfo(None) for known in ranked]


def score(value: float | None) -> str:
    return "&#8211;" if value is None else "0" if value == 0 else format_score(value)


def share(value: float | None) -> str:
    return "&#8211;" if value is None else f"{value:.2%}"


def page_cell(row: dict, extra: str = "") -> str:
    """A page's title (linked), its URL and a link to its details; ``extra`` is markup already escaped."""
    title = row.get("title") or row["url"]
    return (
        f'<td><a href="{escape(row["url"])}">{escape(title)}</a>{extra}<br><small>{escape(row["url"])}</small> · '
        f'<a href="{escape(proxy_url("/page", url=row["url"]))}">details</a></td>'
    )


def rows_table(ranks: Ranks, rows: Sequence[dict], start: int = 1) -> str:
    if not rows:
        return "<p>Nothing found.</p>"
    found = infos(ranks, rows)
    lines = [
        "<table><tr><th>#</th><th>PageRank</th><th>Percentile</th><th>Toolbar</th><th>In-links</th><th>Page</th></tr>"
    ]
    for number, (row, info) in enumerate(zip(rows, found), start):
        nofollow = row.get("nofollow", False)
        percentile = "&#8211;" if info.percentile is None else f"{info.percentile:.2f}"
        lines.append(
            f'<tr data-pagerank="{"unranked" if info.pagerank is None else repr(info.pagerank)}" '
            f'data-url="{escape(row["url"])}">'
            f'<td class="n">{number}</td>'
            f'<td class="n">{bar(info, nofollow)}{format_score(info.pagerank)}</td>'
            f'<td class="n">{percentile}</td><td class="n">{info.toolbar}</td>'
            f'<td class="n">{info.inlinks:,}</td>' + page_cell(row) + "</tr>"
        )
    lines.append("</table>")
    return "".join(lines)
