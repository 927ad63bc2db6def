"""Recording what the user browses: ``pagerank-proxy --record DIR`` (opt-in; off by default).

For each HTML page the PageRank addon annotates, one JSON line goes to ``DIR/pages-<UTCSTAMP>-<PID>.jsonl``:
the page's URL, status, title, fetch time and out-links (nofollow, anchor text), read by the build's own
extractor (:func:`rankstore.extract.extract`), so that ``rankstore build DIR`` finds the links a crawl of the
page finds.  With ``pagerank_record_warc`` the same responses go to ``DIR/responses-<UTCSTAMP>-<PID>.warc.gz``
too, one gzip member a record.  The format is the record contract's (docs/ARCHITECTURE.md, "The record").

Never recorded: the proxy's own pages (never annotated), a response to a request that carried an
``Authorization`` header, a host that matches a ``pagerank_record_exclude`` pattern, and the page URL's
query string unless ``pagerank_record_queries`` (link targets keep theirs: they are other pages' URLs).

The addon calls this one's hooks from its own, as it does :mod:`.deadlines`'.  A page's parse runs in a thread,
beside its rewrite, and its line is written before the client gets the page, with one ``write()`` on a file
opened ``O_APPEND``, unbuffered: a proxy killed outright loses at most the page it was answering.
"""

from __future__ import annotations

import asyncio
import fnmatch
import gzip
import io
import json
import logging
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from mitmproxy import ctx, exceptions, http

from rankstore.extract import extract
from rankstore.sources.record import PAGES_PREFIX, PAGES_SUFFIX, RECORD_FILE, RECORD_FORMAT, RECORD_VERSION
from rankstore.urls import canonical

from .bodies import decode

__all__ = [
    "RecordSettings",
    "RecordedLink",
    "RecordedPage",
    "ResponseHead",
    "Taken",
    "Recorder",
    "RecordFiles",
    "parse_record_settings",
    "private_reason",
    "recorded_page",
    "warc_member",
    "FORMAT",
    "VERSION",
]

log = logging.getLogger(__name__)
# the format as its reader (rankstore.sources.record) names it: one source for both sides
FORMAT, VERSION, MARKER = RECORD_FORMAT, RECORD_VERSION, RECORD_FILE
OPTIONS = ("pagerank_record", "pagerank_record_warc", "pagerank_record_exclude", "pagerank_record_queries")
_STAMP = "%Y%m%dT%H%M%SZ"
_WHEN = "%Y-%m-%dT%H:%M:%SZ"
# response headers a WARC keeps none of: the body is kept decoded and whole, and a cookie is the user's own
_WARC_DROPPED = frozenset(("content-encoding", "content-length", "transfer-encoding", "set-cookie"))


@dataclass(frozen=True)
class RecordSettings:
    """The recording options, checked."""

    directory: str
    warc: bool = False
    exclude: tuple[str, ...] = ()  # host patterns (fnmatch), lower case
    queries: bool = False


@dataclass(frozen=True)
class RecordedLink:
    url: str
    nofollow: bool
    anchor: str | None


@dataclass(frozen=True)
class RecordedPage:
    """One line of a record: a page as the proxy saw it, and a visit to it at ``fetched``."""

    url: str
    status: int
    title: str | None
    fetched: str  # UTC, to the second
    links: tuple[RecordedLink, ...]

    def line(self) -> bytes:
        """The page as one line of JSON, with its newline."""
        data = {
            "url": self.url,
            "status": self.status,
            "title": self.title,
            "fetched": self.fetched,
            "links": [{"url": link.url, "nofollow": link.nofollow, "anchor": link.anchor} for link in self.links],
        }
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


@dataclass(frozen=True)
class ResponseHead:
    """A response's status line and headers as they came, copied in the event loop: the rewrite then changes
    the response's own."""

    status: int
    reason: str
    fields: tuple[tuple[bytes, bytes], ...]

    @classmethod
    def of(cls, response: http.Response) -> ResponseHead:
        return cls(response.status_code, response.reason or "", tuple(response.headers.fields))

    def header(self, name: str) -> str | None:
        wanted = name.encode().lower()
        return next((value.decode("latin-1") for key, value in self.fields if key.lower() == wanted), None)


@dataclass(frozen=True)
class Taken:
    """A page's record made ready: its line, and its WARC member if one is kept."""

    page: RecordedPage
    warc: bytes | None


def parse_record_settings(directory: str, warc: bool, exclude: Sequence[str], queries: bool) -> RecordSettings | None:
    """Check the options; None while recording is off (no directory).  OptionsError if the directory cannot be
    a record (a file, or a folder of other files that no RECORD marks as one)."""
    if not directory:
        return None
    patterns = tuple(pattern.strip().lower().rstrip(".") for pattern in exclude if pattern.strip())
    problem = _directory_problem(directory)
    if problem:
        raise exceptions.OptionsError(f"pagerank_record: {directory}: {problem}")
    return RecordSettings(directory, warc, patterns, queries)


def _directory_problem(directory: str) -> str | None:
    if os.path.exists(directory) and not os.path.isdir(directory):
        return "not a directory"
    marker = os.path.join(directory, MARKER)
    if os.path.isfile(marker):
        try:
            with open(marker, encoding="utf-8") as file:
                head = json.load(file)
        except (OSError, ValueError) as error:
            return f"its {MARKER} file cannot be read ({error})"
        if not isinstance(head, dict) or head.get("format") != FORMAT:
            return f"its {MARKER} file is not a pagerank-proxy record's"
        if head.get("version") != VERSION:
            return f"a record of version {head.get('version')!r}; this proxy writes version {VERSION}"
        return None
    if os.path.isdir(directory) and os.listdir(directory):
        return f"not empty and not a record (no {MARKER} file): choose a new or empty directory"
    return None


def private_reason(flow: http.HTTPFlow, exclude: Sequence[str]) -> str | None:
    """Why a page must never be recorded, or None: a request with credentials, or an excluded host."""
    request = flow.request
    if "authorization" in request.headers:
        return "an Authorization request"
    hosts = {request.host.lower().rstrip("."), request.pretty_host.lower().rstrip(".")}
    if any(fnmatch.fnmatchcase(host, pattern) for host in hosts for pattern in exclude):
        return "an excluded host"
    return None


def recorded_page(
    body: bytes,
    content_type: str | None,
    url: str,
    status: int,
    fetched: float,
    queries: bool = False,
) -> RecordedPage | None:
    """A decoded HTML page as a record's line: its links by the build's extractor (resolved against the URL
    as fetched, its query too), its URL without its query unless ``queries``; None if it has no http(s) URL."""
    page_url = canonical(url)
    if page_url is None:
        return None
    parsed = extract(body, page_url, content_type)
    links = tuple(RecordedLink(link.url, link.nofollow, link.anchor_text or None) for link in parsed.links)
    shown = page_url if queries else _without_query(page_url)
    return RecordedPage(shown, status, parsed.title, time.strftime(_WHEN, time.gmtime(fetched)), links)


def _without_query(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(query="")) if parts.query else url


def warc_member(page: RecordedPage, head: ResponseHead, body: bytes) -> bytes:
    """The response as a WARC response record, compressed as a gzip member of its own: its body decoded (what
    a reader parses) under the origin's status line and headers, less those that no longer hold and cookies."""
    from fastwarc.warc import WarcRecord, WarcRecordType

    lines = [f"HTTP/1.1 {head.status} {head.reason}".rstrip().encode("latin-1", errors="replace")]
    lines += [name + b": " + value for name, value in head.fields if name.lower().decode() not in _WARC_DROPPED]
    lines.append(f"Content-Length: {len(body)}".encode())
    block = b"\r\n".join(lines) + b"\r\n\r\n" + body
    record = WarcRecord()
    record.init_headers(WarcRecordType.response, f"uuid:{uuid.uuid4()}".encode())
    record.headers.append("WARC-Target-URI", page.url)
    record.headers["WARC-Date"] = page.fetched  # the fetch, not this write
    record.headers.append("Content-Type", "application/http; msgtype=response")
    record.set_bytes_content(block)
    out = io.BytesIO()
    record.write(out)
    return gzip.compress(out.getvalue(), mtime=0)


class RecordFiles:
    """A record directory's files for this process: made (and marked) when opened, each file opened at its
    first write, ``O_APPEND`` and unbuffered (one ``write()`` a line or member)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        marker = os.path.join(directory, MARKER)
        if not os.path.exists(marker):
            head = {"format": FORMAT, "version": VERSION, "created": time.strftime(_WHEN, time.gmtime())}
            temporary = f"{marker}.{os.getpid()}.tmp"
            with open(temporary, "w", encoding="utf-8") as file:
                json.dump(head, file)
                file.write("\n")
            os.replace(temporary, marker)  # whole or absent, for a reader that looks meanwhile
        stamp = f"{time.strftime(_STAMP, time.gmtime())}-{os.getpid()}"
        self.pages_path = os.path.join(directory, f"{PAGES_PREFIX}{stamp}{PAGES_SUFFIX}")
        self.warc_path = os.path.join(directory, f"responses-{stamp}.warc.gz")
        self._pages: int | None = None
        self._warc: int | None = None

    def write_page(self, line: bytes) -> None:
        if self._pages is None:
            self._pages = _open_append(self.pages_path)
        _write_whole(self._pages, line)

    def write_warc(self, member: bytes) -> None:
        if self._warc is None:
            self._warc = _open_append(self.warc_path)
        _write_whole(self._warc, member)

    def close(self) -> None:
        for fd in (self._pages, self._warc):
            if fd is not None:
                os.close(fd)
        self._pages = self._warc = None


def _open_append(path: str) -> int:
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)


def _write_whole(fd: int, data: bytes) -> None:
    """``data`` at the file's end; a regular file takes it in one write, and a short one (a full disk) goes on."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Recorder:
    """The recording: options, files, and the two steps of a page (:meth:`take`, then :meth:`keep`)."""

    def __init__(self) -> None:
        self.settings: RecordSettings | None = None
        self.files: RecordFiles | None = None

    def load(self, loader) -> None:
        loader.add_option(
            "pagerank_record",
            str,
            "",
            "A directory to record the HTML pages the proxy annotates in (URL, status, title, time, links), "
            "for `rankstore build DIR` (empty: no recording, the default).",
        )
        loader.add_option(
            "pagerank_record_warc", bool, False, "Also keep the recorded pages' responses as WARC in the record."
        )
        loader.add_option(
            "pagerank_record_exclude",
            Sequence[str],
            [],
            "Host patterns (fnmatch, such as *.bank.example) whose pages are never recorded.",
        )
        loader.add_option(
            "pagerank_record_queries",
            bool,
            False,
            "Record a page URL's query string too (by default it is dropped; its links keep theirs).",
        )

    def configure(self, updated) -> None:
        if not updated & set(OPTIONS):
            return
        settings = parse_record_settings(
            ctx.options.pagerank_record,
            ctx.options.pagerank_record_warc,
            ctx.options.pagerank_record_exclude,
            ctx.options.pagerank_record_queries,
        )
        if settings is not None and (self.files is None or self.files.directory != settings.directory):
            try:
                files = RecordFiles(settings.directory)
            except OSError as error:
                raise exceptions.OptionsError(f"pagerank_record: {settings.directory}: {error}") from None
            self.close()
            self.files = files
        elif settings is None:
            self.close()
        self.settings = settings

    def take(
        self, flow: http.HTTPFlow, body: bytes, content_encoding: str | None, limit: int
    ) -> asyncio.Future[Taken | None] | None:
        """Start making a page's record in a thread (while it is rewritten), unless it is not to be recorded."""
        settings, response = self.settings, flow.response
        if settings is None or response is None or private_reason(flow, settings.exclude) is not None:
            return None
        fetched = response.timestamp_end or time.time()
        head = ResponseHead.of(response)
        return asyncio.ensure_future(
            asyncio.to_thread(_make, body, content_encoding, limit, flow.request.url, head, fetched, settings)
        )

    async def keep(self, taking: asyncio.Future[Taken | None] | None) -> None:
        """Write a page's record, made by :meth:`take`: its line here (one write), its WARC member in a thread."""
        files = self.files
        if taking is None or files is None:
            return
        try:
            taken = await taking
            if taken is None:
                return
            files.write_page(taken.page.line())
            if taken.warc is not None:
                await asyncio.to_thread(files.write_warc, taken.warc)
        except OSError as error:
            log.warning("pagerank: recording %s: %s", files.directory, error)
        except Exception:  # a bug of ours: the page goes on unrecorded, the log has it once
            log.exception("pagerank: recording failed")

    @staticmethod
    def drop(taking: asyncio.Future[Taken | None] | None) -> None:
        """A page not annotated after all: its record is not kept (its thread's work is let go)."""
        if taking is not None:
            taking.add_done_callback(_consumed)

    def close(self) -> None:
        if self.files is not None:
            self.files.close()
            self.files = None

    def done(self) -> None:
        self.close()


def _consumed(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()  # retrieved: asyncio logs no "exception never retrieved"


def _make(
    raw: bytes,
    content_encoding: str | None,
    limit: int,
    url: str,
    head: ResponseHead,
    fetched: float,
    settings: RecordSettings,
) -> Taken | None:
    """A page's record, in a thread: its body decoded (as its rewrite decodes it), parsed, and its WARC member."""
    try:
        body = decode(raw, content_encoding, limit)
    except Exception:  # its rewrite says why it is left untouched, and so unrecorded
        return None
    page = recorded_page(body, head.header("content-type"), url, head.status, fetched, settings.queries)
    if page is None:
        return None
    return Taken(page, warc_member(page, head, body) if settings.warc else None)
