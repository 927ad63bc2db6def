#!/usr/bin/env python3
"""Latency and throughput: direct, through plain mitmdump, through pagerank-proxy, in one run.

    .venv/bin/python tools/bench_proxy.py [--rounds 7]

The python3.11-doc site is served on 127.0.0.1 (Python's http.server in its
own process, with a listen queue of 1,024), crawled with wget, built
and ranked; then plain mitmdump and pagerank-proxy listen side by side and
the same requests go to each, with keep-alive connections:
  * latency, one client: ~40 KB pages (every page of 30-50 KB, several rounds: a page's
    first visit is in round 1, and is shown apart), and library/functions.html (the
    largest page with the most links);
  * the ~40 KB pages again, one client, each page through every target in turn before
    the next page (one connection each; the order rotates from page to page): no drift
    in speed favours a target, and each finds its processes idle since its last page,
    as a person's browsing does (above, a target's pages follow each other back to back);
  * throughput: --clients (4) clients in parallel over the ~40 KB pages, and their latencies
    under that load, in the steady state: the pages that end within a window of
    --throughput-seconds (3), which opens once every client has opened its connection with
    its first page (those pages' p95 is shown apart).
Each round runs them all in turn, in an order that changes from round to round so that each
target follows each other one as often (this VM's speed drifts, over minutes and over
seconds); latency percentiles pool every round, throughput is the median of the rounds.
Loops are bounded in count and time.

    .venv/bin/python tools/bench_proxy.py --rounds 8 --clients 50 --control

--control measures a second plain mitmdump like the others: its ratios to the
first show how far two processes of the same code differ on this machine, the
least change a ratio here can show.

    .venv/bin/python tools/bench_proxy.py --rounds 8 --clients 50 --like-for-like

--record-too also measures pagerank-proxy recording what it annotates (--record DIR --record-warc).

--like-for-like also measures plain mitmdump that, like pagerank-proxy under -q,
makes no connection lines (proxy_addon.cli.connection_log_level), and prints
pagerank-proxy's ratios to it: the addon's own cost, apart from what the
proxy saves in mitmproxy's logging.

    .venv/bin/python tools/bench_proxy.py --first-visits 8

First visits alone, instead of the rounds: each pass starts plain mitmdump and
pagerank-proxy afresh (no panel or mark kept, nothing looked up yet), then
fetches every ~40 KB page once, page by page through each in turn; the p50 of
each pass over plain mitmdump's, and their median.

    .venv/bin/python tools/bench_proxy.py --first-visits 8 --keep-alive-origin

Either mode with an origin that speaks HTTP/1.1 and keeps each proxy's
connection open (the default origin speaks HTTP/1.0, as Python's http.server
does: a connection a request, so the proxies open one for every page).
"""

from __future__ import annotations

import argparse
import http.client
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sitecrawl import crawl, serve_process  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = "/usr/share/doc/python3.11/html"
CONTROL = "mitmdump again"  # a second plain mitmdump: how far two processes of the same code differ here
QUIET = "quiet mitmdump"  # plain mitmdump that makes no connection lines under -q, as pagerank-proxy
QUIET_MITMDUMP = (  # run with python -c: mitmdump as its console script runs it, its connection logger set first
    "import logging\n"
    "from proxy_addon.cli import CONNECTION_LOGGER, connection_log_level\n"
    "logging.getLogger(CONNECTION_LOGGER).setLevel(connection_log_level('error'))  # -q's verbosity\n"
    "from mitmproxy.tools.main import mitmdump\n"
    "mitmdump()\n"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait(port: int) -> None:
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {port}")


def fetch(connection: http.client.HTTPConnection, url: str, proxied: bool) -> bytes:
    connection.request("GET", url if proxied else "/" + url.split("/", 3)[3], headers={"Accept-Encoding": "identity"})
    response = connection.getresponse()
    body = response.read()
    if response.status != 200:
        raise RuntimeError(f"{url}: HTTP {response.status}")
    return body


def latencies(port: int, urls: list[str], proxied: bool) -> list[float]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    samples = timed(connection, urls, proxied)
    connection.close()
    return samples


def timed(connection: http.client.HTTPConnection, urls: list[str], proxied: bool) -> list[float]:
    """Each URL's latency in ms, fetched in turn over ``connection``."""
    samples = []
    for url in urls:
        started = time.perf_counter()
        fetch(connection, url, proxied)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def interleaved(targets: list[tuple[str, int, bool]], urls: list[str], turn: int) -> dict[str, list[float]]:
    """Each URL's latency in ms through every target, one keep-alive connection each: a URL goes through
    them all before the next URL, in an order that rotates from one URL to the next (``turn`` shifts it).
    So a drift in this VM's speed, even one of a few seconds, touches every target alike."""
    connections = {label: http.client.HTTPConnection("127.0.0.1", port, timeout=30) for label, port, _ in targets}
    samples: dict[str, list[float]] = {label: [] for label, _, _ in targets}
    for index, url in enumerate(urls):
        first = (index + turn) % len(targets)
        for label, _, proxied in targets[first:] + targets[:first]:
            samples[label] += timed(connections[label], [url], proxied)
    for connection in connections.values():
        connection.close()
    return samples


def throughput(
    port: int, urls: list[str], proxied: bool, clients: int, seconds: float, samples: list[float], firsts: list[float]
) -> tuple[float, int]:
    """Pages a second with ``clients`` keep-alive clients sharing ``urls``, in the steady state; and the
    pages fetched in all.

    Each client opens its connection with its first page (that latency goes to
    ``firsts``); once every client has, the clock runs for ``seconds``, each
    client going round its share of ``urls`` meanwhile, and the latencies of
    the pages that end within it go to ``samples``.  With 50 clients the
    connections opening at once would otherwise make up the slowest tenth of
    the samples (the p95 would time a burst of connections, not pages).

    The rate is each client's own, summed: the pages it ended within the
    window after its first one there, over the time from that one to its last.
    Clients that start together stay in step, so the pages end in waves, one
    page a client each (with 50 clients, a wave every 250-300 ms): the count
    of pages within a window of a few seconds would move by a whole wave with
    where the window falls, 8-10% at 3 s.  (The page under way as the window
    closes is left out, and a slow page is the likelier to be that one: the
    rate reads high, and the p95 low, by well under 1% with a dozen pages a
    client in the window.)
    """
    share = [urls[i::clients] for i in range(clients)]
    clock: list[float] = []
    barrier = threading.Barrier(clients, action=lambda: clock.append(time.perf_counter()))
    ends: list[list[float]] = [[] for _ in range(clients)]
    fetched = [0] * clients

    def client(index: int) -> None:
        part = share[index]
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        firsts.extend(timed(connection, part[:1], proxied))
        fetched[index] += 1
        barrier.wait(timeout=120)
        until = clock[0] + seconds
        turn = 1
        while True:
            started = time.perf_counter()
            fetch(connection, part[turn % len(part)], proxied)
            ended = time.perf_counter()
            fetched[index] += 1
            if ended > until:
                break
            samples.append((ended - started) * 1000)
            ends[index].append(ended)
            turn += 1
        connection.close()

    threads = [threading.Thread(target=client, args=(index,)) for index in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if any(len(times) < 2 for times in ends):
        raise SystemExit(f"a throughput window of {seconds} s is too short for {clients} clients: make it longer")
    rate = sum((len(times) - 1) / (times[-1] - times[0]) for times in ends)
    return rate, sum(fetched)


def orders(count: int) -> list[list[int]]:
    """Orders of ``count`` targets, one a round in turn, in which each target follows each other one
    equally often (Williams's design: a balanced Latin square, with its mirror images when ``count``
    is odd).  Merely rotating one order would leave each target behind the same one every round."""
    first, low, high = [0], 1, count - 1
    while low <= high:
        first.append(low)
        low += 1
        if low <= high:
            first.append(high)
            high -= 1
    rows = [[(target + shift) % count for target in first] for shift in range(count)]
    return rows + [row[::-1] for row in rows] if count % 2 else rows


def settle(pids: list[int], quiet: float = 0.01, most: float = 10.0) -> None:
    """Wait until the servers and proxies are quiet (under ``quiet`` s of CPU in a 0.1 s window), at most
    ``most`` seconds: no process still busy after many clients (closing their connections, collecting
    garbage) shares the cores with the next target's one-client pages."""
    until = time.monotonic() + most
    while time.monotonic() < until:
        before = sum(sum(cpu_seconds(pid)) for pid in pids)
        time.sleep(0.1)
        if sum(sum(cpu_seconds(pid)) for pid in pids) - before < quiet:
            return


def cpu_seconds(pid: int) -> tuple[float, float]:
    """CPU time (user + system) of a process and of its live children (the rewriting workers)."""
    tick = os.sysconf("SC_CLK_TCK")

    def used(path: str) -> tuple[int, float]:
        with open(path) as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return int(fields[1]), (int(fields[11]) + int(fields[12])) / tick  # ppid, utime + stime

    own = used(f"/proc/{pid}/stat")[1]
    children = 0.0
    for entry in os.listdir("/proc"):
        if entry.isdigit() and entry != str(pid):
            try:
                parent, seconds = used(f"/proc/{entry}/stat")
            except (OSError, IndexError, ValueError):
                continue
            if parent == pid:
                children += seconds
    return own, children


def target(text: str, shown: bool) -> str:
    return f" (target {text})" if shown else ""


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def start_proxies(
    store: str, variants: list[tuple[str, list[str]]], control: bool = False, quiet: bool = False
) -> tuple[list, list[tuple[str, int, bool]]]:
    """Plain mitmdump (twice with ``control``; once more with its connection lines off with ``quiet``), then
    pagerank-proxy with each variant's extra mitmdump arguments, listening: their processes, and their
    targets (label, port, proxied)."""
    mitmdump = os.path.join(os.path.dirname(sys.executable), "mitmdump")
    processes, targets = [], []
    plain = {"mitmdump": [mitmdump], CONTROL: [mitmdump], QUIET: [sys.executable, "-c", QUIET_MITMDUMP]}
    for label in ["mitmdump"] + [CONTROL] * control + [QUIET] * quiet:
        port = free_port()
        processes.append(
            subprocess.Popen(
                [*plain[label], "--listen-host", "127.0.0.1", "-p", str(port), "-q"],
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        targets.append((label, port, True))
    for label, extra in variants:
        port = free_port()
        command = [sys.executable, "-m", "proxy_addon.cli", "--store", store, "--port", str(port), "--", "-q"]
        processes.append(
            subprocess.Popen(command + extra, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        )
        targets.append((label, port, True))
    for _, port, _ in targets:
        wait(port)
    return processes, targets


def first_visits(store: str, variants: list[tuple[str, list[str]]], pages: list[str], passes: int) -> None:
    """Each pass: the proxies started afresh, every page once through each in turn (:func:`interleaved`)."""
    ratios: dict[str, list[float]] = {label: [] for label, _ in variants}
    for turn in range(passes):
        processes, targets = start_proxies(store, variants)
        try:
            settle([process.pid for process in processes])  # started: the ranking read, the workers up
            samples = interleaved(targets, pages, turn)
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(timeout=10)
        plain = pct(samples["mitmdump"], 0.5)
        for label in ratios:
            ratios[label].append(pct(samples[label], 0.5) / plain)
        print(
            f"first visits, pass {turn + 1}: p50 mitmdump {plain:.2f} ms, "
            + ", ".join(f"{label} {ratios[label][-1]:.3f}x" for label in ratios),
            flush=True,
        )
    for label, values in ratios.items():
        print(
            f"{label} / plain mitmdump, first visits page by page in turn: p50 median of {passes} passes "
            f"{statistics.median(values):.3f}x ({', '.join(f'{value:.3f}' for value in values)})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--throughput-seconds",
        type=float,
        default=3.0,
        help="length of each round's throughput window, once every client is connected (default 3)",
    )
    parser.add_argument("--clients", type=int, default=4, help="clients in the throughput runs (default 4)")
    parser.add_argument(
        "--thread-too",
        action="store_true",
        help="also pagerank-proxy with pagerank_workers=0 (pages rewritten in a thread of mitmproxy's)",
    )
    parser.add_argument(
        "--workers-too",
        action="store_true",
        help="also pagerank-proxy with pagerank_inline_bytes=0 (every page to the workers, even one alone)",
    )
    parser.add_argument(
        "--record-too",
        action="store_true",
        help="also pagerank-proxy recording every page it annotates (--record, with --record-warc)",
    )
    parser.add_argument(
        "--first-visits",
        type=int,
        default=0,
        metavar="PASSES",
        help="instead of the rounds: first visits alone, the proxies started afresh for each of PASSES passes",
    )
    parser.add_argument(
        "--keep-alive-origin",
        action="store_true",
        help="an origin that speaks HTTP/1.1 and keeps connections open (default: HTTP/1.0, a connection a request)",
    )
    parser.add_argument(
        "--control",
        action="store_true",
        help="also a second plain mitmdump, measured like the others: the noise between two processes of one code",
    )
    parser.add_argument(
        "--like-for-like",
        action="store_true",
        help="also plain mitmdump that makes no connection lines under -q, as pagerank-proxy: the addon's own cost",
    )
    args = parser.parse_args()
    names = sorted(  # the ~40 KB pages, as paths in the site
        os.path.relpath(os.path.join(folder, name), DOC)
        for folder, _, files in os.walk(DOC)
        for name in files
        if name.endswith(".html") and 30_000 <= os.path.getsize(os.path.join(folder, name)) <= 50_000
    )
    if args.first_visits and (args.control or args.like_for_like):
        parser.error("--first-visits compares pagerank-proxy with plain mitmdump only: no --control, --like-for-like")
    if args.clients > len(names):
        parser.error(f"--clients {args.clients}: more than the {len(names)} pages they share")
    work = tempfile.mkdtemp(prefix="bench-proxy-")
    processes = []
    try:
        origin, origin_port = serve_process(DOC, keep_alive=args.keep_alive_origin)
        print(f"origin: {'HTTP/1.1, connections kept open' if args.keep_alive_origin else 'HTTP/1.0'}", flush=True)
        processes.append(origin)
        site = f"http://127.0.0.1:{origin_port}/"
        warc = os.path.join(work, "site.warc.gz")
        store = os.path.join(work, "site.db")
        crawl(site, warc)
        subprocess.run(
            [sys.executable, "-m", "rankstore", "build", warc, "--store", store, "-q"],
            check=True,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
        )
        for level in ("page", "host", "site"):  # ranked at every level, as a store is since issue 32
            subprocess.run(
                [sys.executable, "-m", "rankstore", "rank", "--level", level, "--store", store, "-q"],
                check=True,
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
            )
        variants: list[tuple[str, list[str]]] = [("pagerank-proxy", [])]  # label, mitmdump's extra arguments
        if args.thread_too:
            variants.append(("thread", ["--set", "pagerank_workers=0"]))
        if args.workers_too:
            variants.append(("workers only", ["--set", "pagerank_inline_bytes=0"]))
        if args.record_too:
            record = os.path.join(work, "record")
            variants.append(("recording", ["--set", f"pagerank_record={record}", "--set", "pagerank_record_warc=true"]))
        pages = [site + name for name in names]
        if args.first_visits:
            first_visits(store, variants, pages, args.first_visits)
            return
        started, proxies = start_proxies(store, variants, args.control, args.like_for_like)
        processes += started
        ours_port = next(port for label, port, _ in proxies if label == "pagerank-proxy")
        functions = site + "library/functions.html"
        body = latencies(ours_port, [functions], True)  # warm up every path once
        for port, proxied in [(origin_port, False)] + [(port, True) for _, port, _ in proxies]:
            latencies(port, pages[:20], proxied)
        proxied_body = fetch(http.client.HTTPConnection("127.0.0.1", ours_port), functions, True)
        mean = statistics.mean(os.path.getsize(DOC + "/" + p[len(site) :]) for p in pages) / 1024
        print(
            f"{len(pages)} pages of 30-50 KB (mean {mean:.0f} KB); "
            f"library/functions.html {os.path.getsize(DOC + '/library/functions.html') / 1024:.0f} KB -> "
            f"{len(proxied_body) / 1024:.0f} KB through pagerank-proxy, "
            f"{proxied_body.count(b'<span data-pagerank-bar')} bars"
        )
        del body
        # Rounds alternate between them, so that this VM's drifts in speed touch each alike.
        targets = [("direct", origin_port, False)] + proxies
        pids = {label: process.pid for (label, _, _), process in zip(targets, processes)}
        results: dict[str, tuple[list, list, list]] = {label: ([], [], []) for label, _, _ in targets}
        loaded: dict[str, list[float]] = {label: [] for label, _, _ in targets}  # latencies under load
        opening: dict[str, list[float]] = {label: [] for label, _, _ in targets}  # each client's first page
        paced: dict[str, list[float]] = {label: [] for label, _, _ in targets}  # page by page, in turn
        cpu = {label: [0.0, 0.0, 0] for label, _, _ in targets}  # proxy process s, its workers s, pages
        rounds = orders(len(targets))
        for turn in range(args.rounds):
            for label, port, proxied in [targets[index] for index in rounds[turn % len(rounds)]]:
                small, big, rates = results[label]
                small += latencies(port, pages, proxied)
                big += latencies(port, [functions] * 20, proxied)
                before = cpu_seconds(pids[label])
                rate, fetched = throughput(
                    port, pages, proxied, args.clients, args.throughput_seconds, loaded[label], opening[label]
                )
                rates.append(rate)
                after = cpu_seconds(pids[label])
                cpu[label][0] += after[0] - before[0]
                cpu[label][1] += after[1] - before[1]
                cpu[label][2] += fetched  # the CPU counted covers the first pages too
                settle(list(pids.values()))
            for label, samples in interleaved(targets, pages, turn).items():
                paced[label] += samples
        for label, (small, big, rates) in results.items():
            print(
                f"{label:>15}: ~40 KB p50 {pct(small, 0.5):6.2f} ms p95 {pct(small, 0.95):6.2f} ms "
                f"p99 {pct(small, 0.99):6.2f} ms | "
                f"functions.html p50 {pct(big, 0.5):6.2f} ms p99 {pct(big, 0.99):6.2f} ms | "
                f"{statistics.median(rates):6.0f} pages/s ({args.clients} clients, "
                f"p50 {pct(loaded[label], 0.5):.1f} ms "
                f"p95 {pct(loaded[label], 0.95):.1f} ms, a connection's first page p95 "
                f"{pct(opening[label], 0.95):.1f} ms; median of {len(rates)} rounds: "
                f"{', '.join(f'{rate:.0f}' for rate in rates)})"
            )
        for label in [label for label, _, _ in targets if label != "direct"]:
            own, workers, count = cpu[label]
            print(
                f"{label:>15}: CPU per page during the throughput runs: proxy process {own / count * 1000:.2f} ms"
                + (f", rewriting workers {workers / count * 1000:.2f} ms" if workers else "")
            )
        # round 1 past the warm-up's 20 pages: each page's first visit (no mark, no panel kept yet)
        theirs, mine = (pct(results[label][0][20 : len(pages)], 0.5) for label in ("mitmdump", "pagerank-proxy"))
        print(
            f"first visits ({len(pages) - 20} pages, round 1): p50 mitmdump {theirs:.2f} ms, pagerank-proxy "
            f"{mine:.2f} ms ({mine / theirs:.2f}x); the p50 and p95 below pool every round, revisits included"
        )
        print(
            "one client, page by page in turn (every page visited before): p50 "
            + ", ".join(f"{label} {pct(samples, 0.5):.2f} ms" for label, samples in paced.items())
        )

        def compared(label: str, base: str, shown: bool) -> str:
            ours, theirs = results[label], results[base]
            loaded_shown = shown and args.clients >= 50  # the load targets are for 50 clients
            ratios = [mine / yours for mine, yours in zip(ours[2], theirs[2])]
            return (
                f"one client, ~40 KB pages: p50 "
                f"{pct(ours[0], 0.5) / pct(theirs[0], 0.5):.3f}x{target('<= 1.15x', shown)}, p95 "
                f"{pct(ours[0], 0.95) / pct(theirs[0], 0.95):.3f}x{target('<= 1.30x', shown)}; {args.clients} clients: "
                f"throughput {statistics.median(ours[2]) / statistics.median(theirs[2]):.2f}x (medians"
                f"{'; target >= 0.9x' if loaded_shown else ''}; "
                f"rounds' ratios {', '.join(f'{ratio:.2f}' for ratio in ratios)}), p95 "
                f"{pct(loaded[label], 0.95) / pct(loaded[base], 0.95):.2f}x{target('<= 1.3x', loaded_shown)}; "
                f"page by page in turn: p50 {pct(paced[label], 0.5) / pct(paced[base], 0.5):.3f}x, "
                f"p95 {pct(paced[label], 0.95) / pct(paced[base], 0.95):.3f}x"
            )

        for label, _, _ in targets[2:]:  # the targets are against mitmdump as it ships
            print(f"{label} / plain mitmdump, {compared(label, 'mitmdump', label not in (CONTROL, QUIET))}")
        if args.like_for_like:
            print(f"pagerank-proxy / {QUIET} (the addon's own cost), {compared('pagerank-proxy', QUIET, False)}")
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=10)


if __name__ == "__main__":
    main()
