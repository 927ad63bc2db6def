"""The proxy's own pages at http://pagerank.proxy/: read-only views of the store.

``/``            search form and links
``/top``         the best pages by PageRank (the paper's Table 1)
``/search?q=``   title search, every word must match, best PageRank first (§5.1)
``/backlinks?url=``  a page's (or a host's, ``host=1``) backlinks with contribution and share; ``sort``,
                 ``since``, ``lost``, ``group=host|site``; ``?site=S``: a whole site's (a registered domain);
                 ``&format=csv|json`` downloads the view (§7.4)
``/compare?target=A&target=B``  link intersect: who links to every target and not to ``not``
``/builds``      the builds with their new and lost links
``/page?url=``   one page: score, percentile, toolbar, in-links and out-links with bars
``/usage``       usage against rank (§7.1): what you visited by visits beside its PageRank, with a scatter
                 plot (a PNG as a ``data:`` URI, the one image any page of ours may show); ``level``, ``since``

Every page takes ``ranking=`` (the proxy's own ranking by default): a host
ranking lists hosts on ``/top``, answers for the page's host on ``/page`` and
links hosts on ``/compare?group=host``; the pages about pages refuse it in
words (400).  A parameter a page does not read is a 400 too, never ignored.
``/top``, ``/search``, ``/page``, ``/backlinks``, ``/compare`` and ``/builds``
take ``format=csv|json``: the CLI's rows, columns and dialect
(:mod:`rankstore.output`).  A ranking older than the newest build is named in
a notice at the top of every page that uses it.

One module a job: :mod:`.layout` (style, policy, frame, tables), :mod:`.params`
(bounded parameters), :mod:`.gate` (who the pages answer: never another site's
page, which gets one answer whatever it asks; and the host in every spelling),
:mod:`.browse`,
:mod:`.backlinks`, :mod:`.compare`, :mod:`.builds` (the pages); this module
routes a request and keeps it within its limits.  The analyst pages render the
rows of :mod:`rankstore.store.analysis`, the same rows the CLI prints.

Every string from the crawl is HTML-escaped; the pages carry a strict
Content-Security-Policy (no script at all, only our hashed style) so that
even a missed escape could not run anything.

Every request is bounded before it reaches the store (:data:`MAX_PARAM`,
:data:`MAX_QUERY`, :data:`MAX_WORDS`, page numbers within each view's cap, at
most :data:`~.params.MAX_TARGETS` targets to compare), and what is wrong is
said on a 400 page of ours.  The store's work for one request stops past
:data:`QUERY_DEADLINE` seconds (a progress handler on the connection the page
uses) with a 503 page, and whatever the work (arrays read from a cold disk are
no SQLite work) the proxy answers by :data:`ANSWER_BY`; no error text from the
store or Python ever reaches a page, so nothing of its state leaks.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence

from rankstore.store import RankingLevelError, StoreError

from ..ranks import Ranks
from .gate import OWN_ONLY_HEADERS, Asker, asker, is_reserved, other_site
from .layout import CSP, BadRequest, NotFound, PagesUnranked, error
from .params import MAX_PARAM, MAX_PARAMS, MAX_QUERY, MAX_WORDS, PAGE_SIZE, known, level_message

__all__ = [
    "respond",
    "Asker",
    "asker",
    "is_reserved",
    "other_site",
    "OWN_ONLY_HEADERS",
    "PAGE_SIZE",
    "QUERY_DEADLINE",
    "ANSWER_BY",
    "too_late",
    "CSP",
    "MAX_PARAM",
    "MAX_QUERY",
    "MAX_WORDS",
    "ROUTES",
]

log = logging.getLogger(__name__)

QUERY_DEADLINE = 1.0  # seconds of SQLite work for one request
ANSWER_BY = 2 * QUERY_DEADLINE  # seconds the proxy waits for an answer at most; then a 503 (too_late)
_PROGRESS_STEPS = 1000  # SQLite virtual-machine steps between deadline checks

View = Callable[[Ranks, Mapping[str, Sequence[str]]], tuple[int, dict, bytes]]


def _view(module: str, name: str) -> View:
    """A view whose module (and the analyses it reads with) is imported at its first request, not with the
    proxy: the proxy's first page does not wait for the own pages."""

    def view(ranks: Ranks, query: Mapping[str, Sequence[str]]) -> tuple[int, dict, bytes]:
        return getattr(importlib.import_module(f"{__name__}.{module}"), name)(ranks, query)

    return view


ROUTES: dict[str, View] = {
    "/": _view("browse", "index"),
    "/top": _view("browse", "top"),
    "/search": _view("browse", "search"),
    "/backlinks": _view("backlinks", "backlinks"),
    "/compare": _view("compare", "compare"),
    "/builds": _view("builds", "builds"),
    "/history": _view("history", "history"),
    "/page": _view("browse", "page_view"),
    "/usage": _view("usage", "usage_page"),
}
PARAMETERS = {  # what each page reads; any other parameter is a 400
    "/": ("ranking",),
    "/top": ("n", "ranking", "format"),
    "/search": ("q", "page", "ranking", "format"),
    "/backlinks": ("url", "host", "site", "sort", "since", "lost", "group", "page", "ranking", "format", "with_shares"),
    "/compare": ("target", "not", "host", "group", "page", "ranking", "format"),
    "/builds": ("url", "host", "ranking", "format"),
    "/history": ("url", "host", "site", "ranking", "format", "what"),
    "/page": ("url", "ranking", "format"),
    "/usage": ("level", "since", "ranking", "n", "format"),
}


def respond(
    method: str, path: str, query: Mapping[str, Sequence[str]], ranks: Ranks, deadline: float = QUERY_DEADLINE
) -> tuple[int, dict, bytes]:
    """(status, headers, body) for a request to the proxy's own host.

    ``deadline`` is the seconds of store work allowed (tests shorten it).  Every answer, an error or a
    download too, carries :data:`~.gate.OWN_ONLY_HEADERS`.
    """
    status, headers, body = _answer(method, path, query, ranks, deadline)
    headers.update(OWN_ONLY_HEADERS)
    return status, headers, body


def _answer(
    method: str, path: str, query: Mapping[str, Sequence[str]], ranks: Ranks, deadline: float
) -> tuple[int, dict, bytes]:
    if method not in ("GET", "HEAD"):
        status, headers, body = error(405, "These pages are read-only.")
        headers["Allow"] = "GET, HEAD"
        return status, headers, body
    handler = ROUTES.get(path)
    if handler is None:
        return error(
            404,
            f"No page {path[:100]}. Try /top, /search, /backlinks?url=, /compare, /builds, /history?url=, /page?url=, "
            "/usage.",
        )
    if sum(len(values) for values in query.values()) > MAX_PARAMS:
        return error(400, f"A request can have at most {MAX_PARAMS} parameters.")
    if any(len(key) > MAX_PARAM or any(len(value) > MAX_PARAM for value in values) for key, values in query.items()):
        return error(400, f"A parameter can be at most {MAX_PARAM:,} characters long.")
    try:
        known(query, path, PARAMETERS[path])
        with _deadline(ranks, deadline):
            return handler(ranks, query)
    except BadRequest as problem:
        return error(400, str(problem))
    except RankingLevelError as problem:  # a page's question asked of a host ranking
        return error(400, level_message(problem))
    except NotFound as problem:
        return error(404, str(problem))
    except PagesUnranked:  # not an error of the reader's: the store has no pages to show, its levels answer
        if query.get("format", ["html"])[-1] != "html":  # a download of pages' rows: none, said as an error
            return error(404, "This store ranks no pages, only hosts or sites: ask for ranking=siterank or hostrank.")
        from .browse import levels_only

        return levels_only(ranks)
    except sqlite3.OperationalError as problem:
        if "interrupt" in str(problem):
            return error(503, _too_long(path, query))
        log.exception("own page %s failed", path)
        return error(500, "The store could not answer; the proxy's log says why.")
    except StoreError:
        log.exception("own page %s failed", path)
        return error(503, "The store is not ready to answer; the proxy's log says why.")
    except Exception:
        log.exception("own page %s failed", path)
        return error(500, "Something went wrong; the proxy's log says what.")


def too_late(path: str, query: Mapping[str, Sequence[str]]) -> tuple[int, dict, bytes]:
    """The 503 for a request whose answer is not ready by :data:`ANSWER_BY` (work outside SQLite, which its
    deadline does not stop: arrays read from a cold disk), as :func:`respond` gives it."""
    status, headers, body = error(503, _too_long(path, query))
    headers.update(OWN_ONLY_HEADERS)
    return status, headers, body


def _too_long(path: str, query: Mapping[str, Sequence[str]]) -> str:
    """What the 503 past the deadline says: what the reader could change on this page (only /search takes words;
    a page past the first may be asked for an earlier one), else to ask again."""
    later = any(value.strip().isdigit() and int(value) > 1 for value in query.get("page", [])[-1:])
    if path == "/search":
        advice = "try fewer or rarer words" + (", or an earlier page" if later else "")
    elif later:
        advice = "try an earlier page, or again in a moment"
    else:
        advice = "try again in a moment, when the machine is less busy (rankstore's commands have no deadline)"
    return f"The query took too long; {advice}."


@contextlib.contextmanager
def _deadline(ranks: Ranks, seconds: float) -> Iterator[None]:
    """SQLite work on the page's connection is interrupted once ``seconds`` have passed."""
    with ranks.store().interrupted_after(seconds, _PROGRESS_STEPS):
        yield
