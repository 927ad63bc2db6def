"""The page path's policy (proxy_addon.dispatch): where a page is rewritten and where its panel is made
ahead, decided from the traffic and the page alone, without mitmproxy."""

from __future__ import annotations

import sys

import pytest

from proxy_addon.dispatch import Ahead, Means, Page, Plan, Route, Traffic, compressed, plan

SMALL, LARGE = 20_000, 200_000
MEANS = Means(workers=4, inline_bytes=65_536, panel=True)
QUIET = Traffic(others=0, rewriting=0, reading=False, workers_idle=True)


def traffic(**changes) -> Traffic:
    return Traffic(**{**{name: getattr(QUIET, name) for name in Traffic.__slots__}, **changes})


def means(**changes) -> Means:
    return Means(**{**{name: getattr(MEANS, name) for name in Means.__slots__}, **changes})


@pytest.mark.parametrize(
    "page, state, given, expected",
    [
        # the response: where its body is rewritten (no panel ahead any more)
        (Page(SMALL, False), QUIET, MEANS, Plan(Route.LOOP)),
        (Page(MEANS.inline_bytes, False), QUIET, MEANS, Plan(Route.LOOP)),  # the bound is inclusive
        (Page(MEANS.inline_bytes + 1, False), QUIET, MEANS, Plan(Route.WORKER)),
        (Page(LARGE, False), QUIET, MEANS, Plan(Route.WORKER)),
        (Page(SMALL, True), QUIET, MEANS, Plan(Route.WORKER)),  # re-encoding is a worker's
        (Page(SMALL, False), traffic(others=1), MEANS, Plan(Route.WORKER)),  # among others
        (Page(SMALL, False), traffic(rewriting=1), MEANS, Plan(Route.WORKER)),  # another page off the loop
        (Page(SMALL, False), traffic(reading=True), MEANS, Plan(Route.WORKER)),  # a version read for the loop
        (Page(SMALL, False), QUIET, means(inline_bytes=0), Plan(Route.WORKER)),  # the loop rewrites nothing
        (Page(LARGE, False), QUIET, means(workers=0), Plan(Route.THREAD)),
        (Page(SMALL, False), traffic(others=3), means(workers=0), Plan(Route.THREAD)),
        (Page(SMALL, False), QUIET, means(workers=0), Plan(Route.LOOP)),
        (Page(SMALL, False), traffic(workers_idle=False), MEANS, Plan(Route.LOOP)),  # idle workers: no matter
        # the request, while it travels: where the page is expected, and where its panel is made meanwhile
        (Page(None, False), QUIET, MEANS, Plan(Route.LOOP, Ahead.LOOP)),
        (Page(None, False), traffic(rewriting=2), MEANS, Plan(Route.LOOP, Ahead.LOOP)),
        (Page(None, False), traffic(reading=True), MEANS, Plan(Route.LOOP, Ahead.NONE)),  # the job makes it
        (Page(None, True), QUIET, MEANS, Plan(Route.WORKER, Ahead.WORKER)),  # compressed: a worker's page
        (Page(None, False), traffic(others=1), MEANS, Plan(Route.WORKER, Ahead.WORKER)),
        (Page(None, False), traffic(others=1, workers_idle=False), MEANS, Plan(Route.WORKER, Ahead.NONE)),
        (Page(None, False), QUIET, means(inline_bytes=0), Plan(Route.WORKER, Ahead.WORKER)),
        (Page(None, False), traffic(workers_idle=False), means(inline_bytes=0), Plan(Route.WORKER, Ahead.NONE)),
        (Page(None, False), QUIET, means(panel=False), Plan(Route.LOOP, Ahead.NONE)),  # no panel to make
        (Page(None, True), QUIET, means(panel=False), Plan(Route.WORKER, Ahead.NONE)),
        (Page(None, False), QUIET, means(workers=0), Plan(Route.LOOP, Ahead.NONE)),  # no workers: none ahead
        (Page(None, True), QUIET, means(workers=0), Plan(Route.THREAD, Ahead.NONE)),
    ],
)
def test_the_policy_decides_from_the_traffic_and_the_page(page, state, given, expected):
    assert plan(page, state, given) == expected


@pytest.mark.parametrize(
    "header, coded",
    [(None, False), ("", False), ("identity", False), (" Identity ", False), ("gzip", True), ("br", True)],
)
def test_compressed_reads_the_content_encoding(header, coded):
    assert compressed(header) is coded


def test_the_policy_needs_no_mitmproxy():
    import subprocess

    code = "import sys, proxy_addon.dispatch; sys.exit('mitmproxy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_until_a_worker_has_started_a_page_off_the_loop_goes_to_a_thread():
    """The proxy's first page waits for no worker's start (an interpreter and its imports)."""
    means = Means(workers=2, inline_bytes=0, panel=True)
    cold = Traffic(others=0, rewriting=0, reading=False, workers_started=False)
    warm = Traffic(others=0, rewriting=0, reading=False, workers_started=True)
    assert plan(Page(1_000, False), cold, means).route is Route.THREAD
    assert plan(Page(1_000, False), warm, means).route is Route.WORKER
    # without workers, as before: a thread either way
    assert plan(Page(1_000, False), cold, Means(workers=0, inline_bytes=0, panel=True)).route is Route.THREAD
