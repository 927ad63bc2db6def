"""The addon's options, checked by pure functions (mitmproxy's blocklist style)."""

from __future__ import annotations

import difflib
import os
from collections.abc import Collection
from dataclasses import dataclass

from mitmproxy import exceptions, http

from .clients import is_browser, shows_annotations

__all__ = [
    "Settings",
    "parse_settings",
    "is_candidate",
    "shown_as_page",
    "might_be_page",
    "uncompressed",
    "HTML_TYPES",
    "MAX_BODY",
    "PANEL",
    "MAX_LINKS",
    "LARGE_PAGE_RATE",
    "INLINE_BYTES",
    "INLINE_LINKS",
    "INLINE_BACKLINKS",
    "INLINE_LOOKUPS",
    "unknown_option_problem",
]

HTML_TYPES = ("text/html", "application/xhtml+xml")
# The options' defaults: the addon's and pagerank-proxy's, which checks them before it starts mitmdump
MAX_BODY = 8 * 1024 * 1024
PANEL = 10
MAX_LINKS = 20_000
LARGE_PAGE_RATE = 50  # megabytes a second (proxy_addon.pacing); 0: no limit
# A page no larger, sent uncompressed, that comes while no other flow is in flight is rewritten in mitmproxy's
# event loop: its trip to a worker and back costs more than the rewrite, and no one else waits (the addon's
# response hook).  0: every page goes to the workers.
INLINE_BYTES = 64 * 1024
# ... and that has no more links than this: the first visit of a page with many links costs its resolving, look-ups
# and bars, milliseconds that a client arriving meanwhile would wait for.
INLINE_LINKS = 1_000
# ... and whose panel, if it is made on that visit, picks from no more backlinks than this (the page's in-links
# are read and sorted by score for it).
INLINE_BACKLINKS = 50_000
# ... and that has no more links than this whose look-ups this process has not made yet (a page of a large store
# that links past its best pages: each costs a probe of the store).
INLINE_LOOKUPS = 100
_MOST_INLINE = 1024 * 1024  # past this a rewrite in the loop would hold a client arriving meanwhile too long


@dataclass(frozen=True)
class Settings:
    store: str
    ranking: str
    max_body: int
    panel: int
    max_links: int = MAX_LINKS
    large_page_rate: int = LARGE_PAGE_RATE
    inline_bytes: int = INLINE_BYTES
    host_ranking: str = ""  # the rankings that answer for a link's host and site ("": the store's own choice)
    site_ranking: str = ""


def parse_settings(
    store: str,
    ranking: str,
    max_body: int,
    panel: int,
    max_links: int = MAX_LINKS,
    large_page_rate: int = LARGE_PAGE_RATE,
    inline_bytes: int = INLINE_BYTES,
    host_ranking: str = "",
    site_ranking: str = "",
) -> Settings | None:
    """Check the options; OptionsError with a message a user can act on.

    None while no store is set: the addon is then idle and passes everything on.
    """
    if not store:
        return None
    if not os.path.exists(store):
        raise exceptions.OptionsError(f"rankstore: {store}: no such file (run `rankstore build` and `rankstore rank`)")
    if max_body < 1024:
        raise exceptions.OptionsError("pagerank_max_body must be at least 1024 bytes")
    if not 0 <= panel <= 100:
        raise exceptions.OptionsError("pagerank_panel must be between 0 and 100")
    if max_links < 0:
        raise exceptions.OptionsError("pagerank_max_links must be 0 (no limit) or more")
    if large_page_rate < 0:
        raise exceptions.OptionsError("pagerank_large_page_rate must be 0 (no limit) or more megabytes a second")
    if not 0 <= inline_bytes <= _MOST_INLINE:
        raise exceptions.OptionsError(
            f"pagerank_inline_bytes must be between 0 (every page to the workers) and {_MOST_INLINE:,} bytes"
        )
    return Settings(
        store,
        ranking or "pagerank",
        max_body,
        panel,
        max_links,
        large_page_rate,
        inline_bytes,
        host_ranking.strip(),
        site_ranking.strip(),
    )


OUR_PREFIXES = ("pagerank", "rankstor")  # the addon's options: a name like these that it lacks is a slip


def unknown_option_problem(name: str, known: Collection[str], flag: str = "--set ") -> str | None:
    """Why ``name`` is refused: like the addon's options (:data:`OUR_PREFIXES`) and not one of them (mitmproxy
    would keep it aside for an addon that never comes, and the proxy would run without it); else None.  The
    closest of ours is named, told apart by what follows ``pagerank_`` (which they all share)."""
    if name in known or not name.startswith(OUR_PREFIXES):
        return None
    ours = {option.removeprefix("pagerank_"): option for option in sorted(known) if option.startswith(OUR_PREFIXES)}
    close = difflib.get_close_matches(name.removeprefix("pagerank_"), list(ours), n=1, cutoff=0.6)
    if close:
        return f"{flag}{name}: no such option; did you mean {ours[close[0]]}?"
    return f"{flag}{name}: no such option (`mitmdump --options` lists them, with the addon: `-s proxy_addon/addon.py`)"


def is_candidate(flow: http.HTTPFlow, max_body: int, insecure_pages: bool = False) -> bool:
    """A response worth reading whole: an HTML page with a body, not too large, asked for as a page to show.

    Only a navigation to a document or a frame is annotated (:func:`shown_as_page`): a page's ``fetch()`` of
    an HTML page, its XHR, a prefetch, any other subresource passes byte for byte, since the page's script
    could read what the bars say, and the store with it; and only for a client that keeps them from the
    page's script (:func:`~.clients.shows_annotations`).  A browser's request without Fetch Metadata (a
    plain-http site beyond loopback: see :func:`shown_as_page`) only with ``insecure_pages``.
    """
    response = flow.response
    if response is None or flow.request.method == "HEAD" or response.status_code != 200:
        return False
    request = flow.request
    if not shown_as_page(request, insecure_pages) or not shows_annotations(request.headers.get("user-agent")):
        return False
    content_type = (response.headers.get("content-type") or "").lower().lstrip()
    if not content_type.startswith(HTML_TYPES):
        return False
    length = response.headers.get("content-length")
    return not (length and length.isdigit() and int(length) > max_body)


# What a path's last extension says is not a page (a URL without one, or another, may be)
_NOT_PAGES = frozenset(
    "css js mjs json map wasm png jpg jpeg gif webp avif svg ico bmp woff woff2 ttf otf eot "
    "mp3 mp4 m4a ogg oga webm wav pdf zip gz tgz xz bz2 zst txt xml csv".split()
)
# Sec-Fetch-Dest values of a request whose answer a browser shows as a page
_PAGE_DESTINATIONS = frozenset(("document", "iframe", "frame"))


def shown_as_page(request: http.Request, insecure_pages: bool = False) -> bool:
    """Will the client show the answer as a page (``Sec-Fetch-Dest`` document, iframe or frame)?

    A client that is no browser sends no Fetch Metadata and runs no page script: its pages may be shown.  A
    browser sends it only to potentially trustworthy URLs (https, loopback): without it, a navigation to a
    plain-http site and that page's own ``fetch()`` of itself with a navigation's headers look alike, so
    such a request is shown annotated only when the user accepts that (``insecure_pages``)."""
    destination = request.headers.get("sec-fetch-dest")
    if destination is None:
        return insecure_pages or not is_browser(request.headers.get("user-agent"))
    return destination.strip().lower() in _PAGE_DESTINATIONS


def might_be_page(request: http.Request) -> bool:
    """Might the answer be an HTML page, judged from the request alone (before the origin answers)?

    Browsers say what they fetch for (``Sec-Fetch-Dest``); without it, a GET
    whose path does not end in a known file type of another kind might be.
    """
    if request.method != "GET":
        return False
    destination = request.headers.get("sec-fetch-dest")
    if destination is not None:
        return destination.lower() in _PAGE_DESTINATIONS
    last = request.path.partition("?")[0].rpartition("/")[2]
    return "." not in last or last.rpartition(".")[2].lower() not in _NOT_PAGES


def uncompressed(request: http.Request) -> bool:
    """Will the answer come without a Content-Encoding, judged from the request?  So it will if the client
    accepts no coding but identity (``Accept-Encoding``; a coding given ``q=0`` is refused), or names none."""
    for item in (request.headers.get("accept-encoding") or "").split(","):
        coding, *parameters = item.split(";")
        coding = coding.strip().lower()
        if coding and coding != "identity" and not any(_refuses(parameter) for parameter in parameters):
            return False
    return True


def _refuses(parameter: str) -> bool:
    """Is this parameter of an Accept-Encoding item ``q=0``?"""
    name, _, value = parameter.partition("=")
    try:
        return name.strip().lower() == "q" and float(value) == 0
    except ValueError:
        return False
