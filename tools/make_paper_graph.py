#!/usr/bin/env python3
"""A web graph of the paper's size in Common Crawl's web-graph format: 24 million pages, 322 million links.

    .venv/bin/python tools/make_paper_graph.py --out /work/paper-graph
    .venv/bin/python tools/make_paper_graph.py --pages 2000 --links 20000 --parts 3 --out /tmp/small-graph

Writes into OUT, as Common Crawl publishes its host graphs:
  vertices/part-NNNNN.gz   id<TAB>reversed.host.name   (one vertex per host; ids in the names' order)
  edges/part-NNNNN.gz      from_id<TAB>to_id           (sorted by from_id, then to_id)
  vertices.paths.gz, edges.paths.gz                    lists of the part files

The graph is host-structured like the web: hosts belong to sites (registered
domains such as ``com.site0012345``, whose first host is the bare domain and
the others ``com.site0012345.h00007``) of Pareto-distributed sizes averaging
about --hosts-size.  80% of a host's links are drawn within its site, as far
as the site has hosts for them (at the paper's size about 70% of a host's
links, 55% of all links: the hosts with the most links have more than their
sites have hosts).  Out-degrees are log-normal (sigma 1.5: a power law's
straight line over most of the range; at most 5,000), 10% of hosts link
nowhere, and they sum to exactly --links.  Targets are drawn by Zipf
popularity: inside a site its first hosts are the most linked; across sites a
site is drawn by a Zipf popularity over all sites, then a host in it as
inside, so in-degrees follow a power law too.  Self-links and repeated links
are dropped and drawn again (twice uniformly within the site, then uniformly
over all hosts) until every host has its out-degree, so the graph has exactly
--links distinct links and no self-link.

Fast and memory-bounded: the links of a range of sources (about
``CHUNK_LINKS``) are drawn, deduplicated and sorted at once in numpy, while
a second thread formats (pyarrow) and gzips (level 1) the range before it.
The paper's size took 6.6 minutes on 2 cores, 1.8 GB of memory at most, and
writes 1.6 GB.
"""

from __future__ import annotations

import argparse
import gzip
import io
import itertools
import os
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

CHUNK_LINKS = 10_000_000  # links drawn, sorted and written at once
CHUNK_VERTICES = 1_000_000
INSIDE = 0.8  # share of a host's links that stay within its site
DANGLING = 0.1  # share of hosts without links
OUT_SIGMA = 1.5  # log-normal out-degrees
MAX_OUT = 5000
SITE_ALPHA = 1.2  # Pareto site sizes
MAX_SITE = 100_000
LOCAL_ZIPF = 1.5  # popularity of a site's hosts (its first the most linked)
SITE_ZIPF = 1.1  # popularity of the sites
TLDS = ["com", "de", "net", "org", "uk.co"]  # in name order, so that ids follow names
TLD_SHARES = [0.5, 0.1, 0.08, 0.2, 0.12]


def site_sizes(pages: int, mean: float, rng: np.random.Generator) -> np.ndarray:
    """Hosts per site: Pareto sizes (most sites small, a few huge) averaging about ``mean``, summing to ``pages``."""
    scale = max(mean - 0.5, 0.0) * (SITE_ALPHA - 1)  # the mean of 1 + floor(scale * Lomax(alpha))
    sizes = np.zeros(0, dtype=np.int64)
    while sizes.sum() < pages:
        more = 1 + np.floor(rng.pareto(SITE_ALPHA, int(2 * pages / mean) + 100) * scale)
        sizes = np.concatenate([sizes, np.minimum(more, MAX_SITE).astype(np.int64)])
    end = int(np.searchsorted(np.cumsum(sizes), pages))
    sizes = sizes[: end + 1]
    sizes[-1] -= sizes.sum() - pages
    return sizes


def out_degrees(pages: int, links: int, rng: np.random.Generator) -> np.ndarray:
    """Log-normal out-degrees summing to exactly ``links``: DANGLING of the hosts 0, none over MAX_OUT or a
    quarter of the hosts."""
    cap = min(MAX_OUT, (pages - 1) // 4)
    linking = rng.random(pages) >= DANGLING
    raw = np.where(linking, rng.lognormal(0.0, OUT_SIGMA, pages), 0.0)
    # rounded up or down at random, so the mean is kept
    degree = np.minimum(np.floor(raw * (links / raw.sum()) + rng.random(pages)), cap).astype(np.int64)
    degree[linking & (degree == 0)] = 1
    while (missing := links - int(degree.sum())) != 0:  # a few links off: one more or one less at random hosts
        step = 1 if missing > 0 else -1
        free = np.flatnonzero(linking & (degree < cap) if step > 0 else degree > 1)
        degree[rng.choice(free, min(abs(missing), len(free)), replace=False)] += step
    return degree


def zipf_rank(count: np.ndarray, exponent: float, rng: np.random.Generator) -> np.ndarray:
    """A rank in [0, count) for each count, rank r drawn with weight about (r + 1) ** -exponent (a bounded Zipf)."""
    # the inverse of the distribution function of a continuous power law on [1, count + 1)
    top = 1.0 - (count + 1.0) ** (1.0 - exponent)
    rank = np.floor((1.0 - rng.random(len(count)) * top) ** (1.0 / (1.0 - exponent))).astype(np.int64) - 1
    return np.clip(rank, 0, np.maximum(count - 1, 0))


class Sites:
    """The hosts' sites: hosts first..first+size-1 form a site; sites drawn by a Zipf popularity."""

    def __init__(self, sizes: np.ndarray, rng: np.random.Generator):
        self.sizes = sizes
        self.first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        self.of = np.repeat(np.arange(len(sizes)), sizes)
        self.by_popularity = rng.permutation(len(sizes))

    def targets(self, src: np.ndarray, rng: np.random.Generator, popular: bool = True) -> np.ndarray:
        """A target for each link from ``src``: INSIDE of them within the source's site (never itself), there
        by popularity, or uniformly if not ``popular``."""
        site = self.of[src]
        size = self.sizes[site]
        own = src - self.first[site]
        local = (
            zipf_rank(size - 1, LOCAL_ZIPF, rng)
            if popular
            else np.floor(rng.random(len(src)) * (size - 1)).astype(np.int64)
        )
        inside = self.first[site] + local + (local >= own)
        other = self.by_popularity[zipf_rank(np.full(len(src), len(self.sizes)), SITE_ZIPF, rng)]
        across = self.first[other] + zipf_rank(self.sizes[other], LOCAL_ZIPF, rng)
        return np.where((rng.random(len(src)) < INSIDE) & (size > 1), inside, across)


def links_of(
    first: int, last: int, degree: np.ndarray, sites: Sites, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Exactly degree[i] distinct targets, none i itself, for each source i in [first, last), sorted."""
    pages = len(degree)
    want = degree[first:last]
    sources = np.arange(first, last, dtype=np.int64)
    key = np.zeros(0, dtype=np.int64)  # src * pages + dst, sorted
    lacking = want
    for round_ in range(100):
        src = np.repeat(sources, lacking)
        # what popularity keeps drawing twice is drawn again uniformly within the site, at last over all hosts
        dst = sites.targets(src, rng, round_ == 0) if round_ < 3 else rng.integers(0, pages, len(src))
        key = np.concatenate([key, (src * pages + dst)[dst != src]])
        key.sort()
        key = key[np.concatenate([[True], key[1:] != key[:-1]])]
        lacking = want - np.bincount(key // pages - first, minlength=last - first)
        if not lacking.any():
            return key // pages, key % pages
    raise SystemExit("could not draw enough distinct links: use fewer --links")


def source_ranges(degree: np.ndarray, parts: int) -> list[list[tuple[int, int]]]:
    """For each edges part, its ranges of sources: the hosts split evenly, each range about CHUNK_LINKS links."""
    pages = len(degree)
    ends = np.cumsum(degree)
    ranges = []
    for part in range(parts):
        first, last = part * pages // parts, (part + 1) * pages // parts
        done = int(ends[first - 1]) if first else 0
        cuts = np.searchsorted(ends, np.arange(done + CHUNK_LINKS, int(ends[last - 1]), CHUNK_LINKS), side="right")
        bounds = [first, *sorted(set(cuts.tolist()) - {first, last}), last]
        ranges.append(list(itertools.pairwise(bounds)))
    return ranges


def csv_bytes(table: pa.Table) -> bytes:
    buffer = io.BytesIO()
    pacsv.write_csv(table, buffer, pacsv.WriteOptions(include_header=False, delimiter="\t", quoting_style="none"))
    return buffer.getvalue()


def host_names(first: int, last: int, sites: Sites, site_tld: np.ndarray) -> list[str]:
    """Reversed host names: the site's domain for its first host, ``domain.hNNNNN`` for the others."""
    site_digits = len(str(len(sites.sizes) - 1))
    host_digits = len(str(int(sites.sizes.max()) - 1))
    site = sites.of[first:last]
    host = np.arange(first, last) - sites.first[site]
    return [
        f"{TLDS[tld]}.site{s:0{site_digits}d}" + (f".h{h:0{host_digits}d}" if h else "")
        for tld, s, h in zip(site_tld[site].tolist(), site.tolist(), host.tolist())
    ]


class Writer:
    """Appends text to gzip part files in a thread of its own, one piece at a time, while the next is made."""

    def __init__(self):
        self.pool = ThreadPoolExecutor(1)
        self.pending: Future | None = None
        self.handle = None

    def write(self, path: str | None, table: pa.Table, close: bool) -> None:
        """Appends the table as tab-separated lines to the part at ``path`` (None: the part being written)."""
        if self.pending is not None:
            self.pending.result()  # one piece in flight bounds the memory
        self.pending = self.pool.submit(self._write, path, table, close)

    def _write(self, path: str | None, table: pa.Table, close: bool) -> None:
        if path is not None:
            self.handle = gzip.open(path, "wb", compresslevel=1)
        self.handle.write(csv_bytes(table))
        if close:
            self.handle.close()

    def finish(self) -> None:
        if self.pending is not None:
            self.pending.result()
        self.pool.shutdown()


def write_list(path: str, parts: list[str]) -> None:
    with gzip.open(path, "wt", compresslevel=1) as out:
        out.write("".join(part + "\n" for part in parts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=24_000_000, help="vertices (hosts)")
    parser.add_argument("--links", type=int, default=322_000_000, help="edges, all distinct")
    parser.add_argument("--hosts-size", type=float, default=20.0, help="mean number of hosts (vertices) of a site")
    parser.add_argument("--seed", type=int, default=1998)
    parser.add_argument("--parts", type=int, default=24, help="part files of the vertices, and of the edges")
    parser.add_argument("--out", required=True, help="folder to write into")
    args = parser.parse_args()
    if args.pages < 5 or not 0 < args.links <= args.pages * min(MAX_OUT, (args.pages - 1) // 4) * (1 - DANGLING):
        parser.error("--links must be positive and at most about a quarter of --pages squared")
    if not 1 <= args.parts <= args.pages or args.hosts_size < 1:
        parser.error("--parts must be between 1 and --pages, --hosts-size at least 1")
    started = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    for folder in ("vertices", "edges"):
        os.makedirs(os.path.join(args.out, folder), exist_ok=True)
    sites = Sites(site_sizes(args.pages, args.hosts_size, rng), rng)
    shares = np.cumsum(TLD_SHARES) * len(sites.sizes)
    site_tld = np.searchsorted(shares, np.arange(len(sites.sizes)), side="right")
    writer = Writer()

    vertex_parts = [f"vertices/part-{part:05d}.gz" for part in range(args.parts)]
    for part, name in enumerate(vertex_parts):
        first, last = part * args.pages // args.parts, (part + 1) * args.pages // args.parts
        for start in range(first, last, CHUNK_VERTICES):
            end = min(start + CHUNK_VERTICES, last)
            table = pa.table({"id": np.arange(start, end), "name": host_names(start, end, sites, site_tld)})
            writer.write(os.path.join(args.out, name) if start == first else None, table, end == last)
    write_list(os.path.join(args.out, "vertices.paths.gz"), vertex_parts)
    print(
        f"{args.pages:,} vertices in {len(sites.sizes):,} sites written ({time.perf_counter() - started:.0f} s)",
        file=sys.stderr,
        flush=True,
    )

    degree = out_degrees(args.pages, args.links, rng)
    edge_parts = [f"edges/part-{part:05d}.gz" for part in range(args.parts)]
    written = 0
    for name, ranges in zip(edge_parts, source_ranges(degree, args.parts)):
        for first, last in ranges:
            src, dst = links_of(first, last, degree, sites, rng)
            writer.write(
                os.path.join(args.out, name) if first == ranges[0][0] else None,
                pa.table({"from": src, "to": dst}),
                last == ranges[-1][1],
            )
            written += len(src)
            elapsed = time.perf_counter() - started
            print(f"\r{written:,} links ({elapsed:.0f} s)", end="", file=sys.stderr, flush=True)
    writer.finish()
    write_list(os.path.join(args.out, "edges.paths.gz"), edge_parts)
    print(
        f"\n{written:,} links written in {time.perf_counter() - started:.0f} s; out-degree max "
        f"{int(degree.max()):,}, mean {degree.mean():.1f}, median {int(np.median(degree))}",
        flush=True,
    )


if __name__ == "__main__":
    main()
