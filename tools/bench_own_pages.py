#!/usr/bin/env python3
"""The own pages' whole-host and whole-site views and histories through a real pagerank-proxy on loopback: p50
and p95, idle and under load.

    .venv/bin/python tools/bench_own_pages.py --store /work/rustdoc15.db --rounds 10 --load 2

The views the panel and /backlinks link to for a whole host (the host with
the most pages, or the one --host names): its referring hosts
(``/backlinks?url=H&host=1&group=host``, the panel's "Backlinks of the whole
host"), its backlinks by PageRank and by contribution (``&host=1``), and
``/page?url=`` for a page of it the store lacks (its host's and site's
panels); its site's referring sites and backlinks (``/backlinks?site=S``); and
the history (``/history``) of the store's most-linked page, of the host and of
the site.  Each round starts a proxy afresh and asks each view twice: cold
(the proxy's first read of the store's arrays for it, and nothing kept) and
again (warm).  The store's work for a request has the proxy's deadline
(``pages.QUERY_DEADLINE``); a 503 is counted, its time too.

``--load N`` runs the rounds again beside N busy Python processes (each a
bounded loop, ended with the rounds), as on a machine shared with other work.

``--drop-caches`` (root) empties the kernel's page cache before each round, so
that "cold" is a cold disk too, as a store the kernel has let go of since
(a large store on a machine whose page cache is kept small) is read.
``--settled`` asks the views only once the proxy has started (its processes
quiet: its workers up, its ranking read), and empties the cache then: a view
asked in a proxy that has been serving, from a cold disk:

    sudo .venv/bin/python tools/bench_own_pages.py --store /work/paper15.db --rounds 5 --drop-caches --settled

    .venv/bin/python tools/bench_own_pages.py --store /work/paper15.db --rounds 3 --load 2
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
import time
from dataclasses import dataclass, field
from urllib.parse import urlencode

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_proxy import settle  # noqa: E402

BUSY = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Proxy:
    """pagerank-proxy on a free port of loopback, up once its banner says it serves (ranking read)."""

    def __init__(self, store: str) -> None:
        self.port = free_port()
        self.output = tempfile.TemporaryFile("w+")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "proxy_addon.cli", "--store", store, "--port", str(self.port)],
            cwd=ROOT,
            stdout=self.output,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and self.process.poll() is None:
            self.output.flush()
            self.output.seek(0)
            if "(ranking " in self.output.read():
                return
            time.sleep(0.1)
        self.stop()
        raise SystemExit("pagerank-proxy did not start: " + self.said()[-500:])

    def said(self) -> str:
        self.output.seek(0)
        return self.output.read()

    def get(self, path: str, params: dict[str, str]) -> tuple[int, float]:
        """(status, seconds) of one GET of an own page, on a connection of its own."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        started = time.perf_counter()
        connection.request("GET", f"http://pagerank.proxy{path}?{urlencode(params)}")
        answer = connection.getresponse()
        answer.read()
        took = time.perf_counter() - started
        connection.close()
        return answer.status, took

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def views(store_path: str, host: str | None) -> tuple[str, list[tuple[str, str, dict[str, str]]]]:
    """(host, [(label, path, params)]) of the views measured: of ``host``, else of the host with the most pages,
    or where every host has one page (a host graph), of the host whose page has the most backlinks."""
    import numpy as np

    from rankstore.store import Store
    from rankstore.urls import host_of, site_of

    with Store(store_path, readonly=True) as store:
        hosts = store.hosts.page_hosts()
        if host is None:
            sizes = np.bincount(hosts)
            sizes[0] = 0  # pages not numbered yet
            number = int(np.argmax(sizes))
            if sizes[number] == 1:
                arrays = store.rankings.ranking_arrays(store.rankings.ranking_head()[0])
                number = int(hosts[int(np.argmax(arrays.inlinks))])
            host = store.hosts.host_names([number])[number]
        page = int(store.hosts.pages_of_host(store.hosts.host_id(host))[0]) + 1
        url = store.pages.urls_of([page])[page]
        arrays = store.rankings.ranking_arrays(store.rankings.ranking_head()[0], votes=False)
        best = int(np.argmax(arrays.inlinks)) + 1  # the most-linked page: the longest history to read
        most_linked = store.pages.urls_of([best])[best]
    assert host_of(url) == host
    scheme = url.partition("://")[0]
    site = site_of(host)
    return host, [
        ("a site's referring sites (site=S&group=site)", "/backlinks", {"site": site, "group": "site"}),
        ("a site's backlinks (site=S)", "/backlinks", {"site": site}),
        ("the most-linked page's history", "/history", {"url": most_linked}),
        ("the host's history (host=1)", "/history", {"url": host, "host": "1"}),
        ("the site's history (site=S)", "/history", {"site": site}),
        ("referring hosts (host=1&group=host)", "/backlinks", {"url": host, "host": "1", "group": "host"}),
        ("the same by contribution", "/backlinks", {"url": host, "host": "1", "group": "host", "sort": "contribution"}),
        ("backlinks of the host (host=1)", "/backlinks", {"url": host, "host": "1"}),
        ("the same by contribution", "/backlinks", {"url": host, "host": "1", "sort": "contribution"}),
        ("/page of a page not in the store", "/page", {"url": f"{scheme}://{host}/no-such-page-of-the-bench.html"}),
    ]


@dataclass
class Timings:
    """One view's answers over the rounds."""

    cold: list[float] = field(default_factory=list)  # seconds, the first ask of a fresh proxy
    warm: list[float] = field(default_factory=list)  # seconds, asked again
    statuses: list[int] = field(default_factory=list)


def rounds(store: str, measured, count: int, drop: bool = False, settled: bool = False) -> list[Timings]:
    """Each view's timings over ``count`` rounds, a fresh proxy each (the page cache emptied first: ``drop``;
    once the proxy is quiet: ``settled``)."""
    found = [Timings() for _ in measured]
    for _ in range(count):
        if drop and not settled:
            drop_caches()
        proxy = Proxy(store)
        if settled:
            settle([proxy.process.pid], most=30.0)
            if drop:
                drop_caches()
        try:
            for timings, (_, path, params) in zip(found, measured):
                for times in (timings.cold, timings.warm):
                    status, took = proxy.get(path, params)
                    times.append(took)
                    timings.statuses.append(status)
        finally:
            proxy.stop()
    return found


def drop_caches() -> None:
    """The kernel's page cache emptied (what is dirty written first)."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as control:
        control.write("1\n")


def pct(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]


def report(title: str, measured, found: list[Timings]) -> None:
    print(f"{title}:")
    for (label, _, _), timings in zip(measured, found):
        cold, warm, statuses = timings.cold, timings.warm, timings.statuses
        bad = sum(status != 200 for status in statuses)
        print(
            f"  {label:<38} cold p50 {statistics.median(cold):.3f} s, p95 {pct(cold, 0.95):.3f}; "
            f"warm p50 {statistics.median(warm):.3f} s, p95 {pct(warm, 0.95):.3f}"
            + (f"; {bad} of {len(statuses)} not 200 ({sorted(set(statuses))})" if bad else "")
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", required=True)
    parser.add_argument("--host", help="the host whose views are asked (default: the one with the most pages)")
    parser.add_argument("--rounds", type=int, default=10, help="proxies started, each asked every view twice")
    parser.add_argument("--load", type=int, default=0, help="then again beside N busy processes")
    parser.add_argument(
        "--drop-caches", action="store_true", help="empty the page cache before each round (root): a cold disk"
    )
    parser.add_argument(
        "--settled", action="store_true", help="ask the views once the proxy is quiet (started, workers up)"
    )
    args = parser.parse_args()
    if args.drop_caches and not os.access("/proc/sys/vm/drop_caches", os.W_OK):
        parser.error("--drop-caches: /proc/sys/vm/drop_caches is not writable here (run as root)")
    from proxy_addon.pages import QUERY_DEADLINE

    host, measured = views(args.store, args.host)
    print(f"{args.store}: host {host}; the deadline {QUERY_DEADLINE:g} s; load average {os.getloadavg()[0]:.2f}")
    cold = ", the page cache emptied before each round" if args.drop_caches else ""
    cold += ", each proxy quiet before its first view" if args.settled else ""
    report(f"idle{cold}", measured, rounds(args.store, measured, args.rounds, args.drop_caches, args.settled))
    if args.load > 0:
        busy = [
            subprocess.Popen([sys.executable, "-c", BUSY.format(seconds=3600)]) for _ in range(args.load)
        ]  # ended below, at the latest in an hour
        try:
            time.sleep(1)
            found = rounds(args.store, measured, args.rounds, args.drop_caches, args.settled)
        finally:
            for process in busy:
                process.terminate()
                process.wait()
        report(f"beside {args.load} busy processes{cold}", measured, found)


if __name__ == "__main__":
    main()
