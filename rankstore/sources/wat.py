"""Common Crawl's WAT files (``*.warc.wat.gz``): a WARC's metadata, with each HTML page's links already listed.

A WAT is itself a file of WARC records: one ``metadata`` record of JSON for
each record of the WARC it describes (request, response, metadata), its
"envelope".  Only an envelope describing a response is a page, read as the
WARC reader reads the response itself: a 3xx with ``Location`` is a link from
the old URL to the new one, a 404 or 410 a page gone, a 2xx whose
Content-Type is HTML a page whose links are ``HTML-Metadata.Links``' ``A@/href``
and ``AREA@/href`` entries (others, ``IMG@/src``, ``SCRIPT@/src``,
``FORM@/action``..., are not links a person follows), with their ``rel``
and anchor ``text``; ``Head.Title``, ``Head.Base`` and the robots meta tags
and canonical link of ``Head`` count as in the page.  They are passed on as
written (:class:`~rankstore.sources.ListedPage`): the build's worker
processes read them by the rules a page's own HTML is read by
(:func:`rankstore.extract.resolve_listed`: nofollow, ugc and sponsored,
the base, in-page links), as they parse a WARC's pages.

Headers are an object of name to value, the names as the server wrote them
(matched here without regard to case); since December 2024 a header the
server repeated is a list of its values (``"Set-Cookie": ["a", "b"]``), and
any header may be one: the first value counts, as FastWARC reads a WARC's.
The strings are read as Common Crawl writes them since 2019: entities
already decoded.  An envelope that is not JSON, or lacks what a page needs
(its URL, the response's status), is reported and skipped; damage to the
file itself is read past as in a WARC (:func:`rankstore.sources.warc.read_records`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from fastwarc.warc import WarcRecord, WarcRecordType

from . import GONE_STATUSES, ListedLink, ListedPage, Progress, Record, Skipped, casts_no_vote
from .warc import HTML_TYPES, MAX_BODY, RecordReader, read_body, read_records

try:  # a dependency; the standard library's json is its twin (tests/test_wat.py: both read the envelopes alike)
    import orjson as _orjson
except ImportError:  # an install without it
    _orjson = None  # type: ignore[assignment]

try:  # the C twin of _loads + unique_links (tests/test_wat_twins.py runs every envelope through both)
    from . import _fastwat  # type: ignore[attr-defined]
except ImportError:  # built without a compiler
    _fastwat = None

__all__ = ["read_wat", "WatPages", "PAGE_LINK_PATHS", "UniqueLinks", "unique_links", "parse_envelope"]

# The entries of HTML-Metadata.Links that are links a person follows: <a href> and <area href>.
PAGE_LINK_PATHS = frozenset({"A@/href", "AREA@/href"})
_KINDS: dict[type, str] = {dict: "an object", list: "an array"}


class _Malformed(Exception):
    """An envelope without a field a page needs, or with one of the wrong kind."""


def read_wat(path: str, progress: Progress | None = None) -> Iterator[Record | Skipped]:
    return read_records(path, WatPages(), progress)


class WatPages(RecordReader):
    """A WAT's envelopes of responses as pages; the types of the records they describe counted."""

    def __init__(self) -> None:
        self.described: Counter[str] = Counter()

    def take(self, record: WarcRecord, where: str) -> Record | Skipped | None:
        if record.record_type != WarcRecordType.metadata:
            return None  # the WAT's own warcinfo
        if not (record.headers.get("Content-Type") or "").lower().startswith("application/json"):
            return None
        body = read_body(record)
        if len(body) > MAX_BODY:
            return Skipped(where, f"WAT envelope over {MAX_BODY // (1024 * 1024)} MiB")
        try:
            document = parse_envelope(body)
        except ValueError as error:  # UnicodeDecodeError is one
            return Skipped(where, f"invalid WAT JSON ({str(error)[:200]})")
        try:
            return self.page_of(document, where)
        except _Malformed as error:
            return Skipped(where, f"malformed WAT envelope ({error})")

    def page_of(self, document: Any, where: str) -> Record | Skipped | None:
        """The page an envelope makes (None for one passed over); the WARC-Type it describes counted."""
        if not isinstance(document, dict):
            raise _Malformed("not a JSON object")
        envelope = _field(document, "Envelope", dict, "")
        if envelope is None:
            raise _Malformed("no Envelope")
        warc = _field(envelope, "WARC-Header-Metadata", dict, "Envelope.")
        if warc is None:
            raise _Malformed("no Envelope.WARC-Header-Metadata")
        described = warc.get("WARC-Type")
        if not isinstance(described, str):
            raise _Malformed("no WARC-Type in Envelope.WARC-Header-Metadata")
        self.described[described] += 1
        if described != "response":
            return None  # request, metadata, warcinfo: no page
        url = warc.get("WARC-Target-URI")
        if not isinstance(url, str) or not url.strip("<> "):
            return Skipped(where, "WAT envelope without WARC-Target-URI")
        url = url.strip().strip("<>").strip()
        date = warc.get("WARC-Date") if isinstance(warc.get("WARC-Date"), str) else None
        payload = _field(envelope, "Payload-Metadata", dict, "Envelope.") or {}
        http = _field(payload, "HTTP-Response-Metadata", dict, "Envelope.Payload-Metadata.")
        if http is None:
            return None  # not HTTP (dns:, ...): the WARC reader passes such responses over
        message = _field(http, "Response-Message", dict, "HTTP-Response-Metadata.") or {}
        try:
            status = int(str(message.get("Status", "")).strip())
        except ValueError:
            raise _Malformed("no Response-Message.Status") from None
        headers = _field(http, "Headers", dict, "HTTP-Response-Metadata.") or {}
        if 300 <= status < 400:
            location = _header(headers, "Location")
            if not location:
                return Skipped(where, f"HTTP {status} without Location")
            return Record(url, where, status, location=location.strip(), fetched_at=date)
        if status in GONE_STATUSES:
            return Record(url, where, status, fetched_at=date)
        if not 200 <= status < 300:
            return None
        content_type = _header(headers, "Content-Type") or ""
        if not content_type.lower().lstrip().startswith(HTML_TYPES):
            return None
        html = _field(http, "HTML-Metadata", dict, "HTTP-Response-Metadata.") or {}
        listed = _listed(html)
        return Record(url, where, status, content_type=content_type, fetched_at=date, listed=listed)

    def nothing_found(self, types: Counter[str]) -> str:
        said = super().nothing_found(types)
        if self.described:
            kinds = ", ".join(f"{count:,} {kind}" for kind, count in self.described.most_common())
            said += f"; their envelopes describe: {kinds}"
        elif types["response"]:
            said += "; a WARC? it is read with --format warc"
        return said


class UniqueLinks(list):
    """A page's links as :func:`unique_links` lists them, made so by the C reader (``_fastwat.prune``): a JSON
    array never parses as one."""


def parse_envelope(body: bytes) -> Any:
    """An envelope's JSON, as far as :meth:`WatPages.page_of` reads it: by the C reader, which makes only the
    fields read and lists the page's links at once (:class:`UniqueLinks`), else parsed whole (:func:`_loads`)
    where that reader is not sure it reads the body as the parser does, or is not built."""
    if _fastwat is not None:
        pruned = _fastwat.prune(body, UniqueLinks, ListedLink)
        if pruned is not None:
            return pruned
    return _loads(body)


def _loads(body: bytes) -> Any:
    """A WAT envelope's JSON: orjson's parser (several times the standard library's speed), the standard
    library's where orjson refuses what it reads (an escaped lone surrogate, say) or is missing."""
    if _orjson is not None:
        try:
            return _orjson.loads(body)
        except _orjson.JSONDecodeError:
            pass
    return json.loads(body)


def _field(parent: Any, name: str, kind: type, path: str) -> Any:
    """``parent[name]``, which must be a ``kind``; None where it is absent."""
    value = parent.get(name)
    if value is not None and not isinstance(value, kind):
        raise _Malformed(f"{path}{name} is not {_KINDS[kind]}")
    return value


def _header(headers: dict, name: str) -> str | None:
    """A header's value, its name matched without regard to case; the first of a repeated header's list."""
    name = name.lower()
    for key, value in headers.items():
        if key.lower() == name:
            if isinstance(value, list):
                value = next((item for item in value if isinstance(item, str)), None)
            return value if isinstance(value, str) else None
    return None


def _text(entry: dict, name: str) -> str:
    value = entry.get(name)
    return value if isinstance(value, str) else ""


def _listed(html: dict) -> ListedPage:
    """HTML-Metadata -> the page's title, links, base, canonical link and robots meta tags, as written."""
    head = _field(html, "Head", dict, "HTML-Metadata.") or {}
    title = head.get("Title") if isinstance(head.get("Title"), str) else None
    base = head.get("Base") if isinstance(head.get("Base"), str) else None
    listed = ListedPage(title=title, base=base)
    for meta in _field(head, "Metas", list, "HTML-Metadata.Head.") or ():
        if isinstance(meta, dict) and _text(meta, "name").strip().lower() == "robots":
            listed.robots.append(_text(meta, "content"))
    for link in _field(head, "Link", list, "HTML-Metadata.Head.") or ():
        if isinstance(link, dict) and "canonical" in _text(link, "rel").lower().split() and _text(link, "url"):
            listed.canonical = _text(link, "url")
            break
    entries = _field(html, "Links", list, "HTML-Metadata.") or ()
    listed.links.extend(entries if type(entries) is UniqueLinks else unique_links(entries))
    return listed


def unique_links(entries: Iterable[Any]) -> list[ListedLink]:
    """HTML-Metadata.Links -> a page's links, one an href, in the order of first occurrence.

    A page lists hundreds of links, most of them an href it repeats (navigation): one ListedLink an href, which
    reads as every occurrence would (resolve_listed's rules): a rel that casts a vote if any occurrence's does,
    else the first occurrence's; the first anchor text that says something.  The checks inline, not a call
    each: this loop is the hottest of a WAT's reading (the C reader's twin)."""
    links: dict[str, ListedLink] = {}
    for entry in entries:
        if type(entry) is not dict or entry.get("path") not in PAGE_LINK_PATHS:
            continue
        href = entry.get("url")
        if type(href) is not str:
            continue
        rel, text = entry.get("rel", ""), entry.get("text", "")
        rel = rel if type(rel) is str else ""
        text = text if type(text) is str else ""
        seen = links.get(href)
        if seen is None:
            links[href] = ListedLink(href, rel, text if text.strip() else "")
            continue
        if seen.rel and not casts_no_vote(rel):
            seen.rel = ""  # this occurrence votes: so does the link
        if not seen.anchor_text and text.strip():
            seen.anchor_text = text
    return list(links.values())
