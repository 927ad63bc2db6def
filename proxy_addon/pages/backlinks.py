"""/backlinks: a page's (or a whole site's) backlinks, as the library's analyst views give them.

One page, several views of the same target, each a shareable URL:

``/backlinks?url=U``                 linking pages with PageRank, host rank, contribution and share, then
                                     the shares of the random jump and of pages without out-links
``&sort=contribution``               the links that give U the most first (default ``pagerank``)
``&since=BUILD|DATE``                only links new since that build (a number from /builds, or a UTC date)
``&lost=1``                          links a recrawl no longer found (with ``since``: lost after it)
``&group=host``                      referring hosts: linking pages, best page, host rank, summed contribution
``&group=site``                      referring sites: linking hosts and pages, best page, site rank, contribution
``&host=1``                          U is a host (or any URL of it): the backlinks of the whole host
``/backlinks?site=S``                S a site (a registered domain): the links into any of its hosts from other
                                     sites; ``&group=site`` folds them into referring sites by site rank; a
                                     store of a domain graph (no pages) lists the sites its site links give
``&format=csv|json``                 the same view as the CLI's ``--format csv|json`` writes it, same columns
``&with_shares=1``                   format=csv: the share lines too, as the CLI's ``--with-shares``
``&ranking=NAME``                    another page ranking than the proxy's own (a host ranking is refused)

Rows come from :func:`~rankstore.store.analysis.backlink_report`,
:func:`~rankstore.store.analysis.lost_backlinks`,
:func:`~rankstore.store.analysis.referring_hosts`, ``referring_sites`` and ``site_link_referrers``: the CLI's
rows, rendered here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rankstore import views
from rankstore.choices import GROUPS
from rankstore.store import StoreError, analysis
from rankstore.store.analysis import SORTS
from rankstore.urls import canonical, host_of, site_of

from ..markup import bar, escape, format_score, proxy_url
from ..ranks import Ranks
from .layout import (
    FORMATS,
    BadRequest,
    NotFound,
    PagesUnranked,
    download,
    html_response,
    infos,
    page_cell,
    score,
    share,
    unreached,
)
from .params import (
    CSV_ROWS,
    MAX_SINCE,
    PAGE_SIZE,
    Query,
    choice,
    first,
    flag,
    number,
    page_ranking,
    ranking,
    target,
)

__all__ = ["backlinks", "View", "parse_since"]

_DASH = "&#8211;"


@dataclass(frozen=True)
class View:
    """One view of a target's backlinks, as its URL's parameters say it."""

    value: str  # the target as given: a URL, a host with ``host=1``, or a site
    url: str | None
    host: str | None
    site: str | None = None  # a whole site (``site=``)
    sort: str = "pagerank"
    since_text: str = ""
    since: int | None = None
    lost: bool = False
    group: str = "page"
    page: int = 1
    fmt: str = "html"
    with_shares: bool = False  # format=csv: the share lines too, as `rankstore backlinks --with-shares`
    ranking: str = ""  # a page ranking other than the proxy's own, named in every link; "" for its own
    levels: analysis.LevelOrder | None = None  # the store ranks no pages: its hosts' (else sites') ranks order

    @property
    def target(self) -> str:
        return self.url or self.host or self.site or ""

    @property
    def extra(self) -> dict[str, str]:
        """What every link from this view carries besides its own parameters: the ranking, if not the proxy's."""
        return {"ranking": self.ranking} if self.ranking else {}

    def link(self, **changes) -> str:
        """The URL of this view with ``changes`` (escaped for an attribute); another view starts at page 1."""
        view = replace(self, **({"page": 1} | changes))
        params = {"site": view.site} if view.site else {"url": view.target}
        if view.host:
            params["host"] = "1"
        if view.sort != "pagerank":
            params["sort"] = view.sort
        if view.since_text:
            params["since"] = view.since_text
        if view.lost:
            params["lost"] = "1"
        if view.group != "page":
            params["group"] = view.group
        if view.page > 1:
            params["page"] = str(view.page)
        if view.fmt != "html":
            params["format"] = view.fmt
        if view.with_shares:
            params["with_shares"] = "1"
        return escape(proxy_url("/backlinks", **params, **view.extra))


def parse_since(store, text: str) -> int | None:
    """A build id from since=BUILD|DATE, read as ``rankstore backlinks --since`` reads it."""
    if not text:
        return None
    if len(text) > MAX_SINCE:
        raise BadRequest(f"since can be at most {MAX_SINCE} characters long.")
    try:
        return analysis.since_build(store, text)
    except StoreError:  # its message names the build or the form; ours says the same without store text
        raise BadRequest(
            "since must be a build number that /builds lists, or a UTC date (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ)."
        ) from None


def _parse(ranks: Ranks, query: Query) -> View:
    whole = flag(query, "host")
    value = first(query, "url").strip()
    named = first(query, "site").strip()
    site = None
    if named:
        if value or whole:
            raise BadRequest("Give url= (with host=1 for a whole host) or site=, not both.")
        normal = canonical(named if "://" in named else f"http://{named}/")
        if normal is None:
            raise BadRequest("Give a site as a registered domain: /backlinks?site=example.com.")
        url, host, site, value = None, None, host_of(normal), named
    elif not value:
        raise BadRequest(
            "Give an http(s) URL: /backlinks?url=https://example.com/ (add host=1 for a whole host), "
            "or a site: /backlinks?site=example.com."
        )
    else:
        url, host = target(value, whole)
    view = View(
        value,
        url,
        host,
        site,
        sort=choice(query, "sort", SORTS),
        since_text=first(query, "since").strip(),
        lost=flag(query, "lost"),
        group=choice(query, "group", GROUPS),
        page=number(query, "page", 1),
        fmt=choice(query, "format", FORMATS),
        with_shares=flag(query, "with_shares"),
    )
    if view.lost and (host is not None or site is not None or view.group != "page"):
        raise BadRequest(
            "lost=1 lists the pages that linked to one URL: not with host=1 or group=host (nor site= or group=site)."
        )
    store = ranks.store()
    if site is not None:
        try:
            site_id = analysis.site_number(store, site)
        except StoreError:
            raise NotFound(f"{site} is not in the store.") from None
        view = replace(view, site=store.sites.site_names([site_id]).get(site_id, site))
        if views.holds_no_pages(store):  # a domain graph: its site links answer, by a site ranking
            if view.since_text or view.sort != "pagerank":
                raise BadRequest("This store holds a domain graph's site links, no pages: no since= or sort= here.")
            try:
                chosen = ranking(query, store, ranks.ranking)
                named_ranking = chosen.name if chosen.level == "site" and chosen.name != ranks.ranking else ""
            except PagesUnranked:  # the proxy's own page ranking, which such a store has not
                named_ranking = ""
            return replace(view, ranking=named_ranking)
    try:
        chosen = page_ranking(query, store, ranks.ranking)
    except PagesUnranked:  # links extracted from a crawl, say, with Common Crawl's host ranks: those order them
        asked = first(query, "ranking") or views.holds_no_pages(store)  # a domain graph has no pages to list
        order = None if asked else views.level_order(store, views.DEFAULT_RANKING)
        if order is None or view.lost or view.group != "page" or view.sort != "pagerank":
            raise
        view = replace(view, levels=order)
    else:
        view = replace(view, ranking="" if chosen.name == ranks.ranking else chosen.name)
    if (url is not None and store.pages.page_id(url) is None) or (
        host is not None and store.hosts.host_id(host) is None
    ):
        raise NotFound(f"{view.target} is not in the store.")
    return replace(view, since=parse_since(store, view.since_text))


def backlinks(ranks: Ranks, query: Query):
    view = _parse(ranks, query)
    if view.site is not None and views.holds_no_pages(ranks.store()):
        return _site_links(ranks, view)
    if view.levels is not None:
        return _level_report(ranks, view, view.levels)
    if view.lost:
        return _lost(ranks, view)
    if view.group == "host":
        return _hosts(ranks, view)
    if view.group == "site":
        return _sites(ranks, view)
    return _report(ranks, view)


# ------------------------------------------------------------------ the views


def _name(ranks: Ranks, view: View) -> str:
    return view.ranking or ranks.ranking


def _report(ranks: Ranks, view: View):
    store = ranks.store()
    name = _name(ranks, view)
    if view.fmt != "html":
        table, report = views.backlinks_view(
            store, view.url, view.host, name, view.sort, view.since, CSV_ROWS, site=view.site
        )
        shown = len(report.rows) + len(report.nofollow_rows)
        said = f"the best {CSV_ROWS} by {view.sort}; rankstore backlinks -n 0 gives all"
        note = said if shown < report.backlinks else None
        return download(view.fmt, table.columns, table.rows, "backlinks", note, table.shares, view.with_shares)
    offset = (view.page - 1) * PAGE_SIZE
    table, report = views.backlinks_view(
        store, view.url, view.host, name, view.sort, view.since, PAGE_SIZE, offset, site=view.site
    )
    listed = report.rows + report.nofollow_rows
    own_host = None if view.site is not None else view.host or host_of(view.target)
    hosts = analysis.host_ranks(store, [host_of(row["url"]) for row in listed] + ([own_host] if own_host else []))
    own = hosts.get(own_host) if own_host else None
    about = (
        f"PageRank {score(report.pagerank)}"
        + (f", host rank #{own[1]:,} ({format_score(own[0])})" if own else "")
        + f"; {report.backlinks:,} {'new ' if view.since is not None else ''}"
        + ("backlink" if report.backlinks == 1 else "backlinks")
        + (f" since build {view.since}" if view.since is not None else "")
        + (", best PageRank first." if view.sort == "pagerank" else ", those that give the most first.")
    )
    body = [_heading(view, about), _views(view)]
    if report.rows:
        body.append(_link_table(ranks, view, report.rows, hosts, offset + 1))
    else:
        body.append("<p>No followed backlinks in this view.</p>")
    if view.since is None and report.links_share is not None:
        body.append(_shares(report, view))
    if report.nofollow_rows:
        body.append(
            "<h2>Nofollow links</h2><p>They pass no PageRank (contribution 0); the best "
            f"{len(report.nofollow_rows)} by PageRank.</p>"
        )
        body.append(_link_table(ranks, view, report.nofollow_rows, hosts, 1, nofollow=True))
    body.append(_pager(view, len(report.rows) == PAGE_SIZE))
    title = "New backlinks" if view.since is not None else "Backlinks"
    return html_response(
        f"{title} by {'PageRank' if view.sort == 'pagerank' else 'contribution'}", "".join(body), table.notes
    )


def _level_report(ranks: Ranks, view: View, order: analysis.LevelOrder):
    """The backlinks of a store that ranks no pages, by their host's rank, else their site's."""
    store = ranks.store()
    limit, offset = (CSV_ROWS, 0) if view.fmt != "html" else (PAGE_SIZE, (view.page - 1) * PAGE_SIZE)
    table, report = views.level_backlinks_view(store, order, view.url, view.host, view.site, view.since, limit, offset)
    if view.fmt != "html":
        said = f"the best {CSV_ROWS} by host or site rank; rankstore backlinks -n 0 gives all"
        note = said if len(report.rows) < report.backlinks else None
        return download(view.fmt, table.columns, table.rows, "backlinks", note)
    about = (
        f"{report.backlinks:,} {'new ' if view.since is not None else ''}"
        + ("backlink" if report.backlinks == 1 else "backlinks")
        + (f" since build {view.since}" if view.since is not None else "")
        + ", by their host's rank, else their site's."
    )
    body = [_heading(view, about)]
    if report.rows:
        lines = ["<table><tr><th>#</th><th>Placed by</th><th>Score</th><th>Linking page</th><th>Anchor</th>"
                 "<th>First seen</th></tr>"]  # fmt: skip
        for at, row in enumerate(report.rows, offset + 1):
            level = (
                f"{escape(row['level'])} #{row['level_rank']:,} <small>{escape(row['answered_by'])}</small>"
                if row["level"]
                else "unranked"
            )
            kind = " <small>(nofollow)</small>" if row["nofollow"] else ""
            lines.append(
                f'<tr data-url="{escape(row["url"])}"><td class="n">{at}</td><td>{level}</td>'
                f'<td class="n">{format_score(row["estimate"]) if row["level"] else _DASH}</td>'
                + page_cell(row, kind)
                + f'<td>{escape(row["anchor"] or "")}{_to(row)}</td><td class="n">{_build(row["first_seen"])}</td></tr>'
            )
        lines.append("</table>")
        body.append("".join(lines))
    else:
        body.append("<p>No backlinks in this view.</p>")
    body.append(_pager(view, len(report.rows) == PAGE_SIZE))
    return html_response("Backlinks by host and site rank", "".join(body), table.notes)


def _to(row: dict) -> str:
    """Which of the target's pages a link goes to, where the target is a host or a site."""
    target = row.get("target")
    return f'<br><small>to <a href="{escape(target)}">{escape(target)}</a></small>' if target else ""


def _lost(ranks: Ranks, view: View):
    store = ranks.store()
    name = _name(ranks, view)
    assert view.url is not None
    if view.fmt != "html":
        table = views.lost_view(store, view.url, name, view.since, CSV_ROWS + 1)
        said = f"the best {CSV_ROWS} by PageRank; rankstore backlinks --lost -n 0 gives all"
        note = said if len(table.rows) > CSV_ROWS else None
        return download(view.fmt, table.columns, table.rows[:CSV_ROWS], "lost-backlinks", note)
    offset = (view.page - 1) * PAGE_SIZE
    found = analysis.lost_backlinks(store, view.url, name, view.since, PAGE_SIZE + 1, offset)
    notes = views.stale_notes(store, store.rankings.page_ranking(name))
    rows = found[:PAGE_SIZE]
    about = (
        "Links that a recrawl of their page no longer found (and that have not come back)"
        + (f", lost after build {view.since}" if view.since is not None else "")
        + "; best PageRank of the linking page first."
    )
    body = [_heading(view, about), _views(view)]
    if rows:
        lines = [
            "<table><tr><th>#</th><th>PageRank</th><th>First seen</th><th>Last seen</th><th>Lost in</th>"
            "<th>Linking page</th></tr>"
        ]
        for at, (row, info) in enumerate(zip(rows, infos(ranks, rows, store.rankings.page_ranking(name))), offset + 1):
            lines.append(
                f'<tr data-pagerank="{_data(row["pagerank"])}" data-url="{escape(row["url"])}"><td class="n">{at}</td>'
                f'<td class="n">{bar(info)}{format_score(info.pagerank)}{unreached(info)}</td>'
                f'<td class="n">{_build(row["first_seen"])}</td><td class="n">{_build(row["last_seen"])}</td>'
                f'<td class="n">{_build(row["lost_in"])}</td>' + page_cell(row, ranking=view.extra) + "</tr>"
            )
        lines.append("</table>")
        body.append("".join(lines))
    else:
        body.append("<p>No lost backlinks in this view.</p>")
    body.append(_pager(view, len(found) > PAGE_SIZE))
    return html_response("Lost backlinks", "".join(body), notes)


def _hosts(ranks: Ranks, view: View):
    store = ranks.store()
    name = _name(ranks, view)
    if view.fmt != "html":
        table = views.referring_hosts_view(
            store, view.url, view.host, name, view.sort, view.since, CSV_ROWS + 1, site=view.site
        )
        said = f"the best {CSV_ROWS} hosts; rankstore backlinks --group-by host -n 0 gives all"
        note = said if len(table.rows) > CSV_ROWS else None
        return download(view.fmt, table.columns, table.rows[:CSV_ROWS], "referring-hosts", note)
    offset = (view.page - 1) * PAGE_SIZE
    table = views.referring_hosts_view(
        store, view.url, view.host, name, view.sort, view.since, PAGE_SIZE + 1, offset, site=view.site
    )
    found = table.rows
    rows = found[:PAGE_SIZE]
    about = _referrers_about(view, "host", any(row["host_pagerank"] is not None for row in rows))
    body = [_heading(view, about), _views(view)]
    if rows:
        lines = [
            "<table><tr><th>#</th><th>Host</th><th>Host rank</th><th>Linking pages</th><th>Links</th>"
            "<th>Contribution</th><th>Share</th><th>Best linking page</th></tr>"
        ]
        for at, row in enumerate(rows, offset + 1):
            its = escape(proxy_url("/backlinks", url=row["host"], host="1", **view.extra))
            position = _DASH if row["host_rank"] is None else f"#{row['host_rank']:,}"
            lines.append(
                f'<tr data-host="{escape(row["host"])}" data-contribution="{_data(row["contribution"])}">'
                f'<td class="n">{at}</td><td>{escape(row["host"])}<br><small><a href="{its}">its backlinks</a>'
                f'</small></td><td class="n">{position}<br><small>{score(row["host_pagerank"])}</small></td>'
                f'<td class="n">{row["pages"]:,}</td><td class="n">{row["links"]:,}</td>'
                f'<td class="n">{score(row["contribution"])}</td><td class="n">{share(row["share"])}</td>'
                f'<td><a href="{escape(row["best_url"])}">{escape(row["best_url"])}</a>'
                f"<br><small>PageRank {score(row['best_pagerank'])}</small></td></tr>"
            )
        lines.append("</table>")
        body.append("".join(lines))
    else:
        body.append("<p>No referring hosts in this view.</p>")
    body.append(_pager(view, len(found) > PAGE_SIZE))
    return html_response("Referring hosts", "".join(body), table.notes)


def _sites(ranks: Ranks, view: View):
    store = ranks.store()
    name = _name(ranks, view)
    since = view.since

    def table_of(limit: int, offset: int = 0) -> views.Table:
        return views.referring_sites_view(store, view.url, view.host, view.site, name, view.sort, since, limit, offset)

    if view.fmt != "html":
        table = table_of(CSV_ROWS + 1)
        said = f"the best {CSV_ROWS} sites; rankstore backlinks --group-by site -n 0 gives all"
        note = said if len(table.rows) > CSV_ROWS else None
        return download(view.fmt, table.columns, table.rows[:CSV_ROWS], "referring-sites", note)
    offset = (view.page - 1) * PAGE_SIZE
    table = table_of(PAGE_SIZE + 1, offset)
    rows = table.rows[:PAGE_SIZE]
    about = _referrers_about(view, "site", any(row["site_pagerank"] is not None for row in rows))
    body = [_heading(view, about), _views(view)]
    if rows:
        lines = [
            "<table><tr><th>#</th><th>Site</th><th>Site rank</th><th>Linking hosts</th><th>Linking pages</th>"
            "<th>Links</th><th>Contribution</th><th>Share</th><th>Best linking page</th></tr>"
        ]
        for at, row in enumerate(rows, offset + 1):
            its = escape(proxy_url("/backlinks", site=row["site"], group="site", **view.extra))
            position = _DASH if row["site_rank"] is None else f"#{row['site_rank']:,}"
            lines.append(
                f'<tr data-site="{escape(row["site"])}" data-contribution="{_data(row["contribution"])}">'
                f'<td class="n">{at}</td><td>{escape(row["site"])}<br><small><a href="{its}">its backlinks</a>'
                f'</small></td><td class="n">{position}<br><small>{score(row["site_pagerank"])}</small></td>'
                f'<td class="n">{row["hosts"]:,}</td><td class="n">{row["pages"]:,}</td>'
                f'<td class="n">{row["links"]:,}</td>'
                f'<td class="n">{score(row["contribution"])}</td><td class="n">{share(row["share"])}</td>'
                f'<td><a href="{escape(row["best_url"])}">{escape(row["best_url"])}</a>'
                f"<br><small>PageRank {score(row['best_pagerank'])}</small></td></tr>"
            )
        lines.append("</table>")
        body.append("".join(lines))
    else:
        body.append("<p>No referring sites in this view.</p>")
    body.append(_pager(view, len(table.rows) > PAGE_SIZE))
    return html_response("Referring sites", "".join(body), table.notes)


def _site_links(ranks: Ranks, view: View):
    """A site's referring sites where the store holds no pages (a domain graph): its site links, by site rank."""
    store = ranks.store()
    assert view.site is not None
    name = view.ranking or ranks.ranking
    if view.fmt != "html":
        table = views.site_links_view(store, view.site, name, CSV_ROWS + 1)
        said = f"the best {CSV_ROWS} sites; rankstore backlinks --site -n 0 gives all"
        note = said if len(table.rows) > CSV_ROWS else None
        return download(view.fmt, table.columns, table.rows[:CSV_ROWS], "referring-sites", note)
    offset = (view.page - 1) * PAGE_SIZE
    table = views.site_links_view(store, view.site, name, PAGE_SIZE + 1, offset)
    rows = table.rows[:PAGE_SIZE]
    body = [
        f"<p>Backlinks of the site <b>{escape(view.site)}</b>.<br>The store holds a domain graph and no pages: "
        "the sites whose links it names, best site rank first.</p>",
        f'<p class="views"><a href="{view.link(fmt="csv")}">Download CSV</a> '
        f'<a href="{view.link(fmt="json")}">JSON</a></p>',
    ]
    if rows:
        lines = ["<table><tr><th>#</th><th>Site</th><th>Site rank</th><th>Site PageRank</th></tr>"]
        for at, row in enumerate(rows, offset + 1):
            its = escape(proxy_url("/backlinks", site=row["site"], **view.extra))
            position = _DASH if row["site_rank"] is None else f"#{row['site_rank']:,}"
            lines.append(
                f'<tr data-site="{escape(row["site"])}"><td class="n">{at}</td><td>{escape(row["site"])}'
                f'<br><small><a href="{its}">its backlinks</a></small></td><td class="n">{position}</td>'
                f'<td class="n">{score(row["site_pagerank"])}</td></tr>'
            )
        lines.append("</table>")
        body.append("".join(lines))
    else:
        body.append("<p>No site links into it in the store.</p>")
    body.append(_pager(view, len(table.rows) > PAGE_SIZE))
    notes = [note for note in table.notes if not note.startswith("the store holds no pages")]
    return html_response("Referring sites", "".join(body), notes)


# ------------------------------------------------------------------ parts


def _data(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def _build(value: int | None) -> str:
    return _DASH if value is None else f"{value:,}"


def _heading(view: View, about: str) -> str:
    if view.site is not None:
        what = f"the whole site <b>{escape(view.site)}</b> (links into any of its hosts from other sites)"
    elif view.host is not None:
        what = f"the whole host <b>{escape(view.host)}</b> (links from other hosts)"
    else:
        assert view.url is not None
        what = f'<a href="{escape(view.url)}">{escape(view.url)}</a>'
    return f"<p>Backlinks of {what}.<br>{escape(about)}</p>"


def _referrers_about(view: View, level: str, ranked: bool) -> str:
    """What a referring hosts' (sites') view lists, in what order."""
    order = (
        f"the {level}s that give the most first"
        if view.sort == "contribution"
        else f"best {level} rank first"
        if ranked
        else "best linking page first"
    )
    since = f" (links new since build {view.since})" if view.since is not None else ""
    return f"The {level}s whose pages link here{since}; {order}."


def _views(view: View) -> str:
    """Links to the other views of the same target, and a form for since; the current view is in bold."""

    def item(label: str, current: bool, **changes) -> str:
        return f"<b>{escape(label)}</b>" if current else f'<a href="{view.link(**changes)}">{escape(label)}</a>'

    modes = [item("Linking pages", not view.lost and view.group == "page", lost=False, group="page")]
    modes.append(item("Referring hosts", view.group == "host", lost=False, group="host"))
    modes.append(item("Referring sites", view.group == "site", lost=False, group="site"))
    if view.url is not None:
        modes.append(item("Lost links", view.lost, lost=True, group="page"))
    if not view.lost:
        modes.append(item("By PageRank", view.sort == "pagerank", sort="pagerank"))
        modes.append(item("By contribution", view.sort == "contribution", sort="contribution"))
    if view.since is not None:
        modes.append(item("All, not only new" if not view.lost else "Lost in any build", False, since_text=""))
    if view.url is not None:
        modes.append(item("Whole host", False, url=None, host=host_of(view.url), lost=False))
    if view.site is None:  # the registered domain's whole site, every host of it
        own_host = host_of(view.url) if view.url is not None else view.target
        modes.append(item("Whole site", False, url=None, host=None, site=site_of(own_host), lost=False))
    whole = ({"host": "1"} if view.host is not None else {}) | view.extra
    builds = proxy_url("/builds", url=view.target, **whole) if view.site is None else proxy_url("/builds", **view.extra)
    if view.site is None:  # /compare and /builds take pages and hosts
        modes.append(f'<a href="{escape(proxy_url("/compare", target=view.target, **whole))}">Compare</a>')
        modes.append(f'<a href="{escape(builds)}">Builds</a>')
    # a host's or a site's history is ranked by its own level's ranking, not the page ranking chosen here
    over_time = (
        {"site": view.site}
        if view.site is not None
        else {"url": view.target, **({"host": "1"} if view.host is not None else view.extra)}
    )
    modes.append(f'<a href="{escape(proxy_url("/history", **over_time))}">History</a>')
    modes.append(f'<a href="{view.link(fmt="csv")}">Download CSV</a>')
    modes.append(f'<a href="{view.link(fmt="json")}">JSON</a>')
    hidden = [("site", view.site)] if view.site is not None else [("url", view.target)]
    hidden += [("host", "1")] if view.host is not None else []
    hidden += [("sort", view.sort)] if view.sort != "pagerank" else []
    hidden += [("lost", "1")] if view.lost else []
    hidden += [("group", view.group)] if view.group != "page" else []
    hidden += list(view.extra.items())
    fields = "".join(f'<input type="hidden" name="{name}" value="{escape(value)}">' for name, value in hidden)
    label = "Lost after" if view.lost else "New since"
    form = (
        f'<form action="{proxy_url("/backlinks")}" method="get">{fields}'
        f'<input type="text" name="since" value="{escape(view.since_text)}" placeholder="build or YYYY-MM-DD" '
        f'aria-label="{label} build or date" size="18"> <button>{label}</button> '
        f'<small>a build number from <a href="{escape(builds)}">builds</a>'
        " or a UTC date</small></form>"
    )
    return f'<p class="views">{" ".join(modes)}</p>{form}'


def _link_table(ranks: Ranks, view: View, rows: list[dict], hosts: dict, start: int, nofollow: bool = False) -> str:
    with_hosts = bool(hosts)
    lines = [
        "<table><tr><th>#</th><th>PageRank</th>"
        + ("<th>Host rank</th>" if with_hosts else "")
        + "<th>Contribution</th><th>Share</th><th>First seen</th><th>Linking page</th></tr>"
    ]
    ranking = ranks.store().rankings.page_ranking(_name(ranks, view))
    for at, (row, info) in enumerate(zip(rows, infos(ranks, rows, ranking)), start):
        host = hosts.get(host_of(row["url"]))
        new = view.since is not None and row["first_seen"] is not None and row["first_seen"] > view.since
        extra = ""
        if row.get("anchor"):
            extra += f" <small>&#8220;{escape(row['anchor'])}&#8221;</small>"
        if row.get("target"):
            extra += f"<br><small>to {escape(row['target'])}</small>"
        lines.append(
            f'<tr data-pagerank="{_data(row["pagerank"])}" data-contribution="{_data(row["contribution"])}" '
            f'data-url="{escape(row["url"])}"'
            + (' data-new="true"' if new else "")
            + f'><td class="n">{at}</td><td class="n">{bar(info, nofollow)}{format_score(info.pagerank)}'
            + f"{unreached(info)}</td>"
            + (
                (f'<td class="n">#{host[1]:,}<br><small>{format_score(host[0])}</small></td>' if host else "<td></td>")
                if with_hosts
                else ""
            )
            + f'<td class="n">{score(row["contribution"])}</td><td class="n">{share(row["share"])}</td>'
            f'<td class="n">{_build(row["first_seen"])}{" <mark class=new>new</mark>" if new else ""}</td>'
            + page_cell(row, extra, view.extra)
            + "</tr>"
        )
    lines.append("</table>")
    return "".join(lines)


def _shares(report, view: View) -> str:
    """Where the target's PageRank comes from: the links listed, the rest, the random jump, the sinks (sum 1)."""
    listed = sum(row["share"] for row in report.rows if row.get("share"))
    rest = views.share_lines(report, report.rows, view.host is not None)
    lines = [
        "<h2>Where its PageRank comes from</h2><table><tr><th>From</th><th>Share</th></tr>",
        f'<tr class="share"><td>the backlinks listed above</td><td class="n">{share(listed)}</td></tr>',
    ]
    total = listed
    for line in rest:
        total += line.share or 0.0
        lines.append(f'<tr class="share"><td>{escape(line.kind)}</td><td class="n">{share(line.share)}</td></tr>')
    lines.append(f'<tr class="share total"><td>total</td><td class="n">{share(total)}</td></tr></table>')
    return "".join(lines)


def _pager(view: View, more: bool) -> str:
    links = []
    if view.page > 1:
        links.append(f'<a href="{view.link(page=view.page - 1)}">Previous</a>')
    if more:
        links.append(f'<a href="{view.link(page=view.page + 1)}">Next</a>')
    return f"<p>Page {view.page}. {' · '.join(links)}</p>" if links else ""
