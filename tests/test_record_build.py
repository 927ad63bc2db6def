"""`rankstore build DIR` of the proxy's record: its pages as a crawl's, its views as visits (issue 35, point 1)."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime

import numpy as np
import pytest
from recordkit import append, golden, link, make_record, page

from rankstore.sources import detect_format
from rankstore.store import SCHEMA_VERSION, Store

from conftest import invoke, run

SITE = "http://browse.example/"


def _links(store: str) -> dict[str, list[tuple[str, int, str | None]]]:
    db = sqlite3.connect(store)
    found: dict[str, list[tuple[str, int, str | None]]] = {}
    for src, dst, nofollow, anchor in db.execute(
        "SELECT s.url, d.url, l.nofollow, l.anchor FROM links l JOIN pages s ON s.id = l.src"
        " JOIN pages d ON d.id = l.dst ORDER BY 1, 2"
    ):
        found.setdefault(src, []).append((dst, nofollow, anchor))
    return found


def _pages(store: str) -> dict[str, tuple]:
    db = sqlite3.connect(store)
    return {url: tuple(rest) for url, *rest in db.execute("SELECT url, title, crawled, status, fetched_at FROM pages")}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("golden")
    record = golden("golden", folder)
    store = str(folder / "s.db")
    result = invoke("build", record, "--store", store, "-q")
    return record, store, result


def test_a_record_is_told_by_its_RECORD_file(tmp_path):
    assert detect_format(make_record(str(tmp_path / "r"))) == "record"
    (tmp_path / "html" / "example.com").mkdir(parents=True)
    assert detect_format(str(tmp_path / "html")) == "html"


def test_a_record_loads_as_a_crawl_each_page_its_latest_view(built):
    _, store, result = built
    assert result.exit_code == 0, result.output
    assert "5 view(s) from the proxy's record added" in result.output
    pages = _pages(store)
    # viewed twice: the later view's title, time and links; the earlier view's links (b, other.example) never held
    assert pages[SITE] == ("Home again", 1, 200, "2026-11-27T00:03:00Z")
    assert pages[SITE + "a"] == ("A", 1, 200, "2026-11-27T00:02:00Z")
    assert pages[SITE + "c"][:3] == (None, 1, 200)
    assert _links(store) == {
        SITE: [(SITE + "a", 0, "A page"), (SITE + "c", 0, "C")],
        SITE + "a": [(SITE, 0, "home")],
    }
    assert pages[SITE + "gone"][1] == 0  # a 404 is a view, not a crawled page


def test_nofollow_anchors_and_query_strings_of_links_are_kept(tmp_path):
    record = make_record(str(tmp_path / "r"))
    append(
        record,
        "20261127T000000Z",
        1,
        page(
            SITE,
            "2026-11-27T00:00:01Z",
            [link(SITE + "x?q=1", anchor="with a query"), link(SITE + "ad", nofollow=True), link("javascript:void(0)")],
            title="T",
        ),
    )
    store = str(tmp_path / "s.db")
    run("build", record, "--store", store, "-q")
    assert _links(store) == {SITE: [(SITE + "ad", 1, None), (SITE + "x?q=1", 0, "with a query")]}


def test_views_are_stored_once_however_often_the_record_is_built(built, tmp_path):
    record, store, _ = built
    with Store(store, readonly=True) as opened:
        counts = opened.visits.counts()
        hosts = opened.visits.counts(level="host")
        sites = opened.visits.counts(level="site")
        urls = opened.pages.urls_of(counts.ids.tolist())
        assert opened.visits.count() == 5
        assert opened.hosts.host_names(hosts.ids.tolist()) == {int(hosts.ids[0]): "browse.example"}
        assert opened.sites.site_names(sites.ids.tolist()) == {int(sites.ids[0]): "browse.example"}
        since = opened.visits.counts(since=datetime(2026, 11, 27, 0, 2, 30, tzinfo=UTC))
    assert {urls[i]: int(c) for i, c in zip(counts.ids.tolist(), counts.counts)} == {
        SITE: 2,
        SITE + "a": 1,
        SITE + "c": 1,
        SITE + "gone": 1,
    }
    assert hosts.counts.tolist() == [5] and sites.counts.tolist() == [5]
    assert int(since.counts.sum()) == 3  # the second view of the home page, c and gone
    copy = str(tmp_path / "again.db")
    import shutil

    shutil.copy(store, copy)
    again = invoke("build", record, "--store", copy, "-q")
    assert again.exit_code == 0 and "view(s)" not in again.output
    with Store(copy, readonly=True) as opened:
        assert opened.visits.count() == 5
        assert np.array_equal(opened.visits.counts().counts, counts.counts)


def test_a_grown_record_built_again_is_a_recrawl_of_what_was_browsed(tmp_path):
    record = make_record(str(tmp_path / "r"))
    first = "20261127T000000Z"
    append(
        record,
        first,
        7,
        page(SITE, "2026-11-27T00:00:01Z", [link(SITE + "x"), link(SITE + "y")]),
        page(SITE + "x", "2026-11-27T00:00:02Z", [link(SITE)]),
    )
    store = str(tmp_path / "s.db")
    run("build", record, "--store", store, "-q")
    # browsing goes on: the home page viewed again with other links, a new page, in a new proxy's file
    append(record, first, 7, page(SITE + "x", "2026-11-27T00:05:00Z", [link(SITE)]))
    append(
        record,
        "20261127T010000Z",
        8,
        page(SITE, "2026-11-27T01:00:00Z", [link(SITE + "x"), link(SITE + "z")]),
        page(SITE + "q", "2026-11-27T01:00:01Z", [link(SITE + "x")]),
    )
    second = invoke("build", record, "--store", store, "-q")
    assert second.exit_code == 0, second.output
    assert "3 view(s) from the proxy's record added" in second.output
    run("rank", "--store", store, "-q")

    def backlinks(target: str, *options: str) -> list[str]:
        report = json.loads(run("backlinks", SITE + target, "--format", "json", "--store", store, *options))
        rows = report["rows"] if isinstance(report, dict) else report  # --lost: the rows alone
        return sorted(row["url"] for row in rows)

    assert backlinks("x", "--since", "1") == [SITE + "q"]  # the home page's link to x is from build 1
    assert backlinks("z", "--since", "1") == [SITE]
    assert backlinks("y") == [] and backlinks("y", "--lost") == [SITE]
    assert backlinks("", "--since", "1") == []  # x's link home, seen again, is not new
    with Store(store, readonly=True) as opened:
        assert opened.visits.count() == 5


def test_bad_lines_are_reported_as_bad_records_and_the_rest_loads(tmp_path):
    record = golden("broken", tmp_path)
    store = str(tmp_path / "s.db")
    result = invoke("build", record, "--store", store, "-q")
    assert result.exit_code == 3, result.output
    assert "skipped 7 record(s)" in result.stderr
    for reason in (
        "record line that is not JSON",
        "not an http(s) URL",
        "record line whose status or title is of the wrong type",
        "record line without url, fetched or links",
        "record line whose time cannot be read",
        "record line that is not a JSON object",
        "record line cut short",
    ):
        assert reason in result.stderr
    assert "pages-20261127T000000Z-777.jsonl:9: record line cut short" in result.stderr
    assert "Traceback" not in result.output
    ok = "http://broken.example/ok"
    assert _links(store) == {
        "http://broken.example/": [(ok, 0, "ok")],
        "http://broken.example/badlink": [(ok, 0, None)],  # the javascript: link is no link
    }
    with Store(store, readonly=True) as opened:
        assert opened.visits.count() == 2


@pytest.mark.parametrize(
    "head, said",
    [
        ("not json", "is not JSON"),
        ('{"format": "something else", "version": 1}', "does not name the 'pagerank-proxy record' format"),
        ('{"format": "pagerank-proxy record", "version": 2}', "a record of version 2"),
    ],
)
def test_a_record_this_reader_cannot_read_is_one_line(tmp_path, head, said):
    record = tmp_path / "r"
    record.mkdir()
    (record / "RECORD").write_text(head)
    result = invoke("build", str(record), "--store", str(tmp_path / "s.db"), "-q")
    assert result.exit_code == 1
    assert result.output.startswith("Error: ") and said in result.output and result.output.count("\n") == 1


def test_a_schema_12_store_gets_its_visits_table(tmp_path, built):
    import shutil

    path = str(tmp_path / "old.db")
    shutil.copy(built[1], path)
    db = sqlite3.connect(path)
    db.execute("DROP TABLE visits")
    db.execute("UPDATE meta SET value = '12' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    assert run("upgrade", "--store", path) == f"{path}: schema {SCHEMA_VERSION}\n"
    assert SCHEMA_VERSION >= 13
    with Store(path, readonly=True) as opened:
        assert opened.visits.count() == 0
