"""Sorted lists of node indices packed as varint gaps: how ``site_links`` keeps a domain graph's links.

A list ``[s0, s1, ...]`` (ascending, no repeats, int32) is written as ``s0``,
then ``s_i - s_(i-1) - 1`` for each next one, each as a LEB128 varint (7 bits
a byte, the high bit on every byte but a value's last), the lists of a block
one after the other; ``offsets`` (uint32, one more than the lists) says where
each list's bytes start.  A site's in-links are its sources sorted, so the
gaps shrink as the list grows: a list of a million links out of 135 million
sites takes about one byte a link, a short one up to four or five.  The
technique is WebGraph's gap coding (Boldi and Vigna, "The WebGraph Framework
I", 2004) without its reference copying, with LEB128 (as in Protocol Buffers)
for the gaps.

:func:`pack` and :func:`unpack` are the C twin (``_fastgaps``) when it is
built, else :func:`pack_python` and :func:`unpack_python`, the reference: the
same bytes and the same lists.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

try:
    from . import _fastgaps  # type: ignore[attr-defined]
except ImportError:  # no compiler at install time: the Python twin
    _fastgaps = None

__all__ = [
    "MAX_BYTES",
    "Packed",
    "list_lengths",
    "pack",
    "pack_python",
    "tally",
    "tally_python",
    "unpack",
    "unpack_placed",
    "unpack_placed_python",
    "unpack_python",
]

MAX_BYTES = 5  # bytes of the longest varint of an int32 gap


class Packed(NamedTuple):
    """Lists packed: ``offsets[i]:offsets[i + 1]`` of ``data`` is list i's bytes."""

    offsets: np.ndarray  # uint32, one more than the lists
    data: bytes


def _checked(indptr: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.ascontiguousarray(indptr, dtype=np.int64), np.ascontiguousarray(indices, dtype=np.int32)


def pack_python(indptr: np.ndarray, indices: np.ndarray) -> Packed:
    """The lists ``indices[indptr[i]:indptr[i + 1]]`` packed (the reference; see the module docstring)."""
    indptr, indices = _checked(indptr, indices)
    rows = len(indptr) - 1
    values = indices.astype(np.int64)
    starts = indptr[:-1][np.diff(indptr) > 0]
    gaps = values.copy()
    gaps[1:] -= values[:-1] + 1
    gaps[starts] = values[starts]  # each list's first value is itself
    if len(gaps) and gaps.min() < 0:
        raise ValueError("pack: a list is not ascending without repeats")
    width = np.ones(len(gaps), dtype=np.int64)
    for bits in (7, 14, 21, 28):
        width += gaps >= (1 << bits)
    ends = np.cumsum(width)
    out = np.zeros(int(ends[-1]) if len(ends) else 0, dtype=np.uint8)
    at = ends - width
    for byte in range(MAX_BYTES):
        some = width > byte
        more = width > byte + 1
        out[at[some] + byte] = ((gaps[some] >> (7 * byte)) & 127) | np.where(more[some], 128, 0)
    offsets = np.zeros(rows + 1, dtype=np.int64)
    offsets[1:] = np.concatenate([[0], ends])[indptr[1:]]
    if offsets[-1] > np.iinfo(np.uint32).max:
        raise ValueError("pack: a block over 4 GiB")
    return Packed(offsets.astype(np.uint32), out.tobytes())


def unpack_python(offsets: np.ndarray, data: bytes | memoryview) -> np.ndarray:
    """The lists of ``offsets``/``data`` back, one after the other, as int32 (the reference)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    raw = np.frombuffer(data, dtype=np.uint8)[: int(offsets[-1]) if len(offsets) else 0]
    if len(offsets) < 1 or (np.diff(offsets) < 0).any() or (len(offsets) and offsets[-1] > len(data)):
        raise ValueError("unpack: bytes that are no packed lists, or out too small")
    last = np.flatnonzero(raw < 128)  # each value's last byte
    if len(raw) and (not len(last) or last[-1] != len(raw) - 1):
        raise ValueError("unpack: bytes that are no packed lists, or out too small")
    first = np.concatenate([[0], last[:-1] + 1]) if len(last) else last
    width = last - first + 1
    if len(width) and width.max() > MAX_BYTES:
        raise ValueError("unpack: bytes that are no packed lists, or out too small")
    # a list may not end inside a value: each offset is a value's first byte
    boundaries = offsets[(offsets > 0) & (offsets < len(raw))]
    if len(boundaries) and not np.isin(boundaries, first).all():
        raise ValueError("unpack: bytes that are no packed lists, or out too small")
    position = np.arange(len(raw)) - np.repeat(first, width)
    parts = (raw & 127).astype(np.int64) << (7 * position)
    gaps = np.add.reduceat(parts, first) if len(first) else np.zeros(0, dtype=np.int64)
    # the values that start a list (at a list's first byte), and each value's list
    lengths = np.diff(offsets)
    list_starts = np.searchsorted(first, offsets[:-1][lengths > 0])
    counts = np.diff(np.append(list_starts, len(gaps)))
    running = np.cumsum(gaps + 1)
    base = running[list_starts] - gaps[list_starts]  # a list counts from its first value
    values = running - np.repeat(base, counts)
    if len(values) and values.max() > np.iinfo(np.int32).max:
        raise ValueError("unpack: bytes that are no packed lists, or out too small")
    return values.astype(np.int32)


def list_lengths(offsets: np.ndarray, data: bytes | memoryview) -> np.ndarray:
    """How many values each packed list holds (its bytes without the high bit)."""
    raw = np.frombuffer(data, dtype=np.uint8)
    ends = np.zeros(len(raw) + 1, dtype=np.int64)
    np.cumsum(raw < 128, out=ends[1:])
    return np.diff(ends[np.asarray(offsets, dtype=np.int64)])


def pack(indptr: np.ndarray, indices: np.ndarray) -> Packed:
    """As :func:`pack_python`, in C when the twin is built."""
    if _fastgaps is None:
        return pack_python(indptr, indices)
    indptr, indices = _checked(indptr, indices)
    out = np.empty(MAX_BYTES * len(indices), dtype=np.uint8)
    offsets = np.empty(len(indptr), dtype=np.uint32)
    written = _fastgaps.pack(indptr, indices, out, offsets)
    return Packed(offsets, out[:written].tobytes())


def unpack(offsets: np.ndarray, data: bytes | memoryview, count: int | None = None) -> np.ndarray:
    """As :func:`unpack_python`, in C when the twin is built; ``count``, the values, if known."""
    if _fastgaps is None:
        return unpack_python(offsets, data)
    offsets = np.ascontiguousarray(offsets, dtype=np.uint32)
    if count is None:  # a value's last byte is the one without the high bit
        count = 0
        if len(offsets) > 1:
            count = int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8)[int(offsets[0]) : int(offsets[-1])] < 128))
    out = np.empty(count, dtype=np.int32)
    written = _fastgaps.unpack(data, offsets, out)
    return out[:written]


def tally_python(offsets: np.ndarray, data: bytes | memoryview, lengths: np.ndarray, counts: np.ndarray) -> int:
    """Each list's length into ``lengths`` (int32, one a list) and ``counts[v] += 1`` (int32) for each value
    ``v`` of every list; returns the values read (the reference)."""
    values = unpack_python(offsets, data)
    if len(values) and int(values.max()) >= len(counts):
        raise ValueError("tally: bytes that are no packed lists, or a value past the counts")
    lengths[:] = list_lengths(offsets, data)
    counts += np.bincount(values, minlength=len(counts)).astype(counts.dtype)
    return len(values)


def unpack_placed_python(
    offsets: np.ndarray,
    data: bytes | memoryview,
    rows: np.ndarray,
    indptr: np.ndarray,
    rename: np.ndarray,
    out: np.ndarray,
) -> int:
    """List ``i``'s values ``v``, each as ``rename[v]``, into row ``rows[i]`` of the CSR ``indptr``/``out``
    (the row as long as the list; ``rows[i] < 0``: the list empty); returns the values written (the
    reference)."""
    values = unpack_python(offsets, data)
    lengths = list_lengths(offsets, data)
    rows = np.asarray(rows, dtype=np.int64)
    placed = rows >= 0
    want = np.zeros(len(rows), dtype=np.int64)
    if placed.any() and int(rows.max()) >= len(indptr) - 1:
        raise ValueError("unpack_placed: a row past the CSR")
    want[placed] = indptr[rows[placed] + 1] - indptr[rows[placed]]
    renamed = rename[values] if len(values) and int(values.max()) < len(rename) else None
    if not np.array_equal(want, lengths) or (len(values) and (renamed is None or int(renamed.min()) < 0)):
        raise ValueError(
            "unpack_placed: bytes that are no packed lists, a value past rename or renamed below 0, "
            "or a list of another length than its row"
        )
    if len(values):
        assert renamed is not None
        starts = np.repeat(indptr[rows[placed]] - np.cumsum(lengths[placed]) + lengths[placed], lengths[placed])
        out[starts + np.arange(len(values))] = renamed
    return len(values)


def tally(offsets: np.ndarray, data: bytes | memoryview, lengths: np.ndarray, counts: np.ndarray) -> int:
    """As :func:`tally_python`, in C when the twin is built."""
    _int32(lengths, counts)
    if _fastgaps is None:
        return tally_python(offsets, data, lengths, counts)
    return _fastgaps.tally(data, np.ascontiguousarray(offsets, dtype=np.uint32), lengths, counts)


def unpack_placed(
    offsets: np.ndarray,
    data: bytes | memoryview,
    rows: np.ndarray,
    indptr: np.ndarray,
    rename: np.ndarray,
    out: np.ndarray,
) -> int:
    """As :func:`unpack_placed_python`, in C when the twin is built."""
    _int32(out)
    rows, rename = np.ascontiguousarray(rows, dtype=np.int32), np.ascontiguousarray(rename, dtype=np.int32)
    indptr = np.ascontiguousarray(indptr, dtype=np.int64)
    if _fastgaps is None:
        return unpack_placed_python(offsets, data, rows, indptr, rename, out)
    offsets = np.ascontiguousarray(offsets, dtype=np.uint32)
    return _fastgaps.unpack_placed(data, offsets, rows, indptr, rename, out)


def _int32(*arrays: np.ndarray) -> None:
    """The arrays a function writes into: int32 and contiguous, or it would write past them."""
    for array in arrays:
        if array.dtype != np.int32 or not array.flags.c_contiguous:
            raise TypeError("gaps: the arrays written into must be contiguous int32")
