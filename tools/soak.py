#!/usr/bin/env python3
"""Soak: many clients and hostile origins through one pagerank-proxy, for minutes (not part of the tests).

    .venv/bin/python tools/soak.py [--clients 50] [--minutes 10]

python3.11-doc is served on 127.0.0.1, crawled with wget, built and ranked;
pagerank-proxy runs in front of it.  Phase 1: a normal client alone (its p95
is the reference).  Phase 2: the same client beside each hostile origin in
turn (a gzip bomb, an origin that stalls after its headers, four pages of
200,000 links at once); its p95 must stay within 2x.  Phase 3: ``--clients``
clients for ``--minutes`` minutes: errors counted, the proxy's RSS sampled
(growth after the first minute under 10%).  ``--plain`` runs the same through
plain mitmdump, for mitmproxy's own share.  Loops are bounded in count and time.

The normal client is the only thread of this process while it is timed: the
docs site, the hostile origin and the hostile clients each run in a process of
their own, so that the client's latency is the proxy's and not a wait for a
GIL that the hostile clients' 6 MB reads hold.
"""

from __future__ import annotations

import argparse
import http.server
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from sitecrawl import crawl, serve_apart  # noqa: E402

DOC = "/usr/share/doc/python3.11/html"


def _hostile_pages() -> dict[str, tuple[bytes, dict[str, str], float]]:
    """path -> (body, headers, seconds to stall after the headers)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    bomb = b"".join(compressor.compress(b"a" * (1 << 20)) for _ in range(1500)) + compressor.flush()
    html = "text/html; charset=utf-8"
    links = b"<!doctype html><body>" + b"".join(b'<a href="/p%d">p</a>' % i for i in range(200_000))
    return {
        "/bomb": (bomb, {"Content-Type": html, "Content-Encoding": "gzip"}, 0.0),
        "/stall": (b"<!doctype html><p>", {"Content-Type": html}, 120.0),
        "/links": (links, {"Content-Type": html}, 0.0),
    }


def _origin_server(pages) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the base class's name
            body, headers, stall = pages[self.path]
            self.send_response(200)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body) + (1000 if stall else 0)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            if stall:
                time.sleep(stall)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    return server


def _hostile_origin(connection) -> None:
    """The hostile origin, run in a process of its own: it sends its base URL, then serves until killed."""
    server = _origin_server(_hostile_pages())
    connection.send(f"http://127.0.0.1:{server.server_address[1]}")
    server.serve_forever()


def _attack(port: int, url: str, count: int, seconds: float, started) -> None:
    """``count`` hostile clients fetching ``url`` for ``seconds``, in the process this runs in; ``started``
    is set once they are on their way."""
    until = time.monotonic() + seconds
    threads = [threading.Thread(target=_client, args=(port, [url], until, [], [])) for _ in range(count)]
    for thread in threads:
        thread.start()
    started.set()
    for thread in threads:
        thread.join(timeout=180)


def _get(port: int, url: str, timeout: float = 120) -> bytes:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{port}"}))
    with opener.open(url, timeout=timeout) as response:
        return response.read()


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith("VmRSS:"))


def _workers_rss(pid: int) -> int:
    """The RSS of the proxy's child processes (its rewriting workers), summed."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                if int(handle.read().rsplit(")", 1)[1].split()[1]) == pid:
                    total += _rss(int(entry))
        except (OSError, ValueError, StopIteration):
            continue
    return total


def _p95(samples: list[float]) -> float:
    return sorted(samples)[int(0.95 * (len(samples) - 1))] * 1000 if samples else float("nan")


def _client(port: int, urls: list[str], until: float, times: list[float], errors: list[str]) -> None:
    k = 0
    while time.monotonic() < until:
        started = time.perf_counter()
        try:
            _get(port, urls[k % len(urls)], timeout=60)
            times.append(time.perf_counter() - started)
        except Exception as error:  # counted, not raised: the soak goes on
            errors.append(f"{type(error).__name__}: {error}")
        k += 1


class _LoggingProxy:
    """pagerank-proxy with its output in a file: a pipe nobody reads fills up after a couple of hundred
    flows' log lines, and then mitmdump's event loop waits on it."""

    def __init__(self, store: str, log: str, plain: bool = False):
        import subprocess

        from test_proxy_e2e import free_port, wait_for_port

        self.port = free_port()
        self.log = open(log, "w")
        mitmdump = os.path.join(os.path.dirname(sys.executable), "mitmdump")
        command = [sys.executable, "-m", "proxy_addon.cli", "--store", store, "--port", str(self.port)]
        self.process = subprocess.Popen(
            [mitmdump, "--listen-host", "127.0.0.1", "-p", str(self.port)] if plain else command,
            cwd=ROOT,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        wait_for_port(self.port, self.process)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=15)
        self.log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--phase-seconds", type=float, default=20, help="length of phases 1 and 2")
    parser.add_argument(
        "--plain", action="store_true", help="the same load through plain mitmdump (no addon): the baseline"
    )
    args = parser.parse_args()
    from click.testing import CliRunner

    from rankstore.cli import cli

    work = tempfile.mkdtemp(prefix="soak-")
    spawn = multiprocessing.get_context("spawn")  # no copy of this process's threads or sockets
    with serve_apart(DOC) as site:
        crawl(site, os.path.join(work, "py.warc.gz"))
        store = os.path.join(work, "py.db")
        for command in (["build", os.path.join(work, "py.warc.gz")], ["rank"]):
            assert CliRunner().invoke(cli, [*command, "--store", store, "-q"]).exit_code == 0
        pages = [
            site + name
            for name in (
                "index.html",
                "library/index.html",
                "library/functions.html",
                "library/stdtypes.html",
                "tutorial/index.html",
            )
        ]
        receiver, sender = spawn.Pipe(duplex=False)
        hostile = spawn.Process(target=_hostile_origin, args=(sender,), daemon=True)
        hostile.start()
        origin = receiver.recv()
        proxy = _LoggingProxy(store, os.path.join(work, "proxy.log"), args.plain)
        try:
            reference: list[float] = []
            errors: list[str] = []
            _client(proxy.port, pages, time.monotonic() + args.phase_seconds, reference, errors)
            print(f"normal client alone: p95 {_p95(reference):.1f} ms, {len(reference)} pages", flush=True)
            for name, count in (("/bomb", 1), ("/stall", 1), ("/links", 4)):
                times: list[float] = []
                errors = []
                started = spawn.Event()
                attack = (proxy.port, origin + name, count, args.phase_seconds, started)
                attackers = spawn.Process(target=_attack, args=attack, daemon=True)
                attackers.start()
                if not started.wait(60):
                    raise SystemExit("soak: the hostile clients did not start")
                until = time.monotonic() + args.phase_seconds
                _client(proxy.port, pages, until, times, errors)
                attackers.join(timeout=180)
                if attackers.is_alive():
                    attackers.kill()
                ratio = _p95(times) / _p95(reference)
                print(
                    f"beside {count} x {name}: p95 {_p95(times):.1f} ms = {ratio:.2f}x alone (target <= 2x), "
                    f"{len(errors)} errors{': ' + errors[0] if errors else ''}, "
                    f"proxy RSS {_rss(proxy.process.pid) / 2**20:.0f} MiB",
                    flush=True,
                )
            times, errors = [], []
            until = time.monotonic() + args.minutes * 60
            clients = [
                threading.Thread(target=_client, args=(proxy.port, pages, until, times, errors))
                for _ in range(args.clients)
            ]
            for thread in clients:
                thread.start()
            samples = []
            while time.monotonic() < until:
                time.sleep(5)
                samples.append((time.monotonic(), _rss(proxy.process.pid), _workers_rss(proxy.process.pid)))
            for thread in clients:
                thread.join(timeout=120)
            start = until - args.minutes * 60 + 60
            after_first = [rss for moment, rss, _ in samples if moment > start] or [rss for _, rss, _ in samples]
            workers = [rss for moment, _, rss in samples if moment > start] or [rss for _, _, rss in samples]
            growth = (after_first[-1] - after_first[0]) / after_first[0] if after_first else 0.0
            workers_growth = (workers[-1] - workers[0]) / workers[0] if workers and workers[0] else 0.0
            print(
                f"{args.clients} clients for {args.minutes:g} min: {len(times):,} pages, {len(errors)} errors, "
                f"p50 {statistics.median(times or [float('nan')]) * 1000:.1f} ms, p95 {_p95(times):.1f} ms, proxy RSS "
                f"{after_first[0] / 2**20:.0f} -> {after_first[-1] / 2**20:.0f} MiB after the first minute "
                f"({growth:+.1%}; target under 10%); its workers {workers[0] / 2**20:.0f} -> "
                f"{workers[-1] / 2**20:.0f} MiB ({workers_growth:+.1%})",
                flush=True,
            )
            for error in sorted(set(errors))[:5]:
                print(f"  error: {error}")
        finally:
            proxy.stop()
            hostile.kill()


if __name__ == "__main__":
    main()
