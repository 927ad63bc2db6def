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

from .urls import canonical

__all__ = ["Link", "Page", "decode_html", "extract", "MAX_TITLE", "MAX_ANCHOR"]

MAX_TITLE = 500
MAX_ANCHOR = 200
_NO_VOTE_RELS = frozenset({"nofollow", "ugc", "sponsored"})
_META_CHARSET = re.compile(
    rb"""<meta[^>]+?charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]+)""", re.IGNORECASE
)
_HEADER_CHARSET = re.compile(r"""charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]+)""", re.IGNORECASE)
_SPACES = re.compile(r"\s+")
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
        match = _HEADER_CHARSET.search(content_type)
        if match and (name := _codec(match.group(1))):
            return name, 0
    match = _META_CHARSET.search(body, 0, 1024)
    if match and (name := _codec(match.group(1).decode("ascii"))):
        # A meta tag cannot declare UTF-16 for a page already parsed as ASCII-compatible.
        return ("utf-8" if name.startswith("utf-16") else name), 0
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


def _clean_text(text: str, limit: int) -> str:
    return _SPACES.sub(" ", text).strip()[:limit]


def extract(body: bytes | str, url: str, content_type: str | None = None) -> Page:
    """Parse one HTML page fetched from ``url`` (already canonical)."""
    if isinstance(body, bytes):
        text, charset = decode_html(body, content_type)
    else:
        text, charset = body, "utf-8"
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    tree = LexborHTMLParser(text)
    page = Page(charset=charset)

    base = url
    for node in tree.css("base[href]"):
        resolved = canonical(node.attributes.get("href"), url)
        if resolved:
            base = resolved
        break

    head = tree.head
    title_node = head.css_first("title") if head is not None else None
    if title_node is None:
        title_node = tree.css_first("title")
    if title_node is not None:
        page.title = _clean_text(title_node.text(deep=True), MAX_TITLE) or None

    page_nofollow = False
    for node in tree.css("meta[name]"):
        attrs = node.attributes
        if (attrs.get("name") or "").strip().lower() in ("robots",):
            content = (attrs.get("content") or "").lower()
            if "nofollow" in content or "none" in content.split(","):
                page_nofollow = True

    for node in tree.css("link[rel][href]"):
        rels = (node.attributes.get("rel") or "").lower().split()
        if "canonical" in rels:
            page.canonical_url = canonical(node.attributes.get("href"), base)
            break

    found: dict[str, Link] = {}
    for node in tree.css("a[href], area[href]"):
        attrs = node.attributes
        href = attrs.get("href")
        if not href or href.lstrip().startswith("#"):
            continue
        target = canonical(href, base)
        if target is None:
            continue
        rel = attrs.get("rel")
        nofollow = page_nofollow or bool(rel and _NO_VOTE_RELS.intersection(rel.lower().split()))
        anchor = ""
        if node.tag == "a":
            anchor = _clean_text(node.text(deep=True, separator=" "), MAX_ANCHOR)
        else:
            anchor = _clean_text(attrs.get("alt") or "", MAX_ANCHOR)
        existing = found.get(target)
        if existing is None:
            found[target] = Link(target, nofollow, anchor)
        else:
            existing.nofollow = existing.nofollow and nofollow
            if not existing.anchor_text:
                existing.anchor_text = anchor
    page.links = list(found.values())
    return page
