"""The crawl's WARC files: responses written as they come, one gzip member a record, in segments.

A crawl's folder holds ``crawl-00001.warc.gz``, ``crawl-00002.warc.gz``...: each segment is closed after
so many pages and loaded into the store by ``rankstore build``'s own code, like any WARC; ``loaded.txt``
names the segments loaded, ``seeds.txt`` the URLs the crawl started from (a re-run from others is
refused).  A record is flushed as soon as it is written, so a crawl killed outright loses at most the
record being written (the WARC reader reads past a damaged last member).  A re-run takes the segments as
the record of what was fetched and starts a new one.
"""

from __future__ import annotations

import datetime
import gzip
import io
import os
import re
from collections.abc import Iterable

from fastwarc.warc import WarcRecord, WarcRecordType

__all__ = [
    "SegmentWriter",
    "segments",
    "loaded_segments",
    "mark_loaded",
    "LOADED",
    "SEEDS",
    "recorded_seeds",
    "record_seeds",
]

LOADED = "loaded.txt"
SEEDS = "seeds.txt"
_SEGMENT = re.compile(r"crawl-(\d{5,})\.warc\.gz\Z")
# headers that described the bytes on the wire, not the body kept (Scrapy has undone any encoding)
_WIRE_HEADERS = {b"content-encoding", b"transfer-encoding", b"content-length"}


def segments(folder: str) -> list[str]:
    """The crawl's WARC segments in ``folder``, in the order they were written."""
    if not os.path.isdir(folder):
        return []
    found = sorted((int(match.group(1)), name) for name in os.listdir(folder) if (match := _SEGMENT.match(name)))
    return [os.path.join(folder, name) for _, name in found]


def loaded_segments(folder: str) -> set[str]:
    try:
        with open(os.path.join(folder, LOADED), encoding="utf-8") as handle:
            return {os.path.join(folder, line.strip()) for line in handle if line.strip()}
    except FileNotFoundError:
        return set()


def mark_loaded(path: str) -> None:
    with open(os.path.join(os.path.dirname(path), LOADED), "a", encoding="utf-8") as handle:
        handle.write(os.path.basename(path) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def recorded_seeds(folder: str) -> tuple[str, ...] | None:
    """The seeds ``seeds.txt`` names in ``folder``; None where it has none."""
    try:
        with open(os.path.join(folder, SEEDS), encoding="utf-8") as handle:
            return tuple(line.strip() for line in handle if line.strip())
    except FileNotFoundError:
        return None


def record_seeds(folder: str, seeds: Iterable[str]) -> None:
    with open(os.path.join(folder, SEEDS), "w", encoding="utf-8") as handle:
        handle.write("".join(f"{url}\n" for url in seeds))


class SegmentWriter:
    """Appends response records to the folder's current segment; :meth:`roll` closes it and opens the next."""

    def __init__(self, folder: str):
        os.makedirs(folder, exist_ok=True)
        self.folder = folder
        existing = segments(folder)
        self._number = int(_SEGMENT.match(os.path.basename(existing[-1])).group(1)) if existing else 0  # type: ignore[union-attr]
        self._handle: io.BufferedWriter | None = None
        self.path: str | None = None
        self.records = 0  # in the current segment

    def write_response(
        self, url: str, status: int, reason: str, headers: Iterable[tuple[bytes, bytes]], body: bytes
    ) -> None:
        if self._handle is None:
            self._number += 1
            self.path = os.path.join(self.folder, f"crawl-{self._number:05d}.warc.gz")
            self._handle = open(self.path, "ab")  # noqa: SIM115 - held across calls, closed by roll/close
            self.records = 0
        lines = [f"HTTP/1.1 {status} {reason}".encode()]
        for name, value in headers:
            if name.lower() not in _WIRE_HEADERS:
                lines.append(name + b": " + value)
        lines.append(b"Content-Length: " + str(len(body)).encode())
        block = b"\r\n".join(lines) + b"\r\n\r\n" + body
        record = WarcRecord()
        record.init_headers(record_type=WarcRecordType.response)
        record.headers.append("WARC-Target-URI", url)
        record.headers.append("WARC-Date", datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        record.headers.append("Content-Type", "application/http; msgtype=response")
        record.set_bytes_content(block)
        raw = io.BytesIO()
        record.write(raw, checksum_data=True)
        self._handle.write(gzip.compress(raw.getvalue(), compresslevel=6))
        self._handle.flush()
        self.records += 1

    def roll(self) -> str | None:
        """Close the current segment (if any records went to it); its path."""
        if self._handle is None:
            return None
        self._handle.close()
        self._handle = None
        return self.path

    close = roll
