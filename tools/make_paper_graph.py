#!/usr/bin/env python3
"""A web graph of the paper's size in Common Crawl's web-graph format: 24 million pages, 322 million links.

    .venv/bin/python tools/make_paper_graph.py --out /work/paper-graph
    .venv/bin/python tools/make_paper_graph.py --pages 2000 --links 20000 --out /tmp/small-graph

Writes into OUT, as Common Crawl publishes its host graphs:
  vertices/part-NNNNN.gz   id<TAB>reversed.host.name   (one vertex per host)
  edges/part-NNNNN.gz      from_id<TAB>to_id           (sorted by from_id, then to_id)
  vertices.paths.gz, edges.paths.gz                    lists of the part files

The graph is host-structured like the web: hosts belong to sites (registered
domains) of Pareto-distributed sizes, and 80% of a host's links stay within
its site.  Out-degrees are Zipf-distributed (about 10% of hosts link nowhere);
targets are drawn by Zipf popularity, inside a site from its first hosts and
across sites from a global popularity order, so in-degrees follow a power law
too.  Self-links and repeated links are drawn again, so the graph has exactly
--links distinct links.  Vertex ids follow the sites, not the names' sort
order (the reader does not rely on it).  Memory stays bounded: sources are
handled a chunk at a time.
"""

from __future__ import annotations

import argparse
import gzip
import io
import os
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

CHUNK_SOURCES = 1_000_000  # source vertices whose links are drawn and written at once
INSIDE = 0.8  # share of a host's links that stay within its site


def site_sizes(pages: int, rng: np.random.Generator) -> np.ndarray:
    """Hosts per site: Pareto sizes (most sites small, a few with thousands of hosts), summing to ``pages``."""
    sizes = np.minimum(rng.pareto(1.2, pages // 20) * 5 + 1, 100_000).astype(np.int64)
    sizes = sizes[np.cumsum(sizes) <= pages]
    return np.append(sizes, pages - sizes.sum()) if sizes.sum() < pages else sizes


def out_degrees(pages: int, links: int, rng: np.random.Generator) -> np.ndarray:
    """Zipf out-degrees (about 10% zero, at most 5,000 or a quarter of the pages) summing to exactly ``links``."""
    raw = np.where(rng.random(pages) < 0.1, 0, rng.zipf(2.0, pages)).astype(np.float64)
    degree = np.minimum(np.floor(raw * links / raw.sum()), min(5000, (pages - 1) // 4)).astype(np.int64)
    short = links - int(degree.sum())
    linking = np.flatnonzero(raw > 0)
    while short > 0:  # spread what rounding lost over linking hosts, one link each
        chosen = rng.choice(linking, min(short, len(linking)), replace=False)
        degree[chosen] += 1
        short = links - int(degree.sum())
    return degree


def draw_targets(src: np.ndarray, site_of: np.ndarray, site_start: np.ndarray, sizes: np.ndarray,
                 popular: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A target for each link from ``src``: inside its site by Zipf popularity (never itself), else across sites."""
    m = len(src)
    site = site_of[src]
    size = sizes[site]
    own = src - site_start[site]
    local = np.minimum(rng.zipf(1.5, m) - 1, np.maximum(size - 2, 0))
    local += local >= own  # skip the source itself
    inside = site_start[site] + local
    across = popular[np.minimum(rng.zipf(1.3, m) - 1, len(popular) - 1)]
    return np.where((rng.random(m) < INSIDE) & (size > 1), inside, across)


def links_of(first: int, last: int, degree: np.ndarray, site_of, site_start, sizes, popular,
             rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Exactly degree[i] distinct targets, none itself, for each source i in [first, last), sorted."""
    pages = len(degree)
    want = degree[first:last]
    sources = np.arange(first, last, dtype=np.int64)
    key = np.zeros(0, dtype=np.int64)
    lacking = want
    for round_ in range(100):
        src = np.repeat(sources, lacking)
        if round_ < 3:
            dst = draw_targets(src, site_of, site_start, sizes, popular, rng)
        else:  # what popularity keeps drawing twice: any page, uniformly
            dst = rng.integers(0, pages, len(src))
        fresh = np.unique((src * pages + dst)[dst != src])
        at = np.searchsorted(key, fresh)
        fresh = fresh[(at == len(key)) | (key[np.minimum(at, len(key) - 1)] != fresh)] if len(key) else fresh
        key = np.insert(key, np.searchsorted(key, fresh), fresh)
        lacking = want - np.bincount(key // pages - first, minlength=last - first)
        if not lacking.any():
            return key // pages, key % pages
    raise SystemExit("could not draw enough distinct links: use fewer --links")


def write_part(path: str, table: pa.Table) -> None:
    buffer = io.BytesIO()
    pacsv.write_csv(table, buffer, pacsv.WriteOptions(include_header=False, delimiter="\t", quoting_style="none"))
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(buffer.getvalue())


def write_list(path: str, parts: list[str]) -> None:
    with gzip.open(path, "wt", compresslevel=1) as out:
        out.write("".join(part + "\n" for part in parts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=24_000_000)
    parser.add_argument("--links", type=int, default=322_000_000)
    parser.add_argument("--seed", type=int, default=1998)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.links > args.pages * (args.pages - 1):
        parser.error("more links than distinct page pairs")
    started = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    os.makedirs(os.path.join(args.out, "vertices"), exist_ok=True)
    os.makedirs(os.path.join(args.out, "edges"), exist_ok=True)
    sizes = site_sizes(args.pages, rng)
    site_start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    site_of = np.repeat(np.arange(len(sizes)), sizes)
    host_in_site = np.arange(args.pages) - site_start[site_of]
    vertex_parts = []
    for part, first in enumerate(range(0, args.pages, 4 * CHUNK_SOURCES)):
        last = min(first + 4 * CHUNK_SOURCES, args.pages)
        names = [f"com.site{s}.h{h}" for s, h in zip(site_of[first:last].tolist(), host_in_site[first:last].tolist())]
        name = f"vertices/part-{part:05d}.gz"
        write_part(os.path.join(args.out, name), pa.table({"id": np.arange(first, last), "name": names}))
        vertex_parts.append(name)
    write_list(os.path.join(args.out, "vertices.paths.gz"), vertex_parts)
    print(f"{args.pages:,} vertices in {len(sizes):,} sites written ({time.perf_counter() - started:.0f} s)",
          flush=True)
    degree = out_degrees(args.pages, args.links, rng)
    popular = rng.permutation(args.pages)
    edge_parts = []
    written = 0
    for part, first in enumerate(range(0, args.pages, CHUNK_SOURCES)):
        last = min(first + CHUNK_SOURCES, args.pages)
        src, dst = links_of(first, last, degree, site_of, site_start, sizes, popular, rng)
        name = f"edges/part-{part:05d}.gz"
        write_part(os.path.join(args.out, name), pa.table({"from": src, "to": dst}))
        edge_parts.append(name)
        written += len(src)
        print(f"\r{written:,} links ({time.perf_counter() - started:.0f} s)", end="", file=sys.stderr, flush=True)
    write_list(os.path.join(args.out, "edges.paths.gz"), edge_parts)
    print(f"\n{written:,} links written in {time.perf_counter() - started:.0f} s; "
          f"out-degree max {int(degree.max()):,}, mean {degree.mean():.1f}", flush=True)


if __name__ == "__main__":
    main()
