"""Ties read alike: equal scores get one rank and one percentile in every view, export and tooltip.

The definition (``rankstore.display.percentile``): a node's percentile is the share of the nodes that score
at most as much as it does, its rank is one more than the number that score more.  A run of equal scores
takes its best place: the run's first node stood there before, the others read as it does now.

Each test failed on what had landed (987a5be): 100.00 and 75.00 for the two tied pages below, ranks 2 and 3.
"""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from click.testing import CliRunner

from proxy_addon.pages import respond
from proxy_addon.ranks import Ranks
from rankstore import display
from rankstore.cli import cli
from rankstore.store import Store

from conftest import edge_store

# b and c are alike (each links to a only, a links to both) and so score exactly alike; d links to a alone and
# nothing links to d; e is linked from d alone.  Each page on its own site.
A, B, C, D, E = (f"http://{name}.example/" for name in "abcde")
EDGES = [(A, B), (A, C), (B, A), (C, A), (D, A), (D, E)]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def run(*args: str) -> str:
    done = invoke(*args)
    assert done.exit_code == 0, done.output
    return done.stdout


@pytest.fixture
def store(tmp_path) -> str:
    # personalized on a: no walk from a reaches d or e
    return edge_store(tmp_path, EDGES, ("--level", "site"), ("--source", A))


def test_the_tied_pages_score_exactly_alike(store):
    rows = {row["url"]: row for row in json.loads(run("top", "--store", store, "--format", "json", "-n", "10"))}
    assert rows[B]["pagerank"] == rows[C]["pagerank"]  # the premise: an exact tie


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_top_gives_tied_pages_one_rank_and_one_percentile(store, fmt):
    out = run("top", "--store", store, "--format", fmt, "-n", "10")
    rows = json.loads(out) if fmt == "json" else list(csv.DictReader(io.StringIO(out)))
    by_url = {row["url"]: row for row in rows}
    assert float(by_url[B]["percentile"]) == float(by_url[C]["percentile"])
    assert int(by_url[B]["rank"]) == int(by_url[C]["rank"])
    # the run takes its best place: one page scores more than b and c (a), so both are second, and 4 of 5
    # pages score at most as much as they do
    assert int(by_url[B]["rank"]) == 2 and float(by_url[B]["percentile"]) == 80.0
    # an untied page reads as before
    assert float(by_url[A]["percentile"]) == 100.0 and int(by_url[A]["rank"]) == 1


def test_show_and_export_read_ties_alike(store, tmp_path):
    shown = json.loads(run("show", B, C, "--store", store, "--format", "json"))
    assert shown[0]["percentile"] == shown[1]["percentile"] == 80.0
    out = tmp_path / "all.csv"
    run("export", "--store", store, "--format", "csv", "-o", str(out))
    exported = {row["url"]: row for row in csv.DictReader(out.open())}
    assert exported[B]["percentile"] == exported[C]["percentile"]
    assert exported[B].get("rank") == exported[C].get("rank")


def test_sites_of_equal_site_rank_read_alike(store):
    rows = json.loads(run("top", "--store", store, "--ranking", "siterank", "--format", "json", "-n", "10"))
    by_site = {row["site"]: row for row in rows}
    b, c = by_site["b.example"], by_site["c.example"]
    assert b["site_pagerank"] == c["site_pagerank"]
    assert b["percentile"] == c["percentile"] == 80.0 and b["site_rank"] == c["site_rank"] == 2


def test_pages_scored_zero_read_alike(store):
    """Personalised on a, no walk reaches d (nothing links to it) or e (only d does): both score 0 and read
    alike, third of five (three pages score more), 40 percent of the pages scoring at most 0."""
    rows = json.loads(run("top", "--store", store, "--ranking", "personalized", "--format", "json", "-n", "10"))
    by_url = {row["url"]: row for row in rows}
    assert by_url[D]["pagerank"] == by_url[E]["pagerank"] == 0.0
    assert by_url[D]["percentile"] == by_url[E]["percentile"] == 40.0
    assert by_url[D]["rank"] == by_url[E]["rank"] == 4


def test_the_proxy_tooltips_and_own_pages_read_ties_alike(store):
    ranks = Ranks(store)
    try:
        infos = ranks.lookup([B, C])
        assert infos[B].percentile == infos[C].percentile == 80.0
        status, _, body = respond("GET", "/top", {"n": ["10"]}, ranks)
        assert status == 200
        assert body.decode().count(">80.00<") == 2  # b and c, one percentile each
    finally:
        ranks.close()


def test_the_percentile_of_a_run_is_its_best_place():
    scores = np.array([0.4, 0.2, 0.2, 0.1, 0.1, 0.0, 0.0, 0.0])
    # how many score more than each
    above = np.array([0, 1, 1, 3, 3, 5, 5, 5])
    assert display.percentile(above, len(scores)).tolist() == [100.0, 87.5, 87.5, 62.5, 62.5, 37.5, 37.5, 37.5]


def test_the_store_says_how_many_score_more_in_both_readers(store):
    with Store(store, readonly=True) as opened:
        ranking = opened.rankings.ranking("pagerank")
        arrays = opened.rankings.ranking_arrays(ranking.id)
        blocks = opened.rankings.rows_reader(ranking.id, 1, True)
        scores = arrays.scores
        expected = [int(np.count_nonzero(scores > s)) for s in scores]
        assert arrays.places(np.arange(len(scores))).tolist() == expected
        assert [int(blocks.places(np.array([i]))[0]) for i in range(len(scores))] == expected
        for i in range(len(scores)):  # a few at a time, as a panel asks (remembered): in any order, and again
            assert arrays.places([i, len(scores) - 1 - i]).tolist() == [expected[i], expected[-1 - i]]
        assert arrays.places(np.arange(len(scores))[::-1]).tolist() == expected[::-1]


@pytest.mark.parametrize("asked, known", [(2, 1_000), (64, 3)], ids=["searched-whole", "memory-starts-over"])
def test_places_remembered_read_as_searched_past_either_bound(store, monkeypatch, asked, known):
    from rankstore.store import rankings

    monkeypatch.setattr(rankings, "_PLACES_ASKED_MOST", asked)
    monkeypatch.setattr(rankings, "_PLACES_KNOWN_MOST", known)
    with Store(store, readonly=True) as opened:
        arrays = opened.rankings.ranking_arrays(opened.rankings.ranking("pagerank").id)
        scores = arrays.scores
        expected = [int(np.count_nonzero(scores > s)) for s in scores]
        for start in range(len(scores)):
            wanted = [(start + step) % len(scores) for step in range(3)]
            assert arrays.places(wanted).tolist() == [expected[i] for i in wanted]
        assert len(arrays._places_known) <= max(known, 3) + 3


def test_only_the_best_reads_100_when_shown():
    """Shown to two places, a percentile is rounded down: the second of 37,330 pages (99.9973) reads 99.99, not
    the best's 100.00 (which rounding gave it, on the three doc sites' store)."""
    assert display.percentile_text(100.0) == "100.00"
    assert display.percentile_text(display.percentile(1, 37_330).round(4)) == "99.99"
    assert display.percentile_text(64.7059) == "64.70" and display.percentile_text(80.0) == "80.00"
    assert display.percentile_text(99.99, 1) == "99.9" and display.percentile_text(None) == "\u2013"
