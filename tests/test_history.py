"""Backlinks as an analyst reads them, on two real crawls of one site: contributions, new and lost links, builds.

python3.11-doc is served on 127.0.0.1 and crawled by wget; then some of its
pages are edited on disk (a link to the target added to one page, every link
to it taken out of another, a link to another page added to a third) and the
same server is crawled again.  ``--since`` and ``--lost`` must list exactly the
edited links, best first.
"""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest
from click.testing import CliRunner
from sitecrawl import crawl, serve

from rankstore.cli import cli

from conftest import PYTHON_DOC, once

TARGET = "library/functions.html"
GAINS = "library/aifc.html"  # gets a link to the target
LOSES = "library/sqlite3.html"  # loses its links to the target
MOVES = "library/os.html"  # gets a link to another page


def run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _edit(site) -> None:
    gains = site / GAINS
    text = gains.read_text(encoding="utf-8")
    assert 'href="functions.html' not in text
    gains.write_text(
        text.replace("</body>", '<p><a href="functions.html#len">len()</a></p></body>', 1), encoding="utf-8"
    )
    loses = site / LOSES
    text = loses.read_text(encoding="utf-8")
    assert 'href="functions.html' in text
    loses.write_text(text.replace('href="functions.html', 'data-was="functions.html'), encoding="utf-8")
    moves = site / MOVES
    text = moves.read_text(encoding="utf-8")
    assert 'href="zipapp.html' not in text
    moves.write_text(text.replace("</body>", '<p><a href="zipapp.html">zipapp</a></p></body>', 1), encoding="utf-8")


@pytest.fixture(scope="module")
def two_crawls(tmp_path_factory):
    """(store, base URL): the site built and ranked, edited, crawled again, built and ranked again (once for
    the run: test_analyst_pages reads it too, and no test writes to it)."""

    def make(work):
        site = work / "site"
        shutil.copytree(PYTHON_DOC, site, ignore=shutil.ignore_patterns("_sources", "_downloads", "_images", "_static"))
        store = str(work / "s.db")
        with serve(str(site)) as url:
            crawl(url, str(work / "before.warc.gz"))
            run("build", str(work / "before.warc.gz"), "--store", store, "-q")
            run("rank", "--store", store, "-q")
            _edit(site)
            crawl(url, str(work / "after.warc.gz"))
        run("build", str(work / "after.warc.gz"), "--store", store, "-q")
        run("rank", "--store", store, "-q")
        return store, url

    store, url = once(tmp_path_factory, "history", make)
    return store, url


def _links(output: str) -> list[dict]:
    return [row for row in json.loads(output)["rows"] if row["kind"] in ("link", "nofollow")]


def test_since_lists_exactly_the_links_gained(two_crawls):
    store, url = two_crawls
    new = _links(run("backlinks", url + TARGET, "--since", "1", "--format", "json", "--store", store))
    assert [row["url"] for row in new] == [url + GAINS]
    assert new[0]["first_seen"] == 2
    moved = _links(run("backlinks", url + "library/zipapp.html", "--since", "1", "--format", "json", "--store", store))
    assert [row["url"] for row in moved] == [url + MOVES]
    assert _links(run("backlinks", url + TARGET, "--since", "2", "--format", "json", "--store", store)) == []


def test_lost_lists_exactly_the_links_taken_out(two_crawls):
    store, url = two_crawls
    lost = json.loads(run("backlinks", url + TARGET, "--lost", "--format", "json", "--store", store))
    assert [row["url"] for row in lost] == [url + LOSES]
    assert (lost[0]["first_seen"], lost[0]["last_seen"], lost[0]["lost_in"]) == (1, 1, 2)
    assert (
        json.loads(run("backlinks", url + TARGET, "--lost", "--since", "2", "--format", "json", "--store", store)) == []
    )
    # and the page no longer lists it among the backlinks
    now = _links(run("backlinks", url + TARGET, "-n", "100000", "--format", "json", "--store", store))
    assert url + LOSES not in {row["url"] for row in now} and url + GAINS in {row["url"] for row in now}


def test_builds_count_the_new_and_lost_links(two_crawls):
    store, _ = two_crawls
    builds = json.loads(run("builds", "--format", "json", "--store", store))
    assert [b["build"] for b in builds] == [1, 2]
    assert builds[1]["new_links"] == 2 and builds[1]["lost_links"] == 1
    assert builds[0]["new_links"] == builds[0]["links"]  # every link of the first crawl was new then


def test_shares_add_up_to_one_and_rows_come_best_first(two_crawls):
    store, url = two_crawls
    report = json.loads(run("backlinks", url + TARGET, "-n", "100000", "--format", "json", "--store", store))
    links = [row for row in report["rows"] if row["kind"] == "link"]
    assert len(links) > 50
    assert sum(row["share"] for row in report["rows"]) + sum(report["shares"].values()) == pytest.approx(1.0, abs=1e-9)
    scores = [row["pagerank"] for row in links]
    assert scores == sorted(scores, reverse=True)
    top = json.loads(run("backlinks", url + TARGET, "-n", "5", "--format", "json", "--store", store))
    listed = sum(row["share"] for row in top["rows"])
    assert listed + sum(top["shares"].values()) == pytest.approx(1.0, abs=1e-9)  # "other_backlinks" holds the rest
    by_contribution = _links(
        run("backlinks", url + TARGET, "--sort", "contribution", "-n", "100000", "--format", "json", "--store", store)
    )
    values = [row["contribution"] for row in by_contribution if row["kind"] == "link"]
    assert values == sorted(values, reverse=True)
    target = json.loads(run("show", url + TARGET, "--format", "json", "--store", store))[0]["pagerank"]
    with sqlite3.connect(store) as db:  # d·PR(v)/C(v), C(v) counted by SQL from the links view
        for row in by_contribution[:5]:
            (followed,) = db.execute(
                "SELECT count(*) FROM links l JOIN pages p ON p.id = l.src WHERE p.url = ? AND NOT l.nofollow",
                (row["url"],),
            ).fetchone()
            assert row["contribution"] == pytest.approx(0.85 * row["pagerank"] / followed, rel=1e-12)
            assert row["share"] == pytest.approx(row["contribution"] / target, rel=1e-12)
