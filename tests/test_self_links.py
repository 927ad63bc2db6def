"""A page is never listed as its own backlink (issue 36, 8), though its links to itself count in its rank.

The python docs have pages that link to themselves (a link to the page's own
URL, not to a fragment of it).  As in networkx's ``pagerank`` (a self-loop
is an ordinary edge) the ranking counts such a link: it is one of the page's
out-links and passes it its share.  The listings of backlinks leave the page
out, and the backlink report gives what those links pass as a share of its own.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import sqlite3
from urllib.parse import urldefrag, urljoin

import networkx as nx
import numpy as np
import pytest

from rankstore.solver import Graph, pagerank
from rankstore.store import Store, analysis

from conftest import PYTHON_DOC, run


@pytest.fixture(scope="module")
def self_linked(python_doc_store, tmp_path_factory):
    """(store, a crawled page that links to itself, among the best such by backlinks)."""
    path = str(tmp_path_factory.mktemp("self-links") / "py.db")
    shutil.copy(python_doc_store, path)
    run("rank", "--store", path, "-q")
    with sqlite3.connect(path) as db:
        url = db.execute(
            "SELECT p.url FROM links l JOIN pages p ON p.id = l.src WHERE l.src = l.dst AND p.crawled"
            " AND NOT l.nofollow ORDER BY (SELECT count(*) FROM links b WHERE b.dst = p.id) DESC LIMIT 1"
        ).fetchone()[0]
    return path, url


def test_backlinks_leave_the_page_itself_out(self_linked):
    store, url = self_linked
    report = json.loads(run("backlinks", url, "-n", "100000", "--format", "json", "--store", store))
    rows = report["rows"]
    listed = [row["url"] for row in rows if row["url"] is not None]
    assert url not in listed
    with sqlite3.connect(store) as db:
        others = {
            row[0]
            for row in db.execute(
                "SELECT s.url FROM links l JOIN pages s ON s.id = l.src JOIN pages t ON t.id = l.dst"
                " WHERE t.url = ? AND l.src != l.dst",
                (url,),
            )
        }
    assert set(listed) == others
    with Store(store, readonly=True) as opened:
        ranking = opened.rankings.ranking()
        arrays = opened.rankings.ranking_arrays(ranking.id)
        page = opened.pages.page_id(url)
        assert url not in [row[0] for row in opened.queries.top_backlinks(ranking.id, url, 10_000)]  # the panel's query
        own = float(arrays.votes[page - 1]) / float(arrays.scores[page - 1])  # an unweighted link: votes[v]
        hosts = analysis.referring_hosts(opened, url, limit=1000)
        anchors = analysis.anchors(opened, url, limit=10_000)
    shares = report["shares"]
    assert shares["links_to_itself"] == pytest.approx(own, rel=1e-12)
    assert sum(row["share"] or 0.0 for row in rows) + sum(shares.values()) == pytest.approx(1.0, abs=1e-9)
    host = url.split("/")[2]
    same_host = [row for row in hosts if row["host"] == host]
    assert same_host and same_host[0]["pages"] == sum(1 for other in others if other.split("/")[2] == host)
    with sqlite3.connect(store) as db:
        (noted,) = db.execute(
            "SELECT count(*) FROM link_notes n JOIN pages t ON t.id = n.dst WHERE t.url = ? AND n.src != n.dst"
            " AND n.anchor IS NOT NULL",
            (url,),
        ).fetchone()
    assert sum(row["links"] for row in anchors) == noted


def test_a_link_to_itself_is_an_edge_as_in_networkx():
    """The contract the listing leaves alone: the solver counts a self-link as networkx does."""
    edges = [(0, 0), (0, 1), (1, 2), (2, 0), (2, 1), (3, 3), (3, 2)]
    graph = Graph.from_edges([s for s, _ in edges], [d for _, d in edges], n=4)
    ours = pagerank(graph, tol=1e-14, max_iter=10_000).scores
    expected = nx.pagerank(nx.DiGraph(edges), tol=1e-15, max_iter=10_000)
    assert np.allclose(ours, [expected[i] for i in range(4)], atol=1e-12)
    without = [(s, d) for s, d in edges if s != d]
    plain = pagerank(Graph.from_edges([s for s, _ in without], [d for _, d in without], n=4), tol=1e-14).scores
    assert not np.allclose(ours, plain, atol=1e-6)  # the self-links were counted, not dropped


def test_the_panel_leaves_the_page_itself_out_once_links_differ_in_age(self_linked, tmp_path):
    """With a second build the panel reads the page's in-links itself (to mark the new ones): the page's links to
    itself stay out of its backlinks and of its count of new ones."""
    from proxy_addon.ranks import Ranks

    store, url = self_linked
    path = str(tmp_path / "two-builds.db")
    shutil.copy(store, path)
    edges = tmp_path / "edges.tsv"
    edges.write_text(f"http://elsewhere.example/\t{url}\n")
    run("build", str(edges), "--store", path, "-q")
    run("rank", "--store", path, "-q")
    ranks = Ranks(path, panel_size=10_000)
    try:
        panel = ranks.panel(url)
    finally:
        ranks.close()
    listed = [backlink.url for backlink in panel.backlinks]
    assert "http://elsewhere.example/" in listed and url not in listed
    assert panel.new_backlinks == 1


# ------------------------------------------------------------------ lost links: a page's own is no lost backlink

BASE = "http://python.local/"


def _drop_links_to(site, page: str, url: str) -> None:
    """Take out of ``page`` (a URL of the site) every link that resolves to ``url``."""
    path = site / page[len(BASE) :]
    own_file = "file://" + str(PYTHON_DOC) + "/" + url[len(BASE) :]

    def unlink(match: re.Match) -> str:
        href = html.unescape(match.group(1))
        to = urldefrag(urljoin(page, href)).url
        return "data-dropped" if to == url or urldefrag(href).url == own_file else match.group(0)

    text = path.read_text(encoding="utf-8")
    edited = re.sub(r'href="([^"]*)"', unlink, text)
    assert edited != text, page
    path.write_text(edited, encoding="utf-8")


@pytest.fixture(scope="module")
def recrawled(tmp_path_factory):
    """(store, a page that linked to itself, another page that linked to it): a second build of the site found
    neither link."""
    work = tmp_path_factory.mktemp("lost-self-links")
    site = work / "site"
    shutil.copytree(PYTHON_DOC, site, ignore=shutil.ignore_patterns("_sources", "_downloads", "_images", "_static"))
    store = str(work / "s.db")
    run("build", str(site), "--base-url", BASE, "--store", store, "-q")
    run("rank", "--store", store, "-q")
    with sqlite3.connect(store) as db:
        url, other = db.execute(
            "SELECT p.url, o.url FROM links l JOIN pages p ON p.id = l.src JOIN links b ON b.dst = p.id"
            " JOIN pages o ON o.id = b.src WHERE l.src = l.dst AND p.crawled AND o.crawled AND b.src != b.dst"
            " AND NOT l.nofollow ORDER BY p.url, o.url LIMIT 1"
        ).fetchone()
    for page in (url, other):
        _drop_links_to(site, page, url)
    run("build", str(site), "--base-url", BASE, "--store", store, "-q")
    return store, url, other


def test_a_page_is_not_its_own_lost_backlink(recrawled):
    store, url, other = recrawled
    with sqlite3.connect(store) as db:  # both links are lost by the second build: the listing leaves one out
        lost = db.execute(
            "SELECT s.url FROM lost_links l JOIN pages s ON s.id = l.src JOIN pages t ON t.id = l.dst"
            " WHERE t.url = ? AND l.lost_build = 2",
            (url,),
        ).fetchall()
    assert {row[0] for row in lost} == {url, other}
    rows = json.loads(run("backlinks", url, "--lost", "-n", "0", "--format", "json", "--store", store))
    assert [row["url"] for row in rows] == [other]
    table = run("backlinks", url, "--lost", "--store", store)
    assert other in table and url not in table.replace(other, "")
    from proxy_addon.markup import escape
    from proxy_addon.pages import respond
    from proxy_addon.ranks import Ranks

    ranks = Ranks(store)
    try:
        status, _, body = respond("GET", "/backlinks", {"url": [url], "lost": ["1"]}, ranks)
    finally:
        ranks.close()
    listed = re.findall(r'<tr [^>]*data-url="([^"]*)"', body.decode())
    assert status == 200 and listed == [escape(other)]


def test_referring_hosts_and_intersect_leave_the_page_itself_out(self_linked):
    store, url = self_linked
    with Store(store, readonly=True) as opened:
        linking = {row["url"] for row in analysis.intersect(opened, [(url, None)], limit=100_000)}
        hosts = analysis.referring_hosts(opened, url, limit=1000)
    assert linking and url not in linking
    host = url.split("/")[2]
    for row in hosts:  # the page's own host counts the other pages of it that link, with their best
        assert row["best_url"] != url
        if row["host"] == host:
            assert row["pages"] == sum(1 for page in linking if page.split("/")[2] == host)


# ------------------------------------------------------------------ one count of backlinks (issue 47, 3)

_TINY = {
    # a.html links to itself, has one followed backlink (b) and two nofollow ones (c, d)
    "index.html": '<a href="b.html">b</a> <a href="c.html">c</a> <a href="d.html">d</a>',
    "a.html": '<a href="a.html">me</a> <a href="index.html">home</a>',
    "b.html": '<a href="a.html">a</a>',
    "c.html": '<a rel="nofollow" href="a.html">a</a> <a href="index.html">home</a>',
    "d.html": '<a rel="nofollow" href="a.html">a</a> <a href="index.html">home</a>',
}


@pytest.fixture(scope="module")
def nofollowed(tmp_path_factory):
    """(store, a page that links to itself and has one followed and two nofollow backlinks)."""
    work = tmp_path_factory.mktemp("one-count")
    site = work / "site"
    site.mkdir()
    for name, body in _TINY.items():
        (site / name).write_text(f"<html><head><title>{name}</title></head><body>{body}</body></html>")
    store = str(work / "tiny.db")
    run("build", str(site), "--base-url", "http://tiny.local/", "--store", store, "-q")
    run("rank", "--store", store, "-q")
    return store, "http://tiny.local/a.html"


def _counts_shown(store: str, url: str) -> dict[str, int]:
    """The count of ``url``'s backlinks (in-links) as each view shows it."""
    from proxy_addon import markup
    from proxy_addon.pages import respond
    from proxy_addon.ranks import Ranks

    shown: dict[str, int] = {}
    (row,) = json.loads(run("show", url, "--store", store, "--format", "json"))
    shown["show"] = row["inlinks"]
    top = json.loads(run("top", "-n", "0", "--store", store, "--format", "json"))
    shown["top"] = next(row["inlinks"] for row in top if row["url"] == url)
    report = json.loads(run("backlinks", url, "-n", "0", "--format", "json", "--store", store))
    shown["backlinks -n 0"] = len([row for row in report["rows"] if row["url"] is not None])
    with Store(store, readonly=True) as opened:
        shown["export"] = next(
            row.inlinks for row in opened.queries.export_rows(opened.rankings.ranking()) if row.url == url
        )

    def number(pattern: str, text: str) -> int:
        found = re.search(pattern, text)
        assert found, (pattern, text[:2000])
        return int(found.group(1).replace(",", ""))

    ranks = Ranks(store, panel_size=10_000)
    try:
        _, _, body = respond("GET", "/page", {"url": [url]}, ranks)
        page = body.decode()
        shown["/page in-links"] = number(r"([\d,]+) in-links", page)
        shown["/page all"] = number(r">all ([\d,]+)</a>", page)
        _, _, body = respond("GET", "/backlinks", {"url": [url]}, ranks)
        shown["/backlinks"] = number(r"; ([\d,]+) backlinks?", body.decode())
        shown["panel"] = number(r"([\d,]+) backlinks", markup.panel(ranks.panel(url)))
        shown["bar"] = number(r"([\d,]+) in-links", html.unescape(markup.bar(ranks.lookup([url])[url])))
    finally:
        ranks.close()
    return shown


def test_one_count_of_backlinks_with_a_link_to_itself(self_linked):
    store, url = self_linked
    shown = _counts_shown(store, url)
    assert len(set(shown.values())) == 1, shown


def test_one_count_of_backlinks_with_nofollow_backlinks(nofollowed):
    """The count is of the other pages that link to it, followed or not, as the list shows them."""
    store, url = nofollowed
    shown = _counts_shown(store, url)
    assert set(shown.values()) == {3}, shown


def test_the_count_of_other_in_links_is_read_a_chunk_at_a_time(monkeypatch):
    """``other_in_links`` gives each page's in-links less its links to itself, whatever the chunks' bounds."""
    from rankstore import ranking

    rng = np.random.default_rng(47)
    n, m = 200, 3000
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    src[:300] = dst[:300]  # many links to themselves
    src[300:320], dst[300:320] = 7, 7  # one page linking to itself more than once
    order = np.lexsort((src, dst))
    indices = src[order].astype(np.int32)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    expected = np.bincount(dst[src != dst], minlength=n)
    for chunk in (1, 5, 64, 1 << 24):
        monkeypatch.setattr(ranking, "_SELF_CHUNK", chunk)
        counts = ranking.other_in_links(indptr, indices)
        assert counts.dtype == np.int32 and counts.tolist() == expected.tolist(), chunk


def test_a_version_ranked_before_the_one_count_is_ranked_again(nofollowed, tmp_path):
    """A version whose stored in-links were the solver graph's (its params lack ``inlinks``) is not called
    unchanged: ``rank`` writes a version with the one count."""
    store, url = nofollowed
    path = str(tmp_path / "old.db")
    shutil.copy(store, path)
    with sqlite3.connect(path) as db:
        (ranking_id, params) = db.execute("SELECT id, params FROM rankings ORDER BY id DESC LIMIT 1").fetchone()
        old = json.loads(params)
        assert old.pop("inlinks") == "others"
        db.execute("UPDATE rankings SET params = ? WHERE id = ?", (json.dumps(old), ranking_id))
    run("rank", "--store", path, "-q")
    with sqlite3.connect(path) as db:
        (newest,) = db.execute("SELECT max(id) FROM rankings").fetchone()
    assert newest != ranking_id
    assert _counts_shown(path, url)["show"] == 3
