"""Crawl readers: one module per format, all yielding the same record types.

A reader yields :class:`Record` for every page it can read and :class:`Skipped`
for every record it cannot (with its location and the reason), so one bad
record never stops the rest of a crawl from loading.  A source that cannot be
opened at all raises :class:`SourceError`.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..choices import FORMATS

if TYPE_CHECKING:  # in annotations only: the CLI imports this module to declare its options
    import numpy as np
    import pyarrow as pa

__all__ = [
    "NO_VOTE_RELS",
    "casts_no_vote",
    "Record",
    "ListedLink",
    "ListedPage",
    "EdgeBatch",
    "Skipped",
    "SourceError",
    "DEFAULT_PATHS_BASE",
    "FORMATS",
    "GRAPH_FORMATS",
    "RANK_FORMATS",
    "GONE_STATUSES",
    "detect_format",
    "open_part",
    "read_source",
    "read_remote",
]

# The answers that say a page is no more (Not Found, Gone): a recrawl that gets one drops the page's links.
# Other errors (403, 429, 5xx) say nothing of the page: its last good capture stands.
GONE_STATUSES = frozenset({404, 410})

DEFAULT_PATHS_BASE = "https://data.commoncrawl.org/"  # what a *.paths.gz listing's paths are resolved against


NO_VOTE_RELS = frozenset({"nofollow", "ugc", "sponsored"})  # a link whose rel holds one casts no vote


def casts_no_vote(rel: str | None) -> bool:
    """Whether a link's ``rel`` says it casts no vote (nofollow, ugc, sponsored)."""
    return bool(rel and NO_VOTE_RELS.intersection(rel.lower().split()))


@dataclass(slots=True)
class ListedLink:
    """A link as the page wrote it, from metadata that lists a page's links: ``href`` and ``rel`` as
    written, the anchor's text."""

    href: str
    rel: str = ""
    anchor_text: str = ""


@dataclass(slots=True)
class ListedPage:
    """What a page holds, parsed where the crawl's metadata was made (a WAT), as the page wrote it: its
    title, links, ``<base href>``, ``<link rel=canonical href>`` and the content of its robots meta tags.
    ``rankstore.extract.resolve_listed`` reads them by the rules ``extract`` reads a page's HTML by."""

    title: str | None = None
    links: list[ListedLink] = field(default_factory=list)
    base: str | None = None
    canonical: str | None = None
    robots: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Record:
    """One page of a crawl.

    ``body`` holds an HTML page to parse, or ``listed`` its links already
    listed; ``location`` a redirect's target; none of them, for a page that is
    gone (``status`` in :data:`GONE_STATUSES`).  ``fetched_at`` is the
    capture's time as the crawl recorded it (WARC-Date), None where the source
    does not say.
    """

    url: str
    where: str
    status: int = 200
    body: bytes | None = None
    content_type: str | None = None
    location: str | None = None
    fetched_at: str | None = None
    listed: ListedPage | None = None


@dataclass(slots=True)
class EdgeBatch:
    """Links of a graph source in bulk, for graphs too large for a record per page.

    The reader numbers the graph's vertices 0, 1, 2... in the order it first
    names them: ``urls`` holds the URLs (as read, not yet canonical) of the
    vertices new in this batch, numbered after those of earlier batches.
    ``src``/``dst`` are vertex numbers (int64 arrays of equal length);
    ``weights`` (float64) is None when every link weighs 1.  A batch may carry
    only vertices, or only links.  ``where`` says where the batch was read.
    ``sites`` holds instead the names of vertices that are sites, not pages
    (a Common Crawl domain graph's), numbered as ``urls`` are: a graph's
    vertices are all URLs or all sites.  ``site_hosts`` (int64, beside
    ``sites``, or None) is each site's number of hosts as the graph counts
    them, 0 where it gives none.
    """

    urls: list[str]
    src: np.ndarray
    dst: np.ndarray
    weights: np.ndarray | None = None
    where: str = ""
    sites: Sequence[str] | pa.Array = field(default_factory=list)  # a domain graph's: a pyarrow string array
    site_hosts: np.ndarray | None = None


@dataclass(slots=True)
class Skipped:
    """Something that could not be read: where, why, and how many records it stands for."""

    where: str
    reason: str
    count: int = 1


class SourceError(Exception):
    """A source that cannot be opened or recognised at all."""


Progress = Callable[[int], None]

GRAPH_FORMATS = ("edges", "ccgraph")  # read as EdgeBatch, not as a Record per page
RANK_FORMATS = ("ccranks",)  # Common Crawl's ranks files: scores of hosts or sites, stored without solving


def _sniff(path: str) -> bytes:
    with open(path, "rb") as handle:
        head = handle.read(4096)
        if head[:2] != b"\x1f\x8b":
            return head
        handle.seek(0)
        out = b""
        data = b""
        inflater = zlib.decompressobj(wbits=31)
        try:
            # A member at a time: damage past the first records is the reader's to report, record by record.
            while len(out) < 4096:
                if not data:
                    data = handle.read(65536)
                    if not data and not out:
                        raise zlib.error("compressed file ended before the end-of-stream marker was reached")
                    if not data:
                        break
                out += inflater.decompress(data, 4096 - len(out))
                data = inflater.unconsumed_tail
                if inflater.eof:
                    data = inflater.unused_data + data
                    inflater = zlib.decompressobj(wbits=31)
        except zlib.error as error:
            if not out:
                raise SourceError(f"{path}: cannot decompress: {error}") from error
        return out


_WARC_TYPE = re.compile(rb"(?im)^warc-type:[ \t]*(\w+)")
_JSON = re.compile(rb"(?im)^content-type:[ \t]*application/json")


def _is_wat(head: bytes) -> bool:
    """Common Crawl's WAT: a WARC whose first records include a metadata record of JSON, and no response."""
    json_metadata = False
    for block in head.split(b"\r\n\r\n"):
        kind = _WARC_TYPE.search(block)
        if kind is None:
            continue
        if kind.group(1).lower() == b"response":
            return False
        json_metadata = json_metadata or (kind.group(1).lower() == b"metadata" and _JSON.search(block) is not None)
    return json_metadata


def detect_format(path: str) -> str:
    """'warc', 'wat' (Common Crawl's metadata of a WARC), 'html' (a directory of saved pages), 'edges',
    'ccgraph' (Common Crawl's web graph), 'ccranks' (its ranks file, by its header), 'record' (the proxy's
    record: a directory holding RECORD) or 'extracted' (``rankstore extract``'s output), from content."""
    from .ccgraph import cc_parts, looks_like_cc_edges, looks_like_cc_vertices
    from .ccranks import looks_like_cc_ranks

    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "RECORD")):  # pagerank-proxy --record DIR
            return "record"
        if os.path.isfile(os.path.join(path, "EXTRACT")):  # rankstore extract --out DIR
            return "extracted"
        try:
            cc_parts([path])
            return "ccgraph"
        except SourceError:
            pass
        from .ccgraph import _kind, _parts_of

        parts = _parts_of(path)
        if parts and any(os.path.getsize(part) for part in parts[:3]) and _kind(path, parts) is not None:
            return "ccgraph"  # a folder of a graph's vertex or edge parts, given beside the other
        return "html"
    if not os.path.exists(path):
        raise SourceError(f"{path}: no such file or directory")
    if path.endswith((".paths.gz", ".paths")):
        return "ccgraph"
    try:
        head = _sniff(path)
    except PermissionError as error:
        raise SourceError(f"{path}: cannot open: {error.strerror}") from error
    if head.startswith(b"WARC/"):
        # The name says WAT where the head holds only the warcinfo record (a long one).
        return "wat" if _is_wat(head) or path.endswith((".wat.gz", ".wat")) else "warc"
    if not head.strip():
        raise SourceError(f"{path}: empty file")
    if b"\x00" in head:
        raise SourceError(f"{path}: not a WARC, HTML directory, edge list or web graph (binary content)")
    if looks_like_cc_vertices(head) or looks_like_cc_edges(head):
        return "ccgraph"
    if looks_like_cc_ranks(head):
        return "ccranks"
    _check_edge_list(path, head)
    return "edges"


_HTML = re.compile(rb"^\s*(<!--.*?-->\s*)*<(!doctype\s+html|html|head|body|meta|title)\b", re.IGNORECASE | re.DOTALL)
_URL_PAIR = re.compile(rb"^\s*https?://\S+\s+https?://\S+(\s+\S+)?\s*$", re.IGNORECASE)
_GIVE = (
    "give a folder of saved HTML with --base-url (the URL it was saved from), a WARC of the site "
    "(wget --mirror --warc-file=site URL), or an edge list (SRC-URL DST-URL per line)"
)


def _check_edge_list(path: str, head: bytes) -> None:
    """Refuse, in one line, text that is not an edge list: a saved HTML page, or text with no ``SRC DST``
    line of http(s) URLs among its first lines (comments and blank lines apart)."""
    if _HTML.match(head.lstrip(b"\xef\xbb\xbf")):
        raise SourceError(f"{path}: a saved HTML page, not a crawl or an edge list: {_GIVE}")
    lines = head.splitlines()
    if len(head) >= 4096 and len(lines) > 1:
        lines = lines[:-1]  # the last may be cut off by the head's end
    content = [line for line in lines if line.strip() and not line.lstrip().startswith(b"#")]
    if content and not any(_URL_PAIR.match(line) for line in content):
        raise SourceError(f"{path}: text that is not an edge list (no line SRC-URL DST-URL [WEIGHT]): {_GIVE}")


def read_source(
    path: str, fmt: str | None = None, base_url: str | None = None, progress: Progress | None = None
) -> Iterator[Record | EdgeBatch | Skipped]:
    """Records (or, for GRAPH_FORMATS, EdgeBatch) of one source; ``progress`` is called with input bytes consumed."""
    fmt = fmt or detect_format(path)
    if fmt == "warc":
        from .warc import read_warc

        return read_warc(path, progress)
    if fmt == "wat":
        from .wat import read_wat

        return read_wat(path, progress)
    if fmt == "html":
        from .htmldir import read_html_dir

        return read_html_dir(path, base_url, progress)
    if fmt == "edges":
        from .edgelist import read_edge_list

        return read_edge_list(path, progress)
    if fmt == "record":
        from .record import read_record

        return read_record(path, progress)
    if fmt == "extracted":
        from .extracted import read_extracted

        return read_extracted(path, progress)
    if fmt in RANK_FORMATS:
        raise SourceError(f"{path}: a Common Crawl ranks file is read as rankings (rankstore.imported)")
    if fmt == "ccgraph":
        raise SourceError(
            f"{path}: a Common Crawl graph is read from its vertices and edges together (read_graph_sources)"
        )
    raise SourceError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")


def open_part(name: str):
    """A file a reader reads, by path or by URL: a binary stream with ``read`` and ``peek``.  A URL is streamed
    (through the build's :class:`~rankstore.sources.remote.Fetcher`) and connected to at its first read, so
    that a part that cannot be fetched is reported where a part that cannot be read is."""
    from .remote import active_fetcher

    return active_fetcher().open(name)


def read_remote(url: str, fmt: str, progress: Progress | None = None) -> Iterator[Record | EdgeBatch | Skipped]:
    """One file at its URL, streamed, never saved: a WARC's or a WAT's pages, or an edge list's links."""
    if fmt in ("warc", "wat"):
        from .remote import active_fetcher
        from .warc_stream import read_warc_stream
        from .wat import WatPages

        reader = WatPages() if fmt == "wat" else None
        return _closing(active_fetcher().open(url), lambda stream: read_warc_stream(url, stream, progress, reader))
    if fmt == "edges":
        from .edgelist import read_edge_list

        return read_edge_list(url, progress)
    raise SourceError(f"{url}: a {fmt} source is not read from a URL (give it as a file)")


def _closing(stream, read: Callable[..., Iterator]) -> Iterator:
    with stream:
        yield from read(stream)


def read_cc_sources(paths: list[str], scheme: str = "https", progress: Progress | None = None):
    """A Common Crawl graph named by one folder or by its vertices and edges (files, folders or part lists)."""
    from .ccgraph import cc_parts, read_cc_graph

    vertices, edges = cc_parts(paths)
    return read_cc_graph(vertices, edges, scheme, progress)


def source_size(path: str) -> int:
    """Bytes a reader will report through ``progress`` for this source."""
    if os.path.isfile(os.path.join(path, "RECORD")):
        from .record import record_size

        return record_size(path)
    if os.path.isfile(os.path.join(path, "EXTRACT")):
        from .extracted import extracted_size

        return extracted_size(path)
    if os.path.isdir(path) or path.endswith((".paths.gz", ".paths")):
        from .ccgraph import _parts_of, cc_parts

        try:
            parts = [part for group in cc_parts([path]) for part in group] if os.path.isdir(path) else _parts_of(path)
            return sum(os.path.getsize(part) for part in parts if os.path.exists(part))
        except SourceError:
            pass
    if os.path.isdir(path):
        from .htmldir import html_files

        return sum(entry.stat().st_size for entry in html_files(path))
    return os.path.getsize(path)
