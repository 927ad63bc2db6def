"""The levels above pages: which ranking answers for hosts and for sites, and what it says of many at once.

A link whose page the store does not hold is shown an estimate from the finest
level ranked: its host's rank, else its site's (issue 32).  What the proxy and
the CLI need for that, each level on its own:

* :meth:`Levels.level_head`: the ranking that answers at a level (one
  named, or else ``hostrank``/``siterank`` where it ranks that level, else the
  newest ranking of the level: a Common Crawl ``cc-pagerank`` loaded as sites,
  say), with its node count and its score range: percentile, the toolbar's
  0-10 and a bar's width are each within that level's own ranking;
* :meth:`Levels.level_scores`: the scores, positions and in-links of many
  hosts or sites by name, in one batched probe: of :class:`LevelKeys` (a
  reader's sorted hashes of the level's names, :meth:`Levels.level_keys`),
  else of the level's name keys (:mod:`.key_buckets`: a bucket of keys read
  per name), else (sites a bulk numbering has yet to key) of the name index;
* :meth:`Levels.referrers`: the best hosts (or sites) linking to a host
  (or site), by that level's rank, folded from the page graph's in-links.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from . import analysis, key_buckets
from .base import Part
from .errors import StoreError
from .mapped import MappedKeys
from .pages import url_keys
from .rankings import Ranking

__all__ = [
    "DEFAULT_NAMES",
    "ESTIMATE_LEVELS",
    "LevelHead",
    "LevelKeys",
    "LevelScores",
    "RadixSlots",
    "Referrer",
    "Levels",
    "radix_search",
    "radix_slots",
]

DEFAULT_NAMES = {"host": "hostrank", "site": "siterank"}  # what `rank --level host|site` names its ranking
ESTIMATE_LEVELS = ("host", "site")  # finest first: a link's estimate comes from the first level that ranks it
_TABLES = {"host": "hosts", "site": "sites"}  # each level's names
_PROBE_CHUNK = 2000


@dataclass(frozen=True)
class LevelHead:
    """The ranking version that answers at a level, and what its display scales need."""

    level: str  # "host" or "site"
    name: str
    ranking_id: int
    version: int
    nodes: int  # hosts or sites the version ranks (ids 1..nodes): percentile and toolbar are among these
    lowest: float  # the lowest score above 0, and the highest: a bar's log scale within this ranking
    highest: float


@dataclass(frozen=True)
class LevelKeys:
    """A level's names as sorted 63-bit hashes (as ``page_keys`` keys URLs) with their ids, read once by a
    reader: a name found by a search in memory (:func:`radix_search`), where the name index costs a B-tree
    descent of text comparisons per name.  Twelve bytes a name, and a quarter to half a byte for the slots' starts.
    Names are never renumbered, so it stays true until the level has more names (``count``).  A hash two of
    the level's names share has id 0: neither is told by it (:meth:`Levels.level_scores` asks the name index
    for them)."""

    level: str
    count: int  # the level's names when read (ids 1..count)
    hashes: np.ndarray  # int64, sorted
    ids: np.ndarray  # int32, in the order of ``hashes``; 0 for a hash two names share
    given: RadixSlots | None = field(default=None, repr=False, compare=False)  # the slots, where made already
    slots: RadixSlots = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # frozen: set once, as it is read
        object.__setattr__(self, "slots", self.given if self.given is not None else radix_slots(self.hashes))

    def find(self, names: Iterable[str]) -> dict[str, int]:
        """{name: id} of the names it has (0: a name whose hash another name shares, to ask by name)."""
        asked = list(dict.fromkeys(names))
        if not asked or not len(self.hashes):
            return {}
        at = radix_search(self.hashes, self.slots, url_keys(asked))
        hit = at >= 0
        return dict(zip([asked[i] for i in np.flatnonzero(hit).tolist()], self.ids[at[hit]].tolist()))


# Keys a radix slot spans on average: a key's search is its slot's start read, then a few steps in a cache line
# or two, where a binary search of the whole array is ~25 steps, most of them a cache miss past a few million.
RADIX_SPAN = 16


@dataclass(frozen=True)
class RadixSlots:
    """Where each value of sorted keys' top bits begins: slot ``key >> shift`` spans
    ``starts[slot]:starts[slot + 1]`` of the keys."""

    shift: int  # 63 less the top bits' count: the keys are 63-bit, non-negative
    starts: np.ndarray  # int32 (int64 past 2**31 keys), one more than the slots: the keys' count last


def radix_slots(hashes: np.ndarray) -> RadixSlots:
    """The :class:`RadixSlots` of sorted non-negative 63-bit ``hashes``: over half and at most ``RADIX_SPAN``
    keys a slot on average (the slots are a power of two; hashes spread evenly, so a slot holds a few dozen at
    most).  Hashes are uniform, so a key's top bits say where it lies, as interpolation search guesses (Knuth,
    TAOCP vol. 3, 6.2.1), here read from a table."""
    bits = max(0, math.ceil(math.log2(max(len(hashes), 1) / RADIX_SPAN)))
    shift = 63 - bits
    starts = np.empty((1 << bits) + 1, dtype=np.int32 if len(hashes) < 2**31 else np.int64)
    # each slot's lowest key is its number shifted up; sorted needles: numpy's search starts each where the
    # last ended
    starts[:-1] = np.searchsorted(hashes, np.arange(1 << bits, dtype=np.int64) << shift)
    starts[-1] = len(hashes)
    return RadixSlots(shift, starts)


def radix_search(hashes: np.ndarray, slots: RadixSlots, keys: np.ndarray) -> np.ndarray:
    """The index of each of ``keys`` in sorted ``hashes``, -1 where it is not there: within each key's slot, a
    binary search of all the keys at once (a numpy pass a step, a few steps).  Equal to
    ``np.searchsorted(hashes, keys)`` where a key is found."""
    if not len(hashes):
        return np.full(len(keys), -1, dtype=np.int64)
    slot = keys >> slots.shift
    lo = slots.starts[slot].astype(np.int64)
    hi = slots.starts[slot + 1].astype(np.int64)
    last = len(hashes) - 1
    while True:
        open_ = lo < hi
        if not open_.any():
            break
        mid = (lo + hi) >> 1
        below = open_ & (hashes[np.minimum(mid, last)] < keys)
        lo = np.where(below, mid + 1, lo)
        hi = np.where(open_ & ~below, mid, hi)
    at = np.minimum(lo, last)  # the first key >= each, within its slot; a slot's end is past it
    return np.where(hashes[at] == keys, at, -1)


@dataclass(frozen=True)
class LevelScores:
    """What one level's ranking says of the names asked that it ranks, as columns (each name once)."""

    head: LevelHead
    names: tuple[str, ...]
    scores: np.ndarray  # float64, sum to 1 over the level
    places: np.ndarray  # int64: how many of the level score more (0 for the best and those tied with it)
    inlinks: np.ndarray  # int64: hosts (sites) linking to it

    def __len__(self) -> int:
        return len(self.names)


@dataclass(frozen=True)
class Referrer:
    """A host (or site) linking to another, by its own rank at that level."""

    name: str
    score: float
    place: int  # how many of the level score more: 0 for the best
    links: int  # page links from its pages to the target's


class Levels(Part):
    """Host and site rankings read by name for many names at once; part of :class:`~rankstore.store.Store`."""

    def answering_ranking(self, level: str, name: str = "") -> Ranking | None:
        """The newest version of the ranking that answers at ``level`` ("host" or "site"): ``name`` if given
        (a StoreError in one line if it ranks another level; RankingNotFound if the store has none of that
        name), else ``hostrank``/``siterank`` if it ranks that level, else the newest ranking of the level;
        None when the store ranks no host (site)."""
        if level not in _TABLES:
            raise StoreError(f"{level!r}: a level above pages is one of {', '.join(_TABLES)}")
        if name:
            return analysis.level_ranking(self.store, name, level)
        row = self.db.execute(
            "SELECT coalesce((SELECT name FROM rankings WHERE name = ?1 AND level = ?2 LIMIT 1),"
            " (SELECT name FROM rankings WHERE level = ?2 ORDER BY id DESC LIMIT 1))",
            (DEFAULT_NAMES[level], level),
        ).fetchone()
        return self.store.rankings.ranking(row[0]) if row[0] is not None else None

    def level_head(self, level: str, name: str = "") -> LevelHead | None:
        """:meth:`answering_ranking` with its node count and score range (its arrays read once per reader)."""
        ranking = self.answering_ranking(level, name)
        if ranking is None:
            return None
        lowest, highest = self.store.rankings.score_range(ranking)
        return LevelHead(level, ranking.name, ranking.id, ranking.version, ranking.pages, lowest, highest)

    def level_count(self, level: str) -> int:
        """How many hosts (sites) the store numbers."""
        return self.store.hosts.host_count() if level == "host" else self.store.sites.site_count()

    def level_keys(self, level: str) -> LevelKeys:
        """The level's names as :class:`LevelKeys`, read once (a reader keeps it while the count stands): mapped
        from the files beside the store (:mod:`.mapped`: one copy for every process), else made and written
        there from the level's name keys (:mod:`.key_buckets`), read in bulk in hash order, no name read, or
        the sites' hashed from their names while a bulk numbering has yet to key them."""
        count = self.level_count(level)
        found = self.mapped_level_keys(level, count)
        if found is None:
            made = self._level_keys(level, count)
            kept = MappedKeys(made.hashes, made.ids, made.slots.starts, made.slots.shift)
            if not self.store.mapped.keep_level_keys(level, count, kept):
                return made
            found = self.mapped_level_keys(level, count)
        return found if found is not None else made

    def mapped_level_keys(self, level: str, count: int | None = None) -> LevelKeys | None:
        """The level's names' keys from their mapped files alone (for ``count`` names, the level's count by
        default); None where they are not made yet, or stale."""
        count = self.level_count(level) if count is None else count
        mapped = self.store.mapped.level_keys(level, count)
        if mapped is None:
            return None
        return LevelKeys(level, count, mapped.hashes, mapped.ids, RadixSlots(mapped.shift, mapped.starts))

    def _level_keys(self, level: str, count: int) -> LevelKeys:
        if level == "host":
            held = self.store.hosts.host_keys(count)
            return LevelKeys(level, count, held.hashes, held.ids)
        if self.store.sites.keyed():
            held = self.store.sites.site_keys(count)
            return LevelKeys(level, count, held.hashes, held.ids)
        table = _TABLES[level]
        names = [row[0] for row in self.db.execute(f"SELECT name FROM {table} WHERE id <= ? ORDER BY id", (count,))]
        if len(names) == count:  # ids 1..count, as they are given: the names in id order are all it takes
            ids = np.arange(1, count + 1, dtype=np.int32)
        else:
            ids = np.array(
                [row[0] for row in self.db.execute(f"SELECT id FROM {table} WHERE id <= ? ORDER BY id", (count,))],
                dtype=np.int32,
            )
        hashes = url_keys(names)
        order = np.argsort(hashes, kind="stable")
        held = key_buckets.zeroed(hashes[order], ids[order])
        return LevelKeys(level, count, held.hashes, held.ids)

    def level_scores(self, head: LevelHead, names: Iterable[str], keys: LevelKeys | None = None) -> LevelScores:
        """The names (hosts with their port, or sites) that ``head``'s version ranks, with their numbers, in
        one batched probe: of ``keys`` (the level's, read while the store numbered as many names as now), else
        of the level's name keys (a bucket read per name), else, while a bulk numbering of sites has yet to
        key them, of the name index (a query per 2,000 names, in the B-tree's order).  A name whose hash
        another name shares is asked of the name index.  A name the store has not, or numbered after the
        version, or scored 0, is left out."""
        if keys is not None:
            found = keys.find(names)
        elif head.level == "host":
            found = self.store.hosts.ids_by_key(names)
        elif self.store.sites.keyed():
            found = self.store.sites.ids_by_key(names)
        else:
            found = self._ids_by_name(head.level, names)
        shared = [name for name, number in found.items() if number == 0]
        if shared:
            found.update(self._ids_by_name(head.level, shared))
        arrays = self.store.rankings.ranking_arrays(head.ranking_id, votes=False)
        # as arrays, not a tuple a name: a page's thousand names in a few numpy passes
        numbers = np.fromiter(found.values(), dtype=np.int64, count=len(found))
        index = numbers - 1
        kept = (numbers > 0) & (numbers <= arrays.pages)
        # a score of 0 is no rank (a ranks file's unnamed nodes): the next level answers, as for a name not ranked
        kept[kept] = arrays.scores[index[kept]] > 0
        if not kept.any():
            empty = np.zeros(0, dtype=np.int64)
            return LevelScores(head, (), np.zeros(0), empty, empty)
        names_found = list(found)
        index = index[kept]
        return LevelScores(
            head,
            tuple(names_found[at] for at in np.flatnonzero(kept).tolist()),
            arrays.scores[index],
            arrays.places(index),
            arrays.inlinks[index].astype(np.int64),
        )

    def _ids_by_name(self, level: str, names: Iterable[str]) -> dict[str, int]:
        """{name: id} of the names the level has, by its name index (a query per 2,000, in the index's order)."""
        table = _TABLES[level]
        unique = sorted(set(names))
        found: dict[str, int] = {}
        for start in range(0, len(unique), _PROBE_CHUNK):
            chunk = unique[start : start + _PROBE_CHUNK]
            found.update(
                self.db.execute(f"SELECT name, id FROM {table} WHERE name IN ({','.join('?' * len(chunk))})", chunk)
            )
        return found

    def level_id(self, level: str, name: str) -> int | None:
        """A host's or a site's id by name."""
        return self.store.hosts.host_id(name) if level == "host" else self.store.sites.site_id(name)

    def referrers(self, head: LevelHead, name: str, limit: int, most_pages: int | None = None) -> list[Referrer] | None:
        """The ``limit`` best hosts (sites) whose pages link to a page of host (site) ``name``, by the rank of
        ``head``'s version, with the page links of each; its own pages' links are not counted.  None when it
        has more than ``most_pages`` pages (each page's in-links are a read).

        Folded from the page graph's in-links of the target's pages (a Common
        Crawl host graph is a page graph of root pages): :meth:`_level_sources`;
        a site's also from a domain graph's links into it, one link each, as
        ``rank --level site`` counts them.
        """
        number = self.level_id(head.level, name)
        if number is None or limit <= 0:
            return []
        pages = self._level_pages(head.level, number)
        if most_pages is not None and len(pages) > most_pages:
            return None
        ids = self._level_of_pages(head.level, self._level_sources(pages))
        loaded = self.store.site_links.in_links(number) if head.level == "site" else np.zeros(0, dtype=np.int32)
        arrays = self.store.rankings.ranking_arrays(head.ranking_id, votes=False)
        if len(ids):
            ids = np.concatenate([ids, loaded.astype(np.int64) + 1])
            ids = ids[(ids > 0) & (ids != number)]
            found, links = np.unique(ids, return_counts=True)
            sources = found - 1
        else:  # a domain graph's links alone: each site once, ascending (a site's own were left out), as read
            sources, links = loaded, None
        # the nodes this version ranks (ascending: a prefix), the others numbered since
        # the bound as the list's own type: a Python int would have numpy cast the whole list (19 million) first
        inside = int(np.searchsorted(sources, sources.dtype.type(arrays.pages)))
        sources = sources[:inside]
        links = links[:inside] if links is not None else None
        if not inside:
            return []
        pick = arrays.best_of_sorted(sources, limit)
        places = arrays.places(sources[pick])
        chosen = (sources[pick].astype(np.int64) + 1).tolist()
        names = self.store.hosts.host_names(chosen) if head.level == "host" else self.store.sites.site_names(chosen)
        return [
            Referrer(
                names.get(node, ""),
                float(arrays.scores[node - 1]),
                int(place),
                int(links[at]) if links is not None else 1,
            )
            for node, at, place in zip(chosen, pick.tolist(), places.tolist())
        ]

    def _level_pages(self, level: str, number: int) -> np.ndarray:
        """The page indices of host (site) ``number``'s pages.

        Where a site has no pages (a Common Crawl domain graph loads its
        vertices as sites), its referrers come from the loaded site links
        alone (:meth:`.SiteLinks.in_links`).
        """
        hosts = self.store.hosts.page_hosts()
        if level == "host":
            return np.flatnonzero(hosts == number)
        members = np.flatnonzero(self.store.sites.host_sites() == number) + 1
        return np.flatnonzero(np.isin(hosts, members))

    def _level_sources(self, pages: np.ndarray) -> np.ndarray:
        """The page indices of the links into ``pages`` (ascending), one per link: each block of the in-link
        arrays that holds any of them read once."""
        return analysis.in_slices(self.store, pages)[0].sources.astype(np.int64)

    def _level_of_pages(self, level: str, pages: np.ndarray) -> np.ndarray:
        """Each page's host id (site id), 0 where it is not numbered yet."""
        hosts = self.store.hosts.page_hosts()
        host_ids = np.where(pages < len(hosts), hosts[np.minimum(pages, max(len(hosts) - 1, 0))], 0).astype(np.int64)
        if level == "host":
            return host_ids
        sites = self.store.sites.host_sites()
        inside = (host_ids > 0) & (host_ids <= len(sites))
        return np.where(inside, sites[np.clip(host_ids - 1, 0, max(len(sites) - 1, 0))], 0).astype(np.int64)
