"""Every reader answers at the level a ranking ranks: ``show`` of a URL the store lacks by its host's rank, ``show``
in a store that ranks only sites by ``siterank``; a site's row in SQL says it is a site's; a count a loaded ranks
file does not give is unknown, not 0; ``info``'s hosts say what is numbered and what is ranked; ``build --rank``
of a domain graph ranks its sites; a domain graph's links are readable from SQL."""

from __future__ import annotations

import csv
import io
import json
import shutil
import sqlite3

import numpy as np
import pytest
from make_domain_graph import GraphSize, make_domain_graph
from test_cc_ranks import gz, host_file_text

from proxy_addon.pages import respond
from proxy_addon.ranks import Ranks
from rankstore.store import SCHEMA_VERSION, Store, analysis

from conftest import data, invoke, run

MISSING = "https://example.com/not-crawled.html"  # its host is ranked; the page is in no store here
NOWHERE = "https://no-such-host.invalid/page.html"


@pytest.fixture(scope="module")
def host_store(tmp_path_factory):
    """Common Crawl's host graph of tests/data (eight hosts as root pages), ranked by host, then a host ranks
    file loaded (cc-harmonic, cc-pagerank: twelve hosts, five of them numbered by the file alone)."""
    folder = tmp_path_factory.mktemp("levels")
    path = str(folder / "hosts.db")
    run("build", data("ccgraph/host"), "--store", path, "-q")
    run("rank", "--level", "host", "--store", path, "-q")
    assert (
        invoke("build", gz(folder / "cc-main-host-ranks.txt.gz", host_file_text()), "--store", path, "-q").exit_code
        == 3
    )
    return path


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    folder = tmp_path_factory.mktemp("domain-graph")
    make_domain_graph(GraphSize(300, 2000), str(folder / "graph"), parts=1, seed=47)
    return folder / "graph"


@pytest.fixture(scope="module")
def site_store(graph, tmp_path_factory):
    """A domain graph built with --rank, as a new user does: sites and their links, no page."""
    path = str(tmp_path_factory.mktemp("sites") / "sites.db")
    built = invoke("build", str(graph), "--rank", "--store", path, "-q")
    return path, built


def _json(*args: str) -> tuple[int, list[dict], str]:
    result = invoke(*args, "--format", "json")
    return result.exit_code, json.loads(result.stdout), result.stderr


# --- 1. show by a host ranking, for a URL the store lacks --------------------------------------------------------


@pytest.mark.parametrize("ranking", ["hostrank", "cc-pagerank"])
def test_show_by_a_host_ranking_answers_a_url_the_store_lacks_by_its_hosts_rank(host_store, ranking):
    with Store(host_store, readonly=True) as store:
        assert store.pages.page_id(MISSING) is None
        host = analysis.lookup_hosts(store, ["example.com"], ranking)["example.com"]
    status, rows, said = _json("show", MISSING, "--ranking", ranking, "--store", host_store)
    assert [(row["url"], row["host"], row["host_pagerank"], row["host_rank"]) for row in rows] == [
        (MISSING, "example.com", host["pagerank"], host["place"] + 1)
    ]
    assert f"not in the store (answered by their host's rank): {MISSING}" in said
    assert "not in the store: " not in said  # no line that says it was not answered
    assert status == 1  # as for every URL not in the store
    table = invoke("show", MISSING, NOWHERE, "--ranking", ranking, "--store", host_store)
    assert "example.com" in table.stdout and table.stderr.splitlines()[-1] == f"not in the store: {NOWHERE}"


def test_show_by_a_host_ranking_of_a_url_whose_host_is_unknown_is_one_line(host_store):
    result = invoke("show", NOWHERE, "--ranking", "hostrank", "--store", host_store)
    assert result.exit_code == 1 and result.stdout == ""
    assert [line for line in result.stderr.splitlines() if not line.startswith("note:")] == [
        f"not in the store: {NOWHERE}"
    ]


# --- 2. show in a store that ranks only sites ---------------------------------------------------------------------


def test_show_in_a_store_that_ranks_only_sites_answers_by_siterank_as_top_does(site_store):
    path, _ = site_store
    best = json.loads(run("top", "-n", "1", "--format", "json", "--store", path))[0]
    url = f"https://www.{best['site']}/deep/page.html"
    status, rows, said = _json("show", url, "--store", path)
    assert status == 0, said
    assert [(row["url"], row["site"], row["site_pagerank"], row["site_rank"]) for row in rows] == [
        (url, best["site"], best["site_pagerank"], 1)
    ]
    assert "the store ranks no pages" in said and "siterank" in said
    named = invoke("show", url, "--ranking", "pagerank", "--store", path)  # the default, named: the same answer
    assert named.exit_code == 0 and best["site"] in named.stdout
    other = invoke("show", url, "--ranking", "foo", "--store", path)  # a ranking named that is not there
    assert other.exit_code == 1 and "no ranking 'foo'" in other.stderr


# --- 3. current_scores: a site's row is a site's ------------------------------------------------------------------


def test_current_scores_puts_a_sites_id_in_site_id_and_a_hosts_in_host_id(site_store, host_store):
    path, _ = site_store
    db = sqlite3.connect(path)
    rows = db.execute(
        "SELECT c.page_id, c.host_id, c.site_id, c.name, s.name FROM current_scores c"
        " JOIN sites s ON s.id = c.site_id WHERE c.ranking = 'siterank'"
    ).fetchall()
    assert len(rows) == db.execute("SELECT count(*) FROM sites").fetchone()[0] > 0
    assert all(page is None and host is None and name == site for page, host, _, name, site in rows)
    db.close()
    db = sqlite3.connect(host_store)
    hosts = db.execute(
        "SELECT c.site_id, c.name, h.name FROM current_scores c JOIN hosts h ON h.id = c.host_id"
        " WHERE c.ranking = 'hostrank'"
    ).fetchall()
    assert hosts and all(site is None and name == host for site, name, host in hosts)
    db.close()


def _schema_15_copy(source: str, path: str) -> None:
    """The store as schema 15 wrote it: its views, and a loaded ranks file's in-link counts written as 0."""
    shutil.copy(source, path)
    db = sqlite3.connect(path, isolation_level=None)
    for (view,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'view'").fetchall():
        db.execute(f"DROP VIEW {view}")
    db.execute("""CREATE VIEW current_scores AS
SELECT r.name AS ranking, r.version AS version, r.level AS level, r.build AS build, NULL AS page_id,
       t.id AS host_id, t.name AS name FROM rankings r JOIN sites t""")
    for first, length in db.execute(
        "SELECT b.first, length(b.inlinks) FROM ranking_blocks b JOIN rankings r ON r.id = b.ranking_id"
        " WHERE r.params LIKE '%\"imported\"%'"
    ).fetchall():
        db.execute("UPDATE ranking_blocks SET inlinks = zeroblob(?) WHERE first = ?", (length, first))
    db.execute("UPDATE meta SET value = '15' WHERE key = 'schema_version'")
    db.close()


def test_an_upgrade_from_15_makes_the_views_again_and_unknown_counts_unknown(host_store, tmp_path):
    path = str(tmp_path / "old.db")
    _schema_15_copy(host_store, path)
    with pytest.raises(Exception, match="schema version 15"):
        Store(path, readonly=True)
    assert run("upgrade", "--store", path) == f"{path}: schema {SCHEMA_VERSION}\n"
    assert SCHEMA_VERSION == 16
    db = sqlite3.connect(path)
    columns = [row[1] for row in db.execute("PRAGMA table_info(current_scores)")]
    assert columns[4:8] == ["page_id", "host_id", "site_id", "name"]
    assert db.execute("SELECT count(*) FROM site_link_pairs").fetchone()[0] == 0  # no domain graph here
    loaded = db.execute("SELECT inlinks FROM current_scores WHERE ranking = 'cc-pagerank'").fetchall()
    ours = db.execute("SELECT inlinks FROM current_scores WHERE ranking = 'hostrank'").fetchall()
    db.close()
    assert loaded and {value for (value,) in loaded} == {None}
    assert ours and None not in {value for (value,) in ours}
    assert all(row["inlinks"] is None for row in _json("top", "--ranking", "cc-pagerank", "--store", path)[1])


# --- 4. a count a ranks file does not give is unknown -------------------------------------------------------------


def test_a_loaded_ranks_files_in_link_counts_are_unknown_not_0(host_store, tmp_path):
    _, rows, _ = _json("top", "--ranking", "cc-pagerank", "-n", "0", "--store", host_store)
    assert len(rows) == 13 and all(row["inlinks"] is None for row in rows)
    ours = _json("top", "--ranking", "hostrank", "-n", "0", "--store", host_store)[1]
    assert sum(row["inlinks"] for row in ours) > 0  # the host graph's own counts stay
    table = run("top", "--ranking", "cc-pagerank", "--store", host_store).splitlines()
    at = table[0].split().index("inlinks")
    assert {line.split()[at] for line in table[1:]} == {"-"}
    shown = list(
        csv.DictReader(io.StringIO(run("top", "--ranking", "cc-pagerank", "--format", "csv", "--store", host_store)))
    )
    assert {row["inlinks"] for row in shown} == {""}
    _, rows, _ = _json("show", "https://example.com/", "--ranking", "cc-pagerank", "--store", host_store)
    assert rows[0]["host"] == "example.com" and rows[0]["inlinks"] is None
    exported = str(tmp_path / "cc.csv")
    run("export", "--ranking", "cc-pagerank", "--format", "csv", "-o", exported, "--store", host_store)
    with open(exported, newline="") as file:
        assert {row["inlinks"] for row in csv.DictReader(file)} == {""}
    db = sqlite3.connect(host_store)
    assert db.execute("SELECT count(inlinks) FROM current_scores WHERE ranking = 'cc-pagerank'").fetchone()[0] == 0
    db.close()


def test_the_own_pages_leave_an_unknown_count_out(host_store):
    ranks = Ranks(host_store)  # the store ranks no pages: the proxy shows its levels
    status, _, body = respond("GET", "/top", {"ranking": ["cc-pagerank"], "n": ["5"]}, ranks)
    text = body.decode()
    assert status == 200 and 'data-host="example.com"' in text
    rows = [row for row in text.split("<tr ")[1:] if "data-host=" in row]
    assert rows and all("in-links" not in row for row in rows)  # no bar's tooltip counts them
    cells = [row.split('<td class="n">')[5].split("</td>")[0] for row in rows]  # the In-links column
    assert set(cells) == {"&#8211;"}
    status, _, body = respond("GET", "/top", {"ranking": ["cc-pagerank"], "format": ["json"]}, ranks)
    assert status == 200 and {row["inlinks"] for row in json.loads(body)} == {None}
    status, _, body = respond("GET", "/page", {"url": ["https://example.com/"], "ranking": ["cc-pagerank"]}, ranks)
    assert status == 200 and "link to it" not in body.decode() and "0 hosts" not in body.decode()


# --- 5. info: hosts numbered and hosts ranked ---------------------------------------------------------------------


def test_info_says_the_hosts_numbered_and_those_the_newest_host_ranking_ranks(host_store):
    details = json.loads(run("info", "--format", "json", "--store", host_store))
    with Store(host_store, readonly=True) as store:
        numbered = store.hosts.host_count()
        newest = store.rankings.ranking("cc-pagerank")  # loaded after hostrank
        scored = int(np.count_nonzero(store.rankings.ranking_arrays(newest.id).scores))
        hostrank = store.rankings.ranking("hostrank")
        ranked = int(np.count_nonzero(store.rankings.ranking_arrays(hostrank.id).scores))
    assert (numbered, scored, ranked) == (13, 12, 8)
    assert details["hosts_numbered"] == numbered
    assert details["hosts_ranked"] == {"ranking": "cc-pagerank", "version": 1, "nodes": scored}
    text = run("info", "--store", host_store)
    assert f"hosts:    {numbered:,} numbered, {scored:,} ranked by cc-pagerank v1" in text
    assert f"cc-pagerank v1 {newest.created_at}: {scored:,} of {numbered:,} hosts scored" in text
    # ranked before the file numbered five more hosts: all it numbered then, scored
    assert f"hostrank v1 {hostrank.created_at}: {ranked:,} hosts of build 1" in text and hostrank.pages == ranked


# --- 6. build --rank of a domain graph ----------------------------------------------------------------------------


def test_build_rank_of_a_domain_graph_ranks_its_sites(site_store):
    path, built = site_store
    assert built.exit_code == 0, built.output
    assert "ranked siterank v1" in built.stdout
    with Store(path, readonly=True) as store:
        assert store.rankings.ranking("siterank").level == "site" and store.rankings.page_rankings() == []


# --- 7. a domain graph's links from SQL ---------------------------------------------------------------------------


def _site_pairs(path: str) -> list[tuple[int, int]]:
    """The store's site links as the library reads them, as (source id, target id)."""
    with Store(path, readonly=True) as store:
        sites = store.sites.site_count()
        links = store.site_links.links(sites)
    return sorted(
        (int(src) + 1, dst + 1)
        for dst in range(sites)
        for src in links.indices[links.indptr[dst] : links.indptr[dst + 1]].tolist()
    )


def test_a_domain_graphs_site_links_are_readable_from_sql(site_store):
    path, _ = site_store
    wanted = _site_pairs(path)
    assert len(wanted) > 1000
    db = sqlite3.connect(path)
    assert sorted(db.execute("SELECT src, dst FROM site_link_pairs")) == wanted
    named = db.execute(
        "SELECT a.name, b.name FROM site_link_pairs l JOIN sites a ON a.id = l.src JOIN sites b ON b.id = l.dst"
        " ORDER BY l.dst, l.src LIMIT 1"
    ).fetchone()
    db.close()
    assert named is not None and all(named)


def test_site_link_pairs_reads_a_block_of_many_parts_and_gaps_of_many_bytes(tmp_path):
    """A block of 5,000 sites' lists (tens of kilobytes: many of the view's 4 KiB parts, lists and varints across
    their bounds) and gaps of two and three bytes, unpacked in SQL as the library unpacks them."""
    make_domain_graph(GraphSize(5000, 60000), str(tmp_path / "graph"), parts=1, seed=7)
    path = str(tmp_path / "big.db")
    run("build", str(tmp_path / "graph"), "--store", path, "-q")
    db = sqlite3.connect(path)
    assert db.execute("SELECT max(length(sources)) FROM site_links").fetchone()[0] > 16 * 4096
    assert sorted(db.execute("SELECT src, dst FROM site_link_pairs")) == _site_pairs(path)
    db.close()
