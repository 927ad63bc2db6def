"""Bars for every ranking (issue 36, 2) and spam mass shown (issue 36, 6, its display), on the python docs.

Each variant of the ranking scores 0 the pages its rank source cannot reach;
every page above 0 must still get a bar, in the CLI and on the own pages, and
a page at 0 an empty bar that says why.  TrustRank's spam mass must be in
the table view and in the export.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil

import numpy as np
import pytest

from proxy_addon.pages import respond
from proxy_addon.ranks import Ranks
from rankstore.store import Store

from conftest import run

EVERY = "100000"  # more than the store's pages: every row


@pytest.fixture(scope="module")
def variants(python_doc_store, tmp_path_factory):
    """(store, the ranking names): the python docs ranked by every variant."""
    work = tmp_path_factory.mktemp("bars")
    path = str(work / "py.db")
    shutil.copy(python_doc_store, path)
    with Store(path, readonly=True) as store:
        pages = [
            row[0]
            for row in store.db.execute(
                "SELECT url FROM pages WHERE crawled AND (url LIKE '%/library/functions.html'"
                " OR url LIKE '%/library/os.html' OR url LIKE '%/tutorial/index.html') ORDER BY url"
            )
        ]
    assert len(pages) == 3
    seeds = work / "seeds.txt"
    seeds.write_text("\n".join(pages) + "\n", encoding="utf-8")
    run("rank", "--store", path, "-q")
    run("rank", "--source", pages[0], "--store", path, "-q")
    run("rank", "--source-roots", "--name", "roots", "--store", path, "-q")
    run("rank", "--topic", f"a={seeds}", "--store", path, "-q")
    run("rank", "--trusted", str(seeds), "--store", path, "-q")
    run("rank", "--flagged", str(seeds), "--store", path, "-q")
    return path, ["personalized", "roots", "topic:a", "trust", "badrank"]


@pytest.mark.parametrize("ranking", ["personalized", "roots", "topic:a", "trust", "badrank"])
def test_every_page_above_zero_has_a_bar(variants, ranking):
    store, _ = variants
    rows = json.loads(run("top", "--ranking", ranking, "-n", EVERY, "--format", "json", "--store", store))
    assert rows and rows[0]["pagerank"] > 0
    for row in rows:
        assert (row["bar"] > 0) == (row["pagerank"] > 0), row
    assert rows[0]["bar"] == 20  # the CLI's widest
    with Store(store, readonly=True) as opened:
        _, scores = opened.rankings.scores_of(opened.rankings.ranking(ranking).id)
    assert len(rows) == len(scores)


def test_a_page_scored_zero_says_so_in_the_table(variants):
    store, names = variants
    unreached = {}
    for ranking in names:
        with Store(store, readonly=True) as opened:
            _, scores = opened.rankings.scores_of(opened.rankings.ranking(ranking).id)
        unreached[ranking] = int(np.count_nonzero(scores == 0))
    assert unreached["badrank"] > 0  # pages that link to no flagged page, however far
    for ranking, count in unreached.items():
        lines = run("top", "--ranking", ranking, "-n", EVERY, "--store", store).splitlines()
        said = [line for line in lines if "0 (unreached by the rank source)" in line]
        assert len(said) == count, ranking
        rows = json.loads(run("top", "--ranking", ranking, "-n", EVERY, "--format", "json", "--store", store))
        assert sum(row["bar"] == 0 for row in rows) == count


@pytest.fixture(scope="module")
def ranks(variants):
    opened = Ranks(variants[0])
    yield opened
    opened.close()


@pytest.mark.parametrize("ranking", ["personalized", "roots", "topic:a", "trust", "badrank"])
def test_own_top_page_draws_the_rankings_bars(ranks, variants, ranking):
    store, _ = variants
    status, _, body = respond("GET", "/top", {"ranking": [ranking], "n": ["1000"]}, ranks)
    assert status == 200
    text = body.decode()
    rows = re.findall(r'<tr data-pagerank="([^"]+)"[^>]*>.*?data-w="(\d+)"', text)
    with Store(store, readonly=True) as opened:
        expected = [row["pagerank"] for row in opened.queries.top(ranking, 1000)]
    assert [float(score) for score, _ in rows] == expected  # the ranking asked for, not the proxy's own
    for score, width in rows:
        assert (int(width) > 0) == (float(score) > 0)
    if 0.0 in expected:
        assert "0: unreached by the rank source" in text


# ------------------------------------------------------------------ spam mass


def test_spam_mass_in_the_table_and_the_export(variants):
    store, _ = variants
    with Store(store, readonly=True) as opened:
        ranking = opened.rankings.ranking("trust")
        arrays = opened.rankings.ranking_arrays(ranking.id)
        assert arrays.extra is not None
        urls = dict(opened.db.execute("SELECT url, id FROM pages"))
    table = run("top", "--ranking", "trust", "-n", "5", "--store", store).splitlines()
    assert "spam_mass" in table[0].split()
    best = json.loads(run("top", "--ranking", "trust", "-n", "5", "--format", "json", "--store", store))
    for row in best:
        assert f"{row['spam_mass']:.4f}" in "\n".join(table)
    shown = run("show", best[0]["url"], "--ranking", "trust", "--store", store)
    assert "spam_mass" in shown.splitlines()[0]
    rows = list(csv.DictReader(io.StringIO(run("export", "--ranking", "trust", "--store", store))))
    assert "spam_mass" in rows[0]
    for row in rows:
        mass = arrays.extra[urls[row["url"]] - 1]
        assert (row["spam_mass"] == "") if np.isnan(mass) else float(row["spam_mass"]) == mass
    plain = list(csv.DictReader(io.StringIO(run("export", "--ranking", "pagerank", "--store", store))))
    assert "spam_mass" not in plain[0]
