"""Read-only access to a rankstore for the proxy: one connection per thread, reused.

Turns store rows into what the rewriter shows (:class:`LinkInfo`, :class:`PanelData`),
with the display scales of :mod:`rankstore.display`.  All of a page's link
targets are looked up in one batched query.
"""

from __future__ import annotations

import threading
from typing import Mapping, Sequence

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
        return _link_infos([row["pagerank"] for row in rows], [row["position"] for row in rows],
                           [row["inlinks"] for row in rows], rows[0]["pages"], lowest, highest)

    def lookup(self, urls: Sequence[str]) -> Mapping[str, LinkInfo]:
        """Every URL in one batched query, but for those already looked up in this version of the ranking.

        A site's navigation links recur on every page; what is known of a URL
        only changes with a new version of the ranking (a new id, checked here
        with one cheap query a page), which starts a new cache.
        """
        store = self.store()
        ranking_id, _ = store.ranking_head(self.ranking)
        version, cache = self._known
        if version != ranking_id or len(cache) > _CACHE_URLS:
            cache = {}
            self._known = (ranking_id, cache)
        missing = [url for url in urls if url not in cache]
        if missing:
            lowest, highest = self.score_range(store, ranking_id)
            found, pages = store.scores_by_url(missing, self.ranking)
            if found:
                scores, positions, inlinks = zip(*found.values())
                cache.update(zip(found, _link_infos(scores, positions, inlinks, pages, lowest, highest)))
            for url in missing:
                cache.setdefault(url, None)  # not in the store (until a new version)
        return {url: info for url in urls if (info := cache[url]) is not None}

    def panel(self, url: str) -> PanelData:
        store = self.store()
        ranking_id, _ = store.ranking_head(self.ranking)
        lowest, highest = self.score_range(store, ranking_id)
        with store.snapshot():
            own = store.lookup([url], self.ranking).get(url)
            rows = store.backlinks(url, self.ranking, self.panel_size) if own else []
        info = self.infos([own], lowest, highest)[0] if own else LinkInfo(None)
        backlinks = [Backlink(row["url"], row["title"], link_info, row["nofollow"])
                     for row, link_info in zip(rows, self.infos(rows, lowest, highest))]
        return PanelData(url, info, backlinks, own["inlinks"] if own else 0, self.ranking)

    def close(self) -> None:
        store = getattr(self._local, "store", None)
        if store is not None:
            store.close()
            self._local.store = None


def _link_infos(scores, positions, inlinks, pages: int, lowest: float, highest: float) -> list[LinkInfo]:
    scores = np.asarray(scores, dtype=np.float64)
    percentiles = display.percentile(np.asarray(positions, dtype=np.float64), pages)
    toolbars = display.toolbar(scores, pages)
    widths = display.bar_width(scores, lowest, highest, MAX_BAR_PX)
    return [LinkInfo(float(s), float(p), int(t), int(i), int(w))
            for s, p, t, i, w in zip(scores, percentiles, toolbars, inlinks, widths)]
