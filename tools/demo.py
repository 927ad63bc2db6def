#!/usr/bin/env python3
"""The embedded default: a real local site, crawled, built, ranked, and the proxy in front of it.

Serves Debian's python3.11-doc on 127.0.0.1, crawls it with wget into a
WARC.gz, loads it with `rankstore build`, ranks it with `rankstore rank`,
shows `rankstore info` and the top pages, then starts `pagerank-proxy` on
127.0.0.1:8080 and prints the address to browse, until Ctrl-C.

    .venv/bin/python tools/demo.py [--site DIR] [--work DIR] [--port 8080] [--seconds N]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sitecrawl import crawl, serve  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rankstore(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "rankstore", *args], check=True, cwd=ROOT)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", default="/usr/share/doc/python3.11/html", help="directory to serve and crawl")
    parser.add_argument("--work", default=os.path.join(ROOT, "demo"), help="where the crawl and the store go")
    parser.add_argument("--port", type=int, default=8080, help="the proxy's port on 127.0.0.1")
    parser.add_argument("--seconds", type=float, help="stop the proxy after this long (default: until Ctrl-C)")
    args = parser.parse_args()
    # stopped by a signal (kill, timeout, the terminal closing) as by Ctrl-C: the proxy and the
    # site's server go too, rather than live on without their parent
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, lambda number, _frame: sys.exit(128 + number))
    os.makedirs(args.work, exist_ok=True)
    warc = os.path.join(args.work, "site.warc.gz")
    store = os.path.join(args.work, "rankstore.db")
    for stale in (warc, store, store + "-wal", store + "-shm"):
        if os.path.exists(stale):
            os.remove(stale)
    with serve(args.site) as url:
        print(f"demo: serving {args.site} at {url}; crawling it with wget ...", flush=True)
        seconds = crawl(url, warc)
        print(f"demo: crawled into {warc} in {seconds:.1f} s", flush=True)
        rankstore("build", warc, "--store", store)
        rankstore("rank", "--store", store, "-q")
        rankstore("info", "--store", store)
        rankstore("top", "--store", store, "-n", "5")
        page = url + "library/functions.html"
        print(
            f"""
demo: the PageRank proxy is starting on 127.0.0.1:{args.port}. Browse through it, for example:
    chromium --proxy-server=127.0.0.1:{args.port} --proxy-bypass-list='<-loopback>' {page}
    curl -s -x 127.0.0.1:{args.port} {page} | grep -o '<span data-pagerank-bar' | wc -l
  (that counts the page's bars, the panel's among them: one per link, one on the panel's tab, one per backlink)
  its own pages: http://pagerank.proxy/top  http://pagerank.proxy/search?q=tutorial
                 http://pagerank.proxy/backlinks?url={page}
  (the site stays served at {url} while the proxy runs; Ctrl-C stops both)
""",
            flush=True,
        )
        command = [sys.executable, "-m", "proxy_addon.cli", "--store", store, "--port", str(args.port)]
        proxy = subprocess.Popen(command, cwd=ROOT)
        try:
            proxy.wait(timeout=args.seconds)
        except (subprocess.TimeoutExpired, KeyboardInterrupt):
            pass
        finally:
            proxy.terminate()
            try:
                proxy.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proxy.kill()


if __name__ == "__main__":
    main()
