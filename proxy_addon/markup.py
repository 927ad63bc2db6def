"""The markup the proxy shows: a link's PageRank bar, the page's backlinks panel, their style, and the text
and escaping that the proxy's own pages (``proxy_addon/pages``) share with them.

Pure functions of the data types below; ``rewrite`` puts their output into pages.

What a page's script may learn is that a proxy annotates it, and nothing from the store: every bar is a
``<span data-pagerank-bar>`` host element of one size with nothing else of its own, and the panel a
``<aside data-pagerank-panel>`` of no size; what they show is inside closed shadow roots declared in the markup
(``<template shadowrootmode="closed">``), which no script of the page can reach (docs/ARCHITECTURE.md, "What
a page can learn").  The hosts are built-in elements, never custom ones: a page could define a custom
element of our name whose constructor attaches a shadow root first, and the parser would then keep our
template as an ordinary, readable one.  The page's one added style block styles only the host elements, reset
with ``all: initial``; the bars are drawn by SVG attributes and the panel by its own style block, so the two
blocks' hashes are all a Content-Security-Policy has to allow.  No JavaScript.
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

from rankstore.display import percentile_text

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
    "PANEL_STYLE",
    "PANEL_STYLE_HASH",
    "STYLE_HASHES",
    "STYLE_BLOCK",
    "escape",
    "prose",
    "format_score",
    "ZERO_NOTE",
    "LATER_NOTE",
    "estimate_text",
    "bar",
    "bars",
    "icon_bar",
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
    place: int = 0  # how many of the level score more: 0 for the best
    nodes: int = 0  # hosts or sites the level's ranking ranks


@dataclass(frozen=True)
class LinkInfo:
    """What is shown for one target URL."""

    pagerank: float | None  # sum-to-1 score; None: not in the store, or not ranked yet (``later``)
    percentile: float | None = None
    toolbar: int = 0
    inlinks: int | None = 0  # None: not known (a Common Crawl ranks file gives none), left out where shown
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
    slots: int = 0  # the backlinks (referrers a level) a panel may list: its size is that of this many, shown or not


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
    backlinks: str | None = None  # the whole host's (site's) backlinks view of it, where the store has one


# The host elements' sizes in the page: one for every bar and one for the panel, whatever they show.  A bar's
# size is in em, so a link the page shrinks to nothing (font-size 0) takes its bar with it.
BAR_WIDTH_EM = 2.75
BAR_HEIGHT_EM = 0.5
# the bar's drawing, in the units of its viewBox: MAX_BAR_PX of fill inside a frame, the host's aspect ratio
_BAR_BOX = (MAX_BAR_PX + 4, 8)


def _style() -> str:
    """The page's one added style block: it styles the host elements alone, every one alike.  What they show is
    drawn inside their closed shadow roots (the bars by SVG attributes, the panel by :data:`PANEL_STYLE`)."""
    return (
        # all:initial, then what must follow the link: a link the page hides (visibility, font-size 0) hides
        # its bar; one out of the flow (an icon of a fixed-size control) holds it out of the flow too
        "span[data-pagerank-bar]{all:initial!important;display:inline-block!important;"
        f"width:{BAR_WIDTH_EM}em!important;height:{BAR_HEIGHT_EM}em!important;"
        "margin:0 .15em 0 .3em!important;vertical-align:middle!important;font-size:inherit!important;"
        "visibility:inherit!important;pointer-events:inherit!important;contain:strict!important;"
        "cursor:help!important}"
        # an icon's bar: out of the flow, drawn over the icon's top right (pulled back by its own width, so
        # that it never reaches past the control, nor past the window's edge), letting clicks through to it
        "span[data-pagerank-bar][data-icon]{position:absolute!important;width:1.5em!important;"
        "height:.3em!important;margin:0 0 0 -1.5em!important;pointer-events:none!important}"
        "span[data-pagerank-bar][data-icon=start]{margin:0!important}"
        "aside[data-pagerank-panel]{all:initial!important;display:block!important;position:fixed!important;"
        "right:0!important;"
        "bottom:0!important;width:0!important;height:0!important;overflow:visible!important;"
        "z-index:2147483647!important;contain:size layout style!important}"
    )


# Inside the panel's shadow root: the page's styles do not reach it, nor does this reach the page.  Its two
# boxes have fixed sizes (a badge, and the open panel), so where it is drawn says nothing of what it shows.
PANEL_STYLE = (
    "span[data-pagerank-bar]{display:inline-block;width:2.75em;height:.5em;margin:0 .4em 0 0;vertical-align:middle;"
    "contain:strict;cursor:help}"
    "input{position:absolute;opacity:0;width:1px;height:1px;margin:0;right:0;bottom:0}"
    ".box:has(#pagerank-close:checked){display:none}"
    ".box{all:initial;position:absolute;right:0;bottom:calc(50vh - 12px);box-sizing:border-box;display:block;"
    "width:76px;height:24px;background:#fff;color:#222;border:2px solid #c00;border-right:none;"
    "border-radius:6px 0 0 6px;box-shadow:0 2px 10px rgba(0,0,0,.25);font:13px/1.35 system-ui,sans-serif;"
    "overflow:hidden}"
    ".box:has(#pagerank-open:checked){right:8px;bottom:8px;width:min(420px,calc(100vw - 16px));"
    "height:min(480px,calc(100vh - 16px));border-right:2px solid #c00;border-radius:6px}"
    ".tab{display:block;cursor:pointer;padding:5px 8px;height:20px;box-sizing:border-box}"
    "#pagerank-open:focus-visible+.tab,#pagerank-close:focus-visible+.close{outline:2px solid #00c;"
    "outline-offset:-2px}"
    ".body{display:none;height:calc(100% - 20px);overflow:auto;padding:0 0 6px}"
    "#pagerank-open:checked~.body{display:block}"
    ".head{font-weight:bold;color:#900;margin-top:0}"
    ".close{position:absolute;top:0;right:2px;cursor:pointer;font:bold 15px/18px system-ui,sans-serif;"
    "color:#900;padding:0 4px}"
    ".p{display:block;margin:4px 10px}.section{display:block}"
    ".ol{display:block;margin:0;padding:0 10px 8px 30px}.li{display:list-item;list-style:decimal;margin:4px 0;"
    "overflow-wrap:anywhere}"
    "a{color:#00c;text-decoration:underline}small{color:#555;display:block}"
    "mark{background:#fd0;color:#000;border-radius:3px;padding:0 3px;margin-left:4px;font-size:11px;"
    "font-weight:bold}"
)


def _hash(style: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(style.encode("utf-8")).digest()).decode("ascii")


STYLE = _style()
STYLE_HASH = _hash(STYLE)
PANEL_STYLE_HASH = _hash(PANEL_STYLE)
# what a page's Content-Security-Policy must allow: the page's style block and the panel's
STYLE_HASHES = (STYLE_HASH, PANEL_STYLE_HASH)
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
# the cure is the stale ranking's note (Rankings.stale_note: the command that makes this ranking, a variant's too)
LATER_NOTE = "not ranked yet: the page came into the store after this ranking was made"


def estimate_text(estimate: Estimate) -> str:
    """What an estimate says: whose rank it is, at which level, with that level's percentile and 0-10."""
    return (
        f"{estimate.level} {estimate.name}: {estimate.level} rank {format_score(estimate.score)} · "
        f"{percentile_text(estimate.percentile)} percentile of {estimate.level}s · toolbar {estimate.toolbar}/10"
    )


def _tooltip(info: LinkInfo) -> str:
    if info.pagerank is None:
        if info.estimate is None:
            return f"PageRank: {LATER_NOTE}" if info.later else "Not in the PageRank store"
        # the host or site, its score, percentile and 0-10 among its level's, each said to be of that level: the
        # bar stands among bars of pages' PageRank, on another scale
        estimate = info.estimate
        level = estimate.level
        return (
            f"{'Not ranked yet · ' if info.later else ''}{level} {_short(estimate.name)}: {level} rank "
            f"{format_score(estimate.score)} · {percentile_text(estimate.percentile)} percentile of {level}s · "
            f"toolbar {estimate.toolbar}/10"
        )
    counted = "" if info.inlinks is None else f" · {info.inlinks:,} in-links"
    if info.pagerank == 0:
        return f"PageRank 0: {ZERO_NOTE}{counted}"
    return (
        f"PageRank {format_score(info.pagerank)} · {percentile_text(info.percentile)} percentile · "
        f"toolbar {info.toolbar}/10{counted}"
    )


def _short(name: str, most: int = 40) -> str:
    """A host's or a site's name in a tooltip: its ends, if it is longer than ``most`` (a bar's size is fixed)."""
    return name if len(name) <= most else f"{name[: most // 2 - 1]}\u2026{name[-(most // 2 - 1) :]}"


def bar(info: LinkInfo, nofollow: bool = False) -> str:
    return bars(info)[1 if nofollow else 0]


_LEVEL_ATTRIBUTES = {level: f' data-pagerank-level="{level}"' for level in ("host", "site")}  # the levels above pages
_NOFOLLOW_TEXT = " · nofollow: this link passes no PageRank"  # after the tooltip of a nofollow link
_BAR_HOST = '<span data-pagerank-bar><template shadowrootmode="closed">'
_BAR_SVG_END = "</svg></template></span>"
# Every bar's markup takes this many characters, whatever it shows (:func:`bars`): a little more than the
# longest it takes (a nofollow link to a page not ranked yet, a site's estimate of 17 digits, a ten-digit count
# of in-links, a name cut to 40 characters); a longer tooltip would be shortened to fit.
BAR_LENGTH = 640


@functools.lru_cache(maxsize=65_536)  # the same scores recur across a site's pages
def bars(info: LinkInfo) -> tuple[str, str]:
    """The bar of a link to a page of this ``info``, and the same for a nofollow link: one rendering.

    A bar is a host element with nothing of its own (one attribute, the same for all, that names it; no text;
    one size for every bar) and a closed shadow root, declared in the markup, that holds what it shows: an SVG
    drawn by its attributes (a Content-Security-Policy governs style attributes, not these), its ``<title>``
    the tooltip and, with ``role="img"``, its accessible name.  The page's script reaches neither
    (docs/ARCHITECTURE.md, "What a page can learn"), and every bar's markup is :data:`BAR_LENGTH` characters
    long, whatever it shows: a page reads its own size (Resource Timing), and so would read the sum of its bars'."""
    value = "unranked" if info.pagerank is None else repr(float(info.pagerank))
    estimate = info.estimate if info.pagerank is None else None
    width = max(0, min(MAX_BAR_PX, int(info.width if estimate is None else estimate.width)))
    text = _tooltip(info)
    data = f'data-pagerank="{value}"'
    if estimate is not None:
        data += f'{_LEVEL_ATTRIBUTES[estimate.level]} data-pagerank-estimate="{float(estimate.score)!r}"'
    data += f' data-w="{width}"'
    unranked = info.pagerank is None and estimate is None
    return (
        _bar(data, text, width, outlined=estimate is not None, unranked=unranked, nofollow=False),
        _bar(f'{data} data-nofollow="true"', text + _NOFOLLOW_TEXT, width, estimate is not None, unranked, True),
    )


def _bar(data: str, text: str, width: int, outlined: bool, unranked: bool, nofollow: bool) -> str:
    """One bar's markup, of :data:`BAR_LENGTH`: a frame (dashed for nofollow; grey for no rank at any level) and
    its fill, of ``width`` of :data:`MAX_BAR_PX` (outlined for a host's or a site's rank, not the page's), the
    tooltip ``text`` shortened where it would not fit, white space before ``</svg>`` (inert there) to fill."""
    background = "#fff" if nofollow or outlined else "#eee" if unranked else "#f3d6d6"
    border = "#aaa" if unranked else "#c00"
    dashes = ' stroke-dasharray="3 2"' if nofollow else ""
    frame = (
        f'<rect x=".5" y=".5" width="{_BAR_BOX[0] - 1}" height="{_BAR_BOX[1] - 1}" fill="{background}" '
        f'stroke="{border}"{dashes}/>'
    )
    # the narrowest fill drawn two units wide: a unit is under a pixel in a small font
    drawn = max(width, 2)
    if width == 0:
        fill = ""
    elif outlined:
        fill = f'<rect x="2.5" y="2.5" width="{drawn - 1}" height="3" fill="none" stroke="#d00"/>'
    else:
        fill = f'<rect x="2" y="2" width="{drawn}" height="4" fill="{"#e99" if nofollow else "#d00"}"/>'
    head = f'{_BAR_HOST}<svg {data} role="img" viewBox="0 0 {_BAR_BOX[0]} {_BAR_BOX[1]}" display="block"><title>'
    tail = f"</title>{frame}{fill}"
    room = BAR_LENGTH - len(head) - len(tail) - len(_BAR_SVG_END)
    label = _fitted(text, room)
    return f"{head}{label}{tail}{' ' * (room - len(label))}{_BAR_SVG_END}"


def _fitted(text: str, room: int) -> str:
    """``text`` escaped, cut (with an ellipsis) where its escaped form would take more than ``room``."""
    escaped = escape(text)
    while len(escaped) > room and text:
        text = text[: max(0, len(text) - max(1, len(escaped) - room))]
        escaped = escape(text.rstrip() + "\u2026") if text else ""
    return escaped


def icon_bar(markup: str, at_end: bool = True) -> str:
    """A bar for a link with no text of its own (an icon in a control of a fixed size): held out of the flow,
    so that it changes neither the control's size nor where its icon sits; drawn over the icon's end when it
    comes after it (``at_end``), else at the link's start (a block holding the icon came first)."""
    return markup.replace("<span data-pagerank-bar>", _ICON_HOSTS[at_end], 1)


_ICON_HOSTS = {True: "<span data-pagerank-bar data-icon>", False: '<span data-pagerank-bar data-icon="start">'}


def proxy_url(path: str, **query: str) -> str:
    return f"http://{PROXY_HOST}{path}" + (
        "?" + "&".join(f"{k}={quote(v, safe='')}" for k, v in query.items()) if query else ""
    )


# The panel is written in phrasing elements alone (spans shown as paragraphs and lists by its style): it may
# stand inside an open <p>, where a block element's start tag would close the page's paragraph.
def _para(markup: str, attributes: str = "") -> str:
    return f'<span class="p"{attributes}>{markup}</span>'


def _list(items: str) -> str:
    return f'<span class="ol" role="list">{items}</span>'


# A panel's size says nothing of what it shows (a page reads its own size): every item of its lists takes
# ITEM_LENGTH characters, its backlinks' URLs and titles cut to fit (a backlink whose URL alone is longer than
# HREF_MOST is left to the explorer), and the panel as a whole takes panel_length(slots), its lists' items
# missing padded out with a comment.
ITEM_LENGTH = 1536
HREF_MOST = 320
PANEL_FIXED_LENGTH = 8192


def panel_length(slots: int) -> int:
    """The characters every panel of ``slots`` takes: room for a level's two lists of that many."""
    return PANEL_FIXED_LENGTH + 2 * slots * ITEM_LENGTH


def _padded(markup: str, length: int) -> str:
    """``markup`` with a comment after it that makes it ``length`` characters (at least 7 more are needed)."""
    return f"{markup}<!--{' ' * (length - len(markup) - 7)}-->"


@functools.lru_cache(maxsize=16_384)  # the same good pages link to many others
def _backlink_item(link: Backlink) -> str:
    """A backlink as its list shows it, of :data:`ITEM_LENGTH` characters; "" for one whose URL is too long."""
    href = escape(link.url)
    if len(href) > HREF_MOST:
        return ""
    new = ' data-new="true"' if link.new else ""
    badge = "<mark>new</mark>" if link.new else ""
    head = (
        f'<span class="li" role="listitem" data-pagerank="{float(link.info.pagerank or 0.0)!r}"{new}>'
        f'{bar(link.info, link.nofollow)}<a href="{href}">'
    )
    shown_url = _fitted(link.url, 160)
    tail = f"</a>{badge}<small>{shown_url}</small></span>"
    title = _fitted(link.title or link.url, ITEM_LENGTH - len(head) - len(tail) - 7)
    return _padded(f"{head}{title}{tail}", ITEM_LENGTH)


def _referrer_item(level: str, referrer: Referrer) -> str:
    """A referring host (site) as its level's list shows it, of :data:`ITEM_LENGTH` characters ("" past it)."""
    item = (
        f'<span class="li" role="listitem" data-pagerank-level="{escape(level)}">{bar(referrer.info)}'
        f'<a href="{escape("http://" + referrer.name + "/")}">{_fitted(referrer.name, 80)}</a>'
        f"<small>{referrer.links:,} link{'s' if referrer.links != 1 else ''} &#183; "
        f"#{(referrer.info.estimate.place + 1) if referrer.info.estimate else 0:,}</small></span>"
    )
    return _padded(item, ITEM_LENGTH) if len(item) <= ITEM_LENGTH - 7 else ""


def level_section(level: LevelPanel) -> str:
    """A level's part of the panel of a page with no score of its own: the host's (site's) rank, its best
    referrers by their rank at that level, and the whole-site backlinks view."""
    said = estimate_text(level.estimate) if level.estimate is not None else f"{level.level} {level.name}: not ranked"
    if level.estimate is not None and level.estimate.nodes:
        said += f" · #{level.estimate.place + 1:,} of {level.estimate.nodes:,}"
    items = "".join(_referrer_item(level.level, referrer) for referrer in level.referrers)
    listed = (
        _para(f"Best referring {escape(level.level)}s by {escape(level.level)} rank:") + _list(items)
        if items
        else _para(f"No referring {escape(level.level)}s in the store.")
    )
    # the whole host's (site's) backlinks, by referring host (site)
    view = (
        _para(
            f'<a href="{escape(level.backlinks)}">Backlinks of the whole {escape(level.level)} '
            f"{_fitted(level.name, 80)}</a>"
        )
        if level.backlinks and len(level.backlinks) <= 2 * HREF_MOST
        else ""
    )
    return (
        f'<span class="section" data-pagerank-level="{escape(level.level)}">{_para(_fitted(said, 400))}{listed}'
        f"{view}</span>"
    )


def panel(data: PanelData) -> str:
    """The page's panel: a tab at the window's edge that opens onto the page's score and its best backlinks (or,
    for a page with no score, its host's and its site's rank and best referrers), in a closed shadow root."""
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
            f"PageRank {shown} · {percentile_text(info.percentile, 1)} pct · "
            f"toolbar {info.toolbar}/10 · {data.total_backlinks:,} backlinks"
        )
        if data.host_position is not None:
            summary += f" · host #{data.host_position:,}"
    if data.stale is not None:
        summary += " · stale ranking"
    items = [item for item in map(_backlink_item, data.backlinks) if item]
    backlinks = _list("".join(items)) if items else _para("No backlinks in the store.")
    explorer = escape(proxy_url("/backlinks", url=data.url, ranking=data.ranking))
    page = escape(proxy_url("/page", url=data.url, ranking=data.ranking))
    score = "unranked" if info.pagerank is None else repr(float(info.pagerank))
    # which level answered for the page: its own score, else its host's or its site's rank
    level = "page" if info.pagerank is not None else answered.level if answered is not None else "none"
    host = ""
    if data.host is not None and data.hostrank is not None:
        rank = f"host rank {format_score(data.hostrank)} (#{data.host_position:,})"
        host = _para(f"Host {_fitted(data.host, 80)}: {rank}")
    new = ""
    if data.since is not None and data.new_backlinks:
        since = escape(proxy_url("/backlinks", url=data.url, since=str(data.since)))
        new = _para(f'<a href="{since}">{data.new_backlinks:,} new since build {data.since}</a>')
    stale = "" if data.stale is None else _para(f"Stale: {prose(data.stale)}.", ' data-stale="true"')
    if info.pagerank is None and data.levels:  # no backlinks of its own to list: its host's and site's
        body = stale + "".join(level_section(one) for one in data.levels) + _para(f'<a href="{page}">This page</a>')
    else:
        body = f"{stale}{host}{new}{_para('Best backlinks by PageRank:')}{backlinks}" + _para(
            f'<a href="{explorer}">All backlinks</a> &#183; <a href="{page}">This page</a>'
        )
    said = _fitted(summary, 240)
    head = f'<span class="p head">{said}</span>'
    markup = (
        f"{_PANEL_HOST}"
        f'<span id="pagerank-panel" class="box" data-pagerank="{score}" data-pagerank-level="{level}">'
        f'<input type="checkbox" id="pagerank-open" aria-label="PageRank panel: {said}">'
        f'<label for="pagerank-open" class="tab" title="{said}">{bar(info)}</label>'
        f'<span class="body">{head}{body}</span>{_PANEL_CLOSE}</span>'
    )
    listed = max(len(data.backlinks), *(len(one.referrers) for one in data.levels), 0)
    length = panel_length(max(data.slots, listed)) - len(_PANEL_END)
    if len(markup) > length - 7:  # only a store's sentences of a pathological length get here
        markup = f'{_PANEL_HOST}<span id="pagerank-panel" class="box">{_para(f"<a href={page}>This page</a>")}</span>'
    return _padded(markup, length) + _PANEL_END


# The panel: a host element of no size (an <aside>: a block start tag, which reopens none of the page's
# formatting elements, as a <span> would at the end of a file), fixed at the window's corner, and a closed
# shadow root with its own style.  Closed, it is a tab at the middle of the window's right edge (its checkbox
# opens it); opened, a box of one size at the bottom right; the other checkbox's label closes it for as long as
# the page is shown.
_PANEL_HOST = f'<aside data-pagerank-panel><template shadowrootmode="closed"><style>{PANEL_STYLE}</style>'
# last in the box, so that a keyboard comes to the tab's checkbox first, then the panel's links, then this one
_PANEL_CLOSE = (
    '<input type="checkbox" id="pagerank-close" aria-label="Close the PageRank panel">'
    '<label for="pagerank-close" class="close" title="Close the PageRank panel" aria-hidden="true">&#215;</label>'
)
_PANEL_END = "</template></aside>"
