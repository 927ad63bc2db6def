"""A graph whose sources recur across batches (edges shuffled, crawls one after another) builds the same
store as its sorted twin, each page's out-links written once (issue 34, point 5)."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

import rankstore.build as building
import rankstore.sources.ccgraph as ccgraph
import rankstore.sources.edgelist as edgelist
from rankstore.build import build
from rankstore.cli import cli
from rankstore.edgeruns import EdgeRuns, split_keys
from rankstore.store import Store

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def graphs(tmp_path_factory) -> dict[str, str]:
    """A small host graph as Common Crawl writes it (sorted), and its twin with the edges shuffled."""
    folder = tmp_path_factory.mktemp("order")
    sorted_graph = folder / "sorted"
    subprocess.run(
        [sys.executable, os.path.join(ROOT, "tools", "make_paper_graph.py"), "--pages", "3000", "--links"]
        + ["30000", "--parts", "3", "--out", str(sorted_graph)],
        check=True,
        capture_output=True,
    )
    lines = []
    for part in sorted(os.listdir(sorted_graph / "edges")):
        with gzip.open(sorted_graph / "edges" / part, "rb") as handle:
            lines += handle.read().splitlines(keepends=True)
    shuffled = folder / "shuffled"
    os.makedirs(shuffled / "edges")
    os.symlink(sorted_graph / "vertices", shuffled / "vertices")
    os.symlink(sorted_graph / "vertices.paths.gz", shuffled / "vertices.paths.gz")
    order = np.random.default_rng(34).permutation(len(lines)).tolist()
    names = []
    for part in range(3):
        name = f"edges/part-{part:05d}.gz"
        with gzip.open(shuffled / name, "wb") as out:
            out.write(b"".join(lines[i] for i in order[part::3]))
        names.append(name + "\n")
    with gzip.open(shuffled / "edges.paths.gz", "wt") as out:
        out.write("".join(names))
    return {"sorted": str(sorted_graph), "shuffled": str(shuffled)}


def stored(path: str) -> dict:
    """What a store holds of its graph: pages by id, each page's out-links, and the in-link CSR."""
    with Store(path) as store:
        store.graph.ensure_graph()
        pages = store.db.execute("SELECT id, url, crawled, status, build_id, first_build FROM pages ORDER BY id")
        links = {page: store.pages.out_link_ids(page).tolist() for page, *_ in pages.fetchall()}
        in_links = store.graph.in_links()
        return {
            "pages": store.db.execute("SELECT id, url, crawled, status FROM pages ORDER BY id").fetchall(),
            "links": links,
            "rows": store.db.execute("SELECT count(*) FROM out_links").fetchone()[0],
            "indptr": in_links.indptr.tolist(),
            "indices": in_links.indices.tolist(),
            "dump": store.pages.dump(),
        }


def built(path: str, source: str) -> tuple[dict, int]:
    """The store ``source`` builds, and how many times the build deleted a page's out-links to write them again."""
    merges = 0

    def count(statement: str) -> None:
        nonlocal merges
        merges += statement.startswith("DELETE FROM out_links")

    with Store(path) as store:
        store.db.set_trace_callback(count)
        build(store, [source], jobs=1)
        store.db.set_trace_callback(None)
    return stored(path), merges


@pytest.fixture
def small_batches(monkeypatch):
    # many batches of links from a small graph, as a big one gives
    monkeypatch.setattr(ccgraph, "BLOCK", 1 << 13)
    monkeypatch.setattr(edgelist, "BLOCK", 1 << 13)


@pytest.fixture(scope="module")
def sorted_store(graphs, tmp_path_factory) -> dict:
    patch = pytest.MonkeyPatch()
    patch.setattr(ccgraph, "BLOCK", 1 << 13)
    try:
        return built(str(tmp_path_factory.mktemp("sorted") / "sorted.db"), graphs["sorted"])[0]
    finally:
        patch.undo()


@pytest.mark.parametrize("bound", [1 << 25, 5000], ids=["in-memory", "spilled"])
def test_a_shuffled_host_graph_builds_the_sorted_ones_store_writing_each_page_once(
    graphs, sorted_store, small_batches, tmp_path, monkeypatch, bound
):
    monkeypatch.setattr(building, "_GATHER_LINKS", bound)
    shuffled, merges = built(str(tmp_path / "shuffled.db"), graphs["shuffled"])
    assert len(sorted_store["dump"][1]) == 30_000
    assert shuffled == sorted_store  # the same ids, out-links and in-links
    assert merges == 0  # no page's links were written and then merged again
    assert [name for name in os.listdir(tmp_path) if name.startswith(".rankstore-edges-")] == []


def test_the_runs_spilled_are_files_beside_the_store_and_go_at_the_end(graphs, small_batches, tmp_path, monkeypatch):
    monkeypatch.setattr(building, "_GATHER_LINKS", 5000)
    made = []
    spill = EdgeRuns._spill

    def watched(self) -> None:
        spill(self)
        made.extend(path for path, _ in self.runs if os.path.exists(path))

    monkeypatch.setattr(EdgeRuns, "_spill", watched)
    built(str(tmp_path / "shuffled.db"), graphs["shuffled"])
    assert len(set(made)) >= 3 and all(os.path.dirname(os.path.dirname(path)) == str(tmp_path) for path in made)
    assert not any(os.path.exists(path) for path in made)


def edge_list(path, pairs) -> str:
    with open(path, "w") as out:
        out.write("".join(f"http://site{s % 7}.example/p{s}\thttp://site{d % 7}.example/p{d}\n" for s, d in pairs))
    return str(path)


def test_an_edge_list_shuffled_or_of_two_crawls_builds_what_its_sorted_twin_builds(tmp_path, small_batches):
    rng = np.random.default_rng(5)
    pairs = sorted({(int(s), int(d)) for s, d in zip(rng.integers(0, 800, 12000), rng.zipf(1.3, 12000) % 800)})
    twice = pairs[::2] + pairs[1::2] + pairs[::3]  # two crawls one after the other, sharing sources
    order = rng.permutation(len(pairs)).tolist()
    runner = CliRunner()
    dumps = {}
    for label, listed in (("sorted", pairs), ("shuffled", [pairs[i] for i in order]), ("twice", twice)):
        store = str(tmp_path / f"{label}.db")
        result = runner.invoke(cli, ["build", edge_list(tmp_path / f"{label}.tsv", listed), "--store", store, "-q"])
        assert result.exit_code == 0, result.output
        with Store(store) as opened:
            dumps[label] = (opened.pages.dump(), opened.info()["builds"][-1]["links"])
    assert len(dumps["sorted"][0][1]) == len(pairs) == dumps["sorted"][1]
    assert dumps["shuffled"] == dumps["sorted"] == dumps["twice"]


def test_edge_runs_give_each_sources_links_sorted_once_in_one_piece(tmp_path):
    rng = np.random.default_rng(1)
    src = rng.zipf(1.2, 50_000) % 3000
    dst = rng.integers(0, 3000, 50_000)
    want = np.unique(src.astype(np.int64) << 32 | dst)
    for bound in (1 << 20, 4000, 1):
        with EdgeRuns(str(tmp_path), bound) as runs:
            for start in range(0, len(src), 3000):
                runs.add(src[start : start + 3000], dst[start : start + 3000])
            assert (len(runs.runs) > 1) == (bound < len(src))
            pieces = list(runs.grouped(2000))
        got = np.concatenate(pieces)
        assert np.array_equal(got, want)
        heads = [split_keys(piece)[0] for piece in pieces]
        assert all(a[-1] < b[0] for a, b in zip(heads, heads[1:]))  # no source split between pieces
        assert os.listdir(tmp_path) == []
