"""Common Crawl's web graphs: a vertices file and an edges file, as its host- and domain-level graphs are published.

* vertices: ``id<TAB>reversed.host.name`` per line (``com.example.www`` is
  ``www.example.com``; Common Crawl already drops a leading ``www.``, and it
  is not put back); domain graphs add a third column, the number of hosts
  Common Crawl found of the domain (:attr:`EdgeBatch.site_hosts
  <rankstore.sources.EdgeBatch>`), by which a domain graph is told from a
  host graph.
* edges: ``from_id<TAB>to_id`` per line.

Both gzipped or plain, each possibly split into numbered part files, named in
a folder or in a ``*.paths.gz`` list (one part per line, relative to the
list's folder).  Each vertex of a host graph becomes the root page of its
host, ``https://host/`` (``scheme="http"`` for ``http://host/``); each vertex of
a domain graph a site, named as Common Crawl names it (``example.co.uk``:
:attr:`EdgeBatch.sites <rankstore.sources.EdgeBatch>`), its edges links
between sites.

Links come out in bulk (:class:`~rankstore.sources.EdgeBatch`): the vertices
first, numbered 0, 1, 2... in file order, then the edges, at most
``chunk_lines`` lines a batch, Common Crawl's ids turned into those numbers.
A block of lines is taken apart by pyarrow in C; only a block holding a line
that is not the format is read again line by line, to find that line.

A bad line is reported as ``Skipped("path:line", "kind (detail)")`` and
skipped: not a vertex line, an implausible host name, a vertex id seen twice,
not an edge line, an edge naming a vertex absent from the vertices file.  Of
each kind, a part reports its first :data:`REPORTED` lines one by one, then
one ``Skipped("path:first-last", "kind (N more lines)", count=N)`` for the
rest, so a consumer counts skipped lines as the sum of ``Skipped.count``.  A
gzip part cut short or corrupt is reported at the first line it could not
give whole ("unreadable data (...); the rest of the part is lost"), and the
next part is read.  A part that cannot be opened raises SourceError.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from . import EdgeBatch, Skipped, SourceError, open_part
from .textblocks import line_blocks

if TYPE_CHECKING:
    import pyarrow as pa

# pyarrow is imported by the functions that parse a graph or ranks file: telling a file's format (every
# build asks) imports none of it

__all__ = [
    "REPORTED",
    "cc_parts",
    "is_domain_graph",
    "looks_like_cc_edges",
    "looks_like_cc_vertices",
    "read_cc_graph",
]

REPORTED = 1000  # bad lines of one kind reported one by one in a part; the rest are counted
BLOCK = 1 << 25  # bytes of text taken apart at once
MAX_LINE = 64 * 1024
# Common Crawl's largest graphs number a few billion vertices; a larger id is no vertex line (ids are looked up
# in an array as long as the largest).
MAX_ID = 1 << 32
_READ = 1 << 16  # compressed bytes decompressed at a time
# A plausible host name, reversed: labels (none empty) of letters, digits, '-' and '_', 253 bytes at most; a
# single label is not all digits.  Both re and pyarrow's RE2 read this pattern alike.
_HOST = r"(?:[a-z0-9_-]+\.)+[a-z0-9_-]+|[a-z0-9_-]*[a-z_-][a-z0-9_-]*"
_HOST_BYTES = 253
_HOST_LINE = re.compile(_HOST.encode())
_VERTEX_FIELDS = re.compile(rb"(\d+)\t([^\t\r]*)(?:\t(\d+))?\r?")
_EDGE = re.compile(rb"(\d+)\t(\d+)\r?")
_INT64 = (1 << 63) - 1  # the largest id pyarrow reads, and so the largest read line by line too
_VERTEX_BYTES = b"0123456789abcdefghijklmnopqrstuvwxyz._-\t\n"  # all a clean block of vertex lines holds
_EDGE_BYTES = b"0123456789\t\n"
_NOT_VERTEX = "not a vertex line (expected ID<TAB>reversed.host.name)"
_NOT_EDGE = "not an edge line (expected FROM_ID<TAB>TO_ID)"


def _first_line(head: bytes) -> bytes:
    for line in head.split(b"\n"):
        if line.strip():
            return line.rstrip(b"\r")
    return b""


def _is_vertex_line(line: bytes) -> bool:
    fields = _VERTEX_FIELDS.fullmatch(line)
    return fields is not None and _plausible_host(fields.group(2))


def _plausible_host(name: bytes) -> bool:
    return len(name) <= _HOST_BYTES and _HOST_LINE.fullmatch(name) is not None


def looks_like_cc_vertices(head: bytes) -> bool:
    """Whether decompressed content starts like a vertices file (``id<TAB>reversed.host[<TAB>count]``)."""
    return _is_vertex_line(_first_line(head))


def is_domain_graph(vertices: list[str]) -> bool:
    """Whether vertex parts are a domain graph's: their first line has the third column, the number of hosts."""
    for part in vertices[:3]:  # a part may be empty
        line = _first_line(_head(part))
        if line:
            fields = _VERTEX_FIELDS.fullmatch(line)
            return fields is not None and line.count(b"\t") == 2
    return False


def looks_like_cc_edges(head: bytes) -> bool:
    """Whether decompressed content starts like an edges file (``from_id<TAB>to_id``)."""
    return _EDGE.fullmatch(_first_line(head)) is not None


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


def _kind(source: str, parts: list[str]) -> str | None:
    """'vertices' or 'edges': by the first part whose content tells, else by the name; None if neither tells."""
    for part in parts[:3]:  # a part may be empty
        head = _head(part)
        if looks_like_cc_vertices(head):
            return "vertices"
        if looks_like_cc_edges(head):
            return "edges"
        if head.strip():
            return None
    name = os.path.basename(os.path.normpath(source)).lower()
    named = [kind for kind in ("vertices", "edges") if kind in name]
    return named[0] if len(named) == 1 else None


def _parts_of(path: str) -> list[str]:
    """A file, a folder of part files, or a list of parts -> the part files in order."""
    if _is_list(path):
        return _listed(path)
    if os.path.isdir(path):
        return sorted(
            os.path.join(path, name)
            for name in os.listdir(path)
            if os.path.isfile(os.path.join(path, name))
            and not name.startswith((".", "_"))
            and not _is_list(os.path.join(path, name))
        )
    return [path]


def cc_parts(paths: list[str]) -> tuple[list[str], list[str]]:
    """(vertex part files, edge part files) from what the user named: two sources or one folder holding both.

    A source is a file, a folder of part files or a ``*.paths.gz`` list.
    Which is which is told by content: a first line ``id<TAB>host.name`` is
    vertices, ``id<TAB>id`` edges; a name with "vertices" or "edges" in it
    decides only when the content does not (empty parts).
    """
    if len(paths) == 1 and os.path.isdir(paths[0]):
        folder = paths[0]
        entries = sorted(os.path.join(folder, name) for name in os.listdir(folder) if not name.startswith("."))
        # The lists if there are any, else the subfolders of parts, else the files themselves.
        lists = [entry for entry in entries if _is_list(entry)]
        candidates = (
            lists
            or [entry for entry in entries if os.path.isdir(entry)]
            or [entry for entry in entries if os.path.isfile(entry)]
        )
        found: dict[str, list[str]] = {"vertices": [], "edges": []}
        for entry in candidates:
            parts = _parts_of(entry)
            kind = _kind(entry, parts)
            if kind is not None:
                found[kind].extend(parts)
        vertices, edges = found["vertices"], found["edges"]
    elif len(paths) == 2:
        named = [_parts_of(path) for path in paths]
        kinds = [_kind(path, parts) for path, parts in zip(paths, named)]
        if sorted(map(str, kinds)) != ["edges", "vertices"]:
            raise SourceError(
                f"{paths[0]}, {paths[1]}: expected a Common Crawl vertices file and an edges file "
                f"(read: {kinds[0] or 'neither'}, {kinds[1] or 'neither'})"
            )
        vertices, edges = named[kinds.index("vertices")], named[kinds.index("edges")]
    else:
        raise SourceError("a Common Crawl graph is given as VERTICES EDGES, or one folder holding both")
    if not vertices or not edges:
        raise SourceError(f"{paths[0]}: no Common Crawl " + ("vertices" if not vertices else "edges") + " parts found")
    return vertices, edges


class _Text:
    """A part's text, ``read(size)`` at a time, the bytes read from disk counted for the progress bar.

    Gunzipped when it starts with gzip's magic bytes (members one after
    another, as concatenated parts are).  A gzip stream cut short gives every
    byte that can be decompressed before it raises EOFError, so only the line
    it breaks off in is lost; corrupt data raises OSError.
    """

    def __init__(self, handle, progress: Callable[[int], None] | None):
        self._handle = handle
        self._progress = progress
        gzipped = handle.peek(2)[:2] == b"\x1f\x8b"  # peeked: a part at a URL is a stream
        self._zlib = zlib.decompressobj(31) if gzipped else None
        self._input = b""
        self._in_member = False  # a gzip member has begun and not yet ended

    def _raw(self, size: int) -> bytes:
        data = self._handle.read(size)
        if data and self._progress is not None:
            self._progress(len(data))
        return data

    def read(self, size: int) -> bytes:
        if self._zlib is None:
            return self._raw(size)
        while True:
            if self._input:
                self._in_member = True
            try:
                # even without input: zlib may hold output that did not fit the last call
                data = self._zlib.decompress(self._input, size)
            except zlib.error as error:
                raise OSError(f"corrupt gzip data: {error}") from error
            self._input = self._zlib.unconsumed_tail
            if self._zlib.eof:
                self._input = self._zlib.unused_data
                self._zlib = zlib.decompressobj(31)
                self._in_member = False
            if data:
                return data
            if not self._input:
                self._input = self._raw(_READ)
                if not self._input:
                    if self._in_member:
                        raise EOFError("compressed file ended before the end-of-stream marker was reached")
                    return b""


class _Reporter:
    """Bad lines of one part: the first REPORTED of each kind one by one, then one item counting the rest."""

    def __init__(self, path: str):
        self.path = path
        self.counts: Counter = Counter()
        self.unreported: dict[str, list[int]] = {}  # kind -> [first, last] line not reported one by one

    def bad(self, line: int, reason: str) -> Iterator[Skipped]:
        return self.bad_lines([line], reason.split(" (")[0], lambda _: reason)

    def bad_lines(self, lines, kind: str, reason: Callable[[int], str]) -> Iterator[Skipped]:
        """Bad lines of one kind (in order), ``reason(i)`` saying why of the i-th: counted in bulk, so that a
        flood of them costs no time a line."""
        room = min(max(REPORTED - self.counts[kind], 0), len(lines))
        for index in range(room):
            yield Skipped(f"{self.path}:{lines[index]}", reason(index))
        self.counts[kind] += len(lines)
        if len(lines) > room:
            self.unreported.setdefault(kind, [int(lines[room]), 0])[1] = int(lines[-1])

    def summary(self) -> Iterator[Skipped]:
        for kind, (first, last) in self.unreported.items():
            more = self.counts[kind] - REPORTED
            yield Skipped(f"{self.path}:{first}-{last}", f"{kind} ({more:,} more lines)", more)


def _part_blocks(
    parts: list[str], progress, chunk_lines: int
) -> Iterator[tuple[str, _Reporter, bytes, int, int] | Skipped]:
    """(part, its reporter, at most ``chunk_lines`` whole lines, numbers of the first and last) of each part.

    What cannot be read is yielded as Skipped, through the part's reporter.
    """
    for path in parts:
        report = _Reporter(path)
        try:
            handle = open_part(path)
        except OSError as error:
            raise SourceError(f"{path}: cannot open: {error.strerror}") from error
        line = 1
        with handle:
            try:
                for block, first, _ in line_blocks(_Text(handle, progress), BLOCK, MAX_LINE):
                    if block is None:
                        yield from report.bad(first, f"line over {MAX_LINE} bytes")
                        line = first + 1
                        continue
                    for piece, start, last in _pieces(block, first, chunk_lines):
                        yield path, report, piece, start, last
                    line = last + 1
            except (OSError, EOFError) as error:
                yield from report.bad(line, f"unreadable data ({error}); the rest of the part is lost")
        yield from report.summary()


def _pieces(block: bytes, first: int, most: int) -> Iterator[tuple[bytes, int, int]]:
    """A block of lines cut into pieces of at most ``most`` lines, each with the numbers of its first and last."""
    last = first + block.count(b"\n")
    if last - first < most:
        yield block, first, last
        return
    start = 0
    for end in np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == ord("\n"))[most - 1 :: most].tolist():
        yield block[start:end], first, first + most - 1
        start, first = end + 1, first + most
    yield block[start:], first, last


def read_cc_graph(
    vertices: list[str],
    edges: list[str],
    scheme: str = "https",
    progress: Callable[[int], None] | None = None,
    chunk_lines: int = 4_000_000,
) -> Iterator[EdgeBatch | Skipped]:
    """The graph's vertices (as root-page URLs, or a domain graph's as site names), then its links, in batches
    of at most ``chunk_lines`` lines.

    ``vertices``/``edges``: part files in order (see :func:`cc_parts`);
    ``progress`` is called with the number of bytes read from disk as they are.
    """
    import pyarrow as pa

    domains = is_domain_graph(vertices)
    number = np.full(0, -1, dtype=np.int64)  # Common Crawl id -> our vertex number, -1 where none
    count = 0
    empty = np.zeros(0, dtype=np.int64)
    for item in _part_blocks(vertices, progress, chunk_lines):
        if isinstance(item, Skipped):
            yield item
            continue
        path, report, block, first, last = item
        ids, names, hosts, lines, bad = _vertex_block(block, first, last)
        for line, reason in bad:
            yield from report.bad(line, reason)
        if len(ids) and ids.max() >= len(number):
            grown = max(int(ids.max()) + 1, 2 * len(number))
            number = np.concatenate([number, np.full(grown - len(number), -1, dtype=np.int64)])
        repeated = _repeated(number, ids)
        if repeated.any():
            at = np.flatnonzero(repeated)

            def duplicate(i: int, ids: np.ndarray = ids, at: np.ndarray = at) -> str:
                return f"duplicate vertex id (id {ids[at[i]]} seen before)"

            yield from report.bad_lines(lines[at], "duplicate vertex id", duplicate)
            kept = ~repeated
            ids, names, hosts = ids[kept], names.filter(pa.array(kept)), hosts[kept]
        if len(ids):
            number[ids] = np.arange(count, count + len(ids))
            count += len(ids)
            where = f"{path}:{first}-{last}"
            if domains:
                yield EdgeBatch([], empty, empty, None, where, sites=_reversed_names(names), site_hosts=hosts)
            else:
                yield EdgeBatch(_root_urls(names, scheme), empty, empty, None, where)
    for item in _part_blocks(edges, progress, chunk_lines):
        if isinstance(item, Skipped):
            yield item
            continue
        path, report, block, first, last = item
        src, dst, lines, bad = _edge_block(block, first, last)
        for line, reason in bad:
            yield from report.bad(line, reason)
        if not len(src):
            continue
        src_number, dst_number = _numbered(number, src), _numbered(number, dst)
        missing = (src_number < 0) | (dst_number < 0)
        if missing.any():
            at = np.flatnonzero(missing)
            absent = np.where(src_number[at] < 0, src[at], dst[at])

            def missing_vertex(i: int, absent: np.ndarray = absent) -> str:
                return f"vertex not in the vertices file (id {absent[i]})"

            yield from report.bad_lines(lines[at], "vertex not in the vertices file", missing_vertex)
            src_number, dst_number = src_number[~missing], dst_number[~missing]
        yield EdgeBatch([], src_number, dst_number, None, f"{path}:{first}-{last}")


def _repeated(number: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Which ids were numbered before, or appear earlier among these."""
    repeated = number[ids] >= 0
    if (ids[1:] > ids[:-1]).all():  # as Common Crawl numbers them
        return repeated
    _, first_of = np.unique(ids, return_index=True)
    within = np.ones(len(ids), dtype=bool)
    within[first_of] = False
    return repeated | within


def _numbered(number: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Our vertex numbers of Common Crawl ids; -1 for an id not in the vertices file."""
    if ids.max() < len(number):
        return number[ids]
    inside = ids < len(number)
    out = np.full(len(ids), -1, dtype=np.int64)
    out[inside] = number[ids[inside]]
    return out


def _host_names(names: pa.Array) -> list[str]:
    """Each reversed name put right (``com.example.blog`` -> ``blog.example.com``)."""
    import pyarrow as pa

    return [".".join(name.split(".")[::-1]) for name in names.cast(pa.string()).to_pylist()]


def _reversed_names(names: pa.Array) -> pa.Array:
    """:func:`_host_names` in pyarrow, as a string array: a domain graph's 135 million names in bulk."""
    import pyarrow as pa
    import pyarrow.compute as pc

    parts = pc.split_pattern(names.cast(pa.string()), ".")
    offsets = parts.offsets.to_numpy()
    lengths = np.diff(offsets)
    firsts = np.repeat(offsets[:-1], lengths)
    # each label's place in its name, counted from the end
    turned = 2 * firsts + np.repeat(lengths, lengths) - 1 - np.arange(len(firsts))
    labels = parts.flatten().take(pa.array(turned))
    return pc.binary_join(pa.ListArray.from_arrays(parts.offsets, labels), ".")


def _root_urls(names: pa.Array, scheme: str) -> list[str]:
    """``scheme://host/`` of each reversed host name (``com.example.blog`` -> ``blog.example.com``)."""
    return [f"{scheme}://{host}/" for host in _host_names(names)]


def _plausible_hosts(names: pa.Array) -> bool:
    """Whether every name is a plausible host name (as :func:`_plausible_host`, but in C)."""
    import pyarrow.compute as pc

    return (
        pc.all(pc.match_substring_regex(names, f"^(?:{_HOST})$")).as_py()
        and pc.max(pc.binary_length(names)).as_py() <= _HOST_BYTES
    )


def _csv(block: bytes, lines: int, types: list[pa.DataType]) -> list[pa.Array] | None:
    """The block's tab-separated columns of these types, parsed by pyarrow in C; None if one of its ``lines``
    does not fit them (empty, another number of fields, not a number)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    names = [str(index) for index in range(len(types))]
    try:
        table = pacsv.read_csv(
            pa.py_buffer(block),
            pacsv.ReadOptions(column_names=names),
            pacsv.ParseOptions(delimiter="\t", quote_char=False, ignore_empty_lines=False),
            pacsv.ConvertOptions(column_types=dict(zip(names, types)), null_values=[], strings_can_be_null=False),
        )
    except pa.ArrowInvalid:
        return None
    if table.num_rows != lines:
        return None
    return [column.combine_chunks() for column in table.columns]


def _vertex_block(
    block: bytes, first: int, last: int
) -> tuple[np.ndarray, pa.Array, np.ndarray, np.ndarray, list[tuple[int, str]]]:
    """(ids, reversed host names, numbers of hosts (0 where a line gives none), their line numbers, bad lines as
    (line, reason)) of a block of vertex lines."""
    import pyarrow as pa

    columns = block.count(b"\t", 0, block.find(b"\n")) + 1
    if columns in (2, 3) and not block.translate(None, _VERTEX_BYTES):
        parsed = _csv(block, last - first + 1, [pa.int64(), pa.binary(), pa.int64()][:columns])
        if parsed is not None:
            ids, names = parsed[0].to_numpy(), parsed[1]
            numbers = [ids] if columns == 2 else [ids, parsed[2].to_numpy()]
            # '-' may be in a name, so pyarrow may have read a negative number
            if all(column.min() >= 0 for column in numbers) and ids.max() < MAX_ID and _plausible_hosts(names):
                hosts = numbers[1] if columns == 3 else np.zeros(len(ids), dtype=np.int64)
                return ids, names, hosts, np.arange(first, last + 1), []
    ids, names, hosts, lines, bad = [], [], [], [], []
    for number, line in enumerate(block.split(b"\n"), first):
        fields = _VERTEX_FIELDS.fullmatch(line)
        if fields is None or int(fields.group(1)) >= MAX_ID:
            if line.strip():
                bad.append((number, _NOT_VERTEX))
        elif not _plausible_host(fields.group(2)):
            shown = fields.group(2)[:100].decode("utf-8", errors="replace")
            bad.append((number, f"not a plausible host name ({shown!r})"))
        else:
            ids.append(int(fields.group(1)))
            names.append(fields.group(2))
            hosts.append(min(int(fields.group(3) or 0), _INT64))
            lines.append(number)
    return (
        np.array(ids, dtype=np.int64),
        pa.array(names, pa.binary()),
        np.array(hosts, dtype=np.int64),
        np.array(lines, dtype=np.int64),
        bad,
    )


def _edge_block(
    block: bytes, first: int, last: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple[int, str]]]:
    """(sources, targets, their line numbers, bad lines as (line, reason)) of a block of edge lines."""
    import pyarrow as pa

    if not block.translate(None, _EDGE_BYTES):
        parsed = _csv(block, last - first + 1, [pa.int64(), pa.int64()])
        if parsed is not None:
            return parsed[0].to_numpy(), parsed[1].to_numpy(), np.arange(first, last + 1), []
    src, dst, lines, bad = [], [], [], []
    for number, line in enumerate(block.split(b"\n"), first):
        fields = _EDGE.fullmatch(line)
        pair = tuple(map(int, fields.groups())) if fields is not None else ()
        if pair and max(pair) <= _INT64:
            src.append(pair[0])
            dst.append(pair[1])
            lines.append(number)
        elif line.strip():
            bad.append((number, _NOT_EDGE))
    return np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64), np.array(lines, dtype=np.int64), bad
