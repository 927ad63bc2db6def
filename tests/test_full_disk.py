"""A disk that fills while a build or a ranking writes: one line, a non-zero exit, and the store as it was.

Each test puts its store on a small tmpfs mounted for it (we are root in the test container), builds and ranks
a first graph there, then fills the file system up to a few pages and runs the next command: a page-crawl
build (an edge list), a Common Crawl domain-graph build, or ``rank``.  The previous build's graph and the
served ranking must read as they did before, through the CLI (``info``, ``top``, ``links``), with the disk
still full.
"""

from __future__ import annotations

import gzip
import json
import os
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

from conftest import run

# room for the first graph, its ranking and SQLite's log; the second build needs more than is left
DISK = "8m"
# what the disk keeps free when the failing command starts: less than that command writes
LEFT = 64 * 1024


@pytest.fixture
def small_disk(tmp_path):
    """A small file system, mounted for the test (root only)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK}", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {made.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def rankstore(*args: str) -> subprocess.CompletedProcess:
    """``rankstore ARGS`` as a user runs it (its own process, so that its errors go through ``main``)."""
    return subprocess.run(
        [sys.executable, "-m", "rankstore", *args], capture_output=True, text=True, timeout=180, check=False
    )


def ok(*args: str) -> str:
    """``rankstore ARGS``, which must succeed, in this process: only the command that meets the full disk needs
    ``main``'s way with errors, and a process's start costs more than most of these commands."""
    return run(*args)


def fill(mount, left: int = LEFT) -> None:
    """Fill the file system at ``mount`` until ``left`` bytes remain free."""
    stat = os.statvfs(mount)
    free = stat.f_bavail * stat.f_frsize
    with open(mount / "filler", "wb") as handle:
        handle.write(b"\0" * max(0, free - left))


def assert_says_disk_full(done: subprocess.CompletedProcess, says: str = "disk is full") -> None:
    said = (done.stdout + done.stderr).strip()
    assert done.returncode != 0, said
    assert "Traceback" not in said, said
    assert len(said.splitlines()) == 1, said
    assert said.startswith("Error: ") and "disk is full" in said and says in said, said


def served(store: str, level: str = "page") -> dict:
    """What readers see of the store: its counts, builds' outcomes, rankings, the top of its served ranking."""
    info = json.loads(ok("info", "--format", "json", "--store", store))
    top = ok(
        "top", "--store", store, "--format", "json", "-n", "20", *(["--ranking", "siterank"] if level == "site" else [])
    )
    return {
        "counts": {key: info[key] for key in ("pages", "crawled_pages", "links", "sites", "site_links")},
        "complete_builds": [b["id"] for b in info["builds"] if b["status"] == "complete"],
        "rankings": [(r["name"], r["version"], r["stale"]) for r in info["rankings"]],
        "top": json.loads(top),
    }


def edge_list(path, links: int, site: str) -> str:
    with open(path, "w") as handle:
        for i in range(links):
            handle.write(f"http://{site}/page/{i % 700}\thttp://{site}/some/longer/path/{i % 9000}\n")
    return str(path)


def domain_graph(folder, sites: int, links: int) -> list[str]:
    """A Common Crawl domain graph: vertices ``id<TAB>reversed.domain<TAB>hosts``, in name order, edges sorted."""
    folder.mkdir()
    names = sorted(f"com.example{i:06d}" for i in range(sites))
    vertices = "".join(f"{i}\t{name}\t1\n" for i, name in enumerate(names))
    pairs = sorted({(i % sites, (i * 7919 + 13) % sites) for i in range(links)})
    edges = "".join(f"{s}\t{d}\n" for s, d in pairs if s != d)
    out = []
    for name, text in (("vertices.txt.gz", vertices), ("edges.txt.gz", edges)):
        (folder / name).write_bytes(gzip.compress(text.encode(), mtime=0))
        out.append(str(folder / name))
    return out


def intact(store: str) -> None:
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_page_build_that_fills_the_disk_leaves_the_previous_build_and_ranking_served(small_disk, tmp_path):
    store = str(small_disk / "s.db")
    ok("build", edge_list(tmp_path / "first.tsv", 3000, "a.example"), "--store", store, "-q")
    ok("rank", "--store", store, "-q")
    before = served(store)
    fill(small_disk)
    assert_says_disk_full(
        rankstore("build", edge_list(tmp_path / "more.tsv", 120_000, "b.example"), "--store", store, "-q"),
        says="the build was rolled back and the store is as it was before it",
    )
    assert served(store) == before  # with the disk still full
    intact(store)


def test_a_domain_graph_build_that_fills_the_disk_leaves_the_previous_build_and_ranking_served(small_disk, tmp_path):
    store = str(small_disk / "s.db")
    ok("build", *domain_graph(tmp_path / "first", 500, 3000), "--store", store, "-q")
    ok("rank", "--level", "site", "--store", store, "-q")
    before = served(store, "site")
    fill(small_disk)
    assert_says_disk_full(
        rankstore("build", *domain_graph(tmp_path / "more", 60_000, 200_000), "--store", store, "-q"),
        says="the build was rolled back and the store is as it was before it",
    )
    assert served(store, "site") == before
    intact(store)


def test_a_ranking_that_fills_the_disk_leaves_the_previous_version_served(small_disk, tmp_path):
    store = str(small_disk / "s.db")
    ok("build", edge_list(tmp_path / "first.tsv", 20_000, "a.example"), "--store", store, "-q")
    ok("rank", "--store", store, "-q")
    before = served(store)
    fill(small_disk, left=8 * 1024)
    assert_says_disk_full(rankstore("rank", "--store", store, "-q", "--damping", "0.5"))
    assert served(store) == before
    intact(store)


def dense_domain_graph(folder, sites: int, links: int) -> list[str]:
    """A domain graph of few sites and many links (random pairs, each once, sorted)."""
    folder.mkdir()
    names = sorted(f"com.example{i:06d}" for i in range(sites))
    rng = np.random.default_rng(1)
    key = np.unique(rng.integers(0, sites, links) * sites + rng.integers(0, sites, links))
    vertices = "".join(f"{i}\t{name}\t1\n" for i, name in enumerate(names))
    edges = "".join(f"{s}\t{d}\n" for s, d in zip((key // sites).tolist(), (key % sites).tolist()) if s != d)
    out = []
    for name, text in (("vertices.txt.gz", vertices), ("edges.txt.gz", edges)):
        (folder / name).write_bytes(gzip.compress(text.encode(), mtime=0))
        out.append(str(folder / name))
    return out


SPILLING = """
import sys
import rankstore.linksort
rankstore.linksort.MEMORY = 1 << 12  # the links go to files beside the store at once, as at full size
from rankstore.cli import main
main(sys.argv[1:])
"""


def test_a_domain_graph_whose_spilled_links_fill_the_disk_leaves_the_site_links_and_ranking_served(
    small_disk, tmp_path
):
    store = str(small_disk / "s.db")
    ok("build", *domain_graph(tmp_path / "first", 500, 3000), "--store", store, "-q")
    ok("rank", "--level", "site", "--store", store, "-q")
    before = served(store, "site")
    more = dense_domain_graph(tmp_path / "more", 3000, 300_000)  # the names fit; 8 bytes a link spilled do not
    fill(small_disk, 1 << 20)
    done = subprocess.run(
        [sys.executable, "-c", SPILLING, "build", *more, "--store", store, "-q"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert_says_disk_full(done, says="the previous graph and rankings are still served")
    after = served(store, "site")
    # the new graph's sites were numbered (a transaction of their own, committed); its links never came
    assert after["counts"]["site_links"] == before["counts"]["site_links"]
    assert after["top"] == before["top"]
    # the same versions served; the build is kept, cut short (its sites numbered), so they read as older than it
    assert [ranking[:2] for ranking in after["rankings"]] == [ranking[:2] for ranking in before["rankings"]]
    assert not os.path.exists(store + "-links")
    intact(store)
