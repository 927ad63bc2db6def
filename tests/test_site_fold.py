"""The site fold in bounded memory (issue 34, point 3): ``rank --level site`` of a big host graph maps its links
to sites slice by slice into a LinkSorter (spilling beside the store) instead of sorting a key array a link.

Both paths fold the same inputs to the same graph (each pair once for a Common Crawl host graph, weights summed
for a crawl's, counted when unweighted; a loaded domain graph beside; self-links; repeated pairs; spilled or not),
and the bounded path's extra memory stays below the 8 bytes a link the old path's sort key alone takes.
"""

from __future__ import annotations

import gc
import glob
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from rankstore.linksort import LinkSorter
from rankstore.store import Store
from rankstore.store import sites as sites_module
from rankstore.store.hosts import fold_links

from conftest import run

ROOT = Path(__file__).resolve().parent.parent


def _edge_list(path, links) -> str:
    path.write_text("".join(f"{s}\t{d}\n" for s, d in links))
    return str(path)


def _cc_graph(folder: Path, pages: int, links: int) -> list[str]:
    """A Common Crawl host graph from the repository's generator (hosts grouped in sites, as the web's)."""
    subprocess.run(
        [sys.executable, str(ROOT / "tools/make_paper_graph.py"), "--pages", str(pages), "--links", str(links)]
        + ["--parts", "2", "--hosts-size", "8", "--out", str(folder)],
        check=True,
        capture_output=True,
    )
    return [str(folder / "vertices.paths.gz"), str(folder / "edges.paths.gz")]


# page links of a crawl: hosts of three sites, links repeated between the same sites and within a site
CRAWL = [
    (f"https://{a}.example{i % 3}.org/p{j}", f"https://{b}.example{(i * 7 + j) % 3}.org/q{i}")
    for i in range(12)
    for j, (a, b) in enumerate([("www", "www"), ("www", "blog"), ("shop", "www"), ("blog", "shop")])
]
# a domain graph beside the crawl: two of the crawl's sites and two more, a pair the crawl has too
DOMAIN_VERTICES = ["0\torg.example0\t2", "1\torg.example1\t1", "2\torg.other\t1", "3\tcom.more\t4"]
DOMAIN_EDGES = [(0, 1), (0, 2), (1, 3), (2, 0), (3, 0), (3, 1)]


def _gz_graph(folder: Path, vertices: list[str], edges: list[tuple[int, int]]) -> list[str]:
    import gzip

    out = []
    for kind, lines in (("vertices", vertices), ("edges", [f"{s}\t{d}" for s, d in edges])):
        (folder / kind).mkdir(parents=True)
        (folder / kind / "part-00000.gz").write_bytes(gzip.compress("".join(f"{x}\n" for x in lines).encode()))
        paths = folder / f"{kind}.paths.gz"
        paths.write_bytes(gzip.compress(f"{kind}/part-00000.gz\n".encode()))
        out.append(str(paths))
    return out


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, str]:
    """Stores whose site graphs fold: a Common Crawl host graph (each pair once), a crawl (weighted by page
    links), and the crawl with a domain graph loaded beside it."""
    work = tmp_path_factory.mktemp("site-fold")
    host = str(work / "host.db")
    run("build", *_cc_graph(work / "host-graph", 3000, 30000), "--store", host, "-q")
    crawl = str(work / "crawl.db")
    run("build", _edge_list(work / "links.tsv", CRAWL), "--store", crawl, "-q")
    both = str(work / "both.db")
    run("build", _edge_list(work / "links2.tsv", CRAWL), "--store", both, "-q")
    run("build", *_gz_graph(work / "domain", DOMAIN_VERTICES, DOMAIN_EDGES), "--store", both, "-q")
    return {"host": host, "crawl": crawl, "both": both}


def _force_bounded(monkeypatch, memory: int | None) -> None:
    """The bounded path at a test's size: tiny slices and buckets, and (memory) a tiny bound that spills."""
    monkeypatch.setattr(sites_module, "FOLD_IN_MEMORY", 0, raising=False)
    monkeypatch.setattr(sites_module, "FOLD_SLICE", 1000, raising=False)
    monkeypatch.setattr(sites_module, "FOLD_BUCKET_LINKS", 2000, raising=False)
    monkeypatch.setattr(sites_module, "FOLD_MEMORY", memory, raising=False)


def _site_graph(path: str):
    with Store(path, readonly=True) as store:
        return store.sites.site_graph()


def _assert_same(got, expected) -> None:
    assert got.n == expected.n
    assert np.array_equal(got.indptr, expected.indptr)
    assert np.array_equal(got.indices, expected.indices)
    assert got.indices.dtype == expected.indices.dtype == np.int32
    assert (got.weights is None) == (expected.weights is None)
    if expected.weights is not None:
        assert np.array_equal(got.weights, expected.weights)
    assert (got.members is None) == (expected.members is None)
    if expected.members is not None:
        assert np.array_equal(got.members, expected.members)


@pytest.mark.parametrize("memory", [None, 64], ids=["held", "spilled"])
@pytest.mark.parametrize("which", ["host", "crawl", "both"])
def test_the_bounded_fold_gives_the_graph_the_in_memory_fold_gives(stores, which, memory, monkeypatch, tmp_path):
    expected = _site_graph(stores[which])
    assert expected.indptr[-1] > 0
    if which == "host":
        assert expected.weights is None  # each pair once, as Common Crawl folds hosts into domains
    else:
        assert expected.weights is not None and expected.weights.max() > 1  # repeated pairs summed
    _force_bounded(monkeypatch, memory)
    spilled = []
    original = LinkSorter._spill

    def spill(self):
        spilled.append(self.folder)
        original(self)

    monkeypatch.setattr(LinkSorter, "_spill", spill)
    # what a ranking killed while it folded left: a folder named by a process that no longer runs
    dead = subprocess.Popen(["true"])
    dead.wait()
    left = f"{stores[which]}-fold-{dead.pid}"
    os.makedirs(os.path.join(left, "bucket"), exist_ok=True)
    _assert_same(_site_graph(stores[which]), expected)
    assert bool(spilled) == (memory is not None)
    folder = os.path.dirname(stores[which])
    assert not glob.glob(os.path.join(folder, "*-fold-*"))  # the spill folder gone with the sorter, and the one left


def test_rank_level_site_ranks_the_same_either_way(stores, monkeypatch, tmp_path):
    import json
    import shutil

    copy = str(tmp_path / "both.db")
    shutil.copy(stores["both"], copy)
    run("rank", "--level", "site", "--store", copy, "-q", "--tol", "1e-12")
    before = json.loads(run("top", "--ranking", "siterank", "-n", "0", "--format", "json", "--store", copy))
    _force_bounded(monkeypatch, 64)
    run("rank", "--level", "site", "--force", "--store", copy, "-q", "--tol", "1e-12")
    after = json.loads(run("top", "--ranking", "siterank", "-n", "0", "--format", "json", "--store", copy))
    assert [row["site"] for row in after] == [row["site"] for row in before]
    assert [row["site_pagerank"] for row in after] == pytest.approx([row["site_pagerank"] for row in before], abs=1e-12)


def _random_rows(seed: int, nodes: int, links: int, weighted: bool):
    """An in-link CSR of host-like nodes with repeated pairs and self-links, and a map of them into fewer sites."""
    rng = np.random.default_rng(seed)
    dst = np.sort(rng.integers(0, nodes, links))
    src = rng.integers(0, nodes, links).astype(np.int32)
    src[::17] = dst[::17]  # self-links
    indptr = np.searchsorted(dst, np.arange(nodes + 1)).astype(np.int64)
    weights = rng.integers(1, 5, links).astype(np.float64) if weighted else None
    return indptr, src, weights


@pytest.mark.parametrize("memory", [None, 512], ids=["held", "spilled"])
@pytest.mark.parametrize("kind", ["once", "weighted", "unweighted"])
def test_both_paths_fold_the_same_links_alike(stores, kind, memory, monkeypatch):
    """Unit level: the three ways fold_links folds (once, weights summed, links counted), a loaded graph beside."""
    sites_count, hosts_count = 300, 1500
    indptr, indices, weights = _random_rows(1, hosts_count, 40_000, kind == "weighted")
    site_of = np.random.default_rng(2).integers(1, sites_count + 1, hosts_count).astype(np.int32)
    loaded_indptr, loaded_indices, _ = _random_rows(3, sites_count, 5000, False)
    once, weighted = kind == "once", kind == "weighted"

    def rows():
        return [
            sites_module._MappedRows(indptr, indices, weights, site_of),
            sites_module._MappedRows(loaded_indptr, loaded_indices, None, None),
        ]

    dst = np.concatenate(
        [np.repeat(site_of, np.diff(indptr)), np.repeat(np.arange(1, sites_count + 1), np.diff(loaded_indptr))]
    )
    src = np.concatenate([site_of[indices], loaded_indices + 1])
    every = np.concatenate([weights, np.ones(len(loaded_indices))]) if weighted else None
    expected = fold_links(sites_count, dst, src, every, once=once)
    assert (expected.weights is None) == once
    _assert_same(sites_module._fold_at_once(sites_count, rows(), weighted, once), expected)
    _force_bounded(monkeypatch, memory)
    with Store(stores["crawl"], readonly=True) as store:
        got = store.sites._fold_bounded(sites_count, rows(), len(indices) + len(loaded_indices), weighted, once)
    _assert_same(got, expected)


def test_a_summed_link_sorter_sums_weights_by_pair_and_refuses_the_other_parts(tmp_path):
    with LinkSorter(5, str(tmp_path / "s"), memory=16, bucket_rows=2, summed=True) as sorter:
        sorter.add(np.array([0, 1, 1, 2, 3]), np.array([1, 0, 0, 2, 4]), np.array([1.0, 2.0, 3.0, 9.0, 4.0]))
        sorter.add(np.array([0, 1]), np.array([1, 4]))  # 1 each
        with pytest.raises(TypeError):
            next(sorter.parts())
        parts = list(sorter.weighted_parts())
    assert [part.links.first for part in parts] == [0, 2, 4]
    pairs = {}
    for part in parts:
        for row in range(len(part.links.indptr) - 1):
            for at in range(part.links.indptr[row], part.links.indptr[row + 1]):
                pairs[(int(part.links.indices[at]), part.links.first + row)] = float(part.weights[at])
    assert pairs == {(1, 0): 5.0, (0, 1): 2.0, (3, 4): 4.0, (1, 4): 1.0}
    with LinkSorter(3, str(tmp_path / "t")) as plain, pytest.raises(TypeError):
        next(plain.weighted_parts())


def _fold_peak(path: str) -> tuple[int, int]:
    """(tracemalloc peak of the site fold beyond the host graph it folds, read before; the host graph's links)."""
    gc.collect()
    with Store(path, readonly=True) as store:
        hosts = store.hosts.host_graph()
        store.sites.host_sites()  # kept by the store once read
        store.hosts.host_graph = lambda include_nofollow=False: hosts  # the read is not the fold
        tracemalloc.start()
        graph = store.sites.site_graph()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert graph.indptr[-1] > 0
        return peak, int(hosts.indptr[-1])


def test_the_fold_of_a_big_host_graph_holds_no_key_array_a_link(tmp_path, monkeypatch):
    """At a size past the threshold the fold never sorts an int64 key a link (the old path held that beside the
    links mapped to sites: more than 16 bytes a link); what it holds beyond the host graph is the folded graph
    (4 bytes a pair) and bounded slices and buckets."""
    path = str(tmp_path / "big.db")
    run("build", *_cc_graph(tmp_path / "graph", 20_000, 200_000), "--store", path, "-q")
    monkeypatch.setattr(sites_module, "FOLD_IN_MEMORY", 50_000, raising=False)  # the size the test stands for
    monkeypatch.setattr(sites_module, "FOLD_SLICE", 1 << 13, raising=False)
    monkeypatch.setattr(sites_module, "FOLD_BUCKET_LINKS", 1 << 13, raising=False)
    monkeypatch.setattr(sites_module, "FOLD_MEMORY", 1 << 17, raising=False)
    peak, links = _fold_peak(path)
    assert links == 200_000
    assert peak < 8 * links, f"{peak / links:.1f} bytes a link beyond the host graph"
