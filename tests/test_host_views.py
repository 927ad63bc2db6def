"""The own pages' whole-host views answer as before, with work bounded by the blocks they read, and the deadline's
503 says what fits the page.

A whole host's backlinks (``/backlinks?url=HOST&host=1``, ``&group=host``, the panel's "Backlinks of the whole
host") and the level panels of ``/page?url=`` for a page the store lacks read the in-links of every page of a
host: one ``in_links`` block at a time (:func:`~rankstore.store.analysis.in_slices`), not one read a page, which
took two queries a page, each copying the page's whole block.  Timing is measured by
``tools/bench_own_pages.py``, not here.
"""

from __future__ import annotations

import html
import http.client
import json
import re
import shutil
from urllib.parse import urlencode

import numpy as np
import pytest
from test_history import two_crawls  # noqa: F401  (a module fixture, used by name)
from test_proxy_e2e import Proxy

from proxy_addon import pages
from proxy_addon.pages import CSP, respond
from proxy_addon.ranks import Ranks
from rankstore.store import Store, analysis
from rankstore.urls import host_of

from conftest import run


@pytest.fixture(scope="module")
def store_path(two_crawls, tmp_path_factory):  # noqa: F811
    """The two builds' store (links of two ages), its hosts ranked too: a copy of its own."""
    source, url = two_crawls
    path = str(tmp_path_factory.mktemp("host-views") / "s.db")
    shutil.copy(source, path)
    run("rank", "--level", "host", "--store", path, "-q")
    return path, url


@pytest.fixture(scope="module")
def store(store_path):
    with Store(store_path[0], readonly=True) as opened:
        yield opened


def _hosts(store: Store) -> list[str]:
    """Every host with a page that has in-links, the largest first: the crawled site and the sites it links to."""
    return [name for (name,) in store.db.execute("SELECT name FROM hosts WHERE pages > 0 ORDER BY pages DESC")]


def _page_by_page(store: Store, pages_of: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(sources, targets, nofollow, born) of the pages' in-links read one page at a time, as the views read them
    before: the answer a block at a time must equal."""
    slices = [(page, analysis.in_slice(store, int(page) + 1)) for page in pages_of.tolist()]
    sources = np.concatenate([one.sources for _, one in slices])
    targets = np.concatenate([np.full(len(one.sources), page) for page, one in slices])
    nofollow = np.concatenate(
        [one.nofollow if one.nofollow is not None else np.zeros(len(one.sources), bool) for _, one in slices]
    )
    born = np.concatenate([one.born for _, one in slices])
    return sources, targets, nofollow, born


@pytest.mark.parametrize("inline", [analysis.INLINE_BYTES, 64])  # 64: every block read by blob I/O, as a big one
def test_a_hosts_in_links_a_block_at_a_time_equal_them_page_by_page(store, inline, monkeypatch):
    monkeypatch.setattr(analysis, "INLINE_BYTES", inline)
    hosts = store.hosts.page_hosts()
    with store.snapshot():
        assert analysis.graph_born(store) == 0  # two builds: each link keeps its own first build
        for name in _hosts(store)[:6]:
            pages_of = store.hosts.pages_of_host(store.hosts.host_id(name))
            links, targets = analysis.in_slices(store, pages_of)
            sources, expected_targets, nofollow, born = _page_by_page(store, pages_of)
            assert len(sources), name
            assert links.sources.tolist() == sources.tolist()
            assert targets.tolist() == expected_targets.tolist()
            assert (links.nofollow if links.nofollow is not None else np.zeros(len(sources), bool)).tolist() == (
                nofollow.tolist()
            )
            assert links.born.tolist() == born.tolist()
            assert set(born.tolist()) <= {1, 2}
        # a few scattered pages of the site, and pages past the graph's: only theirs, none for those past it
        site = store.hosts.pages_of_host(int(hosts[0]))
        some = np.concatenate([site[::7], [len(hosts) + 5, len(hosts) + 9]])
        links, targets = analysis.in_slices(store, some)
        sources, expected_targets, _, born = _page_by_page(store, some)
        assert links.sources.tolist() == sources.tolist() and targets.tolist() == expected_targets.tolist()
        assert links.born.tolist() == born.tolist()


def test_a_page_of_referring_hosts_is_the_head_of_the_whole_order():
    """The hosts a page of referring hosts lists are those the whole order (np.lexsort) puts there, ties in both
    keys by index, with only the candidates sorted; and each host's distinct linking pages are counted alike."""
    rng = np.random.default_rng(47)
    for size in (0, 1, 7, 5_000):
        primary = rng.integers(0, 40, size)  # many ties, as hosts without a rank or contribution
        secondary = rng.integers(0, 30, size)
        for count in (0, 1, 5, 50, size, size + 3):
            assert analysis._first_by(primary, secondary.__getitem__, count).tolist() == (
                np.lexsort((secondary, primary))[:count].tolist()
            )
            assert analysis._first_by(-primary * 0.5, None, count).tolist() == (
                np.argsort(-primary * 0.5, kind="stable")[:count].tolist()
            )
        hosts = np.sort(rng.integers(1, 9, size))
        sources = rng.integers(0, 20, size)
        starts = np.flatnonzero(np.concatenate([[True], hosts[1:] != hosts[:-1]])) if size else np.zeros(0, int)
        expected = [len(set(sources[hosts == host].tolist())) for host in hosts[starts].tolist()]
        assert analysis._distinct_counts(hosts, sources, starts).tolist() == expected


def _statements(store: Store, read) -> int:
    """How many SQL statements ``read()`` runs on the store's connection."""
    said: list[str] = []
    store.db.set_trace_callback(said.append)
    try:
        read()
    finally:
        store.db.set_trace_callback(None)
    return len(said)


def test_whole_host_views_read_each_block_once(store, store_path):
    url = store_path[1]
    site = host_of(url)
    pages_of = store.hosts.pages_of_host(store.hosts.host_id(site))
    blocks = store.db.execute("SELECT count(*) FROM in_links").fetchone()[0]
    assert len(pages_of) > 10 * (blocks + 50)  # so that a read a page could not pass for one a block
    head = store.levels.level_head("host")
    assert head is not None
    reads = {
        "referring hosts": lambda: analysis.referring_hosts(store, host=site),
        "backlinks": lambda: analysis.backlink_report(store, host=site, since=1),
        "by contribution": lambda: analysis.backlink_report(store, host=site, sort="contribution"),
        "panel's referrers": lambda: store.levels.referrers(head, site, 5),
    }
    for what, read in reads.items():
        read()  # what a reader keeps (arrays of the ranking, each page's host) read once before
        assert _statements(store, read) <= blocks + 50, what


def test_the_anchors_of_listed_backlinks_are_looked_up_not_scanned(store, store_path):
    """The rows' anchor texts come from searches of the (dst, src) pairs listed, not a pass over every anchored
    link of the store (what ``(src, dst) IN (VALUES ...)`` made of them): SQLite's steps for a page's report
    stay far below the store's anchored links."""
    url = store_path[1] + "library/functions.html"
    anchored = store.db.execute("SELECT count(*) FROM link_notes WHERE anchor IS NOT NULL").fetchone()[0]
    expected = analysis.backlink_report(store, url)
    assert len(expected.rows) == 50 and any(row["anchor"] for row in expected.rows)
    steps = [0]

    def step() -> int:
        steps[0] += 10
        return 0

    store.db.set_progress_handler(step, 10)
    try:
        report = analysis.backlink_report(store, url)
    finally:
        store.db.set_progress_handler(None, 0)
    assert report.rows == expected.rows
    assert anchored > 10_000 and steps[0] < anchored // 4, (steps[0], anchored)


def _message(body: bytes) -> str:
    return html.unescape(re.search(r"</h1><p>(.*?)</p>", body.decode()).group(1))


def test_the_deadlines_503_says_what_fits_the_page(store_path, monkeypatch):
    path, url = store_path
    ranks = Ranks(path)
    site = host_of(url)
    monkeypatch.setattr(pages, "_PROGRESS_STEPS", 1)  # a deadline already past, checked at every SQLite step
    try:
        wordless = [
            ("/backlinks", {"url": [site], "host": ["1"], "group": ["host"]}),  # the panel's whole-host link
            ("/backlinks", {"url": [site], "host": ["1"]}),
            ("/page", {"url": [url + "no-such-page.html"]}),
            ("/top", {}),
        ]
        for where, query in wordless:
            status, headers, body = respond("GET", where, query, ranks, deadline=0.0)
            assert status == 503 and headers["Content-Security-Policy"] == CSP, (where, body[-300:])
            said = _message(body)
            assert "took too long" in said and "words" not in said and "earlier page" not in said, (where, said)
            assert "try again" in said
        status, _, body = respond("GET", "/backlinks", {"url": [site], "host": ["1"], "page": ["2"]}, ranks, 0.0)
        assert status == 503 and "earlier page" in _message(body) and "words" not in _message(body)
        status, _, body = respond("GET", "/search", {"q": ["library functions"]}, ranks, deadline=0.0)
        assert status == 503 and "fewer or rarer words" in _message(body)
    finally:
        ranks.close()


def test_whole_host_views_through_the_proxy_are_the_clis_rows(store_path):
    path, url = store_path
    site = host_of(url)
    running = Proxy(path)
    try:

        def get(where: str, **params: str) -> tuple[int, str]:
            connection = http.client.HTTPConnection("127.0.0.1", running.port, timeout=30)
            connection.request("GET", f"http://pagerank.proxy{where}?{urlencode(params)}")
            answer = connection.getresponse()
            body = answer.read().decode()
            connection.close()
            return answer.status, body

        # the panel's "Backlinks of the whole host" of a site the crawl links to, and of the crawled site itself
        for target in [*(name for name in _hosts(Store(path, readonly=True))[:4] if name != site), site]:
            status, body = get("/backlinks", url=target, host="1", group="host", format="json")
            assert status == 200, body[-300:]
            cli = json.loads(
                run("backlinks", target, "--host", "--group-by", "host", "--format", "json", "--store", path)
            )
            assert json.loads(body) == cli, target
            status, body = get("/backlinks", url=target, host="1", group="host")
            assert status == 200 and "Referring hosts" in body, body[-300:]
            assert [html.unescape(h) for h in re.findall(r'<tr data-host="([^"]*)"', body)] == [
                row["host"] for row in cli
            ]
        status, body = get("/page", url=url + "no-such-page.html")
        assert status == 200 and "This page is not in the store" in body, body[-300:]
    finally:
        output = running.stop()
    assert "Traceback" not in output
