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

The folder is marked (``EXTRACT``) and keeps a ledger of the files done
(``done.jsonl``: each file's name, size and SHA-256, and its counts), written
after the file's parts are renamed into place: a run cut short loses at most
the files in hand, and the next run skips the files done (the same name, size
and checksum).  A file that cannot be read is named, counted and skipped; the
others go on.  ``rankstore build FOLDER`` reads the parts back as pages
(:mod:`rankstore.sources.extracted`), each page's links as listed.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field

from .choices import EXTRACT_ENGINES as ENGINES
from .sources import Record, Skipped, SourceError
from .sources.extracted import FORMAT, LEDGER, MARKER, VERSION, FileDone, read_ledger

__all__ = ["ENGINES", "ExtractReport", "ExtractError", "extract", "extract_file", "read_sites"]

# each part's columns and their Arrow types (named here, pyarrow imported where a file is written)
_LINK_COLUMNS = {
    "source": "string", "target": "string", "anchor": "string", "nofollow": "bool_", "fetched_at": "string",
}  # fmt: skip
_PAGE_COLUMNS = {"url": "string", "status": "int32", "title": "string", "canonical": "string", "fetched_at": "string"}


class ExtractError(Exception):
    """What makes an extraction impossible (its folder, its sites), said in one line."""


@dataclass
class ExtractReport:
    """What a run did: the files extracted now, those done before (skipped), those that failed."""

    done: list[FileDone] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (file, why)

    @property
    def pages(self) -> int:
        return sum(item.pages for item in self.done)

    @property
    def links(self) -> int:
        return sum(item.links for item in self.done)


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


def _digest(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _part_name(path: str, digest: str) -> str:
    base = os.path.basename(path).split(".")[0] or "part"
    return f"{base}-{digest[:16]}"


def extract_file(path: str, out: str, sites: frozenset[str] | None = None) -> FileDone:
    """One crawl file's pages and links written to ``out`` (see the module docstring); raises
    :class:`~rankstore.sources.SourceError` (or OSError) for a file that cannot be read at all."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .build import prepare
    from .sources import detect_format, read_source
    from .urls import host_of, site_of

    fmt = detect_format(path)
    if fmt not in ("warc", "wat"):
        raise SourceError(f"{path}: a {fmt} source; extract reads WARC and WAT files")
    size, digest = os.path.getsize(path), _digest(path)
    links: dict[str, list] = {name: [] for name in _LINK_COLUMNS}
    pages: dict[str, list] = {name: [] for name in _PAGE_COLUMNS}
    skipped = 0
    site_cache: dict[str, bool] = {}

    def wanted(target: str) -> bool:
        host = host_of(target)
        known = site_cache.get(host)
        if known is None:
            known = site_cache[host] = site_of(host) in sites if sites is not None else True
        return known

    for item in read_source(path, fmt):
        if isinstance(item, Skipped):
            skipped += 1
            continue
        if not isinstance(item, Record):
            continue
        page, problems = prepare(item)
        skipped += len(problems)
        if page is None:
            continue
        kept = [link for link in page.links if wanted(link[0])]
        if sites is not None and not kept:
            continue
        for target, nofollow, _weight, anchor in kept:
            links["source"].append(page.url)
            links["target"].append(target)
            links["anchor"].append(anchor)
            links["nofollow"].append(bool(nofollow))
            links["fetched_at"].append(page.fetched_at)
        pages["url"].append(page.url)
        pages["status"].append(page.status)
        pages["title"].append(page.title)
        pages["canonical"].append(page.canonical_url)
        pages["fetched_at"].append(page.fetched_at)
    part = _part_name(path, digest)
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
    return FileDone(path, size, digest, part, len(pages["url"]), len(links["source"]), skipped)


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


def _one(args: tuple[str, str, frozenset[str] | None]) -> FileDone | tuple[str, str]:
    path, out, sites = args
    try:
        return extract_file(path, out, sites)
    except (SourceError, OSError) as error:
        return path, str(error)
    except Exception as error:  # a file that breaks the reader: named and skipped, the others go on
        return path, f"{type(error).__name__}: {error}"


def extract(
    paths: Sequence[str],
    out: str,
    sites: Sequence[str] | None = None,
    jobs: int = 1,
    engine: str = "local",
    said: Callable[[str], None] | None = None,
) -> ExtractReport:
    """Extract every file of ``paths`` not done already into ``out``, ``jobs`` at a time (processes)."""
    if engine not in ENGINES:
        raise ExtractError(f"engine {engine!r}: choose from {', '.join(ENGINES)}")
    wanted = _site_names(sites) if sites else None
    _mark(out)
    done = read_ledger(out)
    report = ExtractReport()
    todo = []
    for path in paths:
        held = done.get(path)
        if held is not None and os.path.isfile(path) and os.path.getsize(path) == held.size:
            if _digest(path) == held.sha256:
                report.already.append(path)
                continue
        todo.append((path, out, wanted))
    if not todo:
        return report
    with open(os.path.join(out, LEDGER), "a", encoding="utf-8") as ledger:
        results: Iterator[FileDone | tuple[str, str]]
        if jobs > 1 and len(todo) > 1:
            pool = multiprocessing.get_context("fork").Pool(min(jobs, len(todo)))
            results = pool.imap_unordered(_one, todo)
        else:
            pool = None
            results = map(_one, todo)
        try:
            for count, result in enumerate(results, 1):
                if isinstance(result, FileDone):
                    ledger.write(json.dumps(asdict(result)) + "\n")
                    ledger.flush()
                    report.done.append(result)
                else:
                    report.failed.append(result)
                if said is not None:
                    pages, links = report.pages, report.links
                    said(f"{count:,} of {len(todo):,} files, {pages:,} pages, {links:,} links")
        finally:
            if pool is not None:
                pool.terminate()
    return report
