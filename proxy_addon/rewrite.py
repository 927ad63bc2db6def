"""HTML text -> the same text with PageRank bars and a backlinks panel inserted.

A pure function: it never imports mitmproxy and does no I/O; the scores come
from the ``lookup`` callable it is given.  The document is never re-serialised:
a small tokenizer (after the WHATWG HTML tokenizer's states, for the parts that
matter) finds the ``<a href>`` and ``<area href>`` start tags, and the output is
the input with text inserted at chosen offsets.  Every original character is
kept, in order.

The tokenizer keeps out of raw text and RCDATA (``script``, ``style``,
``textarea``, ``title``, ``xmp``, ``iframe``, ``noembed``, ``noframes``,
``noscript`` as a scripting browser sees it, ``plaintext``), comments, CDATA
sections, ``<template>`` contents (inert) and SVG/MathML (their ``a`` elements
are not HTML links; an HTML element there would not render).

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
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence
from urllib.parse import quote

from rankstore.extract import sniff_charset
from rankstore.urls import canonical, resolver

from .csp import allow_style_hash

__all__ = ["escape", "format_score", "LinkInfo", "Backlink", "PanelData", "Rewrite", "annotate", "annotate_bytes", "remove_edits", "STYLE", "STYLE_HASH", "PROXY_HOST", "MAX_BAR_PX"]

PROXY_HOST = "pagerank.proxy"
MAX_BAR_PX = 40


@dataclass(frozen=True)
class LinkInfo:
    """What is shown for one target URL."""

    pagerank: float | None  # sum-to-1 score; None: not in the store
    percentile: float | None = None
    toolbar: int = 0
    inlinks: int = 0
    width: int = 0  # bar pixels, 0..MAX_BAR_PX


@dataclass(frozen=True)
class Backlink:
    url: str
    title: str | None
    info: LinkInfo
    nofollow: bool = False


@dataclass(frozen=True)
class PanelData:
    url: str
    info: LinkInfo
    backlinks: Sequence[Backlink] = ()
    total_backlinks: int = 0
    ranking: str = "pagerank"


@dataclass
class Rewrite:
    text: str
    edits: list[tuple[int, str]] = field(default_factory=list)  # (offset in the input, inserted text)
    links: int = 0  # bars inserted
    ranked: int = 0  # of which for pages in the store


def _style() -> str:
    widths = "".join(f"pagerank-bar[data-w=\"{w}\"]>pagerank-fill{{width:{w}px!important}}" for w in range(MAX_BAR_PX + 1))
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
        + widths
        + "#pagerank-panel{all:initial!important;position:fixed!important;right:12px!important;bottom:12px!important;"
        "z-index:2147483647!important;max-width:min(420px,90vw)!important;max-height:70vh!important;overflow:auto!important;"
        "background:#fff!important;color:#222!important;border:2px solid #c00!important;border-radius:6px!important;"
        "box-shadow:0 2px 10px rgba(0,0,0,.25)!important;font:13px/1.35 system-ui,sans-serif!important;display:block!important}"
        "#pagerank-panel *{all:revert;font:inherit;color:inherit;box-sizing:border-box}"
        "#pagerank-panel summary{cursor:pointer;padding:6px 10px;font-weight:bold;color:#900;list-style:revert}"
        "#pagerank-panel ol{margin:0;padding:0 10px 8px 30px}"
        "#pagerank-panel li{margin:4px 0;overflow-wrap:anywhere}"
        "#pagerank-panel a{color:#00c;text-decoration:underline}"
        "#pagerank-panel small{color:#555;display:block}"
        "#pagerank-panel p{margin:4px 10px}"
    )


STYLE = _style()
STYLE_HASH = "sha256-" + base64.b64encode(hashlib.sha256(STYLE.encode("utf-8")).digest()).decode("ascii")
STYLE_BLOCK = f'<style id="pagerank-proxy-style">{STYLE}</style>'

# ------------------------------------------------------------------ tokenizer

_WS = "\t\n\f\r "
_TAG_SOURCE = (
    r"<(?P<end>/)?(?P<name>[A-Za-z][^\t\n\f\r />]*+)"
    r"(?P<attrs>(?>[\t\n\f\r /]++|[^\t\n\f\r />][^\t\n\f\r /=>]*+"
    r"""(?>[\t\n\f\r ]*+=[\t\n\f\r ]*+(?>"[^"]*+"|'[^']*+'|[^\t\n\f\r >]++)?)?)*+)"""
    r"(?P<close>>|\Z)"
)
_TAG = re.compile(_TAG_SOURCE)
# Everything up to the next token the scanner cares about, consumed inside the
# regex engine rather than by Python code: text,
# a lone '<', and whole tags whose names do not matter here, quoted values
# included (so a '<a' inside a quoted value is never taken for a tag).  For
# speed this grammar treats any quote in such a tag as opening a value; where a
# page has an unquoted value with a quote in it (alt=don't) the scan may run
# past a link, which then gets no bar: a missed bar, never a broken page.
# a, area, base, body, head, html, iframe, meta, math, noembed, noframes, noscript,
# plaintext, svg, script, style, template, textarea, title, xmp: as a trie, which
# Python's regex engine tries far faster than a flat list of twenty names
_INTERESTING = (r"(?:a(?:rea)?|b(?:ase|ody)|h(?:ead|tml)|iframe|m(?:eta|ath)|no(?:embed|frames|script)|plaintext"
                r"|s(?:vg|cript|tyle)|t(?:emplate|extarea|itle)|xmp)(?=[\t\n\f\r />])")
# first letters no interesting name has: such tags are skipped without the lookahead
_DULL_INITIAL = "c-gj-loq-ru-wy-zC-GJ-LOQ-RU-WY-Z"
_INTERESTING_END = r"(?:template|svg|math)(?=[\t\n\f\r />])"  # the only end tags the HTML context needs
_SKIP_SOURCE = (
    rf"""(?:[^<]++|<(?:[{_DULL_INITIAL}]|(?!(?ai:{_INTERESTING}))[A-Za-z])(?:[^>"']++|"[^"]*+"|'[^']*+')*+>"""
    rf"""|</(?!(?ai:{_INTERESTING_END}))[A-Za-z](?:[^>"']++|"[^"]*+"|'[^']*+')*+>|<(?![A-Za-z/!?]))*+""")
# The skip and the tag after it in one call: most tokens need nothing else.
_NEXT = re.compile(rf"{_SKIP_SOURCE}(?P<tag>{_TAG_SOURCE})?")
_ATTR = re.compile(
    r"""(?P<name>[^\t\n\f\r />][^\t\n\f\r /=>]*+)
    (?:[\t\n\f\r ]*+=[\t\n\f\r ]*+(?:"(?P<dq>[^"]*+)"|'(?P<sq>[^']*+)'|(?P<uq>[^\t\n\f\r >]++))?)?""",
    re.X,
)
_RAW_TEXT = {"script", "style", "xmp", "iframe", "noembed", "noframes", "noscript", "textarea", "title"}
_BREAKOUT = {
    "b", "big", "blockquote", "body", "br", "center", "code", "dd", "div", "dl", "dt", "em", "embed", "h1", "h2",
    "h3", "h4", "h5", "h6", "head", "hr", "i", "img", "li", "listing", "menu", "meta", "nobr", "ol", "p", "pre",
    "ruby", "s", "small", "span", "strong", "strike", "sub", "sup", "table", "tt", "u", "ul", "var",
}
_INTEGRATION = {"foreignobject", "desc", "title", "annotation-xml"}


def _attributes(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, double, single, unquoted in _ATTR.findall(text):
        name = name.lower()
        if name not in found:  # the first of a repeated attribute wins
            value = double or single or unquoted  # each "" when absent; an empty value is "" too
            found[name] = html.unescape(value) if "&" in value else value
    return found


_NOFOLLOW = frozenset(("nofollow", "ugc", "sponsored"))


def _link(attrs_text: str, position: int) -> tuple[int, str, bool] | None:
    """(offset, href, nofollow) for a link's start tag, or None without an href.

    :func:`_attributes` cut down to the two attributes a link needs (the first
    of a repeated attribute wins; character references decoded).
    """
    href = rel = None
    for name, double, single, unquoted in _ATTR.findall(attrs_text):
        key = name.lower()
        if key == "href":
            if href is None:
                href = double or single or unquoted
        elif key == "rel" and rel is None:
            rel = double or single or unquoted
    return None if href is None else _link_values(position, href, rel)


def _link_values(position: int, href: str, rel: str | None) -> tuple[int, str, bool]:
    """(offset, href, nofollow) from a link's raw href and rel values (character references decoded)."""
    if "&" in href:
        href = html.unescape(href)
    if not rel:
        return position, href, False
    if "&" in rel:
        rel = html.unescape(rel)
    return position, href, not _NOFOLLOW.isdisjoint(rel.lower().split())


@dataclass
class _Scan:
    links: list[tuple[int, str, bool]]  # (offset after the start tag's '>', href, nofollow)
    body_at: int | None  # offset after <body ...>
    head_at: int | None  # offset after <head ...>
    html_at: int | None
    doctype_end: int | None
    base_href: str | None
    robots_nofollow: bool
    csp_metas: list[tuple[int, int, str]]  # (content value start, end, policy) of meta CSP tags


def _head_tag(scan: _Scan, name: str, text: str, start: int, end: int) -> None:
    """What a <base> or <meta> tag (attributes at text[start:end]) says."""
    attrs_text = text[start:end]
    if name == "base":
        if scan.base_href is None:
            scan.base_href = _attributes(attrs_text).get("href")
        return
    attrs = _attributes(attrs_text)
    if attrs.get("name", "").strip().lower() == "robots" and "nofollow" in attrs.get("content", "").lower():
        scan.robots_nofollow = True
    if attrs.get("http-equiv", "").strip().lower() == "content-security-policy":
        content = re.search(r"""(?i)\bcontent[\t\n\f\r ]*=[\t\n\f\r ]*(?:"([^"]*)"|'([^']*)')""", attrs_text)
        if content:
            group = 1 if content.group(1) is not None else 2
            scan.csp_metas.append((start + content.start(group), start + content.end(group), content.group(group)))


def _scan_fast(text: str) -> _Scan:
    """:func:`_scan_python`, with the tokenizing done by the C module ``_fastscan``."""
    links, body_at, head_at, html_at, doctype_end, extras, raw = _fastscan.scan(text)
    if raw:  # links with a rel or a character reference in their href: decoded here
        links = [link if link[2] is False else _link_values(*link) for link in links]
    scan = _Scan(links, body_at, head_at, html_at, doctype_end, None, False, [])
    for name, start, end in extras:
        _head_tag(scan, name, text, start, end)
    return scan


def _scan_python(text: str) -> _Scan:
    """Find the links and the places to insert at: the reference scanner (``_fastscan`` is its C twin)."""
    scan = _Scan([], None, None, None, None, None, False, [])
    position, length = 0, len(text)
    stack: list[str] = []  # foreign-content namespaces: "svg", "math", or "html" for integration points
    template_depth = 0
    find = text.find
    following_token = _NEXT.match
    links_append = scan.links.append
    while True:
        match = None
        if stack and stack[-1] != "html":
            start = find("<", position)  # foreign content: every tag counts (breakout, nesting)
        else:
            token = following_token(text, position)
            if not stack and not template_depth:
                # the common case: a run of links in HTML, each needing nothing but its attributes
                while True:
                    end, name, close = token.group("end", "name", "close")
                    if (name != "a" and name != "A") or end or not close:
                        break
                    position = token.end()
                    link = _link(token.group("attrs"), position)
                    if link is not None:
                        links_append(link)
                    token = following_token(text, position)
            if token.group("tag") is not None:
                match, start = token, token.start("tag")
            else:
                start = token.end()
                if start >= length:
                    break
        if start < 0 or start + 1 >= length:
            break
        following = text[start + 1]
        if following == "!":
            if text.startswith("<!--", start):
                if text.startswith("<!-->", start) or text.startswith("<!--->", start):
                    position = find(">", start + 4) + 1
                    continue
                close = find("-->", start + 4)
                bang = find("--!>", start + 4)
                if close < 0 and bang < 0:
                    break
                if close < 0 or (0 <= bang < close):
                    position = bang + 4
                else:
                    position = close + 3
                continue
            if text.startswith("<![CDATA[", start) and stack and stack[-1] != "html":
                close = find("]]>", start + 9)
                if close < 0:
                    break
                position = close + 3
                continue
            close = find(">", start + 2)  # doctype or bogus comment
            if close < 0:
                break
            if scan.doctype_end is None and text[start + 2 : start + 9].lower() == "doctype":
                scan.doctype_end = close + 1
            position = close + 1
            continue
        if following == "?":
            close = find(">", start + 2)
            if close < 0:
                break
            position = close + 1
            continue
        if match is None:
            match = _TAG.match(text, start)
        if match is None:
            position = start + 1
            continue
        position = match.end()
        end, name, attrs_text, close = match.group("end", "name", "attrs", "close")
        if not close:
            break  # end of file inside a tag: browsers drop it
        name = name.lower()
        if name == "a" and not end and not stack and not template_depth:  # most tokens: a link in HTML
            link = _link(attrs_text, position)
            if link is not None:
                scan.links.append(link)
            continue
        self_closing = attrs_text.rstrip(_WS).endswith("/")
        foreign = bool(stack) and stack[-1] != "html"
        if end:
            if name == "template" and template_depth:
                template_depth -= 1
            elif stack and name in ("svg", "math") and stack[-1] == name:
                stack.pop()
            elif stack and stack[-1] == "html" and name in _INTEGRATION:
                stack.pop()
            continue
        if foreign:
            if name in _BREAKOUT or (name == "font" and re.search(r"(?ai)\b(color|face|size)\s*=", attrs_text)):
                stack.clear()
                foreign = False
            else:
                if name in ("foreignobject", "desc", "title") and stack[-1] == "svg" and not self_closing:
                    stack.append("html")
                elif name == "annotation-xml" and stack[-1] == "math" and not self_closing:
                    stack.append("html")
                elif name in ("svg", "math") and not self_closing:
                    stack.append(name)
                continue
        if name in ("svg", "math"):
            if not self_closing:
                stack.append(name)
            continue
        if name in _RAW_TEXT:
            closing = re.compile(r"</" + name + r"[\t\n\f\r />]", re.I | re.A).search(text, position)
            if closing is None:
                break
            position = closing.start()
            continue
        if name == "plaintext":
            break
        if name == "template":
            template_depth += 1
            continue
        if name in ("a", "area"):
            link = None if template_depth else _link(attrs_text, position)
            if link is not None:
                scan.links.append(link)
        elif name == "body" and scan.body_at is None:
            scan.body_at = position
        elif name == "head" and scan.head_at is None:
            scan.head_at = position
        elif name == "html" and scan.html_at is None:
            scan.html_at = position
        elif name in ("base", "meta") and not template_depth:
            _head_tag(scan, name, text, match.start("attrs"), match.end("attrs"))
    return scan


try:
    from . import _fastscan
except ImportError:  # not built (no C compiler at install time): the pure-Python scanner
    _fastscan = None
_scan = _scan_python if _fastscan is None else _scan_fast

# ------------------------------------------------------------------ markup


def escape(value: str) -> str:
    """Escape for text and quoted attributes; non-ASCII as character references (any charset)."""
    return html.escape(value, quote=True).encode("ascii", "xmlcharrefreplace").decode("ascii")


def format_score(value: float) -> str:
    return f"{value:.3g}" if value >= 0.001 else f"{value:.2e}"


def _tooltip(info: LinkInfo, nofollow: bool) -> str:
    if info.pagerank is None:
        text = "Not in the PageRank store"
    else:
        text = (f"PageRank {format_score(info.pagerank)} · {info.percentile:.2f} percentile · "
                f"toolbar {info.toolbar}/10 · {info.inlinks:,} in-links")
    if nofollow:
        text += " · nofollow: this link passes no PageRank"
    return text


@functools.lru_cache(maxsize=65_536)  # the same scores recur across a site's pages
def bar(info: LinkInfo, nofollow: bool = False) -> str:
    value = "unranked" if info.pagerank is None else repr(float(info.pagerank))
    width = max(0, min(MAX_BAR_PX, int(info.width)))
    flag = ' data-nofollow="true"' if nofollow else ""
    label = escape(_tooltip(info, nofollow))
    return (f'<pagerank-bar data-pagerank="{value}" data-w="{width}"{flag} title="{label}" role="img">'
            "<pagerank-fill></pagerank-fill></pagerank-bar>")


def proxy_url(path: str, **query: str) -> str:
    return f"http://{PROXY_HOST}{path}" + ("?" + "&".join(f"{k}={quote(v, safe='')}" for k, v in query.items())
                                          if query else "")


@functools.lru_cache(maxsize=16_384)  # the same good pages link to many others
def _backlink_item(link: Backlink) -> str:
    return (f'<li data-pagerank="{float(link.info.pagerank)!r}">{bar(link.info, link.nofollow)}'
            f'<a href="{escape(link.url)}">{escape(link.title or link.url)}</a><small>{escape(link.url)}</small></li>')


def panel(data: PanelData) -> str:
    info = data.info
    if info.pagerank is None:
        summary = "PageRank: this page is not in the store"
    else:
        summary = (f"PageRank {format_score(info.pagerank)} · {info.percentile:.1f} pct · "
                   f"toolbar {info.toolbar}/10 · {data.total_backlinks:,} backlinks")
    items = [_backlink_item(link) for link in data.backlinks]
    backlinks = f"<ol>{''.join(items)}</ol>" if items else "<p>No backlinks in the store.</p>"
    explorer = escape(proxy_url("/backlinks", url=data.url, ranking=data.ranking))
    page = escape(proxy_url("/page", url=data.url, ranking=data.ranking))
    return (
        f'<aside id="pagerank-panel" data-pagerank="{"unranked" if info.pagerank is None else repr(float(info.pagerank))}">'
        f"<details><summary>{escape(summary)}</summary>"
        f"<p>Best backlinks by PageRank:</p>{backlinks}"
        f'<p><a href="{explorer}">All backlinks</a> &#183; <a href="{page}">This page</a></p>'
        "</details></aside>"
    )


# ------------------------------------------------------------------ annotate


def annotate(
    text: str,
    page_url: str,
    lookup: Callable[[Sequence[str]], Mapping[str, LinkInfo]],
    panel_data: Callable[[str], PanelData | None] | None = None,
) -> Rewrite:
    """Insert a bar after every link's start tag, the style block and the panel.

    ``lookup`` receives every distinct target URL of the page at once (canonical
    form) and returns what it knows of them.  ``panel_data`` receives the page's
    canonical URL.
    """
    scan = _scan(text)
    base = canonical(scan.base_href, page_url) if scan.base_href else None
    base = base or page_url
    resolve = resolver(base)  # (base directory, href) -> URL, shared across pages
    # no bar for a link within the page (an href of only a fragment, perhaps after white space)
    targets: list[str | None] = [None if href.lstrip()[:1] in ("", "#") else resolve(href)
                                 for _, href, _ in scan.links]
    known = lookup([t for t in dict.fromkeys(targets) if t]) if any(targets) else {}
    edits: list[tuple[int, str]] = []
    ranked = 0
    unknown = LinkInfo(None)
    markup: dict[tuple[str, bool], str] = {}  # the same target recurs: render its bar once
    for (offset, _, nofollow), target in zip(scan.links, targets):
        if target is None:
            continue
        info = known.get(target, unknown)
        ranked += info.pagerank is not None
        key = (target, nofollow or scan.robots_nofollow)
        if key not in markup:
            markup[key] = bar(info, key[1])
        edits.append((offset, markup[key]))
    # Never before the doctype: content there would put the page in quirks mode.
    for head_insert in (scan.head_at, scan.html_at, scan.doctype_end, 0):
        if head_insert is not None:
            break
    edits.append((head_insert, STYLE_BLOCK))
    for start, end, policy in scan.csp_metas:
        for offset, inserted in allow_style_hash(policy, STYLE_HASH, html_attribute=True):
            edits.append((start + offset, inserted))
    if panel_data is not None:
        page = canonical(page_url)
        data = panel_data(page) if page else None
        if data is not None:
            edits.append((scan.body_at if scan.body_at is not None else len(text), panel(data)))
    edits.sort(key=lambda edit: edit[0])
    pieces, previous = [], 0
    for offset, inserted in edits:
        pieces.append(text[previous:offset])
        pieces.append(inserted)
        previous = offset
    pieces.append(text[previous:])
    bars = sum(1 for target in targets if target is not None)
    return Rewrite("".join(pieces), edits, bars, ranked)


def annotate_bytes(
    body: bytes,
    content_type: str | None,
    page_url: str,
    lookup: Callable[[Sequence[str]], Mapping[str, LinkInfo]],
    panel_data: Callable[[str], PanelData | None] | None = None,
) -> tuple[bytes, Rewrite] | None:
    """:func:`annotate` on a body in its own charset (header, BOM or meta), or None.

    None when the body does not decode and re-encode to the very same bytes in
    that charset: such a page is passed on untouched rather than risked.
    """
    charset, skip = sniff_charset(body, content_type)
    try:
        text = body[skip:].decode(charset, errors="surrogateescape")
        # UTF-8 with surrogateescape gives back any bytes (PEP 383; a test holds it to that)
        if charset != "utf-8" and text.encode(charset, errors="surrogateescape") != body[skip:]:
            return None
    except (UnicodeError, LookupError):
        return None
    rewrite = annotate(text, page_url, lookup, panel_data)
    # every insertion is ASCII (non-ASCII as character references): encodable in any charset
    return body[:skip] + rewrite.text.encode(charset, errors="surrogateescape"), rewrite


def remove_edits(text: str, edits: Iterable[tuple[int, str]]) -> str:
    """The input again, from an output and its edits (for tests and debugging).

    Removing the edits from the first on, each one's output position is its
    input offset, since every edit before it is already gone.
    """
    result = text
    for offset, inserted in sorted(edits, key=lambda edit: edit[0]):
        if result[offset : offset + len(inserted)] != inserted:
            raise ValueError(f"no insertion at {offset}")
        result = result[:offset] + result[offset + len(inserted) :]
    return result
