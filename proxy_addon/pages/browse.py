"""The pages for browsing the store: the index, the top pages, title search and one page's view.

Each takes ``ranking=`` (the proxy's own by default) and ``format=csv|json``
(but the index): the rows of :mod:`rankstore.views`, as ``rankstore top``,
``search`` and ``show`` write them.
"""

from __future__ import annotations

from rankstore import views
from rankstore.display import percentile_text
from rankstore.store import Ranking, analysis
from rankstore.store.queries import search_words
from rankstore.urls import host_of, site_of

from ..markup import LinkInfo, bar, escape, estimate_text, format_score, level_section, proxy_url
from ..ranks import Ranks
from .layout import (
    FORMATS,
    UNRANKED,
    BadRequest,
    NotFound,
    PagesUnranked,
    download,
    host_infos,
    host_table,
    html_response,
    infos,
    rows_table,
    unreached,
    with_ranking,
)
from .params import (
    CSV_ROWS,
    MAX_QUERY,
    MAX_WORDS,
    PAGE_SIZE,
    Query,
    choice,
    first,
    number,
    page_ranking,
    ranking,
    url_param,
)

__all__ = ["index", "top", "search", "page_view", "levels_only"]


def index(ranks: Ranks, query: Query):
    chosen = ranking(query, ranks.store(), ranks.ranking)
    extra = "".join(
        f'<input type="hidden" name="ranking" value="{escape(value)}">'
        for value in with_ranking(ranks, chosen.name).values()
    )
    body = (
        f'<form action="{proxy_url("/search")}" method="get"><input type="search" name="q" '
        f'placeholder="words in the title" aria-label="Search titles">{extra} <button>Search</button></form>'
        f'<form action="{proxy_url("/backlinks")}" method="get"><input type="url" name="url" '
        f'placeholder="https://example.com/" aria-label="Backlinks of">{extra} <button>Backlinks</button></form>'
        f'<p><a href="{escape(proxy_url("/top", **with_ranking(ranks, chosen.name)))}">The top '
        f"{chosen.level}s</a> of ranking <b>{escape(chosen.name)}</b> · "
        f'<a href="{proxy_url("/compare")}">Link intersect</a>: who links to your competitors and not to you · '
        f'<a href="{proxy_url("/builds")}">Builds</a>, with their new and lost links.</p>'
    )
    return html_response("PageRank proxy", body, views.stale_notes(ranks.store(), chosen))


def top(ranks: Ranks, query: Query):
    limit = number(query, "n", 100, 1, 1000)
    fmt = choice(query, "format", FORMATS)
    store = ranks.store()
    chosen = ranking(query, store, ranks.ranking)
    if fmt != "html":
        table = views.top_view(store, chosen.name, limit)
        return download(fmt, table.columns, table.rows, "top")
    notes = views.stale_notes(store, chosen)
    if chosen.level != "page":
        rows = analysis.top_nodes(store, chosen.name, chosen.level, limit)
        title = f"Top {limit} {chosen.level}s by {chosen.name}"
        return html_response(title, host_table(ranks, store, rows, chosen), notes)
    rows = store.queries.top(chosen.name, limit)
    return html_response(f"Top {limit} pages by {chosen.name}", rows_table(ranks, rows, chosen), notes)


def search(ranks: Ranks, query: Query):
    text = first(query, "q")
    if len(text) > MAX_QUERY:
        raise BadRequest(f"A search can be at most {MAX_QUERY} characters long.")
    words = text.split()
    if search_words(words) != words:
        raise BadRequest("A search cannot hold control characters.")
    if len(words) > MAX_WORDS:
        raise BadRequest(f"A search can have at most {MAX_WORDS} words.")
    page = number(query, "page", 1, 1, CSV_ROWS // PAGE_SIZE)
    fmt = choice(query, "format", FORMATS)
    store = ranks.store()
    chosen = page_ranking(query, store, ranks.ranking)
    offset = (page - 1) * PAGE_SIZE
    if fmt != "html":
        found = views.search_view(store, words, chosen.name, PAGE_SIZE, offset)
        return download(fmt, found.columns, found.rows, "search")
    rows = store.queries.search_titles(words, chosen.name, PAGE_SIZE, offset) if words else []
    hidden = "".join(
        f'<input type="hidden" name="ranking" value="{escape(value)}">'
        for value in with_ranking(ranks, chosen.name).values()
    )
    form = (
        f'<form action="{proxy_url("/search")}" method="get"><input type="search" name="q" '
        f'value="{escape(" ".join(words))}" aria-label="Search titles">{hidden} <button>Search</button></form>'
    )
    more = ""
    if len(rows) == PAGE_SIZE and page * PAGE_SIZE < CSV_ROWS:
        params = with_ranking(ranks, chosen.name, q=" ".join(words), page=str(page + 1))
        more = f'<p><a href="{escape(proxy_url("/search", **params))}">Next page</a></p>'
    title = f"Titles with: {' '.join(words)}" if words else "Search titles"
    note = (
        (
            f"<p><small>Best PageRank first among all titles that match; pages to the best {CSV_ROWS:,} "
            "(the CLI's <code>rankstore search</code> goes deeper).</small></p>"
        )
        if words
        else ""
    )
    table = rows_table(ranks, rows, chosen, offset + 1) if words else ""
    return html_response(title, form + note + table + more, views.stale_notes(store, chosen))


def page_view(ranks: Ranks, query: Query):
    url = url_param(query)
    if url is None:
        raise BadRequest("Give an http(s) URL: /page?url=https://example.com/")
    fmt = choice(query, "format", FORMATS)
    store = ranks.store()
    try:
        chosen: Ranking | None = ranking(query, store, ranks.ranking)
    except PagesUnranked:
        if fmt != "html":
            raise
        chosen = None
    if chosen is None:  # the store ranks no pages: the URL's host or site answers, as on its links
        return _estimate_of_page(ranks, url, None)
    if fmt != "html":
        table = views.show_view(store, [url], chosen.name)
        if not table.rows:  # not in the store, nor its host or site ranked
            raise NotFound(f"{url} is not in the store.")
        return download(fmt, table.columns, table.rows, "page")
    if chosen.level != "page":
        return _level_of_page(ranks, url, chosen)
    found = store.queries.lookup([url], chosen.name).get(url)
    if found is None:
        return _estimate_of_page(ranks, url, chosen)
    notes = views.stale_notes(store, chosen)
    if found["pagerank"] is None:  # added by a build newer than the ranking
        body = (
            f'<p><a href="{escape(url)}">{escape(found["title"] or url)}</a><br><small>{escape(url)}</small></p>'
            f"<p>{bar(UNRANKED)} Not ranked yet: a build newer than ranking {escape(chosen.label)} "
            "added this page.</p>"
        )
        return html_response("Page", body, notes)
    info: LinkInfo = infos(ranks, [found], chosen)[0]
    host = host_of(url)
    hostrank = analysis.host_ranks(store, [host]).get(host)
    outgoing = store.queries.out_links_ranked(url, chosen.name, 200)
    incoming = store.queries.backlinks(url, chosen.name, 20)
    links = with_ranking(ranks, chosen.name, url=url)
    body = (
        f'<p><a href="{escape(url)}">{escape(found["title"] or url)}</a><br><small>{escape(url)}</small></p>'
        f"<p>{bar(info)} PageRank {format_score(info.pagerank)}{unreached(info)} (sum-to-1 scale; "
        f"{info.pagerank * found['pages']:.3g} in the notes' sum-to-N scale) · "
        f"{percentile_text(info.percentile)} percentile · "
        f"toolbar {info.toolbar}/10 · {info.inlinks:,} in-links"
        + (f" · host {escape(host)}: host rank #{hostrank[1]:,} ({format_score(hostrank[0])})" if hostrank else "")
        + "</p>"
        f'<h2>Best backlinks</h2><p><a href="{escape(proxy_url("/backlinks", **links))}">all {info.inlinks:,}</a> · '
        f'<a href="{escape(proxy_url("/backlinks", **links, sort="contribution"))}">by contribution</a> · '
        f'<a href="{escape(proxy_url("/backlinks", **links, group="host"))}">referring hosts</a> · '
        f'<a href="{escape(proxy_url("/page", **links, format="csv"))}">Download CSV</a> · '
        f'<a href="{escape(proxy_url("/page", **links, format="json"))}">JSON</a></p>'
        + rows_table(ranks, incoming, chosen)
        + f"<h2>Out-links ({len(outgoing)})</h2>"
        + rows_table(ranks, [row for row in outgoing if row["pagerank"] is not None], chosen)
    )
    return html_response("Page", body, notes)


def _estimate_of_page(ranks: Ranks, url: str, chosen: Ranking | None):
    """/page for a URL the store does not hold (or, ``chosen`` None, of a store that ranks no pages): its host's
    rank, else its site's (the level that answered says so), and each level's best referrers, as its panel shows
    them; a 404 when no level ranks it."""
    with ranks.page() as view:
        info = view.lookup([url]).get(url)
        if info is None or info.estimate is None:
            if chosen is None:
                raise NotFound(f"{url}: the store ranks no pages, and no level it ranks holds this page's site.")
            raise NotFound(f"{url} is not in the store.")
        levels = view.level_panels(url)
    answered = info.estimate
    said = "The store ranks no pages" if chosen is None else "This page is not in the store"
    body = (
        f'<p><a href="{escape(url)}">{escape(url)}</a></p>'
        f'<p data-pagerank-level="{escape(answered.level)}">{bar(info)} {said}: answered by '
        f"its {escape(estimate_text(answered))}</p>" + "".join(level_section(level) for level in levels)
    )
    notes = views.stale_notes(ranks.store(), chosen) if chosen is not None else []
    return html_response(f"Page, by its {answered.level}'s rank", body, notes)


def levels_only(ranks: Ranks):
    """What a page about pages says where the store ranks no pages, only hosts or sites (a Common Crawl domain
    graph): which levels answer on every link, their top lists, a URL's own look-up, and how pages get ranked."""
    store = ranks.store()
    heads = ranks.levels_only()
    has_pages = store.pages.last_page_id() > 0
    levels = " and ".join(f"{head.level}s" for head in heads) or "nothing"
    if has_pages:
        said = (
            f"This store ranks {levels} only: its pages are not ranked (no ranking {escape(ranks.ranking)}; "
            "<code>rankstore rank</code> ranks them)."
        )
    else:
        said = (
            f"This store ranks {levels} only: it holds a domain graph, no pages, so it has no pages' "
            "scores, backlinks or titles to show."
        )
    answers = " or ".join(f"its {head.level}'s" for head in heads)
    tops = " · ".join(
        f'<a href="{escape(proxy_url("/top", ranking=head.name))}">The top {head.level}s</a> by '
        f"<b>{escape(head.name)}</b>"
        for head in heads
    )
    body = (
        f"<p>{said}</p>"
        f"<p>On every page through the proxy, a link's bar shows {answers} rank; a link whose "
        f"{' or '.join(head.level for head in heads)} the store does not rank says "
        "&#8220;Not in the PageRank store&#8221;.</p>"
        f"<p>{tops}</p>"
        f'<form action="{proxy_url("/page")}" method="get"><input type="url" name="url" '
        f'placeholder="https://example.com/" aria-label="A URL\'s rank"> <button>Look up a URL</button></form>'
        f'<p><a href="{proxy_url("/builds")}">Builds</a></p>'
    )
    return html_response("PageRank proxy: " + (levels if heads else "no ranking"), body)


def _level_of_page(ranks: Ranks, url: str, chosen: Ranking):
    """/page with a host (site) ranking: the page's host (site), by its rank (the ranking has no page
    scores).  A page the store has not is answered by its host's rank where that is ranked, as ``show`` does,
    and said to be so; a site the store holds answers for any URL of it (a domain graph's sites have no pages)."""
    store = ranks.store()
    level = chosen.level
    name = host_of(url) if level == "host" else site_of(host_of(url))
    with store.snapshot():
        absent = level == "host" and store.pages.page_id(url) is None
        row = analysis.lookup_nodes(store, [name], chosen.name, level).get(name)
    if row is None or (absent and not row["pagerank"]):
        raise NotFound(f"{url} is not in the store.")
    notes = [*views.stale_notes(store, chosen), views.level_note(chosen.name, level)]
    if absent:
        notes.append(f"{url} is not in the store: answered by its host's rank")
    info = host_infos(ranks, store, [row], chosen)[0]
    pages = escape(proxy_url("/page", url=url, **with_ranking(ranks, ranks.ranking)))
    members = views.MEMBERS[level]
    if info.pagerank is None:
        said = f"Not ranked yet: a build newer than ranking {escape(chosen.label)} added this {level}."
    else:
        said = (
            f"{bar(info)} {level} rank #{row['place'] + 1:,} of {row[f'{level}s']:,} {level}s · {level} "
            f"PageRank {format_score(info.pagerank)}{unreached(info)} · "
            f"{percentile_text(info.percentile)} percentile · "
            f"toolbar {info.toolbar}/10 · "
            + ("" if info.inlinks is None else f"{info.inlinks:,} {level}s link to it · ")
            + (f"{row[members]:,} {members}" if row[members] is not None else f"its {members} not known")
        )
    body = (
        f'<p><a href="{escape(url)}">{escape(url)}</a></p>'
        f"<p>{level.capitalize()} <b>{escape(name)}</b>: {said}</p>"
        f'<p><a href="{pages}">This page by {escape(ranks.ranking)}</a></p>'
    )
    return html_response(f"{level.capitalize()} of the page, by {chosen.name}", body, notes)
