"""Edge lists: ``SRC DST [WEIGHT]`` per line, whitespace or tab separated.

``#`` starts a comment; blank lines are ignored; ``.gz`` files are read
transparently.  Consecutive lines with the same source form one page's
out-links (a source seen again later adds to them).  A line that cannot be read
(too few fields, a weight that is not a positive number, a URL that is not
http(s), a line over 64 KiB) is reported with its line number and skipped.
"""

from __future__ import annotations

import gzip
import io
import math
import re
import zlib
from typing import Iterator

from . import Progress, Record, Skipped, SourceError

__all__ = ["read_edge_list", "MAX_LINE"]

MAX_LINE = 64 * 1024
# '#' starts a comment at the start of a line or after white space, not inside a URL.
_COMMENT = re.compile(r"(^|\s)#.*", re.DOTALL)


class _Counting(io.RawIOBase):
    """Counts compressed bytes read, for the progress bar."""

    def __init__(self, raw, progress: Progress | None):
        self._raw = raw
        self._progress = progress

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        count = self._raw.readinto(buffer)
        if self._progress is not None and count:
            self._progress(count)
        return count


def _lines(path: str, progress: Progress | None) -> Iterator[bytes | None]:
    """The file's lines; None stands for a line over MAX_LINE bytes."""
    raw = open(path, "rb")
    counted = io.BufferedReader(_Counting(raw, progress), 1 << 20)
    stream = gzip.GzipFile(fileobj=counted) if raw.read(2) == b"\x1f\x8b" else counted
    raw.seek(0)
    with raw, stream:
        while True:
            line = stream.readline(MAX_LINE + 1)
            if not line:
                return
            if len(line) > MAX_LINE and not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):
                    line = stream.readline(MAX_LINE)
                yield None
                continue
            yield line


def read_edge_list(path: str, progress: Progress | None = None) -> Iterator[Record | Skipped]:
    try:
        open(path, "rb").close()
    except OSError as error:
        raise SourceError(f"{path}: cannot open: {error.strerror}") from error
    current: Record | None = None
    number = 0
    try:
        for number, raw_line in enumerate(_lines(path, progress), 1):
            where = f"{path}:{number}"
            if raw_line is None:
                yield Skipped(where, f"line over {MAX_LINE} bytes")
                continue
            line = raw_line.decode("utf-8", errors="replace")
            line = _COMMENT.sub("", line).strip() if "#" in line else line.strip()
            if not line:
                continue
            fields = line.split()
            if len(fields) not in (2, 3):
                yield Skipped(where, f"expected SRC DST [WEIGHT], got {len(fields)} fields")
                continue
            weight = 1.0
            if len(fields) == 3:
                try:
                    weight = float(fields[2])
                except ValueError:
                    weight = math.nan
                if not (weight > 0 and math.isfinite(weight)):
                    yield Skipped(where, f"weight {fields[2][:40]!r} is not a positive number")
                    continue
            source, target = fields[0], fields[1]
            if current is None or current.url != source:
                if current is not None:
                    yield current
                current = Record(source, where)
            current.links.append((target, weight))
    except (OSError, EOFError, zlib.error) as error:
        if current is not None:
            yield current
            current = None
        yield Skipped(f"{path}:{number + 1}", f"unreadable data ({error}); the rest of the file is lost")
    if current is not None:
        yield current
