"""The head of a ranking read without its whole arrays (issue 34, reads on the whole domain graph).

`top` and the own /top page show the first rows of a ranking; `show` one page's score and rank.  They read
the blocks of the version that hold those rows (:class:`rankstore.store.rankings.RankingBlocks`), never the
version's arrays whole: what they read grows with the rows shown, not with the ranking.  Their answers are
the whole arrays' answers, for ties, a ranking that scores pages 0, rankings of hosts and sites, and pages
past the ranked count.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from rankstore.store import Store, analysis
from rankstore.store import rankings as rankings_module
from rankstore.store.rankings import RankingArrays, Rankings
from rankstore.store.schema import BLOCK_PAGES

from conftest import invoke, run

NODES = 20_000  # 157 blocks a version
LINKED = 4_000  # only these have in-links: the rest tie at the lowest score, across many blocks
RANKINGS = ["pagerank", "personalized", "hostrank", "siterank"]


def _url(node: int) -> str:
    return f"http://h{node % 10_000}.s{node % 2_000}.org/p{node}"  # 79 blocks of hosts, 16 of sites


@pytest.fixture(scope="module")
def graph(tmp_path_factory) -> str:
    """An edge list's store, ranked four ways: pages (ties), pages from one source (most score 0), hosts, sites."""
    work = tmp_path_factory.mktemp("top-head")
    chosen = random.Random(34)
    edges = work / "edges.txt"
    with open(edges, "w", encoding="ascii") as out:
        for node in range(NODES):
            for _ in range(3):
                out.write(f"{_url(node)} {_url(int(LINKED * chosen.random() ** 2))}\n")
    path = str(work / "graph.db")
    run("build", str(edges), "--store", path, "-q")
    run("rank", "--store", path, "-q")
    run("rank", "--source", _url(5), "--store", path, "-q")
    run("rank", "--level", "host", "--store", path, "-q")
    run("rank", "--level", "site", "--store", path, "-q")
    return path


def _whole_arrays(monkeypatch) -> None:
    """Every view reads the version's arrays whole, as before: the answers to hold the blocks' to."""
    monkeypatch.setattr(
        Rankings, "rows_reader", lambda self, ranking_id, rows, positions=False: self.ranking_arrays(ranking_id)
    )

    def whole_range(self, ranking):
        arrays = self.ranking_arrays(ranking.id)
        positive = int(np.count_nonzero(arrays.scores > 0))
        if not positive:
            return 0.0, 0.0
        return float(arrays.scores[arrays.best[positive - 1]]), float(arrays.scores[arrays.best[0]])

    monkeypatch.setattr(Rankings, "score_range", whole_range)


def _arrays(path: str, name: str) -> RankingArrays:
    with Store(path, readonly=True) as store:
        return store.rankings.ranking_arrays(store.rankings.ranking(name).id)


@pytest.mark.parametrize(
    ("ranking", "limit"),
    [(ranking, limit) for ranking in RANKINGS for limit in ("1", "3", "129")] + [("siterank", "0")],
)
def test_top_answers_as_the_whole_arrays_do(graph, ranking, limit, monkeypatch):
    got = run("top", "--ranking", ranking, "-n", limit, "--format", "json", "--store", graph)
    with monkeypatch.context() as whole:
        _whole_arrays(whole)
        expected = run("top", "--ranking", ranking, "-n", limit, "--format", "json", "--store", graph)
    assert got == expected
    rows = json.loads(got)
    arrays = _arrays(graph, ranking)
    assert len(rows) == (arrays.pages if limit == "0" else int(limit))
    key = "pagerank" if ranking in ("pagerank", "personalized") else f"{ranking[:4]}_pagerank"
    assert [row[key] for row in rows] == arrays.scores[arrays.best[: len(rows)]].tolist()


def test_the_fixture_has_ties_and_zeros(graph):
    ties = _arrays(graph, "pagerank").scores
    assert np.count_nonzero(ties == ties.min()) > NODES - LINKED - 100  # a run of ties across many blocks
    zeros = _arrays(graph, "personalized").scores
    assert np.count_nonzero(zeros == 0) > NODES // 2 and np.count_nonzero(zeros > 0) > 0


@pytest.mark.parametrize("ranking", RANKINGS)
def test_pages_and_offsets_read_by_blocks_are_the_arrays_rows(graph, ranking):
    arrays = _arrays(graph, ranking)
    count = arrays.pages
    with Store(graph, readonly=True) as store:  # a store of its own: no arrays held, so blocks are read
        version = store.rankings.ranking(ranking)
        for offset, limit in [(0, 5), (BLOCK_PAGES - 1, 3), (BLOCK_PAGES, 1), (count - 2, 10), (count, 5)]:
            if version.level == "page":
                rows = store.queries.top(ranking, limit, offset)
                names = [row["url"] for row in rows]
                ids = [store.pages.page_id(url) for url in names]
            else:
                rows = analysis.top_nodes(store, ranking, version.level, limit, offset)
                number_of = store.hosts.host_id if version.level == "host" else store.sites.site_id
                ids = [number_of(row[version.level]) for row in rows]
            assert [i - 1 for i in ids] == arrays.best[offset : offset + limit].tolist()  # past the end: none
            shown = arrays.scores[arrays.best[offset : offset + limit]]
            # a row's place: how many score more (ties alike), counted here over the whole version
            assert [row["place"] for row in rows] == [int(np.count_nonzero(arrays.scores > s)) for s in shown]
            assert [row["inlinks"] for row in rows] == arrays.inlinks[arrays.best[offset : offset + limit]].tolist()
        assert store.rankings.score_range(version) == _whole_range(arrays)
        assert not store.rankings._arrays  # never read whole


def _whole_range(arrays: RankingArrays) -> tuple[float, float]:
    positive = arrays.scores[arrays.scores > 0]
    return (float(positive.min()), float(positive.max())) if len(positive) else (0.0, 0.0)


@pytest.mark.parametrize("ranking", RANKINGS)
def test_a_position_found_in_the_blocks_is_the_arrays_position(graph, ranking):
    arrays = _arrays(graph, ranking)
    with Store(graph, readonly=True) as store, store.snapshot():
        version = store.rankings.ranking(ranking)
        blocks = rankings_module.RankingBlocks(store.db, version.id, version.pages)
        # every block's edges, the ends of the order, and a spread of pages: ties and zeros among them
        picked = {0, 1, arrays.pages - 1} | set(range(0, arrays.pages, 37))
        picked |= {int(arrays.best[k]) for k in range(0, arrays.pages, BLOCK_PAGES)}
        picked |= {int(arrays.best[k - 1]) for k in range(BLOCK_PAGES, arrays.pages, BLOCK_PAGES)}
        for index in sorted(picked):
            assert blocks.position[index] == arrays.position[index], index
            assert blocks.scores[index] == arrays.scores[index]
            assert blocks.inlinks[index] == arrays.inlinks[index]


def test_show_answers_as_the_whole_arrays_do(graph, monkeypatch):
    asked = [_url(0), _url(5), _url(LINKED + 7), _url(NODES - 1), "http://nowhere.example/"]
    for ranking in RANKINGS:
        got = invoke("show", *asked, "--ranking", ranking, "--format", "json", "--store", graph)
        with monkeypatch.context() as whole:
            _whole_arrays(whole)
            expected = invoke("show", *asked, "--ranking", ranking, "--format", "json", "--store", graph)
        assert (got.exit_code, got.stdout, got.stderr) == (expected.exit_code, expected.stdout, expected.stderr)
        assert len(json.loads(got.stdout)) == 4


class _Reads:
    """What the views read of the ranking versions: whole versions, and blocks one at a time."""

    def __init__(self, monkeypatch):
        self.whole: list[int] = []
        self.blocks = 0
        whole_read = Rankings.ranking_arrays

        def ranking_arrays(rankings, ranking_id):
            self.whole.append(ranking_id)
            return whole_read(rankings, ranking_id)

        monkeypatch.setattr(Rankings, "ranking_arrays", ranking_arrays)
        blocks = getattr(rankings_module, "RankingBlocks", None)  # before it, the views read versions whole
        if blocks is not None:
            block_read = blocks._read

            def read(reader, number):
                self.blocks += 1
                return block_read(reader, number)

            monkeypatch.setattr(blocks, "_read", read)


@pytest.mark.parametrize("ranking", RANKINGS)
def test_top_and_show_read_the_head_not_the_whole_version(graph, ranking, monkeypatch):
    pages = _arrays(graph, ranking).pages
    versions = -(-pages // BLOCK_PAGES)
    search = 2 * pages.bit_length()  # a binary search down the order: a best block and a scores block a step
    reads = _Reads(monkeypatch)
    for limit in (3, 50) if versions > 100 else (3,):
        reads.blocks = 0
        run("top", "--ranking", ranking, "-n", str(limit), "--store", graph)
        assert reads.whole == []
        # the head's best block, a block per row at most, the bars' ends (the last score above 0: a search)
        assert 0 < reads.blocks <= min(2 + limit + search, versions - 1)
    if versions > 100:
        reads.blocks = 0
        run("show", _url(LINKED + 7), "--ranking", ranking, "--store", graph)  # its position and its host's
        assert reads.whole == []
        assert 0 < reads.blocks <= 3 * search + 2 < versions
