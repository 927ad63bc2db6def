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
import html.entities
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence
from urllib.parse import quote

from rankstore.extract import sniff_charset
from rankstore.urls import canonical, resolver

from . import scan_tables as tables
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
# A tag's attributes as the standard's tokenizer reads them: a name starts with any
# character but white space, '/' or '>' ('=' and quotes included) and runs to white
# space, '/', '=' or '>'; a value is quoted, or unquoted up to white space or '>'
# (quotes inside it are its own characters: alt=don't).  A quote left open runs to
# the end of the file, where the tag is dropped.
_ATTRS_SOURCE = (r"""(?:[\t\n\f\r /]++|[^\t\n\f\r />][^\t\n\f\r /=>]*+"""
                 r"""(?:[\t\n\f\r ]*+=[\t\n\f\r ]*+(?:"[^"]*+(?:"|\Z)|'[^']*+(?:'|\Z)|[^\t\n\f\r >"'][^\t\n\f\r >]*+)?)?)*+""")
_TAG_SOURCE = (r"<(?P<end>/)?(?P<name>[A-Za-z][^\t\n\f\r />]*+)"
               rf"(?P<attrs>{_ATTRS_SOURCE})(?P<close>>|\Z)")
_TAG = re.compile(_TAG_SOURCE)
# Everything up to the next token the scanner cares about, consumed inside the
# regex engine rather than by Python code: text, a lone '<', end tags that begin
# a bogus comment (</3 ...>), and whole tags whose names do not matter here,
# read by the same attribute grammar (so a '<a' inside a value is never taken
# for a tag, nor a quote inside an unquoted value for the start of one).
_INTERESTING = rf"(?:{tables.INTERESTING_PATTERN})(?=[\t\n\f\r />])"
_INTERESTING_END = rf"(?:{tables.INTERESTING_END_PATTERN})(?=[\t\n\f\r />])"
_DULL = tables.DULL_INITIALS + tables.DULL_INITIALS.upper()
_SKIP_SOURCE = (
    rf"(?:[^<]++|<(?:[{_DULL}]|(?!(?ai:{_INTERESTING}))[A-Za-z])[^\t\n\f\r />]*+{_ATTRS_SOURCE}>"
    rf"|</(?!(?ai:{_INTERESTING_END}))[A-Za-z][^\t\n\f\r />]*+{_ATTRS_SOURCE}>"
    r"|</(?:>|[^A-Za-z>][^>]*+>)|<(?![A-Za-z/!?]))*+")
# The skip and the tag after it in one call: most tokens need nothing else.
_NEXT = re.compile(rf"{_SKIP_SOURCE}(?P<tag>{_TAG_SOURCE})?")
_ATTR = re.compile(
    r"""(?P<name>[^\t\n\f\r />][^\t\n\f\r /=>]*+)
    (?:[\t\n\f\r ]*+=[\t\n\f\r ]*+(?:"(?P<dq>[^"]*+)"|'(?P<sq>[^']*+)'|(?P<uq>[^\t\n\f\r >"'][^\t\n\f\r >]*+))?)?""",
    re.X,
)
# Script data: a '<!--' escapes it; inside, '<script' (then white space, '/' or '>')
# escapes it twice, where '</script' no longer ends the element; '-->' ends either.
_SCRIPT_DATA = re.compile(r"<(?:/script[\t\n\f\r />]|!--)", re.I | re.A)
_SCRIPT_ESCAPED = re.compile(r"-->|<(/?)script[\t\n\f\r />]", re.I | re.A)
_SCRIPT_DOUBLE_ESCAPED = re.compile(r"-->|</script[\t\n\f\r />]", re.I | re.A)
_END_TAG_OF = {name: re.compile(rf"</{name}[\t\n\f\r />]", re.I | re.A)
               for name, model in tables.TEXT_ELEMENTS.items() if model in ("RCDATA", "RAWTEXT")}


def _script_end(text: str, position: int) -> int:
    """Where the '</script' that ends a script's text starts, or -1 (the text runs to the end of the file)."""
    while True:
        found = _SCRIPT_DATA.search(text, position)
        if found is None:
            return -1
        if found.group()[1] == "/":
            return found.start()
        position = found.start() + 2  # escaped: the dashes of '<!--' count towards a '-->'
        while True:
            found = _SCRIPT_ESCAPED.search(text, position)
            if found is None:
                return -1
            if found.group() == "-->":
                position = found.end()
                break
            if found.group(1):
                return found.start()
            found = _SCRIPT_DOUBLE_ESCAPED.search(text, found.end())
            if found is None:
                return -1
            position = found.end()
            if found.group() == "-->":
                break


_NAMED_REFERENCE = re.compile(r"&(?:#[xX]([0-9A-Fa-f]+);?|#([0-9]+);?|([A-Za-z0-9]+;?))")
_LONGEST_ENTITY = max(map(len, html.entities.html5))


def _decode_reference(match: re.Match[str]) -> str:
    if match.group(3) is None:  # numeric: as the standard reads it (html.unescape follows it there)
        return html.unescape(match.group())
    candidate = match.group(3)[:_LONGEST_ENTITY]
    for length in range(len(candidate), 0, -1):
        name = candidate[:length]
        if name in html.entities.html5 and (name[-1] == ";" or name in tables.LEGACY_ENTITIES):
            following = match.string[match.start(3) + length : match.start(3) + length + 1]
            # in an attribute, a legacy reference followed by '=' or an alphanumeric is text (&section=2)
            if name[-1] != ";" and (following == "=" or following.isascii() and following.isalnum()):
                return match.group()
            return html.entities.html5[name] + match.group()[1 + length :]
    return match.group()


def decode_attribute(value: str) -> str:
    """An attribute value with its character references decoded as the HTML standard's tokenizer does."""
    return _NAMED_REFERENCE.sub(_decode_reference, value) if "&" in value else value


def _attribute_list(text: str) -> list[tuple[str, str, int]]:
    """(lower-case name, raw value, end offset) of each attribute in a tag's attribute text, in order."""
    return [(match.group("name").lower(), match.group("dq") or match.group("sq") or match.group("uq") or "",
             match.end()) for match in _ATTR.finditer(text)]


def _attributes(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value, _ in _attribute_list(text):
        if name not in found:  # the first of a repeated attribute wins
            found[name] = decode_attribute(value)
    return found


def _self_closing(attrs_text: str) -> bool:
    """A '/' right before the '>', not the end of an unquoted value (<svg x=y/> is not self-closing)."""
    if not attrs_text.endswith("/"):
        return False
    attributes = _attribute_list(attrs_text)
    return not attributes or attributes[-1][2] < len(attrs_text)


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
    href = decode_attribute(href)
    if not rel:
        return position, href, False
    return position, href, not _NOFOLLOW.isdisjoint(decode_attribute(rel).lower().split())


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
    end_is_markup: bool = False  # the file ends in HTML content, where appended markup is read as markup


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
    links, body_at, head_at, html_at, doctype_end, extras, raw, end_is_markup = _fastscan.scan(text)
    if raw:  # links with a rel or a character reference in their href: decoded here
        links = [link if link[2] is False else _link_values(*link) for link in links]
    scan = _Scan(links, body_at, head_at, html_at, doctype_end, None, False, [], end_is_markup)
    for name, start, end in extras:
        _head_tag(scan, name, text, start, end)
    return scan


# An open element in or under SVG/MathML: (namespace "svg", "math", or "html" for an HTML
# element inside an integration point; lower-case name; what it integrates: "" nothing,
# "html" an HTML integration point, "text" a MathML text integration point; whether it
# was opened from HTML content: a root).  Outside SVG and MathML the stack is empty.
_Foreign = tuple[str, str, str, bool]
_VOID = frozenset(tables.VOID_ELEMENTS)


def _open_foreign(stack: list[_Foreign], name: str, attrs_text: str) -> None:
    """A start tag in foreign content that does not break out: the element it opens."""
    top = stack[-1]
    namespace = "svg" if name == "svg" and top[1] == "annotation-xml" else top[0]
    integrates = ""
    if namespace == "svg" and name in tables.SVG_HTML_INTEGRATION:
        integrates = "html"
    elif namespace == "math" and name in tables.MATHML_TEXT_INTEGRATION:
        integrates = "text"
    elif namespace == "math" and name == "annotation-xml":
        # the raw value, undecoded: the C twin reads it the same way
        for key, value, _ in _attribute_list(attrs_text):
            if key == "encoding":
                if value.lower() in tables.ANNOTATION_XML_HTML_ENCODINGS:
                    integrates = "html"
                break
    stack.append((namespace, name, integrates, False))


def _leave_foreign(stack: list[_Foreign]) -> None:
    """Back to the nearest integration point or HTML element, or out of SVG/MathML (breakout)."""
    while stack and not stack[-1][2] and stack[-1][0] != "html":
        stack.pop()


def _close_html(stack: list[_Foreign], name: str) -> None:
    """An end tag where an HTML element inside an integration point is the current node: it
    closes the open element of its name there, if any; the SVG or MathML around stays open."""
    for index in range(len(stack) - 1, -1, -1):
        if stack[index][0] != "html":
            return
        if stack[index][1] == name:
            del stack[index:]
            return


def _close_foreign(stack: list[_Foreign], name: str) -> bool:
    """An end tag met where SVG or MathML is open; True when HTML content reads it too."""
    for index in range(len(stack) - 1, -1, -1):  # the open element of that name, back to the root
        if stack[index][1] == name:
            del stack[index:]
            return False
        if stack[index][3]:
            break
    if name in tables.END_TAG_BREAKOUT or name in tables.HTML_ELEMENTS:
        _leave_foreign(stack)
        return True
    return False


def _scan_python(text: str) -> _Scan:
    """Find the links and the places to insert at: the reference scanner (``_fastscan`` is its C twin)."""
    scan = _Scan([], None, None, None, None, None, False, [])
    position, length = 0, len(text)
    stack: list[_Foreign] = []
    template_depth = 0
    find = text.find
    following_token = _NEXT.match
    links_append = scan.links.append
    while True:
        match = None
        foreign = bool(stack) and not stack[-1][2] and stack[-1][0] != "html"
        if stack:
            start = find("<", position)  # in or under SVG/MathML every tag counts (breakout, nesting)
            if start < 0:
                break
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
                    scan.end_is_markup = not stack and not template_depth
                    break
        if start + 1 >= length:
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
            if foreign and text.startswith("<![CDATA[", start):
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
        if following == "?" or (following == "/" and not (text[start + 2 : start + 3].isascii()
                                                          and text[start + 2 : start + 3].isalpha())):
            close = find(">", start + 2)  # bogus comment; '</' at the end of the file is text
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
        if end:
            if stack and stack[-1][0] == "html":
                _close_html(stack, name)
            elif stack and not _close_foreign(stack, name):
                continue
            if name == "template" and template_depth:
                template_depth -= 1
            continue
        if foreign:
            if name in tables.BREAKOUT or (name == "font" and any(
                    key in tables.FONT_BREAKOUT_ATTRIBUTES for key, _, _ in _attribute_list(attrs_text))):
                _leave_foreign(stack)
            else:
                if not _self_closing(attrs_text):
                    _open_foreign(stack, name, attrs_text)
                continue
        elif stack and stack[-1][2] == "text" and name in tables.MATHML_TEXT_INTEGRATION_FOREIGN:
            if not _self_closing(attrs_text):
                stack.append(("math", name, "", False))
            continue
        if stack and name not in _VOID and name not in tables.TEXT_ELEMENTS and name not in ("svg", "math"):
            stack.append(("html", name, "", False))  # an HTML element inside an integration point
        if name == "svg" or name == "math":
            if not _self_closing(attrs_text):
                stack.append((name, name, "", True))
            continue
        model = tables.TEXT_ELEMENTS.get(name)
        if model is not None:
            if model == "SCRIPT_DATA":
                position = _script_end(text, position)
            elif model == "PLAINTEXT":
                break
            else:
                closing = _END_TAG_OF[name].search(text, position)
                position = -1 if closing is None else closing.start()
            if position < 0:
                break
            continue
        if name == "template":
            template_depth += 1
            continue
        if name in ("a", "area"):
            link = None if template_depth else _link(attrs_text, position)
            if link is not None:
                scan.links.append(link)
        elif template_depth:
            continue
        elif name == "body" and scan.body_at is None:
            scan.body_at = position
        elif name == "head" and scan.head_at is None:
            scan.head_at = position
        elif name == "html" and scan.html_at is None:
            scan.html_at = position
        elif name in ("base", "meta"):
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

# What may come before the first content without opening <head>: white space (written
# out or as a character reference), comments (as the tokenizer ends them), doctypes,
# bogus comments and the end tags the parser ignores there.
_PROLOGUE = re.compile(
    r"(?:[\t\n\f\r ]++|&#0*+(?:9|1[023]|32)(?![0-9]);?|&#[xX]0*+(?:9|[aAcCdD]|20)(?![0-9A-Fa-f]);?|&(?:Tab|NewLine);"
    r"|<!--(?:-?>|.*?--!?>)|<!(?!--)[^>]*+>|<\?[^>]*+>|</(?:>|[^A-Za-z>][^>]*+>)"
    r"|</(?!(?ai:head|body|html|br)[\t\n\f\r />])[A-Za-z][^>]*+>)*+", re.S)
_HTML_TAG = re.compile(rf"<(?ai:html)(?=[\t\n\f\r />]){_ATTRS_SOURCE}>")
_FRAMESET = re.compile(r"<frameset[\t\n\f\r />]", re.I | re.A)


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
    if panel_data is not None and not _FRAMESET.search(text):  # a frameset document has no body to show it
        page = canonical(page_url)
        # after <body>, else at the end when the file ends where markup is read as markup (not inside
        # a <textarea>, <title>, comment, script, SVG or tag left open); else no panel
        at = scan.body_at if scan.body_at is not None else len(text) if scan.end_is_markup else None
        data = panel_data(page) if page and at is not None else None
        if data is not None:
            edits.append((at, panel(data)))
    if edits:  # the style block only where there is something to style
        # In <head>, else from the start (and past a first <html> tag), past the doctype (content
        # before it would put the page in quirks mode) and past white space and comments, which
        # stay where the parser puts them, not in the head our <style> would open.
        if scan.head_at is not None:
            head_insert = scan.head_at
        else:
            head_insert = _PROLOGUE.match(text).end()
            html_tag = _HTML_TAG.match(text, head_insert)
            if html_tag:
                head_insert = _PROLOGUE.match(text, html_tag.end()).end()
        edits.append((head_insert, STYLE_BLOCK))
        for start, end, policy in scan.csp_metas:
            for offset, inserted in allow_style_hash(policy, STYLE_HASH, html_attribute=True):
                edits.append((start + offset, inserted))
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
