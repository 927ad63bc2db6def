"""``rankstore history``: a target's backlinks, referring hosts and sites per build, and its rank per version,
held exactly to an independent reading of real recrawls (``historykit``) and of edge lists over several
hosts and sites; ``--plot`` draws a real image."""

from __future__ import annotations

import gzip
import json
import os
import sqlite3
import struct
import zlib

import numpy as np
import pytest
from click.testing import CliRunner
from historykit import (
    BACK,
    expected_counts,
    history_json,
    host,
    links_by_build,
    recrawls,
    run,
    several_hosts_store,
    site,
)

from rankstore.cli import cli
from rankstore.store import Store

from conftest import DATA

COUNTS = [
    "backlinks", "new_backlinks", "lost_backlinks", "referring_hosts", "new_hosts", "lost_hosts",
    "referring_sites", "new_sites", "lost_sites",
]  # fmt: skip


@pytest.fixture(scope="module")
def crawls(tmp_path_factory):
    return recrawls(tmp_path_factory)


def _counts(rows: list[dict]) -> list[dict]:
    return [{name: row[name] for name in COUNTS} for row in rows]


def _places(store_path: str, name: str, node: int) -> list[tuple]:
    """(version, build, score, place, percentile) of node index ``node`` in each version of ``name``, from the
    version's raw scores: its place 1 + the scores above its own (score, place and percentile None for a
    version whose scores the store has dropped: it keeps a ranking's two newest)."""
    out = []
    with Store(store_path, readonly=True) as store:
        for ranking_id, version, build in store.db.execute(
            "SELECT id, version, build FROM rankings WHERE name = ? ORDER BY version", (name,)
        ).fetchall():
            if not store.db.execute(
                "SELECT count(*) FROM ranking_blocks WHERE ranking_id = ?", (ranking_id,)
            ).fetchone()[0]:
                out.append((version, build, None, None, None))  # dropped by a newer version
                continue
            _, scores = store.rankings.scores_of(ranking_id)
            score = float(scores[node])
            place = 1 + int(np.count_nonzero(scores > score))
            out.append((version, build, score, place, 100.0 * (len(scores) - place + 1) / len(scores)))
    return out


def test_a_page_s_counts_per_build_are_the_crawls(crawls):
    target = crawls.url + "library/functions.html"
    rows = history_json(crawls.three, target)
    expected = expected_counts(links_by_build(crawls.warcs), lambda url: url == target)
    assert [row["build"] for row in rows] == [1, 2, 3]
    assert _counts(rows) == expected
    # what the edits did: two pages lost their links, two and a new page gained one, the third crawl nothing
    assert (rows[1]["new_backlinks"], rows[1]["lost_backlinks"]) == (3, 2)
    assert (rows[2]["new_backlinks"], rows[2]["lost_backlinks"]) == (0, 0)
    assert rows[0]["backlinks"] > 10 and rows[0]["referring_hosts"] == 1


def test_a_page_s_rank_per_version_is_its_place_among_the_scores(crawls):
    target = crawls.url + "library/functions.html"
    rows = history_json(crawls.three, target)
    with Store(crawls.three, readonly=True) as store:
        node = store.pages.page_id(target) - 1
    expected = _places(crawls.three, "pagerank", node)
    assert [(row["version"], row["build"]) for row in rows] == [(v, b) for v, b, *_ in expected] == [
        (1, 1), (2, 2), (3, 3)
    ]  # fmt: skip
    assert [score is None for _, _, score, _, _ in expected] == [True, False, False]
    for row, (_, _, score, place, share) in zip(rows, expected):
        assert (row["score"], row["place"]) == (score, place)
        assert row["percentile"] == (None if share is None else pytest.approx(share, abs=1e-4))


def test_csv_and_table_have_the_same_rows(crawls):
    target = crawls.url + "library/functions.html"
    rows = history_json(crawls.three, target)
    text = run("history", target, "--format", "csv", "--store", crawls.three).splitlines()
    assert text[0].split(",") == list(rows[0])
    assert [line.split(",")[2] for line in text[1:]] == [str(row["backlinks"]) for row in rows]
    table = run("history", target, "--store", crawls.three).splitlines()
    assert table[0].split()[:3] == ["build", "started_at", "backlinks"] and len(table) == 1 + len(rows)


def test_plot_writes_an_image(crawls, tmp_path):
    target = crawls.url + "library/functions.html"
    for name in ("h.png", "h.svg"):
        result = CliRunner().invoke(
            cli, ["history", target, "--plot", str(tmp_path / name), "--store", crawls.three], catch_exceptions=False
        )
        assert result.exit_code == 0, result.output
    data = (tmp_path / "h.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width > 400 and height > 200
    at = 8
    while at < len(data):  # every chunk whole and its CRC right, to IEND
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind = data[at + 4 : at + 8]
        (crc,) = struct.unpack(">I", data[at + 8 + length : at + 12 + length])
        assert zlib.crc32(data[at + 4 : at + 8 + length]) == crc
        at += 12 + length
    assert kind == b"IEND"
    svg = (tmp_path / "h.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and svg.rstrip().endswith("</svg>")
    refused = CliRunner().invoke(cli, ["history", target, "--plot", str(tmp_path / "h.txt"), "--store", crawls.three])
    assert refused.exit_code == 2 and ".png or .svg" in refused.output


def test_unknown_targets_and_rankings_are_one_line_errors(crawls):
    for args in (
        ["history", crawls.url + "nowhere.html"],
        ["history", "nowhere.test", "--host"],
        ["history", "nowhere.test", "--site"],
        ["history", crawls.url + "library/functions.html", "--ranking", "nosuch"],
    ):
        result = CliRunner().invoke(cli, [*args, "--store", crawls.three])
        assert result.exit_code == 1, result.output
        assert result.output.startswith("Error: ") and len(result.output.strip().splitlines()) == 1
        assert "Traceback" not in result.output


# ------------------------------------------------------------------ a host, and a site of several hosts


@pytest.fixture(scope="module")
def several_hosts(tmp_path_factory):
    return several_hosts_store(tmp_path_factory.mktemp("several-hosts"))


def test_a_host_s_counts_leave_out_its_own_pages(several_hosts):
    store, held = several_hosts
    name = "blog.target.test"
    rows = history_json(store, name, "--host")
    assert _counts(rows) == expected_counts(held, lambda url: host(url) == name)
    assert any(row["new_backlinks"] for row in rows[1:]) and any(row["lost_backlinks"] for row in rows[1:])
    with Store(store, readonly=True) as opened:
        node = opened.hosts.host_id(name) - 1
    expected = _places(store, "hostrank", node)
    assert [(row["version"], row["build"], row["score"], row["place"]) for row in rows] == [e[:4] for e in expected]


def test_a_site_of_several_hosts_counts_links_from_other_sites_only(several_hosts):
    store, held = several_hosts
    rows = history_json(store, "target.test", "--site")
    expected = expected_counts(held, lambda url: site(url) == "target.test")
    assert _counts(rows) == expected
    assert (rows[1]["lost_sites"], rows[2]["new_sites"]) == (2, 2)  # four.test and six.test, then five and six
    with sqlite3.connect(store) as db:  # six.test's link has two lives: lost in build 2, current since build 3
        assert db.execute(
            "SELECT l.first_build, l.lost_build FROM lost_links l JOIN pages s ON s.id = l.src JOIN pages d"
            " ON d.id = l.dst WHERE s.url = ? AND d.url = ?",
            (BACK, "http://www.target.test/1"),
        ).fetchall() == [(1, 2)]
    # a URL of the site names it too, and its hosts' links among themselves are no backlinks
    assert history_json(store, "http://shop.target.test/1", "--site") == rows
    with Store(store, readonly=True) as opened:
        node = opened.sites.site_id("target.test") - 1
    assert [(row["version"], row["score"], row["place"]) for row in rows] == [
        (v, score, place) for v, _, score, place, _ in _places(store, "siterank", node)
    ]
    # the host view of one of them counts its sister hosts' links, which the site view leaves out
    host_rows = history_json(store, "www.target.test", "--host")
    assert _counts(host_rows) == expected_counts(held, lambda url: host(url) == "www.target.test")
    assert host_rows[0]["referring_sites"] == rows[0]["referring_sites"] + 1


def test_a_ranking_of_another_level_is_refused(several_hosts):
    store, _ = several_hosts
    result = CliRunner().invoke(cli, ["history", "target.test", "--site", "--ranking", "hostrank", "--store", store])
    assert result.exit_code == 1 and "ranks hosts, not sites" in result.output
    page = json.loads(run("history", "http://www.target.test/0", "--format", "json", "--store", store))
    assert [row["version"] for row in page] == [1, 2, 3]


def test_a_domain_graph_s_site_links_are_named_not_counted(tmp_path):
    """A Common Crawl domain graph's site links replace the last one's whole: no build history to count; the
    history says how many sites link, and still gives the site's rank."""
    graph = os.path.join(DATA, "ccgraph", "domain")
    store = str(tmp_path / "domains.db")
    run("build", os.path.join(graph, "vertices.txt.gz"), os.path.join(graph, "edges.txt.gz"), "--store", store, "-q")
    run("rank", "--level", "site", "--store", store, "-q")
    result = CliRunner().invoke(cli, ["history", "example.com", "--site", "--format", "json", "--store", store])
    assert result.exit_code == 0, result.output
    edges = [line.split() for line in gzip.open(os.path.join(graph, "edges.txt.gz"), "rt") if line.strip()]
    sources = {src for src, dst in edges if dst == "0" and src != "0"}  # vertex 0 is com.example
    assert sources and f"its {len(sources)} sites linking to example.com are not counted" in result.stderr
    [row] = json.loads(result.stdout)
    assert row["referring_sites"] == 0 and row["place"] is not None


@pytest.mark.parametrize(
    "keep, shown", [(2, [False, False, True, True]), (3, [False, True, True, True]), (0, [True] * 4)]
)
def test_rank_keep_keeps_that_many_versions_and_history_places_each(tmp_path, keep, shown):
    """``rank --keep N``: the scores of N versions stay (0: all), and history shows a place for each of them, the
    place every view reads; the older ones' rows stay, without a score."""
    from conftest import edge_store

    edges = [(f"http://a.test/{i}", f"http://a.test/{(i * 7 + 3) % 12}") for i in range(12)]
    edges += [(f"http://a.test/{i}", "http://a.test/0") for i in range(1, 6)]
    store = edge_store(tmp_path, edges)
    for _ in range(3):
        result = CliRunner().invoke(cli, ["rank", "--store", store, "--force", "--keep", str(keep), "-q"])
        assert result.exit_code == 0, result.output
    rows = [row for row in history_json(store, "http://a.test/0") if row.get("version")]
    assert [row["version"] for row in rows] == [1, 2, 3, 4]
    assert [row["place"] is not None for row in rows] == shown
    assert all(row["place"] == 1 for row in rows if row["place"] is not None)  # the most-linked page, each time


@pytest.mark.parametrize("steady", [1.0, -1.0], ids=["hosts and sites marked in a table", "grouped by a sort"])
def test_both_ways_of_counting_hosts_and_sites_give_the_crawls_counts(several_hosts, crawls, monkeypatch, steady):
    """Referring hosts and sites are counted from a table of the values of the lives that span every build when
    most do (a paper-scale page: millions, no sort), else by sorting the values: both give the independent
    counts, for a page, a host and a site, over recrawls that moved links and sites both ways."""
    from rankstore.store import history

    monkeypatch.setattr(history, "_STEADY_MOST_OTHERS", steady)
    store, held = several_hosts
    for target, args, inside in (
        ("target.test", ("--site",), lambda url: site(url) == "target.test"),
        ("blog.target.test", ("--host",), lambda url: host(url) == "blog.target.test"),
        ("http://www.target.test/1", (), lambda url: url == "http://www.target.test/1"),
    ):
        assert _counts(history_json(store, target, *args)) == expected_counts(held, inside), (target, steady)
    page = crawls.url + "library/functions.html"
    expected = expected_counts(links_by_build(crawls.warcs), lambda url: url == page)
    assert _counts(history_json(crawls.three, page)) == expected
