"""Big text files read a block of whole lines at a time, gzipped or not, counting bytes for progress bars.

Shared by the line-based graph readers (edge lists, Common Crawl graphs).
Text is taken 64 KiB at a time, so a gzip stream that breaks off loses only
what follows its last whole piece: the lines before are still given, then the
error is raised.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Callable, Iterator

from . import SourceError, open_part

__all__ = ["open_text", "line_blocks"]

_READ = 1 << 16


class _Counting(io.RawIOBase):
    """Counts compressed bytes read, for the progress bar."""

    def __init__(self, raw, progress: Callable[[int], None] | None):
        self._raw = raw
        self._progress = progress

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        count = self._raw.readinto(buffer)
        if self._progress is not None and count:
            self._progress(count)
        return count


def open_text(path: str, progress: Callable[[int], None] | None = None):
    """(raw file, stream of its text): gunzipped when it starts with gzip's magic bytes; ``path`` may be a URL."""
    try:
        raw = open_part(path)  # a path, or a URL streamed
        gzipped = raw.peek(2)[:2] == b"\x1f\x8b"
    except OSError as error:
        raise SourceError(f"{path}: cannot open: {error.strerror}") from error
    counted = io.BufferedReader(_Counting(raw, progress), 1 << 20)
    return raw, (gzip.GzipFile(fileobj=counted) if gzipped else counted)


def line_blocks(stream, size: int, max_line: int, piece: int = _READ) -> Iterator[tuple[bytes | None, int, int]]:
    """(text of whole lines, number of its first line, how many lines), about ``size`` bytes at a time.

    ``(None, n, 1)`` stands for line ``n`` when it is longer than ``max_line``
    (its text is dropped as it is read).  An error of the stream (a truncated
    gzip) is raised after the whole lines read before it.  The stream is read
    ``piece`` bytes at a time: what a broken stream loses is at most a piece.
    """
    carry = b""
    line = 1
    skipping = False
    error: BaseException | None = None
    while error is None:
        pieces = [carry] if carry else []
        length = len(carry)
        try:
            while length < size:
                read = stream.read(piece)
                if not read:
                    break
                pieces.append(read)
                length += len(read)
        except (OSError, EOFError) as problem:
            error = problem
        if length == len(carry) and error is None:  # the end
            if skipping:
                yield None, line, 1
            elif carry:
                yield carry, line, carry.count(b"\n") + 1
            return
        if skipping:  # the rest of an over-long line ends at the first newline
            data = b"".join(pieces)
            end = data.find(b"\n")
            if end < 0:
                carry = b""
                continue
            yield None, line, 1
            line += 1
            skipping = False
            pieces = [data[end + 1 :]]
        # the block ends at the last newline: joined once, the tail kept for the next block
        last = len(pieces) - 1
        while last >= 0 and (cut := pieces[last].rfind(b"\n")) < 0:
            last -= 1
        if last < 0:
            data = b"".join(pieces)
            if len(data) > max_line:
                skipping, carry = True, b""
            else:
                carry = data
            continue
        block = b"".join(pieces[:last] + [pieces[last][:cut]])
        carry = b"".join([pieces[last][cut + 1 :]] + pieces[last + 1 :])
        count = block.count(b"\n") + 1
        yield block, line, count
        line += count
        if len(carry) > max_line:
            skipping, carry = True, b""
    raise error
