"""Edge lists: ``SRC DST [WEIGHT]`` per line, whitespace or tab separated.

``#`` starts a comment; blank lines are ignored; ``.gz`` files are read
transparently.  A line that cannot be read (too few fields, a weight that is
not a positive number, a line over 64 KiB) is reported with its line number
and skipped.  Links come out in bulk (:class:`~rankstore.sources.EdgeBatch`),
a block of lines at a time: each distinct URL is named once, however often
it repeats, and a block whose every line is a plain ``SRC DST`` pair is taken
apart by a few calls into C, not line by line.
"""

from __future__ import annotations

import gzip
import math
import queue
import re
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from . import EdgeBatch, Progress, Skipped
from .pairs import Vertices, VerticesFast, VerticesPython
from .textblocks import line_blocks, open_text

__all__ = ["read_edge_list", "MAX_LINE"]

MAX_LINE = 64 * 1024
# Bytes of text parsed (and links stored in one transaction) at once: below glibc's largest mmap
# threshold, so that a block's memory is reused, not faulted in afresh.
BLOCK = 1 << 24
# '#' starts a comment at the start of a line or after white space, not inside a URL.
_COMMENT = re.compile(rb"(^|\s)#.*", re.DOTALL)


def read_edge_list(path: str, progress: Progress | None = None) -> Iterator[EdgeBatch | Skipped]:
    """The file's links in blocks; the next block is read and taken apart in a thread while this one is used."""
    raw, stream = open_text(path, progress)
    vertices = Vertices()
    piece = 1 << 16 if isinstance(stream, gzip.GzipFile) else 1 << 20  # what a truncated gzip may lose
    line = 1
    with raw, stream:
        try:
            parsed = (_parse(vertices, path, *item) for item in line_blocks(stream, BLOCK, MAX_LINE, piece))
            for block in _ahead(parsed):
                line = block.last + 1
                yield from block.skipped
                if len(block.numbers) or block.new:
                    yield EdgeBatch(
                        block.new,
                        block.numbers[0::2],
                        block.numbers[1::2],
                        block.weights,
                        f"{path}:{block.first}-{block.last}",
                    )
        except (OSError, EOFError, zlib.error) as error:
            yield Skipped(f"{path}:{line}", f"unreadable data ({error}); the rest of the file is lost")


_END = object()


def _ahead(items: Iterator, depth: int = 2) -> Iterator:
    """``items``, produced in a thread of their own up to ``depth`` ahead of the consumer.

    Decompression, file reads and the C splitter let go of the GIL, so the
    next block is read while the caller stores this one (SQLite lets go of
    it too).  An exception in the thread is raised here, in order.
    """
    ready: queue.Queue = queue.Queue(depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        ready.put((item, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            ready.put((_END, None))
        except BaseException as error:  # handed to the consumer
            ready.put((_END, error))

    thread = threading.Thread(target=produce, name="rankstore-edges", daemon=True)
    thread.start()
    try:
        while True:
            item, error = ready.get()
            if item is _END:
                if error is not None:
                    raise error
                return
            yield item
    finally:
        stop.set()
        while thread.is_alive():  # let a producer blocked on a full queue see the stop
            try:
                ready.get_nowait()
            except queue.Empty:
                thread.join(0.05)


@dataclass
class _Block:
    """A block of lines taken apart: the URLs it names first, and each link's two vertex numbers."""

    first: int
    last: int
    new: list[str]
    numbers: np.ndarray
    weights: np.ndarray | None
    skipped: list[Skipped]


def _parse(vertices: VerticesPython | VerticesFast, path: str, block: bytes | None, first: int, count: int) -> _Block:
    if block is None:
        return _Block(
            first,
            first,
            [],
            np.zeros(0, dtype=np.int32),
            None,
            [Skipped(f"{path}:{first}", f"line over {MAX_LINE} bytes")],
        )
    last = first + count - 1
    split = vertices.split(block)
    if split is not None:
        return _Block(first, last, _names(split[0]), split[1], None, [])
    tokens, weights, skipped = _parse_lines(block, first, path)
    new, numbers = vertices.add(tokens)
    return _Block(first, last, _names(new), numbers, weights, skipped)


def _names(tokens: list[bytes]) -> list[str]:
    return [token.decode("utf-8", errors="replace") for token in tokens]


def _parse_lines(block: bytes, first: int, path: str) -> tuple[list[bytes], np.ndarray | None, list[Skipped]]:
    lines = block.split(b"\n")
    fields = map(bytes.split, lines)
    tokens: list[bytes] = []
    weights: list[float] = []
    skipped: list[Skipped] = []
    for number, (text, parts) in enumerate(zip(lines, fields), first):
        if len(text) > MAX_LINE:
            skipped.append(Skipped(f"{path}:{number}", f"line over {MAX_LINE} bytes"))
            continue
        if b"#" in text:
            parts = _COMMENT.sub(b"", text).split()
        if not parts:
            continue
        if len(parts) not in (2, 3):
            skipped.append(Skipped(f"{path}:{number}", f"expected SRC DST [WEIGHT], got {len(parts)} fields"))
            continue
        weight = 1.0
        if len(parts) == 3:
            try:
                weight = float(parts[2])
            except ValueError:
                weight = math.nan
            if not (weight > 0 and math.isfinite(weight)):
                shown = parts[2][:40].decode("utf-8", errors="replace")
                skipped.append(Skipped(f"{path}:{number}", f"weight {shown!r} is not a positive number"))
                continue
        tokens += parts[:2]
        weights.append(weight)
    array = np.array(weights, dtype=np.float64)
    return tokens, None if bool(np.all(array == 1.0)) else array, skipped
