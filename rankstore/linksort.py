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

A sorter made ``summed`` keeps a weight beside each key (a second file a
bucket when spilled) and gives each pair once with the sum of its links'
weights (1 each unless given): the site fold of a weighted host graph
(:meth:`rankstore.store.sites.Sites.site_graph`) takes it.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from .store.site_links import InLinkPart

__all__ = ["BUCKET_ROWS", "MEMORY", "LinkSorter", "WeightedPart", "spill_folder"]

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


def _private_folder(folder: str) -> None:
    """``folder`` made readable by its owner alone (0700, whatever the umask: it holds the store's links), or
    kept as it is if it is there."""
    os.makedirs(os.path.dirname(os.path.abspath(folder)), exist_ok=True)
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        return
    os.chmod(folder, 0o700)


def spill_folder(store_path: str) -> str:
    """Where a build of the store at ``store_path`` spills links: beside it, on the same disk."""
    return store_path + "-links"


class WeightedPart(NamedTuple):
    """Rows of an in-link CSR with each link's weight: what a ``summed`` :class:`LinkSorter` gives."""

    links: InLinkPart
    weights: np.ndarray  # float64, one a link of ``links``: the sum of the weights the pair was given


class LinkSorter:
    """Links between nodes ``0..n-1`` added in any order; :meth:`parts` gives the in-link CSR, bucket by bucket.

    Use as a context manager: the spill files go when it closes.
    """

    def __init__(
        self, n: int, folder: str, memory: int | None = None, bucket_rows: int | None = None, summed: bool = False
    ):
        self.n = n
        self.summed = summed  # weights kept and summed by pair (weighted_parts), not each pair once (parts)
        self.folder = folder
        self.memory = MEMORY if memory is None else memory
        self.rows = max(1, BUCKET_ROWS if bucket_rows is None else bucket_rows)
        self.buckets = max(1, -(-n // self.rows))
        self.held: list[list[np.ndarray]] = [[] for _ in range(self.buckets)]
        self.held_weights: list[list[np.ndarray]] = [[] for _ in range(self.buckets)]  # beside held, when summed
        self.held_bytes = 0
        self.spilled = [0] * self.buckets  # keys in each bucket's file
        shutil.rmtree(folder, ignore_errors=True)  # what a build killed before left

    def __enter__(self) -> LinkSorter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def add(self, src: np.ndarray, dst: np.ndarray, weights: np.ndarray | None = None) -> None:
        """Links ``src[i] -> dst[i]`` (node indices below ``n``), of ``weights[i]`` (1 when None) if ``summed``."""
        keep = src != dst
        src, dst = src[keep].astype(np.int64), dst[keep].astype(np.int64)
        weight = None
        if self.summed:
            weight = np.ones(len(src)) if weights is None else np.asarray(weights, dtype=np.float64)[keep]
        del keep
        bucket = dst // self.rows
        key = ((dst - bucket * self.rows) << 32) | src
        del src, dst
        if self.buckets == 1:
            self._hold(0, key, weight)
        else:
            # a stable sort of 16-bit numbers is numpy's radix sort
            order = np.argsort(bucket.astype(np.int16 if self.buckets < 1 << 15 else np.int32), kind="stable")
            bucket, key = bucket[order], key[order]
            weight = weight[order] if weight is not None else None
            cuts = np.searchsorted(bucket, np.arange(self.buckets + 1))
            for index in np.flatnonzero(np.diff(cuts)).tolist():
                part = slice(cuts[index], cuts[index + 1])
                self._hold(index, key[part], weight[part] if weight is not None else None)
        if self.held_bytes > self.memory:
            self._spill()

    def _hold(self, bucket: int, keys: np.ndarray, weights: np.ndarray | None = None) -> None:
        self.held[bucket].append(keys)
        self.held_bytes += keys.nbytes
        if weights is not None:
            self.held_weights[bucket].append(weights)
            self.held_bytes += weights.nbytes

    def _path(self, bucket: int, what: str = "keys") -> str:
        return os.path.join(self.folder, f"bucket-{bucket:05d}.{what}")

    def _spill(self) -> None:
        """Every bucket's keys (and weights) held in memory, appended to its files."""
        _private_folder(self.folder)
        for bucket, held in enumerate(self.held):
            if held:
                with open(self._path(bucket), "ab") as handle:
                    for keys in held:
                        handle.write(keys.data)  # a full disk raises OSError(ENOSPC), as the store's writes do
                        self.spilled[bucket] += len(keys)
                held.clear()
            if self.held_weights[bucket]:
                with open(self._path(bucket, "weights"), "ab") as handle:
                    for weights in self.held_weights[bucket]:
                        handle.write(weights.data)
                self.held_weights[bucket].clear()
        self.held_bytes = 0

    def _gathered(self, bucket: int, held: list[np.ndarray], what: str, dtype: type) -> np.ndarray:
        """A bucket's keys or weights, from its file and from memory, its file then gone."""
        spilled = self.spilled[bucket]
        values: np.ndarray = np.empty(spilled + sum(len(part) for part in held), dtype=dtype)
        if spilled:
            path = self._path(bucket, what)
            with open(path, "rb") as handle:
                handle.readinto(values[:spilled].view(np.uint8).data)
            os.remove(path)
        at = spilled
        held.reverse()
        while held:  # each part let go once copied: the bucket is not held twice over
            part = held.pop()
            values[at : at + len(part)] = part
            at += len(part)
            del part
        return values

    def _keys(self, bucket: int) -> np.ndarray:
        """A bucket's keys, from its file and from memory, its file then gone."""
        return self._gathered(bucket, self.held[bucket], "keys", np.int64)

    def _part(self, bucket: int, keys: np.ndarray) -> InLinkPart:
        """A bucket's part from its keys, sorted and each pair once."""
        first = bucket * self.rows
        rows = min(self.rows, self.n - first)
        # the keys are sorted: each row starts where its first key would go, and the sources are the keys' low
        # halves, copied out of them; no temporary a key (a bucket of a big graph holds a great many)
        indptr = np.searchsorted(keys, np.arange(rows + 1, dtype=np.int64) << 32)
        low = 0 if sys.byteorder == "little" else 1
        return InLinkPart(first, indptr, keys.view(np.int32)[low::2].copy())

    def parts(self) -> Iterator[InLinkPart]:
        """The in-link CSR, one part a bucket in target order: each target's sources ascending, once each."""
        if self.summed:
            raise TypeError("a summed LinkSorter gives weighted_parts()")
        for bucket in range(self.buckets):
            keys = self._keys(bucket)
            keys.sort()
            if len(keys):
                keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])]
            yield self._part(bucket, keys)
            del keys

    def weighted_parts(self) -> Iterator[WeightedPart]:
        """The in-link CSR of a ``summed`` sorter, as :meth:`parts`, with each pair's weight: the sum of its
        links' weights, added in the order given (a stable sort: the sum :func:`.fold_links` makes)."""
        if not self.summed:
            raise TypeError("weighted_parts() needs a LinkSorter made summed")
        for bucket in range(self.buckets):
            keys = self._keys(bucket)
            weights = self._gathered(bucket, self.held_weights[bucket], "weights", np.float64)
            order = np.argsort(keys, kind="stable")
            keys, weights = keys[order], weights[order]
            del order
            starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]])) if len(keys) else keys[:0]
            summed = np.add.reduceat(weights, starts) if len(keys) else weights
            del weights
            yield WeightedPart(self._part(bucket, keys[starts]), summed)
            del keys

    def close(self) -> None:
        """Drop what is held and the spill files."""
        self.held = [[] for _ in range(self.buckets)]
        self.held_weights = [[] for _ in range(self.buckets)]
        shutil.rmtree(self.folder, ignore_errors=True)
