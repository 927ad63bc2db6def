"""A build and a ranking killed (SIGKILL) at ten moments that matter, one run of each passing them all.

The build reads a folder of saved pages and two edge lists into a store
already built and ranked.  ``RANKSTORE_TEST_STOP_AT`` (rankstore.stop_at)
stops that one `rankstore build` at each moment in turn (SIGSTOP): before
its first commit, between commits of pages, after a graph's vertices, after
its links, inside the last transaction (pages indexed, in-links derived,
hosts and sites numbered) and after it commits.  There the test copies the
store's files and lets the build go on; at the last moment it is killed.  A
SIGKILL writes nothing more, so each copy is the store a kill at its moment
leaves.  Likewise a `rankstore rank` is stopped once it has solved and once
its blocks are written, and killed there.

Each store so left passes integrity_check, still serves the ranking made
before (as a reader at work during the whole build saw), reads its build as
interrupted (none 'running', none 'complete' that did not commit), and the
next build makes the same pages and links (counts and a digest of the link
set) as a build never interrupted; the next ranking is whole, as an
uninterrupted one, and until then the killed one is absent.  Complements
tests/test_build.py's kill half way through a crawl and tests/test_kill_domain.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
from dataclasses import dataclass

import numpy as np
import pytest

from rankstore.stop_at import STOP_AT
from rankstore.store import Store

from conftest import ROOT, run

# What the killed build's row in ``builds`` reads once the next build has settled it
BUILD_MOMENTS = {
    "pages-parsed": None,  # it committed nothing: no record of it is kept
    "pages-written": "interrupted",
    "graph-vertices": "interrupted",
    "graph-links": "interrupted",
    "finish-indexed": "interrupted",
    "finish-derived": "interrupted",
    "finish-numbered": "interrupted",
    "finish-committed": "complete",  # its last transaction committed: the build is whole
}
RANK_MOMENTS = ("rank-solved", "rank-written")
PAGES = 240  # saved pages, written in batches of COMMIT_EVERY
COMMIT_EVERY = "100"


def _edges(path, pages: int, links: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    src = np.sort(rng.integers(0, pages, links))
    dst = (src // 100 * 100 + rng.zipf(1.4, links)) % pages
    with open(path, "w") as out:
        out.write("".join(f"http://h{s // 100}.ex/{s}\thttp://h{d // 100}.ex/{d}\n" for s, d in zip(src, dst)))
    return str(path)


def _saved_pages(folder) -> str:
    """A folder of pages as wget saves a site, linking to each other and to the edge lists' pages."""
    site = folder / "www.site.ex"
    site.mkdir(parents=True)
    for i in range(PAGES):
        links = [f"p{(7 * i + 1) % PAGES}.html", f"p{(i + 3) % PAGES}.html", f"http://h{i % 50}.ex/{13 * i % 5000}"]
        body = "".join(f'<a href="{link}">to {link}</a> ' for link in links)
        (site / f"p{i}.html").write_text(f"<html><head><title>page {i}</title></head><body>{body}</body></html>")
    return str(folder)


@dataclass(frozen=True)
class Graph:
    """What a build made of the sources: its counts and a digest of its pages and links, by URL."""

    pages: int
    crawled: int
    links: int
    digest: str


def _graph(path) -> Graph:
    """The store's graph, its pages and links by URL (the ``links`` view's rows, read from its tables at once)."""
    digest = hashlib.sha256()
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        urls = dict(db.execute("SELECT id, url FROM pages"))
        pairs = sorted(
            (urls[src], urls[int(dst)])
            for src, targets in db.execute("SELECT src, targets FROM out_links")
            for dst in np.frombuffer(targets, ">u4")
        )
        notes = sorted((urls[src], urls[dst], *rest) for src, dst, *rest in db.execute("SELECT * FROM link_notes"))
        crawled = sorted(url for (url,) in db.execute("SELECT url FROM pages WHERE crawled"))
    digest.update(repr((pairs, notes, crawled)).encode())
    with Store(str(path), readonly=True) as store:
        details = store.info()
    assert details["links"] == len(pairs)
    return Graph(details["pages"], details["crawled_pages"], details["links"], digest.hexdigest())


def _served(path) -> dict:
    """What a reader of the store meets: the ranking's head and its top pages' backlinks."""
    with Store(str(path), readonly=True) as store:
        head = tuple(store.rankings.ranking_head())
    top = json.loads(run("top", "--store", str(path), "-n", "5", "--format", "json"))
    backlinks = json.loads(run("backlinks", top[0]["url"], "--store", str(path), "-n", "0", "--format", "json"))
    return {"head": head, "top": top, "backlinks": backlinks}


def _statuses(path) -> list[str]:
    """The builds' statuses, oldest first."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return [status for (status,) in db.execute("SELECT status FROM builds ORDER BY id")]


def _copy(path, to) -> str:
    """The store's files as they are (its log and its index too, as a kill leaves them)."""
    os.makedirs(to)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{path}{suffix}"):
            shutil.copy(f"{path}{suffix}", os.path.join(to, f"k.db{suffix}"))
    return os.path.join(to, "k.db")


def _stopped(process: subprocess.Popen, moment: str) -> None:
    """Wait until ``process`` has stopped itself at ``moment``."""
    said = []
    while (line := process.stderr.readline()) != f"stopped at {moment}\n":
        assert line, f"the process ended before {moment}: {''.join(said)[-2000:]}"
        said.append(line)
    _, status = os.waitpid(process.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status)


def _passing(command: list[str], moments, path, folder) -> dict[str, str]:
    """Run ``command`` stopped at each of ``moments``: a copy of the store at each, killed at the last (its own
    store is the last moment's).  The copies' paths by moment."""
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, STOP_AT: ",".join(moments)},
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    copies = {}
    try:
        for moment in moments:
            _stopped(process, moment)
            if moment == moments[-1]:
                break
            copies[moment] = _copy(path, folder / moment)
            os.kill(process.pid, signal.SIGCONT)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        process.stderr.close()
    assert process.returncode == -signal.SIGKILL
    copies[moments[-1]] = str(path)
    return copies


@dataclass
class Built:
    sources: list[str]
    base: dict  # what a reader of the base store meets
    clean: Graph  # the graph an uninterrupted build makes
    statuses: list[str]  # the base store's builds'
    copies: dict[str, str]  # the store a kill at each moment left
    problems: list[str]  # what a reader met while the build ran
    reads: int
    committed: list[tuple[int, int]]  # the pages, and the pages with links, the base holds, then each moment's


def _committed(path) -> tuple[int, int]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return db.execute("SELECT (SELECT count(*) FROM pages), (SELECT count(*) FROM out_links)").fetchone()


def _build_args(sources, path) -> list[str]:
    return ["build", *sources, "--store", str(path), "-q", "--commit-every", COMMIT_EVERY]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    work = tmp_path_factory.mktemp("kill-build")
    base = work / "base.db"
    run("build", _edges(work / "first.tsv", 5_000, 20_000, 1), "--store", str(base), "-q")
    run("rank", "--store", str(base), "-q")
    sources = [
        _saved_pages(work / "saved"),
        _edges(work / "second-a.tsv", 5_000, 12_000, 2),
        _edges(work / "second-b.tsv", 8_000, 12_000, 3),
    ]
    clean = work / "clean.db"
    shutil.copy(base, clean)
    run(*_build_args(sources, clean), "-j", "1")
    before = _served(base)
    path = work / "killed" / "k.db"
    path.parent.mkdir()
    shutil.copy(base, path)
    problems: list[str] = []
    reads = 0
    stop = threading.Event()

    def read() -> None:  # the old ranking, whole, all the while
        nonlocal reads
        while not stop.is_set():
            try:
                with Store(str(path), readonly=True) as store:
                    head = tuple(store.rankings.ranking_head())
                    total = float(store.rankings.scores_of(head[0])[1].sum())
                reads += 1
                if head != before["head"] or abs(total - 1) > 1e-9:
                    problems.append(f"served {head} (sum {total}), not the old {before['head']}")
            except Exception as error:  # noqa: BLE001 - anything a reader meets is a failure here
                problems.append(repr(error))
            stop.wait(0.01)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        command = [sys.executable, "-m", "rankstore", *_build_args(sources, path)]
        copies = _passing(command, list(BUILD_MOMENTS), path, work)
    finally:
        stop.set()
        reader.join()
    committed = [_committed(base)] + [_committed(copies[moment]) for moment in BUILD_MOMENTS]
    return Built(sources, before, _graph(clean), _statuses(base), copies, problems, reads, committed)


def test_a_reader_is_served_the_old_ranking_while_the_build_runs_to_its_kill(built):
    assert built.reads > 0
    assert not built.problems, built.problems[:3]


def test_the_moments_come_in_order_each_further_on(built):
    """What the store a kill leaves holds, moment by moment: nothing new before the first commit; then pages;
    a graph's vertices (new pages); its links (pages with links); the other graph; inside the last transaction
    and after it, the same (it writes what is derived from them)."""
    base, parsed, written, vertices, links, *inside, done = built.committed
    assert parsed == base
    assert written[0] > parsed[0] and vertices[0] > written[0]
    assert links[0] == vertices[0] and links[1] > vertices[1]
    assert inside[0][0] > links[0] and inside[0][1] > links[1]
    assert inside == [done] * len(inside)


@pytest.mark.parametrize("moment", list(BUILD_MOMENTS))
def test_a_build_killed_at_a_moment_leaves_a_good_store_that_the_next_build_completes(built, moment):
    path = built.copies[moment]
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    with Store(path, readonly=True) as store:
        killed = store.info()["builds"][len(built.statuses)]["status"]  # as `info` reads it
    if BUILD_MOMENTS[moment] == "complete":
        assert killed == "complete"
        assert _graph(path) == built.clean  # whole as it is
    else:
        assert killed == "interrupted"  # its process is gone: no build left 'running', none complete
        served = _served(path)
        assert served == built.base  # the ranking and graph made before, whole
    run(*_build_args(built.sources, path), "-j", "1")
    assert _graph(path) == built.clean
    kept = [BUILD_MOMENTS[moment]] if BUILD_MOMENTS[moment] else []  # a build that committed nothing is dropped
    assert _statuses(path) == [*built.statuses, *kept, "complete"]
    with Store(path, readonly=True) as store:
        assert store.graph.graph_is_current()


@dataclass
class Ranked:
    before: dict  # what a reader met before the ranking
    version: int  # the version an uninterrupted ranking writes
    scores: np.ndarray  # its scores
    copies: dict[str, str]


def _version(path) -> tuple[int, np.ndarray]:
    """The newest version of pagerank and its scores, which must be whole (one a page, summing to 1)."""
    with Store(str(path), readonly=True) as store:
        ranking = store.rankings.ranking("pagerank")
        ids, scores = store.rankings.scores_of(ranking.id)
        assert len(ids) == ranking.pages == store.info()["pages"]
    assert abs(scores.sum() - 1) < 1e-9
    return ranking.version, scores


@pytest.fixture(scope="module")
def ranked(built, tmp_path_factory):
    """A store built whole (the last moment's, once built again), ranked uninterrupted in a copy, and ranked
    by a `rankstore rank` stopped at each moment."""
    work = tmp_path_factory.mktemp("kill-rank")
    source = built.copies["finish-committed"]  # its log too: it may not have been copied into it yet
    path = _copy(source, work / "killed")
    before = _served(path)
    clean = _copy(source, work / "clean")
    run("rank", "--store", clean, "-q")
    command = [sys.executable, "-m", "rankstore", "rank", "--store", path, "-q"]
    return Ranked(before, *_version(clean), _passing(command, list(RANK_MOMENTS), path, work))


@pytest.mark.parametrize("moment", RANK_MOMENTS)
def test_a_ranking_killed_at_a_moment_is_absent_and_the_next_is_whole(ranked, moment):
    path = ranked.copies[moment]
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT max(version) FROM rankings WHERE name = 'pagerank'").fetchone()[0] < ranked.version
    assert _served(path) == ranked.before
    run("rank", "--store", path, "-q")
    version, scores = _version(path)
    assert version == ranked.version
    assert np.allclose(scores, ranked.scores, rtol=0, atol=1e-12)
