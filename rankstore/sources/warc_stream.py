"""A WARC read as it streams in (from a URL): the same pages as :mod:`.warc` reads from a file, with no seeking.

The file reader maps the whole file and looks back and forth in it to find
where damage ends; a stream is read once, front to back.  So the gzip layer
is undone here, member by member (Common Crawl, wget and warcio write a member
a record), and FastWARC parses plain WARC: a member that is corrupt, or a
file that ends inside one, is seen here, where FastWARC would stop quietly.
After damage, reading resumes at the next member that starts a WARC record
(gzip) or at the next ``WARC/1`` line (plain WARC, or damage inside a sound
member), looked for forward in the stream, and in the last bytes given (kept
in a bounded window: FastWARC reads ahead of the record it parses, and the
next record may lie in what it read).  Offsets in reports are the file's:
a gzipped record is named by the offset of its member, as the file reader
names it.  A transfer that fails for good loses the rest of the file, said
in one report.
"""

from __future__ import annotations

import bisect
import io
import re
import zlib
from collections import Counter
from collections.abc import Iterator

from fastwarc.warc import ArchiveIterator

from . import Progress, Record, Skipped, SourceError
from .remote import TransferError
from .warc import NO_PAGES, RecordReader, WarcPages

__all__ = ["read_warc_stream"]

_GZIP_MAGIC = b"\x1f\x8b\x08"
_RECORD_START = b"WARC/1"
_READ = 1 << 16  # compressed bytes inflated at a time
_WINDOW = 1 << 22  # plain bytes kept to be read again after damage: more than FastWARC reads ahead
_MEMBERS_KEPT = 1 << 16  # member offsets remembered, to name the records of the last ones


class _Cut(OSError):
    """The stream ended inside a gzip member."""


class _WarcBytes(io.RawIOBase):
    """The plain WARC bytes of a stream (gunzipped when it is gzipped), with the bookkeeping to resume after
    damage: the member offsets, the last bytes given, whether the gzip layer broke."""

    def __init__(self, raw, progress: Progress | None):
        super().__init__()
        self._raw = raw
        self._progress = progress
        try:
            self.compressed = raw.peek(2)[:2] == b"\x1f\x8b"
        except TransferError as error:
            raise SourceError(str(error)) from error
        self._input = b""  # compressed bytes read and not yet inflated
        self._read = 0  # compressed bytes read from the stream
        self._zlib = zlib.decompressobj(31) if self.compressed else None
        self._member = 0  # compressed offset of the member being inflated
        self._in_member = False
        self._starts: list[int] = []  # plain offsets of the members...
        self._offsets: list[int] = []  # ...and their compressed offsets
        self.produced = 0  # plain bytes made so far
        self.position = 0  # plain bytes given to the reader (less than made, when some are given again)
        self._window = bytearray()  # the last plain bytes made, ending at ``produced``
        self.ended = False  # the stream is read to its end
        self.gzip_damage = False  # the gzip layer broke: reading goes on at the next member
        self.cut = False  # the stream ended inside a gzip member
        self.transfer: TransferError | None = None  # the transfer failed for good

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def tell(self) -> int:
        return self.position

    def readinto(self, buffer) -> int:
        if self.position < self.produced:  # bytes given again, from the window
            at = len(self._window) - (self.produced - self.position)
            count = min(len(buffer), self.produced - self.position)
            buffer[:count] = self._window[at : at + count]
            self.position += count
            return count
        data = self._make(len(buffer))
        buffer[: len(data)] = data
        self.position += len(data)
        return len(data)

    def _raw_read(self, size: int) -> bytes:
        try:
            data = self._raw.read(size)
        except TransferError as error:
            self.transfer = error
            raise
        self._read += len(data)
        if data and self._progress is not None:
            self._progress(len(data))
        if not data:
            self.ended = True
        return data

    def _make(self, size: int) -> bytes:
        data = self._inflate(size) if self.compressed else self._raw_read(size)
        self.produced += len(data)
        self._window += data
        if len(self._window) > 2 * _WINDOW:
            del self._window[: len(self._window) - _WINDOW]
        return data

    def _inflate(self, size: int) -> bytes:
        assert self._zlib is not None
        while True:
            if self._input and not self._in_member:
                self._in_member = True
                self._member = self._read - len(self._input)
                self._starts.append(self.produced)
                self._offsets.append(self._member)
                if len(self._starts) > 2 * _MEMBERS_KEPT:
                    del self._starts[:_MEMBERS_KEPT], self._offsets[:_MEMBERS_KEPT]
            try:
                data = self._zlib.decompress(self._input, size)
            except zlib.error as error:
                self.gzip_damage = True
                raise OSError(f"corrupt gzip data: {error}") from error
            self._input = self._zlib.unconsumed_tail
            if self._zlib.eof:
                self._input = self._zlib.unused_data
                self._zlib = zlib.decompressobj(31)
                self._in_member = False
            if data:
                return data
            if not self._input:
                self._input = self._raw_read(_READ)
                if not self._input:
                    if self._in_member:
                        self.cut = True
                        raise _Cut("file ends inside this record")
                    return b""

    def file_offset(self, position: int) -> int:
        """The file's offset of a record that starts at plain offset ``position``: its member's, if gzipped."""
        if not self.compressed:
            return position
        at = bisect.bisect_right(self._starts, position) - 1
        return self._offsets[at] if at >= 0 else 0

    def record_end(self, position: int) -> int | None:
        """Where the record that starts at ``position`` ends (after its closing blank lines), if its header
        is among the last bytes made; None if that cannot be told."""
        first = self.produced - len(self._window)
        if position < first:
            return None
        head = bytes(self._window[position - first : position - first + 65536])
        end = head.find(b"\r\n\r\n")
        found = re.search(rb"(?im)^content-length:\s*(\d+)", head[:end]) if end >= 0 else None
        return None if found is None else position + end + 4 + int(found.group(1)) + 4

    @property
    def last_member(self) -> int:
        """The compressed offset of the last gzip member begun."""
        return self._member

    def record_in_window(self) -> int:
        """The plain offset of the first ``WARC/1`` line among the last bytes made, or -1."""
        at = self._window.find(_RECORD_START)
        return self.produced - len(self._window) + at if at >= 0 else -1

    def at_end(self) -> bool:
        return self.at_end_of_input() and self.position >= self.produced

    def at_end_of_input(self) -> bool:
        return self.ended and not self._input

    def next_member(self) -> int:
        """After gzip damage: the compressed offset of the next member that starts a WARC record, with the
        stream put there (its plain bytes to come next); -1 at the end of the file."""
        data, at = self._input, self._read - len(self._input)
        start = 1 if at == self._member else 0  # not the broken member again
        while True:
            found = data.find(_GZIP_MAGIC, start)
            if found >= 0 and (len(data) - found >= 4096 or self.ended):
                try:
                    head = zlib.decompressobj(31).decompress(data[found : found + 4096], 16)
                except zlib.error:
                    head = b""
                if head.startswith(b"WARC/"):
                    self._input = data[found:]
                    self._zlib = zlib.decompressobj(31)
                    self._in_member = False
                    self.gzip_damage = False
                    self.position = self.produced
                    return at + found
                start = found + 1
                continue
            if found < 0 and self.ended:
                self._input = b""
                return -1
            keep = found if found >= 0 else max(len(data) - len(_GZIP_MAGIC) + 1, 0)
            data, at, start = data[keep:] + self._raw_read(_READ), at + keep, 0

    def next_record(self, after: int) -> int:
        """The plain offset of the next ``WARC/1`` line at or after ``after`` (from the window where it is still
        there), with the stream put there; -1 at the end of the file."""
        first = self.produced - len(self._window)
        self.position = max(after, first)
        while True:
            at = self._window.find(_RECORD_START, self.position - first)
            if at >= 0:
                self.position = first + at
                return self.position
            self.position = max(self.produced - len(_RECORD_START) + 1, self.position)
            try:
                made = self._make(_READ)
            except _Cut:
                made = b""
            except TransferError:
                raise
            except OSError:  # the gzip layer broke on the way: on from the next member
                if self.next_member() < 0:
                    made = b""
                else:
                    continue
            if not made and self.at_end_of_input():
                self.position = self.produced
                return -1
            first = self.produced - len(self._window)


def read_warc_stream(
    name: str, raw, progress: Progress | None = None, reader: RecordReader | None = None
) -> Iterator[Record | Skipped]:
    """The pages of a WARC or WARC.gz read from ``raw`` (a binary stream with ``read`` and ``peek``), named
    ``name`` in reports, as ``reader`` makes them (a WARC's responses by default; a WAT's envelopes with
    :class:`~rankstore.sources.wat.WatPages`); as :func:`~rankstore.sources.warc.read_records` reads a file."""
    reader = reader if reader is not None else WarcPages()
    data = _WarcBytes(raw, progress)
    start = 0
    seen = False
    types: Counter[str] = Counter()
    found = 0  # pages and records the reader skipped: a file with none holds no page
    damaged = False
    pending: Record | Skipped | None = None
    while True:
        last_pos: int | None = None
        failure: tuple[int, str] | None = None
        try:
            # every record, whatever its type: one the reader passes over must still move the point that
            # resynchronising starts from, or it would be taken for damage
            for record in ArchiveIterator(data, parse_http=False):
                last_pos = record.stream_pos
                seen = True
                types[str(record.record_type)] += 1
                try:
                    item = reader.take(record, f"{name}@{data.file_offset(last_pos)}")
                except OSError as error:
                    failure = (last_pos, str(error))
                    break
                if item is not None:
                    if pending is not None:
                        yield pending
                    pending = item
                    found += 1
        except OSError as error:
            failure = (last_pos if last_pos is not None else start, str(error))
        if data.transfer is not None:
            break
        cut = _cut_record(data, last_pos if last_pos is not None else start) if data.at_end() else None
        if data.cut or cut is not None:
            # the file ends inside a record: the records before it stand, that one is lost
            where = f"{name}@{data.file_offset(cut) if cut is not None else data.last_member}"
            if pending is not None and pending.where != where:
                yield pending
            pending = None
            yield Skipped(where, "unreadable WARC data (file ends inside this record); resuming at end of file")
            return
        if failure is None:
            if data.at_end():
                break
            try:  # FastWARC stopped before the end: look for what follows
                resume = data.next_record((last_pos if last_pos is not None else start) + 1)
            except TransferError:
                break
            if resume < 0:
                break
            failure = (resume, "a record that cannot be read: truncated or corrupt")
        offset, reason = failure
        damaged = True
        if pending is not None:
            yield pending
            pending = None
        where = f"{name}@{data.file_offset(offset)}"
        try:
            if data.gzip_damage:
                resume = at = data.next_member()
            else:
                resume = data.next_record(offset + 1)
                at = data.file_offset(resume)
        except TransferError:
            break
        yield Skipped(
            where,
            f"unreadable WARC data ({reason}); resuming at " + (f"offset {at}" if resume >= 0 else "end of file"),
        )
        if resume < 0:
            return
        start = data.position
    if pending is not None:
        yield pending
    if data.transfer is not None:
        yield Skipped(f"{name}@{data.file_offset(data.position)}", f"{data.transfer}; the rest of the file is lost")
    elif not seen and start == 0:
        raise SourceError(f"{name}: no WARC records found")
    elif found == 0 and not damaged:
        yield Skipped(name, f"{NO_PAGES} ({reader.nothing_found(types)})")


def _cut_record(data: _WarcBytes, position: int) -> int | None:
    """Following the records from the one at ``position`` to the end of what the stream gave: the plain offset
    of the one it ends inside, or None if each is whole."""
    if data.record_end(position) is None:  # a record longer than the window: on from the next one in it
        position = data.record_in_window()
    while 0 <= position < data.produced:
        end = data.record_end(position)
        if end is None or end - 4 > data.produced:
            return position
        position = end
    return None
