"""Rankings: named, versioned results, each a set of arrays indexed by page.

A version is written in one transaction as ``ranking_blocks`` rows (see
:mod:`.schema`): O(pages) in time and on disk, whatever the number of links.
Readers load a version's arrays once (:meth:`Rankings.ranking_arrays`);
versions never change once written, so what was loaded stays true.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, overload

import numpy as np
from numpy.typing import ArrayLike

from ..stop_at import stop_at
from .base import Part
from .errors import RankingNotFound, StoreError
from .mapped import read_ahead
from .schema import BLOCK_PAGES

if TYPE_CHECKING:
    from . import Store

__all__ = ["Ranking", "RankingArrays", "RankingBlocks", "RankingRows", "RankingNotFound", "Rankings", "StoreError"]

_KEEP_ARRAYS = 4  # ranking versions whose arrays a reader keeps loaded
_DENSE_SHARE = 64  # a list of more than 1/64 of the pages is narrowed down the order by score (best_of_sorted)
_DENSE_STEP = 4096  # best pages looked up in the list at once
_COARSE_FROM = 1 << 16  # pages in a list from which it is narrowed by coarse positions first

# a block's arrays as RankingBlocks reads them: scores, inlinks, best, extra (None where the version has none)
_Block = tuple[np.ndarray, np.ndarray, np.ndarray, "np.ndarray | None"]
_SCORES, _INLINKS, _BEST, _EXTRA = range(4)


@dataclass
class Ranking:
    id: int
    name: str
    version: int
    params: dict
    iterations: int
    residuals: list[float]
    created_at: str
    pages: int  # pages (or hosts, for a host-level ranking) it ranks
    seconds: float | None
    level: str = "page"
    build: int | None = None  # the build whose graph it ranked (None: not known)

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}"


@dataclass
class RankingArrays:
    """One ranking version by page index (page id - 1); pages added since are not in it."""

    scores: np.ndarray  # float64
    inlinks: np.ndarray  # int32
    best: np.ndarray  # int32 page indices, best first
    position: np.ndarray  # int32: where each page stands in ``best``
    extra: np.ndarray | None  # float64 (NaN where none), or None
    votes: np.ndarray | None = None  # float64: d·PR(v)/W(v), what a unit of link weight from v gives; None: not kept
    linked: np.ndarray | None = None  # float64: the part of each page's score its backlinks give (Σ votes·w)
    # votes and linked left unread though stored (ranking_arrays(votes=False)): None above says nothing then
    votes_left: bool = False

    @property
    def pages(self) -> int:
        return len(self.scores)

    @functools.cached_property
    def coarse(self) -> np.ndarray:
        """Each page's position in at most 256 steps, one byte a page: a quarter of ``position``'s memory
        traffic when a long list of pages is narrowed to its best (see :func:`best_of`)."""
        shift = max(0, (self.pages - 1).bit_length() - 8)
        return (self.position >> shift).astype(np.uint8)

    def best_of(self, indices: np.ndarray, count: int) -> np.ndarray:
        """Where the ``count`` best pages of ``indices`` stand in it, best first (pages outside this version last).

        A long list is narrowed by the coarse positions first, so that only
        the few pages that can be among the best are looked up exactly.
        """
        indices = np.asarray(indices)
        if len(indices) > _COARSE_FROM and count < len(indices) // 16 and bool(indices.max() < self.pages):
            steps = np.take(self.coarse, indices, mode="clip")
            enough = int(np.searchsorted(np.cumsum(np.bincount(steps, minlength=256)), count))
            near = np.flatnonzero(steps <= enough)
            return near[_smallest(np.take(self.position, indices[near], mode="clip"), count)]
        return _smallest(self.positions_of(indices), count)

    def best_of_sorted(self, indices: np.ndarray, count: int) -> np.ndarray:
        """:meth:`best_of` for ascending ``indices`` (a site's in-links as stored): a long list, a large share of
        all pages, is searched the other way, down the order by score until ``count`` of it are met (the most
        linked of 135 million sites, with 19 million in-links: a few hundred of the best pages looked up)."""
        indices = np.asarray(indices)
        if len(indices) * _DENSE_SHARE < self.pages or count >= len(indices) or not len(indices):
            return self.best_of(indices, count)
        found: list[np.ndarray] = []
        have = 0
        for start in range(0, self.pages, _DENSE_STEP):
            candidates = self.best[start : start + _DENSE_STEP]
            at = np.minimum(np.searchsorted(indices, candidates), len(indices) - 1)
            hit = indices[at] == candidates
            found.append(at[hit])
            have += int(hit.sum())
            if have >= count:
                break
        return np.concatenate(found)[:count]

    @functools.cached_property
    def coarse_votes(self) -> np.ndarray:
        """Each page's vote in 2,048 steps that grow with it (a float32's exponent and its first three bits),
        two bytes a page: narrows a long list to its largest votes as ``coarse`` does to its best pages."""
        assert self.votes is not None
        return (self.votes.astype(np.float32).view(np.int32) >> 20).astype(np.uint16)

    def largest_votes_of(self, indices: np.ndarray, count: int) -> np.ndarray:
        """Where the ``count`` pages of ``indices`` with the largest votes stand in it, largest first, ties by
        rank (pages outside this version vote 0).  What links from them give is ``votes[v]`` each when links
        are unweighted, so this is the order of their contributions, without computing each one."""
        assert self.votes is not None
        indices = np.asarray(indices)
        if len(indices) > _COARSE_FROM and count < len(indices) // 16 and bool(indices.max() < self.pages):
            steps = np.take(self.coarse_votes, indices)
            from_top = np.cumsum(np.bincount(steps, minlength=2048)[::-1])
            lowest = 2047 - int(np.searchsorted(from_top, count))  # the steps from the top that hold ``count``
            near = np.flatnonzero(steps >= lowest)
        else:
            near = np.arange(len(indices))
        chosen = indices[near]
        values = np.where(chosen < self.pages, self.votes[np.minimum(chosen, self.pages - 1)], 0.0)
        order = np.lexsort((self.positions_of(chosen), -values))
        return near[order[:count]]

    def places(self, indices: ArrayLike) -> np.ndarray:
        """How many pages score more than each of ``indices`` (all inside this version), as int64: its place
        among equals, the first of its run of equal scores.  Every view reads rank (place + 1) and percentile
        from it, so that ties read alike; ``position`` breaks ties by index, for an order, and is shown nowhere.
        A few positions at a time (a page's panel, its backlinks) are remembered for the version: the same
        pages recur from panel to panel, and a run's start is a bisection of several array passes."""
        at = self.position[np.asarray(indices, dtype=np.int64)].astype(np.int64)
        if len(at) > _PLACES_ASKED_MOST:
            return run_starts(self.scores, self.best, at)
        # the proxy's threads share a version's arrays: what is answered is read into a dict of this call's
        # own first, so that another thread starting the memory over meanwhile takes nothing from it
        known = self._places_known
        wanted = at.tolist()
        found = {position: place for position in wanted if (place := known.get(position)) is not None}
        new = [position for position in dict.fromkeys(wanted) if position not in found]
        if new:
            searched = dict(zip(new, run_starts(self.scores, self.best, np.array(new, dtype=np.int64)).tolist()))
            found.update(searched)
            if len(known) + len(new) > _PLACES_KNOWN_MOST:
                known.clear()
            known.update(searched)
        return np.array([found[position] for position in wanted], dtype=np.int64)

    @functools.cached_property
    def _places_known(self) -> dict[int, int]:
        """Positions' places found so far (:meth:`places`)."""
        return {}

    def positions_of(self, indices: np.ndarray) -> np.ndarray:
        """Positions of page indices; a page outside this version comes after all of them."""
        indices = np.asarray(indices, dtype=np.int64)
        inside = indices < self.pages
        read_ahead(self.position, indices)
        if inside.all():
            return self.position[indices]
        out = np.full(len(indices), self.pages, dtype=np.int64)
        out[inside] = self.position[indices[inside]]
        return out


_PLACES_ASKED_MOST = 64  # positions asked at once past which places() searches them all (a view of many rows)
_PLACES_KNOWN_MOST = 20_000  # places remembered a version before they start over


def run_starts(scores: np.ndarray, best: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Where the run of equal scores that holds each position ``at`` of ``best`` (scores descending) begins:
    how many score more.  Only positions tied with the one above are searched, by bisection back from each,
    all at once (a run can be most of a version: the pages no walk reaches, scored 0)."""
    out = at.copy()
    score = scores[best[at]]
    tied = at > 0
    tied[tied] = scores[best[at[tied] - 1]] == score[tied]
    if not tied.any():
        return out
    low = np.zeros(int(np.count_nonzero(tied)), dtype=np.int64)
    high = at[tied]
    wanted = score[tied]
    while True:
        open_ = low < high
        if not open_.any():
            break
        middle = (low + high) // 2
        more = scores[best[middle]] > wanted
        low = np.where(open_ & more, middle + 1, low)
        high = np.where(open_ & ~more, middle, high)
    out[tied] = low
    return out


def _smallest(values: np.ndarray, count: int) -> np.ndarray:
    """Indices of the ``count`` smallest values, smallest first (values are distinct)."""
    if count < len(values):
        part = np.argpartition(values, count - 1)[:count]
        return part[np.argsort(values[part], kind="stable")]
    return np.argsort(values, kind="stable")


class _BlockColumn:
    """One array of a version, read by the blocks that hold the pages asked for (:class:`RankingBlocks`)."""

    def __init__(self, blocks: RankingBlocks, column: int):
        self.blocks = blocks
        self.column = column

    @overload
    def __getitem__(self, index: int) -> np.generic: ...

    @overload
    def __getitem__(self, index: slice) -> np.ndarray: ...

    def __getitem__(self, index: int | slice) -> np.generic | np.ndarray:
        if isinstance(index, slice):
            start, stop, step = index.indices(self.blocks.pages)
            if step != 1:
                raise ValueError("a version's blocks are read in runs of pages")
            return self.blocks.run(self.column, start, stop)
        if not 0 <= index < self.blocks.pages:
            raise IndexError(f"page index {index} outside a version of {self.blocks.pages}")
        values = self.blocks.block(index // BLOCK_PAGES)[self.column]
        assert values is not None
        return values[index % BLOCK_PAGES]


class _BlockPositions:
    """Each page's position in ``best``, found by a binary search down the order (:meth:`RankingBlocks.position_of`)."""

    def __init__(self, blocks: RankingBlocks):
        self.blocks = blocks

    def __getitem__(self, index: int) -> int:
        return self.blocks.position_of(int(index))


class RankingBlocks:
    """One ranking version read a block (:data:`BLOCK_PAGES` pages) at a time, for a view that shows a few of
    its rows: the head of its order by score and the scores of the pages shown, never its whole arrays (at
    135 million sites, seconds and gigabytes for a handful of rows).

    It answers as :class:`RankingArrays` does where a view reads rows (``pages``, ``scores[i]``,
    ``inlinks[i]``, ``extra``, ``position[i]``, ``best[a:b]``); read it inside the snapshot that found the
    version.  A page's position is not stored: it is found in ``best`` by a binary search on (score
    descending, index), the order :func:`order_by_score` wrote, a few blocks for any size.
    """

    def __init__(self, db: sqlite3.Connection, ranking_id: int, pages: int):
        self.db = db
        self.ranking_id = ranking_id
        self.pages = pages
        self.blocks_read = 0  # rows of ``ranking_blocks`` read so far
        self._blocks: dict[int, _Block] = {}
        self.scores = _BlockColumn(self, _SCORES)
        self.inlinks = _BlockColumn(self, _INLINKS)
        self.best = _BlockColumn(self, _BEST)
        self.position = _BlockPositions(self)

    @property
    def extra(self) -> _BlockColumn | None:
        """The variant's values (spam mass), or None where the version has none (as in :class:`RankingArrays`)."""
        if not self.pages or self.block(0)[_EXTRA] is None:
            return None
        return _BlockColumn(self, _EXTRA)

    def block(self, number: int) -> _Block:
        """Block ``number``'s arrays (scores, inlinks, best, extra), read once."""
        found = self._blocks.get(number)
        if found is None:
            found = self._blocks[number] = self._read(number)
        return found

    def _read(self, number: int) -> _Block:
        row = self.db.execute(
            "SELECT scores, inlinks, best, extra FROM ranking_blocks WHERE ranking_id = ? AND first = ?",
            (self.ranking_id, number * BLOCK_PAGES),
        ).fetchone()
        if row is None:
            raise StoreError(f"ranking version {self.ranking_id} changed while it was read")
        self.blocks_read += 1
        scores, inlinks, best, extra = row
        return (
            np.frombuffer(scores, dtype=">f8").astype(np.float64),
            np.frombuffer(inlinks, dtype=">i4").astype(np.int32),
            np.frombuffer(best, dtype=">i4").astype(np.int32),
            None if extra is None else np.frombuffer(extra, dtype=">f8").astype(np.float64),
        )

    def run(self, column: int, start: int, stop: int) -> np.ndarray:
        """Pages ``start`` to ``stop`` (not included) of one array, from the blocks that hold them."""
        parts = []
        for number in range(start // BLOCK_PAGES, (stop - 1) // BLOCK_PAGES + 1 if stop > start else 0):
            values = self.block(number)[column]
            assert values is not None
            first = number * BLOCK_PAGES
            parts.append(values[max(start - first, 0) : stop - first])
        dtype = np.int32 if column in (_INLINKS, _BEST) else np.float64
        return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)

    def _key(self, at: int) -> tuple[float, int]:
        """Where ``best[at]`` sorts: (score negated, index), ascending down the order."""
        index = int(self.best[at])
        return -float(self.scores[index]), index

    def first_at_most(self, score: float) -> int:
        """How many pages score more than ``score``: where the first at most ``score`` stands."""
        low, high = 0, self.pages
        while low < high:
            middle = (low + high) // 2
            if -self._key(middle)[0] > score:
                low = middle + 1
            else:
                high = middle
        return low

    def places(self, indices: ArrayLike) -> np.ndarray:
        """:meth:`RankingArrays.places`: how many pages score more than each, a binary search down the order."""
        wanted = np.asarray(indices, dtype=np.int64).tolist()
        return np.array([self.first_at_most(float(self.scores[i])) for i in wanted], dtype=np.int64)

    def position_of(self, index: int) -> int:
        """Where page ``index`` stands in ``best``."""
        wanted = (-float(self.scores[index]), index)
        low, high = 0, self.pages
        while low < high:
            middle = (low + high) // 2
            if self._key(middle) < wanted:
                low = middle + 1
            else:
                high = middle
        if low < self.pages and int(self.best[low]) == index:
            return low
        # not in the order searched (a score that is NaN): the order read whole, as a last resort
        return int(np.flatnonzero(self.run(_BEST, 0, self.pages) == index)[0])


RankingRows = RankingArrays | RankingBlocks  # what a view reads rows from: a version's arrays, or its blocks


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def order_by_score(scores: np.ndarray) -> np.ndarray:
    """Page indices best first, equal scores by index: ``np.argsort(-scores, kind="stable")``, faster.

    numpy's unstable sort is about 3x faster than its stable one; only the
    runs of equal scores are then put in index order.
    """
    order = np.argsort(-scores)
    ranked = scores[order]
    tied = np.zeros(len(order), dtype=bool)
    same = ranked[1:] == ranked[:-1]
    tied[1:] |= same
    tied[:-1] |= same
    if tied.any():
        runs = np.cumsum(np.concatenate([[True], ~same]))[tied]
        if len(scores) < 2**32 and len(runs) and int(runs[-1]) < 2**31:
            # (run, index) as one int64 key, each distinct: numpy's unstable sort of it, not a lexsort of two
            key = (runs.astype(np.int64) << 32) | order[tied]
            del runs
            key.sort()
            order[tied] = key & 0xFFFFFFFF
        else:
            order[tied] = order[tied][np.lexsort((order[tied], runs))]
    return order


def ranking_rows(
    ranking_id: int,
    scores: np.ndarray,
    inlinks: np.ndarray,
    extra: np.ndarray | None,
    votes: np.ndarray | None = None,
    linked: np.ndarray | None = None,
    best: np.ndarray | None = None,
):
    """``ranking_blocks`` rows of one version (big-endian, for the SQL views), a block's slices converted at a
    time: no second copy of each array (at 135 million sites, gigabytes).  ``best``: the order by score, if
    the caller made it already (:func:`order_by_score`)."""
    if best is None:
        best = order_by_score(scores).astype(np.int32)

    def packed(values: np.ndarray | None, kind: str, first: int, last: int) -> bytes | None:
        return None if values is None else np.asarray(values[first:last], dtype=kind).tobytes()

    for first in range(0, len(scores), BLOCK_PAGES):
        last = min(first + BLOCK_PAGES, len(scores))
        yield (
            ranking_id,
            first,
            packed(scores, ">f8", first, last),
            packed(inlinks, ">i4", first, last),
            packed(best, ">i4", first, last),
            packed(extra, ">f8", first, last),
            packed(votes, ">f8", first, last),
            packed(linked, ">f8", first, last),
        )


class RankingLevelError(StoreError):
    """A question about pages asked of a ranking of hosts or sites (its scores are by host or site, not by page).

    Its message is the CLI's.  Every audience refuses in the words of
    :meth:`refusal` and names its own cure: the CLI its options (here), the
    proxy and its own pages their choice of ranking.
    """

    def __init__(self, ranking: Ranking, page_rankings: Sequence[str]):
        self.ranking = ranking
        self.page_rankings = list(page_rankings)  # the store's page rankings, ``pagerank`` first
        instead = f"use --ranking {self.page_rankings[0]}" if self.page_rankings else "rank pages with `rankstore rank`"
        super().__init__(
            self.refusal(f"{instead}, or `rankstore top --ranking {ranking.name}` for its {ranking.level}s")
        )

    def refusal(self, cure: str) -> str:
        """The refusal, then ``cure``: how the asker chooses a page ranking where it asked."""
        return f"{self.ranking.name} ranks {self.ranking.level}s, not pages: {cure}"


def _pack_teleport(teleport: tuple[np.ndarray, np.ndarray] | None) -> bytes | None:
    if teleport is None:
        return None
    ids, weights = teleport
    pairs = np.empty(len(ids), dtype=[("id", ">i4"), ("weight", ">f8")])
    pairs["id"], pairs["weight"] = ids, weights
    return pairs.tobytes()


class _Column:
    """One column of a version's blocks, converted from the stored big-endian into an array sized once, block by
    block; a column stored NULL (no extra value, no votes kept) is None."""

    def __init__(self, size: int, stored: str, native: type):
        self.size, self.stored, self.native = size, stored, native
        self.values: np.ndarray | None = None
        self.done = 0

    def add(self, blob: bytes | None) -> None:
        if blob is None:
            return
        block = np.frombuffer(blob, dtype=self.stored)
        if self.values is None:
            self.values = np.empty(self.size, dtype=self.native)
        end = self.done + len(block)
        if end > self.size:
            raise StoreError("a ranking's blocks changed while they were read")
        self.values[self.done : end] = block
        self.done = end

    @overload
    def array(self, empty: Literal[True]) -> np.ndarray: ...
    @overload
    def array(self, empty: bool = False) -> np.ndarray | None: ...
    def array(self, empty: bool = False) -> np.ndarray | None:
        """The column read; with no block read, None (a column stored NULL), or with ``empty`` no values."""
        if self.values is None:
            return np.zeros(0, dtype=self.native) if empty else None
        return self.values[: self.done]


class Rankings(Part):
    """Reading and writing rankings; part of :class:`~rankstore.store.Store`."""

    def __init__(self, store: Store, arrays: dict[int, RankingArrays]):
        super().__init__(store)
        # the versions' arrays read so far, maybe shared with other stores of the same file (a version's
        # arrays never change)
        self._arrays = arrays

    def write_ranking(
        self,
        name: str,
        params: dict,
        iterations: int,
        residuals: list[float],
        page_ids,
        scores,
        inlinks,
        extra=None,
        seconds: float | None = None,
        votes=None,
        linked=None,
        teleport: tuple[np.ndarray, np.ndarray] | None = None,
        level: str = "page",
        best: np.ndarray | None = None,
        keep: int = 2,
    ) -> Ranking:
        """Store a new version of ranking ``name`` in one transaction (``best``: its pages by score, if made
        already, :func:`order_by_score`).

        ``page_ids`` must be every page of the store (1..n); ``scores``,
        ``inlinks`` and ``extra`` are arrays by page index.  The scores of
        ``keep`` versions are kept, this one among them (0: every version's):
        by default the previous one (warm starts, comparisons, history), and
        older ones' go; their rows stay, as their ids and the build they ranked.  ``votes``
        (by page index) lets backlinks show each link's contribution;
        ``teleport`` is the rank source E where it is not uniform, as (page
        ids, weights summing to 1).
        """
        scores = np.asarray(scores, dtype=np.float64)
        if best is None:
            best = order_by_score(scores).astype(np.int32)
        with self.transaction():
            table = {"host": "hosts", "site": "sites"}.get(level, "pages")
            pages = self.db.execute(f"SELECT max(id) FROM {table}").fetchone()[0] or 0  # ids are dense
            if pages != len(page_ids) or len(page_ids) != len(scores):
                raise StoreError("the pages changed while ranking: run `rankstore rank` again")
            # the highest number the name has had, though ``forget`` dropped it: a number is never given twice
            row = self.db.execute(
                "SELECT max(coalesce(max(version), 0), coalesce((SELECT last FROM ranking_names WHERE name = ?1), 0)),"
                " (SELECT level FROM rankings WHERE name = ?1 ORDER BY version DESC LIMIT 1)"
                " FROM rankings WHERE name = ?1",
                (name,),
            ).fetchone()
            if row[1] is not None and row[1] != level:  # a reader would look one level's ids up as the other's
                raise StoreError(
                    f"{name} ranks {row[1]}s: a ranking keeps its level (give another name for a {level} ranking)"
                )
            version = (row[0] or 0) + 1
            cursor = self.db.execute(
                "INSERT INTO rankings (name, version, params, iterations, residuals, created_at, pages, seconds,"
                " teleport, level, build) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                " (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'graph_build'))",
                (
                    name,
                    version,
                    json.dumps(params, sort_keys=True),
                    iterations,
                    json.dumps(residuals),
                    _now(),
                    len(scores),
                    seconds,
                    _pack_teleport(teleport),
                    level,
                ),
            )
            ranking_id = cursor.lastrowid  # never a dropped version's (AUTOINCREMENT)
            assert ranking_id is not None
            self.db.execute(
                "INSERT INTO ranking_names (name, last) VALUES (?, ?)"
                " ON CONFLICT (name) DO UPDATE SET last = excluded.last",
                (name, version),
            )
            self.db.executemany(
                "INSERT INTO ranking_blocks (ranking_id, first, scores, inlinks, best, extra, votes, linked)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                ranking_rows(ranking_id, scores, inlinks, extra, votes, linked, best),
            )
            stop_at("rank-written")
            old = [
                r[0]
                for r in self.db.execute(
                    "SELECT id FROM rankings WHERE name = ? AND version < ? ORDER BY version DESC", (name, version)
                )
            ]
            for old_id in old[keep - 1 :] if keep > 0 else []:
                self.db.execute("DELETE FROM ranking_blocks WHERE ranking_id = ?", (old_id,))
        # the version's mapped files, for the proxy's processes to share from its first page; the dropped
        # versions' files go
        position = np.empty(len(best), dtype=np.int32)
        position[best] = np.arange(len(best), dtype=np.int32)
        self.store.mapped.keep_ranking(
            ranking_id,
            {
                "scores": scores,
                "inlinks": inlinks,
                "best": best,
                "position": position,
                "extra": extra,
                "votes": votes,
                "linked": linked,
            },
        )
        del position
        if level != "page":  # and the level's name keys, which the proxy's estimates look names up by
            self.store.levels.level_keys(level)
        self.store.mapped.prune()
        return self.ranking(name, version)

    def ranking(self, name: str = "pagerank", version: int | None = None) -> Ranking:
        sql = (
            "SELECT id, name, version, params, iterations, residuals, created_at, pages, seconds, level, build"
            " FROM rankings"
            " WHERE name = ?" + (" AND version = ?" if version else "") + " ORDER BY version DESC LIMIT 1"
        )
        row = self.db.execute(sql, (name, version) if version else (name,)).fetchone()
        if row is None:
            known = ", ".join(r[0] for r in self.db.execute("SELECT DISTINCT name FROM rankings ORDER BY 1"))
            raise RankingNotFound(
                f"no ranking {name!r}"
                + (f" version {version}" if version else "")
                + (f" (the store has: {known})" if known else " (run `rankstore rank` first)")
            )
        return Ranking(
            row[0],
            row[1],
            row[2],
            json.loads(row[3]),
            row[4],
            json.loads(row[5]),
            row[6],
            row[7],
            row[8],
            row[9],
            row[10],
        )

    def ranking_with_history(self, ranking: Ranking) -> Ranking | None:
        """The newest version of ``ranking``'s name, up to ``ranking`` itself, with a convergence history to draw:
        at least two residuals above 0 (a warm start from an answer already within ``tol`` records one, or
        none above 0).  None when no version has one."""
        row = self.db.execute(
            "SELECT version FROM rankings WHERE name = ? AND version <= ?"
            " AND (SELECT count(*) FROM json_each(residuals) WHERE value > 0) > 1"
            " ORDER BY version DESC LIMIT 1",
            (ranking.name, ranking.version),
        ).fetchone()
        return self.ranking(ranking.name, row[0]) if row else None

    def newest_build(self) -> int | None:
        """The newest build that may have changed the graph, finished or not (None before the first): one cut
        short has changed pages too, and ``rank`` derives the graph of what it left (its number is then the
        version's ``build``); a finished one that wrote no page and no link (only a ranks file) has not."""
        return self.db.execute(
            "SELECT max(id) FROM builds WHERE status != 'complete' OR pages > 0 OR links > 0"
        ).fetchone()[0]

    def stale_note(self, ranking: Ranking) -> str | None:
        """What to say when a newer build than the one ``ranking`` ranked exists; None while it is current."""
        if ranking.params.get("kind") == "imported":  # another's ranking of another graph: no build of ours ages it
            return None
        newest = self.newest_build()
        if newest is None or (ranking.build is not None and ranking.build >= newest):
            return None
        if ranking.level != "page":
            named = "" if ranking.name == f"{ranking.level}rank" else f" --name {ranking.name}"
            cure = f"run `rankstore rank --level {ranking.level}{named}`"
        elif ranking.name == "pagerank" and ranking.params.get("kind", "pagerank") == "pagerank":
            cure = "run `rankstore rank`"
        else:  # a variant: its seeds and options made it, and only they make it again
            cure = f"rank it again as it was made (`rankstore stats --ranking {ranking.name}` shows how)"
        return f"ranking {ranking.label} predates build {newest}: {cure}"

    def ranking_params(self, ranking_id: int) -> dict:
        row = self.db.execute("SELECT params FROM rankings WHERE id = ?", (ranking_id,)).fetchone()
        return json.loads(row[0]) if row else {}

    def teleport_of(self, ranking_id: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The version's rank source E as (page ids, weights), or None where it was uniform."""
        row = self.db.execute("SELECT teleport FROM rankings WHERE id = ?", (ranking_id,)).fetchone()
        if row is None or row[0] is None:
            return None
        pairs = np.frombuffer(row[0], dtype=[("id", ">i4"), ("weight", ">f8")])
        return pairs["id"].astype(np.int64), pairs["weight"].astype(np.float64)

    def cold_iterations(self, name: str) -> int | None:
        """Iterations of the newest version of ``name`` computed without a warm start."""
        row = self.db.execute(
            "SELECT iterations FROM rankings WHERE name = ? AND json_extract(params, '$.warm_from') IS NULL"
            " ORDER BY version DESC LIMIT 1",
            (name,),
        ).fetchone()
        return row[0] if row else None

    def all(self) -> list[Ranking]:
        names = [r[0] for r in self.db.execute("SELECT DISTINCT name FROM rankings ORDER BY name")]
        return [self.ranking(name) for name in names]

    def ranking_head(self, name: str = "pagerank") -> tuple[int, int]:
        """(id, pages) of the newest version of a ranking: a cheap check for a new version."""
        row = self.db.execute(
            "SELECT id, pages FROM rankings WHERE name = ? ORDER BY version DESC LIMIT 1", (name,)
        ).fetchone()
        if row is None:
            raise RankingNotFound(f"no ranking {name!r} (run `rankstore rank` first)")
        return row[0], row[1]

    def ranking_arrays(self, ranking_id: int, votes: bool = True) -> RankingArrays:
        """A version's arrays, read once per reader (call inside a snapshot to pair them with its head).
        Mapped from its files beside the store (:mod:`.mapped`: nothing read, one copy for every process),
        which a reader writes from what it reads when they are missing.  ``votes`` False, where they cannot be
        written: its votes and linked parts need not be read (``votes_left``), as where only scores, positions
        and in-links are asked (a level's estimates: at a domain graph's 135 million sites, two of its five
        gigabytes, in each process of the proxy); read whole when a later caller asks for them."""
        cache = self._arrays
        held = cache.get(ranking_id)
        if held is not None and (not votes or not held.votes_left):
            return held
        mapped = self._mapped(ranking_id)
        if mapped is not None:
            return mapped
        # read whole where the files can be written from it (every reader after maps them), else as asked
        votes = votes or self.store.mapped.writable()
        # each column's blocks converted into one array sized once: no list of the blocks, no joined copy (a
        # site ranking of 135 million sites is 4.5 GB of arrays, which those would have doubled and more)
        size = self.db.execute(
            "SELECT coalesce(sum(length(scores)), 0) / 8 FROM ranking_blocks WHERE ranking_id = ?", (ranking_id,)
        ).fetchone()[0]
        columns = [_Column(size, ">f8", np.float64), _Column(size, ">i4", np.int32), _Column(size, ">i4", np.int32)]
        columns += [_Column(size, ">f8", np.float64) for _ in range(3)]  # extra, votes, linked: where stored
        # the last two columns of a row left out: their overflow pages are not read either
        wanted = "votes, linked" if votes else "NULL, NULL"
        for row in self.db.execute(
            f"SELECT scores, inlinks, best, extra, {wanted} FROM ranking_blocks WHERE ranking_id = ? ORDER BY first",
            (ranking_id,),
        ):
            for column, blob in zip(columns, row):
                column.add(blob)
        extra, stored_votes, linked = (column.array() for column in columns[3:])
        # never NULL: empty only for a version of no block (a ranking of nothing)
        scores, inlinks, order = (column.array(empty=True) for column in columns[:3])
        position = np.empty(len(order), dtype=np.int32)
        position[order] = np.arange(len(order), dtype=np.int32)
        arrays = RankingArrays(scores, inlinks, order, position, extra, stored_votes, linked, votes_left=not votes)
        kept = {"scores": scores, "inlinks": inlinks, "best": order, "position": position, "extra": extra}
        if votes and self.store.mapped.keep_ranking(ranking_id, kept | {"votes": stored_votes, "linked": linked}):
            # read once, written once: this reader and every other maps the files, and the copy read goes
            mapped = self._mapped(ranking_id)
            if mapped is not None:
                return mapped
        if len(cache) >= _KEEP_ARRAYS:
            cache.pop(list(cache)[0], None)  # a copy first: the proxy's threads share one reader's cache
        cache[ranking_id] = arrays
        return arrays

    def _mapped(self, ranking_id: int) -> RankingArrays | None:
        """The version's arrays from its mapped files (:mod:`.mapped`), kept by this reader; None without them."""
        columns = self.store.mapped.ranking_columns(ranking_id)
        if columns is None:
            return None
        arrays = RankingArrays(
            columns["scores"],
            columns["inlinks"],
            columns["best"],
            columns["position"],
            columns.get("extra"),
            columns.get("votes"),
            columns.get("linked"),
        )
        if len(self._arrays) >= _KEEP_ARRAYS:
            self._arrays.pop(list(self._arrays)[0], None)
        self._arrays[ranking_id] = arrays
        return arrays

    def rows_reader(self, ranking_id: int, rows: int, positions: bool = False) -> RankingRows:
        """What a view that shows ``rows`` rows of a version reads them from: its arrays when this reader holds
        them already, or when reading them whole costs fewer blocks than ``rows`` would (``positions``: each
        row's position is searched for, a few blocks a row); else its blocks, read as the rows ask
        (:class:`RankingBlocks`).  Call it inside the snapshot that found the version."""
        if ranking_id in self._arrays:
            return self._arrays[ranking_id]
        row = self.db.execute("SELECT pages FROM rankings WHERE id = ?", (ranking_id,)).fetchone()
        if row is None:
            raise StoreError(f"ranking version {ranking_id} changed while it was read")
        pages = row[0]
        blocks = -(-pages // BLOCK_PAGES)
        each = 1 + 2 * max(pages, 1).bit_length() if positions else 1  # blocks a row may read
        if rows * each + rows // BLOCK_PAGES + 1 >= blocks:
            return self.ranking_arrays(ranking_id)
        return RankingBlocks(self.db, ranking_id, pages)

    def scores_of(self, ranking_id: int) -> tuple[np.ndarray, np.ndarray]:
        """(page ids, scores) of a stored ranking version, as numpy arrays (the scores alone are read)."""
        if ranking_id in self._arrays:
            scores = self._arrays[ranking_id].scores
        else:
            blobs = self.db.execute(
                "SELECT scores FROM ranking_blocks WHERE ranking_id = ? ORDER BY first", (ranking_id,)
            ).fetchall()
            scores = np.frombuffer(b"".join(blob for (blob,) in blobs), dtype=">f8").astype(np.float64)
        return np.arange(1, len(scores) + 1, dtype=np.int64), scores

    def score_range(self, ranking: Ranking) -> tuple[float, float]:
        """(lowest positive, highest) score of a ranking, for bar widths.

        A personalised ranking scores 0 every page its rank source cannot
        reach: the bars' log scale starts from the lowest score above 0, and a
        page at 0 has no bar (:func:`rankstore.display.bar_width`).
        """
        with self.snapshot():
            if ranking.id in self._arrays:
                arrays = self._arrays[ranking.id]
                if not arrays.pages:
                    return 0.0, 0.0
                # the last above 0 in ``best``'s order, by bisection: a few pages of mapped arrays touched, where
                # a pass over the scores would bring the whole file into each process
                low, high = 0, arrays.pages
                while low < high:
                    middle = (low + high) // 2
                    if arrays.scores[arrays.best[middle]] > 0:
                        low = middle + 1
                    else:
                        high = middle
                if not low:
                    return 0.0, 0.0
                return float(arrays.scores[arrays.best[low - 1]]), float(arrays.scores[arrays.best[0]])
            # the scores are in ``best``'s order: its first and the last above 0, a few blocks read
            blocks = RankingBlocks(self.db, ranking.id, ranking.pages)
            if not ranking.pages:
                return 0.0, 0.0
            last = ranking.pages - 1
            positive = last + 1 if float(blocks.scores[int(blocks.best[last])]) > 0 else blocks.first_at_most(0.0)
            if not positive:
                return 0.0, 0.0
            return float(blocks.scores[int(blocks.best[positive - 1])]), float(blocks.scores[int(blocks.best[0])])

    def page_rankings(self) -> list[str]:
        """The names of the store's page rankings, ``pagerank`` first."""
        names = [
            row[0]
            for row in self.db.execute(
                "SELECT DISTINCT name FROM rankings r WHERE level = 'page'"
                " AND version = (SELECT max(version) FROM rankings WHERE name = r.name) ORDER BY name"
            )
        ]
        return sorted(names, key=lambda name: name != "pagerank")

    def page_ranking(self, name: str = "pagerank") -> Ranking:
        """The newest version of ranking ``name``, which must rank pages: :class:`RankingLevelError` for a host
        ranking, :class:`~.errors.RankingNotFound` for none."""
        ranking = self.ranking(name)
        if ranking.level != "page":
            raise RankingLevelError(ranking, self.page_rankings())
        return ranking

    def page_head(self, name: str) -> tuple[int, int]:
        """(id, pages) of the newest version of page ranking ``name``: :meth:`ranking_head` with the level checked."""
        row = self.db.execute(
            "SELECT id, pages, level FROM rankings WHERE name = ? ORDER BY version DESC LIMIT 1", (name,)
        ).fetchone()
        if row is not None and row[2] == "page":
            return row[0], row[1]
        self.page_ranking(name)  # raises, saying why: no such ranking, or one of hosts
        raise StoreError(f"ranking {name!r} changed while it was read")
