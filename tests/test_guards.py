"""The addon's guards: an own page whose code fails answers 500 without a traceback to the client (the log has
it), and a page whose flow is no longer live, or has ended in an error, is never written into."""

# ruff: noqa: F811 - the fixtures imported from test_addon are named as parameters
from __future__ import annotations

import html
import sqlite3

import pytest
from barkit import bar_count, outside_panel
from mitmproxy import flow as mflow
from mitmproxy.test import tflow
from test_addon import make_flow, run_hooks, running_addon, site, store_path  # noqa: F401 - fixtures

from proxy_addon import addon as addon_module
from proxy_addon import pages

BODY = b"<html><body><a href='docs/'>Docs</a></body></html>"
SECRET = "a secret of the failing code"


def _own(url: str) -> mflow.Flow:
    flow = tflow.tflow()
    flow.request.url = url
    return flow


def _assert_quiet_500(flow, says: str) -> None:
    assert flow.response is not None and flow.response.status_code == 500
    text = html.unescape(flow.response.text)
    assert says in text
    assert "Traceback" not in text and SECRET not in text and 'File "' not in text
    assert flow.response.headers["content-type"].startswith("text/html")
    assert flow.response.headers["content-security-policy"].startswith("default-src 'none'")


@pytest.mark.parametrize(
    "failure, says",
    [
        (RuntimeError(SECRET), "Something went wrong; the proxy's log says what."),
        (KeyError(SECRET), "Something went wrong; the proxy's log says what."),
        (sqlite3.OperationalError(SECRET), "The store could not answer; the proxy's log says why."),
    ],
)
async def test_an_own_page_that_fails_is_a_500_without_its_traceback_and_is_logged(
    store_path,
    monkeypatch,
    caplog,
    failure,
    says,
):
    def broken(ranks, query):
        raise failure

    monkeypatch.setitem(pages.ROUTES, "/top", broken)
    async with running_addon(store_path) as addon:
        flow = _own("http://pagerank.proxy/top?n=5")
        await addon.request(flow)
    _assert_quiet_500(flow, says)
    assert "own page /top failed" in caplog.text and "Traceback" in caplog.text and SECRET in caplog.text


async def test_a_failure_outside_the_pages_code_is_a_500_too(store_path, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise ValueError(SECRET)

    monkeypatch.setattr(addon_module, "respond", broken)
    async with running_addon(store_path) as addon:
        flow = _own("http://pagerank.proxy/search?q=x")
        await addon.request(flow)
    _assert_quiet_500(flow, "This page of the PageRank proxy failed; the proxy's log says why.")
    assert "pagerank: /search?q=x failed" in caplog.text and SECRET in caplog.text


@pytest.mark.parametrize("where", ["loop", "workers"])
@pytest.mark.parametrize(
    "how", ["not live from the start", "errored from the start", "gone while rewritten", "killed while rewritten"]
)
async def test_a_page_whose_flow_is_gone_or_failed_is_never_written(store_path, site, monkeypatch, where, how):
    async with running_addon(store_path, pagerank_inline_bytes=0 if where == "workers" else 65536) as addon:
        fine = make_flow(site + "index.html", BODY)
        await run_hooks(addon, fine)
        assert bar_count(outside_panel(fine.response.content)) == 1  # the same page on a live flow gets its bar

        flow = make_flow(site + "index.html", BODY)

        def end(flow) -> None:
            if how.startswith("not live") or how.startswith("gone"):
                flow.live = False
            else:
                flow.error = mflow.Error("killed by the test")

        if how.endswith("from the start"):
            end(flow)
        elif where == "workers":
            rewrite = addon._rewrite_off_loop

            async def then_end(body, job, route):
                done = await rewrite(body, job, route)
                end(flow)
                return done

            addon._rewrite_off_loop = then_end
        else:
            real = addon_module.rewrite_job

            def then_end(*args, **kwargs):
                done = real(*args, **kwargs)
                end(flow)
                return done

            monkeypatch.setattr(addon_module, "rewrite_job", then_end)
        await run_hooks(addon, flow)
        if not how.endswith("from the start"):
            assert flow.metadata["pagerank"] == "candidate"  # it was rewritten, and let go
    assert flow.response.content == BODY and flow.response.headers["content-length"] == str(len(BODY))


async def test_a_page_that_waited_its_turn_is_not_rewritten_once_its_flow_is_gone(store_path, site):
    """The pacer's wait (a large page behind others): the client left meanwhile, and the page is let go
    before any rewriting."""
    async with running_addon(store_path, pagerank_inline_bytes=0, pagerank_large_page_rate=10) as addon:
        assert addon.pacer is not None
        flows = [make_flow(site + "index.html", BODY) for _ in range(2)]

        class Gone:
            def delay(self, size, now):
                flows[1].live = False  # the client leaves as the page starts its wait
                return 0.01

        await run_hooks(addon, flows[0])
        addon.pacer = Gone()
        rewrite, rewritten = addon._rewrite_off_loop, []

        async def counted(body, job, route):
            rewritten.append(job)
            return await rewrite(body, job, route)

        addon._rewrite_off_loop = counted
        await run_hooks(addon, flows[1])
        assert rewritten == []  # let go at once: no worker's time spent on a page nobody waits for
    assert bar_count(outside_panel(flows[0].response.content)) == 1
    assert flows[1].response.content == BODY and "turn" not in flows[1].metadata.get("pagerank", "")
