"""What the CLI and the proxy ask of a store: top pages, look-ups, backlinks by rank, title search.

Each answer comes from one ranking version: a query reads the version's head
and arrays inside one read transaction (:meth:`~rankstore.store.Store.snapshot`).
Rows are dicts with the same keys everywhere (``url``, ``title``,
``pagerank``, ``position``, ``inlinks``, ``extra``, ``crawled``, ``pages``;
links add ``nofollow`` and ``anchor``).  A page added since the version has
``pagerank``, ``position`` and ``inlinks`` None: it is not ranked yet.

A ranking has a level (:attr:`~.rankings.Ranking.level`): a host ranking's
arrays are by host id, so every question about pages asks for a page ranking
(:meth:`.Rankings.page_ranking`) and is refused one of hosts
(:class:`RankingLevelError`), never answered with a host's score read as a
page's.  A page's links to itself are never listed among its backlinks.
"""

from __future__ import annotations

import json
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .base import Part
from .pages import url_keys
from .rankings import Ranking, RankingArrays, RankingLevelError, RankingRows, run_starts

__all__ = ["PanelHeads", "Queries", "RankingLevelError", "ExportRow", "search_words"]

_LOOKUP_CHUNK = 2000
_IN_CHUNK = 500
SEARCH_FIRST = 20_000  # title matches read by id before a search checks the ranking's best pages instead
_CHECK_SECONDS = 40e-6  # checking one page of the ranking for a match (an FTS5 look-up of its id), as measured


def search_words(words: Sequence[str]) -> list[str]:
    """The words a title search looks for: control characters and lone surrogates read as spaces.

    SQLite ends a query string at a NUL (FTS5 then reports an unterminated
    string) and cannot encode a lone surrogate, which a command line can
    carry from bytes that are not UTF-8; neither can be in a title's words.
    """
    cleaned = "".join(" " if unicodedata.category(char) in ("Cc", "Cs") else char for char in " ".join(words))
    return cleaned.split()


def _page_row(arrays: RankingRows, index: int, place: int | None, url: str, title: str | None, crawled: int) -> dict:
    """A page's row of a view; ``place``: how many pages score more (None where the version has no score)."""
    ranked = index < arrays.pages
    extra = float(arrays.extra[index]) if ranked and arrays.extra is not None else None
    return {
        "url": url,
        "title": title,
        "pagerank": float(arrays.scores[index]) if ranked else None,
        "place": place,
        "inlinks": int(arrays.inlinks[index]) if ranked else None,
        "extra": None if extra is None or np.isnan(extra) else extra,
        "crawled": bool(crawled),
        "pages": arrays.pages,
    }


class ExportRow(NamedTuple):
    """A page of a page ranking, as :meth:`Queries.export_rows` lists them."""

    url: str
    score: float
    place: int  # how many pages score more: 0 for the best (and for every page tied with it)
    inlinks: int
    title: str | None
    extra: float | None  # the variant's value (spam mass), None where it has none


@dataclass(frozen=True)
class PanelHeads:
    """What a page's panel asks besides its own links, in one query."""

    previous_build: int | None  # the build before the one the in-link arrays reflect (None: they reflect the first)
    host_ranking: int | None  # the newest version of ``hostrank`` (None: hosts are not ranked)


class Queries(Part):
    """Read-only views of a store; part of :class:`~rankstore.store.Store`."""

    def page_rows(self, arrays: RankingRows, indices: Sequence[int]) -> list[dict]:
        pages = {
            row[0]: row[1:] for row in self.store.pages.pages_by_id("url, title, crawled", [i + 1 for i in indices])
        }
        inside = [i for i in indices if i < arrays.pages]
        places = dict(zip(inside, arrays.places(np.asarray(inside, dtype=np.int64)).tolist())) if inside else {}
        return [_page_row(arrays, i, places.get(i), *pages[i + 1]) for i in indices]

    def top(self, name: str = "pagerank", limit: int = 15, offset: int = 0) -> list[dict]:
        with self.snapshot():
            # the head of the order by score and the rows shown: what is read grows with them, not the ranking
            arrays = self.store.rankings.rows_reader(self.store.rankings.page_head(name)[0], limit)
            return self.store.queries.page_rows(arrays, arrays.best[offset : offset + limit].tolist())

    def export_rows(self, ranking: Ranking) -> list[ExportRow]:
        """Every page of a page ranking, best first."""
        if ranking.level != "page":
            raise RankingLevelError(ranking, self.store.rankings.page_rankings())
        with self.snapshot():
            arrays = self.store.rankings.ranking_arrays(ranking.id)
            urls, titles = [None] * arrays.pages, [None] * arrays.pages
            for page_id, url, title in self.db.execute(
                "SELECT id, url, title FROM pages WHERE id <= ?", (arrays.pages,)
            ):
                urls[page_id - 1], titles[page_id - 1] = url, title
        best = arrays.best.tolist()
        places = run_starts(arrays.scores, arrays.best, np.arange(arrays.pages, dtype=np.int64)).tolist()
        scores, inlinks = arrays.scores.tolist(), arrays.inlinks.tolist()
        extra = arrays.extra.tolist() if arrays.extra is not None else [None] * arrays.pages
        return [
            ExportRow(urls[i], scores[i], place, inlinks[i], titles[i], None if extra[i] != extra[i] else extra[i])
            for place, i in zip(places, best)
        ]

    def lookup(self, urls: Sequence[str], name: str = "pagerank") -> dict[str, dict]:
        """Scores and titles of many URLs (already canonical); absent URLs are left out, a page added since
        the version is there with no score (not ranked yet)."""
        urls = list(dict.fromkeys(urls))
        found: dict[str, dict] = {}
        with self.snapshot():
            arrays = self.store.rankings.rows_reader(self.store.rankings.page_head(name)[0], len(urls), True)
            for start in range(0, len(urls), _IN_CHUNK):
                chunk = urls[start : start + _IN_CHUNK]
                marks = ",".join("?" * len(chunk))
                for page_id, url, title, crawled in self.db.execute(
                    f"SELECT id, url, title, crawled FROM pages WHERE url IN ({marks})", chunk
                ):
                    index = page_id - 1
                    place = int(arrays.places([index])[0]) if index < arrays.pages else None
                    found[url] = _page_row(arrays, index, place, url, title, crawled)
        return found

    def scores_by_url(self, urls: Sequence[str], name: str = "pagerank") -> tuple[dict[str, tuple], int]:
        """{url: (score, place, inlinks)} for the URLs in the store, and the ranking's page count.

        The proxy's lookup: one probe of the URL-key B-tree per URL, in one
        query per 2,000 URLs, then the version's arrays.
        """
        with self.snapshot():
            ranking_id, pages = self.store.rankings.page_head(name)
            return self.scores_in(ranking_id, urls), pages

    def scores_in(self, ranking_id: int, urls: Sequence[str]) -> dict[str, tuple]:
        """:meth:`scores_by_url` for a ranking version already known (call it inside a snapshot)."""
        arrays = self.store.rankings.ranking_arrays(ranking_id)
        unique = list(dict.fromkeys(urls))
        keys = url_keys(unique)
        order = np.argsort(keys, kind="stable")
        keys = keys[order]  # in order: SQLite's probes walk the B-tree forward, and its IN list is built in order
        rows: list[tuple[int, int]] = []
        for start in range(0, len(keys), _LOOKUP_CHUNK):
            chunk = keys[start : start + _LOOKUP_CHUNK].tolist()
            marks = ",".join("?" * len(chunk))
            rows += self.db.execute(
                f"SELECT url_hash, page_id FROM page_keys WHERE url_hash IN ({marks})", chunk
            ).fetchall()
        if not rows:
            return {}
        found = np.array(rows, dtype=np.int64)
        index = found[:, 1] - 1
        inside = index < arrays.pages
        at = order[np.searchsorted(keys, found[inside, 0])]
        index = index[inside]
        return dict(
            zip(
                [unique[i] for i in at.tolist()],
                zip(arrays.scores[index].tolist(), arrays.places(index).tolist(), arrays.inlinks[index].tolist()),
            )
        )

    def _backlink_indices(self, arrays: RankingArrays, target: int, count: int) -> tuple[list[int], list[bool]]:
        """The best ``count`` pages linking to page id ``target`` (not the page itself), and whether each link is
        nofollow."""
        sources, nofollow = self.store.graph.in_links_of(target)
        others = sources != target - 1
        if not others.all():  # a page's link to itself is no backlink
            sources = sources[others]
            nofollow = nofollow[others] if nofollow is not None else None
        chosen = arrays.best_of(sources, count)
        flags = nofollow[chosen].tolist() if nofollow is not None else [False] * len(chosen)
        return sources[chosen].tolist(), flags

    def backlinks(self, url: str, name: str = "pagerank", limit: int = 50, offset: int = 0) -> list[dict]:
        """Pages linking to ``url``, best PageRank first (the paper's section 7.4)."""
        with self.snapshot():
            arrays = self.store.rankings.ranking_arrays(self.store.rankings.page_head(name)[0])
            target = self.store.pages.page_id(url)
            if target is None:
                return []
            indices, flags = self._backlink_indices(arrays, target, offset + limit)
            indices, flags = indices[offset:], flags[offset:]
            rows = self.store.queries.page_rows(arrays, indices)
            anchors = self._anchors(target, indices)
        for row, index, nofollow in zip(rows, indices, flags):
            row["nofollow"] = nofollow
            row["anchor"] = anchors.get(index + 1)
        return rows

    def _anchors(self, target: int, indices: Sequence[int]) -> dict[int, str]:
        if not indices:
            return {}
        marks = ",".join("?" * len(indices))
        return dict(
            self.db.execute(
                f"SELECT src, anchor FROM link_notes WHERE dst = ? AND src IN ({marks}) AND anchor IS NOT NULL",
                [target, *(i + 1 for i in indices)],
            )
        )

    def top_backlinks(self, ranking_id: int, url: str, limit: int) -> list[tuple]:
        """(url, title, score, position, inlinks, nofollow) of the pages linking to ``url``, best first.

        The proxy's panel, for a ranking version already known (call it inside a snapshot).
        """
        target = self.store.pages.page_id(url)
        if target is None:
            return []
        arrays = self.store.rankings.ranking_arrays(ranking_id)
        indices, flags = self._backlink_indices(arrays, target, limit)
        rows = self.store.queries.page_rows(arrays, indices)
        return [
            (row["url"], row["title"], row["pagerank"], row["place"], row["inlinks"], int(nofollow))
            for row, nofollow in zip(rows, flags)
        ]

    def out_links_ranked(self, url: str, name: str = "pagerank", limit: int = 200) -> list[dict]:
        with self.snapshot():
            arrays = self.store.rankings.ranking_arrays(self.store.rankings.page_head(name)[0])
            source = self.store.pages.page_id(url)
            if source is None:
                return []
            targets = self.store.pages.out_link_ids(source) - 1
            chosen = targets[arrays.best_of(targets, min(limit, len(targets)))].tolist()
            rows = self.store.queries.page_rows(arrays, chosen)
            notes = {
                dst: (nofollow, anchor)
                for dst, nofollow, anchor in self.db.execute(
                    "SELECT dst, nofollow, anchor FROM link_notes WHERE src = ?", (source,)
                )
            }
        for row, index in zip(rows, chosen):
            nofollow, anchor = notes.get(index + 1, (0, None))
            row["nofollow"], row["anchor"] = bool(nofollow), anchor
        return rows

    def search_titles(
        self, words: Sequence[str], name: str = "pagerank", limit: int = 50, offset: int = 0
    ) -> list[dict]:
        """Pages whose title has every word, best PageRank first over every match (the paper's section 5.1).

        Control characters are read as spaces (:func:`search_words`).  Each
        word is quoted as an FTS5 string, so quotes, ``*``, ``-``, ``:``,
        parentheses, ``NEAR`` and ``OR`` are searched as plain words and never
        read as query syntax (a word of punctuation alone matches nothing).
        Only pages the ranking ranks are found.

        The FTS5 index returns matches in page id order, not by PageRank, so
        the answer needs either every match or the ranking's best pages
        checked in order.  Up to :data:`SEARCH_FIRST` matches are read first:
        when that is all of them, the best are picked from them.  A word that
        matches more is common, so its best matches are near the top of the
        ranking: the best pages are checked in order (:meth:`_walk_best`) while
        that costs less than reading every match, which is the way otherwise.
        Either way the answer is exact; no index has to follow each ranking.
        """
        query = " ".join('"' + word.replace('"', '""') + '"' for word in search_words(words))
        if not query or limit <= 0:
            return []
        need = offset + limit
        with self.snapshot():
            arrays = self.store.rankings.ranking_arrays(self.store.rankings.page_head(name)[0])
            started = time.perf_counter()
            ids = self._title_matches(query, SEARCH_FIRST)
            if len(ids) == SEARCH_FIRST:
                # reading every match costs what reading these did, times the share of ids they covered
                every = (time.perf_counter() - started) * max(arrays.pages, int(ids[-1])) / int(ids[-1])
                walked = self._walk_best(arrays, query, need, len(ids) / int(ids[-1]), every)
                if walked is not None:
                    return self.store.queries.page_rows(arrays, walked[offset:need].tolist())
                ids = self._title_matches(query, None)
            ids = ids[ids <= arrays.pages] - 1
            chosen = ids[arrays.best_of(ids, min(need, len(ids)))][offset:].tolist()
            return self.store.queries.page_rows(arrays, chosen)

    def title_match_count(self, words: Sequence[str]) -> int:
        """How many titles hold every one of ``words`` (each matched as a phrase of its own)."""
        query = " ".join('"' + word.replace('"', '""') + '"' for word in search_words(words))
        return self.db.execute("SELECT count(*) FROM titles WHERE titles MATCH ?", (query,)).fetchone()[0]

    def _title_matches(self, query: str, limit: int | None) -> np.ndarray:
        """The ids of the pages whose title matches ``query``, in id order, at most ``limit`` (None: all).

        SQLite joins them into one text, read by numpy: a row each through
        Python would cost several times as much for a common word."""
        (joined,) = self.db.execute(
            "SELECT group_concat(rowid) FROM (SELECT rowid FROM titles WHERE titles MATCH ? LIMIT ?)",
            (query, -1 if limit is None else limit),
        ).fetchone()
        return np.fromstring(joined, dtype=np.int64, sep=",") if joined else np.empty(0, dtype=np.int64)

    def _walk_best(
        self, arrays: RankingArrays, query: str, need: int, density: float, every: float
    ) -> np.ndarray | None:
        """The ``need`` best matching page indices, best first, found by checking the best pages in order;
        None when that would cost more than reading every match.

        ``density`` is the share of pages that match and ``every`` the
        seconds that reading every match would take, both estimated from the
        first matches by id; the walk stops at the pages it could check in
        that time (:data:`_CHECK_SECONDS` a page).  Only the speed depends on
        these estimates, never the answer."""
        budget = int(every / _CHECK_SECONDS)
        chunk = int(need / density * 1.25) + 32
        if chunk > budget:
            return None
        found: list[np.ndarray] = []
        count = start = 0
        while start < arrays.pages:
            if start + chunk > budget:
                return None
            pages = arrays.best[start : start + chunk].astype(np.int64)
            matched = np.fromiter(
                (
                    row[0]
                    for row in self.db.execute(
                        "SELECT rowid FROM titles WHERE titles MATCH ? AND rowid IN (SELECT value FROM json_each(?))",
                        (query, json.dumps((pages + 1).tolist())),
                    )
                ),
                dtype=np.int64,
            )
            hits = pages[np.isin(pages + 1, matched)]
            found.append(hits)
            count += len(hits)
            if count >= need:
                break
            start += chunk
            chunk *= 2
        return np.concatenate(found) if found else np.empty(0, dtype=np.int64)
