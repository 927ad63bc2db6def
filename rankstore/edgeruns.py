"""A graph's links gathered in any order and given back grouped by source, in bounded memory.

A graph source whose sources recur across its batches (edges shuffled, or
several crawls one after another) cannot write each batch's out-links as it
comes: each source's links would be merged again and again.  Its links are
gathered here as ``(source << 32) | target`` keys of page ids: in memory up to
a bound, then sorted and spilled as a run file (native int64) in a temporary
folder beside the store; at the end the runs are merged block by block, so
that each source's links come out together, once, whatever their number.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

import numpy as np

__all__ = ["EdgeRuns", "split_keys"]

_LOW = 0xFFFFFFFF


def _distinct(keys: np.ndarray) -> np.ndarray:
    """Sorted keys without repeats (sort and compare: numpy 2's np.unique hashes, slower)."""
    if len(keys) < 2:
        return keys
    return keys[np.concatenate([[True], keys[1:] != keys[:-1]])]


@dataclass
class _Run:
    """One spilled run being merged: its file, and the keys read from it not yet given back."""

    handle: BinaryIO
    left: int  # keys still in the file
    keys: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def read(self, count: int) -> None:
        count = min(count, self.left)
        if count:
            more = np.fromfile(self.handle, dtype=np.int64, count=count)
            self.keys = np.concatenate([self.keys, more]) if len(self.keys) else more
            self.left -= count

    @property
    def done(self) -> bool:
        return self.left == 0


class EdgeRuns:
    """Links (page ids) gathered in any order, given back by :meth:`grouped` sorted by (source, target),
    without repeats, each source's links in one piece.  At most ``bound`` keys are held in memory while
    gathering (more go to run files under ``folder``); use as a context manager, or :meth:`close`."""

    def __init__(self, folder: str, bound: int):
        self.folder = folder
        self.bound = max(bound, 1)
        self.held: list[np.ndarray] = []
        self.count = 0  # keys held in memory
        self.runs: list[tuple[str, int]] = []  # (path, keys) of each spilled run
        self._spill_dir: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> EdgeRuns:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __len__(self) -> int:
        return self.count + sum(size for _, size in self.runs)

    def add(self, src: np.ndarray, dst: np.ndarray) -> None:
        if not len(src):
            return
        self.held.append(src.astype(np.int64) << 32 | dst.astype(np.int64))
        self.count += len(src)
        if self.count >= self.bound:
            self._spill()

    def _spill(self) -> None:
        keys = self._sorted_held()
        if not len(keys):
            return
        if self._spill_dir is None:
            self._spill_dir = tempfile.TemporaryDirectory(prefix=".rankstore-edges-", dir=self.folder)
        path = os.path.join(self._spill_dir.name, f"run-{len(self.runs):05d}.i64")
        keys.tofile(path)
        self.runs.append((path, len(keys)))

    def _sorted_held(self) -> np.ndarray:
        keys = np.concatenate(self.held) if self.held else np.zeros(0, dtype=np.int64)
        self.held, self.count = [], 0
        keys.sort()
        return _distinct(keys)

    def grouped(self, chunk: int = 1 << 20) -> Iterator[np.ndarray]:
        """Sorted keys without repeats, in pieces of about ``chunk`` keys (more for a source with more
        links): a source's links are never split between pieces."""
        if not self.runs:
            keys = self._sorted_held()
            start = 0
            while start < len(keys):
                end = min(start + chunk, len(keys))
                if end < len(keys):  # on to the end of the last source's links
                    end = int(np.searchsorted(keys, ((keys[end - 1] >> 32) + 1) << 32))
                yield keys[start:end]
                start = end
            return
        self._spill()
        yield from self._merged(max(chunk // len(self.runs), 1 << 16))

    def _merged(self, block: int) -> Iterator[np.ndarray]:
        """The runs merged: all that is known complete (sources below the least last source read of the runs
        not yet read through) is given back at each step; runs short of keys read a block more."""
        runs = [_Run(open(path, "rb"), size) for path, size in self.runs]
        try:
            for run in runs:
                run.read(block)
            while True:
                active = [run for run in runs if not run.done]
                if active:
                    limit = min(int(run.keys[-1]) >> 32 for run in active) << 32
                else:
                    limit = None
                pieces = []
                for run in runs:
                    cut = len(run.keys) if limit is None else int(np.searchsorted(run.keys, limit))
                    if cut:
                        pieces.append(run.keys[:cut])
                        run.keys = run.keys[cut:]
                if pieces:
                    keys = np.concatenate(pieces)
                    keys.sort()
                    yield _distinct(keys)
                if limit is None:
                    return
                for run in active:
                    # the run that set the limit holds only links of that source: it reads on past it
                    if len(run.keys) < block or int(run.keys[-1]) >> 32 == limit >> 32:
                        run.read(block)
        finally:
            for run in runs:
                run.handle.close()

    def close(self) -> None:
        self.held, self.count, self.runs = [], 0, []
        if self._spill_dir is not None:
            self._spill_dir.cleanup()
            self._spill_dir = None


def split_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sources, targets) of keys made by :class:`EdgeRuns`."""
    return keys >> 32, keys & _LOW
