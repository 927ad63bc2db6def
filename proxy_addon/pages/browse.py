"""The pages for browsing the store: the index, the top pages, title search and one page's view."""

from __future__ import annotations

from rankstore.store.queries import SEARCH_SCAN
from rankstore.urls import host_of

from ..ranks import Ranks
from ..rewrite import LinkInfo, bar, escape, format_score, proxy_url
from .layout import BadRequest, NotFound, html_response, rows_table
from .params import MAX_QUERY, MAX_WORDS, PAGE_SIZE, Query, first, number, url_param

__all__ = ["index", "top", "search", "page_view"]


def index(ranks: Ranks, query: Query):
    body = (
        f'<form action="{proxy_url("/search")}" method="get"><input type="search" name="q" '
        'placeholder="words in the title" aria-label="Search titles"> <button>Search</button></form>'
        f'<form action="{proxy_url("/backlinks")}" method="get"><input type="url" name="url" '
        'placeholder="https://example.com/" aria-label="Backlinks of"> <button>Backlinks</button></form>'
        f'<p><a href="{proxy_url("/top")}">The top pages</a> of ranking <b>{escape(ranks.ranking)}</b> · '
        f'<a href="{proxy_url("/compare")}">Link intersect</a>: who links to your competitors and not to you · '
        f'<a href="{proxy_url("/builds")}">Builds</a>, with their new and lost links.</p>'
    )
    return html_response("PageRank proxy", body)


def top(ranks: Ranks, query: Query):
    limit = number(query, "n", 100, 1, 1000)
    rows = ranks.store().top(ranks.ranking, limit)
    return html_response(f"Top {limit} pages by PageRank", rows_table(ranks, rows))


def search(ranks: Ranks, query: Query):
    text = first(query, "q")
    if len(text) > MAX_QUERY:
        raise BadRequest(f"A search can be at most {MAX_QUERY} characters long.")
    words = text.split()
    if len(words) > MAX_WORDS:
        raise BadRequest(f"A search can have at most {MAX_WORDS} words.")
    page = number(query, "page", 1, 1, SEARCH_SCAN // PAGE_SIZE)
    rows = ranks.store().search_titles(words, ranks.ranking, PAGE_SIZE, (page - 1) * PAGE_SIZE) if words else []
    form = (
        f'<form action="{proxy_url("/search")}" method="get"><input type="search" name="q" '
        f'value="{escape(" ".join(words))}" aria-label="Search titles"> <button>Search</button></form>'
    )
    more = ""
    if len(rows) == PAGE_SIZE and page * PAGE_SIZE < SEARCH_SCAN:
        more = f'<p><a href="{escape(proxy_url("/search", q=" ".join(words), page=str(page + 1)))}">Next page</a></p>'
    title = f"Titles with: {' '.join(words)}" if words else "Search titles"
    note = (
        (
            f"<p><small>Best PageRank first among the first {SEARCH_SCAN:,} titles that match "
            "(all of them when fewer match).</small></p>"
        )
        if words
        else ""
    )
    return html_response(
        title, form + note + (rows_table(ranks, rows, (page - 1) * PAGE_SIZE + 1) if words else "") + more
    )


def page_view(ranks: Ranks, query: Query):
    url = url_param(query)
    if url is None:
        raise BadRequest("Give an http(s) URL: /page?url=https://example.com/")
    store = ranks.store()
    found = store.lookup([url], ranks.ranking).get(url)
    if found is None:
        raise NotFound(f"{url} is not in the store.")
    info: LinkInfo = ranks.infos([found], *ranks.score_range(store, store.ranking_head(ranks.ranking)[0]))[0]
    host = host_of(url)
    hostrank = store.host_ranks([host]).get(host)
    outgoing = store.out_links_ranked(url, ranks.ranking, 200)
    incoming = store.backlinks(url, ranks.ranking, 20)
    body = (
        f'<p><a href="{escape(url)}">{escape(found["title"] or url)}</a><br><small>{escape(url)}</small></p>'
        f"<p>{bar(info)} PageRank {format_score(info.pagerank)} (sum-to-1 scale; "
        f"{info.pagerank * found['pages']:.3g} in the notes' sum-to-N scale) · {info.percentile:.2f} percentile · "
        f"toolbar {info.toolbar}/10 · {info.inlinks:,} in-links"
        + (f" · host {escape(host)}: host rank #{hostrank[1]:,} ({format_score(hostrank[0])})" if hostrank else "")
        + "</p>"
        f'<h2>Best backlinks</h2><p><a href="{escape(proxy_url("/backlinks", url=url))}">all {info.inlinks:,}</a> · '
        f'<a href="{escape(proxy_url("/backlinks", url=url, sort="contribution"))}">by contribution</a> · '
        f'<a href="{escape(proxy_url("/backlinks", url=url, group="host"))}">referring hosts</a></p>'
        + rows_table(ranks, incoming)
        + f"<h2>Out-links ({len(outgoing)})</h2>"
        + rows_table(ranks, [row for row in outgoing if row["pagerank"] is not None])
    )
    return html_response("Page", body)
