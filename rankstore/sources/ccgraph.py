"""Common Crawl's web graphs: a vertices file and an edges file, as its host- and domain-level graphs are published.

* vertices: ``id<TAB>reversed.host.name`` per line (``com.example.www`` is
  ``www.example.com``; Common Crawl already drops a leading ``www.``); domain
  graphs add a third column, the number of hosts, which is not used.
* edges: ``from_id<TAB>to_id`` per line.

Both gzipped or plain, each possibly split into numbered part files, named in
a folder or in a ``*.paths.gz`` list (one part per line, relative to the
list's folder).  Each vertex becomes the root page of its host,
``https://host/`` (``scheme="http"`` for ``http://host/``).

Links come out in bulk (:class:`~rankstore.sources.EdgeBatch`): the vertices
first, numbered in file order, then the edges a block at a time, parsed by
numpy in C when a block holds nothing but digits, tabs and newlines (the
usual case), line by line otherwise.  A bad line (not the format, a vertex id
seen twice, an edge naming a vertex absent from the vertices file) is
reported with ``path:line`` and skipped; the first :data:`REPORTED` of a kind
in a part are reported one by one, then one more item stands for the rest
(its ``count`` is their number, so counts stay exact).  A truncated
or corrupt gzip part loses its rest, is reported at the last line read, and
the next part is read.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections import Counter
from typing import Callable, Iterator

import numpy as np

from . import EdgeBatch, Skipped, SourceError
from .textblocks import line_blocks, open_text

__all__ = ["read_cc_graph", "cc_parts", "looks_like_cc_vertices", "looks_like_cc_edges", "REPORTED"]

REPORTED = 1000  # bad lines of one kind reported one by one in a part; the rest are counted
BLOCK = 1 << 25  # bytes of text parsed at once
MAX_LINE = 64 * 1024
_VERTEX = re.compile(rb"(\d+)\t([a-z0-9_-]+(?:\.[a-z0-9_-]+)*)(?:\t\d+)?\r?\Z")
_EDGE_CHARS = b"0123456789\t\n"


def _first_line(head: bytes) -> bytes:
    for line in head.split(b"\n"):
        if line.strip():
            return line.rstrip(b"\r")
    return b""


def looks_like_cc_vertices(head: bytes) -> bool:
    """Whether decompressed content starts like a vertices file (``id<TAB>reversed.host[<TAB>count]``)."""
    return bool(_VERTEX.match(_first_line(head))) and not looks_like_cc_edges(head)


def looks_like_cc_edges(head: bytes) -> bool:
    """Whether decompressed content starts like an edges file (``from_id<TAB>to_id``)."""
    return bool(re.fullmatch(rb"\d+\t\d+", _first_line(head)))


def _head(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
        if head[:2] == b"\x1f\x8b":
            with gzip.open(path, "rb") as handle:
                return handle.read(4096)
        return head
    except (OSError, EOFError, zlib.error):
        return b""


def _listed(path: str) -> list[str]:
    """Part files named in a ``*.paths.gz`` (or plain ``*.paths``) list: as named, or else beside the list."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            names = [line.strip() for line in handle if line.strip()]
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as error:
        raise SourceError(f"{path}: cannot read the list of parts: {error}") from error
    folder = os.path.dirname(os.path.abspath(path))
    parts = []
    for name in names:
        beside = os.path.join(folder, name)
        parts.append(beside if os.path.exists(beside) else os.path.join(folder, os.path.basename(name)))
    return parts


def _is_list(path: str) -> bool:
    return os.path.isfile(path) and path.endswith((".paths.gz", ".paths"))


def _kind(path: str) -> str | None:
    head = _head(path)
    if looks_like_cc_vertices(head):
        return "vertices"
    if looks_like_cc_edges(head):
        return "edges"
    return None


def _parts_of(path: str) -> list[str]:
    """A file, a folder of part files, or a list of parts -> the part files in order."""
    if _is_list(path):
        return _listed(path)
    if os.path.isdir(path):
        return sorted(os.path.join(path, name) for name in os.listdir(path)
                      if os.path.isfile(os.path.join(path, name)) and not name.startswith((".", "_"))
                      and not _is_list(os.path.join(path, name)))
    return [path]


def cc_parts(paths: list[str]) -> tuple[list[str], list[str]]:
    """(vertex part files, edge part files) from what the user named: two sources or one folder holding both.

    Which is which is told by content: a first line ``id<TAB>name`` is
    vertices, ``id<TAB>id`` edges.
    """
    if len(paths) == 1 and os.path.isdir(paths[0]):
        folder = paths[0]
        entries = sorted(os.path.join(folder, name) for name in os.listdir(folder) if not name.startswith("."))
        lists = [entry for entry in entries if _is_list(entry)]
        candidates = lists or [entry for entry in entries if os.path.isdir(entry)] or \
            [entry for entry in entries if os.path.isfile(entry)]
        found: dict[str, list[str]] = {"vertices": [], "edges": []}
        for entry in candidates:
            parts = _parts_of(entry)
            kind = _kind(parts[0]) if parts else None
            if kind is not None:
                found[kind].extend(parts)
        vertices, edges = found["vertices"], found["edges"]
    elif len(paths) == 2:
        named = [_parts_of(path) for path in paths]
        kinds = [_kind(parts[0]) if parts else None for parts in named]
        if sorted(map(str, kinds)) != ["edges", "vertices"]:
            raise SourceError(f"{paths[0]}, {paths[1]}: expected a Common Crawl vertices file and an edges file "
                              f"(read: {kinds[0] or 'neither'}, {kinds[1] or 'neither'})")
        vertices, edges = named[kinds.index("vertices")], named[kinds.index("edges")]
    else:
        raise SourceError("a Common Crawl graph is given as VERTICES EDGES, or one folder holding both")
    if not vertices or not edges:
        raise SourceError(f"{paths[0]}: no Common Crawl " + ("vertices" if not vertices else "edges") + " parts found")
    return vertices, edges


class _Reporter:
    """Bad lines of one part: the first REPORTED of each kind one by one, then a count."""

    def __init__(self, path: str):
        self.path = path
        self.counts: Counter = Counter()

    def bad(self, line: int, kind: str, detail: str) -> Iterator[Skipped]:
        self.counts[kind] += 1
        if self.counts[kind] <= REPORTED:
            yield Skipped(f"{self.path}:{line}", f"{kind} ({detail})")

    def summary(self) -> Iterator[Skipped]:
        for kind, count in self.counts.items():
            if count > REPORTED:
                yield Skipped(self.path, f"{kind} ({count - REPORTED:,} more lines)", count - REPORTED)


def _blocks(path: str, progress) -> Iterator[tuple[bytes, int] | Skipped]:
    """(whole lines, number of the first) of one part; a Skipped if the part breaks off."""
    raw, stream = open_text(path, progress)
    line = 1
    with raw, stream:
        try:
            for block, first in line_blocks(stream, BLOCK, MAX_LINE):
                if block is None:
                    yield Skipped(f"{path}:{first}", f"line over {MAX_LINE} bytes")
                    line = first + 1
                    continue
                yield block, first
                line = first + block.count(b"\n") + 1
        except (OSError, EOFError, zlib.error) as error:
            yield Skipped(f"{path}:{line}", f"unreadable data ({error}); the rest of the part is lost")


def read_cc_graph(vertices: list[str], edges: list[str], scheme: str = "https",
                  progress: Callable[[int], None] | None = None) -> Iterator[EdgeBatch | Skipped]:
    """The graph's vertices (as root-page URLs), then its links, in bulk."""
    number = np.full(0, -1, dtype=np.int64)  # Common Crawl id -> our vertex number, -1 where none
    count = 0
    for item in _part_blocks(vertices, progress):
        if isinstance(item, Skipped):
            yield item
            continue
        path, report, block, first = item
        ids, urls, lines, bad = _vertex_lines(block, first, scheme)
        for line in bad:
            yield from report.bad(line, "not a vertex line", "expected ID<TAB>reversed.host.name")
        if not ids:
            continue
        ids_array = np.array(ids, dtype=np.int64)
        if ids_array.max() >= len(number):
            grown = max(int(ids_array.max()) + 1, 2 * len(number))
            number = np.concatenate([number, np.full(grown - len(number), -1, dtype=np.int64)])
        seen = number[ids_array] >= 0
        _, first_of = np.unique(ids_array, return_index=True)
        repeated = np.ones(len(ids_array), dtype=bool)
        repeated[first_of] = False
        seen |= repeated
        if seen.any():
            for index in np.flatnonzero(seen).tolist():
                yield from report.bad(lines[index], "duplicate vertex id", f"id {ids[index]} seen before")
            ids_array = ids_array[~seen]
            urls = [url for url, kept in zip(urls, (~seen).tolist()) if kept]
        number[ids_array] = np.arange(count, count + len(ids_array))
        count += len(ids_array)
        yield EdgeBatch(urls, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), None,
                        f"{path}:{first}-{lines[-1]}")
    for item in _part_blocks(edges, progress):
        if isinstance(item, Skipped):
            yield item
            continue
        path, report, block, first = item
        src, dst, lines, bad = _edge_lines(block, first)
        for line in bad:
            yield from report.bad(line, "not an edge line", "expected FROM_ID<TAB>TO_ID")
        if not len(src):
            continue
        src_number, dst_number = _numbered(number, src), _numbered(number, dst)
        missing = (src_number < 0) | (dst_number < 0)
        if missing.any():
            for index in np.flatnonzero(missing).tolist():
                absent = int(src[index]) if src_number[index] < 0 else int(dst[index])
                line = first + index if lines is None else int(lines[index])
                yield from report.bad(line, "vertex not in the vertices file", f"id {absent}")
            src_number, dst_number = src_number[~missing], dst_number[~missing]
        last = first + block.count(b"\n")
        yield EdgeBatch([], src_number, dst_number, None, f"{path}:{first}-{last}")


def _part_blocks(parts: list[str], progress) -> Iterator[tuple[str, "_Reporter", bytes, int] | Skipped]:
    """(part, its reporter, whole lines, number of the first) of each part in turn, and what went wrong."""
    for path in parts:
        report = _Reporter(path)
        for item in _blocks(path, progress):
            yield item if isinstance(item, Skipped) else (path, report, *item)
        yield from report.summary()


def _numbered(number: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Our vertex numbers of Common Crawl ids; -1 for an id not in the vertices file."""
    inside = ids < len(number)
    out = np.full(len(ids), -1, dtype=np.int64)
    out[inside] = number[ids[inside]]
    return out


def _vertex_lines(block: bytes, first: int, scheme: str) -> tuple[list[int], list[str], list[int], list[int]]:
    """(ids, root-page URLs, their line numbers, numbers of bad lines) of a block of vertex lines."""
    ids, urls, lines, bad = [], [], [], []
    match = _VERTEX.match
    for number, line in enumerate(block.split(b"\n"), first):
        found = match(line)
        if found is None:
            if line.strip():
                bad.append(number)
            continue
        ids.append(int(found.group(1)))
        host = ".".join(reversed(found.group(2).decode("ascii").split(".")))
        urls.append(f"{scheme}://{host}/")
        lines.append(number)
    return ids, urls, lines, bad


def _edge_lines(block: bytes, first: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, list[int]]:
    """(sources, targets, line numbers or None when line = first + index, bad lines) of a block of edges."""
    count = block.count(b"\n") + 1
    if not block.translate(None, _EDGE_CHARS) and block.count(b"\t") == count:
        # digits, and one tab a line: numpy parses the lot in C
        try:
            flat = np.fromstring(block, dtype=np.int64, sep=" ")
        except ValueError:
            flat = None
        if flat is not None and len(flat) == 2 * count:
            return flat[0::2], flat[1::2], None, []
    src, dst, lines, bad = [], [], [], []
    for number, line in enumerate(block.split(b"\n"), first):
        fields = line.rstrip(b"\r").split(b"\t")
        if len(fields) == 2 and fields[0].isdigit() and fields[1].isdigit():
            src.append(int(fields[0]))
            dst.append(int(fields[1]))
            lines.append(number)
        elif line.strip():
            bad.append(number)
    return (np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64), np.array(lines, dtype=np.int64), bad)
