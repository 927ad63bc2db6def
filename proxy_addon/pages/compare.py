"""/compare: link intersect, the pages (or hosts) that link to every target and to none of mine.

``/compare?target=A&target=B[&not=MINE][&host=1][&group=host][&format=csv|json][&ranking=NAME]``: the rows
of :func:`~rankstore.store.analysis.intersect`, as ``rankstore intersect`` gives them; a form enters the targets.
Linking pages come by a page ranking (a host ranking is refused), linking hosts by host rank (``ranking=``
itself when it ranks hosts).
"""

from __future__ import annotations

from urllib.parse import quote

from rankstore import views
from rankstore.store import analysis

from ..markup import escape, format_score, proxy_url
from ..ranks import Ranks
from .layout import FORMATS, NotFound, download, html_response, rows_table, with_ranking
from .params import (
    CSV_ROWS,
    MAX_NOT,
    MAX_TARGETS,
    PAGE_SIZE,
    Query,
    choice,
    flag,
    number,
    page_ranking,
    ranking,
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
    store = ranks.store()
    by_host = group == "host"
    chosen_ranking = ranking(query, store, ranks.ranking) if by_host else page_ranking(query, store, ranks.ranking)
    extra = with_ranking(ranks, chosen_ranking.name)
    form = _form(targets, mine, whole, group, extra)
    if not targets:
        return html_response("Link intersect", form + "<p>Give one target or more.</p>")
    chosen = [target(value, whole) for value in targets]
    excluded = [target(value, whole) for value in mine]
    missing = [
        url or host or ""
        for url, host in chosen + excluded
        if (store.pages.page_id(url) if url is not None else store.hosts.host_id(host or "")) is None
    ]
    if missing:
        raise NotFound(f"Not in the store: {', '.join(missing)}.")
    name = chosen_ranking.name
    if fmt != "html":
        table = views.intersect_view(store, chosen, excluded, name, by_host, CSV_ROWS + 1)
        note = f"the best {CSV_ROWS}; rankstore intersect -n 0 gives all" if len(table.rows) > CSV_ROWS else None
        return download(fmt, table.columns, table.rows[:CSV_ROWS], "intersect", note)
    offset = (page - 1) * PAGE_SIZE
    order = views.intersect_rankings(store, name, by_host)
    notes = views.stale_notes(store, order.ranking) if order.ranking is not None else []
    found = analysis.intersect(
        store, chosen, excluded, name, by_host, PAGE_SIZE + 1, offset, host_ranking=order.host_ranking
    )
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
    flags |= extra

    def link(**more: str) -> str:
        return escape(_url(params, flags | more))

    body = [
        form,
        f"<p>{said}</p>",
        f'<p class="views"><a href="{link(format="csv")}">Download CSV</a> '
        f'<a href="{link(format="json")}">JSON</a></p>',
    ]
    if by_host:
        body.append(_host_table(rows, offset + 1, extra))
    else:
        body.append(rows_table(ranks, rows, chosen_ranking, offset + 1))
    pager = []
    if page > 1:
        pager.append(f'<a href="{link(page=str(page - 1))}">Previous</a>')
    if len(found) > PAGE_SIZE:
        pager.append(f'<a href="{link(page=str(page + 1))}">Next</a>')
    if pager:
        body.append(f"<p>Page {page}. {' · '.join(pager)}</p>")
    return html_response("Link intersect", "".join(body), notes)


def _url(repeated: dict[str, list[str]], single: dict[str, str]) -> str:
    """/compare with repeated parameters (``proxy_url`` takes one value a name)."""
    pairs = [(name, value) for name, items in repeated.items() for value in items] + list(single.items())
    return proxy_url("/compare") + ("?" + "&".join(f"{k}={quote(v, safe='')}" for k, v in pairs) if pairs else "")


def _host_table(rows: list[dict], start: int, extra: dict[str, str]) -> str:
    if not rows:
        return "<p>Nothing found.</p>"
    lines = ["<table><tr><th>#</th><th>Host</th><th>Host rank</th><th>Host PageRank</th></tr>"]
    for at, row in enumerate(rows, start):
        its = escape(proxy_url("/backlinks", url=row["host"], host="1"))
        position = "&#8211;" if row["host_rank"] is None else f"#{row['host_rank']:,}"
        value = "&#8211;" if row["host_pagerank"] is None else format_score(row["host_pagerank"])
        lines.append(
            f'<tr data-host="{escape(row["host"])}"><td class="n">{at}</td><td>{escape(row["host"])} '
            f'<small><a href="{its}">its backlinks</a></small></td><td class="n">{position}</td>'
            f'<td class="n">{value}</td></tr>'
        )
    lines.append("</table>")
    return "".join(lines)


def _form(targets: list[str], mine: list[str], whole: bool, group: str, extra: dict[str, str]) -> str:
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
        "linking hosts, not pages</label></p>"
        + "".join(f'<input type="hidden" name="{key}" value="{escape(value)}">' for key, value in extra.items())
        + "<button>Compare</button></form>"
    )
