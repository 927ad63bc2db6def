"""``rankstore crawl``: Scrapy fetches, :class:`~rankstore.crawl.frontier.Frontier` chooses what.

Scrapy does the fetching and the politeness: robots.txt (``ROBOTSTXT_OBEY``), the user agent, per-host
concurrency and delay (its download slots are per host), the time budget (``CLOSESPIDER_TIMEOUT``) and
SIGINT (its graceful shutdown).  Its scheduler cannot change the priority of a request it holds, and a
PageRank order changes the whole frontier's at every ranking, so the frontier stays here and Scrapy is
fed a window of requests at a time; each response handled takes the next best URLs, ranked as of that
moment, to refill the window.  The window is twice the concurrency (enough that no download slot waits),
and with a delay twice the hosts seen: a request fed beyond what the delay lets out waits in Scrapy's
download slot, where a stop (the time limit, Ctrl-C) still waits for it, and its priority grows stale.

Every response goes to the WARC (:mod:`.warcout`) as it comes; every ``load_every`` pages the segment
is closed and loaded into the store by :func:`rankstore.build.build`, on a thread of its own, as a
``rankstore build`` of that file would load it.  A re-run over the same folder reads its segments back
(the pages and their links, in the order fetched) into the frontier, so it fetches nothing twice, and
loads any segment an interrupted run had not loaded.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import enum
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .. import __version__
from ..extract import extract
from ..sources import Record
from ..sources.warc import HTML_TYPES, MAX_BODY, read_warc
from ..urls import canonical, host_of
from . import warcout
from .frontier import Frontier, Order, Scope

__all__ = [
    "page_links",
    "CrawlError",
    "CrawlOptions",
    "CrawlProgress",
    "CrawlReport",
    "StopReason",
    "crawl",
    "USER_AGENT",
    "replay",
]

USER_AGENT = f"rankstore-crawl/{__version__} (+local)"


class StopReason(enum.Enum):
    MAX_PAGES = "the page budget was reached"
    FRONTIER_EMPTY = "no URL in scope was left to fetch"
    TIME_LIMIT = "the time limit was reached"
    INTERRUPTED = "interrupted"


class CrawlError(ValueError):
    """A crawl that cannot start as asked (a seed that is no http(s) URL, a folder that is a file)."""


@dataclass(frozen=True)
class CrawlOptions:
    seeds: tuple[str, ...]
    folder: str  # the WARC segments and what a re-run resumes from
    store_path: str | None = None  # None: WARC only
    max_pages: int = 1000  # over all runs in the folder
    order: Order = Order.PAGERANK
    rerank_every: int = 100
    scope: tuple[str, ...] = ()  # URL globs; none: the seeds' sites
    time_limit: float = 0.0  # seconds; 0: none
    delay: float = 0.5  # seconds between two requests to one host
    per_host: int = 2  # requests at once to one host
    concurrency: int = 16  # requests at once in all
    load_every: int = 500  # pages a WARC segment holds before it is closed and loaded
    timeout: float = 30.0
    user_agent: str = USER_AGENT

    def checked(self) -> CrawlOptions:
        """These options with the seeds in the URL normal form; :class:`CrawlError` if one cannot be, or if
        the folder holds pages of a crawl from other seeds (a re-run resumes a crawl, never mixes two)."""
        seeds = []
        for seed in self.seeds:
            url = canonical(seed)
            if url is None:
                raise CrawlError(f"{seed}: not an http(s) URL")
            seeds.append(url)
        if os.path.exists(self.folder) and not os.path.isdir(self.folder):
            raise CrawlError(f"{self.folder}: not a folder")
        earlier = warcout.recorded_seeds(self.folder)
        if earlier is not None:
            other = set(earlier) != set(seeds)
        else:  # a folder written before the seeds were recorded: the first page it fetched was one of them
            earlier = _first_page(self.folder)
            other = earlier is not None and earlier[0] not in seeds
        if earlier is not None and other and warcout.segments(self.folder):
            raise CrawlError(
                f"{self.folder}: holds a crawl from {' '.join(earlier)}, not {' '.join(seeds)}: give another --out, "
                "or the same URLs to resume it"
            )
        return dataclasses.replace(self, seeds=tuple(seeds))


def _first_page(folder: str) -> tuple[str] | None:
    for path in warcout.segments(folder):
        for item in read_warc(path):
            if isinstance(item, Record):
                return (item.url,)
    return None


@dataclass
class CrawlProgress:
    fetched: int = 0  # this run
    resumed: int = 0  # fetched by earlier runs of the folder
    refused: int = 0  # by robots.txt
    failed: int = 0  # network errors, timeouts
    first_failure: str = ""  # the first failed fetch: its URL and why
    queued: int = 0
    rankings: int = 0
    loaded: int = 0  # segments loaded into the store
    seconds: float = 0.0


@dataclass
class CrawlReport:
    progress: CrawlProgress
    stopped: StopReason
    order: list[str] = field(default_factory=list)  # URLs fetched by this run, in order
    segments: list[str] = field(default_factory=list)  # WARC segments written by this run


def page_links(record: Record) -> list[str]:
    """The URLs a fetched page lets the crawl follow: its links that vote (not nofollow), a redirect's target."""
    if record.location is not None:
        target = canonical(record.location, record.url)
        return [target] if target else []
    if record.body is None:
        return []
    return [link.url for link in extract(record.body, record.url, record.content_type).links if not link.nofollow]


def replay(folder: str, frontier: Frontier) -> int:
    """The pages the folder's segments hold, told to ``frontier`` in the order they were fetched; how many."""
    count = 0
    for path in warcout.segments(folder):
        for item in read_warc(path):
            if isinstance(item, Record):
                frontier.fetched_page(item.url, page_links(item), rank=False)
                count += 1
    frontier.rerank()
    return count


class _Loader:
    """Closed segments loaded into the store one after another, on a thread, by the build's own code."""

    def __init__(self, store_path: str | None, progress: CrawlProgress):
        self.store_path = store_path
        self.progress = progress
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        self._pending: list[concurrent.futures.Future] = []

    def load(self, segment: str) -> None:
        if self.store_path is not None:
            self._pending.append(self._pool.submit(self._build, segment))

    def _build(self, segment: str) -> None:
        from ..build import build
        from ..store import Store

        assert self.store_path is not None  # load() asks for none without a store
        store = Store(self.store_path, create=True)
        try:
            build(store, [segment], fmt="warc", jobs=1)
        finally:
            store.close()
        warcout.mark_loaded(segment)
        self.progress.loaded += 1

    def finish(self) -> None:
        """Wait for the loads asked for; the first failure raised."""
        self._pool.shutdown(wait=True)
        for future in self._pending:
            future.result()


class _Session:
    """One run's state: the frontier, the requests in flight, the WARC and the store's loads."""

    def __init__(self, options: CrawlOptions, progress_callback: Callable[[CrawlProgress], None] | None):
        self.options = options
        self.frontier = Frontier(
            options.order, Scope.of_seeds(options.seeds, options.scope).__contains__, options.rerank_every
        )
        self.progress = CrawlProgress()
        self.callback = progress_callback
        self.progress.resumed = replay(options.folder, self.frontier)
        self.frontier.seed(options.seeds)
        self.writer = warcout.SegmentWriter(options.folder)
        self.loader = _Loader(options.store_path, self.progress)
        loaded = warcout.loaded_segments(options.folder)
        for segment in warcout.segments(options.folder):
            if segment not in loaded:  # written by a run that stopped before loading it
                self.loader.load(segment)
        self.inflight: set[str] = set()
        self.order: list[str] = []
        self.written: list[str] = []
        self.hosts: set[str] = set()  # of the URLs fed to Scrapy
        self.started = time.monotonic()
        self._said = 0.0
        self.closed_reason = "finished"

    @property
    def done(self) -> int:
        """Pages fetched, by this run and the earlier ones: what ``max_pages`` bounds."""
        return self.progress.resumed + self.progress.fetched

    @property
    def window(self) -> int:
        """How many requests Scrapy may hold at once (see the module's docstring)."""
        if self.options.delay > 0:
            return min(2 * self.options.concurrency, 2 * max(len(self.hosts), 1))
        return 2 * self.options.concurrency

    def requests(self):
        import scrapy

        room = min(self.window - len(self.inflight), self.options.max_pages - self.done - len(self.inflight))
        if room <= 0:
            return []
        taken = self.frontier.take(room)
        self.inflight.update(taken)
        self.hosts.update(host_of(url) for url in taken)
        # Scrapy's scheduler holds the window: the best first there too
        return [
            scrapy.Request(
                url,
                callback=self.parse,
                errback=self.error,
                dont_filter=True,
                priority=len(taken) - index,
                meta={"frontier_url": url, "dont_redirect": True, "handle_httpstatus_all": True},
            )
            for index, url in enumerate(taken)
        ]

    def parse(self, response):
        url = response.meta["frontier_url"]
        self.inflight.discard(url)
        headers = [(name, value) for name, values in response.headers.items() for value in values]
        reason = _REASONS.get(response.status, "")
        self.writer.write_response(url, response.status, reason, headers, response.body)
        content_type = response.headers.get(b"Content-Type", b"").decode("latin-1")
        location = response.headers.get(b"Location")
        record = Record(url, url, response.status)
        if 300 <= response.status < 400 and location:
            record.location = location.decode("latin-1")
        elif response.status == 200 and content_type.lower().startswith(HTML_TYPES):
            record.body, record.content_type = response.body, content_type
        self.frontier.fetched_page(url, page_links(record))
        self.order.append(url)
        self.progress.fetched += 1
        self._after_page()
        return self.requests()

    def error(self, failure):
        from scrapy.exceptions import IgnoreRequest

        url = failure.request.meta["frontier_url"]
        self.inflight.discard(url)
        self.frontier.failed(url)
        if failure.check(IgnoreRequest):
            self.progress.refused += 1
        else:
            self.progress.failed += 1
            if not self.progress.first_failure:
                self.progress.first_failure = f"{url}: {str(failure.value).rstrip('.') or type(failure.value).__name__}"
        self._say()
        return self.requests()

    def _after_page(self) -> None:
        if self.writer.records >= self.options.load_every:
            self._roll()
        self._say()

    def _roll(self) -> None:
        segment = self.writer.roll()
        if segment is not None:
            self.written.append(segment)
            self.loader.load(segment)

    def _say(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.callback is None or (not force and now - self._said < 1.0):
            return
        self._said = now
        self._update()
        self.callback(self.progress)

    def _update(self) -> None:
        self.progress.queued = self.frontier.queued
        self.progress.rankings = self.frontier.rankings
        self.progress.seconds = time.monotonic() - self.started

    def close(self, reason: str) -> None:
        self.closed_reason = reason
        self.frontier.put_back(self.inflight)
        self._roll()
        self.loader.finish()
        self._update()
        self._say(force=True)

    def stop_reason(self) -> StopReason:
        if self.closed_reason == "closespider_timeout":
            return StopReason.TIME_LIMIT
        if self.closed_reason != "finished":
            return StopReason.INTERRUPTED
        if self.done >= self.options.max_pages:
            return StopReason.MAX_PAGES
        return StopReason.FRONTIER_EMPTY


_REASONS = {
    200: "OK",
    301: "Moved Permanently",
    302: "Found",
    303: "See Other",
    304: "Not Modified",
    307: "Temporary Redirect",
    308: "Permanent Redirect",
    403: "Forbidden",
    404: "Not Found",
    410: "Gone",
}


def _settings(options: CrawlOptions) -> dict:
    return {
        "ROBOTSTXT_OBEY": True,
        "USER_AGENT": options.user_agent,
        "CONCURRENT_REQUESTS": options.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": options.per_host,
        "DOWNLOAD_DELAY": options.delay,
        "RANDOMIZE_DOWNLOAD_DELAY": False,  # the delay asked for is the least gap, not its average
        "CLOSESPIDER_TIMEOUT": options.time_limit,
        "DOWNLOAD_TIMEOUT": options.timeout,
        "DOWNLOAD_MAXSIZE": MAX_BODY,
        "DOWNLOAD_WARNSIZE": 0,
        "REDIRECT_ENABLED": False,  # a redirect is a page of the crawl: a link to its target, as the build reads it
        "COOKIES_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "ERROR",
        "RETRY_TIMES": 1,
        "LOG_INSTALL_ROOT_HANDLER": False,
    }


def crawl(options: CrawlOptions, progress: Callable[[CrawlProgress], None] | None = None) -> CrawlReport:
    """Crawl from ``options.seeds`` into ``options.folder`` (and the store), resuming what the folder holds.

    Runs Scrapy's reactor, which a process can run once: one crawl per process.
    """
    import scrapy
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess
    from scrapy.exceptions import DontCloseSpider

    os.makedirs(options.folder, exist_ok=True)
    warcout.record_seeds(options.folder, options.seeds)
    session = _Session(options, progress)

    class CrawlSpider(scrapy.Spider):
        name = "rankstore-crawl"

        async def start(self):
            for request in session.requests():
                yield request

        @classmethod
        def from_crawler(cls, crawler, *args, **kwargs):
            spider = super().from_crawler(crawler, *args, **kwargs)
            crawler.signals.connect(spider.idle, signal=signals.spider_idle)
            crawler.signals.connect(spider.closed_with, signal=signals.spider_closed)
            return spider

        def idle(self):
            # the window emptied with URLs still queued (every request in it refused or failed at once)
            requests = session.requests()
            for request in requests:
                self.crawler.engine.crawl(request)
            if requests:
                raise DontCloseSpider

        def closed_with(self, spider, reason):
            session.close(reason)

    process = CrawlerProcess(_settings(options))  # configures logging: the levels below after it
    for name in ("scrapy.downloadermiddlewares.retry", "scrapy.downloadermiddlewares.robotstxt"):
        # a failed fetch (robots.txt's too) is counted and its reason told in the crawl's lines, not in a traceback
        logging.getLogger(name).setLevel(logging.CRITICAL)
    process.crawl(CrawlSpider)
    process.start()
    return CrawlReport(session.progress, session.stop_reason(), session.order, session.written)
