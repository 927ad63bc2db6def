"""Crawl readers: one module per format, all yielding the same record types.

A reader yields :class:`Record` for every page it can read and :class:`Skipped`
for every record it cannot (with its location and the reason), so one bad
record never stops the rest of a crawl from loading.  A source that cannot be
opened at all raises :class:`SourceError`.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "Record",
    "EdgeBatch",
    "Skipped",
    "SourceError",
    "FORMATS",
    "GRAPH_FORMATS",
    "GONE_STATUSES",
    "detect_format",
    "read_source",
]

# The answers that say a page is no more (Not Found, Gone): a recrawl that gets one drops the page's links.
# Other errors (403, 429, 5xx) say nothing of the page: its last good capture stands.
GONE_STATUSES = frozenset({404, 410})


@dataclass(slots=True)
class Record:
    """One page of a crawl.

    ``body`` holds an HTML page to parse; ``location`` a redirect's target;
    neither, for a page that is gone (``status`` in :data:`GONE_STATUSES`).
    ``fetched_at`` is the capture's time as the crawl recorded it (WARC-Date),
    None where the source does not say.
    """

    url: str
    where: str
    status: int = 200
    body: bytes | None = None
    content_type: str | None = None
    location: str | None = None
    fetched_at: str | None = None


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
    vertices are all URLs or all sites.
    """

    urls: list[str]
    src: np.ndarray
    dst: np.ndarray
    weights: np.ndarray | None = None
    where: str = ""
    sites: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Skipped:
    """Something that could not be read: where, why, and how many records it stands for."""

    where: str
    reason: str
    count: int = 1


class SourceError(Exception):
    """A source that cannot be opened or recognised at all."""


Progress = Callable[[int], None]

FORMATS = ("warc", "html", "edges", "ccgraph")
GRAPH_FORMATS = ("edges", "ccgraph")  # read as EdgeBatch, not as a Record per page


def _sniff(path: str) -> bytes:
    with open(path, "rb") as handle:
        head = handle.read(4096)
    if head[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as handle:
                return handle.read(4096)
        except (OSError, EOFError) as error:
            raise SourceError(f"{path}: cannot decompress: {error}") from error
    return head


def detect_format(path: str) -> str:
    """'warc', 'html' (a directory of saved pages), 'edges' or 'ccgraph' (Common Crawl's web graph), from content."""
    from .ccgraph import cc_parts, looks_like_cc_edges, looks_like_cc_vertices

    if os.path.isdir(path):
        try:
            cc_parts([path])
            return "ccgraph"
        except SourceError:
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
        return "warc"
    if not head.strip():
        raise SourceError(f"{path}: empty file")
    if b"\x00" in head:
        raise SourceError(f"{path}: not a WARC, HTML directory, edge list or web graph (binary content)")
    if looks_like_cc_vertices(head) or looks_like_cc_edges(head):
        return "ccgraph"
    return "edges"


def read_source(
    path: str, fmt: str | None = None, base_url: str | None = None, progress: Progress | None = None
) -> Iterator[Record | EdgeBatch | Skipped]:
    """Records (or, for GRAPH_FORMATS, EdgeBatch) of one source; ``progress`` is called with input bytes consumed."""
    fmt = fmt or detect_format(path)
    if fmt == "warc":
        from .warc import read_warc

        return read_warc(path, progress)
    if fmt == "html":
        from .htmldir import read_html_dir

        return read_html_dir(path, base_url, progress)
    if fmt == "edges":
        from .edgelist import read_edge_list

        return read_edge_list(path, progress)
    if fmt == "ccgraph":
        raise SourceError(
            f"{path}: a Common Crawl graph is read from its vertices and edges together (read_graph_sources)"
        )
    raise SourceError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")


def read_cc_sources(paths: list[str], scheme: str = "https", progress: Progress | None = None):
    """A Common Crawl graph named by one folder or by its vertices and edges (files, folders or part lists)."""
    from .ccgraph import cc_parts, read_cc_graph

    vertices, edges = cc_parts(paths)
    return read_cc_graph(vertices, edges, scheme, progress)


def source_size(path: str) -> int:
    """Bytes a reader will report through ``progress`` for this source."""
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
