"""/history: a target over time, in pictures with their numbers a click away (``rankstore history``'s rows).

``/history?url=U``            a page: its referring hosts over builds (new and lost as bars), its place over
                              the ranking's versions, its anchor texts, and its linking pages by toolbar score
``&host=1``                   U is a host (or a URL of it): the whole host
``/history?site=S``           a site (a registered domain): its referring sites over builds, and the rest
``&ranking=NAME``             the ranking of the target's level (default: the proxy's for a page, else
                              ``hostrank``/``siterank``)
``&format=csv|json``          the numbers: ``what=history`` (default; the CLI's rows), ``anchors`` or ``profile``

The pictures are drawn here as SVG (:mod:`.charts`): no script, nothing fetched, inside the pages' policy.
"""

from __future__ import annotations

from rankstore import views
from rankstore.store import StoreError, analysis
from rankstore.store.history import TargetHistory
from rankstore.urls import canonical, host_of

from ..markup import escape, proxy_url
from ..ranks import Ranks
from . import charts
from .layout import FORMATS, BadRequest, NotFound, download, html_response
from .params import Query, choice, first, flag, target

__all__ = ["history"]

WHAT = ("history", "anchors", "profile")  # what=: the numbers behind each picture
ANCHORS_SHOWN = 12  # anchor texts drawn (the CSV has them all, as `rankstore anchors -n 0`)
ANCHORS_MOST = 10_000


def history(ranks: Ranks, query: Query):
    fmt = choice(query, "format", FORMATS)
    what = choice(query, "what", WHAT)
    url, host, site = _target(query)
    store = ranks.store()
    given = first(query, "ranking").strip()
    named = given or (ranks.ranking if url is not None else None)
    page_ranking = given or ranks.ranking
    try:
        table, found = views.history_view(store, url, host, site, named)
    except StoreError as error:
        raise NotFound(str(error)) from None
    if fmt != "html":
        if what == "anchors":
            if url is None:
                raise BadRequest("what=anchors is a page's: give url= without host=1.")
            rows = _anchors(store, url, page_ranking, ANCHORS_MOST)
            return download(fmt, ["anchor", "links", "contribution"], rows, "anchors")
        if what == "profile":
            profile = _profile(store, page_ranking, url, host, site)
            return download(fmt, profile.columns, profile.rows, "profile")
        return download(fmt, table.columns, table.rows, "history")
    subject = found.target
    params: dict[str, str] = (
        {"url": url} if url is not None else {"url": host, "host": "1"} if host else {"site": site or ""}
    )
    extra = {"ranking": given} if given else {}
    body = [_form(url or host or "", bool(host))]
    body.append(_referrers_chart(found))
    body.append(_rank_chart(found))
    body.append(_numbers("history", params | extra))
    if url is not None:
        anchors = sorted(_anchors(store, url, page_ranking, ANCHORS_MOST), key=lambda row: -row["links"])
        drawn = [charts.Bar(row["anchor"], row["links"]) for row in anchors[:ANCHORS_SHOWN]]  # the commonest
        body.append(charts.bars(f"Anchor texts of the links to {subject}", drawn, "links"))
        body.append(_numbers("anchors", params | extra))
    profile = _profile(store, page_ranking, url, host, site)
    if not any(row["pages"] for row in profile.rows):
        body.append(f"<p>No page from outside {escape(subject)} links to it now.</p>")
    else:
        columns = [charts.Bar(str(row["toolbar"]), row["pages"]) for row in profile.rows]
        body.append(charts.columns(f"Pages linking to {subject}, by toolbar score (0-10)", columns, "pages"))
        body.append(_numbers("profile", params | extra))
    body.append(_table(found))
    backlinks = proxy_url("/backlinks", **params, **extra)
    body.append(f'<p><a href="{escape(backlinks)}">Its backlinks now</a></p>')
    return html_response(f"History of {subject}", "".join(body), table.notes)


def _target(query: Query) -> tuple[str | None, str | None, str | None]:
    """(url, host, site): one of them, from url= (host=1) or site=."""
    value, named = first(query, "url").strip(), first(query, "site").strip()
    if named:
        if value:
            raise BadRequest("Give url= (with host=1 for a whole host) or site=, not both.")
        normal = canonical(named if "://" in named else f"http://{named}/")
        if normal is None:
            raise BadRequest("Give a site as a registered domain: /history?site=example.com.")
        return None, None, host_of(normal)
    if not value:
        raise BadRequest("Give url= (a page; host=1 for a whole host) or site= (a registered domain).")
    url, host = target(value, flag(query, "host"))
    return url, host, None


def _anchors(store, url: str, name: str, limit: int) -> list[dict]:
    try:
        return analysis.anchors(store, url, name, limit)
    except StoreError:  # no page ranking: no anchors by what they pass
        return []


def _profile(store, name: str, url: str | None, host: str | None, site: str | None) -> views.Table:
    try:
        return views.profile_view(store, name, url, host, site)
    except StoreError:  # the store ranks no pages (a domain graph): no linking pages to count
        return views.Table([], views.PROFILE_COLUMNS)


def _form(value: str, whole: bool) -> str:
    return (
        f'<form action="{proxy_url("/history")}" method="get"><input type="url" name="url" '
        f'value="{escape(value)}" placeholder="https://example.com/" aria-label="History of"> '
        f'<label><input type="checkbox" name="host" value="1"{" checked" if whole else ""}> whole host</label> '
        "<button>Show its history</button></form>"
    )


def _numbers(what: str, params: dict[str, str]) -> str:
    csv_link = escape(proxy_url("/history", **params, what=what, format="csv"))
    json_link = escape(proxy_url("/history", **params, what=what, format="json"))
    return f'<p><small>The numbers: <a href="{csv_link}">CSV</a> · <a href="{json_link}">JSON</a></small></p>'


def _referrers_chart(found: TargetHistory) -> str:
    if not found.builds:
        return "<p>No builds yet.</p>"
    labels = [str(point.build) for point in found.builds]
    if found.level == "site":
        totals = [point.referring_sites for point in found.builds]
        new = [point.new_sites for point in found.builds]
        lost = [point.lost_sites for point in found.builds]
        unit = "referring sites"
    else:
        totals = [point.referring_hosts for point in found.builds]
        new = [point.new_hosts for point in found.builds]
        lost = [point.lost_hosts for point in found.builds]
        unit = "referring hosts"
    return charts.changes_over_builds(
        f"{unit.capitalize()} of {found.target}, by build", labels, totals, new, lost, unit
    )


def _rank_chart(found: TargetHistory) -> str:
    shown = [point for point in found.ranks if point.kept]
    if not shown:
        return f"<p>No version of {escape(found.ranking)} ranks it.</p>"
    return charts.place_over_versions(
        f"Place of {found.target} in {found.ranking}, by version",
        [str(point.version) for point in shown],
        [point.place for point in shown],
        [point.nodes for point in shown],
    )


def _table(found: TargetHistory) -> str:
    lines = [
        "<table><tr><th>Build</th><th>Started</th><th>Backlinks</th><th>New</th><th>Lost</th>"
        "<th>Referring hosts</th><th>New</th><th>Lost</th><th>Referring sites</th><th>New</th><th>Lost</th></tr>"
    ]
    for point in found.builds:
        cells = [
            point.backlinks, point.new_backlinks, point.lost_backlinks, point.referring_hosts, point.new_hosts,
            point.lost_hosts, point.referring_sites, point.new_sites, point.lost_sites,
        ]  # fmt: skip
        lines.append(
            f'<tr data-build="{point.build}"><td class="n">{point.build}</td>'
            f"<td>{escape(point.started_at or '')}</td>" + "".join(f'<td class="n">{cell:,}</td>' for cell in cells)
        )
        lines.append("</tr>")
    lines.append("</table>")
    return "".join(lines)
