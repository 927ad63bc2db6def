"""Crawl sources -> extracted pages -> the store, in large batches, on every core.

Page sources (WARC, saved HTML) yield a record per page: readers run in this
process; parsing (charset, HTML, URL normal form) runs in a pool of worker
processes fed a bounded number of chunks at a time, so memory stays flat
whatever the crawl's size.  Graph sources (edge lists, Common Crawl's web
graphs) yield links in bulk (:class:`~rankstore.sources.EdgeBatch`): each
distinct URL is put in normal form once, and links are stored as arrays.
SQLite writes happen on a writer thread, one transaction per batch, while
the next batch is read.

A source may be at a URL, or be a ``*.paths.gz`` listing of files at URLs
(:mod:`~rankstore.sources.remote`): each file is streamed, never saved.  A
page file at a URL is noted in the store once its pages are committed (the
parsers are drained at its end), a web graph's files once the whole graph
is; a later build of the same sources passes over the files noted, and a
build cut short is continued by the next run of its sources.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import queue
import re
import signal
import sqlite3
import tempfile
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ParamSpec

import numpy as np

from .edgeruns import EdgeRuns, split_keys
from .extract import LinkWeights, extract, read_listed
from .linksort import LinkSorter, spill_folder
from .sources import (
    GONE_STATUSES,
    GRAPH_FORMATS,
    RANK_FORMATS,
    EdgeBatch,
    Record,
    Skipped,
    SourceError,
    detect_format,
    read_remote,
    read_source,
    source_size,
)
from .sources.htmldir import check_html_dir
from .sources.record import Visit, check_record, read_record
from .sources.remote import (
    DEFAULT_PATHS_BASE,
    Fetcher,
    RetryPolicy,
    TransferError,
    gunzipped_head,
    is_listing,
    is_url,
    read_head,
    read_listing,
)
from .stop_at import stop_at
from .store import PageData, Ranking, RankingNotFound, Store, StoreFull, TakenFile, explain
from .store.base import Transaction
from .urls import canonical, canonical_many

# Common Crawl's graphs and ranks files (.sources.ccgraph, .sources.ccranks, .imported) are read with pyarrow,
# imported where such a source is planned or read: a build of crawl files or an edge list starts without them

__all__ = [
    "BuildInterrupted",
    "BuildProgress",
    "BuildReport",
    "PlannedSource",
    "build",
    "prepare",
    "check_sources",
    "is_remote_source",
    "format_of_head",
]

_CHUNK = 32
_BATCH_LINKS = 200_000
# A graph's links gathered in memory before a sorted run of them goes to a file beside the store
# (8 bytes a link, and as much again to sort them).
_GATHER_LINKS = 1 << 25
_BATCH_GATHERED = 1 << 21  # links gathered written in one transaction
# Sources of a batch of links that an earlier batch had too, beyond which the graph is taken as unordered.
_RECURRING_SOURCES = 4
_HTML_SNIFF = 1024
# WHATWG MIME sniffing's "binary data bytes": never in a text document.
_BINARY_BYTES = bytes(list(range(0x00, 0x09)) + [0x0B] + list(range(0x0E, 0x1B)) + list(range(0x1C, 0x20)))


class BuildInterrupted(KeyboardInterrupt):
    """A build cut short (Ctrl-C, SIGTERM): marked 'interrupted' with the ``pages`` and ``links`` it committed,
    or, when it committed nothing, left no record (``kept`` False)."""

    def __init__(self, build_id: int, committed: tuple[int, int] | None):
        super().__init__(build_id)
        self.build_id = build_id
        self.kept = committed is not None
        self.pages, self.links = committed or (0, 0)


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
    files_taken: int = 0  # files at URLs this run took whole (noted in the store)
    files_before: int = 0  # files at URLs an earlier build took whole: not read again
    continued: bool = False  # this run went on with a build of the same sources that was cut short
    rankings: list[Ranking] = field(default_factory=list)  # versions a ranks file gave (rankstore.imported)
    visits: int = 0  # views of pages a proxy's record gave that the store did not hold yet

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


def prepare(record: Record, weights: LinkWeights = LinkWeights.UNIFORM) -> tuple[PageData | None, list[Skipped]]:
    """One crawl record -> a page with canonical URLs, and what could not be used; an HTML page's links
    weighed as ``weights`` says (a redirect's and a WAT's links weigh 1: there is no page to place them on)."""
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
    elif record.listed is not None:  # a WAT's: parsed where the WAT was made
        read = read_listed(record.listed, url)
        page.title = read.title
        page.canonical_url = read.canonical_url
        page.links = read.links
    elif record.body is not None:
        if _looks_binary(record.body):
            return None, [Skipped(record.where, "binary content labelled as HTML")]
        try:
            parsed = extract(record.body, url, record.content_type, weights)
        except Exception as error:  # a parser failure on one page must not stop the build
            return None, [Skipped(record.where, f"cannot parse HTML ({type(error).__name__}: {error})")]
        page.title = parsed.title
        page.canonical_url = parsed.canonical_url
        page.links = [(link.url, link.nofollow, link.weight, link.anchor_text) for link in parsed.links]
    return page, []


def _parser_start() -> None:
    """A parser process leaves Ctrl-C to the build, which ends it (no traceback from each parser), and ends at
    SIGTERM, as the pool ends it (whatever the build's process does at SIGTERM)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _parsers(jobs: int):
    """The parsers' pool, its processes forked with SIGTERM at its default: a process forked from a build that
    has threads may wait for ever on a lock it inherited held, before it runs a line of its own, and then only
    the default action of the pool's SIGTERM ends it (a handler of the build's, written in Python, never runs)."""
    main = threading.current_thread() is threading.main_thread()
    was = signal.signal(signal.SIGTERM, signal.SIG_DFL) if main else None
    try:
        return multiprocessing.get_context("fork").Pool(jobs, initializer=_parser_start)
    finally:
        if main:
            signal.signal(signal.SIGTERM, was)


def _prepare_chunk(
    records: Sequence[Record], weights: LinkWeights = LinkWeights.UNIFORM
) -> list[tuple[PageData | None, list[Skipped]]]:
    return [prepare(record, weights) for record in records]


@dataclass
class PlannedSource:
    """A source as the build will read it: the name given, its format and, for a source at URLs (a URL, or a
    ``*.paths.gz`` listing of files at URLs), ``files``, the URLs to read (at most ``--limit`` of a
    listing's); ``kind``, 'vertices' or 'edges', for a Common Crawl graph's files at URLs."""

    name: str
    format: str
    files: list[str] | None = None
    kind: str | None = None

    @property
    def remote(self) -> bool:
        return self.files is not None


def is_remote_source(name: str) -> bool:
    """Whether a source is read over HTTP: a URL, or a listing whose first line names no file beside it (a
    local listing of parts on disk is read as a Common Crawl graph's parts, as it always was)."""
    if is_url(name):
        return True
    if not (is_listing(name) and os.path.isfile(name)):
        return False
    from .sources.ccgraph import _listed

    try:
        parts = _listed(name)
    except SourceError:
        return False
    return not parts or not os.path.exists(parts[0])


def check_sources(
    sources: Sequence[str],
    fmt: str | None,
    base_url: str | None = None,
    paths_base: str = DEFAULT_PATHS_BASE,
    limit: int | None = None,
    policy: RetryPolicy | None = None,
) -> list[PlannedSource]:
    """Each source as it will be read; SourceError (one line) for one that cannot be used at all.

    A source at URLs is asked for its listing and the head of its first file
    (a later one if that one is missing): a base that cannot be reached is
    said here, before the build begins.
    """
    planned = []
    for path in sources:
        if is_remote_source(path):
            planned.append(_plan_remote(path, fmt, paths_base, limit, policy))
            continue
        if not os.path.exists(path):
            raise SourceError(f"{path}: no such file or directory")
        if not os.access(path, os.R_OK):
            raise SourceError(f"{path}: permission denied")
        source_format = fmt or detect_format(path)
        if source_format == "html":
            check_html_dir(path, base_url)
        if source_format == "record":
            check_record(path)
        planned.append(PlannedSource(path, source_format))
    graphs = [source for source in planned if source.format == "ccgraph"]
    if graphs:
        _graph_parts(graphs)  # both halves of the graph are there
    for source in planned:
        if source.format in RANK_FORMATS:
            from .sources.ccranks import ranks_level

            ranks_level(source.name)  # its header names a level
    return planned


_HEAD_TRIES = 3  # files of a listing asked for its format before giving up: one may be missing


def _plan_remote(
    name: str, fmt: str | None, paths_base: str, limit: int | None, policy: RetryPolicy | None
) -> PlannedSource:
    files = read_listing(name, paths_base, limit, policy).files if is_listing(name) else [name]
    head, missing = None, None
    for url in files[:_HEAD_TRIES]:
        try:
            head = read_head(url, policy)
            break
        except TransferError as error:
            if error.status is None or len(files) == 1:  # unreachable, or the one file named
                raise SourceError(str(error)) from error
            missing = error
    if head is None:
        raise SourceError(f"{name}: none of its first {_HEAD_TRIES} files can be read ({missing})")
    source_format = fmt or format_of_head(url, head)
    kind = None
    if source_format == "ccgraph":
        from .sources.ccgraph import looks_like_cc_edges, looks_like_cc_vertices

        text = gunzipped_head(head)
        kind = "vertices" if looks_like_cc_vertices(text) else "edges" if looks_like_cc_edges(text) else None
        if kind is None:
            raise SourceError(f"{url}: neither the vertices nor the edges of a Common Crawl graph")
    if source_format not in ("warc", "wat", "edges", "ccgraph", *RANK_FORMATS):
        raise SourceError(f"{name}: a {source_format} source is not read from a URL (give it as a file)")
    return PlannedSource(name, source_format, files, kind)


def format_of_head(url: str, head: bytes) -> str:
    """The format of a file at a URL, told as :func:`detect_format` tells a file's: from its first bytes,
    in a small file of their own named as the URL's last segment."""
    suffix = "-" + os.path.basename(url.split("?")[0].split("#")[0])[-80:]
    with tempfile.NamedTemporaryFile(suffix=suffix) as sample:
        sample.write(head)
        sample.flush()
        try:
            return detect_format(sample.name)
        except SourceError as error:
            raise SourceError(str(error).replace(sample.name, url)) from error


def _graph_parts(graphs: Sequence[PlannedSource]) -> tuple[list[str], list[str]]:
    """(vertex parts, edge parts) of a Common Crawl graph's sources: paths or URLs, in order."""
    from .sources.ccgraph import _kind, _parts_of, cc_parts

    if not any(source.remote for source in graphs):
        return cc_parts([source.name for source in graphs])
    found: dict[str, list[str]] = {"vertices": [], "edges": []}
    for source in graphs:
        parts = source.files if source.files is not None else _parts_of(source.name)
        kind = source.kind if source.remote else _kind(source.name, parts)
        if kind is None:
            raise SourceError(f"{source.name}: neither the vertices nor the edges of a Common Crawl graph")
        found[kind].extend(parts)
    for kind in ("vertices", "edges"):
        if not found[kind]:
            raise SourceError(f"{graphs[0].name}: no Common Crawl {kind} parts found")
    return found["vertices"], found["edges"]


@dataclass
class BuildProgress:
    """How far a build has gone, as it goes: the input read, and what came of it so far."""

    bytes_read: int = 0
    pages: int = 0  # pages done (a page source's records parsed; a graph's pages given their links)
    read: int = 0  # a page source's records read from its input, parsed or not yet (``pages`` of them done)
    links: int = 0  # links parsed (before repeats within a page are dropped), or a graph's links stored
    graph: bool = False  # a graph source is being read: its links are the count that moves
    files: int = 0  # files read or passed over: each file at a URL, each other source as one
    files_total: int = 0
    remote: bool = False  # some files are at URLs: their sizes are not known ahead, their count is


ProgressCallback = Callable[[BuildProgress], None]


P = ParamSpec("P")


def _forgets_a_build_the_disk_cut_short(function: Callable[P, BuildReport]) -> Callable[P, BuildReport]:
    """A build whose first transaction met a full disk leaves no record of itself (:meth:`Store.forget_build`):
    the store is as it was, the rankings not stale.  Either way the error raised says which, in one line."""

    @functools.wraps(function)
    def building(*args: P.args, **kwargs: P.kwargs) -> BuildReport:
        store = args[0] if args else kwargs["store"]
        assert isinstance(store, Store)
        last = store.last_build()
        sites = store.sites.site_count()
        try:
            return function(*args, **kwargs)
        except (sqlite3.Error, OSError) as error:
            said = explain(store.path, error)
            if not isinstance(said, StoreFull):
                raise
            ours = store.last_build()
            if ours is not None and ours != last and store.forget_build(ours, sites):
                raise StoreFull(
                    f"{store.path}: the disk is full; the build was rolled back and the store is as it was "
                    "before it: free some space and run the build again"
                ) from error
            raise StoreFull(
                f"{store.path}: the disk is full; the build stopped at its last commit and the previous graph "
                "and rankings are still served: free some space and run the build again to finish it"
            ) from error

    return building


@_forgets_a_build_the_disk_cut_short
def build(
    store: Store,
    sources: Sequence[str],
    fmt: str | None = None,
    base_url: str | None = None,
    progress: ProgressCallback | None = None,
    jobs: int | None = None,
    commit_every: int = 20000,
    scheme: str = "https",
    paths_base: str = DEFAULT_PATHS_BASE,
    limit: int | None = None,
    reread: bool = False,
    planned: list[PlannedSource] | None = None,
    policy: RetryPolicy | None = None,
    link_weights: LinkWeights = LinkWeights.UNIFORM,
) -> BuildReport:
    """Load ``sources`` into ``store``; ``progress`` is called with a :class:`BuildProgress` as input is read.

    ``scheme`` is that of the root pages made of a Common Crawl graph's hosts.
    Sources at URLs: a listing's paths are resolved against ``paths_base``,
    and only its first ``limit`` files are read; files an earlier build took
    whole are passed over unless ``reread``.  ``planned``: what
    :func:`check_sources` made of ``sources``, if the caller asked already.  ``link_weights``: how the
    links of HTML pages are weighed (:class:`~rankstore.extract.Placement`); graphs keep their own.
    """
    if planned is None:
        planned = check_sources(sources, fmt, base_url, paths_base, limit, policy)
    pages_sources = [source for source in planned if source.format not in GRAPH_FORMATS + RANK_FORMATS]
    graph_sources = [source for source in planned if source.format in GRAPH_FORMATS]
    _check_ranks_levels(
        store,
        [
            name
            for source in planned
            if source.format in RANK_FORMATS
            for name in (source.files if source.files is not None else [source.name])
        ],
    )
    if jobs is None:
        jobs = min(2, os.cpu_count() or 1)
    remote_files = [url for source in planned if source.files is not None for url in source.files]
    before = set() if reread else store.sources.taken_files(remote_files)
    resumed = store.sources.interrupted_build(sources) if remote_files else None
    report = BuildReport(resumed if resumed is not None else store.begin_build(sources), continued=resumed is not None)
    if resumed is not None:
        report.links = store.continue_build(resumed)
    started = time.perf_counter()
    state = BuildProgress(
        files_total=len(remote_files) + sum(1 for source in planned if not source.remote), remote=bool(remote_files)
    )

    def advance(count: int) -> None:
        state.bytes_read += count
        if progress is not None:
            progress(state)

    def file_done(count: int = 1) -> None:
        state.files += count
        if progress is not None:
            progress(state)

    fetcher = Fetcher(policy or RetryPolicy.from_env(), closed=lambda _: file_done())

    def kept(read: Iterator, path: str, unreadable: Counter | None = None) -> Iterator[Any]:
        try:
            for item in read:
                if isinstance(item, Skipped):
                    report.skip(item)
                    if unreadable is not None:
                        unreadable[_file_of(item.where)] += item.count
                else:
                    yield item
        except SourceError as error:
            said = str(error)
            if is_url(path):  # said once, so that the report groups the files missing alike ("HTTP 404 ...")
                said = said.removeprefix(f"{path}: ")
            report.skip(Skipped(path, said))

    def taken(names: Iterable[str], unreadable: Counter) -> list[TakenFile]:
        """The files at URLs among ``names`` that came whole, as the store notes them."""
        streams = [fetcher.transfers.pop(name, None) for name in names]
        return [
            TakenFile(stream.url, stream.position, stream.checksum, unreadable[stream.url])
            for stream in streams
            if stream is not None and stream.complete
        ]

    visits: list[Visit] = []  # a record's views, written once its pages are

    def items(chosen: list[PlannedSource]) -> Iterator[Record | TakenFile]:
        for source in chosen:
            if source.files is None:
                read = (
                    read_record(source.name, advance, visits.append)
                    if source.format == "record"
                    else read_source(source.name, source.format, base_url, advance)
                )
                for record in kept(read, source.name):
                    state.read += 1  # done (``pages``) once parsed, a pool's work later
                    yield record
                file_done()
                continue
            for url in source.files:
                if url in before:
                    report.files_before += 1
                    file_done()
                    continue
                unreadable: Counter = Counter()
                for record in kept(read_remote(url, source.format, advance), url, unreadable):
                    state.read += 1
                    yield record
                yield from taken([url], unreadable)  # after its pages: noted once they are committed

    def note(files: list[TakenFile]) -> None:
        store.sources.record_taken_files(files, report.build_id)
        report.files_taken += len(files)

    site_links: LinkSorter | None = None  # a domain graph's links, written by the build's last transaction
    try:
        with fetcher.active():
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
                        note,
                        link_weights,
                    )
                finally:
                    writer.close()
                report.visits = store.visits.add(visits)
            # Graphs are written from this thread while the readers take the next block apart in a thread
            # of their own.  Each reader numbers its own vertices, so each has a loader of its own.
            state.graph = bool(graph_sources)
            for source in graph_sources:
                if source.format != "edges":
                    continue
                for name in source.files if source.files is not None else [source.name]:
                    if name in before:
                        report.files_before += 1
                        file_done()
                        continue
                    unreadable: Counter = Counter()
                    read = (
                        read_remote(name, "edges", advance)
                        if source.remote
                        else read_source(name, "edges", progress=advance)
                    )
                    with _GraphLoader(store, report, state, progress) as graph:
                        for batch in kept(read, name, unreadable):
                            graph.take(batch)
                        graph.finish()
                    site_links = _latest(site_links, graph.pending_site_links)
                    note(taken([name], unreadable))
                    if not source.remote:
                        file_done()
            web_graph = [source for source in graph_sources if source.format == "ccgraph"]
            if web_graph:
                from .sources.ccgraph import read_cc_graph

                vertices, edges = _graph_parts(web_graph)
                urls = [part for part in vertices + edges if is_url(part)]
                local = len(vertices) + len(edges) - len(urls)
                if urls and not local and all(url in before for url in urls):
                    # the whole graph was taken before (a graph is read whole: its edges need every vertex part)
                    report.files_before += len(urls)
                    file_done(len(urls))
                else:
                    unreadable = Counter()
                    with _GraphLoader(store, report, state, progress) as graph:
                        for batch in kept(
                            read_cc_graph(vertices, edges, scheme, advance), web_graph[0].name, unreadable
                        ):
                            graph.take(batch)
                        graph.finish()
                    site_links = _latest(site_links, graph.pending_site_links)
                    note(taken(urls, unreadable))
                    file_done(sum(1 for source in web_graph if not source.remote))
            # Ranks files: their hosts or sites numbered as read; their rankings written once the build is done,
            # so that they rank as of it.
            imported = []
            for source in planned:
                if source.format in RANK_FORMATS:
                    from .imported import read_cc_ranks_into

                    for name in source.files if source.files is not None else [source.name]:
                        imported.append(read_cc_ranks_into(store, name, report.skip, advance))
                        if not source.remote:
                            file_done()
        if progress is not None:
            progress(state)  # the pages' last links, parsed after the input was read
        report.gone = len(store.pages.gone_pages())
        report.older = store.pages.older_captures()
        report.pages = len(store.pages.written_pages()) - report.gone
        report.links += store.finish_build(
            report.build_id, report.pages, report.links, dict(report.skipped), site_links
        )
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM as the CLI raises it: the build says what it committed
        raise BuildInterrupted(report.build_id, store.interrupt_build(report.build_id)) from None
    finally:
        if site_links is not None:
            site_links.close()
    if imported:
        from .imported import write_imported

        for scores in imported:
            report.rankings += write_imported(store, scores)
    report.seconds = time.perf_counter() - started
    return report


_WHERE = re.compile(r"(@\d+|:\d+(-\d+)?)$")  # a reader's offset in a file, or its lines


def _file_of(where: str) -> str:
    """The file a reader's report names: its ``where`` without the offset or lines."""
    return _WHERE.sub("", where)


def _check_ranks_levels(store: Store, paths: Sequence[str]) -> None:
    """Ranks files load as ``cc-harmonic`` and ``cc-pagerank``, whose level a name keeps: a host file and a
    domain file cannot both be them.  Refused before anything is written (SourceError, one line)."""
    if not paths:
        return
    from .imported import CC_HARMONIC, CC_PAGERANK
    from .sources.ccranks import ranks_level

    levels = {path: ranks_level(path) for path in paths}
    if len(set(levels.values())) > 1:
        raise SourceError(
            f"{paths[0]} ranks {levels[paths[0]]}s and {next(p for p in paths if levels[p] != levels[paths[0]])} "
            f"ranks {next(v for v in levels.values() if v != levels[paths[0]])}s: both would be {CC_PAGERANK}, "
            "which ranks one level; load them into two stores"
        )
    level = levels[paths[0]]
    for name in (CC_HARMONIC, CC_PAGERANK):
        try:
            held = store.rankings.ranking(name).level
        except RankingNotFound:
            continue
        if held != level:
            raise SourceError(
                f"{paths[0]} ranks {level}s, but this store's {name} ranks {held}s (a name keeps its level): "
                "load it into another store"
            )


def _load_pages(
    records: Iterator[Record | TakenFile],
    writer: _Writer,
    report: BuildReport,
    jobs: int,
    commit_every: int,
    state: BuildProgress,
    progress: Callable[[], None],
    note: Callable[[list[TakenFile]], None],
    weights: LinkWeights = LinkWeights.UNIFORM,
) -> None:
    """Records -> pages with canonical URLs (in worker processes) -> the writer, in batches; ``state``
    counts the links as they come from the parsers.  A file taken whole (:class:`TakenFile`, after its
    records) is noted once everything before it is parsed and written: the parsers are drained first."""
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
            state.pages += 1  # a record parsed: the work the bar shows
            for problem in problems:
                report.skip(problem)
            if page is not None:
                pending.append(page)
                pending_links += len(page.links)
                state.links += len(page.links)
        if len(pending) >= commit_every or pending_links >= _BATCH_LINKS:
            flush()
        else:
            progress()  # the pages parsed move the bar

    with _parsers(jobs) if jobs > 1 else contextlib.nullcontext() as pool:
        inflight: deque = deque()

        def drain() -> None:
            while inflight:
                take(inflight.popleft().get())

        for chunk in _chunks(records, _CHUNK):
            if isinstance(chunk, TakenFile):
                drain()
                flush()
                writer.call(note, [chunk])
            elif pool is None:
                take(_prepare_chunk(chunk, weights))
            else:
                inflight.append(pool.apply_async(_prepare_chunk, (chunk, weights)))
                if len(inflight) >= jobs * 8:
                    take(inflight.popleft().get())
                while inflight and inflight[0].ready():  # taken as parsed: the pages done move the bar
                    take(inflight.popleft().get())
        drain()
    flush()


class _GraphLoader:
    """Graph batches -> pages and links: each new vertex's URL in normal form, once; links as arrays.

    A graph whose vertices are sites (a Common Crawl domain graph) becomes sites and site links: its
    vertices are numbered in one transaction (so that a build cut short leaves no half-numbered graph,
    and the sites' name index is made once, at the end), its edges gathered by target in bounded memory
    (:class:`~rankstore.linksort.LinkSorter`), which :attr:`pending_site_links` hands to the build's end
    to replace the store's site links in its last transaction.  Use as a context manager: an error rolls
    the vertices back and drops the gathered links.
    """

    def __init__(
        self, store: Store, report: BuildReport, state: BuildProgress, progress: ProgressCallback | None = None
    ):
        self.store = store
        self.report = report
        self.state = state
        self.progress = progress  # told after each batch: a reader reads ahead of what is stored
        self.pages: np.ndarray = np.zeros(0, dtype=np.int64)  # vertex number -> page id (site id); 0: not kept
        self.sources: list[np.ndarray] = []  # page ids of the pages whose links were written
        self.of_sites = False  # the vertices are sites (a domain graph's): its links are site links
        self.site_ids: list[np.ndarray] = []  # a domain graph's vertices' site ids, batch by batch
        self.vertices: Transaction | None = None  # the transaction numbering a domain graph's vertices
        self.site_links: LinkSorter | None = None  # its links, gathered by target
        self.named_before = 0  # the store's count of names given twice when the vertices began
        self.pending_site_links: LinkSorter | None = None  # its links once read, for the build's end to write
        self.held: tuple[np.ndarray, np.ndarray, None] | None = None  # the last batch of links, not yet written
        self.seen: np.ndarray | None = None  # by page id: a source of a batch of links taken so far
        self.gathered: EdgeRuns | None = None  # the links, once the graph's sources recur across batches

    def __enter__(self) -> _GraphLoader:
        return self

    def __exit__(self, kind, error, trace) -> None:
        if self.vertices is not None:
            self.vertices.__exit__(kind or RuntimeError, error, trace)  # rolled back: the graph was not read
            self.vertices = None
            self.store.sites.abandon_bulk()
        if self.site_links is not None:
            self.site_links.close()
        if self.gathered is not None:
            self.gathered.close()

    def take(self, batch: EdgeBatch) -> None:
        if batch.urls:
            self._add_vertices(batch)
        if len(batch.sites):
            if self.vertices is None and not self.of_sites:
                self.vertices = self.store.transaction()
                self.vertices.__enter__()
                self.named_before = self.store.sites.named_again
            self.site_ids.append(self.store.sites.ensure_sites(batch.sites, batch.site_hosts).astype(np.int32))
            self.of_sites = True
        if len(batch.src) and self.of_sites:
            sorter = self._sites_numbered()
            sorter.add(self.pages[batch.src] - 1, self.pages[batch.dst] - 1)
            self.state.links += len(batch.src)
            if self.progress is not None:
                self.progress(self.state)
        elif len(batch.src):
            src, dst = self.pages[batch.src], self.pages[batch.dst]
            kept = (src > 0) & (dst > 0)
            dropped = len(kept) - int(kept.sum())
            if dropped:
                self.report.skipped["link to or from a URL that is not http(s)"] += dropped
            if batch.weights is not None:
                self._write(src[kept], dst[kept], batch.weights[kept])
            else:
                self._take_plain(src[kept], dst[kept])

    def _take_plain(self, src: np.ndarray, dst: np.ndarray) -> None:
        """A batch of links without weights: written a batch behind, while its sources come once; once they
        recur across batches, gathered (with the batch held back) and written by source at the end."""
        if self.gathered is None:
            seen = np.zeros(0, dtype=bool) if self.seen is None else self.seen
            if len(src) and int(src.max()) >= len(seen):
                seen = np.concatenate([seen, np.zeros(max(int(src.max()) + 1, 2 * len(seen)) - len(seen), bool)])
            again = src[seen[src]]
            # a source cut between two batches of a sorted graph recurs once: not a reason to gather
            if len(again) and len(np.unique(again)) > _RECURRING_SOURCES:
                self.gathered = EdgeRuns(os.path.dirname(os.path.abspath(self.store.path)), _GATHER_LINKS)
                self.seen = None
            else:
                seen[src] = True
                self.seen = seen
                if self.held is not None:
                    self._write(*self.held)
                self.held = (src, dst, None)
                return
        if self.held is not None:
            self.gathered.add(self.held[0], self.held[1])
            self.held = None
        self.gathered.add(src, dst)

    def _write(self, src: np.ndarray, dst: np.ndarray, weights: np.ndarray | None) -> None:
        sources, links = self.store.pages.write_edges(src, dst, weights, self.report.build_id)
        stop_at("graph-links")
        self.sources.append(sources)
        self.report.links += links
        self.state.links += links
        self.state.pages = len(self.store.pages.written_pages())
        if self.progress is not None:
            self.progress(self.state)

    def _sites_numbered(self) -> LinkSorter:
        """Once a domain graph's vertices are all read: their numbering committed, and the sorter its links go
        to.  A site name given twice keeps its first id (the vertices naming it all link as that site)."""
        if self.site_links is None:
            sites = np.concatenate(self.site_ids) if self.site_ids else np.zeros(0, dtype=np.int32)
            self.site_ids = []
            assert self.vertices is not None
            again = self.store.sites.reindex()
            if again:
                repeated = np.isin(sites, np.fromiter(again, dtype=np.int32, count=len(again)))
                sites[repeated] = [again[number] for number in sites[repeated].tolist()]
            twice = len(again) + self.store.sites.named_again - self.named_before
            if twice:
                self.report.skipped["site named twice (its vertices linked as the first)"] += twice
            self.vertices.__exit__(None, None, None)
            self.vertices = None
            self.pages = sites
            self.site_links = LinkSorter(self.store.sites.site_count(), spill_folder(self.store.path))
        return self.site_links

    def finish(self) -> None:
        """Mark the graph's source pages crawled, or store its site links, once the whole graph is read."""
        if self.held is not None:
            self._write(*self.held)
            self.held = None
        if self.gathered is not None:
            with self.gathered as gathered:
                for keys in gathered.grouped(_BATCH_GATHERED):
                    self._write(*split_keys(keys), None)
            self.gathered = None
        if self.sources:
            self.store.pages.mark_crawled(np.concatenate(self.sources), self.report.build_id)
        self.sources = []
        if self.of_sites:
            # written in the build's last transaction, with its end: a reader meets the old site links whole
            # until then, beside the site ranking made of them
            self.pending_site_links = self._sites_numbered()
            self.site_links = None

    def _add_vertices(self, batch: EdgeBatch) -> None:
        normal = canonical_many(batch.urls)
        for url, found in zip(batch.urls, normal):
            if found is None:
                self.report.skip(Skipped(batch.where, f"not an http(s) URL ({url[:100]!r})"))
        kept = [url for url in normal if url is not None]
        ids = np.zeros(len(normal), dtype=np.int64)
        if kept:
            with self.store.transaction():
                ids[[i for i, url in enumerate(normal) if url is not None]] = self.store.pages.page_ids(kept)
            stop_at("graph-vertices")
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
            stop_at("pages-parsed")
            self.call(self._write_pages, batch)

    def _write_pages(self, batch: list[PageData]) -> None:
        self.report.links += self.store.pages.write_pages(batch, self.report.build_id)
        stop_at("pages-written")

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


def _latest(held: LinkSorter | None, new: LinkSorter | None) -> LinkSorter | None:
    """The domain graph's links the build's end writes: the last graph read replaces those before it."""
    if new is None:
        return held
    if held is not None:
        held.close()
    return new


def _chunks(items: Iterable, size: int) -> Iterator[list | TakenFile]:
    """Lists of at most ``size`` records; a file taken whole comes between them, as itself."""
    chunk: list = []
    for item in items:
        if isinstance(item, TakenFile):
            if chunk:
                yield chunk
                chunk = []
            yield item
            continue
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def total_size(sources: Sequence[str]) -> int:
    """Bytes of the sources on disk (those at URLs are not counted: their size is known as they come)."""
    return sum(source_size(path) for path in sources if not is_remote_source(path))
