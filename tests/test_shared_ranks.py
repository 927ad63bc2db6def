"""One copy of the ranks: a proxy of four workers maps its store's arrays, each worker adding little memory.

A real pagerank-proxy on loopback, on a generated store of 300,000 pages; its process tree's proportional
set size (PSS) read from ``/proc``, as a person's ``smem`` would.  Figures at scale are in BENCHMARKS.md
(``tools/bench_firstpage.py``)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from rankstore.cli import cli
from rankstore.store import Store
from rankstore.store.mapped import mapped_folder

PAGES = 300_000
LINKS = 1_200_000
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

from bench_firstpage import _LINK_BAR, fetch, names_of, tree_pss_mib, write_pages  # noqa: E402


@pytest.fixture(scope="module")
def big_store(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("shared")
    rng = np.random.default_rng(5)
    src = rng.integers(0, PAGES, LINKS)
    dst = np.minimum(rng.zipf(1.3, LINKS) - 1, PAGES - 1)
    edges = folder / "edges.txt"
    with edges.open("w") as out:
        for a, b in zip(src.tolist(), dst.tolist()):
            out.write(f"http://h{a % 5000}.example/p{a} http://h{b % 5000}.example/p{b}\n")
    path = str(folder / "s.db")
    for args in (["build", str(edges)], ["rank"], ["rank", "--level", "host"]):
        done = CliRunner().invoke(cli, [*args, "--store", path, "-q"])
        assert done.exit_code == 0, done.output
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve_pages(folder: Path, store: str) -> tuple[subprocess.Popen, str]:
    _, lists = names_of(store, 1000, 4, seed=3)
    write_pages(folder, lists)
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port), "--directory", str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return server, f"http://127.0.0.1:{port}"


def _proxy_tree(store: str, origin: str, workers: int) -> tuple[float, list[int], list[str]]:
    """(tree PSS in MiB after four pages of 1,000 links, the worker pids, each worker's /proc maps)."""
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "proxy_addon.cli",
            "--store",
            store,
            "--port",
            str(port),
            "--",
            "--set",
            f"pagerank_workers={workers}",
            "--set",
            "pagerank_inline_bytes=0",  # every page to the workers
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{port}"}))
    try:
        fetch(opener, f"{origin}/p0.html", time.monotonic() + 60)  # once the proxy listens
        _wait_for_workers(process.pid, workers)
        bodies = []
        for _ in range(2):  # each page through every worker, as far as the pool spreads them
            for number in range(4):
                bodies.append(opener.open(f"{origin}/p{number}.html", timeout=60).read())
        assert all(body.count(b"data-pagerank-bar") >= 1000 for body in bodies)
        children = [
            int(pid)
            for pid in os.listdir("/proc")
            if pid.isdigit() and _parent(int(pid)) == process.pid and b"proxy_addon.worker" in _cmdline(int(pid))
        ]
        # a worker no page went to has read its best pages and the levels' keys beside, at its start: until
        # each has (on a loaded machine, a while), and what it holds then
        ends = time.monotonic() + 60
        while time.monotonic() < ends:
            maps = [Path(f"/proc/{pid}/maps").read_text() for pid in children]
            if all("keys-host.hashes.npy" in text for text in maps):
                break
            time.sleep(0.1)
        time.sleep(0.3)
        pss, _ = tree_pss_mib(process.pid)
        return pss, children, maps
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return -1


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_four_workers_map_the_ranks_rather_than_copy_them(big_store, tmp_path):
    server, origin = _serve_pages(tmp_path, big_store)
    try:
        one, _, _ = _proxy_tree(big_store, origin, 1)
        four, workers, maps = _proxy_tree(big_store, origin, 4)
    finally:
        server.terminate()
        server.wait()
    assert len(workers) == 4
    files = mapped_folder(big_store)
    scores = [p.name for p in files.iterdir() if re.fullmatch(r"ranking-\d+\.scores\.npy", p.name)]
    assert scores, "rank wrote no mapped files"
    for text in maps:  # each worker maps the page ranking's arrays and the hosts' keys: no copy of its own
        assert any(name in text for name in scores)
        assert "keys-host.hashes.npy" in text
    # three more workers cost less than 100 MiB each (their interpreter and imports, not the ranks)
    assert four - one < 3 * 100, (one, four)


def _wait_for_workers(parent: int, count: int) -> None:
    """The workers start once the first page is through: until each has read the ranking (mapped its files),
    pages would go to a thread in the proxy's process.  Bounded: the assertions after it say what is missing."""
    ready = time.monotonic() + 60
    while time.monotonic() < ready:
        started = _workers(parent)
        if len(started) == count and all("ranking-" in Path(f"/proc/{pid}/maps").read_text() for pid in started):
            return
        time.sleep(0.05)


def _workers(parent: int) -> list[int]:
    """The proxy's rewriting processes."""
    return [
        int(pid)
        for pid in os.listdir("/proc")
        if pid.isdigit() and _parent(int(pid)) == parent and b"proxy_addon.worker" in _cmdline(int(pid))
    ]


def test_a_new_version_is_mapped_by_the_running_proxy_and_a_dropped_one_never_served(big_store, tmp_path):
    """rank twice while the proxy serves: each worker maps the newest version's files (no copy of its own), the
    bars give its scores, and the version the second rank dropped is mapped by no process."""
    path = str(tmp_path / "s.db")
    shutil.copy(big_store, path)
    shutil.copytree(mapped_folder(big_store), mapped_folder(path))
    pages = tmp_path / "pages"
    pages.mkdir()
    server, origin = _serve_pages(pages, path)
    port = _free_port()
    command = [sys.executable, "-m", "proxy_addon.cli", "--store", path, "--port", str(port), "--"]
    command += ["--set", "pagerank_workers=2", "--set", "pagerank_inline_bytes=0"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{port}"}))
    try:
        fetch(opener, f"{origin}/p0.html", time.monotonic() + 60)  # once the proxy listens
        _wait_for_workers(process.pid, 2)
        with Store(path, readonly=True) as store:
            first = store.rankings.ranking("pagerank").id
        for damping in ("0.6", "0.7"):  # the second run drops the version before the first one's
            done = CliRunner().invoke(cli, ["rank", "--store", path, "-q", "--damping", damping])
            assert done.exit_code == 0, done.output
        _, lists = names_of(path, 1000, 4, seed=3)
        with Store(path, readonly=True) as store:
            newest = store.rankings.ranking("pagerank").id
            wanted = store.queries.lookup(lists[1][:50])
        for _ in range(2):  # each worker gets pages of the newest version
            for number in range(4):
                body = opener.open(f"{origin}/p{number}.html", timeout=60).read().decode()
                if number == 1:
                    shown = dict(_LINK_BAR.findall(body))
                    assert all(float(shown[url]) == row["pagerank"] for url, row in wanted.items())
        workers = _workers(process.pid)
        assert len(workers) == 2
        maps = {pid: Path(f"/proc/{pid}/maps").read_text() for pid in [process.pid, *workers]}
        # the worker the pages went to (the pool's first while it is idle) maps the newest version's files
        assert any(f"ranking-{newest}.scores.npy" in maps[pid] for pid in workers)
        for text in maps.values():  # the dropped version: at most a mapping its file's removal left
            assert all(line.endswith("(deleted)") for line in text.splitlines() if f"ranking-{first}." in line)
        assert not (mapped_folder(path) / f"ranking-{first}.scores.npy").exists()  # pruned by the second rank
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
        server.terminate()
        server.wait()
