#!/usr/bin/env python3
"""The proxy's page rewrite, offline: the scanner (C and its Python reference) and the whole annotate.

    .venv/bin/python tools/bench_rewrite.py

On python3.11-doc: every page of 30-50 KB and library/functions.html (284 KB).
Peer: BeautifulSoup (html.parser) finding the same page's links, for scale.
Look-ups answer from a constant, so this measures the rewrite's own CPU; the
store's share is in bench_store.py and the whole path in bench_proxy.py.
Best of 5 passes.

Then pages of 20,000 and 200,000 distinct links, rewritten as a worker does
(``rewrite_page``, no link budget), each in a fresh process against a store of
the Python docs, its store open and its code warm as a worker's are: URLs never
seen before, looked up in batches, and links/s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
DOC = "/usr/share/doc/python3.11/html"


def best_ms(function, texts: list[str], passes: int = 5) -> float:
    best = float("inf")
    for _ in range(passes):
        started = time.perf_counter()
        for text in texts:
            function(text)
        best = min(best, (time.perf_counter() - started) / len(texts))
    return best * 1000


def main() -> None:
    from bs4 import BeautifulSoup

    from proxy_addon import rewrite

    pages = []
    for folder, _, files in os.walk(DOC):
        for name in sorted(files):
            path = os.path.join(folder, name)
            if name.endswith(".html") and 30_000 <= os.path.getsize(path) <= 50_000:
                pages.append(open(path, encoding="utf-8").read())
    big = [open(os.path.join(DOC, "library", "functions.html"), encoding="utf-8").read()]
    info = rewrite.LinkInfo(1e-5, 50.0, 3, 10, 12)

    def annotate(text: str) -> None:
        rewrite.annotate(text, "http://docs.local/library/page.html", lambda urls: {url: info for url in urls})

    print(f"{len(pages)} pages of 30-50 KB; C scanner built: {rewrite._fastscan is not None}")
    rows = [
        ("scan, C (_fastscan)", rewrite._scan_fast if rewrite._fastscan else None),
        ("scan, Python reference", rewrite._scan_python),
        ("annotate (scan, bars, assembly)", annotate),
        ("BeautifulSoup html.parser, a[href]", lambda text: BeautifulSoup(text, "html.parser").find_all("a")),
    ]
    for label, function in rows:
        if function is None:
            continue
        print(
            f"{label:>36}: ~40 KB {best_ms(function, pages):7.3f} ms/page | "
            f"functions.html {best_ms(function, big):7.3f} ms"
        )


_BIG_PAGE = """
import sys, time
sys.path.insert(0, {root!r})
from proxy_addon.worker import rewrite_page
# as a worker is when the page comes: its store open, its code warm; the page's URLs never seen before
rewrite_page({store!r}, "pagerank", 10, b"<!doctype html><a href=/index.html>i</a>", "text/html",
             "http://127.0.0.1:8000/warm.html", None, 1 << 20, 0)
count = {count}
body = ("<!doctype html><title>t</title><body>"
        + "".join(f'<a href="/library/p{{i}}.html">link {{i}}</a>\\n' for i in range(count))).encode()
started = time.perf_counter()
done = rewrite_page({store!r}, "pagerank", 10, body, "text/html", "http://127.0.0.1:8000/big.html", None, 1 << 30, 0)
seconds = time.perf_counter() - started
print(f"{{count:>9,}} distinct links, {{len(body) / 2**20:.1f}} MiB: {{seconds:.2f}} s cold, "
      f"{{count / seconds:,.0f}} links/s, {{done[1]:,}} bars")
"""


def big_pages() -> None:
    with tempfile.TemporaryDirectory() as work:
        store = os.path.join(work, "docs.db")
        for command in (
            ["build", DOC, "--base-url", "http://127.0.0.1:8000/", "--store", store, "-q"],
            ["rank", "--store", store, "-q"],
        ):
            subprocess.run([sys.executable, "-m", "rankstore", *command], cwd=ROOT, check=True, capture_output=True)
        for count in (20_000, 200_000):
            code = _BIG_PAGE.format(root=ROOT, count=count, store=store)
            done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
            print(done.stdout, end="")


if __name__ == "__main__":
    main()
    big_pages()
