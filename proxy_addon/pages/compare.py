"""/compare: link intersect, the pages (or hosts) that link to every target and to none of mine.

``/compare?target=A&target=B[&not=MINE][&host=1][&group=host][&format=csv|json]``: the rows of
:meth:`~rankstore.store.Store.intersect`, as ``rankstore intersect`` gives them; a form enters the targets.
"""

from __future__ import annotations

from urllib.parse import quote

from rankstore import views

from ..ranks import Ranks
from ..rewrite import escape, format_score, proxy_url
from .backlinks import _range
from .layout import FORMATS, NotFound, download, html_response, rows_table
from .params import (
    CSV_ROWS,
    MAX_NOT,
    MAX_TARGETS,
    PAGE_SIZE,
    Query,
    choice,
    flag,
    number,
    target,
    values,
)

__all__ = ["compare"]


def compare(ranks: Ranks, query: Query):
    targets = values(query, "target", MAX_TARGETS)
    mine = values(query, "not", MAX_NOT)
    whole = flag(query, "host")
    group = choice(query, "group", ("page", "host"))
    page = number(query, "page", 1)
    fmt = choice(query, "format", FORMATS)
    form = _form(targets, mine, whole, group)
    if not targets:
        return html_response("Link intersect", form + "<p>Give one target or more.</p>")
    chosen = [target(value, whole) for value in targets]
    excluded = [target(value, whole) for value in mine]
    store = ranks.store()
    missing = [
        url or host or ""
        for url, host in chosen + excluded
        if (store.page_id(url) if url is not None else store.host_id(host or "")) is None
    ]
    if missing:
        raise NotFound(f"Not in the store: {', '.join(missing)}.")
    by_host = group == "host"
    if fmt != "html":
        found = store.intersect(chosen, excluded, ranks.ranking, by_host, CSV_ROWS + 1, 0)
        note = f"the best {CSV_ROWS}; rankstore intersect gives all" if len(found) > CSV_ROWS else None
        if by_host:
            return download(fmt, views.INTERSECT_HOST_COLUMNS, found[:CSV_ROWS], "intersect", note)
        rows = views.decorate(found[:CSV_ROWS], *_range(ranks))
        return download(fmt, views.page_columns(rows, views.PAGE_EXTRA), rows, "intersect", note)
    offset = (page - 1) * PAGE_SIZE
    found = store.intersect(chosen, excluded, ranks.ranking, by_host, PAGE_SIZE + 1, offset)
    rows = found[:PAGE_SIZE]
    names = [url or host or "" for url, host in chosen]
    others = [url or host or "" for url, host in excluded]
    said = (
        f"The {'hosts' if by_host else 'pages'} that link to "
        + ("every one of " if len(names) > 1 else "")
        + ", ".join(f"<b>{escape(name)}</b>" for name in names)
        + (" and to none of " + ", ".join(f"<b>{escape(name)}</b>" for name in others) if others else "")
        + (", best host rank first." if by_host else ", best PageRank first.")
    )
    params = {"target": targets, "not": mine}
    flags = {"host": "1"} if whole else {}
    flags |= {"group": "host"} if by_host else {}

    def link(**more: str) -> str:
        return escape(_url(params, flags | more))

    body = [
        form,
        f"<p>{said}</p>",
        f'<p class="views"><a href="{link(format="csv")}">Download CSV</a> '
        f'<a href="{link(format="json")}">JSON</a></p>',
    ]
    if by_host:
        body.append(_host_table(rows, offset + 1))
    else:
        body.append(rows_table(ranks, rows, offset + 1))
    pager = []
    if page > 1:
        pager.append(f'<a href="{link(page=str(page - 1))}">Previous</a>')
    if len(found) > PAGE_SIZE:
        pager.append(f'<a href="{link(page=str(page + 1))}">Next</a>')
    if pager:
        body.append(f"<p>Page {page}. {' · '.join(pager)}</p>")
    return html_response("Link intersect", "".join(body))


def _url(repeated: dict[str, list[str]], single: dict[str, str]) -> str:
    """/compare with repeated parameters (``proxy_url`` takes one value a name)."""
    pairs = [(name, value) for name, items in repeated.items() for value in items] + list(single.items())
    return proxy_url("/compare") + ("?" + "&".join(f"{k}={quote(v, safe='')}" for k, v in pairs) if pairs else "")


def _host_table(rows: list[dict], start: int) -> str:
    if not rows:
        return "<p>Nothing found.</p>"
    lines = ["<table><tr><th>#</th><th>Host</th><th>Host rank</th><th>Host PageRank</th></tr>"]
    for at, row in enumerate(rows, start):
        its = escape(proxy_url("/backlinks", url=row["host"], host="1"))
        position = "&#8211;" if row["host_position"] is None else f"#{row['host_position']:,}"
        value = "&#8211;" if row["hostrank"] is None else format_score(row["hostrank"])
        lines.append(
            f'<tr data-host="{escape(row["host"])}"><td class="n">{at}</td><td>{escape(row["host"])} '
            f'<small><a href="{its}">its backlinks</a></small></td><td class="n">{position}</td>'
            f'<td class="n">{value}</td></tr>'
        )
    lines.append("</table>")
    return "".join(lines)


def _form(targets: list[str], mine: list[str], whole: bool, group: str) -> str:
    shown = targets + [""] * max(0, min(MAX_TARGETS, max(2, len(targets) + 1)) - len(targets))
    excluded = mine + [""] * max(0, min(MAX_NOT, len(mine) + 1) - len(mine))
    fields = "".join(
        f'<input type="text" name="target" value="{escape(value)}" placeholder="https://competitor.example/" '
        f'aria-label="Target {n}"><br>'
        for n, value in enumerate(shown, 1)
    )
    nots = "".join(
        f'<input type="text" name="not" value="{escape(value)}" placeholder="https://mine.example/" '
        f'aria-label="Not linking to {n}"><br>'
        for n, value in enumerate(excluded, 1)
    )
    return (
        f'<form class="wide" action="{proxy_url("/compare")}" method="get">'
        f"<p>Who links to every one of these</p>{fields}<p>and to none of these</p>{nots}"
        f'<p><label><input type="checkbox" name="host" value="1"{" checked" if whole else ""}> '
        "targets are whole sites (hosts)</label> "
        f'<label><input type="checkbox" name="group" value="host"{" checked" if group == "host" else ""}> '
        "linking hosts, not pages</label></p><button>Compare</button></form>"
    )
