"""A build killed (SIGKILL) at many moments, its end-of-build in-link derivation included.

Each time: the store passes integrity_check and opens, the ranking made
before the build is the one served (to a reader at work while the build ran,
and to `rankstore top` after the kill), and a rerun of the build completes,
to the same pages and links as a build never interrupted.  Complements
tests/test_build.py's single kill half way through a crawl.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from rankstore.store import Store

from conftest import ROOT, run

# kills spread evenly over the build's committed progress: in its first commits, its middle and its last (every
# moment between two commits runs the same code), beside the two aimed at the in-link derivation
MOMENTS = 5

# Runs `rankstore ARGS`, with the store's in-link derivation (the build's last step, inside its final
# transaction) held up at its start or its end: a marker file says it is there, for the kill to come.
HOOKED = """
import sys, time
from rankstore.store.graph import Graph
where, marker = sys.argv[1], sys.argv[2]
real = Graph.derive_graph
def held(self):
    if where == "start":
        open(marker, "w").close(); time.sleep(120)
    real(self)
    if where == "end":
        open(marker, "w").close(); time.sleep(120)
Graph.derive_graph = held
from rankstore.cli import cli
cli(sys.argv[3:], prog_name="rankstore")
"""


def _edges(path, pages: int, links: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    src = np.sort(rng.integers(0, pages, links))
    dst = (src // 100 * 100 + rng.zipf(1.4, links)) % pages
    with open(path, "w") as out:
        out.write("".join(f"http://h{s // 100}.ex/{s}\thttp://h{d // 100}.ex/{d}\n" for s, d in zip(src, dst)))
    return str(path)


def _summary(path) -> tuple[int, int, tuple]:
    """(crawled pages, links, the served ranking's head) of a store, opened as a reader."""
    with Store(str(path), readonly=True) as store:
        details = store.info()
        return details["crawled_pages"], details["links"], tuple(store.rankings.ranking_head())


def _started(path, process) -> None:
    """Wait until the build in ``process`` has begun its work in the store (its row in ``builds``)."""
    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None and time.monotonic() < deadline, "the build never began"
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
                if db.execute("SELECT count(*) FROM builds WHERE status = 'running'").fetchone()[0]:
                    return
        except sqlite3.OperationalError:  # the store is locked a moment
            pass
        time.sleep(0.005)


def _build_command(second: str, path, *hook: str) -> list[str]:
    start = [sys.executable, "-c", HOOKED, *hook] if hook else [sys.executable, "-m", "rankstore"]
    return [*start, "build", second, "--store", str(path), "-q", "--commit-every", "2000"]


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """A store of one build, ranked (the base every kill starts from); a second build's source; the store that
    build makes uninterrupted; and how long that build runs, from its start in the store to its end."""
    work = tmp_path_factory.mktemp("kill-build")
    base = work / "base.db"
    run("build", _edges(work / "first.tsv", 20_000, 100_000, 1), "--store", str(base), "-q")
    run("rank", "--store", str(base), "-q")
    second = _edges(work / "second.tsv", 40_000, 250_000, 2)
    clean = work / "clean.db"
    shutil.copy(base, clean)
    process = subprocess.Popen(_build_command(second, clean), cwd=ROOT, stdout=subprocess.DEVNULL)
    _started(clean, process)
    started = time.monotonic()
    assert process.wait() == 0
    return base, second, clean, time.monotonic() - started


def _kill_and_check(base, second, clean, path, command, when) -> None:
    """Copy the base store to ``path``, run ``command`` on it, kill it when ``when()`` returns, and check."""
    shutil.copy(base, path)
    before = _summary(base)
    old_top = json.loads(run("top", "--store", str(base), "-n", "5", "--format", "json"))
    best = old_top[0]["url"]
    old_backlinks = json.loads(run("backlinks", best, "--store", str(base), "-n", "0", "--format", "json"))
    seen: list[tuple] = []
    problems: list[str] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                with Store(str(path), readonly=True) as store:
                    head = tuple(store.rankings.ranking_head())
                    total = float(store.rankings.scores_of(head[0])[1].sum())
                seen.append(head)
                if head != before[2] or abs(total - 1) > 1e-9:
                    problems.append(f"served {head} (sum {total}), not the old {before[2]}")
            except Exception as error:  # noqa: BLE001 - anything a reader meets is a failure here
                problems.append(repr(error))
            time.sleep(0.01)

    reader = threading.Thread(target=read)
    reader.start()
    process = subprocess.Popen(
        command, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        when(process)
        assert process.poll() is None, "the build ended before its kill"
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        stop.set()
        reader.join()
    assert not problems, problems[:3]
    assert seen  # the reader read while the build ran
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert _summary(path)[2] == before[2]  # the previous ranking, still the one served
    assert json.loads(run("top", "--store", str(path), "-n", "5", "--format", "json")) == old_top
    # the graph a reader meets is the old one whole (in-links are derived again only as a build commits)
    assert json.loads(run("backlinks", best, "--store", str(path), "-n", "0", "--format", "json")) == old_backlinks
    assert subprocess.run(_build_command(second, path), cwd=ROOT, stdout=subprocess.DEVNULL).returncode == 0  # rerun
    assert _summary(path)[:2] == _summary(clean)[:2]
    with Store(str(path), readonly=True) as store:
        assert store.graph.graph_is_current()


def _pages(path) -> int:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            return db.execute("SELECT coalesce(max(id), 0) FROM pages").fetchone()[0]
    except sqlite3.OperationalError:  # the store is locked a moment
        return 0


@pytest.mark.parametrize("moment", np.linspace(0.05, 0.9, MOMENTS).round(2).tolist())
def test_a_build_killed_at_a_moment_leaves_the_old_ranking_served_and_reruns(stores, tmp_path, moment):
    """Moments by the build's committed progress (its pages), not by the clock: a build's speed varies with
    the machine's load, and a kill timed by an earlier run's duration may come after the build has ended."""
    base, second, clean, _ = stores
    path = tmp_path / "k.db"
    first, last = _pages(base), _pages(clean)
    target = first + moment * (last - first)

    def at_the_moment(process) -> None:
        _started(path, process)
        deadline = time.monotonic() + 120
        while _pages(path) < target:
            assert process.poll() is None and time.monotonic() < deadline, "the build ended before its moment"
            time.sleep(0.002)

    _kill_and_check(base, second, clean, path, _build_command(second, path), at_the_moment)


@pytest.mark.parametrize("where", ["start", "end"])
def test_a_build_killed_in_its_in_link_derivation_leaves_the_old_ranking_served_and_reruns(stores, tmp_path, where):
    base, second, clean, _ = stores
    marker = tmp_path / "deriving"
    command = _build_command(second, tmp_path / "k.db", where, str(marker))

    def at_the_derivation(process) -> None:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert process.poll() is None and time.monotonic() < deadline, "the build never derived its in-links"
            time.sleep(0.01)

    _kill_and_check(base, second, clean, tmp_path / "k.db", command, at_the_derivation)
