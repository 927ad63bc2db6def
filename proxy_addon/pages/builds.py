"""/builds: every build with the links it found new and those it lost (the rows of ``rankstore builds``).

With ``url=U`` (and ``host=1`` for a whole site) each build links to U's
backlinks new since the build before it, and to those lost since.
"""

from __future__ import annotations

from rankstore import views

from ..markup import escape, proxy_url
from ..ranks import Ranks
from .layout import FORMATS, NotFound, PagesUnranked, download, html_response, with_ranking
from .params import Query, choice, first, flag, ranking, target

__all__ = ["builds"]


def builds(ranks: Ranks, query: Query):
    whole = flag(query, "host")
    value = first(query, "url").strip()
    fmt = choice(query, "format", FORMATS)
    store = ranks.store()
    try:
        extra = with_ranking(ranks, ranking(query, store, ranks.ranking).name)  # carried to the backlinks' links
    except PagesUnranked:  # the builds stand without a page ranking; their backlinks' links say so
        extra = {}
    url = host = None
    if value:
        url, host = target(value, whole)
        if (store.pages.page_id(url) if url is not None else store.hosts.host_id(host or "")) is None:
            raise NotFound(f"{url or host} is not in the store.")
    view = views.builds_view(store)
    rows = view.rows
    if fmt != "html":
        return download(fmt, view.columns, rows, "builds")
    subject = url or host
    form = (
        f'<form action="{proxy_url("/builds")}" method="get"><input type="url" name="url" '
        f'value="{escape(value)}" placeholder="https://example.com/" aria-label="Backlinks of"> '
        f'<label><input type="checkbox" name="host" value="1"{" checked" if whole else ""}> whole site</label> '
        + "".join(f'<input type="hidden" name="{key}" value="{escape(value)}">' for key, value in extra.items())
        + "<button>Show its new and lost backlinks</button></form>"
    )
    head = (
        "<table><tr><th>Build</th><th>Started</th><th>Finished</th><th>Status</th><th>Pages</th><th>Links</th>"
        "<th>New links</th><th>Lost links</th>"
        + (f"<th>Backlinks of {escape(subject)}</th>" if subject else "")
        + "</tr>"
    )
    lines = [head]
    previous = None
    for row in rows:
        cell = ""
        if subject:
            params = {"url": subject} | ({"host": "1"} if host else {}) | extra
            if previous is None:
                cell = f'<td><a href="{escape(proxy_url("/backlinks", **params))}">all</a></td>'
            else:
                since = str(previous)
                new = escape(proxy_url("/backlinks", **params, since=since))
                links = [f'<a href="{new}">new since build {since}</a>']
                if host is None:
                    links.append(
                        f'<a href="{escape(proxy_url("/backlinks", **params, lost="1", since=since))}">'
                        f"lost since build {since}</a>"
                    )
                cell = f"<td>{' · '.join(links)}</td>"
        lines.append(
            f'<tr data-build="{int(row["build"])}"><td class="n">{int(row["build"])}</td>'
            f"<td>{escape(str(row['started_at'] or ''))}</td><td>{escape(str(row['finished_at'] or ''))}</td>"
            f'<td>{escape(str(row["status"]))}</td><td class="n">{row["pages"]:,}</td>'
            f'<td class="n">{row["links"]:,}</td><td class="n">{row["new_links"]:,}</td>'
            f'<td class="n">{row["lost_links"]:,}</td>{cell}</tr>'
        )
        previous = row["build"]
    lines.append("</table>")
    note = (
        ""
        if subject
        else "<p><small>Give a page (or a whole site) to link each build to its new and lost backlinks.</small></p>"
    )
    csv_link = escape(proxy_url("/builds", format="csv"))
    json_link = escape(proxy_url("/builds", format="json"))
    table = "".join(lines) if rows else "<p>No builds.</p>"
    body = form + note + table + f'<p><a href="{csv_link}">Download CSV</a> · <a href="{json_link}">JSON</a></p>'
    return html_response("Builds", body)
