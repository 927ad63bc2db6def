"""`rankstore search` and `rankstore anchors`: their exact rows on a small hand-made crawl, in every format.

The crawl is four pages with chosen titles and anchor texts, every page with
out-links (no dangling mass): its PageRank is worked out here with numpy from
the link list alone, and every row the commands give is checked against it.
"""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from rankstore.store import Store

from conftest import run

SITE = "http://hand.example/"
D = 0.85

# page -> (title, [(target, anchor)]), in the order written (page ids follow it); /t links to itself
PAGES = {
    "b": ("Alpha tutorial", [("t", "target page"), ("c", "to c")]),
    "c": ("Beta guide", [("t", "Other words"), ("a", "to a")]),
    "a": ("Alpha guide", [("t", "Target  Page"), ("b", "to b")]),
    "t": ("Target", [("t", "self"), ("a", "home")]),
}


def _page(title: str, links: list[tuple[str, str]]) -> bytes:
    body = "".join(f'<a href="{SITE}{target}">{anchor}</a>' for target, anchor in links)
    return f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>".encode()


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    work = tmp_path_factory.mktemp("hand")
    warc = work / "hand.warc.gz"
    with open(warc, "wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        for name, (title, links) in PAGES.items():
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
            payload = io.BytesIO(_page(title, links))
            writer.write_record(writer.create_warc_record(SITE + name, "response", payload=payload, http_headers=http))
    path = str(work / "hand.db")
    run("build", str(warc), "--store", path, "-q")
    run("rank", "--store", path, "-q", "--tol", "1e-14")
    return path


def _pagerank(self_links: bool) -> dict[str, float]:
    """The textbook PageRank of PAGES by power iteration: uniform jump, a page's vote split over its out-links."""
    names = sorted(PAGES)
    index = {name: i for i, name in enumerate(names)}
    matrix = np.zeros((len(names), len(names)))
    for name, (_, links) in PAGES.items():
        targets = [target for target, _ in links if self_links or target != name]
        for target in targets:
            matrix[index[target], index[name]] += 1 / len(targets)
    scores = np.full(len(names), 1 / len(names))
    for _ in range(1000):
        scores = (1 - D) / len(names) + D * matrix @ scores
    return {name: float(scores[index[name]]) for name in names}


def _ours(store: str) -> dict[str, float]:
    rows = json.loads(run("top", "--store", store, "-n", "0", "--format", "json"))
    return {row["url"][len(SITE) :]: row["pagerank"] for row in rows}


def _expected_pagerank(store: str) -> tuple[dict[str, float], bool]:
    """The independent PageRank that the store's ranking matches (self-links counted or not), and which."""
    ours = _ours(store)
    for self_links in (False, True):
        expected = _pagerank(self_links)
        if all(abs(ours[name] - expected[name]) < 1e-10 for name in PAGES):
            return expected, self_links
    pytest.fail(f"the store's PageRank {ours} is neither textbook PageRank of the hand-made graph")


def test_search_rows_are_every_title_match_best_pagerank_first(store):
    pagerank, _ = _expected_pagerank(store)
    ranks = {name: 1 + sorted(pagerank.values(), reverse=True).index(value) for name, value in pagerank.items()}
    inlinks = {"a": 2, "b": 1, "c": 1, "t": 3}  # other pages linking in (a page's link to itself is not one)
    alpha = sorted(["a", "b"], key=lambda name: -pagerank[name])
    guide = sorted(["a", "c"], key=lambda name: -pagerank[name])
    with Store(store, readonly=True) as opened:
        ids = {name: opened.pages.page_id(SITE + name) for name in PAGES}
    # the order asked for is not the index's own (page id) order, so the ranking is what orders the rows
    assert [ids[name] for name in guide] != sorted(ids[name] for name in guide)

    rows = json.loads(run("search", "alpha", "--store", store, "--format", "json"))
    assert [row["url"] for row in rows] == [SITE + name for name in alpha]
    assert [row["title"] for row in rows] == [PAGES[name][0] for name in alpha]
    assert [row["rank"] for row in rows] == [ranks[name] for name in alpha]
    assert [row["pagerank"] for row in rows] == pytest.approx([pagerank[name] for name in alpha], abs=1e-10)
    assert [row["inlinks"] for row in rows] == [inlinks[name] for name in alpha]

    table = list(csv.DictReader(io.StringIO(run("search", "alpha", "--store", store, "--format", "csv"))))
    assert list(table[0]) == list(rows[0])  # the same columns in the same order
    assert [{key: str(value) for key, value in row.items()} for row in rows] == table

    # every word must be in the title: "guide" is two pages, "alpha guide" one, "gamma" none
    found = json.loads(run("search", "guide", "--store", store, "--format", "json"))
    assert [row["url"] for row in found] == [SITE + name for name in guide]
    both = json.loads(run("search", "alpha", "guide", "--store", store, "--format", "json"))
    assert [row["url"] for row in both] == [SITE + "a"]
    assert json.loads(run("search", "gamma", "--store", store, "--format", "json")) == []

    lines = run("search", "alpha", "--store", store).splitlines()
    assert lines[0].split()[:5] == ["rank", "pagerank", "percentile", "toolbar", "inlinks"]
    urls = [line.split()[-1] for line in lines[1:] if SITE in line]
    assert urls == [SITE + name for name in alpha]
    assert [line.strip() for line in lines[1:] if SITE not in line] == [PAGES[name][0] for name in alpha]


def test_anchors_rows_group_texts_and_sum_what_their_links_pass_on(store):
    pagerank, self_links = _expected_pagerank(store)
    out_degree = {name: len([t for t, _ in links if self_links or t != name]) for name, (_, links) in PAGES.items()}

    def passes(source: str) -> float:
        return D * pagerank[source] / out_degree[source]

    # "Target  Page" and "target page" are one anchor (case and spacing folded)
    expected = sorted(
        [
            {"anchor": "Target Page", "links": 2, "contribution": passes("a") + passes("b")},
            {"anchor": "Other words", "links": 1, "contribution": passes("c")},
        ],
        key=lambda row: -row["contribution"],
    )
    rows = json.loads(run("anchors", SITE + "t", "--store", store, "--format", "json"))
    assert [row["anchor"].casefold() for row in rows] == [row["anchor"].casefold() for row in expected]
    assert [row["links"] for row in rows] == [row["links"] for row in expected]
    assert [row["contribution"] for row in rows] == pytest.approx([row["contribution"] for row in expected], abs=1e-12)
    assert all(row["anchor"] != "self" for row in rows)  # t's link to itself is left out

    table = list(csv.DictReader(io.StringIO(run("anchors", SITE + "t", "--store", store, "--format", "csv"))))
    assert list(table[0]) == ["anchor", "links", "contribution"]
    assert [{key: str(value) for key, value in row.items()} for row in rows] == table

    lines = run("anchors", SITE + "t", "--store", store).splitlines()
    assert lines[0].split() == ["links", "contribution", "anchor"]
    assert [line.split(None, 2)[2] for line in lines[1:]] == [f"“{row['anchor']}”" for row in rows]
    assert [int(line.split()[0]) for line in lines[1:]] == [row["links"] for row in rows]

    one = json.loads(run("anchors", SITE + "t", "-n", "1", "--store", store, "--format", "json"))
    assert one == rows[:1]
    home = json.loads(run("anchors", SITE + "a", "--store", store, "--format", "json"))
    assert sorted(row["anchor"] for row in home) == ["home", "to a"]
