"""One output dialect (issue 36, 7): the same columns, CSV, booleans and -n in every command and download.

On the python docs, ranked by page and by host: every reader command's table,
CSV and JSON name the same columns; booleans are ``true``/``false``; host
numbers are ``host_pagerank``/``host_rank`` everywhere; ``-n`` means the same
rows in every format (0 for all); the own pages' downloads are the CLI's
bytes; and every own page reads ``ranking=`` or refuses a parameter it does
not know.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import sqlite3

import pytest

from proxy_addon.pages import respond
from proxy_addon.ranks import Ranks
from rankstore.store import Store, analysis

from conftest import run


@pytest.fixture(scope="module")
def ranked(python_doc_store, tmp_path_factory):
    """(store, a page with many backlinks, another page): ranked by page and by host."""
    path = str(tmp_path_factory.mktemp("dialect") / "py.db")
    shutil.copy(python_doc_store, path)
    run("rank", "--store", path, "-q")
    run("rank", "--level", "host", "--store", path, "-q")
    with Store(path, readonly=True) as store:
        page = store.db.execute("SELECT url FROM pages WHERE url LIKE '%/library/functions.html'").fetchone()[0]
    return path, page, page.replace("functions.html", "os.html")


VIEWS = {
    "top": ["top"],
    "show": ["show", "{page}"],
    "search": ["search", "built-in"],
    "backlinks": ["backlinks", "{page}"],
    "referring-hosts": ["backlinks", "{page}", "--group-by", "host"],
    "lost": ["backlinks", "{page}", "--lost"],
    "intersect": ["intersect", "{page}", "{other}"],
    "intersect-hosts": ["intersect", "{page}", "{other}", "--group-by", "host"],
    "anchors": ["anchors", "{page}"],
    "builds": ["builds"],
    "top-hosts": ["top", "--ranking", "hostrank"],
}


def view(ranked, name: str, *more: str) -> list[str]:
    store, page, other = ranked
    return [part.format(page=page, other=other) for part in VIEWS[name]] + list(more) + ["--store", store]


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_table_csv_and_json_name_the_same_columns(ranked, name):
    header = next(csv.reader(io.StringIO(run(*view(ranked, name, "--format", "csv")))))
    rows = json.loads(run(*view(ranked, name, "--format", "json")))
    if isinstance(rows, dict):  # a backlink report: its rows beside its shares
        rows = rows["rows"]
    if rows:
        assert [list(row) for row in rows] == [header] * len(rows)
    table = run(*view(ranked, name)).splitlines()[0]
    named = table.replace(" / ", " ").split()
    if rows:
        assert sorted(named) == sorted(header)
    assert not {"hostrank", "host_position", "pct", "tb", "in"} & set(header)


def test_host_numbers_are_named_alike_everywhere(ranked):
    store, page, _ = ranked
    for name in ("show", "backlinks", "referring-hosts", "intersect-hosts"):
        header = next(csv.reader(io.StringIO(run(*view(ranked, name, "--format", "csv")))))
        assert {"host_pagerank", "host_rank"} <= set(header), name
    hosts = next(csv.reader(io.StringIO(run("export", "--what", "hosts", "--store", store))))
    assert hosts == ["id", "name", "pages", "host_pagerank", "host_rank"]
    rows = json.loads(run("show", page, "--format", "json", "--store", store))
    with Store(store, readonly=True) as opened:
        host = page.split("/")[2]
        assert (rows[0]["host_pagerank"], rows[0]["host_rank"]) == analysis.host_ranks(opened, [host])[host]


def test_booleans_are_true_and_false(ranked):
    store, page, _ = ranked
    rows = list(csv.DictReader(io.StringIO(run("backlinks", page, "-n", "0", "--format", "csv", "--store", store))))
    flags = {row["nofollow"] for row in rows}
    assert "false" in flags and flags <= {"true", "false", ""}
    pages = list(csv.DictReader(io.StringIO(run("export", "--what", "pages", "--store", store))))
    assert {row["crawled"] for row in pages} == {"true", "false"}


def test_shares_are_fractions_and_percentages_only_in_tables(ranked):
    store, page, _ = ranked
    report = json.loads(run("backlinks", page, "-n", "0", "--format", "json", "--store", store))
    rows = report["rows"]
    assert sum(row["share"] or 0 for row in rows) + sum(report["shares"].values()) == pytest.approx(1.0, abs=1e-9)
    text = run("backlinks", page, "-n", "3", "--store", store)
    first = next(row for row in rows if row["kind"] == "link")
    assert f"{first['share']:.2%}" in text


def test_info_takes_format_json(ranked):
    store, _, _ = ranked
    details = json.loads(run("info", "--format", "json", "--store", store))
    assert {ranking["name"] for ranking in details["rankings"]} == {"pagerank", "hostrank"}
    assert json.loads(run("info", "--json", "--store", store)) == details


def _page_rows(text: str, fmt: str) -> list:
    if fmt == "json":
        return json.loads(text)["rows"]
    return list(csv.DictReader(io.StringIO(text)))


def _table_rows(text: str) -> int:
    return sum(1 for line in text.splitlines()[1:] if "http" in line)


def test_limit_means_the_same_in_every_format(ranked):
    store, page, _ = ranked
    with sqlite3.connect(store) as db:
        (count,) = db.execute(
            "SELECT count(*) FROM links l JOIN pages t ON t.id = l.dst WHERE t.url = ? AND l.src != l.dst", (page,)
        ).fetchone()
    assert count > 100
    for limit, expected in (("7", 7), (None, 50), ("0", count)):
        more = ["-n", limit] if limit else []
        args = ["backlinks", page, *more, "--store", store]
        assert len(_page_rows(run(*args, "--format", "csv"), "csv")) == expected
        assert len(_page_rows(run(*args, "--format", "json"), "json")) == expected
        assert _table_rows(run(*args)) == expected
    for command in ("top", "backlinks", "search", "intersect", "anchors"):
        assert "in every format (table, CSV, JSON); 0 for all" in " ".join(run(command, "--help").split()), command


@pytest.fixture(scope="module")
def ranks(ranked):
    opened = Ranks(ranked[0])
    yield opened
    opened.close()


def get(ranks, path: str, **params):
    query = {key: value if isinstance(value, list) else [value] for key, value in params.items()}
    status, headers, body = respond("GET", path, query, ranks)
    return status, headers, body.decode()


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_own_pages_download_the_clis_bytes(ranks, ranked, fmt):
    store, page, other = ranked
    for path, params, args in [
        ("/top", {"n": "100"}, ["top", "-n", "100"]),
        ("/top", {"ranking": "hostrank", "n": "10"}, ["top", "--ranking", "hostrank", "-n", "10"]),
        ("/search", {"q": "built-in"}, ["search", "built-in", "-n", "50"]),
        ("/page", {"url": page}, ["show", page]),
        ("/page", {"url": page, "ranking": "hostrank"}, ["show", page, "--ranking", "hostrank"]),
        ("/backlinks", {"url": page}, ["backlinks", page, "-n", "20000"]),
        ("/backlinks", {"url": page, "group": "host"}, ["backlinks", page, "--group-by", "host", "-n", "20001"]),
        ("/compare", {"target": [page, other]}, ["intersect", page, other, "-n", "20001"]),
        ("/builds", {}, ["builds"]),
    ]:
        status, headers, body = get(ranks, path, format=fmt, **params)
        assert status == 200, (path, body)
        assert headers["Content-Type"].startswith("application/json" if fmt == "json" else "text/csv")
        assert body == run(*args, "--format", fmt, "--store", store), (path, params)


@pytest.mark.parametrize("path", ["/", "/top", "/search", "/backlinks", "/compare", "/builds", "/page"])
def test_own_pages_refuse_what_they_do_not_read(ranks, ranked, path):
    _, page, _ = ranked
    needs = {"/backlinks": {"url": page}, "/page": {"url": page}, "/search": {"q": "python"}}.get(path, {})
    status, _, body = get(ranks, path, **needs, colour="red")
    assert status == 400 and f"{path} does not take colour" in body
    status, _, body = get(ranks, path, **needs, ranking="nosuch")
    assert status == 400 and "No ranking &#x27;nosuch&#x27;; the store has: hostrank, pagerank" in body
    status, _, body = get(ranks, path, **needs, ranking="pagerank")
    assert status == 200, body
