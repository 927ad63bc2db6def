#!/usr/bin/env python3
"""The proxy's page rewrite, offline: the scanner (C and its Python reference) and the whole annotate.

    .venv/bin/python tools/bench_rewrite.py

On python3.11-doc: every page of 30-50 KB and library/functions.html (284 KB).
Peer: BeautifulSoup (html.parser) finding the same page's links, for scale.
Look-ups answer from a constant, so this measures the rewrite's own CPU; the
store's share is in bench_store.py and the whole path in bench_proxy.py.
Best of 5 passes.
"""

from __future__ import annotations

import os
import sys
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


if __name__ == "__main__":
    main()
