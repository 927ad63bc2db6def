"""Where a page is rewritten, and where its panel is made ahead: one pure policy over the proxy's traffic
and the page, with no mitmproxy in it (the addon gathers the facts, :func:`plan` decides).

A small uncompressed page alone in the proxy is rewritten in mitmproxy's event loop, which has no other flow
to serve, at a fraction of a worker's round trip; a page among others, a compressed or a large one goes to a
worker process (or, without workers, a thread), so that the loop keeps serving the other flows.  Its panel
needs only the page's URL, so it can be made while the request travels: in the loop for a page expected
there, else by a worker, but only while every worker is idle (a busy proxy has no time for a guess: the
response may be no page at all).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Route(enum.Enum):
    """Where a page's rewrite runs."""

    LOOP = "in the loop"  # mitmproxy's event loop, bounded (a page that would cost more goes off it)
    WORKER = "in a worker"  # a worker process (:mod:`.pool`)
    THREAD = "in a thread"  # a thread of mitmproxy's, when there are no workers


class Ahead(enum.Enum):
    """Where a page's panel is made while its request travels, if anywhere."""

    NONE = "none"
    LOOP = "in the loop"  # once the request has left (:meth:`~.addon.PageRankProxy._panel_ahead`)
    WORKER = "in a worker"  # the worker that the page's job will go to (:meth:`~.pool.Workers.prepare`)


@dataclass(frozen=True, slots=True)
class Means:
    """What the proxy was configured with."""

    workers: int  # worker processes (0: pages off the loop go to a thread)
    inline_bytes: int  # the largest page the loop rewrites (0: never)
    panel: bool  # pages get a panel


@dataclass(frozen=True, slots=True)
class Traffic:
    """What the proxy is doing as the page comes."""

    others: int  # other flows between their request and their response
    rewriting: int  # pages being rewritten off the loop
    reading: bool  # a new ranking version is being read for the loop
    workers_idle: bool = False  # every worker started and free (asked only before the response)
    workers_started: bool = True  # a worker has started: else a page off the loop goes to a thread meanwhile


@dataclass(frozen=True, slots=True)
class Page:
    """What is known of the page: before its response, only whether it will come compressed."""

    size: int | None  # its raw body's bytes; None while its request travels
    compressed: bool  # a Content-Encoding other than identity (before the response: the client accepts one)


@dataclass(frozen=True, slots=True)
class Plan:
    route: Route
    ahead: Ahead = Ahead.NONE


def off_loop(means: Means) -> Route:
    """Where a page goes that the loop does not rewrite (or gave up: it would have cost the loop more)."""
    return Route.WORKER if means.workers else Route.THREAD


def plan(page: Page, traffic: Traffic, means: Means) -> Plan:
    """Where ``page`` is (or, while its request travels, will likely be) rewritten, and where its panel is
    made ahead (only while its request travels).  Until a worker has started (its interpreter and imports
    take a second or more), a page off the loop goes to a thread: the proxy's first page waits for none."""
    elsewhere = off_loop(means)
    if elsewhere is Route.WORKER and not traffic.workers_started:
        elsewhere = Route.THREAD
    if page.size is None:
        # its request travels: the panel is made where the page is expected
        alone_and_light = traffic.others == 0 and means.inline_bytes > 0 and not page.compressed
        if alone_and_light:
            # a new version being read for the loop: the panel waits for the page's own job
            ahead = Ahead.NONE if traffic.reading or not means.panel or not means.workers else Ahead.LOOP
            return Plan(Route.LOOP, ahead)
        worker_ahead = means.panel and means.workers and traffic.workers_idle
        return Plan(elsewhere, Ahead.WORKER if worker_ahead else Ahead.NONE)
    in_loop = (
        page.size <= means.inline_bytes
        and traffic.others == 0
        and traffic.rewriting == 0
        and not page.compressed
        and not traffic.reading
    )
    return Plan(Route.LOOP if in_loop else elsewhere)


def compressed(content_encoding: str | None) -> bool:
    """Does a Content-Encoding header say the body is coded (anything but absent, empty or identity)?"""
    return content_encoding is not None and content_encoding.strip().lower() not in ("", "identity")
