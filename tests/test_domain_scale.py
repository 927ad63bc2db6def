"""A domain graph at Common Crawl's size, the pieces that make it fit: site links packed as varint gaps (C twin
and Python reference), links sorted by target in bounded memory, sites numbered in bulk, the sites outside
the graph left out of it, and the reads that stay fast."""

from __future__ import annotations

import gzip
import os
import sqlite3

import numpy as np
import pytest
from make_domain_graph import GraphSize, make_domain_graph

import rankstore.linksort as linksort
from rankstore import ranking
from rankstore.ranking import RankOptions, load_level_graph, rank
from rankstore.solver import pagerank_dense
from rankstore.store import SCHEMA_VERSION, Store, gaps
from rankstore.store import rankings as store_rankings
from rankstore.store import sites as store_sites

from conftest import invoke, run

TWINS = {"c": (gaps.pack, gaps.unpack), "python": (gaps.pack_python, gaps.unpack_python)}


def random_lists(rng, count: int, top: int) -> tuple[np.ndarray, np.ndarray]:
    lists = [np.unique(rng.integers(0, top, rng.integers(0, 40))) for _ in range(count)]
    indptr = np.zeros(count + 1, dtype=np.int64)
    np.cumsum([len(one) for one in lists], out=indptr[1:])
    indices = np.concatenate(lists).astype(np.int32) if count else np.zeros(0, dtype=np.int32)
    return indptr, indices


@pytest.mark.parametrize("twin", sorted(TWINS))
@pytest.mark.parametrize("top", [3, 1000, 2**31 - 1])
def test_gaps_round_trip_and_both_twins_write_the_same_bytes(twin, top):
    pack, unpack = TWINS[twin]
    rng = np.random.default_rng(top)
    for count in (0, 1, 7, 200):
        indptr, indices = random_lists(rng, count, top)
        packed = pack(indptr, indices)
        reference = gaps.pack_python(indptr, indices)
        assert packed.data == reference.data and np.array_equal(packed.offsets, reference.offsets)
        assert np.array_equal(unpack(packed.offsets, packed.data), indices)
        assert np.array_equal(gaps.list_lengths(packed.offsets, packed.data), np.diff(indptr))


def test_gaps_of_a_known_list_are_the_bytes_worked_by_hand():
    # [5, 6, 300]: 5; 6 - 5 - 1 = 0; 300 - 6 - 1 = 293 = 0b10_0100101 -> 0xA5 0x02
    packed = gaps.pack(np.array([0, 3, 3, 4]), np.array([5, 6, 300, 2**31 - 1], dtype=np.int32))
    assert packed.data == bytes([5, 0, 0xA5, 0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0x07])
    assert packed.offsets.tolist() == [0, 4, 4, 9]


@pytest.mark.parametrize("twin", sorted(TWINS))
def test_gaps_refuse_what_is_no_list(twin):
    pack, unpack = TWINS[twin]
    with pytest.raises(ValueError):
        pack(np.array([0, 2]), np.array([4, 4], dtype=np.int32))  # a repeat
    with pytest.raises(ValueError):
        pack(np.array([0, 2]), np.array([4, 3], dtype=np.int32))  # descending
    with pytest.raises(ValueError):
        unpack(np.array([0, 2], dtype=np.uint32), bytes([0x80, 0x80]))  # a varint cut short
    with pytest.raises(ValueError):
        unpack(np.array([0, 6], dtype=np.uint32), bytes([0xFF] * 5 + [0x7F]))  # past int32


READERS = {"c": (gaps.tally, gaps.unpack_placed), "python": (gaps.tally_python, gaps.unpack_placed_python)}


@pytest.mark.parametrize("twin", sorted(READERS))
def test_a_graph_read_in_two_passes_counts_its_out_degrees_and_lands_in_the_order_asked(twin):
    tally, unpack_placed = READERS[twin]
    rng = np.random.default_rng(7)
    n = 300
    indptr, indices = random_lists(rng, n, n)
    packed = gaps.pack(indptr, indices)
    lengths = np.zeros(n, dtype=np.int32)
    counts = np.ones(n, dtype=np.int32)  # added to, not overwritten: one block after another
    assert tally(packed.offsets, packed.data, lengths, counts) == len(indices)
    assert np.array_equal(lengths, np.diff(indptr))
    assert np.array_equal(counts, 1 + np.bincount(indices, minlength=n))
    # rows in a new order (the empty ones left out), values renamed by another permutation
    order = rng.permutation(np.flatnonzero(lengths)).astype(np.int32)
    rows = np.full(n, -1, dtype=np.int32)
    rows[order] = np.arange(len(order))
    rename = rng.permutation(n).astype(np.int32)
    new_indptr = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(lengths[order], out=new_indptr[1:])
    out = np.full(len(indices), -7, dtype=np.int32)
    assert unpack_placed(packed.offsets, packed.data, rows, new_indptr, rename, out) == len(indices)
    for new, old in enumerate(order.tolist()):
        want = rename[indices[indptr[old] : indptr[old + 1]]]
        assert out[new_indptr[new] : new_indptr[new + 1]].tolist() == want.tolist()


@pytest.mark.parametrize("twin", sorted(READERS))
def test_a_graph_read_in_two_passes_refuses_what_does_not_fit(twin):
    tally, unpack_placed = READERS[twin]
    packed = gaps.pack(np.array([0, 2, 3]), np.array([1, 4, 0], dtype=np.int32))
    with pytest.raises(ValueError):  # a value past the counts
        tally(packed.offsets, packed.data, np.zeros(2, dtype=np.int32), np.zeros(4, dtype=np.int32))
    with pytest.raises(TypeError):  # counts it would write past
        gaps.tally(packed.offsets, packed.data, np.zeros(2, dtype=np.int32), np.zeros(5, dtype=np.int64))
    rename = np.arange(5, dtype=np.int32)
    out = np.zeros(3, dtype=np.int32)
    with pytest.raises(ValueError):  # a row shorter than its list
        unpack_placed(packed.offsets, packed.data, np.array([0, 1], np.int32), np.array([0, 1, 3]), rename, out)
    with pytest.raises(ValueError):  # a list with no row
        unpack_placed(packed.offsets, packed.data, np.array([0, -1], np.int32), np.array([0, 2]), rename, out)
    with pytest.raises(ValueError):  # a value renamed below 0: a node left out has a link
        gone = rename.copy()
        gone[4] = -1
        unpack_placed(packed.offsets, packed.data, np.array([1, 0], np.int32), np.array([0, 1, 3]), gone, out)


def reference_lists(n: int, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keep = src != dst
    key = np.unique(dst[keep].astype(np.int64) * n + src[keep])
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(key // n, minlength=n), out=indptr[1:])
    return indptr, (key % n).astype(np.int32)


@pytest.mark.parametrize("memory", [1 << 30, 4096])  # all in memory; spilled to files
def test_link_sorter_gives_each_targets_sources_once_ascending_whatever_the_order(tmp_path, memory):
    rng = np.random.default_rng(7)
    n, m = 1000, 20_000
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    src[:50] = dst[:50]  # self-links, left out
    src[50:100], dst[50:100] = src[100:150], dst[100:150]  # repeats, kept once
    folder = str(tmp_path / "spill")
    with linksort.LinkSorter(n, folder, memory=memory, bucket_rows=97) as sorter:
        for lo in range(0, m, 3000):
            sorter.add(src[lo : lo + 3000], dst[lo : lo + 3000])
        if memory < 1 << 20:
            assert len(os.listdir(folder)) == sorter.buckets  # every bucket spilled
        parts = list(sorter.parts())
    assert not os.path.exists(folder)
    assert [part.first for part in parts] == list(range(0, n, 97))
    indptr = np.concatenate([[0], np.cumsum(np.concatenate([np.diff(part.indptr) for part in parts]))])
    indices = np.concatenate([part.indices for part in parts])
    want_indptr, want_indices = reference_lists(n, src, dst)
    assert np.array_equal(indptr, want_indptr) and np.array_equal(indices, want_indices)


def write_domain_graph(folder, names: list[str], edges: list[tuple[int, int]]) -> None:
    os.makedirs(folder, exist_ok=True)
    with gzip.open(os.path.join(folder, "vertices.txt.gz"), "wt") as handle:
        handle.writelines(f"{i}\t{name}\t1\n" for i, name in enumerate(names))
    with gzip.open(os.path.join(folder, "edges.txt.gz"), "wt") as handle:
        handle.writelines(f"{a}\t{b}\n" for a, b in edges)


def site_links_of(path: str) -> tuple[list, list[str]]:
    with Store(path, readonly=True) as store:
        links = store.site_links.links(store.sites.site_count())
        names = [batch for batch in store.sites.site_batches()]
    return [links.indptr.tolist(), links.indices.tolist()], [name for batch in names for name in batch.names]


@pytest.fixture(scope="module")
def small_graph(tmp_path_factory):
    folder = tmp_path_factory.mktemp("domain")
    made = make_domain_graph(GraphSize(3000, 40_000), str(folder / "graph"), parts=2, seed=5)
    return folder, made


def test_a_domain_graph_with_its_edges_shuffled_builds_the_same_store_spilled_or_not(small_graph, monkeypatch):
    folder, made = small_graph
    sorted_store = str(folder / "sorted.db")
    run("build", str(folder / "graph"), "--store", sorted_store, "-q")
    # the same graph, its edges shuffled into one file
    vertices = [line for part in sorted((folder / "graph" / "vertices").iterdir()) for line in gzip.open(part, "rt")]
    edges = [line for part in sorted((folder / "graph" / "edges").iterdir()) for line in gzip.open(part, "rt")]
    np.random.default_rng(1).shuffle(edges)
    shuffled = folder / "shuffled"
    shuffled.mkdir()
    with gzip.open(shuffled / "vertices.txt.gz", "wt") as handle:
        handle.writelines(vertices)
    with gzip.open(shuffled / "edges.txt.gz", "wt") as handle:
        handle.writelines(edges)
    monkeypatch.setattr(linksort, "MEMORY", 1 << 16)  # spilled: many files, read back in turn
    monkeypatch.setattr(linksort, "BUCKET_ROWS", 256)
    shuffled_store = str(folder / "shuffled.db")
    run("build", str(shuffled / "vertices.txt.gz"), str(shuffled / "edges.txt.gz"), "--store", shuffled_store, "-q")
    assert site_links_of(shuffled_store) == site_links_of(sorted_store)
    assert not os.path.exists(linksort.spill_folder(shuffled_store))
    with Store(sorted_store, readonly=True) as store:
        assert store.site_links.count() == made.links and store.sites.site_count() == made.sites


def test_a_site_named_twice_keeps_its_first_id_and_the_build_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(store_sites, "BULK", 2)  # the bulk numbering, on a few names
    names = ["com.alpha", "com.beta", "org.gamma", "com.beta"]  # the reader has no duplicate ids, names may repeat
    write_domain_graph(tmp_path / "g", names, [(0, 1), (3, 0), (2, 3), (1, 2)])
    store_path = str(tmp_path / "s.db")
    result = invoke("build", str(tmp_path / "g"), "--store", store_path)
    assert result.exit_code == 3 and "1  site named twice (its vertices linked as the first)" in result.output
    with Store(store_path, readonly=True) as store:
        assert store.sites.site_names([1, 2, 3, 4]) == {1: "alpha.com", 2: "beta.com", 3: "gamma.org"}
        links = store.site_links.links(store.sites.site_count())
        # 0 -> 1 (beta), 3 (beta) -> 0, 2 -> 3 (beta), 1 (beta) -> 2: beta's links as one site's
        pairs = {
            (int(s) + 1, t + 1) for t in range(links.n) for s in links.indices[links.indptr[t] : links.indptr[t + 1]]
        }
        assert pairs == {(1, 2), (2, 1), (3, 2), (2, 3)}
        assert store.db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'sites_by_name'").fetchone()[0] == 1
        skipped = store.db.execute("SELECT skip_reasons FROM builds").fetchone()[0]
    assert "named twice" in skipped


def test_sites_a_crawl_numbered_keep_their_ids_when_a_domain_graph_comes_in_bulk(tmp_path, monkeypatch):
    monkeypatch.setattr(store_sites, "BULK", 2)
    store_path = str(tmp_path / "s.db")
    with Store(store_path) as store, store.transaction():
        assert store.sites.ensure_sites(["example.com", "other.org"]).tolist() == [1, 2]
    write_domain_graph(tmp_path / "g", ["com.new", "org.other", "com.example"], [(0, 1), (1, 2)])
    run("build", str(tmp_path / "g"), "--store", store_path, "-q")
    with Store(store_path, readonly=True) as store:
        assert [store.sites.site_id(name) for name in ("example.com", "other.org", "new.com")] == [1, 2, 3]


def test_a_domain_graph_read_in_the_solvers_order_ranks_as_the_graph_read_by_site(small_graph, tmp_path):
    folder, made = small_graph
    store_path = str(tmp_path / "s.db")
    run("build", str(folder / "graph"), "--store", store_path, "-q")
    with Store(store_path) as store:
        ordered = load_level_graph(store, "site")
        by_site = ranking._level_graph(store.sites.site_graph(), "sites", 0.0)
        # the same nodes and links, the solver's groups laid out as read: out-degree 32 or more first, sinks last
        assert sorted(ordered.page_ids.tolist()) == by_site.page_ids.tolist() and ordered.ids == by_site.ids
        assert not np.all(np.diff(ordered.page_ids) > 0)
        degree = np.bincount(ordered.graph.indices, minlength=ordered.graph.n)
        assert np.array_equal(ordered.graph.out_degree, degree)
        assert degree[0] >= 32 and (degree[-100:] == 0).all()
        pairs = {
            (int(ordered.page_ids[s]), int(ordered.page_ids[t]))
            for t in range(ordered.graph.n)
            for s in ordered.graph.indices[ordered.graph.indptr[t] : ordered.graph.indptr[t + 1]]
        }
        want = {
            (int(by_site.page_ids[s]), int(by_site.page_ids[t]))
            for t in range(by_site.graph.n)
            for s in by_site.graph.indices[by_site.graph.indptr[t] : by_site.graph.indptr[t + 1]]
        }
        assert pairs == want and len(pairs) == made.links
        rank(store, RankOptions(name="a", level="site", tol=1e-12), loaded=by_site)
        rank(store, RankOptions(name="b", level="site", tol=1e-12))
        a = store.rankings.ranking_arrays(store.rankings.ranking("a").id)
        b = store.rankings.ranking_arrays(store.rankings.ranking("b").id)
        assert np.abs(a.scores - b.scores).sum() < 1e-10 and np.array_equal(a.inlinks, b.inlinks)
        # a warm start from the version before, laid out by the ids in the solver's order
        again = rank(store, RankOptions(name="b", level="site", tol=1e-12, force=True))
        assert again.result.iterations < 3
        c = store.rankings.ranking_arrays(store.rankings.ranking("b").id)
        assert np.abs(c.scores - b.scores).sum() < 1e-10


def test_sites_outside_the_graph_score_0_and_the_others_as_in_the_graph_without_them(tmp_path):
    # 0 -> 1 -> 2 -> 0 and 3 -> 0; site 4 ("com.lonely") has no link in or out
    names = ["com.a", "com.b", "com.c", "com.d", "com.lonely"]
    write_domain_graph(tmp_path / "g", names, [(0, 1), (1, 2), (2, 0), (3, 0)])
    store_path = str(tmp_path / "s.db")
    run("build", str(tmp_path / "g"), "--store", store_path, "-q")
    with Store(store_path) as store:
        loaded = load_level_graph(store, "site")
        assert loaded.page_ids.tolist() == [1, 2, 3, 4] and loaded.ids == 5
        rank(store, RankOptions(name="siterank", level="site", tol=1e-14), loaded=loaded)
        scores = store.rankings.ranking_arrays(store.rankings.ranking("siterank").id).scores
    dense = np.zeros((4, 4))  # row: the linking site
    for a, b in [(0, 1), (1, 2), (2, 0), (3, 0)]:
        dense[a, b] = 1
    assert np.abs(scores[:4] - pagerank_dense(dense, 0.85)).sum() < 1e-12 and scores[4] == 0


def test_a_schema_9_store_gets_its_site_links_packed_and_its_names_indexed(tmp_path):
    write_domain_graph(tmp_path / "g", ["com.a", "com.b", "com.c"], [(0, 1), (0, 2), (1, 2), (2, 0)])
    store_path = str(tmp_path / "s.db")
    run("build", str(tmp_path / "g"), "--store", store_path, "-q")
    want = site_links_of(store_path)
    # back to schema 9: int32 sources, the name unique by the column's constraint
    db = sqlite3.connect(store_path, isolation_level=None)
    db.execute("BEGIN")
    for first, offsets, sources in db.execute("SELECT first, offsets, sources FROM site_links").fetchall():
        bounds = np.frombuffer(offsets, dtype=np.uint32)
        lists = gaps.unpack(bounds, sources)
        counts = gaps.list_lengths(bounds, sources)
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
        db.execute(
            "UPDATE site_links SET offsets = ?, sources = ? WHERE first = ?", (indptr.tobytes(), lists.tobytes(), first)
        )
    for view in [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'view'")]:
        db.execute(f"DROP VIEW {view}")
    db.execute("CREATE TABLE old_sites (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, hosts INTEGER NOT NULL)")
    db.execute("INSERT INTO old_sites SELECT id, name, hosts FROM sites")
    db.execute("DROP TABLE sites")
    db.execute("ALTER TABLE old_sites RENAME TO sites")
    db.execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")
    db.execute("COMMIT")
    db.close()
    with Store(store_path) as store:
        assert store.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(
            SCHEMA_VERSION
        )
        assert store.db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'sites_by_name'").fetchone()[0] == 1
        assert store.sites.site_id("b.com") == 2
    assert site_links_of(store_path) == want
    run("rank", "--level", "site", "--store", store_path, "-q")
    assert "a.com" in run("top", "--ranking", "siterank", "--store", store_path)


@pytest.mark.parametrize("share", [64, 1])  # the most-linked site down the order by score; and by its list
def test_the_referrers_of_a_site_are_its_best_in_links_either_way(small_graph, monkeypatch, share):
    folder, _ = small_graph
    store_path = str(folder / f"read{share}.db")
    run("build", str(folder / "graph"), "--store", store_path, "-q")
    run("rank", "--level", "site", "--store", store_path, "-q")
    monkeypatch.setattr(store_rankings, "_DENSE_SHARE", share)
    with Store(store_path, readonly=True) as store:
        head = store.levels.level_head("site")
        arrays = store.rankings.ranking_arrays(head.ranking_id)
        top = int(np.argmax(arrays.inlinks)) + 1
        name = store.sites.site_names([top])[top]
        got = store.levels.referrers(head, name, 50)
        sources = store.site_links.in_links(top).astype(np.int64)
        best = sources[np.argsort(arrays.position[sources], kind="stable")][:50]
        assert [r.place for r in got] == [int(np.count_nonzero(arrays.scores > s)) for s in arrays.scores[best]]
        names = store.sites.site_names((best + 1).tolist())
        assert [r.name for r in got] == [names[i + 1] for i in best.tolist()]
        assert all(r.links == 1 for r in got)
