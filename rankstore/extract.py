"""HTML bytes -> title and the set of links, with the lexbor parser (selectolax).

A page's links are a set: the same target counted once.  A link is *followed*
(casts a vote) unless every occurrence of it carries ``rel`` nofollow, ugc or
sponsored, or the page says ``<meta name="robots" content="nofollow">``.
``<base href>`` is honoured.  Links to a fragment of the page itself
(``href="#section"``) are in-page navigation, not links, and are left out.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field

from selectolax.lexbor import LexborHTMLParser

from .sources import ListedPage
from .urls import canonical, resolver

__all__ = [
    "Link",
    "Page",
    "decode_html",
    "extract",
    "resolve_listed",
    "sniff_charset",
    "MAX_TITLE",
    "MAX_ANCHOR",
]

MAX_TITLE = 500
MAX_ANCHOR = 200
_NO_VOTE_RELS = frozenset({"nofollow", "ugc", "sponsored"})
_META_CHARSET = re.compile(rb"""<meta[^>]+?charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]+)""", re.IGNORECASE)
_HEADER_CHARSET = re.compile(r"""charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]+)""", re.IGNORECASE)
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


@dataclass(slots=True)
class Link:
    url: str
    nofollow: bool = False
    anchor_text: str = ""


@dataclass(slots=True)
class Page:
    title: str | None = None
    links: list[Link] = field(default_factory=list)
    canonical_url: str | None = None
    charset: str = "utf-8"


def _codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        found = codecs.lookup(name.strip().lower()).name
    except LookupError:
        return None
    # WHATWG: a page labelled latin-1/ascii is decoded as windows-1252.
    return "cp1252" if found in ("latin-1", "iso8859-1", "ascii") else found


def sniff_charset(body: bytes, content_type: str | None = None) -> tuple[str, int]:
    """The page's charset by the HTML standard's order: BOM, header, meta, UTF-8 check.

    Returns the codec name and the length of the byte-order mark to skip.
    """
    for bom, name in _BOMS:
        if body.startswith(bom):
            return name, len(bom)
    if content_type:
        header = _HEADER_CHARSET.search(content_type)
        if header and (declared := _codec(header.group(1))):
            return declared, 0
    meta = _META_CHARSET.search(body, 0, 1024)
    if meta and (named := _codec(meta.group(1).decode("ascii"))):
        # A meta tag cannot declare UTF-16 for a page already parsed as ASCII-compatible.
        return ("utf-8" if named.startswith("utf-16") else named), 0
    try:
        body[:65536].decode("utf-8")
        return "utf-8", 0
    except UnicodeDecodeError as error:
        # A multi-byte character cut at the 64 KiB boundary is still UTF-8.
        if error.start >= 65536 - 4:
            return "utf-8", 0
        return "cp1252", 0


def decode_html(body: bytes, content_type: str | None = None) -> tuple[str, str]:
    """Decode an HTML body; undecodable bytes become U+FFFD, never an error."""
    name, skip = sniff_charset(body, content_type)
    return body[skip:].decode(name, errors="replace"), name


# The nearest of these above a node says whether it is SVG/MathML (svg, math) or HTML again
# (an integration point); lexbor's CSS matches <a> and <title> in every namespace.
_FOREIGN_ROOTS = frozenset({"svg", "math"})
_INTEGRATION_POINTS = frozenset({"foreignobject", "desc", "title", "annotation-xml", "mi", "mo", "mn", "ms", "mtext"})


def _in_foreign_content(node) -> bool:
    """Is this element inside SVG or MathML, and not back in HTML through an integration point?"""
    parent = node.parent
    while parent is not None:
        tag = (parent.tag or "").lower()
        if tag in _FOREIGN_ROOTS:
            return True
        if tag in _INTEGRATION_POINTS:
            return False
        parent = parent.parent
    return False


def _clean_text(text: str, limit: int) -> str:
    return " ".join(text.split())[:limit]


def _robots_nofollow(content: str) -> bool:
    """Whether a robots meta tag's ``content`` tells robots not to follow the page's links."""
    content = content.lower()
    return "nofollow" in content or "none" in [part.strip() for part in content.split(",")]


def _no_vote(rel: str | None) -> bool:
    """Whether a link's ``rel`` says it casts no vote (nofollow, ugc, sponsored)."""
    return bool(rel and _NO_VOTE_RELS.intersection(rel.lower().split()))


def _is_fragment(href: str) -> bool:
    """An empty href, or a link to a fragment of the page itself: in-page navigation, not a link."""
    return not href or href[0] == "#" or href.lstrip().startswith("#")


def extract(body: bytes | str, url: str, content_type: str | None = None) -> Page:
    """Parse one HTML page fetched from ``url`` (already canonical)."""
    if isinstance(body, bytes):
        charset, skip = sniff_charset(body, content_type)
        # lexbor decodes UTF-8 itself (invalid bytes -> U+FFFD), faster than str.decode.
        document = body[skip:] if charset == "utf-8" else body[skip:].decode(charset, errors="replace")
    else:
        document, charset = body, "utf-8"
    tree = LexborHTMLParser(document)
    page = Page(charset=charset)

    # One pass over the document, in document order; links are resolved after
    # it because the first <base href> applies to links before it too.
    base_href = None
    page_nofollow = False
    # raw href -> [nofollow on every occurrence, anchor text]; the same href
    # repeats a lot on real pages (navigation, sidebars): read its text once.
    hrefs: dict[str, list] = {}
    foreign = tree.css_first("svg, math") is not None  # else no node needs the walk up
    for node in tree.css("a[href], area[href], base[href], meta[name], link[rel][href], title"):
        tag = node.tag
        if foreign and tag in ("a", "title") and _in_foreign_content(node):
            continue  # an SVG/MathML <a> is no HTML link, an SVG <title> no page title
        attrs = node.attributes
        if tag == "a" or tag == "area":
            href = attrs.get("href")
            if not href or _is_fragment(href):
                continue
            nofollow = _no_vote(attrs.get("rel"))
            seen = hrefs.get(href)
            if seen is not None:
                seen[0] = seen[0] and nofollow
                if seen[1]:
                    continue
            if tag == "a":
                anchor = _clean_text(node.text(deep=True, separator=" "), MAX_ANCHOR)
            else:
                anchor = _clean_text(attrs.get("alt") or "", MAX_ANCHOR)
            if seen is None:
                hrefs[href] = [nofollow, anchor]
            else:
                seen[1] = anchor
        elif tag == "title":
            if page.title is None:
                page.title = _clean_text(node.text(deep=True), MAX_TITLE) or None
        elif tag == "base":
            if base_href is None:
                base_href = attrs.get("href")
        elif tag == "meta":
            if (attrs.get("name") or "").strip().lower() == "robots":
                page_nofollow = page_nofollow or _robots_nofollow(attrs.get("content") or "")
        elif tag == "link" and page.canonical_url is None:
            if "canonical" in (attrs.get("rel") or "").lower().split():
                page.canonical_url = canonical(attrs.get("href"), url)  # resolved below if <base>

    base = url
    if base_href is not None:
        base = canonical(base_href, url) or url
    if base != url and page.canonical_url is not None:
        page.canonical_url = None
        for node in tree.css("link[rel][href]"):
            if "canonical" in (node.attributes.get("rel") or "").lower().split():
                page.canonical_url = canonical(node.attributes.get("href"), base)
                break

    page.links = _resolved(hrefs, base, page_nofollow)
    return page


def resolve_listed(listed: ListedPage, url: str) -> Page:
    """A page whose links were listed where it was parsed (a WAT's), read by the rules of :func:`extract`:
    ``<base href>`` honoured, in-page links left out, a link nofollow only if every occurrence is (or the
    robots meta tag says so), the first anchor text that says something."""
    page = Page(title=_clean_text(listed.title or "", MAX_TITLE) or None)
    hrefs: dict[str, list] = {}
    for link in listed.links:
        if _is_fragment(link.href):
            continue
        nofollow = _no_vote(link.rel)
        anchor = _clean_text(link.anchor_text, MAX_ANCHOR)
        seen = hrefs.get(link.href)
        if seen is None:
            hrefs[link.href] = [nofollow, anchor]
        else:
            seen[0] = seen[0] and nofollow
            seen[1] = seen[1] or anchor
    base = url
    if listed.base is not None:
        base = canonical(listed.base, url) or url
    if listed.canonical is not None:
        page.canonical_url = canonical(listed.canonical, base)
    page.links = _resolved(hrefs, base, any(_robots_nofollow(content) for content in listed.robots))
    return page


def _resolved(hrefs: dict[str, list], base: str, page_nofollow: bool) -> list[Link]:
    """Hrefs as written (href -> [nofollow on every occurrence, anchor text]) -> the page's set of links."""
    resolve = resolver(base)
    found: dict[str, Link] = {}
    for href, (nofollow, anchor) in hrefs.items():
        target = resolve(href)
        if target is None:
            continue
        existing = found.get(target)
        if existing is None:
            found[target] = Link(target, page_nofollow or nofollow, anchor)
        else:
            existing.nofollow = existing.nofollow and nofollow
            if not existing.anchor_text:
                existing.anchor_text = anchor
    return list(found.values())
