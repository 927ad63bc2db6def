"""The addon's options, checked by pure functions (mitmproxy's blocklist style)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from mitmproxy import exceptions, http

__all__ = ["Settings", "parse_settings", "is_candidate", "HTML_TYPES"]

HTML_TYPES = ("text/html", "application/xhtml+xml")


@dataclass(frozen=True)
class Settings:
    store: str
    ranking: str
    max_body: int
    panel: int
    max_links: int = 20_000


def parse_settings(store: str, ranking: str, max_body: int, panel: int, max_links: int = 20_000) -> Settings | None:
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
    return Settings(store, ranking or "pagerank", max_body, panel, max_links)


def is_candidate(flow: http.HTTPFlow, max_body: int) -> bool:
    """A response worth reading whole: an HTML page with a body, not too large."""
    response = flow.response
    if response is None or flow.request.method == "HEAD" or response.status_code != 200:
        return False
    content_type = (response.headers.get("content-type") or "").lower().lstrip()
    if not content_type.startswith(HTML_TYPES):
        return False
    length = response.headers.get("content-length")
    return not (length and length.isdigit() and int(length) > max_body)
