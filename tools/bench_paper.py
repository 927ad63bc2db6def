#!/usr/bin/env python3
"""The paper's scale on this machine: build and rank a 24-million-page, 322-million-link web graph.

    .venv/bin/python tools/make_paper_graph.py --out /work/paper-graph      # once: the graph, in Common Crawl's format
    .venv/bin/python tools/bench_paper.py /work/paper-graph --store /work/paper.db

Times `rankstore build` and `rankstore rank` as whole processes, with the peak
resident memory of each process tree; then, on the ranked store, the reads the
proxy makes (top 50 backlinks of the page with the most backlinks and of a
page with about 1,000, 1,000 URL look-ups in one batch), and the store's size
a link.  Targets (issue 5): build <= 20 min, rank <= 5 min, peak RSS <= 12 GiB,
<= 40 bytes a link, the look-ups within bench_store.py's targets.  The paper
(section 3.1) ranked its 322-million-link graph in about five hours.
"""

from __future__ import annotations

import argparse
import os
import random
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_build import run_measured  # noqa: E402
from bench_store import timed  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from rankstore.store import analysis as store_analysis  # noqa: E402


def graph_bench_parser(doc: str) -> argparse.ArgumentParser:
    """The command line a graph's benchmark shares (this one and bench_domain.py): the graph, the store, what
    to skip, how often each read."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("graph", help="the graph's folder (vertices and edges parts)")
    parser.add_argument("--store", required=True)
    parser.add_argument("--skip-build", action="store_true", help="rank (and read) the store as it is")
    parser.add_argument("--reads-only", action="store_true", help="only the reads, on the ranked store")
    parser.add_argument("--repeat", type=int, default=50)
    return parser


def build_afresh(graph: str, store: str, target: str) -> None:
    """`rankstore build GRAPH` into a new store as a whole process: its time and peak memory printed."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(store + suffix):
            os.remove(store + suffix)
    seconds, peak, output = run_measured([sys.executable, "-m", "rankstore", "build", graph, "--store", store, "-q"])
    print(
        f"build: {seconds / 60:.1f} min, peak RSS {peak / 2**20:.2f} GiB (target {target})\n  "
        + output.strip().replace("\n", "\n  "),
        flush=True,
    )


def main() -> None:
    parser = graph_bench_parser(__doc__)
    parser.add_argument(
        "--analysis",
        action="store_true",
        help="the analyst's reads (issue 7): contribution, --since, --group-by host, and the host ranking's time",
    )
    parser.add_argument(
        "--recrawl",
        type=int,
        default=0,
        metavar="N",
        help="first build a recrawl of N random pages (each keeps 90%% of its links and gains 2, one of them to "
        "the page with about 1,000,000 backlinks), so that --since reads links of two ages",
    )
    args = parser.parse_args()
    from rankstore.store import Store

    if args.recrawl:
        recrawl(args.store, args.recrawl)

    if not (args.skip_build or args.reads_only):
        build_afresh(args.graph, args.store, "<= 20 min, <= 12 GiB")
    if not args.reads_only:
        seconds, peak, output = run_measured(
            [sys.executable, "-m", "rankstore", "rank", "--store", args.store, "-q", "--force"]
        )
        print(
            f"rank: {seconds / 60:.2f} min, peak RSS {peak / 2**20:.2f} GiB (target <= 5 min, <= 12 GiB)\n  "
            + output.strip().replace("\n", "\n  "),
            flush=True,
        )
    with Store(args.store, readonly=True) as store:
        info = store.info()
        links = info["links"]
        print(
            f"store: {info['pages']:,} pages, {links:,} links, {info['size_bytes'] / 2**30:.2f} GiB = "
            f"{info['size_bytes'] / links:.1f} bytes a link (target <= 40)",
            flush=True,
        )
        ranking_id, pages = store.rankings.ranking_head()
        arrays = store.rankings.ranking_arrays(ranking_id)
        chosen = [
            (int(np.argmax(arrays.inlinks)), "the page with the most"),
            (int(np.argmin(np.abs(arrays.inlinks - 1_000_000))), "the page with about 1,000,000"),
            (int(np.argmin(np.abs(arrays.inlinks - 1000))), "a page with about 1,000"),
        ]
        urls = store.pages.urls_of([index + 1 for index, _ in chosen])
        for index, label in chosen:
            url = urls[index + 1]
            median, p99 = timed(lambda url=url: store.queries.backlinks(url, limit=50), args.repeat)
            print(
                f"top 50 backlinks of {label} backlinks ({int(arrays.inlinks[index]):,}): median {median:.2f} ms, "
                f"p99 {p99:.2f} ms (targets: <= 10 ms at 1,000,000, <= 0.5 ms at 1,000)",
                flush=True,
            )
        rng = random.Random(3)
        sample = store.pages.urls_of(rng.sample(range(1, pages + 1), 20_000))
        every = list(sample.values())
        batches = [rng.sample(every, 1000) for _ in range(args.repeat)]
        iterator = iter(batches)
        median, p99 = timed(lambda: store.queries.scores_by_url(next(iterator)), args.repeat)
        print(
            f"1,000 URL look-ups in one batch, the key table not yet read by this process: median {median:.2f} ms, "
            f"p99 {p99:.2f} ms",
            flush=True,
        )
        store.pages.last_keyed_page()  # the key table read, as a long-running proxy has it
        iterator = iter(batches)
        median, p99 = timed(lambda: store.queries.scores_by_url(next(iterator)), args.repeat)
        print(
            f"1,000 URL look-ups in one batch, the key table read once: median {median:.2f} ms, p99 {p99:.2f} ms "
            f"(target <= 5 ms)",
            flush=True,
        )
        if args.analysis:
            analysis(store, args, urls[chosen[1][0] + 1], int(arrays.inlinks[chosen[1][0]]))


def recrawl(path: str, count: int) -> None:
    """A second build into the store: ``count`` random crawled pages again, their links a little changed."""
    import tempfile

    from rankstore.store import Store

    rng = np.random.default_rng(5)
    with Store(path, readonly=True) as store:
        ranking_id, pages = store.rankings.ranking_head()
        inlinks = store.rankings.ranking_arrays(ranking_id).inlinks
        target = int(np.argmin(np.abs(inlinks - 1_000_000))) + 1
        sources = rng.choice(np.arange(1, pages + 1), count, replace=False)
        edges = []
        for src in sources.tolist():
            old = store.pages.out_link_ids(src)
            if not len(old):
                continue
            kept = old[rng.random(len(old)) < 0.9]
            gained = np.array([target, int(rng.integers(1, pages + 1))])
            edges.append((src, np.unique(np.concatenate([kept, gained[gained != src]]))))
        urls = store.pages.urls_of(sorted({int(x) for src, out in edges for x in [src, *out.tolist()]}))
    with tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False) as handle:
        for src, out in edges:
            handle.writelines(f"{urls[src]}\t{urls[int(dst)]}\n" for dst in out.tolist())
    try:
        seconds, peak, output = run_measured(
            [sys.executable, "-m", "rankstore", "build", handle.name, "--format", "edges", "--store", path, "-q"]
        )
    finally:
        os.remove(handle.name)
    print(
        f"recrawl of {len(edges):,} pages: {seconds / 60:.1f} min, peak RSS {peak / 2**20:.2f} GiB\n  "
        + output.strip().replace("\n", "\n  "),
        flush=True,
    )


def analysis(store, args, url: str, inlinks: int) -> None:
    """The analyst's reads on the page with about 1,000,000 backlinks, and the host ranking of the whole store."""
    import time

    for sort in ("pagerank", "contribution"):
        median, p99 = timed(
            lambda sort=sort: store_analysis.backlink_report(store, url, sort=sort, limit=50), args.repeat
        )
        print(
            f"top 50 backlinks with contribution and share ({inlinks:,} backlinks), by {sort}: median "
            f"{median:.2f} ms, p99 {p99:.2f} ms (target <= 10 ms)",
            flush=True,
        )
    last = store.last_build() or 1
    median, p99 = timed(lambda: store_analysis.backlink_report(store, url, since=last - 1, limit=50), args.repeat)
    print(f"--since build {last - 1}: median {median:.2f} ms, p99 {p99:.2f} ms (target <= 20 ms)", flush=True)
    started = time.perf_counter()
    store.hosts.page_hosts()
    print(f"every page's host read once: {time.perf_counter() - started:.2f} s", flush=True)
    median, p99 = timed(lambda: store_analysis.referring_hosts(store, url, limit=50), max(3, args.repeat // 10))
    print(
        f"--group-by host of {inlinks:,} backlinks: median {median:.0f} ms, p99 {p99:.0f} ms (target <= 1 s)",
        flush=True,
    )
    seconds, peak, output = run_measured(
        [sys.executable, "-m", "rankstore", "rank", "--level", "host", "--store", args.store, "-q", "--force"]
    )
    print(
        f"rank --level host: {seconds / 60:.2f} min, peak RSS {peak / 2**20:.2f} GiB (target <= 2 min)\n  "
        + output.strip(),
        flush=True,
    )


if __name__ == "__main__":
    main()
