"""`rankstore forget`: what was browsed taken out of the record and the store, leaving no trace (issue 35, point 1)."""

from __future__ import annotations

import glob
import json
import os
import sqlite3

import pytest
from recordkit import append, link, make_record, page

from rankstore.store import Store

from conftest import invoke, run

NEWS = "http://news.example/"
SECRET = "http://secret.example/"
STAMP = "20261127T000000Z"


def _browsed(folder) -> tuple[str, str]:
    """A record of news.example (which links to secret.example) and secret.example, built and ranked."""
    record = make_record(str(folder / "record"))
    append(
        record,
        STAMP,
        11,
        page(NEWS, "2026-11-01T10:00:00Z", [link(NEWS + "a"), link(SECRET + "login", anchor="my bank")], title="News"),
        page(SECRET + "login", "2026-11-01T10:01:00Z", [link(SECRET + "account?id=1")], title="Secret Bank login"),
        page(NEWS + "a", "2026-11-20T10:00:00Z", [link(NEWS)], title="Story"),
    )
    append(
        record,
        "20261127T010000Z",
        12,
        page(SECRET + "account", "2026-11-25T09:00:00Z", [link(SECRET + "login")], title="Secret Bank account"),
        page(NEWS, "2026-11-25T10:00:00Z", [link(NEWS + "a"), link(SECRET + "login", anchor="my bank")], title="News"),
    )
    store = str(folder / "s.db")
    run("build", record, "--store", store, "-q")
    run("rank", "--store", store, "-q")
    run("rank", "--store", store, "--level", "host", "-q")
    return record, store


def _traces(paths: list[str], *needles: bytes) -> dict[str, list[bytes]]:
    found = {}
    for path in paths:
        with open(path, "rb") as handle:
            data = handle.read()
        hits = [needle for needle in needles if needle in data]
        if hits:
            found[path] = hits
    return found


def _files(record: str, store: str) -> list[str]:
    return sorted(glob.glob(os.path.join(record, "*"))) + [p for p in (store, store + "-wal") if os.path.exists(p)]


def test_forgetting_a_host_leaves_no_trace_in_record_or_store(tmp_path):
    record, store = _browsed(tmp_path)
    needles = (b"secret.example", b"Secret Bank", b"my bank")
    assert _traces(_files(record, store), *needles)  # there before
    inodes = {path: os.stat(path).st_ino for path in glob.glob(os.path.join(record, "pages-*"))}
    result = invoke("forget", "--host", "secret.example", "--record", record, "--store", store)
    assert result.exit_code == 0, result.output
    assert "store: 2 views forgotten, 2 pages' content, 1 links to them" in result.output
    assert "dropped ranking versions that ranked forgotten pages: hostrank v1, pagerank v1" in result.output
    assert "record: 2 lines and 2 links to the host taken out of 2 files" in result.output
    assert _traces(_files(record, store), *needles) == {}
    # each file written anew and renamed over the old one, nothing left beside them
    assert all(os.stat(path).st_ino != inode for path, inode in inodes.items())
    assert sorted(os.listdir(record)) == ["RECORD", *sorted(os.path.basename(p) for p in inodes)]
    # what was not forgotten stands: news.example's pages, their other links, their views
    with Store(store, readonly=True) as opened:
        assert opened.visits.count() == 3
        assert opened.rankings.all() == []
    run("rank", "--store", store, "-q")
    top = json.loads(run("top", "--store", store, "--format", "json", "-n", "0"))
    assert {row["url"] for row in top if "forgotten" not in row["url"]} == {NEWS, NEWS + "a"}
    db = sqlite3.connect(store)
    assert db.execute("SELECT count(*) FROM links").fetchone()[0] == 2  # news <-> news/a
    # the record built again brings nothing back, and no view twice
    again = invoke("build", record, "--store", store, "-q")
    assert again.exit_code == 0 and "view(s)" not in again.output
    assert _traces(_files(record, store), *needles) == {}


def test_forgetting_before_a_date_takes_the_views_and_the_pages_left_without_one(tmp_path):
    record, store = _browsed(tmp_path)
    result = invoke("forget", "--before", "2026-11-10", "--record", record, "--store", store)
    assert result.exit_code == 0, result.output
    assert "store: 2 views forgotten, 1 pages' content" in result.output  # news.example was viewed again after
    assert "record: 2 lines and 0 links" in result.output
    lines = [json.loads(line) for path in sorted(glob.glob(os.path.join(record, "pages-*"))) for line in open(path)]
    assert [line["fetched"] for line in lines] == [
        "2026-11-20T10:00:00Z",
        "2026-11-25T09:00:00Z",
        "2026-11-25T10:00:00Z",
    ]
    db = sqlite3.connect(store)
    crawled = {url for (url,) in db.execute("SELECT url FROM pages WHERE crawled")}
    assert crawled == {NEWS, NEWS + "a", SECRET + "account"}  # the login page's only view was before
    # still linked to by pages kept, the login page keeps its URL (they name it), not its content
    assert db.execute("SELECT title FROM pages WHERE url = ?", (SECRET + "login",)).fetchone() == (None,)
    with Store(store, readonly=True) as opened:
        assert opened.visits.count() == 3


def test_forgetting_a_host_before_a_date_keeps_its_later_views(tmp_path):
    record, store = _browsed(tmp_path)
    result = invoke(
        "forget", "--host", "secret.example", "--before", "2026-11-10", "--record", record, "--store", store
    )
    assert result.exit_code == 0, result.output
    assert "store: 1 views forgotten" in result.output and "record: 1 lines" in result.output
    with Store(store, readonly=True) as opened:
        assert opened.visits.count() == 4


def test_forgetting_twice_changes_nothing_more(tmp_path):
    record, store = _browsed(tmp_path)
    run("forget", "--host", "secret.example", "--record", record, "--store", store)
    before = {path: open(path, "rb").read() for path in glob.glob(os.path.join(record, "pages-*"))}
    again = run("forget", "--host", "secret.example", "--record", record, "--store", store)
    assert again.startswith("store: 0 views forgotten, 0 pages' content, 0 links to them")
    assert "record: 0 lines and 0 links to the host taken out of 0 files" in again
    assert before == {path: open(path, "rb").read() for path in before}


@pytest.mark.parametrize(
    "args, said",
    [
        ((), "say what to forget"),
        (("--before", "last week"), "'last week' is not a date"),
        (("--host", "x.example", "--record", "/nonexistent-record"), "/nonexistent-record: cannot read its RECORD"),
    ],
)
def test_forget_errors_are_one_line(tmp_path, args, said):
    record, store = _browsed(tmp_path)
    result = invoke("forget", *args, "--store", store)
    assert result.exit_code in (1, 2) and said in result.output
    assert "Traceback" not in result.output and result.output.strip().splitlines()[-1].startswith("Error: ")


def test_forget_with_no_store_is_one_line(tmp_path):
    result = invoke("forget", "--host", "x.example", "--store", str(tmp_path / "none.db"))
    assert result.exit_code == 1 and result.output.startswith(f"Error: {tmp_path / 'none.db'}: no such store")
    assert result.output.count("\n") == 1
