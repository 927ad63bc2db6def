"""A ranking is read at its level: two real doc sites in one store, ranked by page and by host (issue 36, 1).

The python docs (crawled by wget) and the postgres docs (their HTML folder)
are built into one store, ranked (``pagerank``) and ranked by host
(``hostrank``).  A host ranking's arrays are by host id: every reader must
answer for the page's host (saying so), list hosts, or refuse in one line,
never read a host's score as a page's.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
import shutil
import sqlite3

import numpy as np
import pytest

from proxy_addon.pages import respond
from proxy_addon.ranks import Ranks
from rankstore.store import Store, StoreError, analysis
from rankstore.store.mapped import mapped_folder
from rankstore.urls import host_of

from conftest import POSTGRES_DOC, invoke, run

PG = "http://postgres.local/docs/"


@pytest.fixture(scope="module")
def two_sites(python_doc_store, tmp_path_factory):
    """(store, a python docs page, a postgres docs page): both sites built, ranked by page and by host."""
    path = str(tmp_path_factory.mktemp("levels") / "two.db")
    shutil.copy(python_doc_store, path)
    run("build", POSTGRES_DOC, "--base-url", PG, "--store", path, "-q")
    run("rank", "--store", path, "-q")
    run("rank", "--level", "host", "--store", path, "-q")
    with Store(path, readonly=True) as store:
        python_page = store.db.execute("SELECT url FROM pages WHERE url LIKE '%/library/functions.html'").fetchone()[0]
    return path, python_page, PG + "sql-select.html"


def host_numbers(store: str, url: str) -> tuple[float, int]:
    with Store(store, readonly=True) as opened:
        return analysis.host_ranks(opened, [host_of(url)])[host_of(url)]


def test_show_with_a_host_ranking_answers_for_the_pages_host(two_sites):
    store, python_page, pg_page = two_sites
    result = invoke("show", python_page, pg_page, "--ranking", "hostrank", "--format", "json", "--store", store)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [row["url"] for row in rows] == [python_page, pg_page]
    for row in rows:
        assert row["host"] == host_of(row["url"])
        assert (row["host_pagerank"], row["host_rank"]) == host_numbers(store, row["url"])
        assert "pagerank" not in row and "rank" not in row  # no page numbers made of a host's
    assert "hostrank ranks hosts: each URL is answered by its host's rank" in result.stderr
    table = run("show", python_page, "--ranking", "hostrank", "--store", store)
    assert host_of(python_page) in table and "host_rank" in table.splitlines()[0]


def test_a_url_not_in_the_store_is_answered_by_its_hosts_rank_saying_so(two_sites):
    """Issue 32: a page ranking answers for a URL the store has not by its host's rank, in a row that names the
    level and the host (still "not in the store", exit status 1); a host ranking answers for the pages the
    store has."""
    store, python_page, _ = two_sites
    nowhere = python_page.rsplit("/", 1)[0] + "/nonexistent.html"
    with Store(store, readonly=True) as opened:
        assert opened.pages.page_id(nowhere) is None and host_of(nowhere) in analysis.host_ranks(
            opened, [host_of(nowhere)]
        )
    result = invoke("show", python_page, nowhere, "--format", "json", "--store", store)
    assert (
        result.exit_code == 1
        and f"not in the store (answered by their host's or site's rank): {nowhere}" in result.stderr
    )
    rows = json.loads(result.stdout)
    assert [(row["url"], row["level"]) for row in rows] == [(python_page, "page"), (nowhere, "host")]
    assert rows[1]["answered_by"] == host_of(nowhere) and rows[1]["pagerank"] is None
    assert (rows[1]["estimate"], rows[1]["rank"]) == host_numbers(store, nowhere)
    # a host ranking answers for it too, at its level (issue 47): by its host's rank, said to be so
    result = invoke("show", nowhere, "--ranking", "hostrank", "--store", store)
    assert result.exit_code == 1, result.output
    assert f"not in the store (answered by their host's rank): {nowhere}" in result.stderr
    assert "host_rank" in result.stdout and f"not in the store: {nowhere}" not in result.stderr
    result = invoke("show", python_page, nowhere, "--ranking", "hostrank", "--format", "json", "--store", store)
    assert result.exit_code == 1 and [row["url"] for row in json.loads(result.stdout)] == [python_page, nowhere]


@pytest.mark.parametrize(
    "command",
    [
        ["backlinks", "{page}"],
        ["backlinks", "{page}", "--group-by", "host"],
        ["backlinks", "{page}", "--lost"],
        ["search", "functions"],
        ["intersect", "{page}", "{other}"],
        ["anchors", "{page}"],
    ],
    ids=["backlinks", "referring-hosts", "lost", "search", "intersect", "anchors"],
)
def test_page_commands_refuse_a_host_ranking_in_one_line(two_sites, command):
    store, python_page, pg_page = two_sites
    args = [part.format(page=python_page, other=pg_page) for part in command]
    result = invoke(*args, "--ranking", "hostrank", "--store", store)
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert lines == [
        "Error: hostrank ranks hosts, not pages: use --ranking pagerank, or `rankstore top --ranking hostrank` "
        "for its hosts"
    ]


def test_intersect_of_linking_hosts_takes_a_host_ranking(two_sites):
    store, python_page, _ = two_sites
    target = python_page.rsplit("/", 2)[0] + "/library/os.html"
    rows = json.loads(
        run(
            "intersect",
            python_page,
            target,
            "--group-by",
            "host",
            "--ranking",
            "hostrank",
            "--format",
            "json",
            "--store",
            store,
        )
    )
    assert rows
    with Store(store, readonly=True) as opened:
        for row in rows:
            assert (row["host_pagerank"], row["host_rank"]) == analysis.host_ranks(opened, [row["host"]])[row["host"]]
    ranks = [row["host_rank"] for row in rows if row["host_rank"] is not None]
    assert ranks == sorted(ranks)


def test_export_of_a_host_ranking_lists_hosts(two_sites):
    store, _, _ = two_sites
    rows = list(csv.DictReader(io.StringIO(run("export", "--ranking", "hostrank", "--store", store))))
    assert list(rows[0]) == [
        "host",
        "host_pagerank",
        "algorithm1",
        "percentile",
        "toolbar",
        "host_rank",
        "pages",
        "inlinks",
    ]
    with sqlite3.connect(store) as db:
        hosts = dict(db.execute("SELECT name, pages FROM hosts"))
    assert {row["host"] for row in rows} == set(hosts)
    scores = [float(row["host_pagerank"]) for row in rows]
    assert scores == sorted(scores, reverse=True)
    # 1 + the hosts scoring more: tied hosts share a rank
    assert [int(row["host_rank"]) for row in rows] == [1 + sum(s > mine for s in scores) for mine in scores]
    assert sum(float(row["host_pagerank"]) for row in rows) == pytest.approx(1.0)
    for row in rows[:20]:
        assert int(row["pages"]) == hosts[row["host"]]
        assert (float(row["host_pagerank"]), int(row["host_rank"])) == host_numbers(store, f"http://{row['host']}/")


def test_current_scores_view_carries_the_level_and_joins_hosts(two_sites):
    store, python_page, _ = two_sites
    with sqlite3.connect(store) as db:
        hosts = db.execute(
            "SELECT level, name, url, page_id, host_id, pagerank FROM current_scores WHERE ranking = 'hostrank'"
        ).fetchall()
        pages = db.execute(
            "SELECT level, name, url, page_id, pagerank FROM current_scores WHERE ranking = 'pagerank' AND url = ?",
            (python_page,),
        ).fetchall()
        host_count = db.execute("SELECT count(*) FROM hosts").fetchone()[0]
    assert len(hosts) == host_count
    assert {row[0] for row in hosts} == {"host"} and all(row[2] is None and row[3] is None for row in hosts)
    by_name = {row[1]: row[5] for row in hosts}
    assert by_name[host_of(python_page)] == host_numbers(store, python_page)[0]
    assert pages == [("page", python_page, python_page, pages[0][3], pages[0][4])]
    with Store(store, readonly=True) as opened:
        assert pages[0][4] == opened.queries.lookup([python_page])[python_page]["pagerank"]


def test_the_library_refuses_a_host_ranking_for_pages(two_sites):
    store, python_page, _ = two_sites
    with Store(store, readonly=True) as opened:
        for ask in (
            lambda: opened.rankings.page_ranking("hostrank"),
            lambda: opened.queries.top("hostrank"),
            lambda: opened.queries.lookup([python_page], "hostrank"),
            lambda: opened.queries.search_titles(["functions"], "hostrank"),
            lambda: analysis.backlink_report(opened, python_page, "hostrank"),
        ):
            with pytest.raises(StoreError, match="hostrank ranks hosts, not pages"):  # RankingLevelError
                ask()
        assert opened.rankings.page_ranking("pagerank").level == "page"


@pytest.fixture(scope="module")
def ranks(two_sites):
    opened = Ranks(two_sites[0])
    yield opened
    opened.close()


def get(ranks, path, **params):
    status, _, body = respond("GET", path, {key: [value] for key, value in params.items()}, ranks)
    return status, body.decode()


def test_own_pages_read_a_host_ranking_at_its_level(ranks, two_sites):
    store, python_page, _ = two_sites
    status, body = get(ranks, "/top", ranking="hostrank", n="10")
    assert status == 200
    with Store(store, readonly=True) as opened:
        best = [row["host"] for row in analysis.top_hosts(opened, "hostrank", 10)]
    assert re.findall(r'<tr [^>]*data-host="([^"]*)"', body) == best
    status, body = get(ranks, "/page", url=python_page, ranking="hostrank")
    assert status == 200
    score, position = host_numbers(store, python_page)
    assert f"host rank #{position:,}" in body and host_of(python_page) in body
    nowhere = python_page.rsplit("/", 1)[0] + "/nonexistent.html"
    for params in ({}, {"format": "json"}, {"format": "csv"}):
        # by its host's rank at the host level too (issue 47), as show answers it
        status, body = get(ranks, "/page", url=nowhere, ranking="hostrank", **params)
        assert status == 200 and host_of(nowhere) in body, params
        assert ("is not in the store: answered by its host" if not params else nowhere) in html.unescape(body), params
        # issue 32: a page ranking answers for a URL the store has not by its host's rank, saying so
        status, body = get(ranks, "/page", url=nowhere, ranking="pagerank", **params)
        assert status == 200 and host_of(nowhere) in body, params
        assert ("answered by its host" if not params else "host") in body, params
    for path, params in [
        ("/search", {"q": "functions"}),
        ("/backlinks", {"url": python_page}),
        ("/compare", {"target": python_page}),
    ]:
        status, body = get(ranks, path, ranking="hostrank", **params)
        assert status == 400, (path, body)
        assert "hostrank ranks hosts, not pages: choose ranking=pagerank" in body


@pytest.mark.parametrize("files", ["mapped", "none"])
def test_a_levels_estimates_read_its_arrays_without_the_votes_until_a_view_asks(two_sites, tmp_path, files):
    """The estimates need scores, positions and in-links.  Mapped (rankstore.store.mapped), the votes (two of
    five gigabytes at a domain graph's 135 million sites) cost no process anything until read; where no file
    can be written beside the store, they are left unread, then read whole for a caller that wants them."""
    path = str(tmp_path / "s.db")
    shutil.copy(two_sites[0], path)
    shutil.rmtree(mapped_folder(path), ignore_errors=True)
    if files == "none":
        mapped_folder(path).touch()  # a file where the folder would be: nothing can be written there
    with Store(path, readonly=True) as store:
        head = store.levels.level_head("host")
        whole = Store(path, readonly=True)
        try:
            want = whole.rankings.ranking_arrays(head.ranking_id)
            want = {name: np.array(getattr(want, name)) for name in ("scores", "inlinks", "best", "position", "votes")}
        finally:
            whole.close()
        names = [host_of(two_sites[1]), host_of(two_sites[2])]
        found = store.levels.level_scores(head, names)
        assert len(found) == 2
        held = store.rankings.ranking_arrays(head.ranking_id, votes=False)
        for name in ("scores", "inlinks", "best", "position"):
            assert (getattr(held, name) == want[name]).all()
        if files == "mapped":  # every column mapped: nothing was read, the votes with the rest
            assert not held.votes_left and (held.votes == want["votes"]).all()
            assert isinstance(held.votes.base, np.memmap)
            return
        assert held.votes_left and held.votes is None and held.linked is None
        again = store.rankings.ranking_arrays(head.ranking_id)
        assert not again.votes_left and (again.votes == want["votes"]).all()
        assert store.rankings.ranking_arrays(head.ranking_id, votes=False) is again  # what is held serves both
