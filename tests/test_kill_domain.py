"""A domain graph's build and its site ranking killed (SIGKILL) at each of their steps.

The base store holds one domain graph, ranked.  A second graph (other sites
among the same, other links) is built into a copy of it and killed: while its
vertices are numbered, while its links are gathered (spilled to files), while
they are written, at the build's end; and a `rank --level site` is killed
while it solves and while it writes.  Each time the store passes
integrity_check, the site ranking made before is the one served, with the
same top sites and referrers, and a rerun completes to the store an
uninterrupted build makes, the spill files of the killed one gone.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from make_domain_graph import GraphSize, make_domain_graph

from rankstore.linksort import spill_folder
from rankstore.store import Store

from conftest import ROOT, run

# Runs `rankstore ARGS` with one function held up at its start: a marker file says it is there, for the kill.
HOOKED = """
import importlib, sys, time
module, name, marker = sys.argv[1], sys.argv[2], sys.argv[3]
owner, _, attribute = name.rpartition(".")
holder = importlib.import_module(module)
for part in owner.split(".") if owner else []:
    holder = getattr(holder, part)
real = getattr(holder, attribute)
def held(*args, **kwargs):
    open(marker, "w").close()
    time.sleep(120)
    return real(*args, **kwargs)
setattr(holder, attribute, held)
import rankstore.linksort
rankstore.linksort.MEMORY = 1 << 16  # the links spilled to files, as at full size
from rankstore.cli import cli
cli(sys.argv[4:], prog_name="rankstore")
"""

BUILD_STEPS = {
    "vertices": ("rankstore.store.sites", "Sites.reindex"),  # the last vertex batch numbered, not committed
    "gathering": ("rankstore.linksort", "LinkSorter._spill"),  # links spilled to files
    "writing": ("rankstore.store.site_links", "SiteLinks.replace"),  # links about to replace the old
    "finishing": ("rankstore.store", "Store.finish_build"),
}
RANK_STEPS = {
    "solving": ("rankstore.solver.product", "_Product.__init__"),
    "writing": ("rankstore.store.rankings", "Rankings.write_ranking"),
}


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """The base store (one domain graph, ranked), the second graph, and the store its build makes whole."""
    work = tmp_path_factory.mktemp("kill-domain")
    make_domain_graph(GraphSize(4000, 60_000), str(work / "first"), parts=2, seed=1)
    make_domain_graph(GraphSize(6000, 90_000), str(work / "second"), parts=2, seed=2)
    base = str(work / "base.db")
    run("build", str(work / "first"), "--store", base, "-q")
    run("rank", "--level", "site", "--store", base, "-q")
    clean = str(work / "clean.db")
    shutil.copy(base, clean)
    run("build", str(work / "second"), "--store", clean, "-q")
    return base, str(work / "second"), clean


def _served(path: str) -> tuple:
    """The site ranking served, its top sites and the referrers of the first."""
    top = json.loads(run("top", "--ranking", "siterank", "--store", path, "-n", "5", "--format", "json"))
    with Store(path, readonly=True) as store:
        head = store.levels.level_head("site")
        referrers = store.levels.referrers(head, top[0]["site"], 20)
        return (head.ranking_id, head.version), top, referrers


def _site_graph(path: str) -> tuple:
    with Store(path, readonly=True) as store:
        links = store.site_links.links(store.sites.site_count())
        names = [name for batch in store.sites.site_batches() for name in batch.names]
    return links.indptr.tolist(), links.indices.tolist(), names


def _killed(command: list[str], marker) -> None:
    process = subprocess.Popen(
        command, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert process.poll() is None and time.monotonic() < deadline, "the step was never reached"
            time.sleep(0.01)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _intact(path: str, before: tuple) -> None:
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert _served(path) == before


def _kill_at(stores, tmp_path, where: tuple[str, str], *command: str) -> tuple[str, tuple]:
    """A copy of the base store, ``rankstore COMMAND`` on it killed as it reaches ``where`` (module,
    function), checked intact and serving what it served; (its path, what it served)."""
    path = str(tmp_path / "k.db")
    shutil.copy(stores[0], path)
    before = _served(stores[0])
    marker = tmp_path / "here"
    hooked = [sys.executable, "-c", HOOKED, *where, str(marker)]
    _killed([*hooked, *command, "--store", path, "-q"], marker)
    _intact(path, before)
    return path, before


@pytest.mark.parametrize("step", sorted(BUILD_STEPS))
def test_a_domain_build_killed_leaves_the_old_site_ranking_served_and_reruns(stores, tmp_path, step):
    _, second, clean = stores
    path, _ = _kill_at(stores, tmp_path, BUILD_STEPS[step], "build", second)
    run("build", second, "--store", path, "-q")
    assert not os.path.exists(spill_folder(path))
    assert _site_graph(path) == _site_graph(clean)


@pytest.mark.parametrize("step", sorted(RANK_STEPS))
def test_a_site_ranking_killed_leaves_the_one_before_served(stores, tmp_path, step):
    path, before = _kill_at(stores, tmp_path, RANK_STEPS[step], "rank", "--level", "site", "--force")
    run("rank", "--level", "site", "--force", "--store", path, "-q")
    assert _served(path)[0][1] == before[0][1] + 1
