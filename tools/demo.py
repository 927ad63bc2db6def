#!/usr/bin/env python3
"""The embedded default: crawl a real local site, build the store, show it.

Serves Debian's python3.11-doc on 127.0.0.1, crawls it with wget into a
WARC.gz, loads it with `rankstore build` and prints `rankstore info`.

    .venv/bin/python tools/demo.py [--site DIR] [--work DIR]
"""

from __future__ import annotations

import argparse
import os
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
    args = parser.parse_args()
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
        rankstore("info", "--store", store)


if __name__ == "__main__":
    main()
