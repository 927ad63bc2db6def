"""The proxy's own pages at http://pagerank.proxy/: read-only views of the store.

``/``            search form and links
``/top``         the best pages by PageRank (the paper's Table 1)
``/search?q=``   title search, every word must match, best PageRank first (§5.1)
``/backlinks?url=``  a page's backlinks, best first, paged; ``&format=csv`` downloads the best of them (§7.4)
``/page?url=``   one page: score, percentile, toolbar, in-links and out-links with bars

Every string from the crawl is HTML-escaped; the pages carry a strict
Content-Security-Policy (no script at all, only our hashed style) so that
even a missed escape could not run anything.

Every request is bounded before it reaches the store (:data:`MAX_PARAM`,
:data:`MAX_QUERY`, :data:`MAX_WORDS`, page numbers within each view's cap),
and what is wrong is said on a 400 page of ours.  The store's work for one
request stops past :data:`QUERY_DEADLINE` seconds (a progress handler on the
connection the page uses) with a 503 page; no error text from the store or
Python ever reaches a page, so nothing of its state leaks.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import hashlib
import io
import logging
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence

from rankstore.store import StoreError
from rankstore.store.queries import SEARCH_SCAN
from rankstore.urls import canonical

from ..ranks import Ranks
from ..rewrite import STYLE, LinkInfo, bar, escape, format_score, proxy_url

__all__ = ["respond", "PAGE_SIZE", "QUERY_DEADLINE"]

log = logging.getLogger(__name__)

PAGE_SIZE = 50
MAX_PARAM = 2048  # characters in any one parameter: the longest URL browsers and servers agree on
MAX_PARAMS = 16  # parameters in one request: well past what any page reads
MAX_QUERY = 200  # characters in a search
MAX_WORDS = 8  # words in a search: each is one more FTS5 doclist to intersect
MAX_PAGE = 10_000  # backlinks pages: the deepest a person pages to by hand
CSV_ROWS = 20_000  # backlinks in one download: within the deadline; `rankstore backlinks` gives them all
QUERY_DEADLINE = 1.0  # seconds of SQLite work for one request
_PROGRESS_STEPS = 1000  # SQLite virtual-machine steps between deadline checks


class _BadRequest(Exception):
    """What was wrong with a request, said on a 400 page."""


_PAGE_STYLE = STYLE + (
    "body{font:15px/1.45 system-ui,sans-serif;margin:2em auto;max-width:60em;padding:0 1em;color:#222}"
    "h1{color:#900;font-size:1.5em}table{border-collapse:collapse;width:100%}"
    "td,th{padding:3px 6px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    "small{color:#666;overflow-wrap:anywhere}nav a{margin-right:1em}form{margin:1em 0}"
    "input[type=search],input[type=url]{width:60%;padding:4px}"
)
_STYLE_HASH = "sha256-" + base64.b64encode(hashlib.sha256(_PAGE_STYLE.encode()).digest()).decode()
CSP = (
    f"default-src 'none'; style-src '{_STYLE_HASH}'; img-src 'none'; form-action http://pagerank.proxy; "
    "base-uri 'none'; frame-ancestors 'none'"
)
_HEADERS = {
    "Content-Type": "text/html; charset=utf-8",
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
}


def _layout(title: str, body: str) -> bytes:
    nav = (
        f'<nav><a href="{proxy_url("/")}">PageRank proxy</a><a href="{proxy_url("/top")}">Top pages</a>'
        f'<a href="{proxy_url("/search")}">Search titles</a></nav>'
    )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{_PAGE_STYLE}</style></head><body>{nav}<h1>{escape(title)}</h1>{body}</body></html>"
    ).encode()


def _rows_table(ranks: Ranks, rows: Sequence[dict], start: int = 1) -> str:
    if not rows:
        return "<p>Nothing found.</p>"
    store = ranks.store()
    head = store.ranking_head(ranks.ranking)
    infos = ranks.infos(rows, *ranks.score_range(store, head[0]))
    lines = [
        "<table><tr><th>#</th><th>PageRank</th><th>Percentile</th><th>Toolbar</th><th>In-links</th><th>Page</th></tr>"
    ]
    for number, (row, info) in enumerate(zip(rows, infos), start):
        nofollow = row.get("nofollow", False)
        title = row["title"] or row["url"]
        lines.append(
            f'<tr data-pagerank="{info.pagerank!r}"><td class="n">{number}</td>'
            f'<td class="n">{bar(info, nofollow)}{format_score(info.pagerank)}</td>'
            f'<td class="n">{info.percentile:.2f}</td><td class="n">{info.toolbar}</td>'
            f'<td class="n">{info.inlinks:,}</td>'
            f'<td><a href="{escape(row["url"])}">{escape(title)}</a><br>'
            f"<small>{escape(row['url'])}</small> · "
            f'<a href="{escape(proxy_url("/page", url=row["url"]))}">details</a></td></tr>'
        )
    lines.append("</table>")
    return "".join(lines)


def _first(query: Mapping[str, Sequence[str]], key: str, default: str = "") -> str:
    values = query.get(key) or [default]
    return values[0]


def _number(query, key: str, default: int, low: int = 1, high: int = MAX_PAGE) -> int:
    text = _first(query, key, str(default)).strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 9) or not low <= int(text) <= high:
        raise _BadRequest(f"{key} must be a whole number from {low:,} to {high:,}.")
    return int(text)


def _error(status: int, message: str) -> tuple[int, dict, bytes]:
    return status, dict(_HEADERS), _layout("PageRank proxy", f"<p>{escape(message)}</p>")


def _url_param(query) -> str | None:
    return canonical(_first(query, "url").strip() or None)


def index(ranks, query):
    body = (
        f'<form action="{proxy_url("/search")}" method="get"><input type="search" name="q" '
        'placeholder="words in the title" aria-label="Search titles"> <button>Search</button></form>'
        f'<form action="{proxy_url("/backlinks")}" method="get"><input type="url" name="url" '
        'placeholder="https://example.com/" aria-label="Backlinks of"> <button>Backlinks</button></form>'
        f'<p><a href="{proxy_url("/top")}">The top pages</a> of ranking <b>{escape(ranks.ranking)}</b>.</p>'
    )
    return 200, dict(_HEADERS), _layout("PageRank proxy", body)


def top(ranks, query):
    limit = _number(query, "n", 100, 1, 1000)
    rows = ranks.store().top(ranks.ranking, limit)
    return 200, dict(_HEADERS), _layout(f"Top {limit} pages by PageRank", _rows_table(ranks, rows))


def search(ranks, query):
    text = _first(query, "q")
    if len(text) > MAX_QUERY:
        raise _BadRequest(f"A search can be at most {MAX_QUERY} characters long.")
    words = text.split()
    if len(words) > MAX_WORDS:
        raise _BadRequest(f"A search can have at most {MAX_WORDS} words.")
    page = _number(query, "page", 1, 1, SEARCH_SCAN // PAGE_SIZE)
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
    return (
        200,
        dict(_HEADERS),
        _layout(title, form + note + (_rows_table(ranks, rows, (page - 1) * PAGE_SIZE + 1) if words else "") + more),
    )


def backlinks(ranks, query):
    url = _url_param(query)
    if url is None:
        return _error(400, "Give an http(s) URL: /backlinks?url=https://example.com/")
    store = ranks.store()
    if store.page_id(url) is None:
        return _error(404, f"{url} is not in the store.")
    if _first(query, "format") == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["rank", "url", "title", "pagerank", "nofollow", "anchor"])
        rows = store.backlinks(url, ranks.ranking, CSV_ROWS + 1)  # one read: a second would rank from the start again
        for number, row in enumerate(rows[:CSV_ROWS], 1):
            writer.writerow(
                [
                    number,
                    row["url"],
                    row["title"] or "",
                    repr(row["pagerank"]),
                    int(row["nofollow"]),
                    row["anchor"] or "",
                ]
            )
        headers = {
            "Content-Type": "text/csv; charset=utf-8",
            "X-Content-Type-Options": "nosniff",
            "Content-Disposition": 'attachment; filename="backlinks.csv"',
            "Cache-Control": "no-store",
        }
        if len(rows) > CSV_ROWS:  # said beside the data, which stays plain CSV
            headers["X-Backlinks-Truncated"] = f"the best {CSV_ROWS} by PageRank; rankstore backlinks gives all"
        return 200, headers, out.getvalue().encode()
    page = _number(query, "page", 1)
    total = store.backlink_count(url, ranks.ranking)
    rows = store.backlinks(url, ranks.ranking, PAGE_SIZE, (page - 1) * PAGE_SIZE)
    pages = max(1, -(-total // PAGE_SIZE))
    links = [
        f'<a href="{escape(proxy_url("/backlinks", url=url, format="csv"))}">Download CSV</a>'
        + (f" (the best {CSV_ROWS:,}; <code>rankstore backlinks</code> gives all)" if total > CSV_ROWS else "")
    ]
    if page > 1:
        links.append(f'<a href="{escape(proxy_url("/backlinks", url=url, page=str(page - 1)))}">Previous</a>')
    if page < pages:
        links.append(f'<a href="{escape(proxy_url("/backlinks", url=url, page=str(page + 1)))}">Next</a>')
    body = (
        f'<p>{total:,} pages link to <a href="{escape(url)}">{escape(url)}</a>; page {page} of {pages}, '
        f"best PageRank first.</p><p>{' · '.join(links)}</p>" + _rows_table(ranks, rows, (page - 1) * PAGE_SIZE + 1)
    )
    return 200, dict(_HEADERS), _layout("Backlinks by PageRank", body)


def page_view(ranks, query):
    url = _url_param(query)
    if url is None:
        return _error(400, "Give an http(s) URL: /page?url=https://example.com/")
    store = ranks.store()
    found = store.lookup([url], ranks.ranking).get(url)
    if found is None:
        return _error(404, f"{url} is not in the store.")
    info: LinkInfo = ranks.infos([found], *ranks.score_range(store, store.ranking_head(ranks.ranking)[0]))[0]
    outgoing = store.out_links_ranked(url, ranks.ranking, 200)
    incoming = store.backlinks(url, ranks.ranking, 20)
    body = (
        f'<p><a href="{escape(url)}">{escape(found["title"] or url)}</a><br><small>{escape(url)}</small></p>'
        f"<p>{bar(info)} PageRank {format_score(info.pagerank)} (sum-to-1 scale; "
        f"{info.pagerank * found['pages']:.3g} in the notes' sum-to-N scale) · {info.percentile:.2f} percentile · "
        f"toolbar {info.toolbar}/10 · {info.inlinks:,} in-links</p>"
        f'<h2>Best backlinks</h2><p><a href="{escape(proxy_url("/backlinks", url=url))}">all {info.inlinks:,}</a></p>'
        + _rows_table(ranks, incoming)
        + f"<h2>Out-links ({len(outgoing)})</h2>"
        + _rows_table(ranks, [row for row in outgoing if row["pagerank"] is not None])
    )
    return 200, dict(_HEADERS), _layout("Page", body)


ROUTES = {"/": index, "/top": top, "/search": search, "/backlinks": backlinks, "/page": page_view}


def respond(
    method: str, path: str, query: Mapping[str, Sequence[str]], ranks: Ranks, deadline: float = QUERY_DEADLINE
) -> tuple[int, dict, bytes]:
    """(status, headers, body) for a request to the proxy's own host.

    ``deadline`` is the seconds of store work allowed (tests shorten it).
    """
    if method not in ("GET", "HEAD"):
        status, headers, body = _error(405, "These pages are read-only.")
        headers["Allow"] = "GET, HEAD"
        return status, headers, body
    handler = ROUTES.get(path)
    if handler is None:
        return _error(404, f"No page {path[:100]}. Try /top, /search, /backlinks?url=, /page?url=.")
    if sum(len(values) for values in query.values()) > MAX_PARAMS:
        return _error(400, f"A request can have at most {MAX_PARAMS} parameters.")
    if any(len(key) > MAX_PARAM or any(len(value) > MAX_PARAM for value in values) for key, values in query.items()):
        return _error(400, f"A parameter can be at most {MAX_PARAM:,} characters long.")
    try:
        with _deadline(ranks, deadline):
            return handler(ranks, query)
    except _BadRequest as error:
        return _error(400, str(error))
    except sqlite3.OperationalError as error:
        if "interrupt" in str(error):
            return _error(503, "The query took too long; try fewer or rarer words, or an earlier page.")
        log.exception("own page %s failed", path)
        return _error(500, "The store could not answer; the proxy's log says why.")
    except StoreError:
        log.exception("own page %s failed", path)
        return _error(503, "The store is not ready to answer; the proxy's log says why.")
    except Exception:
        log.exception("own page %s failed", path)
        return _error(500, "Something went wrong; the proxy's log says what.")


@contextlib.contextmanager
def _deadline(ranks: Ranks, seconds: float) -> Iterator[None]:
    """SQLite work on the page's connection is interrupted once ``seconds`` have passed."""
    db = ranks.store().db
    ends = time.monotonic() + seconds
    db.set_progress_handler(lambda: time.monotonic() > ends, _PROGRESS_STEPS)
    try:
        yield
    finally:
        db.set_progress_handler(None, _PROGRESS_STEPS)
        if db.in_transaction:  # a read interrupted while ending its own transaction
            db.rollback()
