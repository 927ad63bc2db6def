"""The PageRank proxy: a mitmproxy addon.

    mitmdump -s proxy_addon/addon.py --set rankstore=rankstore.db
    pagerank-proxy --store rankstore.db            (the same, with defaults)

Options: ``rankstore`` (the store), ``pagerank_ranking`` (which ranking),
``pagerank_max_body`` (larger bodies stream through untouched),
``pagerank_panel`` (backlinks shown in the panel; 0 for no panel),
``pagerank_workers`` (processes that rewrite pages beside mitmproxy; 0: a thread),
``pagerank_max_links`` (pages with more link tags pass untouched; 0: no limit),
``pagerank_large_page_rate`` (megabytes a second for pages of 1 MiB or more: :mod:`.pacing`),
``pagerank_inline_bytes`` (a page alone in the proxy, uncompressed and no larger, is rewritten in
mitmproxy's event loop rather than sent to a worker; 0: never),
``pagerank_insecure_pages`` (a browser's pages of plain-http sites annotated too, where it sends no Fetch
Metadata and the page's own script could read the bars), ``pagerank_host_ranking`` and ``pagerank_site_ranking``
(the rankings whose host and site ranks answer for a
link whose page has no score; "": ``hostrank``/``siterank``, else the store's newest of the level);
``pagerank_idle_timeout`` belongs to :mod:`proxy_addon.deadlines`, and the ``pagerank_record*`` options (recording
the pages annotated, opt-in) to :mod:`proxy_addon.record`, both driven from this addon's hooks.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import os
import sqlite3
import sys
import time
from urllib.parse import parse_qs

if __package__ in (None, ""):
    # loaded by path (mitmdump -s proxy_addon/addon.py): make the package importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mitmproxy import ctx, exceptions, http
from mitmproxy.proxy import server_hooks

from proxy_addon import options, pages
from proxy_addon.csp import allow_style_hash, apply
from proxy_addon.deadlines import OriginDeadline
from proxy_addon.dispatch import Ahead, Means, Page, Route, Traffic, compressed, off_loop, plan
from proxy_addon.exposure import MITMDUMP_ADVICE, exposed_hosts, open_proxy_problem
from proxy_addon.jobs import (
    FlowState,
    PageJob,
    Recorded,
    RecordJob,
    Rewritten,
    Untouched,
    WorkerError,
    mark,
    state_of,
)
from proxy_addon.markup import PROXY_HOST, STYLE_HASHES
from proxy_addon.options import Settings, is_candidate, might_be_page, parse_settings, uncompressed
from proxy_addon.options import unknown_option_problem as unknown_option
from proxy_addon.pacing import Pacer
from proxy_addon.pages import OWN_ONLY_HEADERS, Asker, asker, is_reserved, other_site, respond
from proxy_addon.pool import Workers
from proxy_addon.ranks import LevelChoice, Ranks
from proxy_addon.record import Making, Recorder
from proxy_addon.rewrite import TooManyLinks
from proxy_addon.worker import preload, prepare_panel, ready, rewrite_job
from rankstore.store import StoreError

log = logging.getLogger(__name__)
CSP_HEADERS = ("content-security-policy", "content-security-policy-report-only")
WORKERS_AFTER = 1.0  # seconds after its start that the proxy starts its workers if no page has come by then


class PageRankProxy:
    def __init__(self) -> None:
        self.settings: Settings | None = None
        self.ranks: Ranks | None = None
        self.workers: Workers | None = None
        self.pacer: Pacer | None = None
        self.stopping = False  # done() has run: the pages still arriving pass untouched
        self.in_flight: set[str] = set()  # the flows between their request and their response or error
        self.rewriting = 0  # the pages whose rewrite is under way in a worker or a thread
        self.reading: asyncio.Future | None = None  # a new ranking version read for this loop, in a thread
        self.starting: asyncio.Future | None = None  # the workers started and the loop's reading, beside mitmproxy's
        self.panel_waits: http.HTTPFlow | None = None  # a page alone whose panel waits for its connection
        self.answered = asyncio.Event()  # a first page has been through the rewrite (the workers start then)
        # The origin's deadlines: called from these hooks, not registered as an addon of its own, since
        # mitmproxy visits every addon at each of its events (about twenty a page), hooks or not.
        self.deadline = OriginDeadline()
        self.recorder = Recorder()  # the pages annotated, written to a record (pagerank_record), if asked
        # a browser's pages that came without Fetch Metadata (plain-http sites) annotated too: pagerank_insecure_pages
        self.insecure_pages = False

    def load(self, loader) -> None:
        self.deadline.load(loader)
        loader.add_option("rankstore", str, "", "The rankstore SQLite file (rankstore build / rank).")
        loader.add_option("pagerank_ranking", str, "pagerank", "The named ranking to show.")
        loader.add_option(
            "pagerank_no_auth",
            bool,
            False,
            "Serve beyond loopback without a password (a listen_host or mode beyond 127.0.0.1, no proxyauth): "
            "else the proxy stops as it starts, since anyone who reaches it would read the store.",
        )
        loader.add_option(
            "pagerank_insecure_pages",
            bool,
            False,
            "Annotate a browser's pages of plain-http sites beyond loopback too: a browser sends them no Fetch "
            "Metadata, so the page's own script could fetch its annotated copy and read what the bars say.",
        )
        loader.add_option(
            "pagerank_max_body",
            int,
            options.MAX_BODY,
            "HTML bodies larger than this many bytes pass through untouched, streamed.",
        )
        loader.add_option("pagerank_panel", int, options.PANEL, "Backlinks shown in the page's panel (0: no panel).")
        loader.add_option(
            "pagerank_workers",
            int,
            min(os.cpu_count() or 1, 4),
            "Processes that rewrite pages beside mitmproxy's own (0: a thread of mitmproxy's).",
        )
        loader.add_option(
            "pagerank_max_links",
            int,
            options.MAX_LINKS,
            "Pages with more link tags than this pass through untouched (0: no limit).",
        )
        loader.add_option(
            "pagerank_large_page_rate",
            int,
            options.LARGE_PAGE_RATE,
            "Megabytes a second at which HTML pages of 1 MiB or more pass, together, past a burst of "
            "pagerank_max_body: a run of large pages waits its turn, so other clients keep their pace (0: no limit).",
        )
        loader.add_option(
            "pagerank_inline_bytes",
            int,
            options.INLINE_BYTES,
            "An uncompressed HTML page of at most this many bytes that comes while no other flow is in flight "
            "is rewritten in mitmproxy's event loop, where it costs less than a trip to a worker and no one "
            "waits (0: every page goes to the workers).",
        )
        loader.add_option(
            "pagerank_host_ranking",
            str,
            "",
            "The host ranking whose ranks answer for a link whose page has no score (empty: hostrank, else the "
            "store's newest host ranking).",
        )
        loader.add_option(
            "pagerank_site_ranking",
            str,
            "",
            "The site ranking that answers for a link whose page and host have no score (empty: siterank, else "
            "the store's newest site ranking, such as a loaded cc-pagerank).",
        )
        self.recorder.load(loader)

    def configure(self, updated) -> None:
        self.deadline.configure(updated)
        self.recorder.configure(updated)
        if "pagerank_insecure_pages" in updated:
            self.insecure_pages = ctx.options.pagerank_insecure_pages
        if not updated & {
            "rankstore",
            "pagerank_ranking",
            "pagerank_max_body",
            "pagerank_panel",
            "pagerank_workers",
            "pagerank_max_links",
            "pagerank_large_page_rate",
            "pagerank_inline_bytes",
            "pagerank_host_ranking",
            "pagerank_site_ranking",
        }:
            return
        settings = parse_settings(
            ctx.options.rankstore,
            ctx.options.pagerank_ranking,
            ctx.options.pagerank_max_body,
            ctx.options.pagerank_panel,
            ctx.options.pagerank_max_links,
            ctx.options.pagerank_large_page_rate,
            ctx.options.pagerank_inline_bytes,
            ctx.options.pagerank_host_ranking,
            ctx.options.pagerank_site_ranking,
        )
        if settings is None:
            if self.ranks is not None:
                self.ranks.close()
            self._stop_workers()
            self.settings = self.ranks = self.pacer = None
            log.warning("pagerank: no store set (--set rankstore=PATH): pages pass through unchanged")
            return
        try:
            ranks = Ranks(settings.store, settings.ranking, settings.panel, levels=_levels(settings))
        except StoreError as error:
            raise exceptions.OptionsError(f"rankstore: {error}") from None  # the message says it all
        if self.ranks is not None:
            self.ranks.close()
        self._stop_workers()
        self.settings, self.ranks = settings, ranks
        self.pacer = Pacer(settings.large_page_rate * 1e6, settings.max_body) if settings.large_page_rate else None
        count = max(0, ctx.options.pagerank_workers)
        if count:
            # started in running()
            self.workers = Workers(count, settings.store, settings.ranking, settings.panel, _levels(settings))

    async def running(self) -> None:
        if self._unknown_option() or self._open_proxy():
            return
        # the rest goes on beside mitmproxy's own start, not in this hook: the addons after this one (the TLS
        # certificates' among them) start when it returns, and a client may connect as soon as the port is
        # bound (a browser's connection before the certificates were there ended the proxy, at its start)
        self.starting = asyncio.ensure_future(self._start())

    async def _start(self) -> None:
        try:
            await self._start_all()
        except asyncio.CancelledError:
            raise
        except Exception:  # a bug of ours: the pages go on (to a thread, or a worker started at its first job)
            log.exception("pagerank: starting the workers and the ranking's read failed")

    async def _start_all(self) -> None:
        if self.settings is not None and self.settings.inline_bytes:
            # the ranking's arrays and best pages' look-ups, for the pages rewritten in this loop (as a worker
            # reads them), read in a thread: on a large store it takes a while, and clients may come already
            self.reading = asyncio.ensure_future(self._read_ranking())
        if (workers := self.workers) is not None:
            # The first page is the one a person waits for, and until a worker has started this loop rewrites
            # it: workers starting beside it (each importing its modules and opening the store) would take
            # the cores it needs.  They start once it is through, or WORKERS_AFTER seconds after the proxy's
            # start without a page; each takes pages as soon as it has started.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.answered.wait(), WORKERS_AFTER)
            if not self.stopping and workers is self.workers and not workers.ended:
                await workers.start()
        if self.reading is not None:
            await self.reading
            self._read_if_new()  # and this loop's own connection opened
        # What mitmproxy and this addon have loaded lives as long as the proxy: frozen, the cycle collector stops
        # walking it at each full collection, which under load would otherwise repeat every few seconds over
        # every module, class and function loaded (this addon's imports among them), holding every client.
        gc.collect()
        gc.freeze()

    def _unknown_option(self) -> bool:
        """An option like ours set that no addon has (``--set pagerank_max_link=5``; mitmproxy keeps it aside
        for an addon still to come, and the proxy would run without it) stops the proxy at once, in one line.
        By now every addon and script has declared its options."""
        deferred = getattr(ctx.options, "deferred", {})
        for name in sorted(deferred):
            problem = unknown_option(name, ctx.options.keys())
            if problem:
                log.error("pagerank: %s", problem)
                ctx.master.shutdown()
                return True
        return False

    def _open_proxy(self) -> bool:
        """Listening beyond loopback with no password (mitmdump's own command line: pagerank-proxy refuses it
        before it listens) stops the proxy at once, in one line: it would show the store to anyone."""
        options = ctx.options
        if ctx.master.addons.get("proxyserver") is None:  # no server of mitmproxy's listens (a test's master)
            return False
        problem = open_proxy_problem(
            exposed_hosts(options.listen_host, options.mode),
            getattr(options, "proxyauth", None),
            options.pagerank_no_auth,
            MITMDUMP_ADVICE,
        )
        if problem is None:
            return False
        log.error("pagerank: %s", problem)
        ctx.master.shutdown()
        return True

    def _stop_workers(self) -> None:
        if self.workers is not None:
            self.workers.close()
            self.workers = None

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        if _reserved(flow.request):
            # a body streamed on (mitmproxy's stream_large_bodies) would take the request upstream before the
            # request hook answers it
            flow.request.stream = False

    def http_connect(self, flow: http.HTTPFlow) -> None:
        if not _reserved(flow.request):
            return
        # Refused before any connection: mitmdump's eager strategy would first connect to whatever the name
        # resolves to, and a tunnel would need mitmproxy's certificate for it.  The own pages are plain HTTP.
        mark(flow, FlowState.OWN_PAGE, "own-page: CONNECT refused")
        flow.response = _own_error(403, f"The PageRank proxy's own pages are at http://{PROXY_HOST}/ (plain HTTP).")

    async def request(self, flow: http.HTTPFlow) -> None:
        self.in_flight.add(flow.id)
        if not _reserved(flow.request):
            self._prepare_panel(flow)
            self.deadline.request(flow)
            if flow.request.headers.get("sec-fetch-dest") in _DOCUMENTS:
                # a copy the browser kept may hold another ranking's bars: never let the origin's 304 revive it
                for name in _CONDITIONALS:
                    flow.request.headers.pop(name, None)
            return
        # answered here whatever happens: no request ever leaves for the reserved host
        mark(flow, FlowState.OWN_PAGE)
        flow.response = await self._own_page(flow.request)

    async def _own_page(self, request: http.Request) -> http.Response:
        """The own pages' answer to ``request``; another site's page gets the one answer that tells it nothing,
        whatever it asks, store or none (:mod:`.pages.gate`)."""
        if _asker(request) is Asker.OTHER_SITE:
            return _own_response(request, *other_site())
        if self.ranks is None:
            return _own_error(503, "No store is set: start the proxy with --set rankstore=PATH.")
        path, _, query_text = request.path.partition("?")
        query = parse_qs(query_text, keep_blank_values=True)
        try:
            # the store's SQLite work stops at its deadline; the rest (arrays read from a cold disk) may not: the
            # page is answered by ANSWER_BY whatever the thread still does (its answer, once made, is let go)
            answer = asyncio.to_thread(respond, request.method, path, query, self.ranks)
            status, headers, body = await asyncio.wait_for(answer, pages.ANSWER_BY)
        except TimeoutError:
            log.warning("pagerank: %s not answered within %.1f s", request.path[:200], pages.ANSWER_BY)
            return _own_response(request, *pages.too_late(path, query))
        except RuntimeError as error:
            if "shutdown" not in str(error):  # asyncio's "Executor shutdown has been called": stopping
                log.exception("pagerank: %s failed", request.path[:200])
            return _own_error(503, "The PageRank proxy is stopping.")
        except Exception:  # a bug of ours: a page of ours says so, the log has it once
            log.exception("pagerank: %s failed", request.path[:200])
            return _own_error(500, "This page of the PageRank proxy failed; the proxy's log says why.")
        return _own_response(request, status, headers, body)

    def _prepare_panel(self, flow: http.HTTPFlow) -> None:
        """While a page's request goes to the origin, have its panel made (the panel needs only the URL)
        where :func:`~.dispatch.plan` says; the page's job then skips that part."""
        if self.settings is None or self.stopping or flow.response is not None or not might_be_page(flow.request):
            return
        workers = self.workers
        traffic = self._traffic(others=len(self.in_flight) - 1, workers_idle=workers is not None and workers.all_idle())
        ahead = plan(Page(None, not uncompressed(flow.request)), traffic, self._means()).ahead
        if ahead is Ahead.LOOP:
            # made once this hook has let the request go on its way (a callback of the loop's next turn),
            # unless another flow has come by then
            asyncio.get_running_loop().call_soon(self._panel_ahead, flow)
        elif ahead is Ahead.WORKER and workers is not None:
            workers.prepare(flow.request.url)

    def _panel_ahead(self, flow: http.HTTPFlow) -> None:
        """Make the panel of a page alone in the proxy once its request is on its way: now, if it went on a
        connection already open; else once its new connection is made (``server_connected``: the request
        is sent in the same turn), so that the panel never holds the connection up."""
        if not flow.server_conn.connected:
            self.panel_waits = flow
            return
        self._make_panel(flow)

    def server_connected(self, data: server_hooks.ServerConnectionHookData) -> None:
        flow, self.panel_waits = self.panel_waits, None
        if flow is not None:
            asyncio.get_running_loop().call_soon(self._make_panel, flow)

    def _make_panel(self, flow: http.HTTPFlow) -> None:
        settings = self.settings
        if settings is None or self.stopping or self.in_flight != {flow.id} or flow.response is not None:
            return
        try:
            prepare_panel(
                settings.store,
                settings.ranking,
                settings.panel,
                flow.request.url,
                most_backlinks=options.INLINE_BACKLINKS,
                levels=_levels(settings),
            )
        except (TooManyLinks, StoreError, sqlite3.Error):
            pass  # its page's job makes it (in a worker), or says why not

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        self._choose(flow)
        self.deadline.responseheaders(flow)  # after the choice: a response that streams through is not timed

    def _choose(self, flow: http.HTTPFlow) -> None:
        """Stream a response through untouched, or hold its body back to be rewritten."""
        if self.settings is None or flow.response is None or state_of(flow) is FlowState.OWN_PAGE:
            return
        if not is_candidate(flow, self.settings.max_body, self.insecure_pages):
            flow.response.stream = True  # byte for byte, never buffered
            mark(flow, FlowState.PASSED)
        else:
            mark(flow, FlowState.CANDIDATE)  # its body, once whole, is rewritten (response)

    async def response(self, flow: http.HTTPFlow) -> None:
        self._settle(flow)
        body = self._held_body(flow)
        if body is None:
            return
        response, started = flow.response, time.perf_counter()
        assert response is not None  # a body held back has its response
        waited = await self._take_turn(flow, len(body))
        if waited is None:
            return
        try:
            await self._annotate(flow, body, response, started, waited)
        finally:
            self.answered.set()

    async def _annotate(
        self, flow: http.HTTPFlow, body: bytes, response: http.Response, started: float, waited: float
    ) -> None:
        job = self._job(flow)
        # the page's record is made while it is rewritten (in a worker, else a thread), and kept if it is annotated
        recording = self.recorder.take(flow, body, job, self._record_maker(), "in a worker")
        try:
            done, route = await self._rewrite(body, job)
        except (StoreError, WorkerError) as error:
            log.warning("pagerank: %s: %s", job.url, error)
            mark(flow, FlowState.UNTOUCHED, f"untouched: {error}{_waited(waited)}")
            self.recorder.drop(recording)
            return
        except Exception as error:  # a bug of ours in this loop's rewrite (a worker reports its own): untouched
            log.exception("pagerank: %s: rewriting failed", job.url)
            mark(flow, FlowState.UNTOUCHED, f"untouched: {type(error).__name__}: {error}{_waited(waited)}")
            self.recorder.drop(recording)
            return
        if isinstance(done, Untouched):
            mark(flow, FlowState.UNTOUCHED, f"untouched: {done.reason}{_waited(waited)}")
            self.recorder.drop(recording)
        elif self._still_wanted(flow, response):  # else the client has gone, or the flow was killed, meanwhile
            _apply(response, done.body)
            seconds = time.perf_counter() - started
            # written before the client has the page: a proxy killed outright loses at most the pages in hand
            recorded = await self.recorder.keep(recording)
            mark(flow, FlowState.REWRITTEN, _rewritten_note(done, seconds, route, waited, recorded))
        else:
            self.recorder.drop(recording)

    def _record_maker(self) -> Making | None:
        """Where a page's record is made: a worker process once one has started, beside the page's rewrite
        (here in the loop, or in another worker), so that this process only writes it; else a thread."""
        workers = self.workers
        if workers is None or not workers.any_started():
            return None
        return functools.partial(_record_in_worker, workers, not self.in_flight)

    def _settle(self, flow: http.HTTPFlow) -> None:
        """The flow's origin is done: it is in flight no longer, and nothing of it is made ahead now."""
        self.in_flight.discard(flow.id)
        self.deadline.response(flow)
        if self.panel_waits is flow:  # answered before its connection was made
            self.panel_waits = None

    def _held_body(self, flow: http.HTTPFlow) -> bytes | None:
        """The raw body of a response held back to be rewritten, or None to let it go as it is.

        The raw bytes go to the rewrite, which undoes their Content-Encoding within pagerank_max_body: a
        compression bomb never inflates in mitmproxy's event loop."""
        settings, response = self.settings, flow.response
        if settings is None or response is None or response.stream or self.stopping:
            return None
        state = state_of(flow)
        # None: a response no server sent (another addon's, a replay), never seen by responseheaders
        candidate = state is FlowState.CANDIDATE
        if not candidate and (state is not None or not is_candidate(flow, settings.max_body, self.insecure_pages)):
            return None
        body = response.raw_content
        if not body or len(body) > settings.max_body:
            return None
        return body

    async def _take_turn(self, flow: http.HTTPFlow, size: int) -> float | None:
        """Seconds a large page behind others waited for its turn (:mod:`.pacing`), None if the proxy
        stopped or the client left meanwhile."""
        if self.pacer is None:
            return 0.0
        wait = self.pacer.delay(size, asyncio.get_running_loop().time())
        if not wait:
            return 0.0
        response = flow.response
        await asyncio.sleep(wait)
        return None if self.stopping or not self._still_wanted(flow, response) else wait

    @staticmethod
    def _still_wanted(flow: http.HTTPFlow, response: http.Response | None) -> bool:
        """Is the client still there for this response (not gone, the flow not killed nor answered anew)?"""
        return flow.live and not flow.error and flow.response is response

    def _job(self, flow: http.HTTPFlow) -> PageJob:
        settings, response = self.settings, flow.response
        assert settings is not None and response is not None
        return PageJob(
            response.headers.get("content-type"),
            flow.request.url,
            response.headers.get("content-encoding"),
            settings.max_body,
            settings.max_links,
            flow.request.headers.get("sec-fetch-dest", "document") == "document",
        )

    async def _rewrite(self, body: bytes, job: PageJob) -> tuple[Rewritten | Untouched, Route]:
        """The page rewritten where :func:`~.dispatch.plan` says, and where that was.  The loop's rewrite is
        bounded: a page that would cost it more (many links, a new ranking version not read for the loop
        yet) goes off the loop instead."""
        route = plan(Page(len(body), compressed(job.content_encoding)), self._traffic(), self._means()).route
        if route is Route.LOOP:
            try:
                return self._rewrite_here(body, job), route
            except TooManyLinks:
                self._read_if_new()
            route = off_loop(self._means())
        self.rewriting += 1
        try:
            return await self._rewrite_off_loop(body, job, route), route
        finally:
            self.rewriting -= 1

    def _rewrite_here(self, body: bytes, job: PageJob) -> Rewritten | Untouched:
        """:func:`~.worker.rewrite_job` in this loop, bounded (:mod:`.options`' ``INLINE_*``)."""
        settings = self.settings
        assert settings is not None
        return rewrite_job(
            settings.store,
            settings.ranking,
            settings.panel,
            body,
            job,
            _levels(settings),
            most_links=options.INLINE_LINKS,
            most_backlinks=options.INLINE_BACKLINKS,
            most_lookups=options.INLINE_LOOKUPS,
        )

    def _traffic(self, others: int | None = None, workers_idle: bool = False) -> Traffic:
        return Traffic(
            others=len(self.in_flight) if others is None else others,
            rewriting=self.rewriting,
            reading=self.reading is not None and not self.reading.done(),
            workers_idle=workers_idle,
            workers_started=self.workers is None or self.workers.any_started(),
        )

    def _means(self) -> Means:
        settings = self.settings
        assert settings is not None
        workers = self.workers
        return Means(workers.count if workers is not None else 0, settings.inline_bytes, bool(settings.panel))

    def _read_if_new(self) -> None:
        """Unless this process has read the newest version of the ranking (its arrays, its best pages'
        look-ups), so that a page rewritten in the loop costs only its own links, read it in a thread, one
        read at a time; pages go to the workers meanwhile (``response``): on a large store the read would
        hold whoever waits for the loop far longer than a page."""
        settings = self.settings
        assert settings is not None
        try:
            if ready(settings.store, settings.ranking, settings.panel, _levels(settings)):
                return
        except (StoreError, sqlite3.Error):
            return  # the worker that gets the page says why
        if self.reading is None or self.reading.done():
            self.reading = asyncio.ensure_future(self._read_ranking())

    async def _read_ranking(self) -> None:
        settings = self.settings
        assert settings is not None
        try:
            await asyncio.to_thread(preload, settings.store, settings.ranking, settings.panel, _levels(settings))
        except (StoreError, sqlite3.Error) as error:  # the pages say so, one by one
            log.warning("pagerank: %s", error)
        except RuntimeError as error:  # asyncio's "Executor shutdown has been called": stopping
            if "shutdown" not in str(error):
                raise

    async def _rewrite_off_loop(self, body: bytes, job: PageJob, route: Route) -> Rewritten | Untouched:
        """:func:`~.worker.rewrite_job` in a worker or in a thread, as ``route`` says: other flows go on meanwhile."""
        settings = self.settings
        assert settings is not None
        if route is Route.WORKER:
            assert self.workers is not None
            # a page alone in the proxy: its answer is waited for awake (Workers.rewrite)
            return await self.workers.rewrite(body, job, poll=not self.in_flight)
        return await asyncio.to_thread(
            rewrite_job, settings.store, settings.ranking, settings.panel, body, job, _levels(settings)
        )

    def error(self, flow: http.HTTPFlow) -> None:
        self.in_flight.discard(flow.id)
        self.deadline.error(flow)
        if self.panel_waits is flow:
            self.panel_waits = None

    async def done(self) -> None:
        self.stopping = True
        if self.starting is not None and not self.starting.done():
            self.starting.cancel()
        self.deadline.done()
        self.recorder.done()
        if self.ranks is not None:
            self.ranks.close()
        if self.workers is not None:
            workers, self.workers = self.workers, None
            await workers.aclose()


def _record_in_worker(workers: Workers, alone: bool, body: bytes, job: RecordJob) -> asyncio.Future[Recorded | None]:
    return workers.record(body, job, poll=alone)


def _levels(settings: Settings) -> LevelChoice:
    """The host and site rankings the options name ("" for the store's own choice)."""
    return LevelChoice(settings.host_ranking, settings.site_ranking)


def _apply(response: http.Response, body: bytes) -> None:
    """Put a rewritten body (decoded: :func:`~.worker.rewrite_page`) in its response, and make its headers fit it."""
    response.raw_content = body
    names = {name.lower() for name, _ in response.headers.fields}  # one pass over the raw headers
    if b"content-encoding" in names:
        del response.headers["content-encoding"]
    if b"transfer-encoding" not in names:
        response.headers["content-length"] = str(len(body))
    # The bars are the store's as it is now, not the origin's: a validator of the origin's would let a
    # browser keep this copy across a new ranking (its 304 brings back the old bars), so none is left and
    # the browser must ask again each time.  Nor is the copy stored at all: the page's own fetch() of itself
    # with cache "force-cache" would read it from the browser's cache, where the proxy is not asked
    # (and Vary says so to a cache that stores it anyway).
    for validator in ("etag", "last-modified"):
        if validator.encode() in names:
            del response.headers[validator]
    response.headers["cache-control"] = "private, no-store"
    response.headers.add("vary", "Sec-Fetch-Dest")
    for name in CSP_HEADERS:
        if name.encode() in names:
            policies = response.headers.get_all(name)
            response.headers.set_all(name, [apply(p, allow_style_hash(p, *STYLE_HASHES)) for p in policies])


def _waited(seconds: float) -> str:
    return f", after {seconds * 1000:.0f} ms for its turn" if seconds else ""


def _rewritten_note(done: Rewritten, seconds: float, route: Route, waited: float, recorded: str | None = None) -> str:
    """The flow's note for a page rewritten: its bars, the time it took, how, and where its record was made
    (if it was recorded)."""
    return (
        f"{done.links} bars ({done.ranked} ranked) in {seconds * 1000:.1f} ms"
        + (", panel kept" if done.panel_kept else "")
        + (", in the loop" if route is Route.LOOP else "")
        + _waited(waited)
        + (f", recorded {recorded}" if recorded else "")
    )


_DOCUMENTS = ("document", "iframe", "frame")  # Sec-Fetch-Dest of a request for a page a person sees
_CONDITIONALS = ("if-none-match", "if-modified-since")


def _reserved(request: http.Request) -> bool:
    """Is the request for the own pages' host, by its URL (a proxy request's, or a tunnel's) or its Host header?"""
    return is_reserved(request.host) or is_reserved(request.host_header)


def _asker(request: http.Request) -> Asker:
    headers = request.headers
    return asker(headers.get("sec-fetch-site"), headers.get("sec-fetch-dest"), headers.get("sec-purpose"))


def _own_response(request: http.Request, status: int, headers: dict, body: bytes) -> http.Response:
    return http.Response.make(status, b"" if request.method == "HEAD" else body, headers)


def _own_error(status: int, message: str) -> http.Response:
    import html

    body = f"<!doctype html><title>PageRank proxy</title><p>{html.escape(message)}</p>".encode()
    return http.Response.make(
        status,
        body,
        {
            "content-type": "text/html; charset=utf-8",
            "content-security-policy": "default-src 'none'",
            "cache-control": "no-store",
            "x-content-type-options": "nosniff",
            **OWN_ONLY_HEADERS,
        },
    )


addons = [PageRankProxy()]
