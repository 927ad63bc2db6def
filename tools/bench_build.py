#!/usr/bin/env python3
"""Benchmark `rankstore build` on Debian's rust-doc, against peers in the same run.

    bash tools/setup.sh --bench && .venv/bin/python tools/bench_build.py

1. crawls rust-doc once with wget into a WARC.gz (cached in ~/.cache/pagerank-proxy);
2. end to end: `rankstore build` on it: pages/s, links/s, peak memory of the
   process tree; then on the crawl twice over (twice the bytes) to show memory
   stays flat in the crawl's size;
3. extraction alone on the same sample of pages: ours (rankstore.extract: its C tokenizer, else lexbor) vs
   beautifulsoup4 + lxml, one process each, and the ratio;
4. WARC reading alone: FastWARC vs warcio;
   and (``--against-bare``, three rounds) the build as a whole process against
   a bare loop, also a whole process: warcio reading the WARC, lexbor
   (selectolax) parsing each HTML page and every ``<a href>`` joined to its
   URL, nothing stored: our speed as a multiple of its (``--crawl-only``: 1-4 alone);
5. edge lists (`--edges-only` for this part alone): `rankstore build` of URL
   edge lists where URLs repeat, links/s, against igraph reading the same file
   into memory (`Graph.Read_Ncol`, names kept; no store): rust-doc's links
   (772,696 over 40,621 URLs) and a generated 5,000,000-line list over 100,000
   URLs (Zipf targets).  Target: >= 1,000,000 links/s.
6. any order of edges (``--shuffled PAGES:LINKS`` alone): a Common Crawl host
   graph made by tools/make_paper_graph.py, built as Common Crawl sorts it and
   built again with its edges shuffled over the same parts; the shuffled build's
   time as a multiple of the sorted one's (target: 1.5x or less).
7. the small end (``--build-and-rank`` alone): rust-doc's edge list built and
   ranked as two whole processes (`rankstore build EDGES -q`, then `rankstore
   rank -q`, their wall times summed) against one process that reads the same
   file with igraph (`Graph.Read_Ncol`, names kept) and solves it
   (`pagerank(implementation="prpack")`), rounds alternated: medians and the
   ratio (target: 1.0x or less), and the CPU time each used (on a shared
   machine the wall times say more of the others' load).  rankstore's modules
   are compiled to bytecode first, as an install does, so that neither side
   compiles at each start.
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sitecrawl import crawl, serve  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.expanduser("~/.cache/pagerank-proxy")
RUST_DOC = "/usr/share/doc/rust-doc/html"


def tree_rss_kib(pid: int) -> int:
    """Resident memory of a process and all its descendants."""
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        try:
            with open(f"/proc/{current}/status") as handle:
                for line in handle:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as handle:
                    stack.extend(int(child) for child in handle.read().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's children that have ended and been waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_measured(command: list[str]) -> tuple[float, int, str]:
    """Wall seconds, peak tree RSS (KiB) and output of a command."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss_kib(process.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output = process.communicate()[0]
    done.set()
    sampler.join()
    if process.returncode not in (0, 3):
        raise RuntimeError(f"{' '.join(command)} failed:\n{output}")
    return time.perf_counter() - started, peak, output


def ensure_crawl() -> str:
    warc = os.path.join(CACHE, "rust-doc.warc.gz")
    if not os.path.exists(warc):
        if not os.path.isdir(RUST_DOC):
            sys.exit("rust-doc is not installed: bash tools/setup.sh --bench")
        os.makedirs(CACHE, exist_ok=True)
        print(f"crawling {RUST_DOC} once into {warc} ...", flush=True)
        with serve(RUST_DOC) as url:
            seconds = crawl(url, warc + ".part.warc.gz")
        os.replace(warc + ".part.warc.gz", warc)
        print(f"crawled in {seconds:.0f} s", flush=True)
    return warc


def build_once(warc: str, work: str, label: str) -> dict:
    store = os.path.join(work, f"{label}.db")
    seconds, peak, output = run_measured([sys.executable, "-m", "rankstore", "build", warc, "--store", store, "-q"])
    sys.path.insert(0, ROOT)
    from rankstore.store import Store

    with Store(store, readonly=True) as opened:
        info = opened.info()
    return {
        "label": label,
        "seconds": seconds,
        "peak_mib": peak / 1024,
        "pages": info["builds"][-1]["pages"],
        "links": info["builds"][-1]["links"],
        "input_mib": os.path.getsize(warc) / 2**20,
    }


# The peer of the build as a whole: read, parse, resolve, nothing more (no canonical form, no store).
BARE_LOOP = """
import sys
from urllib.parse import urljoin
from selectolax.lexbor import LexborHTMLParser
from warcio.archiveiterator import ArchiveIterator

pages = links = titles = 0
with open(sys.argv[1], "rb") as handle:
    for record in ArchiveIterator(handle):
        if record.rec_type != "response" or record.http_headers is None:
            continue
        if record.http_headers.get_statuscode() != "200":
            continue
        if not (record.http_headers.get_header("Content-Type") or "").startswith("text/html"):
            continue
        url = record.rec_headers.get_header("WARC-Target-URI").strip("<>")
        tree = LexborHTMLParser(record.content_stream().read())
        titles += tree.css_first("title") is not None
        targets = {urljoin(url, node.attributes.get("href") or "") for node in tree.css("a[href]")}
        pages += 1
        links += len(targets)
print(pages, links)
"""


def against_bare(warc: str, work: str, rounds: int) -> None:
    """The build as a whole process against the bare warcio + lexbor loop, alternated, ``rounds`` times."""
    print(f"\n== rankstore build against a bare warcio + lexbor loop, {rounds} rounds (whole processes)")
    # CPU seconds too: on a machine shared with other work, wall time says how busy it was as much as
    # how much work each did; the build's work is spread over processes, the loop's is one process
    ratios, cpu_ratios = [], []
    for attempt in range(rounds):
        cpu = children_cpu()
        ours = build_once(warc, work, f"bare-{attempt}")
        ours_cpu = children_cpu() - cpu
        cpu = children_cpu()
        bare_s, _, output = run_measured([sys.executable, "-c", BARE_LOOP, warc])
        bare_cpu = children_cpu() - cpu
        pages, links = (int(n) for n in output.split())
        ratios.append(bare_s / ours["seconds"])
        cpu_ratios.append(bare_cpu / ours_cpu)
        print(
            f"round {attempt + 1}: rankstore build {ours['seconds']:.2f} s, {ours_cpu:.2f} s CPU "
            f"({ours['pages']:,} pages); bare loop {bare_s:.2f} s, {bare_cpu:.2f} s CPU ({pages:,} pages, "
            f"{links:,} links): ours {ratios[-1]:.2f}x its speed, {cpu_ratios[-1]:.2f}x its CPU a page"
        )
    print(
        f"ours {min(ratios):.2f}-{max(ratios):.2f}x the bare loop's speed; "
        f"{min(cpu_ratios):.2f}-{max(cpu_ratios):.2f}x less CPU"
    )


def sample_bodies(warc: str, count: int) -> list[tuple[str, bytes, str]]:
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    bodies = []
    for record in ArchiveIterator(warc, record_types=WarcRecordType.response, parse_http=True):
        content_type = record.http_headers.get("Content-Type") or ""
        if record.http_headers.status_code == 200 and content_type.startswith("text/html"):
            url = record.headers.get("WARC-Target-URI").strip("<>")
            bodies.append((url, record.reader.read(), content_type))
    step = max(1, len(bodies) // count)
    return bodies[::step][:count]


def bs4_extract(body: bytes, url: str):
    """The same contract with beautifulsoup4 + lxml: the usual Python way."""
    from bs4 import BeautifulSoup

    from rankstore.urls import canonical

    soup = BeautifulSoup(body, "lxml")
    base_tag = soup.find("base", href=True)
    base = (canonical(base_tag["href"], url) or url) if base_tag else url
    links = {}
    for tag in soup.find_all(["a", "area"], href=True):
        target = canonical(tag["href"], base)
        if target and not tag["href"].startswith("#"):
            links.setdefault(target, " ".join(tag.get_text(" ").split())[:200])
    return soup.title.get_text() if soup.title else None, links


def rust_doc_edges() -> str:
    """rust-doc's links as a URL edge list, from a store built from its HTML directory (cached)."""
    path = os.path.join(CACHE, "rust-doc-edges.tsv")
    if not os.path.exists(path):
        store = os.path.join(CACHE, "rust-doc-edges.db")
        if not os.path.exists(store):
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "rankstore",
                    "build",
                    RUST_DOC,
                    "--base-url",
                    "http://rust.local/",
                    "--store",
                    store,
                    "-q",
                ],
                check=True,
                cwd=ROOT,
            )
        from rankstore.store import Store

        with Store(store, readonly=True) as opened, open(path + ".part", "w") as out:
            for source, target in opened.pages.link_urls():
                out.write(f"{source}\t{target}\n")
        os.replace(path + ".part", path)
    return path


def zipf_edges(lines: int = 5_000_000, urls: int = 100_000) -> str:
    """A URL edge list where URLs repeat: sources in order, Zipf-popular targets near them (cached)."""
    import numpy as np

    path = os.path.join(CACHE, f"zipf-edges-{lines}-{urls}.tsv")
    if not os.path.exists(path):
        rng = np.random.default_rng(1)
        src = np.sort(rng.integers(0, urls, lines))
        dst = (rng.zipf(1.5, lines) * 7919 + src) % urls
        names = [f"http://site{i % 500}.example/docs/page-{i}.html" for i in range(urls)]
        with open(path + ".part", "w") as out:
            for start in range(0, lines, 500_000):
                out.write(
                    "".join(
                        f"{names[s]}\t{names[d]}\n"
                        for s, d in zip(src[start : start + 500_000].tolist(), dst[start : start + 500_000].tolist())
                    )
                )
        os.replace(path + ".part", path)
    return path


def edge_lists(work: str) -> None:
    print("\n== edge lists: rankstore build vs igraph Read_Ncol (same file, in memory only)")
    igraph_script = "import sys, igraph; g = igraph.Graph.Read_Ncol(sys.argv[1], names=True, directed=True)"
    for label, path in (("rust-doc", rust_doc_edges()), ("zipf 5M/100k", zipf_edges())):
        lines = sum(1 for _ in open(path, "rb"))
        ours, theirs = [], []
        for attempt in range(3):
            store = os.path.join(work, f"edges-{attempt}.db")
            seconds, peak, _ = run_measured([sys.executable, "-m", "rankstore", "build", path, "--store", store, "-q"])
            ours.append(seconds)
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", igraph_script, path], check=True)
            theirs.append(time.perf_counter() - started)
        best = min(ours)
        print(
            f"{label:>13}: {lines:,} lines, {os.path.getsize(path) / 2**20:.0f} MiB: rankstore build "
            f"{' / '.join(f'{t:.2f}' for t in ours)} s = {lines / best:,.0f} links/s (best), peak RSS "
            f"{peak / 1024:.0f} MiB; igraph Read_Ncol {' / '.join(f'{t:.2f}' for t in theirs)} s; "
            f"ours {min(theirs) / best:.2f}x its speed"
        )


# The peer of build-and-rank: igraph reads the same edge list into memory and solves it, in one process.
IGRAPH_READ_AND_SOLVE = """
import sys, igraph
g = igraph.Graph.Read_Ncol(sys.argv[1], names=True, directed=True)
ranks = g.pagerank(implementation="prpack")
print(g.vcount(), g.ecount())
"""


def build_and_rank(work: str, rounds: int) -> None:
    """rust-doc's edge list built and ranked as two whole processes against igraph's read and solve, alternated."""
    import statistics

    path = rust_doc_edges()
    print(f"\n== build + rank as two processes against igraph's read and solve, {rounds} rounds ({path})")
    # igraph's modules were compiled to bytecode when it was installed; ours, run from the source tree with
    # PYTHONDONTWRITEBYTECODE set (as in this project's shells), would be compiled again by every process
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(ROOT, "rankstore")], check=True)
    print("rankstore's modules compiled to bytecode first, as installing it does (igraph's are)")
    ours, theirs, our_cpu, their_cpu = [], [], [], []
    for attempt in range(rounds):
        store = os.path.join(work, f"build-and-rank-{attempt}.db")
        cpu = children_cpu()
        build_s, build_peak, _ = run_measured(
            [sys.executable, "-m", "rankstore", "build", path, "--store", store, "-q"]
        )
        rank_s, rank_peak, _ = run_measured([sys.executable, "-m", "rankstore", "rank", "--store", store, "-q"])
        for name in os.listdir(work):
            if name.startswith(os.path.basename(store)):
                os.remove(os.path.join(work, name))
        our_cpu.append(children_cpu() - cpu)
        cpu = children_cpu()
        igraph_s, igraph_peak, counted = run_measured([sys.executable, "-c", IGRAPH_READ_AND_SOLVE, path])
        their_cpu.append(children_cpu() - cpu)
        ours.append(build_s + rank_s)
        theirs.append(igraph_s)
        nodes, links = (int(n) for n in counted.split())
        print(
            f"round {attempt + 1}: build {build_s:.2f} s ({build_peak / 1024:.0f} MiB) + rank {rank_s:.2f} s "
            f"({rank_peak / 1024:.0f} MiB) = {ours[-1]:.2f} s; igraph read + prpack {igraph_s:.2f} s "
            f"({igraph_peak / 1024:.0f} MiB, {nodes:,} nodes, {links:,} links); CPU {our_cpu[-1]:.2f} s against "
            f"{their_cpu[-1]:.2f} s",
            flush=True,
        )
    mine, peer = statistics.median(ours), statistics.median(theirs)
    print(
        f"medians: build + rank {mine:.2f} s, igraph {peer:.2f} s: ours {mine / peer:.2f}x igraph's time "
        "(target: 1.0x or less)"
    )
    # on a shared machine the wall times say more of the others' load than of either side: the CPU each used
    mine_cpu, peer_cpu = statistics.median(our_cpu), statistics.median(their_cpu)
    print(
        f"CPU (user + system), medians: build + rank {mine_cpu:.2f} s, igraph {peer_cpu:.2f} s: "
        f"{mine_cpu / peer_cpu:.2f}x"
    )


def paper_graph(pages: int, links: int, parts: int) -> str:
    """A Common Crawl host graph made by tools/make_paper_graph.py, sorted as Common Crawl writes it (cached)."""
    path = os.path.join(CACHE, f"host-graph-{pages}-{links}")
    if not os.path.exists(path):
        os.makedirs(CACHE, exist_ok=True)
        subprocess.run(
            [sys.executable, os.path.join(ROOT, "tools", "make_paper_graph.py"), "--pages", str(pages)]
            + ["--links", str(links), "--parts", str(parts), "--out", path + ".part"],
            check=True,
            cwd=ROOT,
        )
        os.replace(path + ".part", path)
    return path


def shuffled_twin(graph: str, seed: int = 34) -> str:
    """The same graph with its edges in a random order over as many parts (cached): its sources recur in
    every batch the build reads."""
    import gzip

    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pacsv

    path = graph + "-shuffled"
    if os.path.exists(path):
        return path
    out = path + ".part"
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "edges"))
    for name in ("vertices", "vertices.paths.gz"):
        os.symlink(os.path.join(graph, name), os.path.join(out, name))
    parts = sorted(os.listdir(os.path.join(graph, "edges")))
    options = pacsv.ParseOptions(delimiter="\t")
    read = pacsv.ReadOptions(column_names=["from", "to"])
    columns = pacsv.ConvertOptions(column_types={"from": pa.int32(), "to": pa.int32()})
    tables = [
        pacsv.read_csv(
            os.path.join(graph, "edges", part), read_options=read, parse_options=options, convert_options=columns
        )
        for part in parts
    ]
    src = np.concatenate([table.column("from").to_numpy() for table in tables])
    dst = np.concatenate([table.column("to").to_numpy() for table in tables])
    del tables
    order = np.random.default_rng(seed).permutation(len(src))
    src, dst = src[order], dst[order]
    del order
    for number, part in enumerate(parts):
        lo, hi = number * len(src) // len(parts), (number + 1) * len(src) // len(parts)
        buffer = io.BytesIO()
        pacsv.write_csv(
            pa.table({"from": src[lo:hi], "to": dst[lo:hi]}),
            buffer,
            pacsv.WriteOptions(include_header=False, delimiter="\t", quoting_style="none"),
        )
        with gzip.open(os.path.join(out, "edges", part), "wb", compresslevel=1) as handle:
            handle.write(buffer.getvalue())
    with gzip.open(os.path.join(out, "edges.paths.gz"), "wt") as handle:
        handle.write("".join(f"edges/{part}\n" for part in parts))
    os.replace(out, path)
    return path


def sorted_and_shuffled(work: str, pages: int, links: int, rounds: int) -> None:
    """`rankstore build` of a host graph sorted and of its twin with the edges shuffled, alternated."""
    print(f"\n== a host graph of {pages:,} pages and {links:,} links: sorted, and its edges shuffled")
    graph = paper_graph(pages, links, max(1, links // 4_000_000))
    twin = shuffled_twin(graph)
    times: dict[str, list[float]] = {"sorted": [], "shuffled": []}
    for attempt in range(rounds):
        for label, path in (("sorted", graph), ("shuffled", twin)):
            store = os.path.join(work, f"{label}.db")
            seconds, peak, _ = run_measured([sys.executable, "-m", "rankstore", "build", path, "--store", store, "-q"])
            times[label].append(seconds)
            print(f"round {attempt + 1}: {label:>8} {seconds:.1f} s, peak RSS {peak / 1024:.0f} MiB", flush=True)
            os.remove(store)
    best = {label: min(values) for label, values in times.items()}
    print(
        f"sorted {best['sorted']:.1f} s ({links / best['sorted']:,.0f} links/s), shuffled {best['shuffled']:.1f} s "
        f"({links / best['shuffled']:,.0f} links/s): shuffled takes {best['shuffled'] / best['sorted']:.2f}x "
        "the sorted time (target: 1.5x or less)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=1500, help="pages for the extractor comparison")
    parser.add_argument("--edges-only", action="store_true", help="only the edge-list rows")
    parser.add_argument(
        "--crawl-only", action="store_true", help="only the crawl's rows (1-4): no bare loop, no edge lists"
    )
    parser.add_argument(
        "--against-bare", type=int, metavar="ROUNDS", help="only the build against a bare warcio + lexbor loop"
    )
    parser.add_argument(
        "--shuffled",
        metavar="PAGES:LINKS",
        help="only the build of a host graph of that size sorted against its twin with the edges shuffled",
    )
    parser.add_argument(
        "--build-and-rank",
        action="store_true",
        help="only rust-doc's edge list built and ranked (two processes) against igraph's read and solve",
    )
    parser.add_argument("--rounds", type=int, help="rounds of --shuffled (default 2) or --build-and-rank (default 5)")
    args = parser.parse_args()
    sys.path.insert(0, ROOT)
    if args.build_and_rank:
        work = tempfile.mkdtemp(prefix="bench-build-")
        try:
            build_and_rank(work, args.rounds or 5)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    if args.shuffled:
        pages, links = (int(number.replace("_", "")) for number in args.shuffled.split(":"))
        work = tempfile.mkdtemp(prefix="bench-build-")
        try:
            sorted_and_shuffled(work, pages, links, args.rounds or 2)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    if args.edges_only:
        work = tempfile.mkdtemp(prefix="bench-build-")
        try:
            edge_lists(work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    warc = ensure_crawl()
    work = tempfile.mkdtemp(prefix="bench-build-")
    if args.against_bare:
        try:
            against_bare(warc, work, args.against_bare)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    try:
        print(f"\n== end to end: rankstore build {warc}")
        runs = [build_once(warc, work, "crawl")]
        double = os.path.join(work, "crawl-x2.warc.gz")
        with open(double, "wb") as out:
            for _ in range(2):
                with open(warc, "rb") as part:
                    shutil.copyfileobj(part, out)
        runs.append(build_once(double, work, "crawl-x2"))
        for run in runs:
            print(
                f"{run['label']:>9}: {run['input_mib']:.0f} MiB in, {run['pages']:,} pages, {run['links']:,} links "
                f"in {run['seconds']:.1f} s = {run['pages'] / run['seconds']:,.0f} pages/s, "
                f"{run['links'] / run['seconds']:,.0f} links/s; peak RSS {run['peak_mib']:.0f} MiB"
            )
        print(f"memory: x2 input -> peak x{runs[1]['peak_mib'] / runs[0]['peak_mib']:.2f}")

        print(f"\n== extraction alone, {args.sample} pages, one process")
        from rankstore.extract import extract

        bodies = sample_bodies(warc, args.sample)
        started = time.perf_counter()
        ours = [extract(body, url, ctype) for url, body, ctype in bodies]
        ours_s = time.perf_counter() - started
        started = time.perf_counter()
        theirs = [bs4_extract(body, url) for url, body, _ in bodies]
        theirs_s = time.perf_counter() - started
        same = sum(1 for a, b in zip(ours, theirs) if {link.url for link in a.links} == set(b[1]))
        print(f"rankstore.extract: {len(bodies) / ours_s:,.0f} pages/s")
        print(f"bs4 + lxml:        {len(bodies) / theirs_s:,.0f} pages/s")
        print(f"ratio: ours {theirs_s / ours_s:.1f}x faster; same link sets on {same}/{len(bodies)} pages")

        print("\n== WARC reading alone")
        from fastwarc.warc import ArchiveIterator as FastIterator
        from warcio.archiveiterator import ArchiveIterator as WarcioIterator

        started = time.perf_counter()
        fast = sum(len(r.reader.read()) for r in FastIterator(warc, parse_http=True))
        fast_s = time.perf_counter() - started
        started = time.perf_counter()
        with open(warc, "rb") as handle:
            slow = sum(len(r.content_stream().read()) for r in WarcioIterator(handle))
        slow_s = time.perf_counter() - started
        print(
            f"FastWARC: {fast_s:.2f} s, warcio: {slow_s:.2f} s: FastWARC {slow_s / fast_s:.1f}x faster "
            f"({fast / 2**20:.0f} / {slow / 2**20:.0f} MiB of payload)"
        )
        if not args.crawl_only:
            against_bare(warc, work, 3)
            edge_lists(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
