#!/usr/bin/env python3
"""The embedded default: a real local site, crawled, built, ranked, and the proxy in front of it.

Serves Debian's python3.11-doc on 127.0.0.1, crawls it with wget into a
WARC.gz, loads it with `rankstore build`, ranks it with `rankstore rank`,
shows `rankstore info` and the top pages, then starts `pagerank-proxy` on
127.0.0.1:8080 and prints the address to browse, until Ctrl-C.  A site folder
that is not there, or a port another program holds, is said in one line before
anything is crawled (or removed); a step that fails, or a proxy that cannot
start, ends the demo with a non-zero exit.

    .venv/bin/python tools/demo.py [--site DIR] [--work DIR] [--port 8080] [--seconds N]
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sitecrawl import crawl, serve  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Failed(Exception):
    """A step of the demo failed: what to say, in one line."""


def rankstore(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "rankstore", *args], cwd=ROOT, check=False)
    if done.returncode != 0:  # its own error is above
        raise Failed(f"`rankstore {args[0]}` failed (exit {done.returncode})")


def check(site: str, port: int) -> None:
    """What the demo needs, before it crawls or removes anything: the site's folder, and its port free."""
    if not os.path.isdir(site):
        hint = " (apt-get install python3.11-doc)" if site == SITE else ""
        raise Failed(f"--site {site}: no such folder{hint}; give the folder of a static site to serve")
    if not 0 < port < 65536:
        raise Failed(f"--port {port}: not a port (1-65535)")
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as a server binds: past TIME_WAIT
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            raise Failed(
                f"port {port} on 127.0.0.1 is taken ({error.strerror}; an earlier demo's proxy?): "
                "stop what listens there, or choose another with --port"
            ) from error


def start_proxy(command: list[str]) -> tuple[subprocess.Popen, threading.Event]:
    """The proxy, its output passed on line by line; the event is set once it says it listens (a connection
    to the port would not tell: another program may hold it)."""
    proxy = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    listening = threading.Event()

    def relay() -> None:
        assert proxy.stdout is not None
        for line in proxy.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            if line.startswith("pagerank-proxy: listening on"):
                listening.set()

    threading.Thread(target=relay, daemon=True).start()
    return proxy, listening


def wait_until_listening(proxy: subprocess.Popen, listening: threading.Event, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not listening.wait(0.1):
        if proxy.poll() is not None:
            raise Failed(f"the proxy did not start (exit {proxy.returncode}); its error is above")
        if time.monotonic() > deadline:
            raise Failed(f"the proxy did not say it listens within {timeout:.0f} s")


SITE = "/usr/share/doc/python3.11/html"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", default=SITE, help="directory to serve and crawl")
    parser.add_argument("--work", default=os.path.join(ROOT, "demo"), help="where the crawl and the store go")
    parser.add_argument("--port", type=int, default=8080, help="the proxy's port on 127.0.0.1")
    parser.add_argument("--seconds", type=float, help="stop the proxy after this long (default: until Ctrl-C)")
    args = parser.parse_args()
    # stopped by a signal (kill, timeout, the terminal closing) as by Ctrl-C: the proxy and the
    # site's server go too, rather than live on without their parent
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, lambda number, _frame: sys.exit(128 + number))
    try:
        sys.exit(demo(args))
    except Failed as error:
        print(f"demo: {error}", file=sys.stderr, flush=True)
        sys.exit(1)
    except KeyboardInterrupt:
        print("demo: interrupted", file=sys.stderr, flush=True)
        sys.exit(130)


def demo(args: argparse.Namespace) -> int:
    """The demo's steps; the proxy's exit status (0: stopped by Ctrl-C or --seconds)."""
    check(args.site, args.port)
    os.makedirs(args.work, exist_ok=True)
    warc = os.path.join(args.work, "site.warc.gz")
    store = os.path.join(args.work, "rankstore.db")
    for stale in (warc, store, store + "-wal", store + "-shm"):
        if os.path.exists(stale):
            os.remove(stale)
    with serve(args.site) as url:
        print(f"demo: serving {args.site} at {url}; crawling it with wget ...", flush=True)
        try:
            seconds = crawl(url, warc)
        except (RuntimeError, subprocess.SubprocessError) as error:
            raise Failed(f"the crawl failed: {str(error).strip().splitlines()[0]}") from error
        print(f"demo: crawled into {warc} in {seconds:.1f} s", flush=True)
        rankstore("build", warc, "--store", store)
        rankstore("rank", "--store", store, "-q")
        rankstore("info", "--store", store)
        rankstore("top", "--store", store, "-n", "5")
        page = url + "library/functions.html"
        print(f"\ndemo: starting the PageRank proxy on 127.0.0.1:{args.port} ...", flush=True)
        command = [sys.executable, "-m", "proxy_addon.cli", "--store", store, "--port", str(args.port)]
        proxy, listening = start_proxy(command)
        stopped = False
        try:
            wait_until_listening(proxy, listening)
            print(
                f"""demo: the PageRank proxy listens on 127.0.0.1:{args.port}. Browse through it, for example:
    chromium --proxy-server=127.0.0.1:{args.port} --proxy-bypass-list='<-loopback>' {page}
    curl -s -x 127.0.0.1:{args.port} {page} | grep -o '<span data-pagerank-bar' | wc -l
  (that counts the page's bars, the panel's among them: one per link, one on the panel's tab, one per backlink)
  its own pages: http://pagerank.proxy/top  http://pagerank.proxy/search?q=tutorial
                 http://pagerank.proxy/backlinks?url={page}
  (the site stays served at {url} while the proxy runs; Ctrl-C stops both)
""",
                flush=True,
            )
            try:
                proxy.wait(timeout=args.seconds)
            except subprocess.TimeoutExpired:
                stopped = True
        except KeyboardInterrupt:
            stopped = True
        finally:
            proxy.terminate()
            try:
                proxy.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proxy.kill()
        if stopped or proxy.returncode == 0:
            return 0
        raise Failed(f"the proxy stopped with exit {proxy.returncode}; its error is above")


if __name__ == "__main__":
    main()
