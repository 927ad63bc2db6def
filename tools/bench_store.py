#!/usr/bin/env python3
"""Store lookups the proxy needs: backlinks by rank of a page with 1,000,000 backlinks, batched URL lookups.

    .venv/bin/python tools/bench_store.py [--backlinks 1000000] [--titles-only [--source STORE]] [--ranking-read 3]

Builds (once, cached in ~/.cache/pagerank-proxy, by schema version) a store
from a generated edge list: page 0 is linked from the next N pages, page 1
from 1,000 of them, plus 2 random links per page; ranks it; then times, over
repeated runs (median and p99):
  * the top 50 backlinks of page 0 sorted by the linking pages' PageRank
    (target <= 10 ms), and of page 1 (target <= 0.5 ms);
  * 1,000 random URL lookups (score, position, in-links) in one batched call
    (target <= 5 ms);
  * title search (``search_titles``, what /search asks) of 1-3 words, common
    and rare, FTS5 syntax among them, and the 201st page of results (offset
    10,000), over a copy of the store given generated titles, since the
    edge list has none (target <= 100 ms p95).
``--ranking-read PASSES`` times instead what reading a new version of the
ranking for the proxy's event loop holds that loop: read in a thread, as the
proxy reads it, and in the loop itself, each after a new ``rank``.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import os
import random
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
CACHE = os.path.expanduser("~/.cache/pagerank-proxy")


def url(i: int) -> str:
    return f"http://site{i % 1000}.example/page/{i}"


def make_store(backlinks: int) -> str:
    from rankstore.store import SCHEMA_VERSION

    path = os.path.join(CACHE, f"store-{backlinks}-v{SCHEMA_VERSION}.db")
    if os.path.exists(path):
        return path
    os.makedirs(CACHE, exist_ok=True)
    edges = os.path.join(CACHE, f"edges-{backlinks}-v2.tsv.gz")
    rng = random.Random(1)
    n = backlinks + 1
    with gzip.open(edges, "wt", compresslevel=1) as out:
        for page in range(1, n):
            out.write(f"{url(page)}\t{url(0)}\n")
            if page <= 1000 and page != 1:
                out.write(f"{url(page)}\t{url(1)}\n")
            for _ in range(2):
                out.write(f"{url(page)}\t{url(rng.randrange(n))}\n")
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rankstore", "build", edges, "--store", path + ".part", "-q"], check=True)
    subprocess.run([sys.executable, "-m", "rankstore", "rank", "--store", path + ".part", "-q"], check=True)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + ".part" + suffix):
            os.replace(path + ".part" + suffix, path + suffix)
    print(f"built and ranked the store in {time.perf_counter() - started:.0f} s", flush=True)
    return path


COMMON = ["the", "of", "and", "to", "in", "for", "or", "near", "not", "page"]
COMMON_SHARE = [0.9, 0.6, 0.5, 0.4, 0.35, 0.3, 0.2, 0.15, 0.1, 0.05]  # of titles holding each common word
TITLE_QUERIES = [
    ["the"],
    ["of"],
    ["and"],
    ["page"],
    ["lorem"],
    ["zzzz"],
    ["the", "of"],
    ["and", "near"],
    ["the", "lorem"],
    ["w17", "w3"],
    ["the", "of", "and"],
    ["w1", "w2", "w5"],
    ["the", "and", "w40"],
    ['"the'],
    ["the*"],
    ["-the"],
    ["NEAR(the", "of)"],
    ["the", "OR", "of"],
    ["(the)"],
    ["title:the"],
]


def titled_store(source: str, pages: int) -> str:
    """A copy of the store whose pages have titles (generated crawls have none), made once per store.

    Titles are made a million pages at a time, so that the paper-scale store's 24M fit in memory."""
    from rankstore.store import SCHEMA_VERSION, Store

    name = os.path.splitext(os.path.basename(source))[0]
    generated = name.startswith("store-")  # this tool's own store, else one given with --source
    path = os.path.join(CACHE, f"titles-{pages}-v{SCHEMA_VERSION}.db" if generated else f"titles-{name}.db")
    if os.path.exists(path):
        return path
    import numpy as np

    started = time.perf_counter()
    Store(source).close()  # its log copied into the file, and its schema brought up to date
    shutil.copyfile(source, path + ".part")
    with Store(path + ".part") as store:
        count = store.pages.last_page_id()
        rng = np.random.default_rng(3)
        vocabulary = [f"w{i}" for i in range(50_000)] + ["lorem"]
        shares = np.array(COMMON_SHARE)

        def titles():
            for start in range(0, count, 1_000_000):
                n = min(1_000_000, count - start)
                words = (rng.zipf(1.3, size=(n, 4)) % len(vocabulary)).tolist()
                common = (rng.random((n, len(COMMON))) < shares).tolist()
                for i in range(n):
                    chosen = [w for w, keep in zip(COMMON, common[i]) if keep]
                    yield " ".join(chosen + [vocabulary[k] for k in words[i]]).capitalize(), start + i + 1

        store.pages.retitle(titles())
    os.replace(path + ".part", path)
    print(f"gave {count:,} pages titles in {time.perf_counter() - started:.0f} s", flush=True)
    return path


def bench_titles(source: str, pages: int, repeat: int) -> None:
    from proxy_addon.pages import PAGE_SIZE, respond
    from proxy_addon.ranks import Ranks
    from rankstore.store import Store

    path = titled_store(source, pages)
    with Store(path, readonly=True) as store:
        for words in TITLE_QUERIES:
            store.queries.search_titles(words)  # warm the page cache, as a long-running proxy's is
        matches = {" ".join(w): store.queries.title_match_count(w) for w in TITLE_QUERIES}
        worst = []
        for words in TITLE_QUERIES:
            samples = sorted(_sample(lambda w=words: store.queries.search_titles(w, limit=PAGE_SIZE), repeat))
            p95 = samples[int(len(samples) * 0.95) - 1]
            worst.append(p95)
            print(
                f"  search {' '.join(words)!r:24} ({matches[' '.join(words)]:>9,} titles match): "
                f"median {statistics.median(samples):6.2f} ms, p95 {p95:6.2f} ms"
            )
        print(
            f"title search, {len(TITLE_QUERIES)} queries of 1-3 words: worst p95 {max(worst):.1f} ms (target <= 100 ms)"
        )
        for words in (["the"], ["w1"], ["the", "of"]):
            samples = sorted(
                _sample(lambda w=words: store.queries.search_titles(w, limit=PAGE_SIZE, offset=10_000), repeat)
            )
            print(
                f"  {' '.join(words)!r}, results 10,001-10,050 (offset 10,000): median "
                f"{statistics.median(samples):.2f} ms, p95 {samples[int(len(samples) * 0.95) - 1]:.2f} ms"
            )
    ranks = Ranks(path)
    samples = sorted(_sample(lambda: respond("GET", "/search", {"q": ["the of"]}, ranks), repeat))
    print(
        f"  the whole /search?q=the+of page (rendered): median {statistics.median(samples):.2f} ms, "
        f"p95 {samples[int(len(samples) * 0.95) - 1]:.2f} ms"
    )
    ranks.close()


def _sample(function, repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def timed(function, repeat: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.99) - 1]


def bench_ranking_read(source: str, passes: int) -> None:
    """What a new ranking version's read for the proxy's loop (``proxy_addon.worker.preload``) holds the
    loop: an asyncio loop ticking every millisecond while the version is read in a thread (as the proxy
    does) or in the loop, on a copy of the store ranked again before each read."""
    import asyncio
    import tempfile

    from proxy_addon import worker

    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "store.db")
        shutil.copy(source, path)
        args = (path, "pagerank", 10)
        worker.preload(*args)

        async def ticking(read) -> tuple[float, float, float]:
            lags: list[float] = []
            done = asyncio.Event()

            async def ticker() -> None:
                while not done.is_set():
                    started = time.perf_counter()
                    await asyncio.sleep(0.001)
                    lags.append((time.perf_counter() - started - 0.001) * 1000)

            task = asyncio.ensure_future(ticker())
            await asyncio.sleep(0.05)
            started = time.perf_counter()
            await read()
            took = (time.perf_counter() - started) * 1000
            await asyncio.sleep(0.05)
            done.set()
            await task
            lags.sort()
            return took, lags[-1], lags[int(len(lags) * 0.99)]

        async def in_thread() -> None:
            await asyncio.to_thread(worker.preload, *args)

        async def in_loop() -> None:
            worker.preload(*args)

        for _ in range(passes):
            for label, read in (("in a thread", in_thread), ("in the loop", in_loop)):
                subprocess.run(
                    [sys.executable, "-m", "rankstore", "rank", "--store", path, "-q", "--force"],
                    check=True,
                    cwd=ROOT,
                    stdout=subprocess.DEVNULL,
                )
                assert not worker.ready(*args)
                took, longest, p99 = asyncio.run(ticking(read))
                assert worker.ready(*args)
                print(
                    f"a new ranking version read {label}: {took:.0f} ms in all; the loop's longest lag "
                    f"{longest:.1f} ms, p99 {p99:.1f} ms"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backlinks", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--titles-only", action="store_true", help="only the title search, on the newest cached store")
    parser.add_argument(
        "--source",
        metavar="STORE",
        help="with --titles-only: the title search on a titled copy of this store (e.g. the paper-scale one)",
    )
    parser.add_argument(
        "--ranking-read",
        type=int,
        default=0,
        metavar="PASSES",
        help="only the proxy's read of a new ranking version, in a thread and in its loop, PASSES times each",
    )
    args = parser.parse_args()
    from rankstore.store import Store

    if args.ranking_read:
        bench_ranking_read(make_store(args.backlinks), args.ranking_read)
        return

    if args.titles_only and args.source:
        with Store(args.source, readonly=True) as store:
            pages = store.pages.last_page_id()
        bench_titles(args.source, pages, args.repeat)
        return
    if args.titles_only:
        cached = sorted(glob.glob(os.path.join(CACHE, f"store-{args.backlinks}-v*.db")), key=os.path.getmtime)
        bench_titles(cached[-1] if cached else make_store(args.backlinks), args.backlinks, args.repeat)
        return
    path = make_store(args.backlinks)
    Store(path).close()  # brings a cached store from an older schema up to date
    with Store(path, readonly=True) as store:
        info = store.info()
        print(f"store: {info['pages']:,} pages, {info['links']:,} links, {info['size_bytes'] / 2**20:.0f} MiB")
        target = url(0)
        rows = store.queries.backlinks(target, limit=50)
        assert len(rows) == 50 and [r["pagerank"] for r in rows] == sorted((r["pagerank"] for r in rows), reverse=True)
        inlinks = store.queries.lookup([target])[target]["inlinks"]
        median, p99 = timed(lambda: store.queries.backlinks(target, limit=50), args.repeat)
        print(
            f"top 50 backlinks of a page with {inlinks:,} backlinks, by PageRank: median {median:.2f} ms, "
            f"p99 {p99:.2f} ms (target <= 10 ms)"
        )
        median, p99 = timed(lambda: store.queries.backlinks(target, limit=50, offset=500_000), 20)
        print(f"  the same, page 10,001 of results (offset 500,000): median {median:.1f} ms")
        small = url(1)
        small_inlinks = store.queries.lookup([small])[small]["inlinks"]
        ranking_id = store.rankings.ranking_head()[0]
        median, p99 = timed(lambda: store.queries.backlinks(small, limit=50), args.repeat)
        print(
            f"top 50 backlinks of a page with {small_inlinks:,} backlinks: median {median:.3f} ms, "
            f"p99 {p99:.3f} ms (target <= 0.5 ms)"
        )
        median, p99 = timed(lambda: store.queries.top_backlinks(ranking_id, small, 50), args.repeat)
        print(f"  the same as the proxy's panel asks (version known): median {median:.3f} ms, p99 {p99:.3f} ms")
        rng = random.Random(2)
        batches = [[url(rng.randrange(args.backlinks)) for _ in range(1000)] for _ in range(args.repeat)]
        found = len(store.queries.scores_by_url(batches[0])[0])
        for batch in batches[: args.repeat // 4]:  # warm the page cache, as a long-running proxy's is
            store.queries.scores_by_url(batch)
        iterator = iter(batches)
        median, p99 = timed(lambda: store.queries.scores_by_url(next(iterator)), args.repeat)
        print(
            f"1,000 URL lookups in one batch, as the proxy makes them ({found} found): median {median:.2f} ms, "
            f"p99 {p99:.2f} ms (target <= 5 ms)"
        )
        iterator = iter(batches)
        median, p99 = timed(lambda: store.queries.lookup(next(iterator)), args.repeat)
        print(f"  with titles, as `rankstore show` reads them: median {median:.2f} ms, p99 {p99:.2f} ms")
    bench_titles(path, args.backlinks, args.repeat // 4)


if __name__ == "__main__":
    main()
