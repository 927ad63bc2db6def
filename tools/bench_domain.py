#!/usr/bin/env python3
"""Common Crawl's domain graph on this machine: build, rank and read 135 million sites and 2 billion links.

    .venv/bin/python tools/make_domain_graph.py --out /work/dg/full            # once: the graph (13 GB of gz)
    .venv/bin/python tools/bench_domain.py /work/dg/full --store /work/dg/full.db
    .venv/bin/python tools/make_domain_graph.py --scale 1/16 --out /work/dg/s16   # the same steps smaller
    .venv/bin/python tools/bench_domain.py /work/dg/s16 --store /work/dg/s16.db

Times `rankstore build` and `rankstore rank --level site` as whole processes,
with the peak resident memory of each; then, on the ranked store, its bytes a
link (and each part's, as `rankstore info --space` counts them) and the reads:
the top 50 referring sites of the most-linked site and of a site with about
10,000, and 1,000 look-ups of sites by name in one batch (probed in the store, and with
the keys held as the proxy holds them).  Targets (the issue
on the domain graph at full size): build <= 45 min, rank <= 10 min, each
<= 16 GiB; <= 10 bytes a link after one ranking; top 50 referrers <= 100 ms
for the most-linked site and <= 1 ms at 10,000; 1,000 look-ups <= 5 ms.
"""

from __future__ import annotations

import os
import random
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_build import run_measured  # noqa: E402
from bench_paper import build_afresh, graph_bench_parser  # noqa: E402
from bench_store import timed  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from rankstore.store import Store  # noqa: E402
from rankstore.store.space import space  # noqa: E402


def main() -> None:
    parser = graph_bench_parser(__doc__)
    args = parser.parse_args()
    if not (args.skip_build or args.reads_only):
        build_afresh(args.graph, args.store, "<= 45 min, <= 16 GiB")
    if not args.reads_only:
        seconds, peak, output = run_measured(
            [sys.executable, "-m", "rankstore", "rank", "--level", "site", "--tol", "1e-9", "--cold"]
            + ["--store", args.store, "--force"]
        )
        said = [line for line in output.splitlines() if "iteration" not in line]
        print(
            f"rank: {seconds / 60:.2f} min, peak RSS {peak / 2**20:.2f} GiB (target <= 10 min, <= 16 GiB)\n  "
            + "\n  ".join(said),
            flush=True,
        )
    with Store(args.store, readonly=True) as store:
        links = store.site_links.count()
        size = os.path.getsize(args.store)
        print(
            f"store: {store.sites.site_count():,} sites, {links:,} site links, {size / 2**30:.2f} GiB = "
            f"{size / links:.2f} bytes a link (target <= 10)",
            flush=True,
        )
        for part in space(store, links):
            if part.bytes > 1 << 20:
                print(f"  {part.part}: {part.bytes / 2**30:.2f} GiB, {part.bytes_per_link:.2f} bytes a link")
        head = store.levels.level_head("site")
        assert head is not None, "no site ranking: run without --reads-only"
        arrays = store.rankings.ranking_arrays(head.ranking_id)
        chosen = [
            (int(np.argmax(arrays.inlinks)), "the most-linked site", "<= 100 ms"),
            (int(np.argmin(np.abs(arrays.inlinks - 10_000))), "a site with about 10,000", "<= 1 ms"),
        ]
        names = store.sites.site_names([index + 1 for index, _, _ in chosen])
        for index, label, target in chosen:
            name = names[index + 1]
            got = store.levels.referrers(head, name, 50)
            assert got, name
            median, p99 = timed(lambda name=name: store.levels.referrers(head, name, 50), args.repeat)
            print(
                f"top 50 referring sites of {label} ({name}, {int(arrays.inlinks[index]):,} in-links): "
                f"median {median:.2f} ms, p99 {p99:.2f} ms (target {target})",
                flush=True,
            )
        rng = random.Random(3)
        sample = store.sites.site_names(rng.sample(range(1, head.nodes + 1), 20_000))
        every = list(sample.values())
        batches = [rng.sample(every, 1000) for _ in range(args.repeat)]
        iterator = iter(batches)
        median, p99 = timed(lambda: store.levels.level_scores(head, next(iterator)), args.repeat)
        print(
            f"1,000 look-ups of sites by name in one batch, probed in the store's key buckets: median {median:.2f} ms,"
            f" p99 {p99:.2f} ms",
            flush=True,
        )
        # as the proxy looks sites up: their keys read once (in its preload thread), then held
        started = time.perf_counter()
        keys = store.levels.level_keys("site")
        read = time.perf_counter() - started
        held = keys.hashes.nbytes + keys.ids.nbytes + keys.slots.starts.nbytes
        batches = [rng.sample(every, 1000) for _ in range(args.repeat)]
        iterator = iter(batches)
        median, p99 = timed(lambda: store.levels.level_scores(head, next(iterator), keys), args.repeat)
        print(
            f"1,000 look-ups of sites by name in one batch, the keys held as the proxy holds them: median "
            f"{median:.2f} ms, p99 {p99:.2f} ms (target <= 5 ms); the {keys.count:,} keys read in {read:.1f} s,"
            f" {held / 2**30:.2f} GiB held",
            flush=True,
        )


if __name__ == "__main__":
    main()
