"""Crawl sources -> extracted pages -> the store, in large batches, on every core.

Page sources (WARC, saved HTML) yield a record per page: readers run in this
process; parsing (charset, HTML, URL normal form) runs in a pool of worker
processes fed a bounded number of chunks at a time, so memory stays flat
whatever the crawl's size.  Graph sources (edge lists, Common Crawl's web
graphs) yield links in bulk (:class:`~rankstore.sources.EdgeBatch`): each
distinct URL is put in normal form once, and links are stored as arrays.
SQLite writes happen on a writer thread, one transaction per batch, while
the next batch is read.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .extract import extract
from .sources import (
    GONE_STATUSES,
    GRAPH_FORMATS,
    EdgeBatch,
    Record,
    Skipped,
    SourceError,
    detect_format,
    read_cc_sources,
    read_source,
    source_size,
)
from .sources.ccgraph import cc_parts
from .sources.htmldir import check_html_dir
from .store import PageData, Store
from .urls import canonical, canonical_many

__all__ = ["BuildProgress", "BuildReport", "build", "prepare", "check_sources"]

_CHUNK = 32
_BATCH_LINKS = 200_000
_HTML_SNIFF = 1024
# WHATWG MIME sniffing's "binary data bytes": never in a text document.
_BINARY_BYTES = bytes(list(range(0x00, 0x09)) + [0x0B] + list(range(0x0E, 0x1B)) + list(range(0x1C, 0x20)))


@dataclass
class BuildReport:
    build_id: int
    pages: int = 0  # pages crawled (those found gone and older captures not counted)
    links: int = 0
    gone: int = 0  # pages the crawl found gone (404, 410): their links are lost as of this build
    older: int = 0  # captures older than the one the store holds of their page: kept as history only
    seconds: float = 0.0
    skipped: Counter = field(default_factory=Counter)
    examples: list[Skipped] = field(default_factory=list)

    def skip(self, item: Skipped) -> None:
        reason = item.reason.split(" (")[0].split(";")[0]
        self.skipped[reason] += item.count
        if len(self.examples) < 50:
            self.examples.append(item)

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())


def _looks_binary(body: bytes) -> bool:
    head = body[:_HTML_SNIFF]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False  # UTF-16 text has NUL bytes
    return len(head) != len(head.translate(None, _BINARY_BYTES))


def prepare(record: Record) -> tuple[PageData | None, list[Skipped]]:
    """One crawl record -> a page with canonical URLs, and what could not be used."""
    url = canonical(record.url)
    if url is None:
        return None, [Skipped(record.where, f"not an http(s) URL ({record.url[:100]!r})")]
    page = PageData(url, record.status, fetched_at=record.fetched_at)
    if record.status in GONE_STATUSES:
        page.gone = True  # no links: those a page had are lost as of this capture
    elif record.location is not None:
        target = canonical(record.location, url)
        if target is not None:
            page.links.append((target, False, 1.0, None))
    elif record.body is not None:
        if _looks_binary(record.body):
            return None, [Skipped(record.where, "binary content labelled as HTML")]
        try:
            parsed = extract(record.body, url, record.content_type)
        except Exception as error:  # a parser failure on one page must not stop the build
            return None, [Skipped(record.where, f"cannot parse HTML ({type(error).__name__}: {error})")]
        page.title = parsed.title
        page.canonical_url = parsed.canonical_url
        page.links = [(link.url, link.nofollow, 1.0, link.anchor_text) for link in parsed.links]
    return page, []


def _prepare_chunk(records: Sequence[Record]) -> list[tuple[PageData | None, list[Skipped]]]:
    return [prepare(record) for record in records]


def check_sources(sources: Sequence[str], fmt: str | None, base_url: str | None = None) -> list[str]:
    """The format of each source; SourceError for one that cannot be used at all."""
    formats = []
    for path in sources:
        if not os.path.exists(path):
            raise SourceError(f"{path}: no such file or directory")
        if not os.access(path, os.R_OK):
            raise SourceError(f"{path}: permission denied")
        source_format = fmt or detect_format(path)
        if source_format == "html":
            check_html_dir(path, base_url)
        formats.append(source_format)
    graphs = [path for path, source_format in zip(sources, formats) if source_format == "ccgraph"]
    if graphs:
        cc_parts(graphs)  # both halves of the graph are there
    return formats


@dataclass
class BuildProgress:
    """How far a build has gone, as it goes: the input read, and what came of it so far."""

    bytes_read: int = 0
    pages: int = 0  # pages read (a page source's records; a graph's pages given their links)
    links: int = 0  # links parsed (before repeats within a page are dropped), or a graph's links stored
    graph: bool = False  # a graph source is being read: its links are the count that moves


ProgressCallback = Callable[[BuildProgress], None]


def build(
    store: Store,
    sources: Sequence[str],
    fmt: str | None = None,
    base_url: str | None = None,
    progress: ProgressCallback | None = None,
    jobs: int | None = None,
    commit_every: int = 20000,
    scheme: str = "https",
) -> BuildReport:
    """Load ``sources`` into ``store``; ``progress`` is called with a :class:`BuildProgress` as input is read.

    ``scheme`` is that of the root pages made of a Common Crawl graph's hosts.
    """
    formats = check_sources(sources, fmt, base_url)
    pages_sources = [(path, f) for path, f in zip(sources, formats) if f not in GRAPH_FORMATS]
    graph_sources = [(path, f) for path, f in zip(sources, formats) if f in GRAPH_FORMATS]
    if jobs is None:
        jobs = min(2, os.cpu_count() or 1)
    report = BuildReport(store.begin_build(sources))
    started = time.perf_counter()
    state = BuildProgress()

    def advance(count: int) -> None:
        state.bytes_read += count
        if progress is not None:
            progress(state)

    def kept(read: Iterator, path: str) -> Iterator[Any]:
        try:
            for item in read:
                if isinstance(item, Skipped):
                    report.skip(item)
                else:
                    yield item
        except SourceError as error:
            report.skip(Skipped(path, str(error)))

    def items(chosen: list[tuple[str, str]]) -> Iterator[Record]:
        for path, source_format in chosen:
            for record in kept(read_source(path, source_format, base_url, advance), path):
                state.pages += 1  # counted as read, with the bytes: the parsers' answers come a pool's work later
                yield record

    if pages_sources:
        writer = _Writer(store, report)
        try:
            _load_pages(
                items(pages_sources),
                writer,
                report,
                jobs,
                commit_every,
                state,
                lambda: progress(state) if progress is not None else None,
            )
        finally:
            writer.close()
    # Graphs are written from this thread while the readers take the next block apart in a thread
    # of their own.  Each reader numbers its own vertices, so each has a loader of its own.
    state.graph = bool(graph_sources)
    for path, source_format in graph_sources:
        if source_format == "edges":
            graph = _GraphLoader(store, report, state, progress)
            for batch in kept(read_source(path, "edges", progress=advance), path):
                graph.take(batch)
            graph.finish()
    web_graph = [path for path, source_format in graph_sources if source_format == "ccgraph"]
    if web_graph:
        graph = _GraphLoader(store, report, state, progress)
        for batch in kept(read_cc_sources(web_graph, scheme, advance), web_graph[0]):
            graph.take(batch)
        graph.finish()
    if progress is not None:
        progress(state)  # the pages' last links, parsed after the input was read
    report.gone = len(store.gone_pages())
    report.older = store.older_captures()
    report.pages = len(store.written_pages()) - report.gone
    store.finish_build(report.build_id, report.pages, report.links, dict(report.skipped))
    report.seconds = time.perf_counter() - started
    return report


def _load_pages(
    records: Iterator[Record],
    writer: _Writer,
    report: BuildReport,
    jobs: int,
    commit_every: int,
    state: BuildProgress,
    progress: Callable[[], None],
) -> None:
    """Records -> pages with canonical URLs (in worker processes) -> the writer, in batches; ``state``
    counts the links as they come from the parsers."""
    pending: list[PageData] = []
    pending_links = 0

    def flush() -> None:
        nonlocal pending, pending_links
        writer.write(pending)
        pending, pending_links = [], 0
        progress()

    def take(results: Iterable[tuple[PageData | None, list[Skipped]]]) -> None:
        nonlocal pending_links
        for page, problems in results:
            for problem in problems:
                report.skip(problem)
            if page is not None:
                pending.append(page)
                pending_links += len(page.links)
                state.links += len(page.links)
        if len(pending) >= commit_every or pending_links >= _BATCH_LINKS:
            flush()

    if jobs <= 1:
        for chunk in _chunks(records, _CHUNK):
            take(_prepare_chunk(chunk))
    else:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            inflight: deque = deque()
            for chunk in _chunks(records, _CHUNK):
                inflight.append(pool.apply_async(_prepare_chunk, (chunk,)))
                if len(inflight) >= jobs * 8:
                    take(inflight.popleft().get())
            while inflight:
                take(inflight.popleft().get())
    flush()


class _GraphLoader:
    """Graph batches -> pages and links: each new vertex's URL in normal form, once; links as arrays.

    A graph whose vertices are sites (a Common Crawl domain graph) becomes sites and site links: its edges
    are kept as site ids until the whole graph is read, then replace the store's site links at once.
    """

    def __init__(
        self, store: Store, report: BuildReport, state: BuildProgress, progress: ProgressCallback | None = None
    ):
        self.store = store
        self.report = report
        self.state = state
        self.progress = progress  # told after each batch: a reader reads ahead of what is stored
        self.pages = np.zeros(0, dtype=np.int64)  # vertex number -> page id (site id); 0 for a vertex not kept
        self.sources: list[np.ndarray] = []  # page ids of the pages whose links were written
        self.of_sites = False  # the vertices are sites (a domain graph's): its links are site links
        self.site_links: list[tuple[np.ndarray, np.ndarray]] = []  # (source, target) site ids, batch by batch

    def take(self, batch: EdgeBatch) -> None:
        if batch.urls:
            self._add_vertices(batch)
        if batch.sites:
            with self.store.transaction():
                sites = self.store.ensure_sites(batch.sites)
            self.pages = np.concatenate([self.pages, sites])
            self.of_sites = True
        if len(batch.src) and self.of_sites:
            self.site_links.append((self.pages[batch.src].astype(np.int32), self.pages[batch.dst].astype(np.int32)))
            self.state.links += len(batch.src)
            if self.progress is not None:
                self.progress(self.state)
        elif len(batch.src):
            src, dst = self.pages[batch.src], self.pages[batch.dst]
            kept = (src > 0) & (dst > 0)
            dropped = len(kept) - int(kept.sum())
            if dropped:
                self.report.skipped["link to or from a URL that is not http(s)"] += dropped
            weights = batch.weights[kept] if batch.weights is not None else None
            sources, links = self.store.write_edges(src[kept], dst[kept], weights, self.report.build_id)
            self.sources.append(sources)
            self.report.links += links
            self.state.links += links
            self.state.pages = len(self.store.written_pages())
            if self.progress is not None:
                self.progress(self.state)

    def finish(self) -> None:
        """Mark the graph's source pages crawled, or store its site links, once the whole graph is read."""
        if self.sources:
            self.store.mark_crawled(np.concatenate(self.sources), self.report.build_id)
        self.sources = []
        if self.of_sites:
            src = np.concatenate([pair[0] for pair in self.site_links]) if self.site_links else np.zeros(0, np.int32)
            dst = np.concatenate([pair[1] for pair in self.site_links]) if self.site_links else np.zeros(0, np.int32)
            self.site_links = []
            with self.store.transaction():
                self.report.links += self.store.replace_site_links(src, dst, self.store.site_count())

    def _add_vertices(self, batch: EdgeBatch) -> None:
        normal = canonical_many(batch.urls)
        for url, found in zip(batch.urls, normal):
            if found is None:
                self.report.skip(Skipped(batch.where, f"not an http(s) URL ({url[:100]!r})"))
        kept = [url for url in normal if url is not None]
        ids = np.zeros(len(normal), dtype=np.int64)
        if kept:
            with self.store.transaction():
                ids[[i for i, url in enumerate(normal) if url is not None]] = self.store.page_ids(kept)
        self.pages = np.concatenate([self.pages, ids])


class _Writer:
    """Writes batches on a thread of its own: SQLite releases the GIL while it
    works, so parsing goes on while a batch is written."""

    def __init__(self, store: Store, report: BuildReport):
        self.store = store
        self.report = report
        self.queue: queue.Queue = queue.Queue(maxsize=2)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="rankstore-writer", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while (task := self.queue.get()) is not None:
            if self.error is not None:
                continue
            function, args = task
            try:
                function(*args)
            except BaseException as error:  # handed to the building thread
                self.error = error

    def write(self, batch: list[PageData]) -> None:
        if batch:
            self.call(self._write_pages, batch)

    def _write_pages(self, batch: list[PageData]) -> None:
        self.report.links += self.store.write_pages(batch, self.report.build_id)

    def call(self, function: Callable, *args) -> None:
        """Run ``function(*args)`` on the writer thread, after what was handed to it before."""
        if self.error is not None:
            raise self.error
        self.queue.put((function, args))

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join()
        if self.error is not None:
            raise self.error


def _chunks(items: Iterable, size: int) -> Iterator[list]:
    chunk = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def total_size(sources: Sequence[str]) -> int:
    return sum(source_size(path) for path in sources)
