"""HTML text -> the same text with PageRank bars and a backlinks panel inserted.

A pure function: it never imports mitmproxy and does no I/O; the scores come
from the ``lookup`` callable it is given.  The document is never re-serialised:
a scanner finds the ``<a href>`` and ``<area href>`` start tags, and the output
is the input with text inserted at chosen offsets.  Every original character is
kept, in order.

The parts, as markupsafe keeps ``_speedups.c`` beside ``_native.py``: the scanner
is the C module ``_fastscan`` where it is built, else its pure-Python twin
``_scan_python`` (how the scanner reads HTML is told there), chosen once here
(:data:`scanner`); the bars and the panel are made by ``markup``; this module
reads a scan, asks for the scores and splices the edits in.
"""

from __future__ import annotations

import bisect
import codecs
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import AnyStr, Protocol, cast, overload

from rankstore.extract import sniff_charset
from rankstore.urls import canonical, page_bound, resolver, shared_by

from . import _scan_python
from ._scan_python import ATTRS_SOURCE, Edit, Link, Mark, Marks, Placed, ScanAnswer, attributes, link_values
from .csp import allow_style_hash

# The markup's names, importable from here as before the markup had its own module (new code imports markup)
from .markup import (
    LATER_NOTE,
    MAX_BAR_PX,
    PROXY_HOST,
    STYLE,
    STYLE_BLOCK,
    STYLE_HASH,
    STYLE_HASHES,
    ZERO_NOTE,
    Backlink,
    Estimate,
    LevelPanel,
    LinkInfo,
    PanelData,
    Referrer,
    bar,
    bars,
    escape,
    estimate_text,
    format_score,
    icon_bar,
    level_section,
    panel,
    prose,
    proxy_url,
)

__all__ = [
    "escape",
    "format_score",
    "LinkInfo",
    "Estimate",
    "Backlink",
    "PanelData",
    "LevelPanel",
    "Referrer",
    "Rewrite",
    "TooManyLinks",
    "annotate",
    "annotate_bytes",
    "Mark",
    "Marks",
    "remove_edits",
    "STYLE",
    "STYLE_HASH",
    "PROXY_HOST",
    "MAX_BAR_PX",
    # the rest of the markup's names, as before it had its own module
    "STYLE_BLOCK",
    "LATER_NOTE",
    "ZERO_NOTE",
    "bar",
    "bars",
    "panel",
    "prose",
    "proxy_url",
    "estimate_text",
    "level_section",
    "Scanner",
    "scanner",
    "fast",
]


class Scanner(Protocol):
    """What either twin is: the C module ``_fastscan`` or the Python module ``_scan_python``."""

    def scan(self, text: str, /) -> ScanAnswer: ...
    def splice(self, data: AnyStr, edits: Sequence[Edit], /) -> AnyStr: ...
    def place(self, links: Sequence[Link], table: Marks, own: Marks, nofollow_all: bool, /) -> Placed: ...


class BytesScanner(Scanner, Protocol):
    """The C twin, which also reads bytes in an encoding whose bytes below 0x80 are ASCII."""

    @overload
    def scan(self, text: str, /) -> ScanAnswer: ...
    @overload
    def scan(self, text: bytes, encoding: str, /) -> ScanAnswer: ...


def _built() -> BytesScanner | None:
    try:
        from . import _fastscan
    except ImportError:  # not built (no C compiler at install time): the pure-Python scanner
        return None
    return _fastscan


# The C twin, where it is built
fast = _built()
# The twin in use, chosen here once: the C scanner, and with it the C splice and marks and reading bytes as
# they are; or the Python one.  The tests run every case on each by setting this (tests/conftest.py's
# ``scanner`` fixture).
scanner: Scanner = _scan_python if fast is None else fast


@dataclass
class Rewrite:
    text: str | bytes  # the output: a str from annotate, the body's bytes from annotate_bytes
    edits: Sequence[tuple[int, str | bytes]] = field(default_factory=list)  # (offset in the input, inserted)
    links: int = 0  # bars inserted
    ranked: int = 0  # of which for pages in the store


class TooManyLinks(Exception):
    """The page would cost more than the caller allows: more links than it would rewrite (``most_links``:
    nothing was resolved or looked up), or, in ``worker.rewrite_page``, more links to look up in the store
    (``most_lookups``; any, while the ranking's newest version is not read) or a panel to choose from more
    backlinks (``most_backlinks``)."""


@dataclass
class _Scan:
    links: list[Link]  # (offset after the start tag's '>', href, nofollow)
    body_at: int | None  # offset after <body ...>
    head_at: int | None  # offset after <head ...>
    base_href: str | None
    robots_nofollow: bool
    csp_metas: list[tuple[int, int, str]]  # (content value start, end, policy) of meta CSP tags
    end_is_markup: bool = False  # the file ends in HTML content, where appended markup is read as markup
    frameset: bool = False  # a <frameset> start tag: a document of frames has no body to show the panel in
    icons: list[int] = field(default_factory=list)  # the offsets of the links that hold no text (an icon)


def _units(text: str, encoding: str | None) -> int:
    """The length of ``text`` in the document's units: characters, or bytes in ``encoding``."""
    return len(text) if encoding is None else len(text.encode(encoding, errors="surrogateescape"))


def _head_tag(scan: _Scan, name: str, doc: str | bytes, start: int, end: int, encoding: str | None = None) -> None:
    """What a <base> or <meta> tag (attributes at doc[start:end]) says; ``doc`` is bytes in ``encoding``, or
    a str (encoding None), and the offsets kept are in its units."""
    if name == "frameset":
        scan.frameset = True
        return
    if name == "meta" and not _scan_python.may_matter(doc[start:end]):
        return
    attrs_text = (
        cast(str, doc[start:end])
        if encoding is None
        else cast(bytes, doc[start:end]).decode(encoding, errors="surrogateescape")
    )
    if name == "base":
        if scan.base_href is None:
            scan.base_href = attributes(attrs_text).get("href")
        return
    attrs = attributes(attrs_text)
    if attrs.get("name", "").strip().lower() == "robots" and "nofollow" in attrs.get("content", "").lower():
        scan.robots_nofollow = True
    if attrs.get("http-equiv", "").strip().lower() == "content-security-policy":
        content = re.search(r"""(?i)\bcontent[\t\n\f\r ]*=[\t\n\f\r ]*(?:"([^"]*)"|'([^']*)')""", attrs_text)
        if content:
            group = 1 if content.group(1) is not None else 2
            value_start = start + _units(attrs_text[: content.start(group)], encoding)
            value_end = start + _units(attrs_text[: content.end(group)], encoding)
            scan.csp_metas.append((value_start, value_end, content.group(group)))


def _scan_of(answer: ScanAnswer, doc: str | bytes, encoding: str | None = None) -> _Scan:
    """A twin's answer (its ``scan`` of ``doc``) read whole: the links it left raw decoded, the <base>, <meta>
    and <frameset> tags it found read.  ``doc`` is a str (``encoding`` None), or bytes in ``encoding`` (read
    by the C twin: every decision is made on ASCII, so it decides the same; offsets are then in bytes)."""
    links, body_at, head_at, extras, raw, end_is_markup, icons = answer
    for index in raw:  # the links with a rel or a character reference in their href: (offset, href, rel) raw
        links[index] = link_values(*cast(tuple[int, str, "str | None"], links[index]))
    scan = _Scan(links, body_at, head_at, None, False, [], end_is_markup, icons=icons)
    for name, start, end in extras:
        _head_tag(scan, name, doc, start, end, encoding)
    return scan


# ------------------------------------------------------------------ annotate

# What may come before the first content without opening <head>: white space (written
# out or as a character reference), comments (as the tokenizer ends them), doctypes,
# bogus comments and the end tags the parser ignores there.
_PROLOGUE = re.compile(
    r"(?:[\t\n\f\r ]++|&#0*+(?:9|1[023]|32)(?![0-9]);?|&#[xX]0*+(?:9|[aAcCdD]|20)(?![0-9A-Fa-f]);?|&(?:Tab|NewLine);"
    r"|<!--(?:-?>|.*?--!?>)|<!(?!--)[^>]*+>|<\?[^>]*+>|</(?:>|[^A-Za-z>][^>]*+>)"
    r"|</(?!(?ai:head|body|html|br)[\t\n\f\r />])[A-Za-z][^>]*+>)*+",
    re.S,
)
_HTML_TAG = re.compile(rf"<(?ai:html)(?=[\t\n\f\r />]){ATTRS_SOURCE}>")
# A <select> or <a> that may still be open at the end of the file (its last start tag has no
# end tag after it): the panel's text would become the select's, or its links would close
# the <a> and move the page's elements.  The scanner keeps no HTML elements, so the panel
# is left out of such a page without <body> rather than risked.
_START_OF = {name: re.compile(rf"<{name}[\t\n\f\r />]", re.I | re.A) for name in ("select", "a")}
_END_OF = {name: re.compile(rf"</{name}[\t\n\f\r />]", re.I | re.A) for name in ("select", "a")}


def _bytes_twin(pattern: re.Pattern[str]) -> re.Pattern[bytes]:
    """The same (ASCII) pattern, for bytes: documents read as bytes are ASCII where any of these decide."""
    return re.compile(pattern.pattern.encode("ascii"), pattern.flags & ~re.UNICODE)


_PROLOGUE_BYTES = _bytes_twin(_PROLOGUE)
_HTML_TAG_BYTES = _bytes_twin(_HTML_TAG)
_START_OF_BYTES = {name: _bytes_twin(pattern) for name, pattern in _START_OF.items()}
_END_OF_BYTES = {name: _bytes_twin(pattern) for name, pattern in _END_OF.items()}


def _left_open(doc: str | bytes) -> bool:
    """Has the last <select> or <a> start tag no end tag of its name after it?"""
    starts, ends = (_START_OF_BYTES, _END_OF_BYTES) if isinstance(doc, bytes) else (_START_OF, _END_OF)
    for name, start in starts.items():
        opened = -1
        for match in start.finditer(doc):  # type: ignore[arg-type]
            opened = match.end()
        if opened >= 0 and not ends[name].search(doc, opened):  # type: ignore[arg-type]
            return True
    return False


def _past_prologue(doc: str | bytes, position: int) -> int:
    pattern = _PROLOGUE_BYTES if isinstance(doc, bytes) else _PROLOGUE
    prologue = pattern.match(doc, position)  # type: ignore[arg-type]  # it matches "" too: never None
    return prologue.end() if prologue else position


def _style_at(doc: str | bytes, scan: _Scan) -> int:
    """Where the style block goes: in <head>, else from the start (and past a first <html> tag), past the
    doctype (content before it would put the page in quirks mode) and past white space and comments, which
    stay where the parser puts them, not in the head our <style> would open."""
    if scan.head_at is not None:
        return scan.head_at
    at = _past_prologue(doc, 0)
    html_tag = (_HTML_TAG_BYTES if isinstance(doc, bytes) else _HTML_TAG).match(doc, at)  # type: ignore[arg-type]
    return _past_prologue(doc, html_tag.end()) if html_tag else at


def annotate(
    text: str,
    page_url: str,
    lookup: Callable[[Sequence[str]], Mapping[str, LinkInfo]],
    panel_data: Callable[[str], PanelData | str | None] | None = None,
    marks: Callable[[str], Marks] | None = None,
    *,
    most_links: int | None = None,
) -> Rewrite:
    """Insert a bar after every link's start tag, the style block and the panel.

    ``lookup`` receives the distinct target URLs of the page at once (canonical
    form) and returns what it knows of them.  ``panel_data`` receives the page's
    canonical URL, and returns what its panel shows, or the panel's markup
    already made (by :func:`panel`).  ``marks``, given a key (a base directory),
    returns the caller's table of what each href shows there (:data:`Marks`),
    kept for one version of what ``lookup`` answers: the hrefs found there skip
    resolving, looking up and rendering.  ``most_links``: past that many links,
    :class:`TooManyLinks` is raised once the text is scanned, before the rest.
    """
    edits, links, ranked = _edits(
        text, _scan_of(scanner.scan(text), text), None, page_url, lookup, panel_data, marks, most_links
    )
    return Rewrite(splice(text, edits), edits, links, ranked)


def _edits(
    doc: str | bytes,
    scan: _Scan,
    encoding: str | None,
    page_url: str,
    lookup: Callable[[Sequence[str]], Mapping[str, LinkInfo]],
    panel_data: Callable[[str], PanelData | str | None] | None,
    marks: Callable[[str], Marks] | None = None,
    most_links: int | None = None,
) -> tuple[list[tuple[int, str]], int, int]:
    """(edits in order of offset, bars, of which ranked) for a document and its scan: ``doc`` a str
    (``encoding`` None), or bytes in ``encoding`` (offsets in bytes; every insert is ASCII)."""
    if most_links is not None and len(scan.links) > most_links:
        raise TooManyLinks(f"{len(scan.links):,} links")
    base = canonical(scan.base_href, page_url) if scan.base_href else None
    base = base or page_url
    key = shared_by(base)
    own: Marks = {}  # this page's alone: hrefs answered against its whole base
    table = marks(key) if marks is not None and key is not None else own
    place = scanner.place
    edits, placed, ranked, missing = place(scan.links, table, own, scan.robots_nofollow)
    if missing:
        resolve = resolver(base)  # (base directory, href) -> URL, shared across pages
        # no bar for a link within the page (an href of only a fragment, perhaps after white space)
        within = {href for href in missing if href.lstrip()[:1] in ("", "#")}
        targets = {href: None if href in within else resolve(_without_fragment(href)) for href in missing}
        wanted = [target for target in dict.fromkeys(targets.values()) if target]
        known = lookup(wanted) if wanted else {}
        unknown = LinkInfo(None)
        for href, target in targets.items():
            info = known.get(target, unknown) if target else None
            mark = None if info is None else (*bars(info), info.pagerank is not None)
            (table if href in within or not page_bound(href) else own)[href] = mark
        edits, placed, ranked, _ = place(scan.links, table, own, scan.robots_nofollow)
    assert edits is not None  # every href has its mark now
    if scan.icons:  # their bars held out of the flow: a control of a fixed size keeps its size and its icon
        icons = set(scan.icons)
        edits = [
            (offset, icon_bar(inserted, doc[offset : offset + 2] in _END_TAG) if offset in icons else inserted)
            for offset, inserted in edits
        ]
    more: list[tuple[int, str]] = []  # after the bars at the same offset, in this order
    if panel_data is not None and not scan.frameset:
        page = canonical(page_url)
        # after <body>, else at the end when the file ends where markup is read as markup (not inside
        # a <textarea>, <title>, comment, script, SVG or tag left open); else no panel
        at = scan.body_at
        if at is None and scan.end_is_markup and not _left_open(doc):
            at = len(doc)
        data = panel_data(page) if page and at is not None else None
        if data is not None and at is not None:
            more.append((at, data if isinstance(data, str) else panel(data)))
    if edits or more:  # the style block only where there is something to style
        more.append((_style_at(doc, scan), STYLE_BLOCK))
        for start, _end, policy in scan.csp_metas:
            for offset, inserted in allow_style_hash(policy, *STYLE_HASHES, html_attribute=True):
                more.append((start + _units(policy[:offset], encoding), inserted))
    for edit in more:  # the bars are in order already: a stable sort's order, without the sort
        bisect.insort_right(edits, edit, key=_OFFSET)
    return edits, placed, ranked


def _without_fragment(href: str) -> str:
    """``href`` without its fragment where that is all the URL standard's first steps change in it (no
    space, tab, newline or other control character in it): ``a.html#x`` resolves as ``a.html``, whose
    answer the page's other links have often asked for already."""
    cut = href.find("#")
    return href[:cut] if cut > 0 and " " not in href and href.isprintable() else href


_OFFSET = operator.itemgetter(0)  # an edit's offset
_END_TAG = ("</", b"</")  # a bar put before its link's end tag


def splice(doc: AnyStr, edits: Sequence[Edit]) -> AnyStr:
    """``doc`` with each edit's insert put in before the character (or byte) at its offset, by the twin in
    use: edits in order of offset; the inserts into bytes are bytes, or ASCII str."""
    return scanner.splice(doc, edits)


def _single_byte_ascii(codec: str) -> bool:
    """Is every byte below 0x80 that ASCII character, and no byte above one, in this single-byte codec?"""
    try:
        decoded = bytes(range(256)).decode(codec, errors="surrogateescape")
    except (LookupError, UnicodeError):
        return False
    return len(decoded) == 256 and all(
        (ord(c) < 0x80) == (i < 0x80) and (i >= 0x80 or ord(c) == i) for i, c in enumerate(decoded)
    )


# Charsets whose bytes the C scanner reads as they are (UTF-8 decides on ASCII bytes alone too): the names
# sniff_charset gives (codecs' own names)
_BYTES_READABLE = frozenset(
    ["utf-8"]
    + [
        name
        for name in {
            codecs.lookup(label).name
            for label in [f"cp{n}" for n in range(1250, 1259)]
            + [f"iso8859-{n}" for n in (*range(2, 12), *range(13, 17))]
            + ["cp874", "koi8-r", "koi8-u", "mac-roman", "mac-cyrillic", "cp437", "cp850", "cp866"]
        }
        if _single_byte_ascii(name)
    ]
)


def annotate_bytes(
    body: bytes,
    content_type: str | None,
    page_url: str,
    lookup: Callable[[Sequence[str]], Mapping[str, LinkInfo]],
    panel_data: Callable[[str], PanelData | str | None] | None = None,
    marks: Callable[[str], Marks] | None = None,
    *,
    most_links: int | None = None,
) -> tuple[bytes, Rewrite] | None:
    """:func:`annotate` on a body in its own charset (header, BOM or meta), or None.

    None when the body does not decode and re-encode to the very same bytes in
    that charset: such a page is passed on untouched rather than risked.  The
    Rewrite's text is the new body, and its edits are offsets in the body's bytes
    with what was inserted there.  UTF-8 and the single-byte charsets are read
    as bytes by the C scanner, never decoded whole (the same result: a test holds
    the two ways equal); others are decoded, annotated and encoded again.  What
    was inserted is kept as its ASCII text, or as bytes where the charset's bytes
    for it are others (UTF-16).
    """
    charset, skip = sniff_charset(body, content_type)
    if fast is not None and scanner is fast and charset in _BYTES_READABLE:
        doc = body[skip:] if skip else body
        edits, links, ranked = _edits(
            doc,
            _scan_of(fast.scan(doc, charset), doc, charset),
            charset,
            page_url,
            lookup,
            panel_data,
            marks,
            most_links,
        )
        if not skip:
            new_body = splice(doc, edits)
            return new_body, Rewrite(new_body, edits, links, ranked)
        new_body = body[:skip] + splice(doc, edits)
        return new_body, Rewrite(new_body, [(skip + offset, inserted) for offset, inserted in edits], links, ranked)
    try:
        text = body[skip:].decode(charset, errors="surrogateescape")
        # UTF-8 with surrogateescape gives back any bytes (PEP 383; a test holds it to that)
        if charset != "utf-8" and text.encode(charset, errors="surrogateescape") != body[skip:]:
            return None
    except (UnicodeError, LookupError):
        return None
    rewrite = annotate(text, page_url, lookup, panel_data, marks, most_links=most_links)
    # every insertion is ASCII (non-ASCII as character references): encodable in any charset
    new_body = body[:skip] + cast(str, rewrite.text).encode(charset, errors="surrogateescape")
    return new_body, Rewrite(
        new_body, _edits_in_bytes(text, rewrite.edits, charset, skip), rewrite.links, rewrite.ranked
    )


def _edits_in_bytes(text: str, edits: Sequence[tuple[int, str | bytes]], charset: str, skip: int) -> list:
    """Edits of a decoded text, as offsets in its bytes and what was inserted: the (ASCII) text where its
    bytes are its ASCII bytes, else the bytes (UTF-16)."""
    moved: list[tuple[int, str | bytes]] = []
    at, previous = skip, 0
    for offset, inserted in edits:
        at += len(text[previous:offset].encode(charset, errors="surrogateescape"))
        previous = offset
        encoded = cast(str, inserted).encode(charset)
        moved.append((at, inserted if len(encoded) == len(inserted) else encoded))
    return moved


def remove_edits(text: AnyStr, edits: Iterable[tuple[int, str | bytes]]) -> AnyStr:
    """The input again, from an output and its edits (for tests and debugging): str or bytes.

    Removing the edits from the first on, each one's output position is its
    input offset, since every edit before it is already gone.
    """
    result = text
    for offset, inserted in sorted(edits, key=lambda edit: edit[0]):
        if isinstance(result, bytes) and isinstance(inserted, str):
            inserted = inserted.encode("ascii")
        if result[offset : offset + len(inserted)] != inserted:
            raise ValueError(f"no insertion at {offset}")
        result = result[:offset] + result[offset + len(inserted) :]
    return result
