"""Crawl files -> Parquet of their links and pages: ``rankstore extract``, and ``rankstore build`` of its output.

An analyst's question of a whole crawl is "who links to these sites": each
WARC or WAT file is read once, its pages parsed by the build's own code
(:func:`rankstore.build.prepare`: the same canonical URLs, nofollow and anchor
texts a build stores), and what is kept written as Parquet, one part a file:

* ``links/part-NAME.parquet``: source page, target URL, anchor text, nofollow
  (``rel`` nofollow, ugc or sponsored, as the store counts them), capture time;
  with ``sites`` only the links into those sites (registered domains, as the
  site level reads them);
* ``pages/part-NAME.parquet``: URL, status, title, canonical link, capture
  time, of every page read (with ``sites``, of the pages that link into them).

Files are paths, ``http(s)://`` URLs (streamed, never saved) and ``*.paths.gz``
listings of them (Common Crawl's ``wat.paths.gz``).  The folder is marked
(``EXTRACT``) and keeps a ledger of the files done (``done.jsonl``: each
file's name, size and checksum, and its counts), written after the file's
parts are renamed into place: a run cut short loses at most the files in
hand, and the next run skips the files done (a path of the same size and
SHA-256; a URL done, whose file a crawl's archive never changes).  A file
that cannot be read is named, counted and skipped; the others go on.

``engine="local"`` reads the files in a process pool; ``"spark"`` hands each
file to a Spark executor (:mod:`rankstore.spark.extract`), which runs
:func:`extract_file` itself: one implementation, wherever it runs.
``rankstore build FOLDER`` reads the parts back as pages
(:mod:`rankstore.sources.extracted`), each page's links as listed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .choices import EXTRACT_ENGINES as ENGINES
from .sources import DEFAULT_PATHS_BASE, Record, Skipped, SourceError
from .sources.extracted import FORMAT, LEDGER, MARKER, VERSION, FileDone, FileFailed, read_ledger

__all__ = ["ENGINES", "ExtractReport", "ExtractError", "FileTask", "SparkOptions", "expand", "extract", "extract_file",
           "read_sites", "run_task"]  # fmt: skip

# each part's columns and their Arrow types (named here, pyarrow imported where a file is written)
_LINK_COLUMNS = {
    "source": "string", "target": "string", "anchor": "string", "nofollow": "bool_", "fetched_at": "string",
}  # fmt: skip
_PAGE_COLUMNS = {"url": "string", "status": "int32", "title": "string", "canonical": "string", "fetched_at": "string"}


class ExtractError(Exception):
    """What makes an extraction impossible (its folder, its sites), said in one line."""


@dataclass
class ExtractReport:
    """What a run did: the files extracted now, those done before (skipped), those that failed, and the done
    files' counts summed as they come (the progress line reads them after each of a crawl's 90,000 files)."""

    done: list[FileDone] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    failed: list[FileFailed] = field(default_factory=list)
    records: int = 0
    pages: int = 0
    links: int = 0

    def add(self, result: FileDone | FileFailed) -> None:
        if isinstance(result, FileFailed):
            self.failed.append(result)
            return
        self.done.append(result)
        self.records += result.records
        self.pages += result.pages
        self.links += result.links


def read_sites(path: str) -> list[str]:
    """The sites of a file, one a line (``#`` comments and blank lines apart)."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = [line.split("#", 1)[0].strip() for line in handle]
    except OSError as error:
        raise ExtractError(f"{path}: {error.strerror}") from None
    return [line for line in lines if line]


def _site_names(sites: Sequence[str]) -> frozenset[str]:
    """Registered domains, as ``site_of`` names them (a host or URL given is taken as its site)."""
    from .urls import canonical, host_of, site_of

    names = set()
    for given in sites:
        normal = canonical(given if "://" in given else f"http://{given}/")
        if normal is None:
            raise ExtractError(f"{given!r}: not a site (give a registered domain, as example.com)")
        names.add(site_of(host_of(normal)))
    return frozenset(names)


@dataclass(frozen=True)
class FileTask:
    """One crawl file to extract (a path or a URL), the folder its parts go to, and the sites kept (None: all)."""

    file: str
    out: str
    sites: frozenset[str] | None = None


def _checksum(path: str) -> str:
    with open(path, "rb") as handle:
        return "sha256:" + hashlib.file_digest(handle, "sha256").hexdigest()


def _part_name(name: str, checksum: str) -> str:
    base = os.path.basename(name.split("?", 1)[0].rstrip("/")).split(".")[0] or "part"
    return f"{base}-{checksum.split(':', 1)[-1][:16]}"


def _records(name: str, fetcher) -> tuple[str, Iterator]:
    """A crawl file's format and its records: a path read from disk, a URL streamed through ``fetcher``."""
    from .sources import detect_format, read_remote, read_source
    from .sources.remote import is_url, read_head

    if is_url(name):
        from .build import format_of_head

        fmt = format_of_head(name, read_head(name, fetcher.policy))
        return fmt, read_remote(name, fmt) if fmt in ("warc", "wat") else iter(())
    fmt = detect_format(name)
    return fmt, read_source(name, fmt) if fmt in ("warc", "wat") else iter(())


def extract_file(path: str, out: str, sites: frozenset[str] | None = None) -> FileDone:
    """One crawl file's pages and links written to ``out`` (see the module docstring); raises
    :class:`~rankstore.sources.SourceError` (or OSError) for a file that cannot be read at all, and for
    a URL whose transfer was cut short for good."""
    from .build import prepare
    from .sources.remote import Fetcher, TransferError, is_url
    from .urls import host_of, site_of

    fetcher = Fetcher()
    remote = is_url(path)
    try:
        with fetcher.active():
            fmt, items = _records(path, fetcher)
    except TransferError as error:
        raise SourceError(str(error)) from error
    if fmt not in ("warc", "wat"):
        raise SourceError(f"{path}: a {fmt} source; extract reads WARC and WAT files")
    links: dict[str, list] = {name: [] for name in _LINK_COLUMNS}
    pages: dict[str, list] = {name: [] for name in _PAGE_COLUMNS}
    skipped = records = 0
    site_cache: dict[str, bool] = {}

    def wanted(target: str) -> bool:
        host = host_of(target)
        known = site_cache.get(host)
        if known is None:
            known = site_cache[host] = site_of(host) in sites if sites is not None else True
        return known

    with fetcher.active():
        for item in items:
            if isinstance(item, Skipped):
                skipped += 1
                continue
            if not isinstance(item, Record):
                continue
            page, problems = prepare(item)
            skipped += len(problems)
            if page is None:
                continue
            records += 1
            _keep(page, wanted if sites is not None else None, links, pages)
    if remote:
        stream = fetcher.transfers.get(path)
        if stream is None or not stream.complete:
            raise SourceError(f"{path}: the transfer ended before the file's end")
        size, checksum = stream.position, stream.checksum
    else:
        size, checksum = os.path.getsize(path), _checksum(path)
    part = _part_name(path, checksum)
    _write_parts(out, part, links, pages)
    return FileDone(path, size, checksum, part, len(pages["url"]), len(links["source"]), skipped, records)


def _keep(page, wanted: Callable[[str], bool] | None, links: dict[str, list], pages: dict[str, list]) -> None:
    """A page's links (those ``wanted``; every one without a test) and the page itself, unless a test is given
    and no link of the page passes it.  Columns are extended a page at a time (a crawl has billions of links)."""
    kept = page.links if wanted is None else [link for link in page.links if wanted(link[0])]
    if wanted is not None and not kept:
        return
    if kept:
        targets, nofollows, _weights, anchors = zip(*kept)
        links["source"].extend([page.url] * len(kept))
        links["target"].extend(targets)
        links["anchor"].extend(anchors)
        links["nofollow"].extend(map(bool, nofollows))
        links["fetched_at"].extend([page.fetched_at] * len(kept))
    pages["url"].append(page.url)
    pages["status"].append(page.status)
    pages["title"].append(page.title)
    pages["canonical"].append(page.canonical_url)
    pages["fetched_at"].append(page.fetched_at)


def _write_parts(out: str, part: str, links: dict[str, list], pages: dict[str, list]) -> None:
    """A file's two parts, each written beside its place and renamed into it: whole or absent."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = {
        "links": pa.table(links, schema=_schema(pa, _LINK_COLUMNS)),
        "pages": pa.table(pages, schema=_schema(pa, _PAGE_COLUMNS)),
    }
    for name, table in tables.items():
        folder = os.path.join(out, name)
        os.makedirs(folder, exist_ok=True)
        final = os.path.join(folder, f"part-{part}.parquet")
        pq.write_table(table, final + ".part")
        os.replace(final + ".part", final)  # whole or absent


def _schema(pa, columns: dict[str, str]):
    return pa.schema([(name, getattr(pa, kind)()) for name, kind in columns.items()])


def _mark(out: str) -> None:
    """``out`` made (or found) as an extraction's folder; another folder with files in it is refused."""
    marker = os.path.join(out, MARKER)
    if os.path.isdir(out) and not os.path.exists(marker) and os.listdir(out):
        raise ExtractError(f"{out}: a folder of other files (no {MARKER}): give an empty or new folder")
    os.makedirs(out, exist_ok=True)
    if not os.path.exists(marker):
        with open(marker + ".tmp", "w", encoding="utf-8") as handle:
            json.dump({"format": FORMAT, "version": VERSION}, handle)
        os.replace(marker + ".tmp", marker)


def run_task(task: FileTask) -> FileDone | FileFailed:
    """One file extracted, or why it could not be: what a process of the pool, or a Spark executor, runs."""
    try:
        return extract_file(task.file, task.out, task.sites)
    except (SourceError, OSError) as error:
        return FileFailed(task.file, str(error))
    except Exception as error:  # a file that breaks the reader: named and skipped, the others go on
        return FileFailed(task.file, f"{type(error).__name__}: {error}")


def expand(sources: Sequence[str], paths_base: str = DEFAULT_PATHS_BASE, limit: int | None = None) -> list[str]:
    """The crawl files of ``sources``: paths and URLs as given, a ``*.paths.gz`` listing as the files it names
    (its first ``limit``), resolved against ``paths_base``."""
    from .sources.remote import is_listing, read_listing

    files: list[str] = []
    for name in sources:
        if is_listing(name):
            try:
                files.extend(read_listing(name, paths_base, limit).files)
            except SourceError as error:
                raise ExtractError(str(error)) from None
        else:
            files.append(name)
    return list(dict.fromkeys(files))  # a file named twice is read once


def _is_done(name: str, held: FileDone | None) -> bool:
    """Was this file extracted already: a URL done (an archive's files never change), a path of the same size
    and checksum."""
    from .sources.remote import is_url

    if held is None:
        return False
    if is_url(name):
        return True
    return os.path.isfile(name) and os.path.getsize(name) == held.size and _checksum(name) == held.checksum


def extract(
    sources: Sequence[str],
    out: str,
    sites: Sequence[str] | None = None,
    jobs: int = 1,
    engine: str = "local",
    said: Callable[[str], None] | None = None,
    paths_base: str = DEFAULT_PATHS_BASE,
    limit: int | None = None,
    spark: SparkOptions | None = None,
) -> ExtractReport:
    """Extract every file of ``sources`` (:func:`expand`) not done already into ``out``: ``jobs`` at a time in
    processes of this machine, or on Spark's executors (``spark``: its master and settings, or a session)."""
    if engine not in ENGINES:
        raise ExtractError(f"engine {engine!r}: choose from {', '.join(ENGINES)}")
    wanted = _site_names(sites) if sites else None
    files = expand(sources, paths_base, limit)
    _mark(out)
    done = read_ledger(out)
    report = ExtractReport()
    todo = []
    for name in files:
        if _is_done(name, done.get(name)):
            report.already.append(name)
        else:
            todo.append(FileTask(name, out, wanted))
    if not todo:
        return report
    ledger_path = os.path.join(out, LEDGER)
    with open(ledger_path, "a", encoding="utf-8") as ledger, _results(todo, jobs, engine, spark) as results:
        for count, result in enumerate(results, 1):
            if isinstance(result, FileDone):
                ledger.write(json.dumps(asdict(result)) + "\n")
                ledger.flush()
            report.add(result)
            if said is not None:
                said(
                    f"{count:,} of {len(todo):,} files, {report.records:,} records, {report.links:,} links"
                    + (f", {len(report.failed):,} failed" if report.failed else "")
                )
    return report


@dataclass(frozen=True)
class SparkOptions:
    """Where ``engine="spark"`` runs: a master URL and settings, or a session already started (spark-submit's)."""

    master: str = "local[*]"
    conf: dict[str, str] = field(default_factory=dict)
    session: Any = None


@contextlib.contextmanager
def _results(
    todo: list[FileTask], jobs: int, engine: str, spark: SparkOptions | None
) -> Iterator[Iterator[FileDone | FileFailed]]:
    """Each task's result as it comes, from the engine; what is still running is stopped on the way out."""
    if engine == "spark":
        from .spark.extract import extract_on_spark

        with extract_on_spark(todo, spark or SparkOptions()) as results:
            yield results
        return
    if jobs > 1 and len(todo) > 1:
        pool = multiprocessing.get_context("fork").Pool(min(jobs, len(todo)))
        try:
            yield pool.imap_unordered(run_task, todo)
        finally:
            pool.terminate()
        return
    yield map(run_task, todo)
