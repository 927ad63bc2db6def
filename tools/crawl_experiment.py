#!/usr/bin/env python3
"""The paper's section 7.2 experiment on a doc site (rust-doc by default, --docs another, --edges an edge list): how
soon each crawl order finds the most important pages.

rust-doc (about 32,000 pages) is served on 127.0.0.1 (``python3 -m http.server``'s handler, in a process of
its own: tools/sitecrawl.py), then crawled by ``rankstore crawl`` from its index page:

1. breadth first, whole: the complete graph, whose PageRank names the final top 1% of the pages fetched;
2. PageRank order and backlink order, each up to 40% of the pages.

For each order it prints the share of the final top 1% fetched after 5, 10, 20 and 40% of the pages, with
the same orders simulated over the complete graph (the same frontier code, no fetching) beside them as
the check of the real crawls, and draws the figure (docs/crawl_order.png).  ``--simulate-only`` skips the
PageRank and backlink crawls (the simulation alone, over the breadth crawl's graph).

    python tools/crawl_experiment.py                       (about 10 minutes on 2 cores)
    python tools/crawl_experiment.py --simulate-only --work /tmp/crawl-exp
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tools"))

from sitecrawl import serve_process  # noqa: E402

from rankstore.crawl import Order, Scope, simulate, top_share  # noqa: E402
from rankstore.crawl.run import page_links  # noqa: E402
from rankstore.crawl.warcout import segments  # noqa: E402
from rankstore.solver import Graph, pagerank  # noqa: E402
from rankstore.sources import Record  # noqa: E402
from rankstore.sources.warc import read_warc  # noqa: E402

FRACTIONS = (0.05, 0.10, 0.20, 0.40)
DOCS = "/usr/share/doc/rust-doc/html"


def crawl(seed: str, folder: str, order: str, max_pages: int, rerank_every: int) -> float:
    """``rankstore crawl`` into ``folder``; seconds taken."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "rankstore", "crawl", seed, "--out", folder, "--order", order,
         "--max-pages", str(max_pages), "--rerank-every", str(rerank_every), "--delay", "0",
         "--concurrency", "8", "--per-host", "8", "--no-store", "-q"],
        check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT},
    )  # fmt: skip
    return time.perf_counter() - started


def fetched(folder: str, with_links: bool = True) -> tuple[list[str], dict[str, list[str]], set[str]]:
    """The URLs a crawl folder holds, in the order fetched; each one's out-links the crawl could follow
    (``with_links``); and those that were HTML pages (not redirects, not gone)."""
    order, links, html = [], {}, set()
    for path in segments(folder):
        for item in read_warc(path):
            if isinstance(item, Record):
                order.append(item.url)
                if item.body is not None:
                    html.add(item.url)
                if with_links:
                    links[item.url] = page_links(item)
    return order, links, html


def edge_list(path: str) -> tuple[list[str], dict[str, list[str]], set[str]]:
    """A graph's pages (the sources of its links, the first first) and their links, from URL<TAB>URL lines."""
    links: dict[str, list[str]] = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            source, _, target = line.rstrip("\n").partition("\t")
            links.setdefault(source, []).append(target)
    index = next((url for url in links if url.endswith("/index.html") and url.count("/") == 3), next(iter(links)))
    return [index, *(url for url in links if url != index)], links, set(links)


def final_top(pages: list[str], links: dict[str, list[str]], html: set[str], share: float = 0.01) -> set[str]:
    """The top ``share`` of the HTML pages among ``pages`` by PageRank of the complete graph (every URL the
    crawl knew, redirects and pages found gone among them)."""
    ids: dict[str, int] = {}
    src, dst = [], []
    for url in pages:
        source = ids.setdefault(url, len(ids))
        for target in links[url]:
            src.append(source)
            dst.append(ids.setdefault(target, len(ids)))
    scores = pagerank(Graph.from_edges(np.array(src), np.array(dst), len(ids)), 0.85, tol=1e-10).scores
    ranked = sorted((url for url in pages if url in html), key=lambda url: -scores[ids[url]])
    return set(ranked[: math.ceil(share * len(ranked))])


def site_label(docs: str, edges: str | None = None) -> str:
    """What the crawled site is called in the figure and the table: the edge list's file name, else the docs
    folder's package (/usr/share/doc/rust-doc/html -> rust-doc), else the folder's own name."""
    if edges:
        return os.path.basename(edges)
    folder = os.path.normpath(docs)
    parent, name = os.path.split(folder)
    return os.path.basename(parent) if name == "html" and parent.startswith("/usr/share/doc/") else name


def figure(rows: dict[str, list[float]], simulated: dict[str, list[float]], path: str, total: int, label: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=100)
    xs = [100 * f for f in FRACTIONS]
    colours = {"pagerank": "tab:red", "backlinks": "tab:blue", "breadth": "tab:gray"}
    for name, shares in rows.items():
        ax.plot(xs, [100 * s for s in shares], "o-", color=colours[name], label=f"{name} (crawl)")
    for name, shares in simulated.items():
        ax.plot(xs, [100 * s for s in shares], "--", color=colours[name], alpha=0.6, label=f"{name} (simulated)")
    ax.set_xlabel(f"pages crawled (% of {total:,})")
    ax.set_ylabel("final top 1% by PageRank found (%)")
    ax.set_title(f"{label} on 127.0.0.1: crawl order (Cho, Garcia-Molina & Page 1998)")
    ax.set_xticks(xs)
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", default=DOCS)
    parser.add_argument("--work", default="/tmp/crawl-experiment", help="the crawls' folders (emptied first)")
    parser.add_argument("--rerank-every", type=int, default=100)
    parser.add_argument("--figure", default=os.path.join(ROOT, "docs", "crawl_order.png"))
    parser.add_argument("--simulate-only", action="store_true", help="no PageRank or backlink crawl")
    parser.add_argument("--edges", help="simulate only, over this edge list (URL<TAB>URL lines; its sources fetched)")
    args = parser.parse_args()

    breadth = os.path.join(args.work, "breadth")
    seconds: dict[str, float] = {}
    orders: dict[str, list[str]] = {}
    if args.edges:
        order_of, links, html = edge_list(args.edges)
    elif args.simulate_only and segments(breadth):
        order_of, links, html = fetched(breadth)  # the breadth crawl of an earlier run
    else:
        for name in ("breadth", "pagerank", "backlinks"):
            shutil.rmtree(os.path.join(args.work, name), ignore_errors=True)
        server, port = serve_process(args.docs, keep_alive=True)
        try:
            seed = f"http://127.0.0.1:{port}/index.html"
            seconds["breadth"] = crawl(seed, breadth, "breadth", 10**6, args.rerank_every)
            order_of, links, html = fetched(breadth)
            budget = math.ceil(max(FRACTIONS) * len(order_of))
            if not args.simulate_only:
                for name in ("pagerank", "backlinks"):
                    folder = os.path.join(args.work, name)
                    seconds[name] = crawl(seed, folder, name, budget, args.rerank_every)
                    orders[name] = fetched(folder, with_links=False)[0]
        finally:
            server.terminate()
            server.wait()
    orders["breadth"] = order_of
    seed = order_of[0]
    total = len(order_of)
    budget = math.ceil(max(FRACTIONS) * total)
    # URLs compared by path: the ports of two runs differ
    top = {url.split("/", 3)[3] for url in final_top(order_of, links, html)}
    scope = Scope.of_seeds([seed])
    rows, simulated = {}, {}
    for name in ("pagerank", "backlinks", "breadth"):
        walk = simulate(links, [seed], Order(name), budget, args.rerank_every, scope.__contains__)
        simulated[name] = top_share([url.split("/", 3)[3] for url in walk], top, FRACTIONS, total)
        if name in orders and (name != "breadth" or len(orders) > 1):
            rows[name] = top_share([url.split("/", 3)[3] for url in orders[name]], top, FRACTIONS, total)
    label = site_label(args.docs, args.edges)
    print(f"{label}: {total:,} URLs fetched whole breadth first ({len(html):,} HTML pages), final top 1%: {len(top)}")
    print("| order | " + " | ".join(f"{100 * f:.0f}%" for f in FRACTIONS) + " | simulated | crawl time |")
    print("|---|" + "---|" * (len(FRACTIONS) + 2))
    for name in ("pagerank", "backlinks", "breadth"):
        real = rows.get(name)
        cells = (
            " | ".join(f"{round(s * len(top))} ({100 * s:.0f}%)" for s in real)
            if real
            else " | ".join("-" for _ in FRACTIONS)
        )
        sim = " / ".join(f"{round(s * len(top))}" for s in simulated[name])
        when = f"{seconds[name]:.0f} s" if name in seconds else "-"
        print(f"| {name} | {cells} | {sim} | {when} |")
    if "pagerank" in rows:
        ten = FRACTIONS.index(0.10)
        ratio = rows["pagerank"][ten] / max(rows["breadth"][ten], 1e-9)
        print(f"at 10%: PageRank order finds {ratio:.2f}x as many as breadth first (target >= 1.8x)")
    figure(rows, simulated, args.figure, total, label)
    print(f"figure: {args.figure}")


if __name__ == "__main__":
    main()
