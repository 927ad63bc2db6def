"""A graph's links, in whatever order they come, sorted by target in bounded memory: the in-link lists.

Common Crawl writes a domain graph's edges sorted by source; the store keeps
each site's in-links (:mod:`rankstore.store.site_links`).  So the links are
gathered by target range into buckets (``BUCKET_ROWS`` targets each), one
int64 key a link (target within the bucket, then source), and a bucket is
sorted on its own once every link is in: an external sort by bucket (a
radix pass on the high bits of the key), the buckets' sorts in memory.
Sorted and shuffled edges take the same path and the same time, and give the
same lists.  While the buckets hold at most ``memory`` bytes they stay in
memory; past that each bucket's keys are appended to a file of its own in
``folder`` (8 bytes a link), read back when its turn comes.  A link from a
node to itself is left out and a link given twice is kept once.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import numpy as np

from .store.site_links import InLinkPart

__all__ = ["BUCKET_ROWS", "MEMORY", "LinkSorter", "spill_folder"]

BUCKET_ROWS = 1 << 22  # targets a bucket holds: 33 buckets for Common Crawl's 135 million domains


def _memory() -> int:
    """Bytes of keys held in memory before the buckets go to files: a quarter of the machine's memory, at most
    6 GiB (Common Crawl's 2 billion domain links are 16 GiB of keys: most of them stay on disk)."""
    try:
        machine = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        machine = 4 << 30
    return min(6 << 30, max(1 << 28, machine // 4))


MEMORY = _memory()


def spill_folder(store_path: str) -> str:
    """Where a build of the store at ``store_path`` spills links: beside it, on the same disk."""
    return store_path + "-links"


class LinkSorter:
    """Links between nodes ``0..n-1`` added in any order; :meth:`parts` gives the in-link CSR, bucket by bucket.

    Use as a context manager: the spill files go when it closes.
    """

    def __init__(self, n: int, folder: str, memory: int | None = None, bucket_rows: int | None = None):
        self.n = n
        self.folder = folder
        self.memory = MEMORY if memory is None else memory
        self.rows = max(1, BUCKET_ROWS if bucket_rows is None else bucket_rows)
        self.buckets = max(1, -(-n // self.rows))
        self.held: list[list[np.ndarray]] = [[] for _ in range(self.buckets)]
        self.held_bytes = 0
        self.spilled = [0] * self.buckets  # keys in each bucket's file
        shutil.rmtree(folder, ignore_errors=True)  # what a build killed before left

    def __enter__(self) -> LinkSorter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def add(self, src: np.ndarray, dst: np.ndarray) -> None:
        """Links ``src[i] -> dst[i]`` (node indices below ``n``)."""
        keep = src != dst
        src, dst = src[keep].astype(np.int64), dst[keep].astype(np.int64)
        bucket = dst // self.rows
        key = ((dst - bucket * self.rows) << 32) | src
        if self.buckets == 1:
            self._hold(0, key)
        else:
            # a stable sort of 16-bit numbers is numpy's radix sort
            order = np.argsort(bucket.astype(np.int16 if self.buckets < 1 << 15 else np.int32), kind="stable")
            bucket, key = bucket[order], key[order]
            cuts = np.searchsorted(bucket, np.arange(self.buckets + 1))
            for index in np.flatnonzero(np.diff(cuts)).tolist():
                self._hold(index, key[cuts[index] : cuts[index + 1]])
        if self.held_bytes > self.memory:
            self._spill()

    def _hold(self, bucket: int, keys: np.ndarray) -> None:
        self.held[bucket].append(keys)
        self.held_bytes += keys.nbytes

    def _path(self, bucket: int) -> str:
        return os.path.join(self.folder, f"bucket-{bucket:05d}.keys")

    def _spill(self) -> None:
        """Every bucket's keys held in memory, appended to its file."""
        os.makedirs(self.folder, exist_ok=True)
        for bucket, held in enumerate(self.held):
            if held:
                with open(self._path(bucket), "ab") as handle:
                    for keys in held:
                        handle.write(keys.data)  # a full disk raises OSError(ENOSPC), as the store's writes do
                        self.spilled[bucket] += len(keys)
                held.clear()
        self.held_bytes = 0

    def _keys(self, bucket: int) -> np.ndarray:
        """A bucket's keys, from its file and from memory, its file then gone."""
        held = self.held[bucket]
        total = self.spilled[bucket] + sum(len(keys) for keys in held)
        keys = np.empty(total, dtype=np.int64)
        at = 0
        if self.spilled[bucket]:
            path = self._path(bucket)
            with open(path, "rb") as handle:
                handle.readinto(keys[: self.spilled[bucket]].view(np.uint8).data)
            os.remove(path)
            at = self.spilled[bucket]
        for part in held:
            keys[at : at + len(part)] = part
            at += len(part)
        held.clear()
        return keys

    def parts(self) -> Iterator[InLinkPart]:
        """The in-link CSR, one part a bucket in target order: each target's sources ascending, once each."""
        for bucket in range(self.buckets):
            keys = self._keys(bucket)
            keys.sort()
            if len(keys):
                keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])]
            first = bucket * self.rows
            rows = min(self.rows, self.n - first)
            indptr = np.zeros(rows + 1, dtype=np.int64)
            np.cumsum(np.bincount(keys >> 32, minlength=rows), out=indptr[1:])
            indices = (keys & 0xFFFFFFFF).astype(np.int32)
            del keys
            yield InLinkPart(first, indptr, indices)

    def close(self) -> None:
        """Drop what is held and the spill files."""
        self.held = [[] for _ in range(self.buckets)]
        shutil.rmtree(self.folder, ignore_errors=True)
