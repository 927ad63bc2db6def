"""A backlink report's shares are no pages (issue 33, 4): JSON names them apart, CSV leaves them out unless asked.

The shares of the target's PageRank that no listed page gives (other
backlinks, the random jump, pages without out-links) used to come as rows
with an empty URL.  Now ``--format json`` is ``{"rows": [...], "shares":
{...}}``, ``--format csv`` holds link rows only unless ``--with-shares``, the
table still shows them, and the own pages' downloads say the same.
"""

from __future__ import annotations

import csv
import io
import json
import shutil

import pytest

from proxy_addon.pages import respond
from proxy_addon.ranks import Ranks
from rankstore.store import Store

from conftest import run

SHARE_KINDS = {"other backlinks", "random jump", "pages without out-links"}


@pytest.fixture(scope="module")
def ranked(python_doc_store, tmp_path_factory):
    """(store, a page with many backlinks, its host)."""
    path = str(tmp_path_factory.mktemp("shares") / "py.db")
    shutil.copy(python_doc_store, path)
    run("rank", "--store", path, "-q")
    with Store(path, readonly=True) as store:
        page = store.db.execute("SELECT url FROM pages WHERE url LIKE '%/library/functions.html'").fetchone()[0]
    return path, page, page.split("/")[2]


def _csv(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_json_is_rows_and_named_shares(ranked):
    store, page, _ = ranked
    report = json.loads(run("backlinks", page, "-n", "5", "--format", "json", "--store", store))
    assert set(report) == {"rows", "shares"}
    assert report["rows"] and all(row["url"] for row in report["rows"])
    shares = report["shares"]
    assert {"other_backlinks", "random_jump", "pages_without_out_links"} <= set(shares)
    assert shares["other_backlinks"] > 0  # five rows listed: the rest comes from the others
    listed = sum(row["share"] or 0.0 for row in report["rows"])
    assert listed + sum(shares.values()) == pytest.approx(1.0, abs=1e-9)


def test_json_of_a_whole_host_names_its_internal_links(ranked):
    store, _, host = ranked
    report = json.loads(run("backlinks", host, "--host", "-n", "5", "--format", "json", "--store", store))
    assert "internal_links_and_pages_without_out_links" in report["shares"]
    assert "pages_without_out_links" not in report["shares"]


def test_json_since_has_rows_and_no_shares(ranked):
    store, page, _ = ranked
    report = json.loads(run("backlinks", page, "--since", "1", "--format", "json", "--store", store))
    assert report == {"rows": [], "shares": {}}  # one build: nothing is new since it


def test_csv_holds_links_only_unless_asked(ranked):
    store, page, _ = ranked
    plain = _csv(run("backlinks", page, "-n", "5", "--format", "csv", "--store", store))
    assert len(plain) == 5 and all(row["url"] for row in plain)
    assert {row["kind"] for row in plain} <= {"link", "nofollow"}
    full = _csv(run("backlinks", page, "-n", "5", "--format", "csv", "--with-shares", "--store", store))
    assert full[: len(plain)] == plain
    extra = full[len(plain) :]
    assert {row["kind"] for row in extra} == SHARE_KINDS and all(row["url"] == "" for row in extra)
    assert all(row["bar"] == "" for row in extra)  # a share is no page: no bar, not a bar of 0 (issue 47, 11)
    assert sum(float(row["share"]) for row in full) == pytest.approx(1.0, abs=1e-9)


def test_table_keeps_the_share_lines(ranked):
    store, page, _ = ranked
    text = run("backlinks", page, "-n", "5", "--store", store)
    for kind in SHARE_KINDS:
        assert f"({kind})" in text


@pytest.mark.parametrize(
    "query, args",
    [
        ({"format": ["json"]}, ["--format", "json"]),
        ({"format": ["csv"]}, ["--format", "csv"]),
        ({"format": ["csv"], "with_shares": ["1"]}, ["--format", "csv", "--with-shares"]),
    ],
)
def test_own_pages_download_the_same(ranked, query, args):
    store, page, _ = ranked
    status, _, body = respond("GET", "/backlinks", {"url": [page], **query}, Ranks(store))
    assert status == 200
    assert body.decode() == run("backlinks", page, "-n", "20000", *args, "--store", store)
    if query["format"] == ["json"]:
        assert set(json.loads(body)) == {"rows", "shares"}
    elif "with_shares" not in query:
        assert all(row["url"] for row in _csv(body.decode()))
