"""HTML bytes -> title and the set of links, as the lexbor parser's tree (selectolax) holds them.

A UTF-8 page is read first by a C tokenizer (``_fastextract``) that answers only where no tree-construction
rule could move or close what holds a link; elsewhere (and for weights by position) the tree is walked.
tests/test_fastextract.py holds the two to the same answers.

A page's links are a set: the same target counted once.  A link is *followed*
(casts a vote) unless every occurrence of it carries ``rel`` nofollow, ugc or
sponsored, or the page says ``<meta name="robots" content="nofollow">``.
``<base href>`` is honoured.  Links to a fragment of the page itself
(``href="#section"``) are in-page navigation, not links, and are left out.

Each link weighs 1, or, asked :attr:`LinkWeights.POSITION`, what its
occurrences weigh by where they stand on the page (:class:`Placement`): the
visibility and position weighting of the seed notes, with the page's regions.
"""

from __future__ import annotations

import codecs
import enum
import re
from dataclasses import dataclass, field
from typing import NamedTuple

from selectolax.lexbor import LexborHTMLParser, LexborNode

from .charrefs import decode_attribute, decode_text
from .sources import ListedLink, ListedPage, casts_no_vote
from .urls import canonical, resolver, resolving

try:  # the C twin of listed_targets (tests/test_wat_twins.py holds both to the same pages)
    from . import _fastlisted  # type: ignore[attr-defined]
except ImportError:  # built without a compiler
    _fastlisted = None
try:  # the tokenizer that reads most pages in place of lexbor's tree (tests/test_fastextract.py holds both)
    from . import _fastextract  # type: ignore[attr-defined]
except ImportError:  # built without a compiler
    _fastextract = None

__all__ = [
    "Link",
    "LinkWeights",
    "Page",
    "Placement",
    "decode_html",
    "extract",
    "resolve_listed",
    "read_listed",
    "listed_targets",
    "ListedRead",
    "sniff_charset",
    "MAX_TITLE",
    "MAX_ANCHOR",
]

MAX_TITLE = 500
MAX_ANCHOR = 200
if _fastlisted is not None and _fastlisted.MAX_ANCHOR != MAX_ANCHOR:  # a module built before a change of it
    _fastlisted = None
_META_CHARSET = re.compile(rb"""<meta[^>]+?charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]+)""", re.IGNORECASE)
_HEADER_CHARSET = re.compile(r"""charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]+)""", re.IGNORECASE)
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


class LinkWeights(enum.Enum):
    """How a page's links are weighted (``rankstore build --link-weights``; the names are
    :data:`rankstore.choices.LINK_WEIGHTS`)."""

    UNIFORM = "uniform"  # every link weighs 1, however often and wherever it stands
    POSITION = "position"  # by where each occurrence stands: :class:`Placement`


@dataclass(slots=True)
class Link:
    url: str
    nofollow: bool = False
    anchor_text: str = ""
    weight: float = 1.0


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


# The weighting of links by where they stand (``LinkWeights.POSITION``).  The seed notes (000, "other
# factors of a page's rank", after Page's PageRank patent) weigh each link by its visibility (2 if
# emphasised, bold or italic, else 1) and its position (3 in the document's upper half, 1 in its lower
# half), and divide by the page's sum of them; the "reasonable surfer" (Dean et al., US patent 7,716,225)
# adds where on the page's layout a link stands.  We weigh the page's main content against its
# navigation, header, footer and asides as the seed weighs its upper half against its lower one.
EMPHASISED = 2.0
FIRST_HALF = 3.0
MAIN_CONTENT = 3.0

_LINKS = "a[href], area[href]"
_EMPHASIS = frozenset({"b", "strong", "i", "em", "h1", "h2", "h3", "h4", "h5", "h6"})
_NAVIGATION = frozenset({"nav", "aside"})
_NAVIGATION_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary"})
# <header> and <footer> are the page's banner and footer (HTML-AAM) unless inside one of these: an
# article's header is part of the article.
_PAGE_EDGES = frozenset({"header", "footer"})
_SECTIONING = frozenset({"article", "aside", "main", "nav", "section"})
_SECTIONING_ROLES = frozenset({"article", "complementary", "main", "navigation", "region"})
# Every element that may say something of the links inside it, found in one pass over the tree (a pass
# per kind, or a descendant selector per link, costs several times as much): what hides (a reader with
# an ordinary browser, scripts on, never sees <noscript>; <template> content is no part of the tree the
# selectors walk, so its links are never found at all), regions, emphasis, inline styles.
_CONTEXTS = ", ".join(
    [
        "[hidden]",
        "[aria-hidden]",
        "noscript",
        "dialog",
        "[role]",
        "main",
        "[style]",
        *sorted(_NAVIGATION | _PAGE_EDGES),
        # emphasis is common (a signature's every parameter in <em>), links in it are not
        *(f"{tag}:has(a[href])" for tag in sorted(_EMPHASIS)),
    ]
)
_WRAPS_EMPHASIS = f"a[href]:has({', '.join(sorted(_EMPHASIS))})"
_IMPORTANT = re.compile(r"\s*!\s*important\s*$", re.IGNORECASE)


_NO_ROLES: frozenset[str] = frozenset()


def _roles(attrs: dict) -> frozenset[str]:
    return frozenset((attrs.get("role") or "").lower().split())


def _sectioned(element: LexborNode) -> bool:
    """Whether a <header> or <footer> is inside an article, section, aside, nav or main (or their roles)."""
    parent = element.parent
    while parent is not None and parent.tag not in ("html", "-document"):
        if parent.tag in _SECTIONING or _roles(parent.attributes) & _SECTIONING_ROLES:
            return True
        parent = parent.parent
    return False


def _style(text: str) -> dict[str, str]:
    """An inline ``style``'s declarations, lower case, the last of each property standing."""
    found = {}
    for declaration in text.split(";"):
        name, colon, value = declaration.partition(":")
        if colon:
            found[name.strip().lower()] = _IMPORTANT.sub("", value).strip().lower()
    return found


@dataclass(slots=True)
class Placement:
    """Where a page's links stand, read once from its tree: each occurrence of a link (``<a href>``,
    ``<area href>``) weighs V x E x R x P, and a link the sum of its occurrences' weights (those that
    follow, when any does: a nofollow occurrence casts no vote).

    V visible      0 if hidden: in or with the hidden attribute, aria-hidden="true", inline style
                   display:none (or visibility:hidden/collapse not undone nearer by visibility:visible),
                   in <noscript>, in a closed <dialog>, in <template>; else 1.  A link whose every
                   occurrence is hidden is no link of the page (not stored).
    E emphasised   2 inside or around b, strong, i, em, h1-h6; else 1.
    R region       1 in navigation, page header, page footer or aside (nav, aside, header and footer
                   not within article/section/main, ARIA roles navigation, banner, contentinfo,
                   complementary), and outside the main content when the page marks one (<main>,
                   role=main); else 3.
    P position     3 for the first half of the page's visible occurrences in document order (k-th of
                   n, from 0, with 2k < n), 1 for the rest.

    Hidden occurrences are not counted in n.  Styles from style sheets and scripts are not seen.
    """

    hidden: set[int]  # mem_id of every hidden link element
    emphasised: set[int]
    boilerplate: set[int]
    main: set[int] | None  # links in the page's main content; None: the page marks none

    @classmethod
    def of(cls, tree: LexborHTMLParser) -> Placement:
        hidden: set[int] = set()
        emphasised = {node.mem_id for node in tree.css(_WRAPS_EMPHASIS)}
        boilerplate: set[int] = set()
        main: set[int] | None = None
        visibility: dict[int, bool] = {}  # element -> its inline visibility: visible (True) or not
        unseen: list[LexborNode] = []  # links under an inline visibility:hidden, unless undone nearer
        for element in tree.css(_CONTEXTS):
            tag, attrs = element.tag, element.attributes
            roles = _roles(attrs) if "role" in attrs else _NO_ROLES
            declared = _style(attrs["style"] or "") if "style" in attrs else {}
            shown = declared.get("visibility")
            hides = (
                "hidden" in attrs
                or (attrs.get("aria-hidden") or "").strip().lower() == "true"
                or tag == "noscript"
                or (tag == "dialog" and "open" not in attrs)
                or declared.get("display") == "none"
            )
            navigates = tag in _NAVIGATION or bool(roles & _NAVIGATION_ROLES)
            navigates = navigates or (tag in _PAGE_EDGES and not _sectioned(element))
            is_main = tag == "main" or "main" in roles
            if shown in ("hidden", "collapse", "visible"):
                visibility[element.mem_id] = shown == "visible"
            if not (hides or navigates or is_main or tag in _EMPHASIS or shown in ("hidden", "collapse")):
                continue  # says nothing of its links: their nodes are not asked for
            # an element's css() matches the element itself too: a link with the attribute hides itself
            nodes = element.css(_LINKS)
            links = {node.mem_id for node in nodes}
            if hides:
                hidden |= links
            if navigates:
                boilerplate |= links
            if is_main:
                main = (main or set()) | links
            if tag in _EMPHASIS:
                emphasised |= links
            if shown in ("hidden", "collapse"):
                unseen.extend(nodes)
        for node in unseen:
            nearest: LexborNode | None = node
            while nearest is not None and nearest.mem_id not in visibility:
                nearest = nearest.parent
            if nearest is not None and not visibility[nearest.mem_id]:
                hidden.add(node.mem_id)
        return cls(hidden, emphasised, boilerplate, main)

    def factor(self, key: int) -> float:
        """E x R of a visible occurrence (its node's ``mem_id``): its weight but for its position."""
        weight = EMPHASISED if key in self.emphasised else 1.0
        if key not in self.boilerplate and (self.main is None or key in self.main):
            weight *= MAIN_CONTENT
        return weight


def position(k: int, n: int) -> float:
    """P of the ``k``-th (from 0) of ``n`` visible occurrences: the first half of the page's links is
    the seed's upper half of the document."""
    return FIRST_HALF if 2 * k < n else 1.0


def _clean_text(text: str, limit: int) -> str:
    return " ".join(text.split())[:limit]


def _robots_nofollow(content: str) -> bool:
    """Whether a robots meta tag's ``content`` tells robots not to follow the page's links."""
    content = content.lower()
    return "nofollow" in content or "none" in [part.strip() for part in content.split(",")]


def _is_fragment(href: str) -> bool:
    """An empty href, or a link to a fragment of the page itself: in-page navigation, not a link."""
    return not href or href[0] == "#" or href.lstrip().startswith("#")


def extract(
    body: bytes | str, url: str, content_type: str | None = None, weights: LinkWeights = LinkWeights.UNIFORM
) -> Page:
    """Parse one HTML page fetched from ``url`` (already canonical); its links weighed as ``weights`` says."""
    if isinstance(body, bytes):
        charset, skip = sniff_charset(body, content_type)
        # lexbor decodes UTF-8 itself (invalid bytes -> U+FFFD), faster than str.decode.
        document = body[skip:] if charset == "utf-8" else body[skip:].decode(charset, errors="replace")
    else:
        document, charset = body, "utf-8"
    if weights is LinkWeights.UNIFORM and _fastextract is not None and isinstance(document, bytes):
        read = _fastextract.read(document)
        if read is not None:  # else a tree-construction rule may move or close what holds a link: lexbor's
            return _tokens_page(read, url, charset)
    tree = LexborHTMLParser(document)
    page = Page(charset=charset)

    # One pass over the document, in document order; links are resolved after
    # it because the first <base href> applies to links before it too.
    base_href = None
    page_nofollow = False
    # raw href -> [nofollow on every occurrence, anchor text]; the same href
    # repeats a lot on real pages (navigation, sidebars): read its text once.
    hrefs: dict[str, list] = {}
    # the <a> and <title> that may be SVG/MathML's: those inside an <svg> or <math> (else no node needs the
    # walk up, which costs more than the rest of a page's pass when every link takes it)
    foreign = {node.mem_id for root in tree.css("svg, math") for node in root.css("a, title")}
    placement = Placement.of(tree) if weights is LinkWeights.POSITION else None
    occurrences: list[tuple[str, float, bool]] = []  # (href, E x R, nofollow) of each visible occurrence
    for node in tree.css("a[href], area[href], base[href], meta[name], link[rel][href], title"):
        tag = node.tag
        if foreign and node.mem_id in foreign and _in_foreign_content(node):
            continue  # an SVG/MathML <a> is no HTML link, an SVG <title> no page title
        attrs = node.attributes
        if tag == "a" or tag == "area":
            href = attrs.get("href")
            if not href or _is_fragment(href):
                continue
            nofollow = casts_no_vote(attrs.get("rel"))
            if placement is not None:
                key = node.mem_id
                if key in placement.hidden:
                    continue  # unseen: neither a vote, nor its rel or anchor text
                occurrences.append((href, placement.factor(key), nofollow))
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

    page.links = _resolved(hrefs, base, page_nofollow, _summed(occurrences) if placement is not None else None)
    return page


def _value(raw: str | None) -> str | None:
    """An attribute value as the tokenizer wrote it -> as lexbor's tree holds it: line breaks normalised (as
    the input stream's are), character references decoded."""
    if raw is None:
        return None
    if "\r" in raw:
        raw = raw.replace("\r\n", "\n").replace("\r", "\n")
    return decode_attribute(raw) if "&" in raw else raw


def _text(raw: str) -> str:
    """Text as the tokenizer read it -> as lexbor's text nodes hold it: line breaks normalised (as the input
    stream's are: a reference's carriage return stays one), character references decoded."""
    if "\r" in raw:
        raw = raw.replace("\r\n", "\n").replace("\r", "\n")
    return decode_text(raw) if "&" in raw else raw


def _tokens_page(read: tuple, url: str, charset: str) -> Page:
    """:func:`extract`'s page from what ``_fastextract.read`` found in document order, read by the rules its
    walk of lexbor's tree follows (links: ``(href, rel, text, is_area)``; an area's text its alt)."""
    links, titles, bases, metas, canonicals = read
    page = Page(charset=charset)
    for raw in titles:
        page.title = _clean_text(_text(raw), MAX_TITLE) or None
        if page.title is not None:
            break
    base_href = _value(next((href for href in bases if href is not None), None))
    page_nofollow = False
    for name, content in metas:
        if (_value(name) or "").strip().lower() == "robots":
            page_nofollow = page_nofollow or _robots_nofollow(_value(content) or "")
    named = [_value(href) for rel, href in canonicals if "canonical" in (_value(rel) or "").lower().split()]
    for href in named:
        page.canonical_url = canonical(href, url)
        if page.canonical_url is not None:
            break
    hrefs: dict[str, list] = {}
    for raw_href, rel, text, is_area in links:
        href = _value(raw_href)
        if not href or _is_fragment(href):
            continue
        nofollow = casts_no_vote(_value(rel))
        seen = hrefs.get(href)
        if seen is not None:
            seen[0] = seen[0] and nofollow
            if seen[1]:
                continue
        anchor = _clean_text((_value(text) or "") if is_area else _text(text), MAX_ANCHOR)
        if seen is None:
            hrefs[href] = [nofollow, anchor]
        else:
            seen[1] = anchor
    base = url
    if base_href is not None:
        base = canonical(base_href, url) or url
    if base != url and page.canonical_url is not None:
        page.canonical_url = canonical(named[0], base)
    page.links = _resolved(hrefs, base, page_nofollow)
    return page


def _summed(occurrences: list[tuple[str, float, bool]]) -> dict[str, list[float]]:
    """Each href's [weight of its following occurrences, weight of them all], positions given in order."""
    sums: dict[str, list[float]] = {}
    for k, (href, factor, nofollow) in enumerate(occurrences):
        weight = factor * position(k, len(occurrences))
        found = sums.setdefault(href, [0.0, 0.0])
        found[1] += weight
        if not nofollow:
            found[0] += weight
    return sums


class ListedRead(NamedTuple):
    """A listed page read (:func:`read_listed`): its title, canonical URL and links as a build's page holds
    them, (target, nofollow, weight 1.0, anchor text)."""

    title: str | None
    canonical_url: str | None
    links: list[tuple[str, bool, float, str | None]]


def read_listed(listed: ListedPage, url: str) -> ListedRead:
    """A page whose links were listed where it was parsed (a WAT's), read by the rules of :func:`extract`:
    ``<base href>`` honoured, in-page links left out, a link nofollow only if every occurrence is (or the
    robots meta tag says so), the first anchor text that says something."""
    base = url
    if listed.base is not None:
        base = canonical(listed.base, url) or url
    page_nofollow = any(_robots_nofollow(content) for content in listed.robots)
    how = resolving(base)
    links = None
    if _fastlisted is not None and type(listed.links) is list:
        links = _fastlisted.listed_targets(
            listed.links, how.cache, how.resolve, page_nofollow, _clean_anchor, casts_no_vote
        )
    if links is None:
        links = listed_targets(listed.links, base, page_nofollow)
    return ListedRead(
        _clean_text(listed.title or "", MAX_TITLE) or None,
        canonical(listed.canonical, base) if listed.canonical is not None else None,
        links,
    )


def resolve_listed(listed: ListedPage, url: str) -> Page:
    """:func:`read_listed`'s page as :func:`extract` gives one."""
    read = read_listed(listed, url)
    page = Page(title=read.title, canonical_url=read.canonical_url)
    page.links = [Link(target, nofollow, anchor or "") for target, nofollow, _weight, anchor in read.links]
    return page


def listed_targets(
    links: list[ListedLink], base: str, page_nofollow: bool
) -> list[tuple[str, bool, float, str | None]]:
    """A page's links as listed -> its set of links (:func:`read_listed`'s rules): each href once, then each
    target once (:func:`_resolved`).  The twin of ``rankstore._fastlisted.listed_targets``."""
    hrefs: dict[str, list] = {}
    for link in links:
        href = link.href
        if not href or href[0] == "#" or (href[0].isspace() and _is_fragment(href)):
            continue
        nofollow = bool(link.rel) and casts_no_vote(link.rel)
        seen = hrefs.get(href)
        if seen is None:  # an anchor's text cleaned once an href, not once a repeat (navigation repeats a lot)
            hrefs[href] = [nofollow, _clean_anchor(link.anchor_text) if link.anchor_text else ""]
        else:
            seen[0] = seen[0] and nofollow
            if not seen[1] and link.anchor_text:
                seen[1] = _clean_anchor(link.anchor_text)
    return [(link.url, link.nofollow, 1.0, link.anchor_text) for link in _resolved(hrefs, base, page_nofollow)]


def _clean_anchor(text: str) -> str:
    return _clean_text(text, MAX_ANCHOR)


def _resolved(
    hrefs: dict[str, list], base: str, page_nofollow: bool, weights: dict[str, list[float]] | None = None
) -> list[Link]:
    """Hrefs as written (href -> [nofollow on every occurrence, anchor text]) -> the page's set of links;
    ``weights`` (href -> [weight following, weight in all], from :func:`_summed`), when links are weighed:
    hrefs that resolve alike add up, and a link weighs what its following occurrences do (all of them,
    for a link that casts no vote)."""
    resolve = resolver(base)
    found: dict[str, Link] = {}
    sums: dict[str, list[float]] = {}
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
        if weights is not None:
            following, total = weights[href]
            summed = sums.setdefault(target, [0.0, 0.0])
            summed[0] += following
            summed[1] += total
    for target, (following, total) in sums.items():
        link = found[target]
        link.weight = total if link.nofollow else following
    return list(found.values())
