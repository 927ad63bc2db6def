"""A stale ranking is named, and never mixed with a newer graph (issue 36, 3, for the readers).

Two real sites: the python docs are built and ranked, then the postgres docs
are built into the same store, so the ranking predates the newest build and
the postgres pages are not ranked yet.  Then the python docs alone, ranked,
edited (four pages get a link to a fifth) and built again: the backlink
report of that fifth page must keep the ranked graph's shares.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil

import pytest
from barkit import bars

from proxy_addon.markup import LATER_NOTE, escape
from proxy_addon.pages import respond
from proxy_addon.ranks import Ranks
from rankstore.store import Store

from conftest import POSTGRES_DOC, PYTHON_DOC, invoke, run

PG = "http://postgres.local/docs/"
NOTE = "ranking pagerank v1 predates build 2: run `rankstore rank`"


@pytest.fixture(scope="module")
def stale(python_doc_store, tmp_path_factory):
    """(store, a python docs page, a postgres docs page): python ranked, then postgres built (build 2)."""
    path = str(tmp_path_factory.mktemp("stale") / "stale.db")
    shutil.copy(python_doc_store, path)
    run("rank", "--store", path, "-q")
    run("build", POSTGRES_DOC, "--base-url", PG, "--store", path, "-q")
    with Store(path, readonly=True) as store:
        python_page = store.db.execute("SELECT url FROM pages WHERE url LIKE '%/library/functions.html'").fetchone()[0]
    return path, python_page, PG + "sql-select.html"


def test_a_page_added_since_the_ranking_is_not_ranked_yet(stale):
    store, python_page, pg_page = stale
    result = invoke("show", python_page, pg_page, "--format", "json", "--store", store)
    assert result.exit_code == 1  # one of the pages has no score to show
    rows = json.loads(result.stdout)
    assert [row["url"] for row in rows] == [python_page, pg_page]
    assert rows[0]["pagerank"] > 0 and rows[1]["pagerank"] is None and rows[1]["rank"] is None
    assert "not in the store" not in result.stderr
    assert f"not ranked yet: {pg_page}" in result.stderr and NOTE in result.stderr
    table = invoke("show", pg_page, "--store", store).stdout
    assert "not ranked yet" in table
    with Store(store, readonly=True) as opened:  # info counts it among the store's pages
        assert opened.pages.page_id(pg_page) is not None and opened.info()["pages"] >= opened.pages.page_id(pg_page)


def test_info_names_the_stale_ranking(stale):
    store, _, _ = stale
    assert f"stale: {NOTE}" in run("info", "--store", store)
    details = json.loads(run("info", "--format", "json", "--store", store))
    (ranking,) = details["rankings"]
    assert ranking["stale"] == NOTE and ranking["build"] == 1 and ranking["level"] == "page"


READERS = {
    "top": ["top"],
    "show": ["show", "{page}"],
    "search": ["search", "functions"],
    "backlinks": ["backlinks", "{page}"],
    "referring-hosts": ["backlinks", "{page}", "--group-by", "host"],
    "intersect": ["intersect", "{page}"],
    "anchors": ["anchors", "{page}"],
}


@pytest.mark.parametrize(
    "command, fmt",
    [(READERS[name], fmt) for name in READERS for fmt in ("csv", "json")] + [(["export"], "csv")],
    ids=[f"{name}-{fmt}" for name in READERS for fmt in ("csv", "json")] + ["export-csv"],
)
def test_every_reader_names_a_stale_ranking_on_stderr(stale, command, fmt):
    store, python_page, _ = stale
    args = [part.format(page=python_page) for part in command]
    format_option = [] if command == ["export"] else ["--format", fmt]  # export writes CSV by default
    result = invoke(*args, *format_option, "--store", store)
    assert result.exit_code == 0, result.output
    assert f"note: {NOTE}" in result.stderr.splitlines()
    if fmt == "json":  # stdout holds the rows alone (a backlink report: its rows and its shares)
        given = json.loads(result.stdout)
        assert isinstance(given, list) or (isinstance(given, dict) and set(given) == {"rows", "shares"})
    else:
        assert len(next(csv.reader(io.StringIO(result.stdout)))) > 1


@pytest.fixture(scope="module")
def ranks(stale):
    opened = Ranks(stale[0])
    yield opened
    opened.close()


def test_own_pages_name_a_stale_ranking(ranks, stale):
    _, python_page, pg_page = stale
    notice = '<p class="note" role="status">ranking pagerank v1 predates build 2: run &#8220;rankstore rank&#8221;</p>'
    for path, params in [
        ("/", {}),
        ("/top", {}),
        ("/search", {"q": "functions"}),
        ("/backlinks", {"url": python_page}),
        ("/backlinks", {"url": python_page, "group": "host"}),
        ("/compare", {"target": python_page}),
        ("/page", {"url": python_page}),
        ("/page", {"url": pg_page}),
    ]:
        status, _, body = respond("GET", path, {key: [value] for key, value in params.items()}, ranks)
        text = body.decode()
        assert status == 200, (path, text)
        assert notice in text, (path, text)
    status, _, body = respond("GET", "/page", {"url": [pg_page]}, ranks)
    text = body.decode()
    assert "Not ranked yet" in text and not re.search("not in the (pagerank )?store", text, re.IGNORECASE)


def test_own_pages_bars_of_pages_added_since_say_not_ranked_yet(ranks, stale):
    """The bar's tooltip, which is its accessible name (role img), says what the text beside it says."""
    _, _, pg_page = stale
    later = escape(f"PageRank: {LATER_NOTE}")
    for params in ({"url": pg_page}, {"url": pg_page, "since": "1"}):
        path = "/page" if "since" not in params else "/backlinks"
        status, _, body = respond("GET", path, {key: [value] for key, value in params.items()}, ranks)
        text = body.decode()
        assert status == 200, (path, text)
        found = bars(text)
        assert found, (path, text)
        for bar in found:
            assert bar.value == "unranked" and bar.title == later, (path, bar)
            assert bar.attributes["role"] == "img"  # the tooltip is its accessible name
        assert not re.search("not in the (pagerank )?store", text, re.IGNORECASE), path


# ------------------------------------------------------------------ shares against the ranked graph

TARGET = "library/aifc.html"
LINKERS = ("library/functions.html", "library/os.html", "library/sys.html", "library/stdtypes.html")
BASE = "http://python.local/"


def _rows(store: str, *more: str) -> dict:
    """The backlink report as JSON gives it: its rows and its shares."""
    return json.loads(run("backlinks", BASE + TARGET, "-n", "100000", "--format", "json", *more, "--store", store))


@pytest.fixture(scope="module")
def regrown(tmp_path_factory):
    """(store, the target's backlinks before, after): ranked on build 1; build 2 adds four backlinks."""
    work = tmp_path_factory.mktemp("regrown")
    site = work / "site"
    shutil.copytree(PYTHON_DOC, site, ignore=shutil.ignore_patterns("_sources", "_downloads", "_images", "_static"))
    store = str(work / "s.db")
    run("build", str(site), "--base-url", BASE, "--store", store, "-q")
    run("rank", "--store", store, "-q")
    before = {sort: _rows(store, "--sort", sort) for sort in ("pagerank", "contribution")}
    for page in LINKERS:
        path = site / page
        text = path.read_text(encoding="utf-8")
        assert 'href="aifc.html"' not in text
        path.write_text(text.replace("</body>", '<p><a href="aifc.html">aifc</a></p></body>', 1), encoding="utf-8")
    run("build", str(site), "--base-url", BASE, "--store", store, "-q")
    after = {sort: _rows(store, "--sort", sort) for sort in ("pagerank", "contribution")}
    return store, before, after


@pytest.mark.parametrize("sort", ["pagerank", "contribution"])
def test_backlink_shares_stay_with_the_ranked_graph(regrown, sort):
    _, before, after = regrown
    old = {row["url"]: row for row in before[sort]["rows"]}
    new = {row["url"]: row for row in after[sort]["rows"]}
    assert set(new) - set(old) == {BASE + page for page in LINKERS}
    for url in LINKERS:  # links the ranked graph did not have: no number made of the old ranks
        row = new[BASE + url]
        assert row["first_seen"] == 2 and row["contribution"] is None and row["share"] is None
    for url, row in old.items():  # the ranked graph's links keep what they gave
        assert (new[url]["contribution"], new[url]["share"]) == (row["contribution"], row["share"])
    shares = after[sort]["shares"]
    assert shares == before[sort]["shares"]
    assert shares["other_backlinks"] == 0.0  # every backlink is listed: none is left over, none negative
    listed = sum(row["share"] or 0.0 for row in after[sort]["rows"])
    assert listed + sum(shares.values()) == pytest.approx(1.0, abs=1e-9)


def test_the_report_says_why_new_links_have_no_share(regrown):
    store, _, _ = regrown
    result = invoke("backlinks", BASE + TARGET, "--store", store)
    assert "note: ranking pagerank v1 predates build 2: run `rankstore rank`" in result.stderr
    assert "4 backlinks first seen after build 1 are not in the graph pagerank v1 ranked" in result.stderr
