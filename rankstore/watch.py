"""``rankstore watch``: what changed for a list of targets since the previous build, for a scheduled job.

A targets file holds one target a line: a URL (``http://`` or ``https://``),
``host:NAME`` (a host as in URLs, with its port if any) or ``site:NAME`` (a
registered domain); blank lines and lines starting with ``#`` are skipped.

For each target, from the store's next-to-last build to its last (from none
to the first, when there is one build): the backlinks and referring sites
gained and lost (by the rules of :mod:`rankstore.store.history`), the best
few of each (linking pages by their PageRank in the newest page ranking;
sites by their rank in the newest site ranking, else by how many of their
pages link), and the target's move between the two newest versions of its
level's ranking.  A target **changed** when it gained or lost a backlink or
a referring site, or its place moved; a target the store does not know is
reported as unknown and counts as unchanged (a page not crawled yet is no
news; it changes once a build brings it in).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .store import history

if TYPE_CHECKING:
    from .store import Store

__all__ = [
    "WatchTarget", "LinkChange", "SiteChange", "RankMove", "TargetWatch", "TargetsFileError", "parse_targets",
    "watch",
]  # fmt: skip

_PREFIXES = ("host:", "site:")


class TargetsFileError(ValueError):
    """A line of a targets file that names no target."""


@dataclass(frozen=True)
class WatchTarget:
    """One line of a targets file: a level and its name in normal form."""

    level: str  # 'page', 'host' or 'site'
    name: str  # a canonical URL, a host, a site
    line: int  # where it stands in the file (1 first)

    @property
    def label(self) -> str:
        """As the file writes it: the URL, ``host:NAME`` or ``site:NAME``."""
        return self.name if self.level == "page" else f"{self.level}:{self.name}"


@dataclass(frozen=True)
class LinkChange:
    """A backlink gained or lost: the linking page, the target page, the linking page's PageRank."""

    url: str
    target: str
    pagerank: float | None  # in the newest page ranking; None without one, or for a page added since


@dataclass(frozen=True)
class SiteChange:
    """A referring site gained or lost, with how many of its pages link."""

    site: str
    pages: int  # its pages linking to the target (at the last build; at the one before, for a site lost)
    site_rank: int | None  # its place in the newest site ranking; None without one


@dataclass(frozen=True)
class RankMove:
    """The target in the two newest versions of its level's ranking (``previous_*`` None with one version)."""

    ranking: str
    version: int
    place: int | None
    score: float | None
    previous_version: int | None
    previous_place: int | None
    previous_score: float | None

    @property
    def moved(self) -> bool:
        return self.previous_version is not None and self.place != self.previous_place


@dataclass
class TargetWatch:
    """What changed for one target between two builds (see the module docstring)."""

    target: str  # as the file names it: a URL, host:NAME, site:NAME
    level: str
    known: bool  # False: the store has no such page, host or site (everything below is empty)
    build: int | None  # the store's last build
    previous_build: int | None  # the one before it (None: no build before)
    backlinks: int = 0  # at ``build``
    referring_sites: int = 0  # at ``build``
    new_backlinks: int = 0
    lost_backlinks: int = 0
    new_sites: int = 0
    lost_sites: int = 0
    new_links: list[LinkChange] = field(default_factory=list)  # the best few of them
    lost_links: list[LinkChange] = field(default_factory=list)
    new_site_rows: list[SiteChange] = field(default_factory=list)
    lost_site_rows: list[SiteChange] = field(default_factory=list)
    rank: RankMove | None = None  # None: no version of the level's ranking

    @property
    def changed(self) -> bool:
        return bool(
            self.new_backlinks
            or self.lost_backlinks
            or self.new_sites
            or self.lost_sites
            or (self.rank and self.rank.moved)
        )


def parse_targets(text: str) -> list[WatchTarget]:
    """The targets of a targets file's text (see the module docstring); a :class:`TargetsFileError` naming
    the line of the first that names none."""
    from .urls import canonical, host_of

    found = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        lowered = line.lower()
        if lowered.startswith(_PREFIXES):
            level, name = lowered[:4], line[5:].strip()
            normal = canonical(f"http://{name}/") if name and "/" not in name else None
            if normal is None:
                raise TargetsFileError(f"line {number}: {line!r} names no {level} (write {level}:example.com)")
            name = host_of(normal)
            if level == "site":
                name = name.rsplit(":", 1)[0] if name.rsplit(":", 1)[-1].isdigit() else name
            found.append(WatchTarget(level, name, number))
            continue
        normal = canonical(line) if "://" in line else None
        if normal is None:
            raise TargetsFileError(
                f"line {number}: {line!r} is no target (a URL with http:// or https://, host:NAME or site:NAME)"
            )
        found.append(WatchTarget("page", normal, number))
    return found


def _best_links(store: Store, pairs: np.ndarray, arrays, limit: int) -> list[LinkChange]:
    """The ``limit`` best of (linking page, target page) rows, by the linking page's PageRank in ``arrays``
    (the newest page ranking's), else in the order the store numbered the pages."""
    if not len(pairs):
        return []
    sources = pairs[:, 0]
    chosen = arrays.best_of(sources, limit) if arrays is not None else np.arange(min(limit, len(pairs)))
    urls = store.pages.urls_of(sorted({int(i) + 1 for i in pairs[chosen].ravel().tolist()}))
    rows = []
    for at in chosen.tolist():
        src, dst = int(pairs[at, 0]), int(pairs[at, 1])
        score = float(arrays.scores[src]) if arrays is not None and src < arrays.pages else None
        rows.append(LinkChange(urls.get(src + 1, ""), urls.get(dst + 1, ""), score))
    return rows


def _best_sites(store: Store, sites: np.ndarray, pages: dict[int, int], arrays, limit: int) -> list[SiteChange]:
    """The ``limit`` best of ``sites`` by site rank (the newest site ranking's ``arrays``), else by their
    linking pages, then id; only those are named."""
    if not len(sites):
        return []
    far = np.iinfo(np.int64).max
    places = np.full(len(sites), far, dtype=np.int64)
    if arrays is not None:
        inside = sites <= arrays.pages
        if inside.any():
            places[inside] = arrays.places(sites[inside] - 1) + 1
    linking = np.array([pages.get(site, 0) for site in sites.tolist()], dtype=np.int64)
    chosen = np.lexsort((sites, -linking, places))[:limit]
    names = store.sites.site_names(sites[chosen].tolist())
    return [
        SiteChange(names.get(int(sites[at]), ""), int(linking[at]), None if places[at] == far else int(places[at]))
        for at in chosen.tolist()
    ]


def _newest_arrays(store: Store, name: str, level: str):
    """The newest version's arrays of ranking ``name`` of ``level``, or None without one."""
    from .store import StoreError

    try:
        found = history.versions(store, name, level)
    except StoreError:  # a ranking of another level: no order to take from it
        return None
    return store.rankings.ranking_arrays(found[-1].ranking_id, votes=False) if found else None


def _rank_move(store: Store, target: history.Target, name: str) -> RankMove | None:
    found = history.versions(store, name, target.level)
    if not found:
        return None
    newest = found[-1]
    score, place, _ = history.rank_of(store, newest.ranking_id, target.node)
    if len(found) == 1:
        return RankMove(name, newest.version, place, score, None, None, None)
    older = found[-2]
    old_score, old_place, _ = history.rank_of(store, older.ranking_id, target.node)
    return RankMove(name, newest.version, place, score, older.version, old_place, old_score)


def watch(
    store: Store, targets: list[WatchTarget], limit: int = 5, rankings: dict[str, str] | None = None
) -> list[TargetWatch]:
    """What changed for each target from the store's next-to-last build to its last; ``limit`` rows of each
    list; ``rankings`` the ranking to read for each level (``history.DEFAULT_RANKINGS`` by default)."""
    from .store import StoreError

    names = {**history.DEFAULT_RANKINGS, **(rankings or {})}
    out = []
    with store.snapshot():
        numbers = [row.build for row in history.builds(store)]
        build = numbers[-1] if numbers else None
        previous = numbers[-2] if len(numbers) > 1 else None
        page_arrays = site_arrays = None
        if targets:
            page_arrays = _newest_arrays(store, names["page"], "page")
            site_arrays = _newest_arrays(store, names["site"], "site")
        for each in targets:
            named = {each.level if each.level != "page" else "url": each.name}
            try:
                target = history.resolve_target(store, **named)
            except StoreError:
                out.append(TargetWatch(each.label, each.level, False, build, previous))
                continue
            report = TargetWatch(each.label, each.level, True, build, previous)
            if build is not None:
                found = history.change(store, target, build, previous or 0)
                report.backlinks, report.referring_sites = found.backlinks, found.referring_sites
                report.new_backlinks, report.lost_backlinks = len(found.new_links), len(found.lost_links)
                report.new_sites, report.lost_sites = len(found.new_sites), len(found.lost_sites)
                report.new_links = _best_links(store, found.new_links, page_arrays, limit)
                report.lost_links = _best_links(store, found.lost_links, page_arrays, limit)
                report.new_site_rows = _best_sites(store, found.new_sites, found.site_links, site_arrays, limit)
                report.lost_site_rows = _best_sites(store, found.lost_sites, found.site_links, site_arrays, limit)
            report.rank = _rank_move(store, target, names[target.level])
            out.append(report)
    return out
