"""The markup the proxy shows: a link's PageRank bar, the page's backlinks panel, their style, and the text
and escaping that the proxy's own pages (``proxy_addon/pages``) share with them.

Pure functions of the data types below; ``rewrite`` puts their output into pages.

Inserted markup uses custom element names (``pagerank-bar``, ``pagerank-panel``)
that the page's CSS does not target, reset with ``all: initial``; our CSS only
selects those names and ``#pagerank-panel``, so nothing leaks into the page.
Bar widths are CSS classes, not ``style`` attributes, so one hashed ``<style>``
block is all a Content-Security-Policy has to allow.  No JavaScript.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import quote

__all__ = [
    "PROXY_HOST",
    "MAX_BAR_PX",
    "Estimate",
    "LinkInfo",
    "Backlink",
    "PanelData",
    "Referrer",
    "LevelPanel",
    "STYLE",
    "STYLE_HASH",
    "STYLE_BLOCK",
    "escape",
    "prose",
    "format_score",
    "ZERO_NOTE",
    "LATER_NOTE",
    "estimate_text",
    "bar",
    "bars",
    "proxy_url",
    "level_section",
    "panel",
]

PROXY_HOST = "pagerank.proxy"
MAX_BAR_PX = 40


class Estimate(NamedTuple):
    """A host's or a site's rank, shown for a link whose page the store has no score for: the finest level
    ranked above the page (issue 32).  Percentile, toolbar and width are within that level's own ranking.
    A named tuple: a page of links to a thousand hosts makes a thousand, and a tuple is made fastest."""

    level: str  # "host" or "site"
    name: str  # the host (with its port) or the site whose rank it is
    score: float  # sum-to-1 over the level's hosts or sites
    percentile: float
    toolbar: int
    width: int  # bar pixels, 0..MAX_BAR_PX: log of the score between the level's lowest and highest
    position: int = 0  # 0 for the best of the level
    nodes: int = 0  # hosts or sites the level's ranking ranks


@dataclass(frozen=True)
class LinkInfo:
    """What is shown for one target URL."""

    pagerank: float | None  # sum-to-1 score; None: not in the store, or not ranked yet (``later``)
    percentile: float | None = None
    toolbar: int = 0
    inlinks: int = 0
    width: int = 0  # bar pixels, 0..MAX_BAR_PX
    # in the store, but added since the ranking's version was computed (pagerank None): "not ranked yet",
    # which a user cures with `rankstore rank`, unlike a page the crawl never reached
    later: bool = False
    # with no page score (pagerank None): the rank of the page's host, else its site, where one is ranked
    estimate: Estimate | None = None


@dataclass(frozen=True)
class Backlink:
    url: str
    title: str | None
    info: LinkInfo
    nofollow: bool = False
    new: bool = False  # first seen after the previous build


@dataclass(frozen=True)
class PanelData:
    url: str
    info: LinkInfo
    backlinks: Sequence[Backlink] = ()
    total_backlinks: int = 0
    ranking: str = "pagerank"
    since: int | None = None  # the previous build: backlinks first seen after it are new (None: one build)
    new_backlinks: int = 0  # of all the page's backlinks, not only those shown
    host: str | None = None  # the page's host and its host rank, where the hosts are ranked
    hostrank: float | None = None
    host_position: int | None = None
    stale: str | None = None  # the ranking predates the store's newest build (Store.rankings.stale_note says how)
    # a page with no score of its own: its host's and its site's rank, each with its best referrers
    levels: Sequence[LevelPanel] = ()
    pages_ranked: bool = True  # False: the store ranks no pages, only hosts or sites (a domain graph)


@dataclass(frozen=True)
class Referrer:
    """A host (site) linking to the page's host (site), as the panel lists it."""

    name: str
    info: LinkInfo  # its own rank at that level (an estimate-style bar)
    links: int  # page links from it


@dataclass(frozen=True)
class LevelPanel:
    """What the panel of a page with no score of its own says at one level above it."""

    level: str  # "host" or "site"
    name: str
    estimate: Estimate | None  # None: the level's ranking does not rank it
    referrers: Sequence[Referrer] = ()
    backlinks: str | None = None  # the whole-site backlinks view of it, where the store has one


def _style() -> str:
    widths = "".join(
        f'pagerank-bar[data-w="{w}"]>pagerank-fill{{width:{w}px!important}}' for w in range(MAX_BAR_PX + 1)
    )
    return (
        "pagerank-bar{all:initial!important;display:inline-block!important;vertical-align:middle!important;"
        f"width:{MAX_BAR_PX}px!important;height:6px!important;margin:0 4px 0 2px!important;"
        "background:#f3d6d6!important;border:1px solid #c00!important;border-radius:1px!important;"
        "box-sizing:content-box!important;line-height:0!important;overflow:hidden!important;"
        "text-decoration:none!important;cursor:help!important;float:none!important;position:static!important}"
        "pagerank-fill{all:initial!important;display:block!important;height:6px!important;background:#d00!important}"
        "pagerank-bar[data-pagerank=unranked]{background:#eee!important;border-color:#aaa!important}"
        "pagerank-bar[data-nofollow]{border-style:dashed!important;background:#fff!important}"
        "pagerank-bar[data-nofollow]>pagerank-fill{background:#e99!important}"
        # an estimate (a host's or site's rank, not the page's): a white bar whose fill is outlined, not filled
        "pagerank-bar[data-pagerank-level]{background:#fff!important;border-color:#c00!important}"
        "pagerank-bar[data-pagerank-level]>pagerank-fill{background:transparent!important;"
        "border:1px solid #d00!important;box-sizing:border-box!important}"
        + widths
        + "#pagerank-panel{all:initial!important;position:fixed!important;right:12px!important;bottom:12px!important;"
        "z-index:2147483647!important;max-width:min(420px,90vw)!important;max-height:70vh!important;"
        "overflow:auto!important;"
        "background:#fff!important;color:#222!important;border:2px solid #c00!important;border-radius:6px!important;"
        "box-shadow:0 2px 10px rgba(0,0,0,.25)!important;font:13px/1.35 system-ui,sans-serif!important;"
        "display:block!important}"
        "#pagerank-panel *{all:revert;font:inherit;color:inherit;box-sizing:border-box}"
        "#pagerank-panel summary{cursor:pointer;padding:6px 10px;font-weight:bold;color:#900;list-style:revert}"
        "#pagerank-panel ol{margin:0;padding:0 10px 8px 30px}"
        "#pagerank-panel li{margin:4px 0;overflow-wrap:anywhere}"
        "#pagerank-panel a{color:#00c;text-decoration:underline}"
        "#pagerank-panel small{color:#555;display:block}"
        "#pagerank-panel p{margin:4px 10px}"
        "#pagerank-panel mark{background:#fd0;color:#000;border-radius:3px;padding:0 3px;margin-left:4px;"
        "font-size:11px;font-weight:bold}"
    )


STYLE = _style()
STYLE_HASH = "sha256-" + base64.b64encode(hashlib.sha256(STYLE.encode("utf-8")).digest()).decode("ascii")
STYLE_BLOCK = f'<style id="pagerank-proxy-style">{STYLE}</style>'


def escape(value: str) -> str:
    """Escape for text and quoted attributes; non-ASCII as character references (any charset)."""
    return html.escape(value, quote=True).encode("ascii", "xmlcharrefreplace").decode("ascii")


def prose(value: str) -> str:
    """:func:`escape` for a sentence of the store's (a stale ranking's note): its `commands` in quotes, as a
    page reads them, where a terminal shows the backticks."""
    return re.sub(r"`([^`]*)`", "&#8220;\\1&#8221;", escape(value))


def format_score(value: float | None) -> str:
    if value is None:
        return "unranked"
    return f"{value:.3g}" if value >= 0.001 else f"{value:.2e}"


# What a score of 0 means: the ranking's rank source (E: a personalised, topic, TrustRank or BadRank seed)
# has no path to the page, so no random surfer of that ranking ever lands there.  Its bar is empty.
ZERO_NOTE = "the rank source never reaches this page"
LATER_NOTE = "not ranked yet: the page came into the store after this ranking (run `rankstore rank`)"


def estimate_text(estimate: Estimate) -> str:
    """What an estimate says: whose rank it is, at which level, with that level's percentile and 0-10."""
    return (
        f"{estimate.level} {estimate.name}: {estimate.level} rank {format_score(estimate.score)} · "
        f"{estimate.percentile:.2f} percentile of {estimate.level}s · toolbar {estimate.toolbar}/10"
    )


def _tooltip(info: LinkInfo) -> str:
    if info.pagerank is None:
        if info.estimate is None:
            return f"PageRank: {LATER_NOTE}" if info.later else "Not in the PageRank store"
        # short (a page of links to a thousand hosts carries a thousand of these): the host or site, its score,
        # percentile and 0-10 among its level's; the bar's look and its level attribute say it is no page's
        estimate = info.estimate
        return (
            f"{'Not ranked yet · ' if info.later else ''}{estimate.level} {estimate.name}: "
            f"{format_score(estimate.score)} · {estimate.percentile:.2f} percentile · toolbar {estimate.toolbar}/10"
        )
    if info.pagerank == 0:
        return f"PageRank 0: {ZERO_NOTE} · {info.inlinks:,} in-links"
    return (
        f"PageRank {format_score(info.pagerank)} · {info.percentile:.2f} percentile · "
        f"toolbar {info.toolbar}/10 · {info.inlinks:,} in-links"
    )


def bar(info: LinkInfo, nofollow: bool = False) -> str:
    return bars(info)[1 if nofollow else 0]


_LEVEL_ATTRIBUTES = {level: f' data-pagerank-level="{level}"' for level in ("host", "site")}  # the levels above pages
_NOFOLLOW_NOTE = escape(" · nofollow: this link passes no PageRank")  # after the tooltip of a nofollow link


@functools.lru_cache(maxsize=65_536)  # the same scores recur across a site's pages
def bars(info: LinkInfo) -> tuple[str, str]:
    """The bar of a link to a page of this ``info``, and the same for a nofollow link: one rendering."""
    value = "unranked" if info.pagerank is None else repr(float(info.pagerank))
    estimate = info.estimate if info.pagerank is None else None
    width = max(0, min(MAX_BAR_PX, int(info.width if estimate is None else estimate.width)))
    label = escape(_tooltip(info))
    head = f'<pagerank-bar data-pagerank="{value}"'
    if estimate is not None:
        head += f'{_LEVEL_ATTRIBUTES[estimate.level]} data-pagerank-estimate="{float(estimate.score)!r}"'
    head += f' data-w="{width}"'
    # role img: its title is its accessible name, so an empty bar says why to a screen reader as in its tooltip
    tail = '" role="img"><pagerank-fill></pagerank-fill></pagerank-bar>'
    return (
        f'{head} title="{label}{tail}',
        f'{head} data-nofollow="true" title="{label}{_NOFOLLOW_NOTE}{tail}',
    )


def proxy_url(path: str, **query: str) -> str:
    return f"http://{PROXY_HOST}{path}" + (
        "?" + "&".join(f"{k}={quote(v, safe='')}" for k, v in query.items()) if query else ""
    )


@functools.lru_cache(maxsize=16_384)  # the same good pages link to many others
def _backlink_item(link: Backlink) -> str:
    new = ' data-new="true"' if link.new else ""
    badge = "<mark>new</mark>" if link.new else ""
    return (
        f'<li data-pagerank="{float(link.info.pagerank or 0.0)!r}"{new}>{bar(link.info, link.nofollow)}'
        f'<a href="{escape(link.url)}">{escape(link.title or link.url)}</a>{badge}'
        f"<small>{escape(link.url)}</small></li>"
    )


def level_section(level: LevelPanel) -> str:
    """A level's part of the panel of a page with no score of its own: the host's (site's) rank, its best
    referrers by their rank at that level, and the whole-site backlinks view."""
    said = estimate_text(level.estimate) if level.estimate is not None else f"{level.level} {level.name}: not ranked"
    if level.estimate is not None and level.estimate.nodes:
        said += f" · #{level.estimate.position + 1:,} of {level.estimate.nodes:,}"
    items = "".join(
        f'<li data-pagerank-level="{escape(level.level)}">{bar(referrer.info)}'
        f'<a href="{escape("http://" + referrer.name + "/")}">{escape(referrer.name)}</a>'
        f"<small>{referrer.links:,} link{'s' if referrer.links != 1 else ''} &#183; "
        f"#{(referrer.info.estimate.position + 1) if referrer.info.estimate else 0:,}</small></li>"
        for referrer in level.referrers
    )
    listed = (
        f"<p>Best referring {escape(level.level)}s by {escape(level.level)} rank:</p><ol>{items}</ol>"
        if items
        else f"<p>No referring {escape(level.level)}s in the store.</p>"
    )
    # the backlinks view takes one host: for a site, the host of the site's own name
    view = (
        f'<p><a href="{escape(level.backlinks)}">Backlinks of the whole host {escape(level.name)}</a></p>'
        if level.backlinks
        else ""
    )
    return f'<section data-pagerank-level="{escape(level.level)}"><p>{escape(said)}</p>{listed}{view}</section>'


def panel(data: PanelData) -> str:
    info = data.info
    answered = next((level for level in data.levels if level.estimate is not None), None)
    if not data.pages_ranked:  # nothing page-level to say: the levels answer
        summary = "No page ranking in this store"
        if answered is not None and answered.estimate is not None:
            summary += f" · its {answered.level} ranks {format_score(answered.estimate.score)}"
    elif info.pagerank is None:
        summary = f"PageRank: {LATER_NOTE}" if info.later else "PageRank: this page is not in the store"
        if answered is not None and answered.estimate is not None:
            summary += f" · its {answered.level} ranks {format_score(answered.estimate.score)}"
    else:
        shown = f"0 ({ZERO_NOTE})" if info.pagerank == 0 else format_score(info.pagerank)
        summary = (
            f"PageRank {shown} · {info.percentile:.1f} pct · "
            f"toolbar {info.toolbar}/10 · {data.total_backlinks:,} backlinks"
        )
        if data.host_position is not None:
            summary += f" · host #{data.host_position:,}"
    if data.stale is not None:
        summary += " · stale ranking"
    items = [_backlink_item(link) for link in data.backlinks]
    backlinks = f"<ol>{''.join(items)}</ol>" if items else "<p>No backlinks in the store.</p>"
    explorer = escape(proxy_url("/backlinks", url=data.url, ranking=data.ranking))
    page = escape(proxy_url("/page", url=data.url, ranking=data.ranking))
    score = "unranked" if info.pagerank is None else repr(float(info.pagerank))
    # which level answered for the page: its own score, else its host's or its site's rank
    level = "page" if info.pagerank is not None else answered.level if answered is not None else "none"
    host = ""
    if data.host is not None and data.hostrank is not None:
        host = f"<p>Host {escape(data.host)}: host rank {format_score(data.hostrank)} (#{data.host_position:,})</p>"
    new = ""
    if data.since is not None and data.new_backlinks:
        since = escape(proxy_url("/backlinks", url=data.url, since=str(data.since)))
        new = f'<p><a href="{since}">{data.new_backlinks:,} new since build {data.since}</a></p>'
    stale = "" if data.stale is None else f'<p data-stale="true">Stale: {prose(data.stale)}.</p>'
    if info.pagerank is None and data.levels:  # no backlinks of its own to list: its host's and site's
        return (
            f'<aside id="pagerank-panel" data-pagerank="{score}" data-pagerank-level="{level}">'
            f"<details><summary>{escape(summary)}</summary>{stale}"
            + "".join(level_section(one) for one in data.levels)
            + f'<p><a href="{page}">This page</a></p></details></aside>'
        )
    return (
        f'<aside id="pagerank-panel" data-pagerank="{score}" data-pagerank-level="{level}">'
        f"<details><summary>{escape(summary)}</summary>{stale}{host}{new}"
        f"<p>Best backlinks by PageRank:</p>{backlinks}"
        f'<p><a href="{explorer}">All backlinks</a> &#183; <a href="{page}">This page</a></p>'
        "</details></aside>"
    )
