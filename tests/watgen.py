"""A WAT written from a WARC, in Common Crawl's layout, for the tests: the envelope ia-web-commons writes.

Common Crawl makes its WAT files with its fork of ia-web-commons
(``ExtractingParseObserver`` and ``HTMLMetaData``): for each record of the
WARC, a ``metadata`` record of JSON, its envelope.  This writes the same
from a WARC read with warcio and its HTML parsed with lxml (libxml2), and
nothing of rankstore: so a store built from the WAT, held equal to one built
from the WARC, checks our reader against another's reading of the same pages.

What it writes, as ia-web-commons does: ``HTML-Metadata.Links`` gets
``A@/href`` (with ``target``, ``alt``, ``title``, ``rel``, ``hreflang``,
``type``, and the anchor's ``text``: its text nodes joined, white space
collapsed, cut at 128 characters), ``AREA@/href`` (with ``rel``, and no
text: its ``alt`` is not written), ``IMG@/src``, ``IFRAME@/src``,
``FORM@/action``...; ``Head`` gets ``Title`` (the first, cut at 128
characters), ``Base``, ``Metas``, ``Link`` and ``Scripts``; strings with
their character references decoded.
Headers repeated by the server are a list of their values (Common Crawl's
layout since December 2024).
"""

from __future__ import annotations

import gzip
import io
import json
import re
import uuid

import lxml.etree
from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

MAX_TEXT_LEN = 128  # Common Crawl's ia-web-commons' cut of anchor text and title
_CHARSET = re.compile(rb"""charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]+)""", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
_PARSER = lxml.etree.HTMLParser(encoding="utf-8")
# The elements ia-web-commons reads a URL or text of (it also reads a background, data-href or data-uri
# attribute of any element: left out here, as rankstore reads none of them).
_NAMED = ("a", "area", "base", "img", "iframe", "frame", "embed", "input", "form", "link", "meta", "script", "title")


def _attrs(element, *names: str) -> dict:
    return {name: element.get(name) for name in names if element.get(name) is not None}


def _cut(text: str) -> str:
    return _SPACE.sub(" ", text).strip()[:MAX_TEXT_LEN]


def html_metadata(body: bytes, content_type: str) -> dict:
    """HTML-Metadata of a page, as ia-web-commons writes it (in document order, by its rules)."""
    declared = _CHARSET.search(content_type.encode("latin-1", "replace")) or _CHARSET.search(body[:1024])
    charset = declared.group(1).decode("ascii") if declared else "utf-8"
    try:
        text = body.decode(charset, errors="replace")
    except LookupError:
        text = body.decode("utf-8", errors="replace")
    if not text.strip():
        return {}
    root = lxml.etree.fromstring(text.encode(), parser=_PARSER)
    head: dict = {}
    links: list[dict] = []

    def href(element, tag: str, attr: str, *others: str) -> None:
        if element.get(attr) is not None:
            links.append({"path": f"{tag}@/{attr}", "url": element.get(attr), **_attrs(element, *others)})

    for element in root.iter(*_NAMED):  # in document order
        tag = element.tag.upper()
        if tag == "TITLE":
            if "Title" not in head and (title := _cut("".join(element.itertext()))):
                head["Title"] = title
        elif tag == "A" and element.get("href") is not None:
            entry = {"path": "A@/href", "url": element.get("href")}
            entry.update(_attrs(element, "target", "alt", "title", "rel", "hreflang", "type"))
            if text := _cut("".join(element.itertext())):  # its text nodes joined as they stand, as ia-web-commons
                entry["text"] = text
            links.append(entry)
        elif tag == "AREA":
            href(element, tag, "href", "rel")
        elif tag == "BASE" and element.get("href") is not None:
            head["Base"] = element.get("href")
        elif tag == "IMG":
            href(element, tag, "src", "alt", "title")
        elif tag in ("IFRAME", "FRAME", "EMBED", "INPUT"):
            href(element, tag, "src")
        elif tag == "FORM":
            href(element, tag, "action", "target", "method")
        elif tag == "LINK" and element.get("href") is not None:
            entry = {"path": "LINK@/href", "url": element.get("href"), **_attrs(element, "rel", "type")}
            head.setdefault("Link", []).append(entry)
        elif tag == "META":
            if entry := _attrs(element, "name", "rel", "content", "http-equiv", "property"):
                head.setdefault("Metas", []).append(entry)
        elif tag == "SCRIPT" and element.get("src") is not None:
            entry = {"path": "SCRIPT@/src", "url": element.get("src"), **_attrs(element, "type")}
            head.setdefault("Scripts", []).append(entry)
    found: dict = {}
    if head:
        found["Head"] = head
    if links:
        found["Links"] = links
    return found


def headers_json(pairs: list[tuple[str, str]]) -> dict:
    """HTTP headers as the envelope holds them: a repeated header as the list of its values."""
    headers: dict = {}
    for name, value in pairs:
        if name in headers:
            held = headers[name]
            headers[name] = (held if isinstance(held, list) else [held]) + [value]
        else:
            headers[name] = value
    return headers


def envelope(record, filename: str) -> dict:
    """The JSON envelope of one WARC record (warcio's), in Common Crawl's layout."""
    warc_headers = dict(record.rec_headers.headers)
    payload: dict = {"Actual-Content-Type": record.content_type or ""}
    http = record.http_headers
    if http is not None and record.rec_type == "response":
        body = record.content_stream().read()
        status, _, reason = http.statusline.partition(" ")
        meta: dict = {
            "Response-Message": {"Version": http.protocol, "Status": status, "Reason": reason},
            "Headers-Length": str(len(http.to_bytes())),
            "Headers": headers_json(http.headers),
            "Entity-Length": str(len(body)),
        }
        content_type = http.get_header("Content-Type") or ""
        if content_type.lower().startswith(("text/html", "application/xhtml+xml")):
            meta["HTML-Metadata"] = html_metadata(body, content_type)
        payload["HTTP-Response-Metadata"] = meta
    elif http is not None and record.rec_type == "request":
        path, _, version = http.statusline.rpartition(" ")
        payload["HTTP-Request-Metadata"] = {
            "Request-Message": {"Method": http.protocol, "Path": path, "Version": version},
            "Headers": headers_json(http.headers),
        }
    return {
        "Container": {"Filename": filename, "Compressed": filename.endswith(".gz")},
        "Envelope": {
            "Format": "WARC",
            "WARC-Header-Length": "0",
            "Actual-Content-Length": warc_headers.get("Content-Length", "0"),
            "WARC-Header-Metadata": warc_headers,
            "Payload-Metadata": payload,
        },
    }


def write_wat(warc_path: str, wat_path: str, edit=None) -> int:
    """A WAT of every record of ``warc_path``; ``edit(envelope)`` may change each before it is written
    (a test's December 2024 headers, say).  Returns the number of envelopes written."""
    written = 0
    name = wat_path.rsplit("/", 1)[-1]
    with open(warc_path, "rb") as source, open(wat_path, "wb") as sink:
        writer = WARCWriter(sink, gzip=wat_path.endswith(".gz"))
        info = writer.create_warcinfo_record(name, {"Software-Info": "rankstore tests/watgen.py", "format": "WARC"})
        writer.write_record(info)
        for record in ArchiveIterator(source):
            document = envelope(record, warc_path.rsplit("/", 1)[-1])
            if edit is not None:
                edit(document)
            target = record.rec_headers.get_header("WARC-Target-URI")
            headers = {
                "WARC-Refers-To": record.rec_headers.get_header("WARC-Record-ID") or f"<urn:uuid:{uuid.uuid4()}>"
            }
            meta = writer.create_warc_record(
                target or "",
                "metadata",
                payload=io.BytesIO(json.dumps(document, separators=(",", ":")).encode()),
                warc_content_type="application/json",
                warc_headers_dict=headers,
            )
            if not target:
                meta.rec_headers.remove_header("WARC-Target-URI")
            writer.write_record(meta)
            written += 1
    return written


def gunzip(path: str) -> bytes:
    with gzip.open(path, "rb") as handle:
        return handle.read()
