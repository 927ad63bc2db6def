"""WARC and WARC.gz (wget, Heritrix, Browsertrix, Common Crawl) with FastWARC.

FastWARC reads the python3.11-doc crawl 2.7x faster than warcio
(tools/bench_build.py --readers).  Response records with an HTML body become
pages; a 3xx response with a ``Location`` header becomes a link from the old URL
to the new one; a 404 or 410 becomes a page that is gone (a recrawl's evidence
that its links are no more); revisit, request, metadata, non-HTML and other
statuses are passed over.  Each record carries its WARC-Date: the store keeps
the newest capture of a page.  A record that cannot be read is reported with its file offset and
the reader resynchronises on the next record (next gzip member, or next
``WARC/1.`` line in an uncompressed file), so the rest of the file still loads.
"""

from __future__ import annotations

import mmap
import os
import re
import zlib
from collections.abc import Iterator

from fastwarc.warc import ArchiveIterator, WarcRecordType

from . import GONE_STATUSES, Progress, Record, Skipped, SourceError

__all__ = ["read_warc", "MAX_BODY"]

MAX_BODY = 32 * 1024 * 1024
_GZIP_MAGIC = b"\x1f\x8b\x08"
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_WANTED = WarcRecordType.response | WarcRecordType.resource


def _is_record_start(view: mmap.mmap, offset: int, compressed: bool) -> bool:
    if not compressed:
        return view[offset : offset + 6] == b"WARC/1"
    try:
        head = zlib.decompressobj(wbits=31).decompress(view[offset : offset + 4096], 16)
    except zlib.error:
        return False
    return head.startswith(b"WARC/")


def _next_record_start(view: mmap.mmap, offset: int, compressed: bool) -> int:
    marker = _GZIP_MAGIC if compressed else b"WARC/1"
    while True:
        offset = view.find(marker, offset)
        if offset < 0:
            return -1
        if _is_record_start(view, offset, compressed):
            return offset
        offset += 1


def _target(record) -> str:
    uri = record.headers.get("WARC-Target-URI") or ""
    # wget writes the URI in angle brackets (WARC 1.1 draft grammar).
    return uri.strip().strip("<>").strip()


def _page(record, where: str) -> Record | Skipped | None:
    url = _target(record)
    if not url:
        return Skipped(where, "record without WARC-Target-URI")
    date = record.headers.get("WARC-Date")
    if record.record_type == WarcRecordType.resource:
        content_type = (record.headers.get("Content-Type") or "").lower()
        if not content_type.startswith(_HTML_TYPES):
            return None
        return Record(url, where, 200, record.reader.read(MAX_BODY), content_type, fetched_at=date)
    if not record.is_http or record.http_headers is None:
        return None
    http = record.http_headers
    status = http.status_code or 0
    if 300 <= status < 400:
        location = http.get("Location")
        if not location:
            return Skipped(where, f"HTTP {status} without Location")
        return Record(url, where, status, location=location.strip(), fetched_at=date)
    if status in GONE_STATUSES:  # whatever its body (a server's error page), the page is gone
        return Record(url, where, status, fetched_at=date)
    if not 200 <= status < 300:
        return None
    content_type = http.get("Content-Type") or ""
    if not content_type.lower().lstrip().startswith(_HTML_TYPES):
        return None
    body = record.reader.read(MAX_BODY + 1)
    if len(body) > MAX_BODY:
        return Skipped(where, f"body over {MAX_BODY // (1024 * 1024)} MiB")
    return Record(url, where, status, body, content_type, fetched_at=date)


def _complete(view: mmap.mmap, offset: int, size: int, compressed: bool) -> bool:
    """Whether the record at ``offset`` ends inside the file (FastWARC does not say)."""
    if compressed:
        if not _is_record_start(view, offset, True):
            return True  # one gzip stream for the whole file: nothing to check per record
        inflater = zlib.decompressobj(wbits=31)
        chunk = 1 << 20
        try:
            for position in range(offset, size, chunk):
                inflater.decompress(view[position : position + chunk])
                if inflater.eof:
                    break
        except zlib.error:
            return False
        return inflater.eof
    header_end = view.find(b"\r\n\r\n", offset)
    if header_end < 0:
        return False
    match = re.search(rb"(?im)^content-length:\s*(\d+)", view[offset:header_end])
    return match is not None and header_end + 4 + int(match.group(1)) <= size


def read_warc(path: str, progress: Progress | None = None) -> Iterator[Record | Skipped]:
    try:
        handle = open(path, "rb")
    except OSError as error:
        raise SourceError(f"{path}: cannot open: {error.strerror}") from error
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            raise SourceError(f"{path}: empty file")
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
            compressed = view[:2] == b"\x1f\x8b"
            yield from _read_from(path, handle, view, size, compressed, progress)


def _read_from(path, handle, view, size, compressed, progress) -> Iterator[Record | Skipped]:
    start = 0
    reported = 0
    pending: Record | Skipped | None = None
    while start < size:
        last_pos = None
        failure = None
        try:
            # FastWARC takes the file's position as its origin: stream_pos is absolute.
            handle.seek(start)
            for record in ArchiveIterator(handle, record_types=_WANTED, parse_http=True):
                last_pos = record.stream_pos
                where = f"{path}@{last_pos}"
                try:
                    item = _page(record, where)
                except OSError as error:
                    failure = (last_pos, str(error))
                    break
                if item is not None:
                    if pending is not None:
                        yield pending
                    pending = item
                if progress is not None:
                    position = handle.tell()
                    progress(position - reported)
                    reported = position
        except OSError as error:
            failure = (last_pos if last_pos is not None else start, str(error))
        if failure is None and last_pos is not None and not _complete(view, last_pos, size, compressed):
            failure = (last_pos, "file ends inside this record")
            if pending is not None and pending.where == f"{path}@{last_pos}":
                pending = None
        if failure is None:
            # FastWARC stops quietly at a truncated gzip member: look for what follows.
            resume = _next_record_start(view, (last_pos if last_pos is not None else start) + 1, compressed)
            if resume < 0:
                if last_pos is None and start == 0:
                    raise SourceError(f"{path}: no WARC records found")
                break
            failure = (resume, "a record that cannot be read: truncated or corrupt")
        offset, reason = failure
        if pending is not None:
            yield pending
            pending = None
        resume = _next_record_start(view, offset + 1, compressed)
        yield Skipped(
            f"{path}@{offset}",
            f"unreadable WARC data ({reason}); resuming at " + (f"offset {resume}" if resume >= 0 else "end of file"),
        )
        if resume < 0:
            break
        start = resume
    if pending is not None:
        yield pending
    if progress is not None:
        progress(size - reported)
