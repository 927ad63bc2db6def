#!/usr/bin/env python3
"""A web graph of the size of Common Crawl's domain graph, in its format: 135 million sites, 2 billion links.

Examples:
    .venv/bin/python tools/make_domain_graph.py --out /work/domain-graph
    .venv/bin/python tools/make_domain_graph.py --scale 1/16 --out /tmp/domain-16
    .venv/bin/python tools/make_domain_graph.py --sites 5000 --links 100000 --parts 3 --out /tmp/small-domains

Writes into OUT, as Common Crawl publishes its domain graphs:
  vertices/part-NNNNN.gz   id<TAB>reversed.domain.name<TAB>number_of_hosts  (ids 0, 1, 2... in the names' order)
  edges/part-NNNNN.gz      from_id<TAB>to_id  (sorted by from_id, then to_id; no self-link, no pair twice)
  vertices.paths.gz, edges.paths.gz                                      lists of the part files

The default size is Common Crawl's domain graph cc-main-2025-jan-feb-mar
exactly (SITES vertices, LINKS edges: its published statistics); --scale
1/16 (or 0.25, ...) scales both, --sites and --links set them.

Shape, and where each figure comes from:

* In-degrees: a target is drawn by a Zipf popularity (exponent POPULARITY)
  over the sites in a random order, so the popular sites are spread over
  the names.  Common Crawl's domain graphs have their most-linked sites
  (facebook.com, google.com, ...) linked from tens of millions of domains;
  POPULARITY puts the most popular one at about 1% of all links (about 19
  million links from distinct sites at the full size: the chance of being
  drawn, 5.6%, summed over the sources' out-degrees).
* Out-degrees: log-normal (sigma OUT_SIGMA: the straight line of a power law
  over most of the range, median about 6 and mean about 43 among the
  linking sites at the full size), at most MAX_OUT, summing to exactly the
  links.  Link farms and directories link to hundreds of thousands of
  domains, hence the large cap.
* Dangling sites: DANGLING of the sites link nowhere.  A domain graph's
  vertices are the domains crawled plus every domain a crawled page links
  to; Common Crawl's crawl statistics count 40 to 50 million registered
  domains crawled in a monthly crawl, about a third of the 135 million
  vertices, and its late-2025 host graph has 75% of its hosts dangling (a
  domain links if any of its hosts does, so a domain graph has fewer).  The
  most popular POPULAR_LINKING of the sites always link: popular sites are
  the ones crawled.
* Duplicates and self-links are drawn again (by popularity once more, then
  uniformly over all sites) until each site has its out-degree.
* number_of_hosts: Zipf (exponent HOSTS_ZIPF, at most MAX_HOSTS): most
  domains have one host, a few (blogspot.com, github.io) millions; it
  averages about 2.5, as the host graphs of the same releases have 2 to 2.6
  times the domain graph's vertices.
* Names: a TLD from TLD_SHARES (com about 45%, then de, net, org, co.uk,
  ru, ...: the order of Common Crawl's crawl statistics of top-level
  domains), reversed as Common Crawl writes them (``com.example``,
  ``uk.co.example``), then a label of letters (English letter frequencies),
  digits and hyphens, of log-normal length (median LABEL_MEDIAN), as
  registered-domain labels average 10 to 12 characters.  Names are unique.

Fast and memory-bounded: the names are made one (TLD, first character)
bucket at a time, each bucket sorted on its own, so the ids follow the
sorted names without a sort of all names; the links of a range of sources
(about make_paper_graph.CHUNK_LINKS) are drawn, deduplicated and sorted at
once in numpy, while a second thread formats (pyarrow) and gzips (level 1)
the ranges before it (each range a gzip member of its part).  Memory is the
sites' popularity order and out-degrees (int32 each), a chunk's arrays and
the ranges in flight; the most is while the out-degrees are drawn, about
25 bytes a site.  Measured on 2 cores shared with other work: --scale 1/16
took 70 s of CPU, 1.2 GB at most (with --parts 4, so that its ranges are
as large as at the full size) and wrote 727 MB; the full size, sixteen
times that work, about 18 minutes of CPU (10 to 12 minutes on 2 quiet
cores), 3.4 GB at most and 13 GB written.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import os
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pyarrow as pa
from make_paper_graph import csv_bytes, source_ranges, write_list

SITES = 135_153_877  # cc-main-2025-jan-feb-mar domain graph: vertices
LINKS = 2_037_859_503  # ... and edges
CHUNK_VERTICES = 2_000_000  # names made and written at once, at most (a bucket is cut into pieces of this)
POPULARITY = 1.05  # Zipf exponent of the targets' popularity
POPULAR_LINKING = 0.01  # share of the sites, the most popular, that always link
DANGLING = 0.65  # share of the sites without links
OUT_SIGMA = 2.0  # log-normal out-degrees
MAX_OUT = 1_000_000
POPULAR_ROUNDS = 2  # rounds of drawing by popularity before the rest of the links are drawn uniformly
HOSTS_ZIPF = 2.3  # number_of_hosts
MAX_HOSTS = 5_000_000
LABEL_MEDIAN = 10.0  # characters of a registered-domain label
LABEL_SIGMA = 0.4
MAX_LABEL = 63  # DNS's limit on a label
# reversed TLD (public suffix) -> share of the domains, in percent; normalized to sum to 1.  Where a country's
# domains are mostly registered under a second level (co.uk, com.br, com.au), only that form is used, so that
# no suffix is the beginning of another and the names sort suffix by suffix.
TLD_SHARES = {
    "com": 45.0, "de": 5.0, "net": 3.6, "org": 3.4, "uk.co": 2.4, "ru": 2.6, "jp": 1.6, "nl": 1.7,
    "br.com": 1.3, "fr": 1.4, "it": 1.4, "au.com": 1.1, "pl": 1.1, "in": 0.8, "info": 0.9, "es": 0.9,
    "ca": 0.8, "ch": 0.7, "cz": 0.7, "se": 0.6, "eu": 0.5, "be": 0.5, "dk": 0.5, "at": 0.5, "io": 0.5,
    "co": 0.5, "us": 0.4, "xyz": 0.6, "online": 0.4, "top": 0.4, "site": 0.3, "shop": 0.3, "me": 0.3,
    "cn": 0.5, "tw": 0.3, "kr": 0.3, "ir": 0.4, "ua": 0.4, "gr": 0.3, "ro": 0.4, "hu": 0.4, "sk": 0.3,
    "fi": 0.3, "no": 0.3, "pt": 0.3, "vn": 0.4, "id": 0.2, "mx.com": 0.3, "ar.com": 0.3, "tr.com": 0.3,
    "za.co": 0.4, "nz.co": 0.2, "cl": 0.2, "biz": 0.3, "club": 0.2, "app": 0.2, "dev": 0.2, "tv": 0.2,
    "cc": 0.2, "lt": 0.2, "lv": 0.1, "ee": 0.1, "si": 0.1, "hr": 0.1, "bg": 0.2, "rs": 0.1, "by": 0.1,
    "kz": 0.1, "il.co": 0.1, "sg.com": 0.1, "my.com": 0.1, "hk.com": 0.1, "th.co": 0.1, "ph.com": 0.1,
    "pe": 0.1, "ie": 0.2, "lu": 0.1, "is": 0.05, "live": 0.1, "store": 0.1, "blog": 0.1,
    "news": 0.05, "tech": 0.1, "pro": 0.1, "mobi": 0.05, "asia": 0.05, "edu": 0.3, "gov": 0.05, "ai": 0.1,
    "ws": 0.25, "nu": 0.25, "fm": 0.25, "to": 0.25, "ly": 0.25, "gg": 0.25, "im": 0.25, "ng.com": 0.25,
    "eg.com": 0.25, "pk.com": 0.25, "bd.com": 0.25, "sa.com": 0.25, "ae": 0.25, "qa": 0.25, "ma": 0.25,
    "tn": 0.25, "ke.co": 0.25, "lk": 0.25, "np.com": 0.25, "ge": 0.25, "am": 0.25, "az": 0.25, "md": 0.25,
    "uz": 0.25, "ba": 0.25,
}  # fmt: skip
# a label's first character, then the others: letters by English frequencies, digits, hyphens (not first or last)
FIRST_CHARS = {
    **dict(zip("abcdefghijklmnopqrstuvwxyz", [6.5, 6.5, 8, 5.5, 4, 4.5, 4.5, 4, 3.5, 1.5, 3, 4.5, 7, 3.5, 2.5,
                                              6.5, 0.4, 4, 9, 6, 1.5, 2, 2.5, 0.5, 1, 1])),
    **dict.fromkeys("0123456789", 0.2),
}  # fmt: skip
OTHER_CHARS = {
    **dict(zip("abcdefghijklmnopqrstuvwxyz", [8.2, 1.5, 2.8, 4.3, 12.7, 2.2, 2.0, 6.1, 7.0, 0.15, 0.8, 4.0, 2.4,
                                              6.7, 7.5, 1.9, 0.1, 6.0, 6.3, 9.1, 2.8, 1.0, 2.4, 0.15, 2.0, 0.07])),
    **dict.fromkeys("0123456789", 0.15),
    "-": 1.5,
}  # fmt: skip


@dataclass(frozen=True)
class GraphSize:
    sites: int
    links: int


@dataclass(frozen=True)
class Made:
    """What was written: sizes, and the figures of its shape that are cheap to keep while writing."""

    sites: int
    links: int
    hosts: int  # sum of number_of_hosts
    dangling: int  # sites without links
    top_in_degree: int  # links to the most popular site
    max_out_degree: int


def scaled(scale: Fraction | float) -> GraphSize:
    """Common Crawl's domain graph, both counts scaled."""
    return GraphSize(max(2, round(SITES * scale)), max(1, round(LINKS * scale)))


def _table(chars: dict[str, float]) -> np.ndarray:
    """Bytes in proportion to their weights: a uniform draw from it draws by the weights."""
    weights = np.array(list(chars.values()))
    counts = np.round(weights / weights.sum() * 10_000).astype(np.int64)
    return np.repeat(np.frombuffer("".join(chars).encode(), dtype=np.uint8), counts)


FIRST_TABLE = _table(FIRST_CHARS)
OTHER_TABLE = _table(OTHER_CHARS)
LETTERS = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)


def suffixes() -> list[tuple[str, float]]:
    """(reversed suffix, share) in the names' order: ``suffix.`` sorted as bytes, none the beginning of another."""
    total = sum(TLD_SHARES.values())
    ordered = sorted(TLD_SHARES.items(), key=lambda item: (item[0] + ".").encode())
    dotted = [name + "." for name, _ in ordered]
    assert not any(b.startswith(a) for a, b in zip(dotted, dotted[1:])), "a suffix begins another"
    return [(name, share / total) for name, share in ordered]


def labels(first: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` distinct labels beginning with the byte ``first``, sorted, as a 2-d uint8 array (0-padded)."""
    found = np.zeros((0, 1), dtype=np.uint8)
    while len(found) < count:
        need = count - len(found)
        length = np.clip(np.rint(rng.lognormal(np.log(LABEL_MEDIAN), LABEL_SIGMA, need)), 1, MAX_LABEL)
        length = length.astype(np.int64)
        width = max(int(length.max()), found.shape[1])
        chars = np.zeros((need, width), dtype=np.uint8)
        inside = np.arange(width) < length[:, None]
        chars[inside] = OTHER_TABLE[rng.integers(0, len(OTHER_TABLE), int(length.sum()))]
        chars[:, 0] = first
        last = chars[np.arange(need), length - 1]
        hyphen = np.flatnonzero(last == ord("-"))  # no label ends with a hyphen
        chars[hyphen, length[hyphen] - 1] = LETTERS[rng.integers(0, len(LETTERS), len(hyphen))]
        if found.shape[1] < width:
            found = np.pad(found, ((0, 0), (0, width - found.shape[1])))
        found = distinct_sorted(np.concatenate([found, chars]))
    return found


def distinct_sorted(chars: np.ndarray) -> np.ndarray:
    """Rows of bytes (0-padded strings) sorted as strings, repeated ones dropped.

    Sorted by their bytes 2 to 9 as a number (the first is the bucket's), which
    decides all but a few; rows whose number ties are sorted again as strings.
    """
    rows, width = chars.shape
    head = np.zeros((rows, 8), dtype=np.uint8)
    head[:, : min(8, width - 1)] = chars[:, 1:9]
    number = head.view(">u8").ravel().astype(np.uint64)
    order = np.argsort(number)
    number, chars = number[order], chars[order]
    tied = np.zeros(rows, dtype=bool)
    tied[1:] = number[1:] == number[:-1]
    tied[:-1] |= tied[1:]
    if tied.any():  # string order refines the numbers' order, so the tied rows keep their places as a set
        at = np.flatnonzero(tied)
        strings = np.sort(np.ascontiguousarray(chars[at]).view(f"S{width}").ravel())
        chars[at] = strings.view(np.uint8).reshape(len(at), width)
        keep = np.ones(rows, dtype=bool)
        keep[at[1:]] = (chars[at[1:]] != chars[at[:-1]]).any(axis=1) | (at[1:] != at[:-1] + 1)
        chars = chars[keep]
    return chars


def names_array(suffix: str, chars: np.ndarray) -> pa.Array:
    """``suffix.label`` of each row of labels (2-d uint8, 0-padded), as one pyarrow string array."""
    prefix = np.frombuffer((suffix + ".").encode(), dtype=np.uint8)
    whole = np.concatenate([np.broadcast_to(prefix, (len(chars), len(prefix))), chars], axis=1)
    filled = whole != 0
    offsets = np.zeros(len(chars) + 1, dtype=np.int64)
    np.cumsum(filled.sum(axis=1), out=offsets[1:])
    data = whole[filled]
    return pa.Array.from_buffers(pa.large_string(), len(chars), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def vertex_tables(sites: int, rng: np.random.Generator):
    """Tables (id, name, number_of_hosts) of every site in id order, the ids following the sorted names."""
    names = [suffix for suffix, _ in suffixes()]
    per_suffix = rng.multinomial(sites, [share for _, share in suffixes()])
    first_bytes = np.unique(FIRST_TABLE)  # sorted: digits, then letters
    first_shares = np.array([np.mean(FIRST_TABLE == byte) for byte in first_bytes])
    start = 0
    for suffix, count in zip(names, per_suffix.tolist()):
        for first, bucket in zip(first_bytes.tolist(), rng.multinomial(count, first_shares).tolist()):
            if not bucket:
                continue
            name = names_array(suffix, labels(first, bucket, rng))
            hosts = np.minimum(rng.zipf(HOSTS_ZIPF, bucket), MAX_HOSTS)
            for at in range(0, bucket, CHUNK_VERTICES):
                end = min(at + CHUNK_VERTICES, bucket)
                yield pa.table({"id": np.arange(start + at, start + end), "name": name[at:end], "hosts": hosts[at:end]})
            start += bucket


class Popularity:
    """Sites drawn by a Zipf popularity over the sites in a random order."""

    def __init__(self, sites: int, rng: np.random.Generator):
        self.order = np.arange(sites, dtype=np.int32)
        rng.shuffle(self.order)  # in place: no int64 copy of all the sites
        self.top = 1.0 - (sites + 1.0) ** (1.0 - POPULARITY)

    def draw(self, count: int, rng: np.random.Generator) -> np.ndarray:
        # the inverse of the distribution function of a continuous power law on [1, sites + 1), floored
        rank = np.floor((1.0 - rng.random(count) * self.top) ** (1.0 / (1.0 - POPULARITY))).astype(np.int64) - 1
        return self.order[np.clip(rank, 0, len(self.order) - 1)].astype(np.int64)


def out_degrees(size: GraphSize, popular: Popularity, rng: np.random.Generator) -> np.ndarray:
    """Log-normal out-degrees (int32) summing to exactly ``size.links``: about DANGLING of the sites 0, the
    POPULAR_LINKING most popular not, none over MAX_OUT or a quarter of the sites."""
    sites, links = size.sites, size.links
    cap = min(MAX_OUT, max(1, (sites - 1) // 4))
    most = int(sites * POPULAR_LINKING)
    wanted = max(1, round(sites * (1 - DANGLING)))
    linking = rng.random(sites, dtype=np.float32) < (wanted - most) / max(sites - most, 1)
    linking[popular.order[:most]] = True
    chosen = np.flatnonzero(linking)
    if len(chosen) > links:  # fewer links than linking sites: one link each for some of them
        linking[rng.permutation(chosen)[links:]] = False
        chosen = np.flatnonzero(linking)
    del linking
    raw = rng.lognormal(0.0, OUT_SIGMA, len(chosen))
    # rounded up or down at random, so the mean is kept
    part = np.clip(np.floor(raw * (links / raw.sum()) + rng.random(len(chosen))), 1, cap).astype(np.int32)
    del raw
    while (missing := links - int(part.sum(dtype=np.int64))) != 0:  # off by a few: one more or less at random
        step = 1 if missing > 0 else -1
        free = np.flatnonzero(part < cap if step > 0 else part > 1)
        if not len(free):
            raise SystemExit("cannot give the sites that many links: use fewer --links")
        part[rng.choice(free, min(abs(missing), len(free)), replace=False)] += step
    degree = np.zeros(sites, dtype=np.int32)
    degree[chosen] = part
    return degree


def links_of(
    first: int, last: int, degree: np.ndarray, popular: Popularity, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Exactly degree[i] distinct targets, none i itself, for each source i in [first, last): sorted
    (sources, targets)."""
    sites = len(degree)
    shift = max(1, (sites - 1).bit_length())  # key = source << shift | target: shifts and masks, not divisions
    want = degree[first:last].astype(np.int64)
    sources = np.arange(first, last, dtype=np.int64)
    key = np.zeros(0, dtype=np.int64)  # sorted, distinct
    lacking = want
    for round_ in range(100):
        src = np.repeat(sources, lacking)
        dst = popular.draw(len(src), rng) if round_ < POPULAR_ROUNDS else rng.integers(0, sites, len(src))
        fresh = ((src << shift) | dst)[dst != src]
        del src, dst
        fresh.sort()
        if len(key):  # a stable sort of two sorted runs is a merge
            key = np.concatenate([key, fresh])
            key.sort(kind="stable")
        else:
            key = fresh
        key = key[np.concatenate([[True], key[1:] != key[:-1]])]
        lacking = want - np.bincount((key >> shift) - first, minlength=last - first)
        if not lacking.any():
            return key >> shift, key & ((1 << shift) - 1)
    raise SystemExit("could not draw enough distinct links: use fewer --links")


class PartWriter:
    """Appends tables, as tab-separated lines, to gzip part files: formatted and compressed by a pool of threads
    while the next table is made (pyarrow and zlib let go of the GIL), written in order.

    Each table is a gzip member of its own; a part of several members is one gzip stream to every reader
    (gzip, zcat, Python's gzip, rankstore's).
    """

    def __init__(self, threads: int = 2):
        self.pool = ThreadPoolExecutor(threads)
        self.threads = threads
        self.pending: collections.deque[tuple[str | None, Future, bool]] = collections.deque()
        self.handle = None

    def write(self, path: str | None, table: pa.Table, close: bool) -> None:
        """Appends the table to the part at ``path`` (None: the part being written), closing it after if
        ``close``."""
        self.pending.append((path, self.pool.submit(_gzipped, table), close))
        while len(self.pending) > self.threads:  # a few tables in flight bound the memory
            self._write_one()

    def _write_one(self) -> None:
        path, future, close = self.pending.popleft()
        if path is not None:
            self.handle = open(path, "wb")
        self.handle.write(future.result())
        if close:
            self.handle.close()

    def finish(self) -> None:
        while self.pending:
            self._write_one()
        self.pool.shutdown()


def _gzipped(table: pa.Table) -> bytes:
    return gzip.compress(csv_bytes(table), compresslevel=1, mtime=0)


def make_domain_graph(
    size: GraphSize, out: str, parts: int, seed: int, progress: bool = False, host_graph: bool = False
) -> Made:
    """Writes the graph into the folder ``out`` (see the module's doc) in ``parts`` parts of vertices and of
    edges; ``host_graph``: in a host graph's format (no number_of_hosts)."""
    started = time.perf_counter()
    rng = np.random.default_rng(seed)

    shown = [0.0]  # when the progress line was last written

    def say(text: str, end: str = "") -> None:
        """The progress line, at most once a second unless it ends (``end``)."""
        now = time.perf_counter()
        if progress and (end or now - shown[0] >= 1.0):
            shown[0] = now
            print(f"\r{text} ({now - started:.0f} s)", end=end, file=sys.stderr, flush=True)

    for folder in ("vertices", "edges"):
        os.makedirs(os.path.join(out, folder), exist_ok=True)
    writer = PartWriter()
    vertex_parts = [f"vertices/part-{part:05d}.gz" for part in range(parts)]
    bounds = [part * size.sites // parts for part in range(parts + 1)]
    hosts = written = 0
    for table in vertex_tables(size.sites, rng):
        hosts += int(np.asarray(table["hosts"]).sum())
        if host_graph:  # a host graph's vertices: id and name alone
            table = table.drop_columns(["hosts"])
        # cut where parts begin, each piece appended to its part
        start = written
        for part in range(parts):
            lo, hi = max(bounds[part], start), min(bounds[part + 1], start + table.num_rows)
            if lo < hi:
                piece = table.slice(lo - start, hi - lo)
                path = os.path.join(out, vertex_parts[part]) if lo == bounds[part] else None
                writer.write(path, piece, hi == bounds[part + 1])
        written += table.num_rows
        say(f"{written:,} of {size.sites:,} sites")
    write_list(os.path.join(out, "vertices.paths.gz"), vertex_parts)
    say(f"{written:,} sites, {hosts:,} hosts", "\n")

    popular = Popularity(size.sites, rng)
    degree = out_degrees(size, popular, rng)
    most = int(popular.order[0])
    edge_parts = [f"edges/part-{part:05d}.gz" for part in range(parts)]
    ranges = source_ranges(degree, parts)
    top_in = links = 0
    for name, part_ranges in zip(edge_parts, ranges):
        for first, last in part_ranges:
            src, dst = links_of(first, last, degree, popular, rng)
            top_in += int(np.count_nonzero(dst == most))
            writer.write(
                os.path.join(out, name) if first == part_ranges[0][0] else None,
                pa.table({"from": src, "to": dst}),
                last == part_ranges[-1][1],
            )
            links += len(src)
            say(f"{links:,} of {size.links:,} links")
    writer.finish()
    write_list(os.path.join(out, "edges.paths.gz"), edge_parts)
    made = Made(size.sites, links, hosts, int(np.count_nonzero(degree == 0)), top_in, int(degree.max(initial=0)))
    say(
        f"{made.links:,} links written; most-linked site {made.top_in_degree:,} links "
        f"({made.top_in_degree / max(made.links, 1):.2%}), {made.dangling / made.sites:.0%} dangling, "
        f"out-degree at most {made.max_out_degree:,}",
        "\n",
    )
    return made


def scale_of(text: str) -> Fraction:
    """``1/16``, ``0.25`` or ``1`` -> a positive fraction."""
    try:
        value = Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"not a fraction or number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=scale_of, default=Fraction(1), help="of the full size, e.g. 1/16 or 0.25")
    parser.add_argument("--sites", type=int, help="vertices (default: the full size, scaled)")
    parser.add_argument("--links", type=int, help="edges, all distinct (default: the full size, scaled)")
    parser.add_argument("--seed", type=int, default=2025)
    parser.add_argument("--parts", type=int, default=32, help="part files of the vertices, and of the edges")
    parser.add_argument("--out", required=True, help="folder to write into")
    parser.add_argument(
        "--host-graph",
        action="store_true",
        help="write it as a host graph (vertices without number_of_hosts: each vertex a host, read as its root page)",
    )
    args = parser.parse_args(argv)
    default = scaled(args.scale)
    size = GraphSize(args.sites or default.sites, args.links or default.links)
    if size.sites < 5 or not 0 < size.links <= size.sites * (1 - DANGLING) * min(MAX_OUT, (size.sites - 1) // 4):
        parser.error("--sites must be at least 5, --links positive and at most about a tenth of --sites squared")
    if not 1 <= args.parts <= size.sites:
        parser.error("--parts must be between 1 and the number of sites")
    make_domain_graph(size, args.out, args.parts, args.seed, progress=True, host_graph=args.host_graph)


if __name__ == "__main__":
    main()
