"""The site fold in bounded memory (issue 34, point 3): ``rank --level site`` of a big host graph streams the page
graph's in-link blocks, maps each link through its pages' hosts to their sites, and folds them slice by slice
into a LinkSorter (spilling beside the store): no host graph is held, and no key array a link is sorted.

Every path folds the same inputs to the graph the host graph folded through ``fold_links`` gives (the reference,
below: each pair once for a Common Crawl host graph, page links counted for a crawl's; a loaded domain graph
beside; nofollow links left out or counted; self-links; repeated pairs; spilled or not), and the fold's memory
stays below the 4 bytes a link the host graph's indices alone take.
"""

from __future__ import annotations

import gc
import glob
import io
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from rankstore.linksort import LinkSorter
from rankstore.store import Store
from rankstore.store import graph as graph_module
from rankstore.store import sites as sites_module
from rankstore.store.hosts import LevelGraph, fold_links

from conftest import run

ROOT = Path(__file__).resolve().parent.parent


def _edge_list(path, links) -> str:
    path.write_text("".join(f"{s}\t{d}\n" for s, d in links))
    return str(path)


def _cc_graph(folder: Path, pages: int, links: int, hosts_size: int = 8) -> list[str]:
    """A Common Crawl host graph from the repository's generator (hosts grouped in sites, as the web's)."""
    subprocess.run(
        [sys.executable, str(ROOT / "tools/make_paper_graph.py"), "--pages", str(pages), "--links", str(links)]
        + ["--parts", "2", "--hosts-size", str(hosts_size), "--out", str(folder)],
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


# a crawl with nofollow links: between sites, within a site across hosts, within a host; one page links to
# another of a site only by nofollow
NOFOLLOW_PAGES = {
    "https://www.a.org/": [("https://www.b.org/", ""), ("https://blog.a.org/", ""), ("https://www.c.org/", "nofollow")],
    "https://blog.a.org/": [
        ("https://www.b.org/x", "nofollow"),
        ("https://www.b.org/", ""),
        ("https://www.a.org/y", ""),
    ],
    "https://www.b.org/": [("https://www.c.org/", "nofollow"), ("https://www.a.org/", ""), ("https://www.b.org/x", "")],
    "https://www.b.org/x": [("https://www.c.org/", "nofollow"), ("https://shop.b.org/", "nofollow")],
    "https://www.c.org/": [("https://www.a.org/", ""), ("https://blog.a.org/", "nofollow")],
}


def _nofollow_warc(path: Path) -> str:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        for url, links in NOFOLLOW_PAGES.items():
            body = "".join(f'<a href="{href}" rel="{rel}">x</a>' for href, rel in links)
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
            payload = io.BytesIO(f"<html><body>{body}</body></html>".encode())
            writer.write_record(writer.create_warc_record(url, "response", payload=payload, http_headers=http))
    return str(path)


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
    links), the crawl with a domain graph loaded beside it, and a crawl with nofollow links."""
    work = tmp_path_factory.mktemp("site-fold")
    host = str(work / "host.db")
    run("build", *_cc_graph(work / "host-graph", 3000, 30000), "--store", host, "-q")
    crawl = str(work / "crawl.db")
    run("build", _edge_list(work / "links.tsv", CRAWL), "--store", crawl, "-q")
    both = str(work / "both.db")
    run("build", _edge_list(work / "links2.tsv", CRAWL), "--store", both, "-q")
    run("build", *_gz_graph(work / "domain", DOMAIN_VERTICES, DOMAIN_EDGES), "--store", both, "-q")
    within = str(work / "within.db")  # pages that link only within their host, a domain graph beside
    run(
        "build",
        _edge_list(
            work / "links3.tsv",
            [(f"https://www.example0.org/{i}", f"https://www.example0.org/{i + 1}") for i in range(9)],
        ),
        "--store",
        within,
        "-q",
    )
    run("build", *_gz_graph(work / "domain2", DOMAIN_VERTICES, DOMAIN_EDGES), "--store", within, "-q")
    nofollow = str(work / "nofollow.db")
    run("build", _nofollow_warc(work / "nofollow.warc.gz"), "--store", nofollow, "-q")
    return {"host": host, "crawl": crawl, "both": both, "nofollow": nofollow, "within": within}


def _force_bounded(monkeypatch, memory: int | None) -> None:
    """The bounded path at a test's size: tiny slices and buckets, and (memory) a tiny bound that spills."""
    monkeypatch.setattr(sites_module, "FOLD_IN_MEMORY", 0, raising=False)
    monkeypatch.setattr(sites_module, "FOLD_SLICE", 1000, raising=False)
    monkeypatch.setattr(sites_module, "FOLD_BUCKET_LINKS", 2000, raising=False)
    monkeypatch.setattr(sites_module, "FOLD_MEMORY", memory, raising=False)


def _site_graph(path: str, include_nofollow: bool = False):
    with Store(path, readonly=True) as store:
        return store.sites.site_graph(include_nofollow)


def _reference(path: str, include_nofollow: bool = False) -> LevelGraph:
    """The site graph as it was made before it was streamed: the whole host graph read, its links (and the
    loaded site links, one each) mapped to sites and coalesced by ``fold_links``, weighted by the host graph's
    weights; no link between hosts: the loaded graph as it is stored."""
    with Store(path, readonly=True) as store:
        hosts = store.hosts.host_graph(include_nofollow)
        count = store.sites.site_count()
        loaded = store.site_links.links(count)
        members = store.sites._sites_in_graph(count, hosts.members, loaded)
        if hosts.indptr[-1] == 0:
            return LevelGraph(count, loaded.indptr, loaded.indices, None, members)
        sites = store.sites.host_sites()[: hosts.n]
        once = store.hosts.each_host_one_page()
    dst = np.concatenate(
        [np.repeat(sites, np.diff(hosts.indptr)), np.repeat(np.arange(1, count + 1), np.diff(loaded.indptr))]
    )
    src = np.concatenate([sites[hosts.indices], loaded.indices + 1])
    weights = None
    if not once:
        host_weights = hosts.weights if hosts.weights is not None else np.ones(len(hosts.indices))
        weights = np.concatenate([host_weights, np.ones(len(loaded.indices))])
    graph = fold_links(count, dst, src, weights, once=once)
    graph.members = members
    return graph


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


@pytest.mark.parametrize("include_nofollow", [False, True], ids=["followed", "nofollow-too"])
@pytest.mark.parametrize("which", ["host", "crawl", "both", "nofollow", "within"])
def test_the_streamed_fold_gives_the_graph_the_host_graph_folds_into(stores, which, include_nofollow):
    """At once (below FOLD_IN_MEMORY): the graph of the whole host graph folded, bit for bit."""
    _assert_same(_site_graph(stores[which], include_nofollow), _reference(stores[which], include_nofollow))


def test_the_stores_fold_each_way_they_can(stores):
    host, crawl = _reference(stores["host"]), _reference(stores["crawl"])
    assert host.indptr[-1] > 0 and host.weights is None  # each pair once, as Common Crawl folds hosts into domains
    assert crawl.weights is not None and crawl.weights.max() > 1  # repeated pairs summed
    followed, every = _reference(stores["nofollow"]), _reference(stores["nofollow"], include_nofollow=True)
    assert followed.indptr[-1] > 0 and every.indptr[-1] > followed.indptr[-1]  # a site pair only nofollow links make
    assert every.weights.sum() > followed.weights.sum()
    within = _reference(stores["within"])
    assert within.weights is None and within.indptr[-1] == len(DOMAIN_EDGES)  # the loaded graph alone, as stored


def test_the_ordered_site_graph_folds_where_hosts_link_and_orders_a_loaded_graph_alone(stores):
    """``ordered_site_graph``: a store whose hosts link gets the folded graph; one whose pages link only within
    their host (every in-link block read to know) gets the loaded domain graph in the order asked."""

    def reverse(out_degree, members):
        return np.flatnonzero(members)[::-1]

    with Store(stores["both"], readonly=True) as store:
        folded = store.sites.ordered_site_graph(reverse)
    assert isinstance(folded, LevelGraph)
    _assert_same(folded, _reference(stores["both"]))
    expected = _reference(stores["within"])
    with Store(stores["within"], readonly=True) as store:
        ordered = store.sites.ordered_site_graph(reverse)
    assert isinstance(ordered, sites_module.OrderedSiteGraph)
    order = ordered.order
    assert np.array_equal(
        order, (np.flatnonzero(expected.members) if expected.members is not None else np.arange(expected.n))[::-1]
    )
    for node, site in enumerate(order.tolist()):
        got = np.sort(order[ordered.indices[ordered.indptr[node] : ordered.indptr[node + 1]]])
        assert np.array_equal(got, expected.indices[expected.indptr[site] : expected.indptr[site + 1]])


@pytest.mark.parametrize("memory", [None, 16], ids=["held", "spilled"])
@pytest.mark.parametrize("which", ["host", "crawl", "both", "nofollow"])
def test_the_bounded_fold_gives_the_graph_the_in_memory_fold_gives(stores, which, memory, monkeypatch, tmp_path):
    expected = _reference(stores[which])
    assert expected.indptr[-1] > 0
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


def _random_rows(seed: int, nodes: int, links: int):
    """An in-link CSR of host-like nodes with repeated pairs and self-links."""
    rng = np.random.default_rng(seed)
    dst = np.sort(rng.integers(0, nodes, links))
    src = rng.integers(0, nodes, links).astype(np.int32)
    src[::17] = dst[::17]  # self-links
    indptr = np.searchsorted(dst, np.arange(nodes + 1)).astype(np.int64)
    return indptr, src


@pytest.mark.parametrize("memory", [None, 512], ids=["held", "spilled"])
@pytest.mark.parametrize("once", [True, False], ids=["once", "counted"])
def test_both_paths_fold_the_same_links_alike(stores, once, memory, monkeypatch):
    """Unit level: the two ways fold_links folds (each pair once, links counted), host-like links mapped to sites
    and a loaded graph beside."""
    sites_count, hosts_count = 300, 1500
    indptr, indices = _random_rows(1, hosts_count, 40_000)
    site_of = np.random.default_rng(2).integers(1, sites_count + 1, hosts_count).astype(np.int32)
    loaded_indptr, loaded_indices = _random_rows(3, sites_count, 5000)

    def pieces():
        return (
            piece
            for rows in (
                sites_module._MappedRows(indptr, indices, site_of),
                sites_module._MappedRows(loaded_indptr, loaded_indices, None),
            )
            for piece in sites_module._slices(rows, 1000)
        )

    dst = np.concatenate(
        [np.repeat(site_of, np.diff(indptr)), np.repeat(np.arange(1, sites_count + 1), np.diff(loaded_indptr))]
    )
    src = np.concatenate([site_of[indices], loaded_indices + 1])
    expected = fold_links(sites_count, dst, src, None, once=once)
    assert (expected.weights is None) == once
    _assert_same(sites_module._fold_at_once(sites_count, pieces(), once), expected)
    _force_bounded(monkeypatch, memory)
    with Store(stores["crawl"], readonly=True) as store:
        got = store.sites._fold_bounded(sites_count, pieces(), len(indices) + len(loaded_indices), once)
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
    """(tracemalloc peak of the site graph, read and folded from a store just opened; the host graph's links)."""
    with Store(path, readonly=True) as store:
        links = int(store.hosts.host_graph().indptr[-1])
    gc.collect()
    with Store(path, readonly=True) as store:
        tracemalloc.start()
        graph = store.sites.site_graph()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert graph.indptr[-1] > 0
        return peak, links


def test_the_fold_of_a_big_host_graph_holds_no_host_graph(tmp_path, monkeypatch):
    """At a size past the threshold the fold holds no array a host link: not the host graph (4 bytes a link of
    indices alone, more while its blocks are read), nor a key array a link to sort.  What it holds is a host id
    a page, a site id a host, one slice of the page graph's in-link blocks, the sorter's bound and the folded
    graph (4 bytes a site pair, few beside the host links: most of a host's links stay in its site)."""
    path = str(tmp_path / "big.db")
    # in-link blocks of the size the test stands for: a slice of them is a small part of the graph
    monkeypatch.setattr(graph_module, "BLOCK_LINKS", 1 << 12)
    run("build", *_cc_graph(tmp_path / "graph", 20_000, 400_000, hosts_size=32), "--store", path, "-q")
    monkeypatch.setattr(sites_module, "FOLD_IN_MEMORY", 50_000, raising=False)  # the size the test stands for
    monkeypatch.setattr(sites_module, "FOLD_SLICE", 1 << 13, raising=False)
    monkeypatch.setattr(sites_module, "FOLD_BUCKET_LINKS", 1 << 13, raising=False)
    monkeypatch.setattr(sites_module, "FOLD_MEMORY", 1 << 17, raising=False)
    peak, links = _fold_peak(path)
    assert links > 350_000
    assert peak < 4 * links, f"{peak / links:.2f} bytes a host link"
