"""Read-only access to a rankstore for the proxy: one connection per thread, reused.

Turns store rows into what the rewriter shows (:class:`LinkInfo`, :class:`PanelData`),
with the display scales of :mod:`rankstore.display`.  All of a page's link
targets are looked up in one batched query.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
import threading
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import repeat
from typing import Any, NamedTuple, TypeVar

import numpy as np

from rankstore import display
from rankstore.store import (
    LevelHead,
    LevelScores,
    Ranking,
    RankingLevelError,
    RankingNotFound,
    Store,
    StoreError,
    analysis,
)
from rankstore.store.levels import ESTIMATE_LEVELS, LevelKeys
from rankstore.store.mapped import trim
from rankstore.urls import host_of, site_of

from ._scan_python import Marks
from .markup import MAX_BAR_PX, Backlink, Estimate, LevelPanel, LinkInfo, PanelData, Referrer, proxy_url
from .rewrite import TooManyLinks

__all__ = ["Ranks", "LevelChoice", "page_ranking", "shown_ranking", "level_heads", "DEFAULT_RANKING"]

_CACHE_URLS = 200_000  # URLs remembered per process before the cache starts over
# names of a level past which no keys are held in memory (twelve bytes a name); past it a page's hosts (sites) are
# probed in the store's key buckets.  Keys are read in bulk, already hashed and sorted (a Common Crawl domain
# graph's 135 million in seconds): held, a thousand names are a binary search, where a probe of buckets not in the
# page cache waits on the disk
KEYS_MOST = 300_000_000
_CACHE_MARKS = 100_000  # hrefs whose marks are remembered, in all directories, before they start over
_CACHE_KEPT = 5_000  # values kept per connection (PageView.keep: a page's panel, ~2 KB) before they start over
# pages' rewrites kept per connection with their bodies (PageView.again), the oldest let go past either bound:
# as many as the record keeps for its revisits (record.RevisitCache), a site's pages browsed in turn among them
_AGAIN_PAGES = 256
_AGAIN_BYTES = 32 * 1024 * 1024
# The best pages of a version known before any page asks (Ranks' preload): a site's links go mostly to its best
# pages, so a page's first visit finds most of its targets known; a store of no more pages is known whole.
PRELOAD_PAGES = 20_000
PRELOAD_HOST = "preload.example"  # a host whose site is asked at a preload: the Public Suffix List read then
T = TypeVar("T")
_LATER = LinkInfo(None, later=True)  # a page in the store that the ranking's version does not rank yet
NO_RANKING = 0  # the ranking id of a page's view where the store ranks no pages (no version has id 0)


@dataclass(frozen=True)
class LevelChoice:
    """Which rankings answer for a link's host and site when the store has no score for its page (the
    options ``pagerank_host_ranking``, ``pagerank_site_ranking``): "" for the store's own choice
    (:meth:`~rankstore.store.Levels.answering_ranking`: ``hostrank``/``siterank``, else the newest of the level)."""

    host: str = ""
    site: str = ""

    def of(self, level: str) -> str:
        return self.host if level == "host" else self.site


AUTOMATIC = LevelChoice()  # each level's ranking as the store chooses it


class LevelHeads(NamedTuple):
    """The rankings that answer above pages, finest first (None for a level the store does not rank)."""

    host: LevelHead | None
    site: LevelHead | None


def level_heads(store: Store, levels: LevelChoice) -> LevelHeads:
    """The heads of the rankings that answer above pages; a ranking named that is not there, or ranks another
    level, is a StoreError in one line."""
    found = []
    for level in ESTIMATE_LEVELS:
        try:
            found.append(store.levels.level_head(level, levels.of(level)))
        except RankingNotFound:
            raise RankingNotFound(
                f"no ranking {levels.of(level)!r} for {level}s (`rankstore rank --level {level}` makes one)"
            ) from None
    return LevelHeads(found[0], found[1])


DEFAULT_RANKING = "pagerank"  # the page ranking the proxy shows unless another is named


def page_ranking(store: Store, name: str) -> Ranking:
    """The newest version of ranking ``name``, which must rank pages: the proxy looks its scores up by page.

    A StoreError in one line otherwise, naming the store's page rankings to
    choose from: for a ranking of hosts (its scores are by host number), and
    for a name the store has not (with advice that fits the store: a domain
    graph has no pages to rank, only sites).
    """
    try:
        return store.rankings.page_ranking(name)
    except RankingLevelError as error:  # the CLI's words name its options; the proxy's name the choice alone
        pages = error.page_rankings
        raise StoreError(
            error.refusal(f"choose a page ranking ({', '.join(pages)})" if pages else _no_page_ranking(store))
        ) from None
    except RankingNotFound:
        pages = store.rankings.page_rankings()
        raise RankingNotFound(
            f"no ranking {name!r} "
            + (f"(the store's page rankings: {', '.join(pages)})" if pages else f"({_no_page_ranking(store)})")
        ) from None


def shown_ranking(store: Store, name: str, levels: LevelChoice) -> Ranking | None:
    """The page ranking the proxy shows (:func:`page_ranking`), or None where it shows none: ``name`` is the
    default, the store ranks no pages, and a host or site ranking answers for every link (a Common Crawl domain
    graph ranked by site).  A ranking named that is not there is an error, as is a store that ranks nothing."""
    try:
        return page_ranking(store, name)
    except RankingNotFound:
        if name != DEFAULT_RANKING or store.rankings.page_rankings() or not any(level_heads(store, levels)):
            raise
        return None


def _no_page_ranking(store: Store) -> str:
    """What to do about a store with no page ranking, in words that fit it: a domain graph's sites are ranked
    with ``--level site`` (it has no pages), a crawl's pages by ``rankstore rank``; where hosts or sites are
    ranked already, the proxy's default ranking shows their ranks."""
    answering = [head for head in level_heads(store, AUTOMATIC) if head is not None]
    if answering:
        return (
            f"the store ranks no pages, only {' and '.join(head.level + 's' for head in answering)} "
            f"({', '.join(head.name for head in answering)}): with no ranking named, the proxy shows their ranks"
        )
    if store.pages.last_page_id() == 0 and store.levels.level_count("site"):
        return "the store holds a domain graph and no pages: run `rankstore rank --level site`"
    return "run `rankstore rank`"


@dataclass(frozen=True)
class _Head:
    """What a thread read of the store at one ``data_version``: the ranking's newest version and how it stands."""

    data_version: int
    ranking_id: int
    pages: int  # pages the version ranks (page ids 1..pages)
    store_pages: int  # pages in the store: those past ``pages`` came since the version, not ranked yet
    stale: str | None  # Store.rankings.stale_note: a build newer than the one the version ranked
    host: LevelHead | None = None  # the rankings that answer for a link's host, then its site (estimates)
    site: LevelHead | None = None
    counts: tuple[int, int] = (0, 0)  # the hosts and sites the store numbers

    @property
    def levels(self) -> tuple[int, int]:
        """The versions of the host and site rankings (0: none): what the estimates were worked out from."""
        return (self.host.ranking_id if self.host else 0, self.site.ranking_id if self.site else 0)


class KnownPages(NamedTuple):
    """What is known of URLs in one version of the page ranking."""

    version: int | None  # the ranking version it holds
    urls: dict[str, LinkInfo]
    whole: bool  # every page of the version is in it: a URL not in it is in none
    preloaded: bool = True  # its best pages' look-ups are in it (else they are being read, in a thread)


class AbsentPages(NamedTuple):
    """URLs the version does not rank: None (in no page of the store) or "not ranked yet".  Kept apart from
    the version's own answers, since a build that adds pages may turn the one into the other."""

    key: tuple[int, int] | None  # (ranking id, the store's pages)
    urls: dict[str, LinkInfo | None]


class HostRanks(NamedTuple):
    """Host -> (host rank score, position), or None, in one version of the host ranking."""

    version: int | None
    hosts: dict[str, tuple[float, int] | None]


class Estimates(NamedTuple):
    """The info of a link to a page with no score, worked out from its host's rank, else its site's (None for
    neither), in one pair of host and site ranking versions."""

    key: tuple[int, int] | None  # (host ranking id, site ranking id)
    by_host: dict[str, LinkInfo | None]
    by_url: dict[str, LinkInfo | None]


@dataclass
class MarksCount:
    """How many hrefs the marks tables hold: counted as the page given the last table added to it."""

    hrefs: int = 0
    table: Marks | None = None  # the table last given out
    size: int = 0  # its size then


class MarksCache(NamedTuple):
    """Base directory -> the rewriter's table of what each href shows, in one version of every ranking."""

    key: tuple | None  # (ranking id, the store's pages, host and site ranking ids)
    tables: dict[str, Marks]
    tally: MarksCount


class Ranks:
    def __init__(
        self,
        store_path: str,
        ranking: str = "pagerank",
        panel_size: int = 10,
        preload: int = 0,
        levels: LevelChoice | None = None,
    ):
        """``preload``: the best pages of each version of the ranking whose look-ups are made at once, in
        bulk, when the version is first read (:meth:`preload`, :meth:`PageView.lookup`); 0 for none.
        ``levels``: the host and site rankings that answer for a link whose page has no score."""
        self.store_path = store_path
        self.ranking = ranking
        self.levels = levels = levels or AUTOMATIC
        self.panel_size = panel_size
        self.preload_pages = preload
        self._local = threading.local()
        self._ranges: dict[int, tuple[float, float]] = {}
        # ranking id -> its arrays (Store.rankings.ranking_arrays), shared by this object's connections: a version read
        # by one thread is read for all.  Every cache here is keyed by ranking ids, which the store never gives twice
        # (schema 15: a version `forget` dropped is never taken for the one `rank` makes next)
        self._arrays: dict = {}
        self._known = KnownPages(None, {}, False)
        self._preloading: threading.Thread | None = None  # preload_later's thread
        self._preloading_lock = threading.Lock()
        self._absent = AbsentPages(None, {})
        self._hosts = HostRanks(None, {})
        self._estimates = Estimates(None, {}, {})
        # level -> its names' keys (Store.levels.level_keys), shared by this object's connections, read again once the
        # store numbers more hosts (sites)
        self._keys: dict[str, LevelKeys] = {}
        self._marks = MarksCache(None, {}, MarksCount())
        store = self.store()
        # fails early, with a clear message, for a missing ranking or one of hosts, and for a host or site ranking
        # named that is not one; the default ranking missing from a store that ranks only hosts or sites is no
        # failure: their ranks answer for every link
        shown_ranking(store, ranking, levels)
        level_heads(store, levels)

    def shown(self, store: Store) -> Ranking | None:
        """The newest version of the page ranking shown (:func:`shown_ranking`); None while the store ranks no
        pages and its host or site ranks answer for every link (a page ranking made later is shown then)."""
        return shown_ranking(store, self.ranking, self.levels)

    def levels_only(self) -> list[LevelHead]:
        """The host and site rankings that answer for every link while the store ranks no pages (the proxy's
        default ranking is missing); empty where a page ranking is shown."""
        store = self.store()
        with store.snapshot():
            if self.shown(store) is not None:
                return []
            return [head for head in level_heads(store, self.levels) if head is not None]

    def store(self) -> Store:
        store = getattr(self._local, "store", None)
        if store is None:
            store = self._local.store = Store(self.store_path, readonly=True, arrays=self._arrays)
            # data_version numbers one connection's view of the store: what was kept beside another's goes
            self._local.kept = {}
            self._local.again = _Again()
            self._local.head = None  # a _Head once this thread has read the store
        return store

    def score_range(self, store: Store, ranking_id: int) -> tuple[float, float]:
        """(lowest, highest) score of the current ranking, read once per version."""
        if ranking_id not in self._ranges:
            self._ranges[ranking_id] = store.rankings.score_range(store.rankings.ranking(self.ranking))
        return self._ranges[ranking_id]

    def infos(self, rows: Sequence[dict], lowest: float, highest: float) -> list[LinkInfo]:
        """LinkInfo for store rows (dicts with pagerank, position, inlinks, pages)."""
        if not rows:
            return []
        return _link_infos(
            [row["pagerank"] for row in rows],
            [row["place"] for row in rows],
            [row["inlinks"] for row in rows],
            rows[0]["pages"],
            lowest,
            highest,
        )

    @contextlib.contextmanager
    def page(self) -> Iterator[PageView]:
        """One page's look-ups and panel, all from one version of the ranking (one read transaction).

        The newest version is read again only once the store has changed
        (SQLite's ``data_version``, which any commit by another connection
        moves): most pages need no other query at all (their links' marks and
        their panel are known), so the read transaction begins only at a
        page's first query.  A version read before it began is still whole
        in it: a new version keeps the one before
        (:meth:`~rankstore.store.Rankings.write_ranking`), and only a second one
        within a page's milliseconds would drop it.
        """
        store = self.store()
        local = self._local
        head = local.head
        version = store.data_version()  # of SQLite, never of its -shm file (Store.data_version says why)
        if head is None or head.data_version != version:
            with store.snapshot():
                # once per commit: what every page until the next one shows beside its scores
                ranking = self.shown(store)  # a version of hosts is never read by page
                host, site = level_heads(store, self.levels)
                head = local.head = _Head(
                    version,
                    ranking.id if ranking is not None else NO_RANKING,
                    ranking.pages if ranking is not None else 0,
                    store.pages.last_page_id(),
                    store.rankings.stale_note(ranking) if ranking is not None else None,
                    host,
                    site,
                    (store.levels.level_count("host") if host else 0, store.levels.level_count("site") if site else 0),
                )
                yield PageView(self, store, head.ranking_id, head.pages, version, head=head)
            return
        view = PageView(self, store, head.ranking_id, head.pages, version, lazy=True, head=head)
        try:
            yield view
        finally:
            view.end()

    def kept_lately(self, key: Hashable) -> bool:
        """Is a value kept (:meth:`PageView.keep`) for ``key`` under the version this thread saw last?  No
        query: the store may have changed since, and then the next page that asks for it makes it again."""
        head = getattr(self._local, "head", None)
        entry = getattr(self._local, "kept", {}).get(key)
        return head is not None and entry is not None and entry[0] == head.data_version

    def ready(self) -> bool:
        """Has this object read the newest version of the ranking: its arrays and its best pages' look-ups
        (``preload``)?  Then a page costs only its own links; if not, its first page reads them (on a large
        store, far more than a page costs), which :meth:`preload` does in a thread of the caller's choosing.  Cheap:
        the store's ``data_version``, and the ranking's head only if something was committed since this
        thread's last page."""
        store = self.store()
        version = store.data_version()
        head = getattr(self._local, "head", None)
        if head is not None and head.data_version == version:
            ranking_id, heads, counts = head.ranking_id, LevelHeads(head.host, head.site), head.counts
        else:
            try:
                ranking_id = store.rankings.ranking_head(self.ranking)[0]
            except RankingNotFound:  # Ranks() let it be missing: the store ranks only hosts or sites
                ranking_id = NO_RANKING
            heads = level_heads(store, self.levels)
            counts = tuple(store.levels.level_count(level.level) if level else 0 for level in heads)
        return (
            self._known.version == ranking_id
            and self._known.preloaded
            and (ranking_id == NO_RANKING or ranking_id in self._arrays)
            and all(
                level is None
                or (level.ranking_id in self._arrays and getattr(self._keys.get(level.level), "count", -1) == count)
                for level, count in zip(heads, counts)
            )
        )

    def preload_later(self) -> None:
        """:meth:`preload` in a thread of its own, unless one is under way."""
        with self._preloading_lock:
            if self._preloading is not None and self._preloading.is_alive():
                return
            self._preloading = threading.Thread(target=self._preload_quietly, name="pagerank-preload", daemon=True)
            self._preloading.start()

    def _preload_quietly(self) -> None:
        try:
            self.preload()
        except (StoreError, sqlite3.Error):  # the pages that ask the store say why
            pass
        finally:
            self.close()  # this thread's connection

    def preload(self) -> None:
        """Read the newest version's arrays and preloaded look-ups now (``preload``), rather than at the first
        page: in any thread, for every thread of this object (:meth:`ready` tells whether they are read)."""
        with self.page() as view:
            view._cache(preload=True)
            for head in (view.host_head, view.site_head):
                if head is not None:  # what ready() asks for: the level's arrays (read at a first estimate else)
                    view.level_keys(head.level, make=True)
                    # as the estimates read them: no votes (two fifths of a version, which they never ask for)
                    view.store.rankings.ranking_arrays(head.ranking_id, votes=False)
            if view.site_head is not None:
                site_of(PRELOAD_HOST)  # the Public Suffix List read, as a first estimate by site would read it

    def lookup(self, urls: Sequence[str]) -> Mapping[str, LinkInfo]:
        """:meth:`PageView.lookup` in a version of its own."""
        with self.page() as view:
            return view.lookup(urls)

    def panel(self, url: str) -> PanelData:
        """:meth:`PageView.panel` in a version of its own."""
        with self.page() as view:
            return view.panel(url)

    def close(self) -> None:
        store = getattr(self._local, "store", None)
        if store is not None:
            store.close()
            self._local.store = None


class _Kept(NamedTuple):
    version: int  # the store's data_version it was made under
    body: bytes
    value: Any
    size: int  # the body's bytes and the value's


class _Again:
    """Values kept with the bodies they were made from (:meth:`PageView.again`), newest last."""

    def __init__(self) -> None:
        self._kept: dict[Hashable, _Kept] = {}
        self._bytes = 0

    def get(self, key: Hashable, body: bytes, version: int) -> Any:
        kept = self._kept.get(key)
        if kept is None or kept.version != version or kept.body != body:
            return None
        del self._kept[key]
        self._kept[key] = kept  # the newest now
        return kept.value

    def put(self, key: Hashable, body: bytes, version: int, value: Any, size: int) -> None:
        gone = self._kept.pop(key, None)
        if gone is not None:
            self._bytes -= gone.size
        size += len(body)
        if size > _AGAIN_BYTES // 8:  # a large page would push out many small ones
            return
        self._kept[key] = _Kept(version, body, value, size)
        self._bytes += size
        while len(self._kept) > _AGAIN_PAGES or self._bytes > _AGAIN_BYTES:
            self._bytes -= self._kept.pop(next(iter(self._kept))).size


class PageView:
    """Look-ups for one page, from the ranking version current when it began."""

    def __init__(
        self,
        ranks: Ranks,
        store: Store,
        ranking_id: int,
        pages: int,
        data_version: int = 0,
        lazy: bool = False,
        head: _Head | None = None,
    ):
        self.ranks, self.store, self.ranking_id, self.pages = ranks, store, ranking_id, pages
        # the store's data_version when the page began: two views of one value saw the same store
        self.data_version = data_version
        # the store's pages (past the version's: not ranked yet) and whether a newer build exists
        self.store_pages = head.store_pages if head is not None else pages
        self.stale = head.stale if head is not None else None
        self.host_head = head.host if head is not None else None
        self.site_head = head.site if head is not None else None
        self.level_ids = head.levels if head is not None else (0, 0)
        self.level_counts = dict(zip(ESTIMATE_LEVELS, head.counts)) if head is not None else {}
        self._lazy = lazy  # the read transaction is begun at the first query (and ended by end())
        self._begun = False

    def _reading(self) -> None:
        """Before a query: the page's read transaction, if it is not begun yet."""
        if self._lazy and not self._begun:
            self._begun = self.store.begin_read()

    def end(self) -> None:
        """End the read transaction begun for this page, if any."""
        if self._begun:
            self._begun = False
            self.store.end_read()

    def keep(self, key: Hashable, make: Callable[[], T]) -> tuple[T, bool]:
        """(``make()``, False), or (what it gave for ``key`` on an earlier page, True) if nothing has been
        committed to the store since: no ranking, host ranking or build (SQLite's ``data_version``, as
        this thread's connection numbers it).  For what a page works out from the store alone, such as its
        panel.  At most ``_CACHE_KEPT`` values are kept, then they start over.

        The version is read before the page's read begins, so a value is kept
        under a version as old as its data or older: never served after a
        commit it did not see.
        """
        kept = self.ranks._local.kept
        entry = kept.get(key)
        if entry is not None and entry[0] == self.data_version:
            return entry[1], True
        value = make()
        if len(kept) >= _CACHE_KEPT:
            kept.clear()
        kept[key] = (self.data_version, value)
        return value, False

    def again(self, key: Hashable, body: bytes) -> Any:
        """What :meth:`keep_again` kept for ``key`` and this very ``body`` (compared byte for byte) if nothing
        has been committed to the store since (as :meth:`keep`), else None: a page's rewrite, for its revisit
        with the same body."""
        return self.ranks._local.again.get(key, body, self.data_version)

    def keep_again(self, key: Hashable, body: bytes, value: Any, size: int) -> None:
        """Keep ``value`` (of ``size`` bytes besides ``body``) for ``key`` and ``body`` under this view's
        version, for :meth:`again`: at most ``_AGAIN_PAGES`` and ``_AGAIN_BYTES``, the oldest let go."""
        self.ranks._local.again.put(key, body, self.data_version, value, size)

    def lookup(self, urls: Sequence[str]) -> Mapping[str, LinkInfo]:
        """What each URL shows: its page's score (:meth:`page_lookup`), else, where the host or site is ranked,
        its host's rank or else its site's (:meth:`estimates`); a URL with neither is left out."""
        try:
            return self._lookup(urls)
        finally:
            trim()  # what the page's look-ups mapped of a large store's arrays, let go of (see rankstore.store.mapped)

    def _lookup(self, urls: Sequence[str]) -> Mapping[str, LinkInfo]:
        answers = self.page_lookup(urls)
        if self.host_head is None and self.site_head is None:
            return answers
        lacking = [url for url in urls if (info := answers.get(url)) is None or info.pagerank is None]
        if not lacking:
            return answers
        found = self.estimates(lacking)
        if not answers:  # no page known (a page of links to other hosts' pages): the estimates are the answers
            return found
        answers = dict(answers)
        for url, estimate in found.items():  # a page in the store not ranked yet keeps saying so, with its estimate
            answers[url] = estimate if (info := answers.get(url)) is None else replace(info, estimate=estimate.estimate)
        return answers

    def estimates(self, urls: Sequence[str]) -> dict[str, LinkInfo]:
        """The info of a link to each URL as if its page had no score: its host's rank where the host ranking
        ranks it, else its site's where the site ranking does (a URL with neither is left out).

        One batched probe per level for the hosts (sites) not known yet in
        these versions of the host and site rankings; what is known of a host
        is kept until either ranking has a new version.
        """
        known, by_url = self._estimate_cache()
        todo = [url for url in urls if url not in by_url]
        if todo:
            hosts = list(map(host_of, todo))
            missing = [host for host in dict.fromkeys(hosts) if host not in known]
            if missing:
                self._reading()
                if self.host_head is not None:
                    scores = self.store.levels.level_scores(self.host_head, missing, self.level_keys("host"))
                    answered = _estimates(scores)
                    known.update(answered)
                    missing = [host for host in missing if host not in answered]
                if self.site_head is not None and missing:
                    sites = {host: site_of(host) for host in missing}
                    scores = self.store.levels.level_scores(
                        self.site_head, set(sites.values()), self.level_keys("site")
                    )
                    answered = _estimates(scores)
                    for host in missing:
                        known[host] = answered.get(sites[host])
                else:
                    known.update(dict.fromkeys(missing))
            by_url.update(zip(todo, map(known.__getitem__, hosts)))
        return {url: info for url in urls if (info := by_url[url]) is not None}

    def level_keys(self, level: str, make: bool = False) -> LevelKeys | None:
        """The level's names' keys (:class:`~rankstore.store.levels.LevelKeys`), mapped once while the store
        numbers as many hosts (sites) as when this page began; None where that count is not known, or past
        :data:`KEYS_MOST` names (the store's key buckets answer), or while their files are not made: ``make``
        makes them here, else they are made in a thread of their own (:meth:`Ranks.preload_later`) and the
        key buckets answer meanwhile (made at 24 million hosts, they were the first page's longest wait)."""
        count = self.level_counts.get(level)
        if count is None or count > KEYS_MOST:
            return None
        keys = self.ranks._keys.get(level)
        if keys is None or keys.count != count:
            self._reading()
            found = self.store.levels.level_keys(level) if make else self.store.levels.mapped_level_keys(level)
            if found is None:
                self.ranks.preload_later()
                return None
            keys = found
            if keys.count != count:  # a build has numbered more since the page began: the name index answers
                return None
            self.ranks._keys[level] = keys
        return keys

    def _estimate_cache(self) -> tuple[dict[str, LinkInfo | None], dict[str, LinkInfo | None]]:
        """(host -> estimate, URL -> estimate), for these versions of the host and site rankings (either's new
        version, or too many URLs, starts afresh): a URL seen before costs a dict look-up, not its host's."""
        key, known, by_url = self.ranks._estimates
        if key != self.level_ids or len(by_url) > _CACHE_URLS:
            known, by_url = {}, {}
            self.ranks._estimates = Estimates(self.level_ids, known, by_url)
        return known, by_url

    def page_lookup(self, urls: Sequence[str]) -> Mapping[str, LinkInfo]:
        """Every URL in one batched query, but for those already looked up in this version of the ranking.

        A site's navigation links recur on every page; what is known of a URL
        only changes with a new version of the ranking (a new id, checked once
        a page), which starts a new cache (with the version's best pages in it,
        ``preload``: if that is all of them, a URL not in it needs no query),
        or, for a URL the version does not rank, with a build that adds pages:
        while the store has pages past the version's, the URLs not found are
        asked for in one more batched query, and those in the store are "not
        ranked yet" (``LinkInfo.later``).
        """
        cache, absent = self._cache(), self._absent()
        missing = [url for url in urls if url not in cache and url not in absent]
        later = self.store_pages > self.pages  # pages came into the store since the version: unranked
        if missing and self.ranks._known.whole:  # every page of the version is known: these are in none of it
            if not later:  # nor in the store
                return {url: info for url in urls if (info := cache.get(url) or absent.get(url)) is not None}
        elif missing:
            self._reading()
            lowest, highest = self.ranks.score_range(self.store, self.ranking_id)
            found = self.store.queries.scores_in(self.ranking_id, missing)
            if found:
                scores, positions, inlinks = zip(*found.values())
                cache.update(zip(found, _link_infos(scores, positions, inlinks, self.pages, lowest, highest)))
                missing = [url for url in missing if url not in found]
        if missing and later:  # in the store but past the version, or in none of it: one more batched query
            self._reading()
            for url, page_id in self.store.pages.page_ids_for(missing).items():
                if page_id > self.pages:
                    absent[url] = _LATER
        for url in missing:
            absent.setdefault(url, None)  # not in the store (until a new version, or a build adds it)
        return {url: info for url in urls if (info := cache.get(url) or absent.get(url)) is not None}

    def lookups_needed(self, urls: Sequence[str]) -> int | None:
        """How many of ``urls`` :meth:`lookup` would ask the store for; None if it would first read this
        version's preloaded look-ups (the version is new to this object, or its cache is full)."""
        version, cache, whole, _ = self.ranks._known
        if (version != self.ranking_id or len(cache) > _CACHE_URLS) and self._preloads_first():
            return None
        if whole and self.store_pages <= self.pages:
            needed = 0  # no page look-up: a URL not known is in no page of the store
        else:
            key, absent = self.ranks._absent
            if key != (self.ranking_id, self.store_pages):
                absent = {}
            needed = sum(url not in cache and url not in absent for url in urls)
        if self.host_head is not None or self.site_head is not None:  # and the hosts of those without a score
            level_key, known, by_url = self.ranks._estimates
            if level_key != self.level_ids:
                known, by_url = {}, {}
            needed += len(
                {
                    host
                    for url in urls
                    if ((info := cache.get(url)) is None or info.pagerank is None) and url not in by_url
                    if (host := host_of(url)) not in known
                }
            )
        return needed

    def panel(self, url: str, most_pages: int | None = None) -> PanelData:
        """The page's own score, its best backlinks (those new since the previous build marked) and its host
        rank: one read of the page's in-link slice, one of the backlinks' titles, and one query of two indexed
        look-ups (the previous build, the host ranking's version).

        What a backlink shows is remembered with the look-ups (the same good
        pages link to many others), and a host's rank per version of the host ranking.

        A page with no score of its own (not in the store, or not ranked yet)
        shows its host's and its site's rank instead, each with its best
        referrers (:meth:`level_panels`); ``most_pages``: a caller that must not
        spend long has :class:`~.rewrite.TooManyLinks` for a host (site) of more
        pages than that, whose in-links are read for its referrers.
        """
        ranks = self.ranks
        self._reading()
        info = self.lookup([url]).get(url)
        if info is None or info.pagerank is None:  # not in the store, or not ranked yet
            levels = self.level_panels(url, most_pages)
            return PanelData(
                url,
                info or LinkInfo(None),
                [],
                0,
                ranks.ranking,
                stale=self.stale,
                levels=levels,
                pages_ranked=self.ranking_id != NO_RANKING,
                slots=ranks.panel_size,
            )
        since, host_ranking = self._heads()
        rows, new, count, since = self._best_backlinks(url, since)
        cache = self._cache()
        fresh = [row for row in rows if cache.get(row[0]) is None]
        if fresh:
            lowest, highest = ranks.score_range(self.store, self.ranking_id)
            _, _, scores, positions, inlinks, _ = zip(*fresh)
            cache.update(
                zip([row[0] for row in fresh], _link_infos(scores, positions, inlinks, self.pages, lowest, highest))
            )
        backlinks = [
            Backlink(row[0], row[1], _known(cache[row[0]]), bool(row[5]), is_new) for row, is_new in zip(rows, new)
        ]
        host = host_of(url)
        hostrank = self._host_rank(host, host_ranking)
        return PanelData(
            url,
            info,
            backlinks,
            info.inlinks or 0,  # a page's count is always known
            ranks.ranking,
            since,
            count,
            host,
            hostrank[0] if hostrank else None,
            hostrank[1] if hostrank else None,
            self.stale,
            slots=ranks.panel_size,
        )

    def level_panels(self, url: str, most_pages: int | None = None) -> list[LevelPanel]:
        """The rank of the page's host and of its site, each with its best referring hosts (sites) by rank at
        that level, for the levels the store ranks; kept per host (site) like a panel (:meth:`keep`)."""
        host = host_of(url)
        panels = []
        for head in (self.host_head, self.site_head):
            if head is None:
                continue
            name = host if head.level == "host" else site_of(host)
            made, _ = self.keep(
                ("level", head.level, name, most_pages), functools.partial(self._level_panel, head, name, most_pages)
            )
            if made is None:
                raise TooManyLinks(f"the {head.level} {name} has more than {most_pages:,} pages")
            panels.append(made)
        return panels

    def _level_panel(self, head: LevelHead, name: str, most_pages: int | None) -> LevelPanel | None:
        self._reading()
        estimate = _estimates(self.store.levels.level_scores(head, [name])).get(name)
        found = self.store.levels.referrers(head, name, self.ranks.panel_size, most_pages)
        if found is None:
            return None
        referrers = _estimates(
            LevelScores(
                head,
                tuple(one.name for one in found),
                np.array([one.score for one in found], dtype=np.float64),
                np.array([one.place for one in found], dtype=np.int64),
                np.zeros(len(found), dtype=np.int64),
            )
        )
        # the whole host's backlinks by referring host, the whole site's by referring site, where the store has it
        view = None
        if self.store.levels.level_id(head.level, name) is not None:
            target = {"url": name, "host": "1"} if head.level == "host" else {"site": name}
            view = proxy_url("/backlinks", **target, group=head.level, ranking=self.ranks.ranking)
        return LevelPanel(
            head.level,
            name,
            estimate.estimate if estimate is not None else None,
            [Referrer(one.name, referrers[one.name], one.links) for one in found],
            view,
        )

    def _heads(self) -> tuple[int | None, int | None]:
        """In one query: the build before the one the in-link arrays reflect (None while they reflect the first
        build: no link can be new), and the newest version of the host ranking (None where there is none)."""
        heads = self.store.panel_heads()
        return heads.previous_build, heads.host_ranking

    def _best_backlinks(self, url: str, since: int | None) -> tuple[list[tuple], list[bool], int, int | None]:
        """(url, title, score, position, inlinks, nofollow) of the best backlinks, whether each is new (first
        seen by its page's latest crawl: :meth:`~rankstore.store.Graph.new_in_links`),
        how many of all the page's backlinks are, and a build that every new one was first seen after
        (``since`` when none is new: the build before the one the graph reflects, None while it is the first)."""
        limit = self.ranks.panel_size
        if since is None:  # one build: nothing is new, and the store's own query answers
            rows = self.store.queries.top_backlinks(self.ranking_id, url, limit)
            return rows, [False] * len(rows), 0, None
        page = self.store.pages.page_id(url)
        if page is None:
            return [], [], 0, since
        links = analysis.in_slice(self.store, page)  # the library's read of the page's in-links, with each link's build
        arrays = self.store.rankings.ranking_arrays(self.ranking_id)
        chosen = arrays.best_of(links.sources, limit + 1)
        # a page newer than the version has no score yet; a page is never its own backlink
        chosen = chosen[(links.sources[chosen] < arrays.pages) & (links.sources[chosen] != page - 1)][:limit]
        fresh = self.store.graph.new_in_links(page, links) & (links.sources != page - 1)
        new = fresh[chosen]
        count = int(np.count_nonzero(fresh))
        if count:
            since = int(links.born[fresh].min()) - 1
        indices = links.sources[chosen].tolist()
        titles = {row[0]: row[1:] for row in self.store.pages.pages_by_id("url, title", [i + 1 for i in indices])}
        flags = links.nofollow[chosen].tolist() if links.nofollow is not None else [False] * len(indices)
        rows = [
            (
                *titles[i + 1],
                float(arrays.scores[i]),
                int(arrays.places([i])[0]),
                int(arrays.inlinks[i]),
                int(nofollow),
            )
            for i, nofollow in zip(indices, flags)
        ]
        return rows, new.tolist(), count, since

    def _host_rank(self, host: str, version: int | None) -> tuple[float, int] | None:
        """(host rank score, position) of a host, remembered for this ``version`` of the host ranking."""
        if version is None:
            return None
        known, hosts = self.ranks._hosts
        if known != version:
            hosts = {}
            self.ranks._hosts = HostRanks(version, hosts)
        if host not in hosts:
            hosts[host] = analysis.host_ranks(self.store, [host]).get(host)
        return hosts[host]

    def marks(self, directory: str) -> Marks:
        """What each href shows on the pages of a base directory, in this version of the ranking: the
        rewriter's table (:data:`~proxy_addon.rewrite.Marks`), kept from page to page.  A new version
        starts afresh, and so do all the tables once they and their hrefs number more than
        ``_CACHE_MARKS`` in all (hrefs counted as the page given the last table added to it)."""
        version, tables, count = self.ranks._marks
        # a build that adds pages turns some hrefs' "not in the store" into "not ranked yet"; a new version of
        # the host or site ranking changes their estimates
        key = (self.ranking_id, self.store_pages, self.level_ids)
        if version == key and count.table is not None:
            count.hrefs += len(count.table) - count.size  # what the previous page added
        if version != key or count.hrefs + len(tables) > _CACHE_MARKS:  # an empty table counts too
            tables, count = {}, MarksCount()
            self.ranks._marks = MarksCache(key, tables, count)
        table = tables.setdefault(directory, {})
        count.table, count.size = table, len(table)
        return table

    def _cache(self, preload: bool = False) -> dict[str, LinkInfo]:
        """What is known of URLs in this version of the ranking (a new version starts afresh, with its
        ``preload`` best pages known).  A version of more pages than that starts empty for the page that
        finds it, which asks the store for its own links; its best pages are read in a thread of their own
        (``preload``: here, now), so that no page waits for them."""
        version, cache, _, preloaded = self.ranks._known
        if version != self.ranking_id or len(cache) > _CACHE_URLS or (preload and not preloaded):
            cache = {}
            if self.ranking_id == NO_RANKING:  # no page has a score, and a URL the store holds is "not ranked yet"
                self.ranks._known = KnownPages(self.ranking_id, cache, True)
            elif preload or self._preloads_first() or not self._most():
                whole = self._preload(cache, self._most())
                self.ranks._known = KnownPages(self.ranking_id, cache, whole)
            else:
                self.ranks._known = KnownPages(self.ranking_id, cache, False, preloaded=False)
                self.ranks.preload_later()
        return cache

    def _most(self) -> int:
        return min(self.ranks.preload_pages, _CACHE_URLS)

    def _preloads_first(self) -> bool:
        """Are the version's best pages its every page (or no more than ``preload`` asks for)?  Then they are read
        before its first page (a URL not among them needs no query), else beside it."""
        return self.pages <= self._most()

    def _absent(self) -> dict[str, LinkInfo | None]:
        """What is known of URLs the version does not rank: in no page of the store (None), or not ranked yet.
        A new version, or a build that adds pages, starts afresh (the version's own answers stand)."""
        key, absent = self.ranks._absent
        if key != (self.ranking_id, self.store_pages) or len(absent) > _CACHE_URLS:
            absent = {}
            self.ranks._absent = AbsentPages((self.ranking_id, self.store_pages), absent)
        return absent

    def _preload(self, cache: dict[str, LinkInfo], most: int) -> bool:
        """Put the look-ups of the version's ``most`` best pages in ``cache``, in bulk; True if that is every
        page of the version."""
        if most <= 0:
            return False
        self._reading()
        arrays = self.store.rankings.ranking_arrays(self.ranking_id)
        if not arrays.pages:
            return True
        lowest, highest = self.ranks.score_range(self.store, self.ranking_id)
        if most >= arrays.pages:  # the whole version: one pass over its pages
            rows = self.store.pages.page_urls(arrays.pages)
        else:
            rows = list(self.store.pages.pages_by_id("url", (arrays.best[:most] + 1).tolist()))
        if not rows:
            return most >= arrays.pages
        ids, urls = zip(*rows)
        chosen = np.asarray(ids, dtype=np.int64) - 1
        infos = _link_infos(
            arrays.scores[chosen], arrays.places(chosen), arrays.inlinks[chosen], arrays.pages, lowest, highest
        )
        cache.update(zip(urls, infos))
        return most >= arrays.pages


def _link_infos(scores, places, inlinks, pages: int, lowest: float, highest: float) -> list[LinkInfo]:
    scores = np.asarray(scores, dtype=np.float64)
    percentiles = display.percentile(np.asarray(places, dtype=np.float64), pages)
    toolbars = display.toolbar(scores, pages)
    widths = display.bar_width(scores, lowest, highest, MAX_BAR_PX)
    # as lists first: numpy's scalars are slow to take out and convert one at a time
    return list(
        map(
            LinkInfo,
            scores.tolist(),
            percentiles.tolist(),
            toolbars.tolist(),
            np.asarray(inlinks, dtype=np.int64).tolist(),
            widths.tolist(),
        )
    )


# a LinkInfo of no page score, given its estimate
_NO_PAGE_SCORE = functools.partial(LinkInfo, None, None, 0, 0, 0, False)


def _estimates(found: LevelScores) -> dict[str, LinkInfo]:
    """The info of a link to a page without a score of each name found at a level: its rank there."""
    if not len(found):
        return {}
    head = found.head
    percentiles = display.percentile(found.places.astype(np.float64), head.nodes).tolist()
    toolbars = display.toolbar(found.scores, head.nodes).tolist()
    widths = display.bar_width(found.scores, head.lowest, head.highest, MAX_BAR_PX).tolist()
    # tuple.__new__ of each row: a named tuple's own __new__ is a Python function, called a thousand times
    estimates = map(
        tuple.__new__,
        repeat(Estimate),
        zip(
            repeat(head.level),
            found.names,
            found.scores.tolist(),
            percentiles,
            toolbars,
            widths,
            found.places.tolist(),
            repeat(head.nodes),
        ),
    )
    # positional, by map: a page of links to a thousand hosts makes a thousand of each, and keywords cost more
    return dict(zip(found.names, map(_NO_PAGE_SCORE, estimates)))


def _known(info: LinkInfo | None) -> LinkInfo:
    """A backlink's info, filled in just before (a backlink is always in the version's arrays)."""
    assert info is not None
    return info
