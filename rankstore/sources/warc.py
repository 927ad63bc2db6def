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

The loop that reads records and resynchronises (:func:`read_records`) serves
every format stored as WARC records: it is given a :class:`RecordReader` that
turns one record into a page (``wat`` has its own, for Common Crawl's WAT
files).  It reads every record, whatever its type, so that a record passed
over is never taken for damage; and a file that holds no page at all (a WAT
or WET file read as WARC, a WARC of requests only) is said to be so, in one
line naming the records it does hold.
"""

from __future__ import annotations

import mmap
import os
import re
import zlib
from collections import Counter
from collections.abc import Iterator

from fastwarc.warc import ArchiveIterator, WarcRecord, WarcRecordType

from . import GONE_STATUSES, Progress, Record, Skipped, SourceError

__all__ = ["read_warc", "read_records", "read_body", "RecordReader", "HTML_TYPES", "MAX_BODY", "NO_PAGES"]

MAX_BODY = 32 * 1024 * 1024
HTML_TYPES = ("text/html", "application/xhtml+xml")
NO_PAGES = "no HTML responses in it"  # the reason a file without a page is reported under
_GZIP_MAGIC = b"\x1f\x8b\x08"


class RecordReader:
    """What one format stored as WARC records makes of a record: a page, a skip, or nothing (passed over)."""

    def take(self, record: WarcRecord, where: str) -> Record | Skipped | None:
        raise NotImplementedError

    def nothing_found(self, types: Counter[str]) -> str:
        """Why a file whose records (counted by WARC-Type) held no page holds none, said to its reader."""
        return _census(types)


class WarcPages(RecordReader):
    """A WARC's responses (and HTML resource records) as pages."""

    def __init__(self) -> None:
        self.json_metadata = 0  # metadata records of JSON: a WAT's envelopes

    def take(self, record: WarcRecord, where: str) -> Record | Skipped | None:
        if record.record_type == WarcRecordType.metadata:
            self.json_metadata += (record.headers.get("Content-Type") or "").startswith("application/json")
            return None
        if record.record_type not in (WarcRecordType.response, WarcRecordType.resource):
            return None
        if record.is_http and not record.is_http_parsed:
            record.parse_http()
        return _page(record, where)

    def nothing_found(self, types: Counter[str]) -> str:
        hint = ""
        if self.json_metadata and not types["response"]:
            hint = "; a Common Crawl WAT file? it is read with --format wat"
        elif types["conversion"] and not types["response"]:
            hint = "; a WET file? it holds text extracted from pages, without their links"
        return _census(types) + hint


def _census(types: Counter[str]) -> str:
    total = sum(types.values())
    kinds = ", ".join(f"{count:,} {kind}" for kind, count in types.most_common())
    return f"{total:,} record{'s' if total != 1 else ''}: {kinds}" if total else "no records"


def _is_record_start(view: mmap.mmap, offset: int, compressed: bool) -> bool:
    if not compressed:
        # A record starts a line: "WARC/1.0" inside a payload (a WAT's JSON names its format so) is not one.
        return view[offset : offset + 6] == b"WARC/1" and (offset == 0 or view[offset - 1] == 0x0A)
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
        if not content_type.startswith(HTML_TYPES):
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
    if not content_type.lower().lstrip().startswith(HTML_TYPES):
        return None
    body = read_body(record)
    if len(body) > MAX_BODY:
        return Skipped(where, f"body over {MAX_BODY // (1024 * 1024)} MiB")
    return Record(url, where, status, body, content_type, fetched_at=date)


def read_body(record: WarcRecord) -> bytes:
    """A record's payload, up to one byte over ``MAX_BODY`` (a body too large to keep): read whole when its
    block fits (a read of ``MAX_BODY + 1`` bytes allocates as much first, for each record)."""
    if record.content_length <= MAX_BODY:
        return record.reader.read()
    return record.reader.read(MAX_BODY + 1)


def _after_record(view: mmap.mmap, offset: int, size: int, compressed: bool) -> int | None:
    """Where the record at ``offset`` ends (FastWARC does not say); None if it does not end inside the file.

    A .gz written as one gzip stream, not a member a record, has no end to tell: the next byte is given.
    """
    if compressed:
        if not _is_record_start(view, offset, True):
            return offset + 1
        inflater = zlib.decompressobj(wbits=31)
        chunk = 1 << 20
        try:
            for position in range(offset, size, chunk):
                piece = view[position : position + chunk]
                inflater.decompress(piece)
                if inflater.eof:
                    return position + len(piece) - len(inflater.unused_data)
        except zlib.error:
            return None
        return None
    header_end = view.find(b"\r\n\r\n", offset)
    if header_end < 0:
        return None
    match = re.search(rb"(?im)^content-length:\s*(\d+)", view[offset:header_end])
    if match is None:
        return None
    end = header_end + 4 + int(match.group(1))
    return end if end <= size else None


def _damage_at(view: mmap.mmap, last_pos: int | None, start: int, size: int, compressed: bool) -> int:
    """Where the damage FastWARC stopped at begins: past the last record it read, when that one is whole."""
    if last_pos is None:
        return start
    end = _after_record(view, last_pos, size, compressed)
    return end if end is not None and end > last_pos + 1 else last_pos


def read_warc(path: str, progress: Progress | None = None) -> Iterator[Record | Skipped]:
    return read_records(path, WarcPages(), progress)


def read_records(path: str, reader: RecordReader, progress: Progress | None = None) -> Iterator[Record | Skipped]:
    """Pages of a file of WARC records, as ``reader`` makes them; damage reported and read past."""
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
            yield from _read_from(path, reader, handle, view, size, compressed, progress)


def _read_from(path, reader, handle, view, size, compressed, progress) -> Iterator[Record | Skipped]:
    start = 0
    reported = 0
    pending: Record | Skipped | None = None
    types: Counter[str] = Counter()
    found = 0  # pages and records the reader skipped: a file with none holds no page
    damaged = False
    while start < size:
        last_pos = None
        failure = None
        try:
            # FastWARC takes the file's position as its origin: stream_pos is absolute.  Every record is read,
            # whatever its type: one the reader passes over must still move the point resynchronising starts from.
            handle.seek(start)
            for record in ArchiveIterator(handle, parse_http=False):
                last_pos = record.stream_pos
                where = f"{path}@{last_pos}"
                types[str(record.record_type)] += 1
                try:
                    item = reader.take(record, where)
                except OSError as error:
                    failure = (last_pos, str(error))
                    break
                if item is not None:
                    if pending is not None:
                        yield pending
                    pending = item
                    found += 1
                if progress is not None:
                    position = handle.tell()
                    progress(position - reported)
                    reported = position
        except OSError as error:
            failure = (_damage_at(view, last_pos, start, size, compressed), str(error))
        after = start + 1  # where the record after the last one read may start
        if failure is None and last_pos is not None:
            end = _after_record(view, last_pos, size, compressed)
            if end is None:
                failure = (last_pos, "file ends inside this record")
                if pending is not None and pending.where == f"{path}@{last_pos}":
                    pending = None
            else:
                after = end
        if failure is None:
            # FastWARC stops quietly at a truncated gzip member: look for what follows the last record it read.
            resume = _next_record_start(view, after, compressed)
            if resume < 0:
                if last_pos is None and start == 0:
                    raise SourceError(f"{path}: no WARC records found")
                break
            failure = (resume, "a record that cannot be read: truncated or corrupt")
        offset, reason = failure
        damaged = True
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
    if found == 0 and not damaged:
        yield Skipped(path, f"{NO_PAGES} ({reader.nothing_found(types)})")
    if progress is not None:
        progress(size - reported)
