"""The addon inside mitmproxy's test harness (taddons, tflow)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import os
import re
import shutil
import threading
import time

import pytest
from barkit import bar_count, bar_values, outside_panel, panel_items, panel_of
from click.testing import CliRunner
from mitmproxy import exceptions
from mitmproxy.test import taddons, tflow, tutils

from proxy_addon.addon import PageRankProxy
from proxy_addon.jobs import Rewritten, Untouched
from proxy_addon.markup import PANEL_STYLE_HASH, STYLE_HASH
from proxy_addon.options import parse_settings
from proxy_addon.pool import JOBS_IN_FLIGHT
from rankstore.cli import cli
from rankstore.store import Store

from conftest import data


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("addon") / "small.db")
    runner = CliRunner()
    assert runner.invoke(cli, ["build", data("small.warc.gz"), "--store", path]).exit_code == 0
    assert runner.invoke(cli, ["rank", "--store", path, "-q"]).exit_code == 0
    return path


@pytest.fixture
def site(store_path):
    with Store(store_path, readonly=True) as store:
        url = store.db.execute(
            "SELECT url FROM pages WHERE url LIKE '%/index.html' AND url NOT LIKE '%/docs/%'"
        ).fetchone()[0]
    return url[: -len("index.html")]


def make_flow(
    url,
    body=b"<html><body><a href='docs/'>d</a></body></html>",
    content_type="text/html; charset=utf-8",
    status=200,
    method="GET",
    headers=(),
):
    flow = tflow.tflow(resp=True)
    flow.request = tutils.treq()
    flow.request.url = url
    flow.request.method = method
    flow.response = tutils.tresp(status_code=status, content=b"")
    flow.response.headers.clear()
    flow.response.headers["content-type"] = content_type
    for name, value in headers:
        flow.response.headers.add(name, value)
    flow.response.content = body
    return flow


async def run_hooks(addon, flow):
    addon.responseheaders(flow)
    await addon.response(flow)


@contextlib.asynccontextmanager
async def running_addon(store_path, **settings):
    addon = PageRankProxy()
    with taddons.context(addon) as context:
        context.configure(addon, rankstore=store_path, **settings)
        await addon.running()
        if addon.workers is not None:  # as in a proxy running a while: until they start, pages go to a thread
            assert await addon.workers.wait_started()
        yield addon
        if addon.workers is not None:
            await addon.workers.aclose()


@pytest.fixture
async def addon(store_path):
    """Every page to the workers, even one alone in the proxy (the tests of the workers)."""
    async with running_addon(store_path, pagerank_inline_bytes=0) as addon:
        yield addon


@pytest.fixture
async def loop_addon(store_path):
    """As the proxy starts by default: a small uncompressed page alone in the proxy is rewritten in its loop."""
    async with running_addon(store_path) as addon:
        yield addon


@pytest.fixture(params=["workers", "loop"])
async def either(request, store_path):
    """Each way a page is rewritten: in a worker, and in mitmproxy's loop."""
    async with running_addon(store_path, pagerank_inline_bytes=0 if request.param == "workers" else 65536) as addon:
        yield addon


async def test_html_gets_bars_and_panel(either, site):
    flow = make_flow(
        site + "index.html",
        b"<html><head></head><body><a href='docs/'>Docs</a><a href='https://nowhere.example/'>x</a></body></html>",
    )
    await run_hooks(either, flow)
    text = flow.response.text
    page, panel = outside_panel(text), panel_of(text)
    assert panel is not None and text.count("<aside data-pagerank-panel>") == 1
    assert bar_count(page) == 2
    assert bar_values(page)[1] == "unranked"  # nowhere.example is not in the store
    assert bar_values(page)[0] not in ("unranked", "0.0")  # docs/ is
    with Store(either.settings.store, readonly=True) as store:
        expected = [row["url"] for row in store.queries.backlinks(site + "index.html", limit=10)]
        scores = [row["pagerank"] for row in store.queries.backlinks(site + "index.html", limit=10)]
    items = panel_items(panel)
    assert expected and [item.href.replace("&amp;", "&") for item in items] == expected
    assert [float(item.attributes["data-pagerank"]) for item in items] == [float(score or 0) for score in scores]
    assert flow.metadata["pagerank"].startswith("2 bars (1 ranked)")
    assert flow.metadata["pagerank"].endswith(", in the loop") == (either.settings.inline_bytes > 0)


async def test_a_gzip_body_is_sent_decoded_with_its_length(addon, site):
    """An annotated page goes without its Content-Encoding: compressed, its size would vary with what the bars
    and the panel show (a page reads its own encoded size), where decoded it is the same whatever they show."""
    flow = make_flow(site + "docs/", b"")
    flow.response.headers["content-encoding"] = "gzip"
    flow.response.content = b"<html><body><a href='latin1.html'>l</a></body></html>"  # encoded by mitmproxy
    assert flow.response.raw_content[:2] == b"\x1f\x8b"
    await run_hooks(addon, flow)
    assert "content-encoding" not in flow.response.headers
    raw = flow.response.raw_content
    assert bar_count(outside_panel(raw.decode())) == 1
    assert int(flow.response.headers.get("content-length", len(raw))) == len(raw)


@pytest.mark.parametrize("case", ["json", "image", "status-404", "status-206", "status-304", "status-204", "head"])
async def test_non_candidates_pass_untouched_and_streamed(either, site, case):
    body = b"<a href='x'>looks like html</a>"
    kwargs = {
        "json": dict(content_type="application/json"),
        "image": dict(content_type="image/png"),
        "status-404": dict(status=404),
        "status-206": dict(status=206),
        "status-304": dict(status=304),
        "status-204": dict(status=204),
        "head": dict(method="HEAD"),
    }[case]
    flow = make_flow(site + "index.html", body, **kwargs)
    await run_hooks(either, flow)
    assert flow.response.content == body
    assert flow.response.stream is True


async def test_large_body_streams(addon, site, store_path):
    with taddons.context(addon) as context:
        context.configure(addon, rankstore=store_path, pagerank_max_body=2048)
        flow = make_flow(site + "index.html", b"<a href=x>" * 1000)
        flow.response.headers["content-length"] = str(10_000)
        addon.responseheaders(flow)
        assert flow.response.stream is True


async def test_csp_header_gets_our_hash_and_nothing_else(either, site):
    flow = make_flow(
        site + "index.html",
        headers=[
            ("content-security-policy", "default-src 'self'"),
            ("content-security-policy-report-only", "style-src 'none'"),
            ("content-security-policy", "img-src 'self'"),
        ],
    )
    await run_hooks(either, flow)
    policies = flow.response.headers.get_all("content-security-policy")
    ours = f"'{STYLE_HASH}' '{PANEL_STYLE_HASH}'"  # the page's style block and the panel's
    assert policies == [f"default-src 'self'; style-src 'self' {ours}", "img-src 'self'"]
    assert flow.response.headers["content-security-policy-report-only"] == f"style-src 'none' {ours}"


async def test_own_pages_answered_without_upstream(either, site):
    flow = tflow.tflow()
    flow.request.url = "http://pagerank.proxy/top?n=5"
    await either.request(flow)
    assert flow.response is not None and flow.response.status_code == 200
    assert flow.response.headers["content-security-policy"].startswith("default-src 'none'")
    assert flow.response.text.count("<tr data-pagerank=") == 5
    post = tflow.tflow()
    post.request.url = "http://pagerank.proxy/top"
    post.request.method = "POST"
    await either.request(post)
    assert post.response.status_code == 405


async def test_an_own_page_not_ready_in_time_is_a_503_by_the_answer_time(either, site, monkeypatch):
    """The store's deadline stops SQLite work only; a view's other work (arrays read from a cold disk) may run
    on: the page is answered by ``pages.ANSWER_BY``, a 503 that says what to do, whatever the thread still does."""
    from proxy_addon import pages

    release = threading.Event()

    def slow(ranks, query):
        release.wait(10)
        return pages.error(200, "made too late to be shown")

    monkeypatch.setitem(pages.ROUTES, "/top", slow)
    monkeypatch.setattr(pages, "ANSWER_BY", 0.3)
    flow = tflow.tflow()
    flow.request.url = "http://pagerank.proxy/top?n=5"
    started = time.monotonic()
    try:
        await either.request(flow)
    finally:
        release.set()
    assert time.monotonic() - started < 2
    assert flow.response.status_code == 503 and "took too long" in flow.response.text
    assert all(name in flow.response.headers for name in pages.OWN_ONLY_HEADERS)
    assert flow.response.headers["content-security-policy"].startswith("default-src 'none'")
    again = tflow.tflow()
    again.request.url = "http://pagerank.proxy/builds"  # the proxy answers on
    await either.request(again)
    assert again.response.status_code == 200


async def test_other_hosts_are_not_answered(addon):
    flow = tflow.tflow()
    flow.request.url = "http://example.com/"
    await addon.request(flow)
    assert flow.response is None


def test_options_are_checked(tmp_path):
    assert parse_settings("", "pagerank", 10_000, 10) is None  # idle until a store is set
    with pytest.raises(exceptions.OptionsError, match="no such file"):
        parse_settings(str(tmp_path / "none.db"), "pagerank", 10_000, 10)
    with pytest.raises(exceptions.OptionsError, match="pagerank_panel"):
        parse_settings(__file__, "pagerank", 10_000, 1000)


def test_a_negative_large_page_rate_is_refused():
    with pytest.raises(exceptions.OptionsError, match="pagerank_large_page_rate"):
        parse_settings(__file__, "pagerank", 10_000, 10, large_page_rate=-1)


async def test_a_run_of_large_pages_waits_its_turn_and_a_small_page_never_does(addon, site, store_path):
    from proxy_addon.pacing import LARGE_PAGE

    large = b"<html><body><a href='docs/'>Docs</a>" + b" " * LARGE_PAGE + b"</body></html>"
    with taddons.context(addon) as context:
        # a burst of 1.2 MiB at 10 MB/s: the first large page goes at once, the second waits ~0.1 s for its turn
        context.configure(addon, rankstore=store_path, pagerank_max_body=1_258_291, pagerank_large_page_rate=10)
        await addon.running()
        flows = [make_flow(site + "index.html", body) for body in (large, large, b"<a href='docs/'>Docs</a>")]
        loop = asyncio.get_running_loop()
        started = loop.time()
        await asyncio.gather(*(run_hooks(addon, flow) for flow in flows))
        elapsed = loop.time() - started
        first, second, small = (flow.metadata["pagerank"] for flow in flows)
        assert first.startswith("1 bars") and "turn" not in first and "turn" not in small
        waited = re.fullmatch(r"1 bars .*, after (\d+) ms for its turn", second)
        assert waited is not None  # 2 pages less the burst at 10 MB/s, less the moments between their hooks
        assert 50 <= int(waited[1]) <= (2 * len(large) - 1_258_291) / 10e6 * 1000 + 1 <= elapsed * 1000 + 1


def test_a_host_ranking_or_an_unknown_one_is_an_options_error_naming_the_page_rankings(store_path, tmp_path):
    """``mitmdump -s proxy_addon/addon.py --set pagerank_ranking=hostrank``: the addon refuses a ranking of
    hosts as the ranking of pages, whose scores it looks up by page id."""
    path = str(tmp_path / "hosts.db")
    shutil.copy(store_path, path)
    assert CliRunner().invoke(cli, ["rank", "--store", path, "--level", "host", "-q"]).exit_code == 0
    addon = PageRankProxy()
    with taddons.context(addon) as context:
        refusal = "rankstore: hostrank ranks hosts, not pages: choose a page ranking (pagerank)"
        with pytest.raises(exceptions.OptionsError, match=re.escape(refusal)):
            context.configure(addon, rankstore=path, pagerank_ranking="hostrank")
        assert addon.ranks is None
        refusal = "rankstore: no ranking 'nosuch' (the store's page rankings: pagerank)"
        with pytest.raises(exceptions.OptionsError, match=re.escape(refusal)):
            context.configure(addon, rankstore=path, pagerank_ranking="nosuch")
        context.configure(addon, rankstore=path, pagerank_ranking="pagerank")
        assert addon.ranks is not None


def test_missing_ranking_is_an_options_error(store_path, tmp_path):
    unranked = str(tmp_path / "unranked.db")
    with Store(store_path, readonly=True) as source, Store(unranked) as store:
        source.db.backup(store.db)
        store.db.execute("DELETE FROM rankings")
    addon = PageRankProxy()
    with taddons.context(addon) as context:
        with pytest.raises(exceptions.OptionsError, match="rankstore rank"):
            context.configure(addon, rankstore=unranked)


async def test_a_worker_that_dies_leaves_its_page_untouched_and_is_replaced(addon, site):
    assert await addon.workers.wait_started()
    first = addon.workers._workers[0].process  # the first one a job gets (the quiet proxy's warm one)
    first.kill()  # before the event loop turns: the next job goes to it, and it dies with the job in hand
    body = b"<html><body><a href='docs/'>Docs</a></body></html>"
    flow = make_flow(site + "index.html", body)
    await run_hooks(addon, flow)
    assert flow.response.content == body
    assert flow.metadata["pagerank"].startswith("untouched: a rewriting process exited")
    await first.wait()
    for _ in range(3):  # the other worker, then the one started in place of the dead one
        flow = make_flow(site + "index.html", body)
        await run_hooks(addon, flow)
        assert bar_count(outside_panel(flow.response.text)) == 1
    processes = [worker.process for worker in addon.workers._workers]
    assert first not in processes and len(processes) == 2


async def test_worker_error_is_reported_and_the_worker_lives_on(addon, site, monkeypatch):
    # a job the worker cannot unpickle stands in for any error inside it
    from proxy_addon import jobs

    real_dumps = jobs.pickle.dumps
    monkeypatch.setattr(jobs.pickle, "dumps", lambda value, protocol=None: b"garbage")
    flow = make_flow(site + "index.html", b"<a href='docs/'>Docs</a>")
    await run_hooks(addon, flow)
    assert flow.metadata["pagerank"].startswith("untouched: UnpicklingError")
    monkeypatch.setattr(jobs.pickle, "dumps", real_dumps)
    flow = make_flow(site + "index.html", b"<a href='docs/'>Docs</a>")
    await run_hooks(addon, flow)
    assert bar_count(outside_panel(flow.response.text)) == 1


async def test_without_workers_pages_are_rewritten_in_a_thread(site, store_path):
    addon = PageRankProxy()
    with taddons.context(addon) as context:
        context.configure(addon, rankstore=store_path, pagerank_workers=0, pagerank_inline_bytes=0)
        await addon.running()
        assert addon.workers is None
        flow = make_flow(site + "index.html", b"<html><body><a href='docs/'>Docs</a></body></html>")
        await run_hooks(addon, flow)
        assert bar_count(outside_panel(flow.response.text)) == 1


async def test_running_freezes_what_is_loaded_for_the_cycle_collector(store_path):
    addon = PageRankProxy()
    with taddons.context(addon) as context:
        context.configure(addon, rankstore=store_path, pagerank_workers=0)
        gc.unfreeze()
        try:
            await addon.running()
            assert addon.starting is not None
            await addon.starting  # beside mitmproxy's start, not in its hook
            # the modules loaded by now (this addon's among them) are out of every full collection's walk
            assert gc.get_freeze_count() > 10_000
        finally:
            gc.unfreeze()


@pytest.mark.parametrize("preload", [0, 3, 10**6])  # none, the 3 best pages, every page
def test_preloaded_lookups_answer_as_the_store_does_and_a_whole_version_needs_no_query(store_path, site, preload):
    from proxy_addon.ranks import Ranks

    with Store(store_path, readonly=True) as store:
        urls = [url for (url,) in store.db.execute("SELECT url FROM pages ORDER BY id")]
        expected = store.queries.lookup(urls)
    unknown = [site + "not-in-the-store.html", "http://elsewhere.example/"]
    ranks = Ranks(store_path, preload=preload)
    ranks.preload()
    queries: list[str] = []
    ranks.store().db.set_trace_callback(queries.append)
    with ranks.page() as view:
        assert view.lookup(unknown) == {}
        found = view.lookup(urls)
    selects = [query for query in queries if query.startswith("SELECT")]  # (each page reads data_version)
    assert bool(selects) == (preload < len(expected))  # every page known: no query, for unknown URLs too
    assert found.keys() == expected.keys()
    for url, row in expected.items():
        info = found[url]
        assert (info.pagerank, info.inlinks) == (row["pagerank"], row["inlinks"])
        assert info == ranks_lookup_alone(store_path, url)  # the same LinkInfo as a page's own look-up
    ranks.close()


def ranks_lookup_alone(store_path, url):
    from proxy_addon.ranks import Ranks

    ranks = Ranks(store_path)
    try:
        return ranks.lookup([url])[url]
    finally:
        ranks.close()


@pytest.mark.parametrize("preload", [0, 10**6])
def test_lookups_remembered_until_a_new_ranking_version(store_path, site, tmp_path, preload):
    from proxy_addon.ranks import Ranks

    path = str(tmp_path / "reranked.db")
    shutil.copy(store_path, path)
    url = site + "index.html"
    ranks = Ranks(path, preload=preload)
    before = ranks.lookup([url])[url].pagerank
    assert ranks.lookup([url])[url].pagerank == before  # from the cache
    assert CliRunner().invoke(cli, ["rank", "--store", path, "--damping", "0.5", "-q"]).exit_code == 0
    with Store(path, readonly=True) as store:
        expected = store.queries.lookup([url])[url]["pagerank"]
    assert expected != before
    assert ranks.lookup([url])[url].pagerank == expected  # the new version, not the remembered one
    ranks.close()


@pytest.mark.parametrize("shared_bytes", [0, 1_000, 4 * 1024 * 1024])
async def test_bodies_pass_through_shared_memory_or_the_pipe(site, store_path, monkeypatch, shared_bytes):
    # 0: no shared memory; 1,000: the body fits, its answer does not; 4 MiB: both go through it
    from proxy_addon import pool

    monkeypatch.setattr(pool, "SHARED_BYTES", shared_bytes)
    addon = PageRankProxy()
    with taddons.context(addon) as context:
        context.configure(addon, rankstore=store_path, pagerank_inline_bytes=0)
        await addon.running()
        assert await addon.workers.wait_started()
        body = b"<html><body>" + b"<a href='docs/'>Docs</a>" * 20 + b"</body></html>"
        assert len(body) < 1_000
        flow = make_flow(site + "index.html", body)
        await run_hooks(addon, flow)
        assert bar_count(outside_panel(flow.response.text)) == 20
        workers = list(addon.workers._workers)
        shared = [worker.shared for worker in workers if worker.shared is not None]
        assert len(shared) == (0 if shared_bytes == 0 else 2)
        if shared_bytes > 1_000:  # the answer came back through the region (the first slot)
            assert any(region[: len(flow.response.content)] == flow.response.content for region in shared)
        await addon.workers.aclose()
        assert not addon.workers._workers and all(worker.shared is None for worker in workers)


def test_a_page_sees_one_ranking_version_even_while_a_new_one_is_written(store_path, site, tmp_path):
    # the rewrite's look-ups and panel run in one read transaction: a version
    # written meanwhile (which also drops the old version's backlink order)
    # shows on the next page, not halfway through this one
    from proxy_addon.ranks import Ranks

    path = str(tmp_path / "reranked.db")
    shutil.copy(store_path, path)
    url = site + "index.html"
    ranks = Ranks(path)
    before = ranks.panel(url)
    assert before.backlinks
    with ranks.page() as view:
        assert CliRunner().invoke(cli, ["rank", "--store", path, "--damping", "0.5", "-q"]).exit_code == 0
        during = view.panel(url)
        assert during == before
    after = ranks.panel(url)
    assert after.info.pagerank != before.info.pagerank
    assert [link.url for link in after.backlinks]  # the new version's own backlink order
    ranks.close()


@pytest.mark.parametrize(
    "tags, budget, passed",
    [(6, 6, False), (7, 6, True), (3, 100, False)],  # the last: too short to hold 100, not even counted
)
def test_the_link_budget_counts_link_tags(store_path, site, tags, budget, passed):
    from proxy_addon.worker import rewrite_page

    tag = [b"<abbr>y</abbr>", b'<a href="/x">x</a>']
    body = b"<!doctype html><body>" + b"".join(tag[i % 2] for i in range(tags))
    done = rewrite_page(store_path, "pagerank", 10, body, "text/html", site + "page.html", None, 1 << 20, budget)
    if passed:
        assert done == Untouched(f"over {budget:,} link tags")
    else:
        assert isinstance(done, Rewritten) and done[1] == tags // 2  # <abbr> is counted, but gets no bar


def test_a_page_too_short_to_hold_the_budget_in_links_is_not_counted(store_path, site):
    # 7 link tags, but in 21 bytes: fewer than 8 a link with a target, so at most 2 bars, whatever the count
    from proxy_addon.worker import rewrite_page

    done = rewrite_page(
        store_path, "pagerank", 10, b"<a><a><a><a><a><a><a>", "text/html", site + "p.html", None, 1 << 20, 6
    )
    assert isinstance(done, Rewritten) and done[1] == 0


async def test_a_response_that_no_server_sent_is_annotated_too(either, site):
    """A response set by another addon (a replay, map_local) skips responseheaders: response decides alone."""
    flow = make_flow(site + "index.html", b"<html><body><a href='docs/'>Docs</a></body></html>")
    await either.response(flow)
    assert bar_count(outside_panel(flow.response.text)) == 1


# ------------------------------------------------------------------ the panel made while the request travels


@pytest.mark.parametrize(
    "method, path, headers, expected",
    [
        ("GET", "/docs/", (), True),
        ("GET", "/library/functions.html", (), True),
        ("GET", "/search?q=a.css", (), True),  # the query is no file type
        ("GET", "/static/site.CSS", (), False),
        ("GET", "/logo.png?v=2", (), False),
        ("POST", "/form", (), False),
        ("GET", "/static/site.css", (("sec-fetch-dest", "document"),), True),  # the browser's word wins
        ("GET", "/page", (("sec-fetch-dest", "script"),), False),
        ("GET", "/frame", (("Sec-Fetch-Dest", "iframe"),), True),
    ],
)
def test_might_be_page_judges_from_the_request_alone(method, path, headers, expected):
    from proxy_addon.options import might_be_page

    request = tutils.treq(method=method.encode(), path=path.encode())
    for name, value in headers:
        request.headers[name] = value
    assert might_be_page(request) is expected


async def _through_with_request(addon, url, body=b"<html><head></head><body><a href='docs/'>Docs</a></body></html>"):
    """A page through every hook, its request first (where the panel is made ahead)."""
    flow = make_flow(url, body)
    response, flow.response = flow.response, None
    await addon.request(flow)
    flow.response = response
    await run_hooks(addon, flow)
    return flow


async def test_the_panel_is_made_while_the_request_travels_and_gives_the_same_page(addon, site):
    body = b"<html><head></head><body><a href='docs/'>Docs</a></body></html>"
    plain = make_flow(site + "index.html", body)
    await run_hooks(addon, plain)  # no request hook: the page's job makes its panel itself
    assert not plain.metadata["pagerank"].endswith("panel kept")
    flow = await _through_with_request(addon, site + "docs/", body)
    assert flow.metadata["pagerank"].endswith(", panel kept")  # made as the request travelled
    again = make_flow(site + "index.html", body)
    await run_hooks(addon, again)  # no request hook: the panel its first visit made
    assert again.metadata["pagerank"].endswith(", panel kept")
    assert again.response.content == plain.response.content and panel_of(plain.response.content) is not None


async def test_a_panel_made_ahead_for_another_page_is_not_used(addon, site):
    other = make_flow(site + "docs/")
    other.response = None
    await addon.request(other)  # its panel is made, but the next job is for another page
    flow = make_flow(site + "index.html", b"<html><body><a href='docs/'>Docs</a></body></html>")
    await run_hooks(addon, flow)
    assert not flow.metadata["pagerank"].endswith("panel kept")
    with Store(addon.settings.store, readonly=True) as store:
        expected = [row["url"] for row in store.queries.backlinks(site + "index.html", limit=10)]
    assert [item.href.replace("&amp;", "&") for item in panel_items(flow.response.text)] == expected


async def test_no_panel_is_made_ahead_for_a_non_page_or_while_a_worker_is_busy(addon, site):
    style = await _through_with_request(addon, site + "style.css")
    assert style.metadata["pagerank"].startswith("1 bars") and not style.metadata["pagerank"].endswith("kept")
    from proxy_addon.pool import _Job

    busy = addon.workers._workers[-1]  # one of the two is working: the proxy is not quiet
    busy.pending.append(_Job(asyncio.get_running_loop().create_future(), None, site, 0))
    try:
        flow = await _through_with_request(addon, site + "index.html")
        assert not flow.metadata["pagerank"].endswith("panel kept")
    finally:
        busy.pending.clear()
    assert (await _through_with_request(addon, site + "docs/")).metadata["pagerank"].endswith("panel kept")


@pytest.mark.parametrize(
    "commit",
    [["rank", "--damping", "0.5"], ["rank", "--level", "host"]],  # a new version; the host ranking (panel only)
    ids=["pagerank", "hostrank"],
)
def test_a_panel_kept_before_a_commit_is_made_again(store_path, site, tmp_path, commit):
    from proxy_addon.worker import _ranks_for, prepare_panel, rewrite_page

    path = str(tmp_path / "reranked.db")
    shutil.copy(store_path, path)
    url, body = site + "index.html", b"<!doctype html><body><a href='docs/'>d</a>"
    assert prepare_panel(path, "pagerank", 10, url)
    made = rewrite_page(path, "pagerank", 10, body, "text/html", url, None, 1 << 20, 0)
    assert made[3] is True and panel_of(made[0]) is not None
    kept = _ranks_for(path, "pagerank", 10)._local.kept
    version, markup = kept[("panel", url)]
    kept[("panel", url)] = (version, markup.replace("PageRank", "STALE"))  # what a page would show if kept
    changed = body + b" "  # another body: not the rewrite kept for a revisit of the same one
    assert b"STALE" in rewrite_page(path, "pagerank", 10, changed, "text/html", url, None, 1 << 20, 0)[0]
    statements: list[str] = []
    _ranks_for(path, "pagerank", 10).store().db.set_trace_callback(statements.append)
    assert prepare_panel(path, "pagerank", 10, url) and statements == []  # kept lately: told without a query
    assert CliRunner().invoke(cli, [*commit, "--store", path, "-q"]).exit_code == 0
    assert prepare_panel(path, "pagerank", 10, url) and statements == []  # the commit is not seen here...
    done = rewrite_page(path, "pagerank", 10, body, "text/html", url, None, 1 << 20, 0)  # ...but by the job
    assert b"STALE" not in done[0] and panel_of(done[0]) is not None and done[3] is False
    assert prepare_panel(path, "pagerank", 0, url) is False  # no panel wanted: none made


@pytest.fixture
def parsed(monkeypatch) -> list[bytes]:
    """The bodies a page's rewrite parses from now on (a rewrite kept for a revisit parses none)."""
    from proxy_addon import worker

    bodies: list[bytes] = []
    real = worker.annotate_bytes

    def counted(decoded, *args, **kwargs):
        bodies.append(decoded)
        return real(decoded, *args, **kwargs)

    monkeypatch.setattr(worker, "annotate_bytes", counted)
    return bodies


@pytest.mark.parametrize(
    "commit",
    [["rank", "--damping", "0.5"], ["rank", "--level", "host"], ["build", "--format", "edges"]],
    ids=["pagerank", "hostrank", "build"],
)
def test_a_revisit_with_the_same_body_is_the_rewrite_before_until_a_commit(store_path, site, tmp_path, commit, parsed):
    """A page's rewrite is kept with its body: a revisit with the very same bytes, nothing committed to the
    store since, is given it without a parse; another body, another URL or header, or any commit (a ranking, a
    host ranking, a build), and the page is rewritten again, never shown with a version gone."""
    from proxy_addon import worker

    path = str(tmp_path / "again.db")
    shutil.copy(store_path, path)
    url, body = site + "index.html", b"<!doctype html><body><a href='docs/'>d</a> <a href='other.html'>o</a>"
    first = worker.rewrite_page(path, "pagerank", 10, body, "text/html", url, None, 1 << 20, 0)
    assert isinstance(first, Rewritten) and first.links == 2 and len(parsed) == 1
    parsed.clear()
    again = worker.rewrite_page(path, "pagerank", 10, bytes(body), "text/html", url, None, 1 << 20, 0)
    assert again.body == first.body and again.links == 2 and again.panel_kept is True and parsed == []
    for other in [
        (body + b" ", "text/html", url, None),  # another body
        (body, "text/html", site + "docs/", None),  # another page
        (body, "text/html; charset=latin-1", url, None),  # another header
    ]:
        worker.rewrite_page(path, "pagerank", 10, other[0], other[1], other[2], other[3], 1 << 20, 0)
    assert len(parsed) == 3
    framed = worker.rewrite_page(path, "pagerank", 10, body, "text/html", url, None, 1 << 20, 0, top_level=False)
    assert framed.body == first.body and len(parsed) == 4  # a frame's page: made anew, and not kept
    worker.rewrite_page(path, "pagerank", 10, body + b"  ", "text/html", url, None, 1 << 20, 0, top_level=False)
    worker.rewrite_page(path, "pagerank", 10, body + b"  ", "text/html", url, None, 1 << 20, 0)
    assert len(parsed) == 6
    if commit[0] == "build":
        extra = tmp_path / "extra.txt"
        extra.write_text(f"{site}index.html {site}new.html\n")
        commit = [*commit, str(extra)]
    result = CliRunner().invoke(cli, [*commit, "--store", path, "-q"])
    assert result.exit_code == 0, result.output
    after = worker.rewrite_page(path, "pagerank", 10, body, "text/html", url, None, 1 << 20, 0)
    assert len(parsed) == 7  # made again from the store as it now is
    fresh = worker._ranks_for(path, "pagerank", 10)
    fresh.close()  # a connection of its own: what this version shows, made anew
    assert worker.rewrite_page(path, "pagerank", 10, body, "text/html", url, None, 1 << 20, 0).body == after.body
    if commit[0] == "rank" and commit[1] == "--damping":
        assert after.body != first.body  # the scores moved


@pytest.mark.parametrize(
    "dest, kept",
    [("document", True), (None, True), ("iframe", False), ("frame", False)],
)
async def test_only_a_top_level_page_s_rewrite_is_kept_for_its_revisit(store_path, site, tmp_path, parsed, dest, kept):
    """A page in a frame is rewritten anew each time: another site that frames it could otherwise time whether
    the user saw it lately through the proxy (a kept rewrite comes sooner).  A client that sends no Fetch
    Metadata runs no page script (or its user accepted the risk: --insecure-pages)."""
    from proxy_addon import worker

    path = str(tmp_path / "framed.db")  # a store of its own: nothing kept by another test's rewrites
    shutil.copy(store_path, path)
    body = b"<!doctype html><body><a href='docs/'>d</a> <a href='x.html'>x</a>"
    async with running_addon(path) as addon:
        assert worker.ready(path, "pagerank", addon.settings.panel)  # read at start: pages alone go to the loop
        flows = []
        for _ in range(2):
            flow = make_flow(site + "index.html", body)
            if dest is not None:
                flow.request.headers["sec-fetch-dest"] = dest
            assert addon._job(flow).top_level is kept
            response, flow.response = flow.response, None
            await addon.request(flow)
            flow.response = response
            await run_hooks(addon, flow)
            assert flow.metadata["pagerank"].endswith(", in the loop"), flow.metadata
            flows.append(flow)
    assert flows[0].response.content == flows[1].response.content
    assert len(parsed) == (1 if kept else 2)


def test_kept_rewrites_are_bounded_in_pages_and_bytes(monkeypatch):
    from proxy_addon import ranks as ranks_module

    monkeypatch.setattr(ranks_module, "_AGAIN_PAGES", 3)
    monkeypatch.setattr(ranks_module, "_AGAIN_BYTES", 800)
    kept = ranks_module._Again()
    for key in "abcd":
        kept.put(key, key.encode() * 10, 1, key.upper(), 10)
    assert [kept.get(key, key.encode() * 10, 1) for key in "abcd"] == [None, "B", "C", "D"]  # the oldest let go
    assert kept.get("b", b"b" * 10, 2) is None  # another version of the store
    assert kept.get("b", b"b" * 9 + b"c", 1) is None  # another body
    kept.put("e", b"e" * 90, 1, "E", 10)  # 100 bytes: one eighth of the bound, kept
    kept.put("f", b"f" * 91, 1, "F", 10)  # more: never kept, lest one page push out many
    assert kept.get("e", b"e" * 90, 1) == "E" and kept.get("f", b"f" * 91, 1) is None
    for key in "ghijklmn":
        kept.put(key, key.encode() * 90, 1, key, 10)
    assert kept._bytes <= 800 and len(kept._kept) <= 3
    assert kept._bytes == sum(entry.size for entry in kept._kept.values())


def test_the_workers_threads_share_one_ranks_whichever_asks_first(store_path, tmp_path, monkeypatch):
    """A worker's preload thread and its first jobs ask for the store's Ranks at once: one is made, and both
    get it (a second, made while the first was in use, replaced it: a panel made ahead was made again in its
    job, which the CI saw once under load)."""
    from proxy_addon import worker

    path = str(tmp_path / "shared.db")
    shutil.copy(store_path, path)
    made = worker.Ranks

    def slow(*args, **kwargs):
        time.sleep(0.2)  # the constructor of one thread still running when the other asks
        return made(*args, **kwargs)

    monkeypatch.setattr(worker, "Ranks", slow)
    monkeypatch.setattr(worker, "_ranks", {})  # this test's, let go after it
    got: list = []
    threads = [threading.Thread(target=lambda: got.append(worker._ranks_for(path, "pagerank", 10))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(got) == 2 and got[0] is got[1] is worker._ranks_for(path, "pagerank", 10)


def test_kept_values_are_bounded_and_belong_to_their_connection(store_path, site, monkeypatch):
    from proxy_addon import ranks as ranks_module

    monkeypatch.setattr(ranks_module, "_CACHE_KEPT", 3)
    ranks = ranks_module.Ranks(store_path)
    made = []
    for key in "abcde":
        with ranks.page() as view:
            assert view.keep(key, lambda key=key: made.append(key) or key) == (key, False)
            assert view.keep(key, lambda: made.append("again")) == (key, True)
        assert len(ranks._local.kept) <= 3
    assert made == list("abcde")
    ranks.close()  # a new connection numbers the store's versions anew: nothing kept is served from it
    with ranks.page() as view:
        assert view.keep("e", lambda: "made again") == ("made again", False)
    ranks.close()


def test_a_page_asks_sqlite_only_its_version_until_something_is_committed(store_path, tmp_path):
    """And it leaves SQLite's own locks on the store's -shm file held: another process that found none
    would take the store for its own and reset its wal-index under this one."""
    from proxy_addon.ranks import Ranks

    path = str(tmp_path / "watched.db")
    shutil.copy(store_path, path)
    ranks = Ranks(path)
    with ranks.page() as view:
        first = view.data_version
    statements: list[str] = []
    ranks.store().db.set_trace_callback(statements.append)
    for _ in range(3):
        with ranks.page() as view:
            assert view.data_version == first
    assert statements == ["PRAGMA data_version"] * 3
    shm = os.stat(path + "-shm")
    with open("/proc/locks") as locks:
        held = [line for line in locks if f" {os.getpid()} " in line and line.split()[5].endswith(f":{shm.st_ino}")]
    assert held, "SQLite's lock on the -shm file is gone"
    statements.clear()
    with Store(path) as writer:
        writer.db.execute("CREATE TABLE scratch (x)")  # any commit by another connection
    with ranks.page() as view:
        assert view.data_version != first
    assert statements[0] == "PRAGMA data_version"
    ranks.close()


@contextlib.contextmanager
def _writes_to_the_next_worker(workers):
    """The messages written to the worker that the next job goes to (the first one, the proxy being quiet)."""
    top = workers._next()
    written = []
    write = workers._write
    workers._write = lambda worker, data: (worker is top and written.append(data), write(worker, data))[1]
    try:
        yield written
    finally:
        del workers._write


async def test_a_worker_is_asked_to_prepare_one_panel_at_a_time(addon, site):
    workers = addon.workers
    with _writes_to_the_next_worker(workers) as written:
        for page in ("a.html", "b.html", "c.html"):  # a burst of requests, no job between
            workers.prepare(site + page)
        assert len(written) == 1
        flow = make_flow(site + "index.html")
        await run_hooks(addon, flow)  # its job: the worker may be asked again
        workers.prepare(site + "d.html")
        assert len(written) == 3  # the job, and the second prepare


async def test_a_worker_is_not_asked_again_for_a_panel_it_keeps(addon, site):
    with _writes_to_the_next_worker(addon.workers) as written:
        first = await _through_with_request(addon, site + "docs/")  # asked ahead
        assert len(written) == 2 and first.metadata["pagerank"].endswith("panel kept")
        again = await _through_with_request(addon, site + "docs/")  # kept: its job alone
        assert len(written) == 3 and again.metadata["pagerank"].endswith("panel kept")
        await run_hooks(addon, make_flow(site + "index.html"))  # made in its job, kept since
        assert (await _through_with_request(addon, site + "index.html")).metadata["pagerank"].endswith("panel kept")
        assert len(written) == 5
    assert again.response.content == first.response.content


async def test_a_worker_takes_jobs_before_its_last_answer_is_read_and_answers_each_in_order(addon, site):
    workers = addon.workers
    assert await workers.wait_started()
    pages = [f"<html><body><p>page {n}</p><a href='docs/'>Docs</a></body></html>".encode() for n in range(10)]
    flows = [make_flow(site + "index.html", body) for body in pages]
    hooks = [asyncio.ensure_future(run_hooks(addon, flow)) for flow in flows]
    await asyncio.sleep(0)  # each page's job is sent: more than one to a worker, none read yet
    assert max(len(worker.pending) for worker in workers._workers) == JOBS_IN_FLIGHT
    assert len(workers._waiting) == len(pages) - JOBS_IN_FLIGHT * len(workers._workers)
    hooks[3].cancel()  # its client has gone: the answer to its job is dropped, the next ones still match
    await asyncio.gather(*hooks, return_exceptions=True)
    for n, flow in enumerate(flows):
        if n != 3:
            assert f"<p>page {n}</p>" in flow.response.text and flow.metadata["pagerank"].startswith("1 bars")
    assert workers.all_idle() and all(len(worker.free) == JOBS_IN_FLIGHT for worker in workers._workers)


def test_a_page_begins_its_read_only_at_its_first_query_and_sees_a_new_version_at_once(store_path, site, tmp_path):
    from proxy_addon.ranks import Ranks

    path = str(tmp_path / "lazy.db")
    shutil.copy(store_path, path)
    url = site + "index.html"
    ranks = Ranks(path)
    with ranks.page() as view:  # the first page reads the newest version in a transaction of its own
        assert not view._lazy and ranks.store().db.in_transaction
        before = view.lookup([url])[url]
    with ranks.page() as view:  # nothing changed since: no transaction until a query is needed
        assert view._lazy and not ranks.store().db.in_transaction
        assert view.lookup([url])[url] == before and not ranks.store().db.in_transaction  # remembered
        view.lookup([site + "docs/"])  # not yet looked up: a query, in the page's own transaction
        assert ranks.store().db.in_transaction
    assert not ranks.store().db.in_transaction
    assert CliRunner().invoke(cli, ["rank", "--store", path, "--damping", "0.5", "-q"]).exit_code == 0
    with ranks.page() as view:  # a commit since: the new version, read at once
        assert not view._lazy
        after = view.lookup([url])[url]
    assert after.pagerank != before.pagerank
    ranks.close()


def test_the_marks_start_over_past_their_bound_and_with_a_new_version(store_path, site, monkeypatch):
    from proxy_addon import ranks as ranks_module
    from proxy_addon.ranks import Ranks

    monkeypatch.setattr(ranks_module, "_CACHE_MARKS", 5)
    ranks = Ranks(store_path)
    with ranks.page() as view:
        first = view.marks("http://a.example/")
        first.update({str(i): None for i in range(4)})
    with ranks.page() as view:
        assert view.marks("http://a.example/") is first  # 4 hrefs: kept
        view.marks("http://b.example/").update({str(i): None for i in range(3)})
    with ranks.page() as view:
        again = view.marks("http://a.example/")  # 7 in all: every table starts over
        assert again is not first and again == {}
        view.ranking_id = -1  # as if a new version were current
        assert view.marks("http://a.example/") is not again
    with ranks.page() as view:  # empty tables count too: pages whose hrefs are all their own
        tables = [view.marks(f"http://c.example/{i}/") for i in range(7)]
        assert view.marks("http://c.example/0/") is not tables[0]
    ranks.close()


async def test_pages_larger_than_a_pipe_holds_go_through_it_whole_and_in_order(site, store_path, monkeypatch):
    from proxy_addon import pool

    monkeypatch.setattr(pool, "SHARED_BYTES", 0)  # every body and answer in the pipes (64 KB each)
    # the worker started before the pages come (a proxy's first page goes to a thread until one has: in a
    # clean-clone CI both pages were through before the worker was there, and the test read an empty list)
    async with running_addon(store_path, pagerank_workers=1, pagerank_max_links=0) as addon:
        link = b"<a href='docs/'>Docs</a><p>%d</p>"
        pages = [b"<html><body>" + (link % n) * 40_000 + b"</body></html>" for n in (1, 2)]
        assert all(len(page) > 16 * 64 * 1024 for page in pages)
        flows = [make_flow(site + "index.html", page) for page in pages]
        with _jobs_sent(addon.workers) as sent:
            await asyncio.gather(*(run_hooks(addon, flow) for flow in flows))  # both jobs in the one worker's pipe
        assert sum(len(data) for data in sent) > 2 * 16 * 64 * 1024  # both went to the worker, not to a thread
        for n, flow in enumerate(flows, 1):
            text = outside_panel(flow.response.text)
            assert bar_count(text) == 40_000 and f"<p>{n}</p>" in text and f"<p>{3 - n}</p>" not in text
        assert not addon.workers._workers[0].outbox


async def test_a_worker_started_while_the_pool_closes_ends_with_it(store_path):
    """``aclose()`` while ``start()`` is spawning: the processes spawned after it are ended too, never left
    running with their pipes open (a proxy stopped within a second of its start)."""
    from proxy_addon import pool

    made = []

    class Recorded(pool._Worker):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    workers = pool.Workers(2, store_path, "pagerank", 10)
    original = pool._Worker
    pool._Worker = Recorded
    try:
        starting = asyncio.ensure_future(workers.start())
        while not made:  # the first process is there, the second still to come
            await asyncio.sleep(0.001)
        await workers.aclose()
        await asyncio.wait_for(starting, 10)
    finally:
        pool._Worker = original
    assert made and not workers._workers
    for worker in made:
        assert await asyncio.wait_for(worker.process.wait(), 10) is not None
        assert worker.jobs == worker.answers == -1


async def test_no_page_waits_in_a_worker_behind_a_big_one(addon, site, monkeypatch):
    from proxy_addon import pool

    monkeypatch.setattr(pool, "PIPELINE_BYTES", 1_000)
    workers = addon.workers
    assert await workers.wait_started()
    big = b"<html><body><a href='docs/'>Docs</a>" + b"<p>" * 700 + b"</body></html>"
    small = [f"<html><body><p>{n}</p><a href='docs/'>Docs</a>{' ' * 250}</body></html>".encode() for n in range(4)]
    assert len(big) > 1_000 and 3 * len(small[0]) <= 1_000 < 4 * len(small[0])
    flows = [make_flow(site + "index.html", body) for body in (big, *small)]
    hooks = [asyncio.ensure_future(run_hooks(addon, flow)) for flow in flows]
    await asyncio.sleep(0)
    first, second = workers._workers
    assert [job.size for job in first.pending] == [len(big)]  # alone: nothing is sent to it while it works
    assert len(second.pending) == 3 and len(workers._waiting) == 1  # the fourth would take it past 1,000 bytes
    await asyncio.gather(*hooks)
    assert all(flow.metadata["pagerank"].startswith("1 bars") for flow in flows)
    assert first.load == second.load == 0 and workers.all_idle()


async def test_a_page_alone_is_waited_for_awake_and_one_among_others_is_not(addon, site, monkeypatch):
    from proxy_addon import pool

    yields = []
    monkeypatch.setattr(pool.os, "sched_yield", lambda: yields.append(1))
    assert await addon.workers.wait_started()
    alone = make_flow(site + "index.html")
    await addon.request(alone)
    assert addon.in_flight == {alone.id}
    await run_hooks(addon, alone)
    assert alone.metadata["pagerank"].startswith("1 bars") and not addon.in_flight
    assert yields  # the loop kept turning, giving the core away each turn, until the answer came
    polled = len(yields)
    await asyncio.sleep(0.002)
    assert len(yields) == polled  # and stopped with it
    beside, other = make_flow(site + "index.html"), make_flow(site + "docs/")
    await addon.request(other)  # in flight meanwhile: the loop has its work, and the core is not given away
    await addon.request(beside)
    await run_hooks(addon, beside)
    assert beside.metadata["pagerank"].startswith("1 bars") and len(yields) == polled
    addon.error(other)  # a flow that ends in an error is in flight no more
    assert not addon.in_flight


# ------------------------------------------------------------------ pages rewritten in mitmproxy's loop


@contextlib.contextmanager
def _jobs_sent(workers):
    """Record the jobs (and panels asked ahead) written to any worker."""
    sent = []
    original = workers._write
    workers._write = lambda worker, data: (sent.append(data), original(worker, data))[1]
    try:
        yield sent
    finally:
        del workers._write


async def test_a_small_page_alone_is_rewritten_in_the_loop_as_a_worker_rewrites_it(loop_addon, addon, site):
    body = b"<html><head></head><body><a href='docs/'>Docs</a><a href='https://nowhere.example/'>x</a></body></html>"
    with _jobs_sent(loop_addon.workers) as sent:
        first = await _through_with_request(loop_addon, site + "index.html", body)
        again = await _through_with_request(loop_addon, site + "index.html", body)
    assert sent == []  # no job, and no panel asked of a worker ahead: the loop makes it
    assert first.metadata["pagerank"].startswith("2 bars (1 ranked)") and first.metadata["pagerank"].endswith(
        ", in the loop"
    )
    assert again.metadata["pagerank"].endswith(", panel kept, in the loop")  # kept in this process since
    by_worker = await _through_with_request(addon, site + "index.html", body)
    assert not by_worker.metadata["pagerank"].endswith(", in the loop")
    assert first.response.content == again.response.content == by_worker.response.content
    assert first.response.headers["content-length"] == str(len(first.response.content))
    assert not loop_addon.in_flight and not loop_addon.rewriting


async def test_pages_among_others_compressed_or_larger_go_to_the_workers(loop_addon, site, monkeypatch):
    small = b"<html><body><a href='docs/'>Docs</a></body></html>"
    large = small + b"<!--" + b"x" * 70_000 + b"-->"  # over the default 64 KiB
    other = make_flow(site + "docs/")
    other.response = None
    await loop_addon.request(other)  # in flight meanwhile
    beside = make_flow(site + "index.html", small)
    await run_hooks(loop_addon, beside)
    loop_addon.error(other)
    big = make_flow(site + "index.html", large)
    await run_hooks(loop_addon, big)
    packed = make_flow(site + "index.html", b"", headers=[("content-encoding", "gzip")])
    packed.response.content = small  # encoded by mitmproxy
    await run_hooks(loop_addon, packed)
    crowded = make_flow(site + "index.html", b"<html><body>" + b"<a href=docs/>d</a>" * 1_001 + b"</body></html>")
    await run_hooks(loop_addon, crowded)  # small, but of more links than a page rewritten in the loop
    assert crowded.metadata["pagerank"].startswith("1001 bars") and beside.metadata["pagerank"].startswith("1 bars")
    for flow in (beside, big, packed, crowded):
        assert " bars " in flow.metadata["pagerank"] and not flow.metadata["pagerank"].endswith("loop")
    alone = make_flow(site + "index.html", small)
    await run_hooks(loop_addon, alone)
    assert alone.metadata["pagerank"].endswith(", in the loop")


async def test_a_page_while_another_is_in_a_worker_goes_to_the_workers_too(loop_addon, site, monkeypatch):
    """The other page has left the flows in flight (its response has come) but is still being rewritten."""
    large = b"<html><body><a href='docs/'>Docs</a><!--" + b"x" * 70_000 + b"--></body></html>"
    small = b"<html><body><a href='docs/'>Docs</a></body></html>"
    first, second = make_flow(site + "index.html", large), make_flow(site + "docs/", small)
    started = asyncio.ensure_future(run_hooks(loop_addon, first))
    await asyncio.sleep(0)  # its job is out
    assert loop_addon.rewriting == 1
    await run_hooks(loop_addon, second)
    await started
    assert not second.metadata["pagerank"].endswith("loop") and not loop_addon.rewriting


@pytest.mark.parametrize(
    "accept, ahead",
    [(None, False), ("identity", False), ("gzip;q=0, identity", False), ("gzip, deflate, br, zstd", True)],
)
async def test_a_panel_is_asked_ahead_of_a_worker_only_for_an_answer_likely_compressed(loop_addon, site, accept, ahead):
    flow = make_flow(site + "docs/")
    flow.response = None
    if accept is not None:
        flow.request.headers["accept-encoding"] = accept
    with _jobs_sent(loop_addon.workers) as sent:
        await loop_addon.request(flow)
    assert bool(sent) == ahead
    loop_addon.error(flow)


@pytest.mark.parametrize(
    "accept, expected",
    [
        (None, True),
        ("", True),
        ("identity", True),
        ("Identity;q=1", True),
        ("gzip;q=0, br; Q=0.0", True),
        ("gzip", False),
        ("gzip;q=0.5", False),
        ("gzip;q=bad", False),
        ("*", False),
        ("gzip, deflate, br, zstd", False),
    ],
)
def test_uncompressed_judges_the_answer_from_the_request(accept, expected):
    from proxy_addon.options import uncompressed

    request = tutils.treq()
    if accept is not None:
        request.headers["accept-encoding"] = accept
    assert uncompressed(request) is expected


async def test_a_failure_of_the_loops_rewrite_leaves_the_page_untouched_and_is_logged(
    loop_addon, site, monkeypatch, caplog
):
    from proxy_addon import addon as module

    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(module, "rewrite_job", broken)
    body = b"<html><body><a href='docs/'>Docs</a></body></html>"
    flow = make_flow(site + "index.html", body)
    await run_hooks(loop_addon, flow)
    assert flow.response.content == body and flow.metadata["pagerank"] == "untouched: KeyError: 'a bug'"
    assert "rewriting failed" in caplog.text


async def _alone_with_a_turn_between(addon, url, body, beside=None, connection="open"):
    """A page's request, a turn of the loop (its request on the way, on a connection already ``open`` or a
    ``new`` one, made in the turn after), maybe another request, its response."""
    from mitmproxy.connection import ConnectionState
    from mitmproxy.proxy.server_hooks import ServerConnectionHookData

    flow = make_flow(url, body)
    response, flow.response = flow.response, None
    flow.server_conn.state = ConnectionState.CLOSED
    await addon.request(flow)
    if connection == "open":  # mitmproxy gives the flow its open connection once the hook is done
        flow.server_conn.state = ConnectionState.OPEN
    if beside is not None:
        await addon.request(beside)
    await asyncio.sleep(0)
    if connection == "new":
        flow.server_conn.state = ConnectionState.OPEN
        addon.server_connected(ServerConnectionHookData(flow.server_conn, flow.client_conn))
        await asyncio.sleep(0)
    flow.response = response
    await run_hooks(addon, flow)
    if beside is not None:
        addon.error(beside)
    return flow


@pytest.mark.parametrize("connection", ["open", "new"])
async def test_a_page_alone_has_its_panel_made_in_the_loop_while_its_request_travels(
    store_path, site, tmp_path, monkeypatch, connection
):
    from proxy_addon import options

    path = str(tmp_path / "fresh.db")  # no panel kept from other tests
    shutil.copy(store_path, path)
    async with running_addon(path) as loop_addon:
        await _panels_ahead(loop_addon, site, monkeypatch, options, connection)


async def _panels_ahead(loop_addon, site, monkeypatch, options, connection):
    body = b"<html><head></head><body><a href='docs/'>Docs</a></body></html>"
    with _jobs_sent(loop_addon.workers) as sent:
        ahead = await _alone_with_a_turn_between(loop_addon, site + "genindex.html", body, connection=connection)
    assert ahead.metadata["pagerank"].endswith(", panel kept, in the loop")
    assert sent == []  # no worker asked
    if connection == "new":  # not before its connection is made: the panel would hold it up
        unconnected = await _alone_with_a_turn_between(loop_addon, site + "glossary.html", body, connection=None)
        assert unconnected.metadata["pagerank"].endswith(", in the loop")
        assert "panel kept" not in unconnected.metadata["pagerank"]
    crowded = make_flow(site + "other.html")
    crowded.response = None
    beside = await _alone_with_a_turn_between(loop_addon, site + "search.html", body, crowded)
    # another flow came before the turn: nothing made ahead (its page then goes to a worker, panel and all)
    assert " bars " in beside.metadata["pagerank"] and "panel kept" not in beside.metadata["pagerank"]
    monkeypatch.setattr(options, "INLINE_BACKLINKS", -1)  # every page has too many backlinks for the loop
    over = await _alone_with_a_turn_between(loop_addon, site + "index.html", body)
    assert " bars " in over.metadata["pagerank"] and "panel kept" not in over.metadata["pagerank"]
    assert not over.metadata["pagerank"].endswith("loop")
    plain = make_flow(site + "index.html", body)
    await run_hooks(loop_addon, plain)
    assert outside_panel(over.response.text) == outside_panel(plain.response.text)


async def test_a_new_ranking_is_read_in_a_thread_and_its_pages_go_to_the_workers_meanwhile(
    store_path, site, tmp_path, monkeypatch
):
    from proxy_addon import addon as module

    path = str(tmp_path / "reranked.db")
    shutil.copy(store_path, path)
    release, threads = threading.Event(), []

    def held(*args):  # the version's read, held until the test lets it go
        threads.append(threading.current_thread())
        if len(threads) > 1:
            assert release.wait(30)
        return real(*args)

    real = module.preload
    monkeypatch.setattr(module, "preload", held)
    body = b"<html><head></head><body><a href='docs/'>Docs</a></body></html>"
    async with running_addon(path) as addon:
        assert module.ready(path, "pagerank", addon.settings.panel)  # read at start
        first = await _through_with_request(addon, site + "index.html", body)
        assert first.metadata["pagerank"].endswith(", in the loop")
        assert CliRunner().invoke(cli, ["rank", "--store", path, "--damping", "0.5", "-q"]).exit_code == 0
        meanwhile = await _through_with_request(addon, site + "index.html", body)
        assert " bars " in meanwhile.metadata["pagerank"] and not meanwhile.metadata["pagerank"].endswith("loop")
        assert addon.reading is not None and not addon.reading.done()
        again = await _through_with_request(addon, site + "index.html", body)  # one read at a time
        assert not again.metadata["pagerank"].endswith("loop") and len(threads) == 2
        release.set()
        await addon.reading
        after = await _through_with_request(addon, site + "index.html", body)
        assert after.metadata["pagerank"].endswith(", in the loop")
    assert threading.main_thread() not in threads  # never read in the loop
    with Store(path, readonly=True) as store:
        score = store.queries.lookup([site + "docs/"])[site + "docs/"]["pagerank"]
    assert repr(score) in bar_values(meanwhile.response.text) and repr(score) in bar_values(after.response.text)
    assert repr(score) not in bar_values(first.response.text)  # the new version's score, not the first's


def test_a_bounded_rewrite_refuses_a_page_that_would_cost_more(store_path, site, tmp_path, monkeypatch):
    """What the loop may spend on a page: its links, those not looked up yet, its panel's backlinks."""
    from proxy_addon import worker
    from proxy_addon.rewrite import TooManyLinks

    whole = str(tmp_path / "whole.db")
    shutil.copy(store_path, whole)
    with Store(whole, readonly=True) as store:
        urls = [url for (url,) in store.db.execute("SELECT url FROM pages ORDER BY id LIMIT 12")]
        inlinks = store.queries.lookup([site + "index.html"])[site + "index.html"]["inlinks"]
    assert inlinks > 0
    body = ("<html><body>" + "".join(f"<a href='{url}'>x</a>" for url in urls) + "</body></html>").encode()
    # a version of no more pages than the preload: read whole before its first page (then a URL not in it
    # needs no query), which the loop does not wait for
    with pytest.raises(TooManyLinks, match="not read yet"):
        worker.rewrite_page(whole, "pagerank", 10, body, "text/html", site + "index.html", most_lookups=100)
    monkeypatch.setattr(worker, "PRELOAD_PAGES", 2)  # most of this store's pages then need a look-up
    larger = str(tmp_path / "larger.db")
    shutil.copy(store_path, larger)
    # a larger one: its best pages are read beside its pages, never before one
    assert (
        worker.rewrite_page(larger, "pagerank", 10, body, "text/html", site + "index.html", most_lookups=100)[1] == 12
    )
    path = str(tmp_path / "bounded.db")
    shutil.copy(store_path, path)
    args = (path, "pagerank", 10, body, "text/html", site + "index.html")
    assert not worker.ready(path, "pagerank", 10)
    worker.preload(path, "pagerank", 10)
    assert worker.ready(path, "pagerank", 10)
    with pytest.raises(TooManyLinks, match="12 links"):
        worker.rewrite_page(*args, most_links=11)
    with pytest.raises(TooManyLinks, match="10 links not looked up yet"):  # 12, less the 2 best pages
        worker.rewrite_page(*args, most_lookups=9)
    with pytest.raises(TooManyLinks, match=f"{inlinks} backlinks"):
        worker.rewrite_page(*args, most_backlinks=inlinks - 1)
    bounded = worker.rewrite_page(*args, most_links=12, most_lookups=10, most_backlinks=inlinks)
    assert bounded[:3] == worker.rewrite_page(*args)[:3]  # (the second one's panel kept from the first)
    assert worker.rewrite_page(*args, most_lookups=0)[0] == bounded[0]  # looked up now: no look-up left


def test_one_ranks_reads_a_version_once_for_all_its_threads(store_path):
    from proxy_addon.ranks import Ranks

    ranks = Ranks(store_path, preload=10)
    assert not ranks.ready()
    done = []
    reader = threading.Thread(target=lambda: (ranks.preload(), done.append(ranks.store())))
    reader.start()
    reader.join()
    assert ranks.ready()  # in this thread, with a connection of its own
    assert ranks.store() is not done[0] and ranks.store().rankings._arrays is done[0].rankings._arrays
    ranks.close()


@pytest.mark.parametrize("value", [-1, 2 * 1024 * 1024])
def test_the_inline_bound_is_checked(store_path, value):
    with pytest.raises(exceptions.OptionsError, match="pagerank_inline_bytes must be between 0"):
        parse_settings(store_path, "pagerank", 1 << 20, 10, inline_bytes=value)


async def test_one_timer_cuts_off_each_flow_at_its_own_deadline_and_none_after_its_answer():
    from proxy_addon.deadlines import OriginDeadline

    deadline = OriginDeadline()
    with taddons.context(deadline) as context:
        context.configure(deadline, pagerank_idle_timeout=1)
        expired = []
        deadline._expire = lambda flow, what, seconds: expired.append((flow, what, seconds))
        first, second, answered = tflow.tflow(), tflow.tflow(), tflow.tflow()
        deadline.request(first)
        deadline.request(answered)
        await asyncio.sleep(0.5)
        deadline.request(second)
        deadline.response(answered)  # answered in time: never cut off
        assert len(deadline._deadlines) == 2
        await asyncio.sleep(0.7)
        assert expired == [(first, "sent no response", 1)]  # the second one's deadline has yet to come
        assert deadline._timer is not None
        await asyncio.sleep(0.5)
        assert expired[1:] == [(second, "sent no response", 1)]
        assert not deadline._deadlines and deadline._timer is None
        deadline.request(first)
        deadline.done()  # stopping: nothing is timed any more
        assert not deadline._deadlines and deadline._timer is None


async def test_the_cli_puts_the_addon_in_mitmdumps_chain_where_a_scripts_addons_would_be():
    from mitmproxy import options
    from mitmproxy.tools.dump import DumpMaster

    from proxy_addon.cli import add_addon

    master = DumpMaster(options.Options(), with_termlog=False)
    add_addon(master)
    names = [type(addon).__name__ for addon in master.addons.chain]
    assert names.count("PageRankProxy") == 1  # one addon, at the top of the chain: no level to walk down
    assert names.index("PageRankProxy") == names.index("ScriptLoader") - 1  # before any script given after --
    assert "rankstore" in master.options and "pagerank_idle_timeout" in master.options  # loaded: options exist


async def test_a_rewritten_page_keeps_no_validator_of_the_origins(either, site):
    """The bars are the store's: an ETag or Last-Modified of the origin's would let a browser revalidate its copy
    after a new ranking, get a 304 and show the old bars without a word."""
    flow = make_flow(
        site + "index.html",
        headers=[
            ("etag", '"abc"'),
            ("last-modified", "Mon, 01 Jan 2024 00:00:00 GMT"),
            ("cache-control", "max-age=60"),
        ],
    )
    await run_hooks(either, flow)
    assert bar_count(outside_panel(flow.response.text)) == 1
    assert "etag" not in flow.response.headers and "last-modified" not in flow.response.headers
    # nor is the copy stored: a page's fetch() of itself from the cache would read its bars
    assert flow.response.headers["cache-control"] == "private, no-store"


async def test_a_page_request_is_never_conditional(either, site):
    """A copy the browser kept before (with the origin's validators) is fetched whole, never revived by a 304."""
    flow = make_flow(site + "index.html")
    flow.request.headers["sec-fetch-dest"] = "document"
    flow.request.headers["if-none-match"] = '"abc"'
    flow.request.headers["if-modified-since"] = "Mon, 01 Jan 2024 00:00:00 GMT"
    image = make_flow(site + "logo.png")
    image.request.headers["sec-fetch-dest"] = "image"
    image.request.headers["if-none-match"] = '"abc"'
    await either.request(flow)
    await either.request(image)
    assert "if-none-match" not in flow.request.headers and "if-modified-since" not in flow.request.headers
    assert image.request.headers["if-none-match"] == '"abc"'


async def test_each_flow_carries_its_state_as_an_enum_apart_from_its_note(either, site):
    """The addon decides by the flow's state (proxy_addon.jobs.FlowState), never by its note's text."""
    from proxy_addon.jobs import FlowState, state_of

    rewritten = make_flow(site + "index.html")
    await run_hooks(either, rewritten)
    assert state_of(rewritten) is FlowState.REWRITTEN and rewritten.metadata["pagerank"].startswith("1 bars")
    passed = make_flow(site + "style.css", b"a { }", content_type="text/css")
    await run_hooks(either, passed)
    assert state_of(passed) is FlowState.PASSED and passed.response.stream
    untouched = make_flow(site + "index.html", b"x" * 100 + b"<a href=y>" * 200_000)
    await run_hooks(either, untouched)
    assert state_of(untouched) is FlowState.UNTOUCHED and untouched.metadata["pagerank"].startswith("untouched")
    # a note that reads like a state is no state: the page is held back and rewritten as a candidate
    noted = make_flow(site + "index.html")
    either.responseheaders(noted)
    noted.metadata["pagerank"] = "passed"
    await either.response(noted)
    assert state_of(noted) is FlowState.REWRITTEN and bar_count(outside_panel(noted.response.text)) == 1


def test_a_version_larger_than_the_preload_is_preloaded_beside_its_first_page_not_before(store_path, site, monkeypatch):
    """The first page of a large store asks the store for its own links; the best pages' look-ups are read in
    a thread of their own (on a store of millions of pages, they were the first page's longest wait)."""
    from proxy_addon.ranks import PageView, Ranks

    threads: list[str] = []
    real = PageView._preload

    def preload(self, cache, most):
        threads.append(threading.current_thread().name)
        return real(self, cache, most)

    monkeypatch.setattr(PageView, "_preload", preload)
    ranks = Ranks(store_path, preload=2)  # fewer than the store's pages
    try:
        url = site + "index.html"
        assert ranks.lookup([url])[url].pagerank is not None  # answered at once, from the store
        deadline = time.monotonic() + 30
        while not ranks.ready() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ranks.ready() and threads == ["pagerank-preload"]
    finally:
        ranks.close()


def test_a_preload_reads_the_public_suffix_list_where_a_site_ranking_answers(tmp_path, monkeypatch):
    """The first estimate by site reads the Public Suffix List (tens of milliseconds): a preload reads it, so
    that the proxy's first page does not; without a site ranking it is not read."""
    from proxy_addon.ranks import Ranks
    from rankstore import urls

    from conftest import edge_store

    edges = [("http://a.example.com/", "http://b.example.org/"), ("http://b.example.org/", "http://a.example.com/")]
    for ranked, read in [((), False), ((("--level", "site"),), True)]:
        folder = tmp_path / str(read)
        folder.mkdir()
        store = edge_store(folder, edges, *ranked)
        monkeypatch.setattr(urls, "_sites", functools.lru_cache(maxsize=1)(urls._Sites))  # not read yet
        urls.site_of.cache_clear()
        ranks = Ranks(store)
        try:
            ranks.preload()
        finally:
            ranks.close()
        assert (urls._sites.cache_info().currsize == 1) is read
