"""Read-only access to a rankstore for the proxy: one connection per thread, reused.

Turns store rows into what the rewriter shows (:class:`LinkInfo`, :class:`PanelData`),
with the display scales of :mod:`rankstore.display`.  All of a page's link
targets are looked up in one batched query.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from rankstore import display
from rankstore.store import Store

from .rewrite import MAX_BAR_PX, Backlink, LinkInfo, PanelData

__all__ = ["Ranks"]

_CACHE_URLS = 200_000  # URLs remembered per process before the cache starts over


class Ranks:
    def __init__(self, store_path: str, ranking: str = "pagerank", panel_size: int = 10):
        self.store_path = store_path
        self.ranking = ranking
        self.panel_size = panel_size
        self._local = threading.local()
        self._ranges: dict[int, tuple[float, float]] = {}
        self._known: tuple[int | None, dict[str, LinkInfo | None]] = (None, {})  # (ranking id, URL -> info)
        store = self.store()
        store.ranking_head(ranking)  # fails early, with a clear message, for a missing ranking

    def store(self) -> Store:
        store = getattr(self._local, "store", None)
        if store is None:
            store = self._local.store = Store(self.store_path, readonly=True)
        return store

    def score_range(self, store: Store, ranking_id: int) -> tuple[float, float]:
        """(lowest, highest) score of the current ranking, read once per version."""
        if ranking_id not in self._ranges:
            self._ranges[ranking_id] = store.score_range(store.ranking(self.ranking))
        return self._ranges[ranking_id]

    def infos(self, rows: Sequence[dict], lowest: float, highest: float) -> list[LinkInfo]:
        """LinkInfo for store rows (dicts with pagerank, position, inlinks, pages)."""
        if not rows:
            return []
        return _link_infos(
            [row["pagerank"] for row in rows],
            [row["position"] for row in rows],
            [row["inlinks"] for row in rows],
            rows[0]["pages"],
            lowest,
            highest,
        )

    @contextlib.contextmanager
    def page(self) -> Iterator[PageView]:
        """One page's look-ups and panel, all from one version of the ranking (one read transaction)."""
        store = self.store()
        with store.snapshot():
            ranking_id, pages = store.ranking_head(self.ranking)
            yield PageView(self, store, ranking_id, pages)

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


class PageView:
    """Look-ups for one page, from the ranking version current when it began."""

    def __init__(self, ranks: Ranks, store: Store, ranking_id: int, pages: int):
        self.ranks, self.store, self.ranking_id, self.pages = ranks, store, ranking_id, pages

    def lookup(self, urls: Sequence[str]) -> Mapping[str, LinkInfo]:
        """Every URL in one batched query, but for those already looked up in this version of the ranking.

        A site's navigation links recur on every page; what is known of a URL
        only changes with a new version of the ranking (a new id, checked once
        a page), which starts a new cache.
        """
        cache = self._cache()
        missing = [url for url in urls if url not in cache]
        if missing:
            lowest, highest = self.ranks.score_range(self.store, self.ranking_id)
            found = self.store.scores_in(self.ranking_id, missing)
            if found:
                scores, positions, inlinks = zip(*found.values())
                cache.update(zip(found, _link_infos(scores, positions, inlinks, self.pages, lowest, highest)))
            for url in missing:
                cache.setdefault(url, None)  # not in the store (until a new version)
        return {url: info for url in urls if (info := cache[url]) is not None}

    def panel(self, url: str) -> PanelData:
        """The page's own score and its best backlinks: one query (the page's own entry is a look-up).

        What a backlink shows is remembered with the look-ups (the same good
        pages link to many others).
        """
        ranks = self.ranks
        info = self.lookup([url]).get(url)
        if info is None:
            return PanelData(url, LinkInfo(None), [], 0, ranks.ranking)
        rows = self.store.top_backlinks(self.ranking_id, url, ranks.panel_size)
        cache = self._cache()
        new = [row for row in rows if cache.get(row[0]) is None]
        if new:
            lowest, highest = ranks.score_range(self.store, self.ranking_id)
            _, _, scores, positions, inlinks, _ = zip(*new)
            cache.update(
                zip([row[0] for row in new], _link_infos(scores, positions, inlinks, self.pages, lowest, highest))
            )
        backlinks = [Backlink(row[0], row[1], _known(cache[row[0]]), bool(row[5])) for row in rows]
        return PanelData(url, info, backlinks, info.inlinks, ranks.ranking)

    def _cache(self) -> dict[str, LinkInfo | None]:
        """What is known of URLs in this version of the ranking (a new version starts afresh)."""
        version, cache = self.ranks._known
        if version != self.ranking_id or len(cache) > _CACHE_URLS:
            cache = {}
            self.ranks._known = (self.ranking_id, cache)
        return cache


def _link_infos(scores, positions, inlinks, pages: int, lowest: float, highest: float) -> list[LinkInfo]:
    scores = np.asarray(scores, dtype=np.float64)
    percentiles = display.percentile(np.asarray(positions, dtype=np.float64), pages)
    toolbars = display.toolbar(scores, pages)
    widths = display.bar_width(scores, lowest, highest, MAX_BAR_PX)
    return [
        LinkInfo(float(s), float(p), int(t), int(i), int(w))
        for s, p, t, i, w in zip(scores, percentiles, toolbars, inlinks, widths)
    ]


def _known(info: LinkInfo | None) -> LinkInfo:
    """A backlink's info, filled in just before (a backlink is always in the version's arrays)."""
    assert info is not None
    return info
