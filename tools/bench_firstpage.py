"""The first page through a freshly started proxy, and the memory of its process tree, beside plain mitmdump.

    .venv/bin/python tools/bench_firstpage.py --store /work/paper15.db
    .venv/bin/python tools/bench_firstpage.py --store /work/hosts6m.db --runs 5 --workers 4

Pages of --links links (1,000) to nodes of the store are served on 127.0.0.1:
to its pages (a host graph's hosts are root pages), else to its hosts, else to
its sites (``https://NAME/``), each page a different random draw.  Each run
starts plain ``mitmdump -q`` and ``pagerank-proxy --store STORE`` in turn (the
order alternates from run to run) and times, from the moment the process is
started, until the first page has come back whole through it (a client that
retries the connection every 10 ms until the proxy listens); then --pages more
pages, one after another; then the proportional set size (PSS, from
``/proc/PID/smaps_rollup``) of the whole process tree.  pagerank-proxy's pages
must carry a bar on every link, and a sample of the bars' scores is checked
against the store, or the run fails.  Loops are bounded in count and time.

--worker-start also times a rewriting worker alone (``python -m proxy_addon.worker``, as the proxy starts it):
from its start until it says it takes pages, and until it has answered its first page.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rankstore.store import Store  # noqa: E402

BIN = Path(sys.executable).parent
_SCORE = re.compile(r'<svg data-pagerank="([^"]*)"')
# a link of the page and its bar, before its </a> (the panel's bars are elsewhere)
_LINK_BAR = re.compile(
    r'<a href="([^"]+)">[^<]*<span data-pagerank-bar[^>]*><template[^>]*><svg data-pagerank="([^"]*)"'
)


@dataclass
class Run:
    target: str
    first: float  # seconds from the process's start to the first page whole
    next_ms: list[float]  # the later pages, each
    pss_mib: float  # the process tree's PSS after the pages
    processes: int


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def names_of(store_path: str, count: int, pages: int, seed: int) -> tuple[str, list[list[str]]]:
    """The level linked to and ``pages`` lists of ``count`` URLs drawn from it."""
    rng = random.Random(seed)
    with Store(store_path, readonly=True) as store:
        counts = {
            "page": store.pages.last_page_id(),
            "host": store.hosts.host_count(),
            "site": store.sites.site_count(),
        }
        level = next((level for level, count in counts.items() if count), "site")
        top = counts[level]
        out = []
        for _ in range(pages):
            ids = rng.sample(range(1, top + 1), min(count, top))
            if level == "page":
                out.append([row[0] for row in store.pages.pages_by_id("url", ids)])
            else:
                names = store.hosts.host_names(ids) if level == "host" else store.sites.site_names(ids)
                out.append([f"https://{names[number]}/" for number in ids if number in names])
    return level, out


def write_pages(folder: Path, lists: list[list[str]]) -> None:
    for number, urls in enumerate(lists):
        links = "\n".join(f'<li><a href="{url}">{url}</a></li>' for url in urls)
        (folder / f"p{number}.html").write_text(
            f"<!doctype html><html><head><meta charset=utf-8><title>p{number}</title></head>"
            f"<body><h1>Links</h1><ul>\n{links}\n</ul></body></html>"
        )


def tree_pss_mib(pid: int) -> tuple[float, int]:
    """(PSS in MiB, processes) of ``pid`` and every descendant."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry))
    total, count, todo = 0, 0, [pid]
    while todo:
        current = todo.pop()
        try:
            for line in Path(f"/proc/{current}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
                    count += 1
        except OSError:
            pass
        todo.extend(children.get(current, []))
    return total / 1024, count


def fetch(opener: urllib.request.OpenerDirector, url: str, deadline: float) -> bytes:
    """The page through the proxy, retrying the connection every 10 ms until it listens (or ``deadline``)."""
    while True:
        try:
            with opener.open(url, timeout=max(deadline - time.monotonic(), 1)) as response:
                return response.read()
        except (urllib.error.URLError, ConnectionError) as error:
            reason = getattr(error, "reason", error)
            if not isinstance(reason, ConnectionRefusedError) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def check_bars(store_path: str, body: str, level: str, expected_links: int) -> None:
    """Every link has a bar, and a sample of the bars' scores is the store's."""
    scores = _SCORE.findall(body)
    if len(scores) < expected_links:
        raise SystemExit(f"pagerank-proxy annotated {len(scores)} of {expected_links} links")
    if level != "page":
        return
    pairs = _LINK_BAR.findall(body)
    if len(pairs) < expected_links:
        raise SystemExit(f"{len(pairs)} of {expected_links} links have their bar where expected")
    with Store(store_path, readonly=True) as store:
        sample = random.Random(1).sample(pairs, min(20, len(pairs)))
        rows = store.queries.lookup([href for href, _ in sample])
        for href, said in sample:
            row = rows.get(href)
            if row is not None and row["pagerank"] is not None and float(said) != row["pagerank"]:
                raise SystemExit(f"{href}: the bar says {said}, the store {row['pagerank']!r}")


def one_run(target: str, args, origin: str, level: str, pages: int) -> Run:
    port = free_port()
    if target == "mitmdump":
        command = [str(BIN / "mitmdump"), "-q", "--listen-host", "127.0.0.1", "-p", str(port)]
    else:
        command = [str(BIN / "pagerank-proxy"), "--store", args.store, "--port", str(port)]
        command += ["--", "--set", f"pagerank_workers={args.workers}"] if args.workers is not None else []
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{port}"}))
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        body = fetch(opener, f"{origin}/p0.html", started + args.timeout)
        first = time.monotonic() - started
        if target != "mitmdump":
            check_bars(args.store, body.decode(), level, args.links)
        later = []
        for number in range(1, pages + 1):
            begun = time.monotonic()
            body = fetch(opener, f"{origin}/p{number}.html", begun + args.timeout)
            later.append((time.monotonic() - begun) * 1000)
            if target != "mitmdump" and number == pages:
                check_bars(args.store, body.decode(), level, args.links)
        time.sleep(0.2)  # what a worker still does after its page
        pss, count = tree_pss_mib(process.pid)
        return Run(target, first, later, pss, count)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def worker_start(store: str, page: bytes, url: str) -> tuple[float, float]:
    """(seconds until a fresh worker says it takes pages, until it has answered a first page)."""
    from proxy_addon.jobs import HEADER, STARTED, PageJob, page_message, read_answer

    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "proxy_addon.worker", store, "pagerank", "10", "", ""],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        if process.stdout.read(len(STARTED)) != STARTED:
            raise SystemExit("the worker did not say it had started")
        ready = time.monotonic() - started
        process.stdin.write(page_message(PageJob("text/html; charset=utf-8", url), page))
        process.stdin.flush()
        (size,) = HEADER.unpack(process.stdout.read(HEADER.size))
        answer = read_answer(process.stdout.read(size))
        if not hasattr(answer, "links"):
            raise SystemExit(f"the worker's first page: {answer}")
        return ready, time.monotonic() - started
    finally:
        process.stdin.close()
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", required=True)
    parser.add_argument("--links", type=int, default=1000)
    parser.add_argument("--pages", type=int, default=10, help="pages after the first, each timed")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=None, help="pagerank_workers (default: the proxy's)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a page may take at most")
    parser.add_argument("--worker-start", action="store_true", help="also time a worker's start, alone")
    args = parser.parse_args()
    level, lists = names_of(args.store, args.links, args.pages + 1, seed=7)
    with tempfile.TemporaryDirectory() as folder:
        write_pages(Path(folder), lists)
        server_port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(server_port), "--directory", folder],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        origin = f"http://127.0.0.1:{server_port}"
        try:
            fetch(
                urllib.request.build_opener(urllib.request.ProxyHandler({})), f"{origin}/p0.html", time.monotonic() + 10
            )
            runs: list[Run] = []
            for number in range(args.runs):
                order = ["mitmdump", "pagerank-proxy"] if number % 2 == 0 else ["pagerank-proxy", "mitmdump"]
                for target in order:
                    run = one_run(target, args, origin, level, args.pages)
                    runs.append(run)
                    print(
                        f"run {number + 1} {target:15s} first page {run.first:6.3f} s, next p50 "
                        f"{statistics.median(run.next_ms):7.1f} ms, PSS {run.pss_mib:8.1f} MiB in {run.processes}",
                        flush=True,
                    )
        finally:
            server.terminate()
            server.wait()
    print(f"\n{args.links} links to {level}s a page; {args.runs} runs of each; medians:")
    summary = {}
    for target in ("mitmdump", "pagerank-proxy"):
        mine = [r for r in runs if r.target == target]
        summary[target] = (
            statistics.median(r.first for r in mine),
            statistics.median(statistics.median(r.next_ms) for r in mine),
            statistics.median(r.pss_mib for r in mine),
            mine[0].processes,
        )
        first, later, pss, count = summary[target]
        print(f"  {target:15s} first page {first:.3f} s   next pages {later:.1f} ms   PSS {pss:.1f} MiB ({count})")
    plain, ours = summary["mitmdump"], summary["pagerank-proxy"]
    if args.worker_start:
        with tempfile.TemporaryDirectory() as folder:
            write_pages(Path(folder), lists[:1])
            page = (Path(folder) / "p0.html").read_bytes()
        times = [worker_start(args.store, page, "http://127.0.0.1/p0.html") for _ in range(args.runs)]
        print(
            f"  a worker alone  takes pages {statistics.median(t[0] for t in times):.3f} s after its start, "
            f"has answered its first {statistics.median(t[1] for t in times):.3f} s after (medians of {args.runs})"
        )
    print(f"  ratio           first page {ours[0] / plain[0]:.2f}x   next pages {ours[1] / plain[1]:.2f}x")


if __name__ == "__main__":
    main()
