"""Pages and their out-links: what a build writes.

Page ids come from :meth:`Pages.page_ids`, the one place that adds
pages: every URL is already canonical.  A page's out-links are a set, stored
packed in ``out_links`` (see :mod:`.schema`); the first time a build writes a
page, its old out-links go (a recrawl replaces them), and a page written again
in the same build gains the new links (an edge list naming a source twice).

Captures are ordered by their time (WARC-Date, ``fetched_at``), not by the order
they are loaded in: a capture older than the one stored never replaces it (its
links that the newer capture lacks are kept as lost links, those only the newer
one has are born in the newer one's build), and within one build the newest
capture of a page is the one kept.  A capture that found the page gone (404,
410) takes its links away like any recrawl: they are lost as of that build.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import numpy as np
import xxhash

from ..urls import host_of
from .base import Part
from .schema import ANCHORS_BY_TARGET, PART_LINKS

if TYPE_CHECKING:
    from . import Store

__all__ = ["PageBatch", "PageData", "Pages", "capture_time", "url_key", "url_keys"]

_IN_CHUNK = 500
_URL_CACHE_LIMIT = 2_000_000


@dataclass(slots=True)
class PageData:
    """A crawled page ready to store: canonical URLs only."""

    url: str
    status: int = 200
    title: str | None = None
    canonical_url: str | None = None
    fetched_at: str | None = None  # the capture's time (WARC-Date), None where the source does not say
    # (target url, nofollow, weight, anchor text)
    links: list[tuple[str, bool, float, str | None]] = field(default_factory=list)
    gone: bool = False  # the crawl found the page no more (404, 410): it has no links, its status says why


def capture_time(text: str | None) -> datetime | None:
    """A capture's time from its WARC-Date (ISO 8601, UTC, to the second or finer), to compare captures
    whatever their precision; None when there is none or it cannot be read (such a capture is not ordered)."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _newer(given: str | None, held: str | None) -> int:
    """1 if capture time ``given`` is newer than ``held``, -1 if older, 0 if the same or either is unknown."""
    a, b = capture_time(given), capture_time(held)
    if a is None or b is None or a == b:
        return 0
    return 1 if a > b else -1


class _Write(enum.Enum):
    """What a page's record does to what the store holds of the page."""

    REPLACE = "replace"  # the first capture of the page in this build: its links replace the page's old ones
    EXTEND = "extend"  # the page again in this build, no older or newer (an edge list naming a source twice)
    SUPERSEDE = "supersede"  # a newer capture than the one this build wrote already: it takes that one's place


def url_key(url: str) -> int:
    """A 63-bit key for a canonical URL (XXH3): an integer B-tree is smaller and faster than one on text.

    Collisions: about n^2 / 2^64 expected, 5e-8 for a million URLs; a page whose
    key is taken cannot be looked up by key (the proxy shows it unranked).
    """
    return xxhash.xxh3_64_intdigest(url.encode("utf-8")) >> 1


def url_keys(urls: Sequence[str]) -> np.ndarray:
    digest = xxhash.xxh3_64_intdigest
    return np.fromiter((digest(url.encode("utf-8")) >> 1 for url in urls), dtype=np.int64, count=len(urls))


def pack_targets(targets: np.ndarray) -> list[bytes]:
    """One page's target page ids as ``out_links`` parts."""
    data = np.asarray(targets, dtype=">i4").tobytes()
    step = 4 * PART_LINKS
    return [data[start : start + step] for start in range(0, len(data), step)] or []


def unpack_targets(parts: Sequence[bytes]) -> np.ndarray:
    return np.frombuffer(b"".join(parts), dtype=">i4").astype(np.int64)


@dataclass(frozen=True)
class PageBatch:
    """Pages as columns, in id order: what ``rankstore export --what pages`` writes."""

    ids: tuple[int, ...]
    urls: tuple[str, ...]
    hosts: tuple[str, ...]
    titles: tuple[str | None, ...]
    crawled: tuple[int, ...]
    status: tuple[int | None, ...]
    first_build: tuple[int | None, ...]
    last_build: tuple[int | None, ...]


class Pages(Part):
    """Builds: pages, out-links and their notes; part of :class:`~rankstore.store.Store`."""

    def __init__(self, store: Store):
        super().__init__(store)
        self._reset_page_cache()

    def _reset_page_cache(self) -> None:
        self._url_ids: dict[str, int] = {}
        self._written: set[int] = set()
        self._gone: set[int] = set()  # of the pages written, those the build found gone
        self._older = 0  # captures older than the one the store held of their page (history only)
        self._known: tuple[np.ndarray, np.ndarray] | None = None  # (URL keys, sorted; their page ids)
        self._had_links = True  # whether a page written may have out-links from before this build
        self._had_crawls = True  # whether a page written may have been crawled before this build
        self._first_build = False  # a build into an empty store: URL indexes built once, at its end

    def _note_build_start(self) -> None:
        """Called as a build begins: what the store holds decides how pages are indexed while it runs."""
        self._had_links = self.db.execute("SELECT 1 FROM out_links LIMIT 1").fetchone() is not None
        self._had_crawls = self._had_links or (
            self.db.execute("SELECT 1 FROM pages WHERE build_id IS NOT NULL LIMIT 1").fetchone() is not None
        )
        self._first_build = self.db.execute("SELECT 1 FROM pages LIMIT 1").fetchone() is None
        if self._first_build:
            self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('pages_keyed', '0')")
            # 1.3 µs a page instead of several: index entries in random order are what a large first
            # load spends its time on; sorted once at the end, they cost little
            self.db.execute("DROP INDEX IF EXISTS pages_by_url")
            self.db.execute("DROP INDEX IF EXISTS pages_by_host")
            # so are the anchored notes' entries by target: an interrupted first build gets the index back
            # at the next writing open, which makes the schema's indexes that are missing
            self.db.execute("DROP INDEX IF EXISTS link_notes_by_dst")

    def start_build(self) -> None:
        """A build begins: the caches of the last one dropped, and how pages are indexed while it runs chosen."""
        self._reset_page_cache()
        self._note_build_start()

    def continue_build(self, build_id: int) -> int:
        """A build cut short goes on: the pages it wrote counted as this run's; returns the links it had written."""
        self.start_build()
        self._written.update(row[0] for row in self.db.execute("SELECT id FROM pages WHERE build_id = ?", (build_id,)))
        self._gone.update(
            row[0]
            for row in self.db.execute(
                "SELECT id FROM pages WHERE build_id = ? AND NOT crawled AND status IN (404, 410)", (build_id,)
            )
        )
        return self.db.execute(
            "SELECT coalesce(sum(length(targets)), 0) / 4 FROM out_links WHERE src IN"
            " (SELECT id FROM pages WHERE build_id = ?)",
            (build_id,),
        ).fetchone()[0]

    def _index_pages(self) -> None:
        """After a first build: the URL and host indexes, the URL keys and the anchors index, in sorted order."""
        if not self._first_build:
            return
        self._write_keys(*self._known_page_keys())
        self.db.execute("CREATE UNIQUE INDEX IF NOT EXISTS pages_by_url ON pages (url)")
        self.db.execute("CREATE INDEX IF NOT EXISTS pages_by_host ON pages (host)")
        self.db.execute(ANCHORS_BY_TARGET)
        self._first_build = False

    def _write_keys(self, keys: np.ndarray, ids: np.ndarray) -> None:
        """``page_keys`` from keys sorted (with their page ids): appended in order, the first of a collision kept."""
        first = np.concatenate([[True], keys[1:] != keys[:-1]]) if len(keys) else np.zeros(0, dtype=bool)
        self.db.execute("DELETE FROM page_keys")
        self.db.executemany(
            "INSERT INTO page_keys (url_hash, page_id) VALUES (?, ?)", zip(keys[first].tolist(), ids[first].tolist())
        )
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('pages_keyed', '1')")

    def key_pages(self) -> None:
        """Every page's URL key written again (after a first build was interrupted, or a migration)."""
        count = self.db.execute("SELECT count(*) FROM pages").fetchone()[0]
        rows = self.db.execute("SELECT id, url FROM pages ORDER BY id")
        ids = np.empty(count, dtype=np.int64)
        keys = np.empty(count, dtype=np.int64)
        done = 0
        while chunk := rows.fetchmany(1 << 18):
            ids[done : done + len(chunk)] = [row[0] for row in chunk]
            keys[done : done + len(chunk)] = url_keys([row[1] for row in chunk])
            done += len(chunk)
        order = np.argsort(keys, kind="stable")
        self._write_keys(keys[order], ids[order])

    def page_ids(self, urls: Sequence[str], add: bool = True) -> np.ndarray:
        """Page ids of canonical URLs (repeats allowed), adding the pages not yet in the store (or, unless
        ``add``, 0 for each of them).

        Call inside a write transaction.  New pages take the next ids in
        order.  Which URLs are new is told by their keys: every page's key and
        id are held sorted in memory during a build, so finding a page costs
        a search in an array and a look-up of its URL by id (against a key
        collision), and a build that only adds pages never searches the URL
        index.
        """
        cache = self._url_ids
        if len(cache) > _URL_CACHE_LIMIT:
            cache.clear()  # bounded memory on crawls of any size; the store has the rest
        unique = [url for url in dict.fromkeys(urls) if url not in cache]
        if unique:
            keys = url_keys(unique)
            by_key = np.argsort(keys, kind="stable")  # searches in key order run through memory once
            known_keys, known_ids = self._known_page_keys()
            is_new = np.ones(len(unique), dtype=bool)
            if len(known_keys):
                at = np.empty(len(keys), dtype=np.int64)
                at[by_key] = np.minimum(np.searchsorted(known_keys, keys[by_key]), len(known_keys) - 1)
                hit = np.flatnonzero(known_keys[at] == keys)
                if len(hit):
                    found = self._check_hits([unique[i] for i in hit.tolist()], known_ids[at[hit]].tolist())
                    cache.update(found)
                    is_new[hit] = [unique[i] not in found for i in hit.tolist()]
            fresh = np.flatnonzero(is_new)
            if len(fresh) and add:
                new = [unique[i] for i in fresh.tolist()]
                first = (self.db.execute("SELECT max(id) FROM pages").fetchone()[0] or 0) + 1
                new_ids = np.arange(first, first + len(new), dtype=np.int64)
                self.db.executemany(
                    "INSERT INTO pages (id, url, host) VALUES (?, ?, ?)", zip(new_ids.tolist(), new, map(host_of, new))
                )
                if not self._first_build:
                    self.db.executemany(
                        "INSERT OR IGNORE INTO page_keys (url_hash, page_id) VALUES (?, ?)",
                        zip(keys[fresh].tolist(), new_ids.tolist()),
                    )
                cache.update(zip(new, new_ids.tolist()))
                id_of = np.zeros(len(unique), dtype=np.int64)
                id_of[fresh] = new_ids
                in_order = by_key[is_new[by_key]]  # the new pages, by key
                at = np.searchsorted(known_keys, keys[in_order], side="right")
                self._known = (np.insert(known_keys, at, keys[in_order]), np.insert(known_ids, at, id_of[in_order]))
        return np.fromiter((cache.get(url, 0) for url in urls), dtype=np.int64, count=len(urls))

    def _check_hits(self, urls: list[str], candidates: list[int]) -> dict[str, int]:
        """{url: page id} for the URLs whose key matched a page's: that page's URL, or (a collision) its own."""
        stored = self.urls_of(candidates)
        found = {url: page_id for url, page_id in zip(urls, candidates) if stored.get(page_id) == url}
        collided = [url for url in urls if url not in found]
        if collided and not self._first_build:  # a first build has no URL index: its collisions are new pages
            found.update(self._ids_by_url(collided))
        return found

    def written_pages(self) -> set[int]:
        """Ids of the pages the current build has written (those it found gone among them)."""
        return self._written

    def older_captures(self) -> int:
        """How many captures the current build found older than the one the store holds (or the build had
        already written) of their page: kept as history, or passed over."""
        return self._older

    def gone_pages(self) -> set[int]:
        """Ids of the pages the current build found gone (404, 410): written, with no links."""
        return self._gone

    def _known_page_keys(self) -> tuple[np.ndarray, np.ndarray]:
        if self._known is None:
            count = self.db.execute("SELECT count(*) FROM page_keys").fetchone()[0]
            flat = np.fromiter(
                (value for row in self.db.execute("SELECT url_hash, page_id FROM page_keys") for value in row),
                dtype=np.int64,
                count=2 * count,
            )
            self._known = (flat[0::2].copy(), flat[1::2].copy())  # the table's order: by key already
        return self._known

    def _ids_by_url(self, urls: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for start in range(0, len(urls), _IN_CHUNK):
            chunk = urls[start : start + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            found.update(self.db.execute(f"SELECT url, id FROM pages WHERE url IN ({marks})", chunk))
        return found

    def write_pages(self, pages: Sequence[PageData], build_id: int) -> int:
        """Store a batch of crawled pages in one transaction; returns links written."""
        if not pages:
            return 0
        try:
            with self.transaction():
                return self._write_pages(pages, build_id)
        except BaseException:
            self._reset_page_cache()  # ids added by the rolled-back transaction are gone
            raise

    def _write_pages(self, pages: Sequence[PageData], build_id: int) -> int:
        live = [page for page in pages if not page.gone]
        ids = self.page_ids([page.url for page in live] + [link[0] for page in live for link in page.links])
        # a gone page that nothing links to is not added: it would be a page of the graph for nothing
        gone_ids = iter(self.page_ids([page.url for page in pages if page.gone], add=False).tolist())
        live_ids = iter(ids[: len(live)].tolist())
        page_ids = [next(gone_ids) if page.gone else next(live_ids) for page in pages]
        targets = iter(ids[len(live) :].tolist())
        found: list[dict[int, tuple[bool, float, str | None]]] = []
        for page in pages:
            links: dict[int, tuple[bool, float, str | None]] = {}
            for (_, nofollow, weight, anchor), target in zip(page.links, targets):
                seen = links.get(target)
                if seen is not None:  # the same target twice: it follows if any does, its largest weight
                    nofollow, weight, anchor = seen[0] and nofollow, max(seen[1], weight), seen[2] or anchor
                links[target] = (nofollow, weight, anchor or None)
            found.append(links)
        held = self._captures([i for i in page_ids if i and (self._had_crawls or i in self._written)])
        chosen: dict[int, tuple[PageData, dict[int, tuple[bool, float, str | None]]]] = {}
        how: dict[int, _Write] = {}
        for page, page_id, links in zip(pages, page_ids, found):
            if not page_id:
                continue
            if page_id in chosen:  # again in this batch: against the capture the batch holds for it
                order = _newer(page.fetched_at, chosen[page_id][0].fetched_at)
                if order < 0:
                    self._older += 1
                    continue  # an older capture than one this build has: passed over
                if order == 0 and not (page.gone or chosen[page_id][0].gone):
                    links = _merged(chosen[page_id][1], links)
                chosen[page_id] = (page, links)
                continue
            last_build, fetched_at = held.get(page_id, (None, None))
            order = _newer(page.fetched_at, fetched_at) if last_build is not None else 1
            if page_id in self._written:
                if order < 0:
                    self._older += 1
                    continue
                how[page_id] = _Write.SUPERSEDE if order > 0 or page.gone else _Write.EXTEND
            elif order < 0:  # older than the capture an earlier build stored: history, not the page's links
                assert last_build is not None
                self._record_backfill(page_id, links.keys(), last_build, build_id)
                self._older += 1
                continue
            else:
                how[page_id] = _Write.REPLACE
            chosen[page_id] = (page, links)
        for page_id in [i for i, way in how.items() if way is _Write.SUPERSEDE]:
            self._record_superseded(page_id, chosen[page_id][1].keys(), build_id)
            self._written.discard(page_id)  # written again whole, as a first write is
        if self._had_crawls:
            self._record_history(
                {i: links.keys() for i, (_, links) in chosen.items() if how[i] is _Write.REPLACE}, build_id
            )
        self.db.executemany(
            "UPDATE pages SET title = ?, crawled = ?, status = ?, canonical_url = ?, fetched_at = ?, build_id = ?,"
            " first_build = CASE WHEN ? THEN first_build ELSE coalesce(first_build, ?) END WHERE id = ?",
            [
                (
                    page.title,
                    int(not page.gone),
                    page.status,
                    page.canonical_url,
                    page.fetched_at,
                    build_id,
                    page.gone,  # a page found gone was not crawled: its first crawl is still to come
                    build_id,
                    page_id,
                )
                for page_id, (page, _) in chosen.items()
            ],
        )
        for page_id, (page, _) in chosen.items():
            if page.gone:
                self._gone.add(page_id)
            else:
                self._gone.discard(page_id)
        return self._write_out_links({page_id: links for page_id, (_, links) in chosen.items()})

    def _captures(self, ids: Sequence[int]) -> dict[int, tuple[int | None, str | None]]:
        """{page id: (the build that last crawled it, its capture's time)} of these pages."""
        return {page_id: (build, fetched) for page_id, build, fetched in self.pages_by_id("build_id, fetched_at", ids)}

    def _write_out_links(self, out: dict[int, dict[int, tuple[bool, float, str | None]]]) -> int:
        """Replace (first write in this build) or extend each source page's out-links and notes.

        Returns the number of links written that the build had not written before.
        """
        again = [src for src in out if src in self._written]
        fresh = [(src,) for src in out if src not in self._written]
        known = 0
        self.db.executemany("DELETE FROM out_links WHERE src = ?", fresh)
        self.db.executemany("DELETE FROM link_notes WHERE src = ?", fresh)
        for src in again:
            old_targets = unpack_targets(
                [row[0] for row in self.db.execute("SELECT targets FROM out_links WHERE src = ? ORDER BY part", (src,))]
            )
            notes = {
                dst: (bool(nf), w, a)
                for dst, nf, w, a in self.db.execute(
                    "SELECT dst, nofollow, weight, anchor FROM link_notes WHERE src = ?", (src,)
                )
            }
            merged = {dst: notes.get(dst, (False, 1.0, None)) for dst in old_targets.tolist()}
            known += len(merged)
            for dst, (nofollow, weight, anchor) in out[src].items():
                seen = merged.get(dst)
                if seen is not None:
                    nofollow, weight, anchor = seen[0] and nofollow, max(seen[1], weight), seen[2] or anchor
                merged[dst] = (nofollow, weight, anchor)
            out[src] = merged
            self.db.execute("DELETE FROM out_links WHERE src = ?", (src,))
            self.db.execute("DELETE FROM link_notes WHERE src = ?", (src,))
        self._written.update(out)
        part_rows: list[tuple[int, int, bytes]] = []
        note_rows: list[tuple[int, int, int, float, str | None]] = []
        count = 0
        for src, links in out.items():
            targets = sorted(links)
            count += len(targets)
            part_rows.extend((src, part, data) for part, data in enumerate(pack_targets(np.array(targets))))
            note_rows.extend(
                (src, dst, int(nofollow), weight, anchor)
                for dst, (nofollow, weight, anchor) in links.items()
                if nofollow or weight != 1.0 or anchor
            )
        self.db.executemany("INSERT INTO out_links (src, part, targets) VALUES (?, ?, ?)", part_rows)
        self.db.executemany(
            "INSERT INTO link_notes (src, dst, nofollow, weight, anchor) VALUES (?, ?, ?, ?, ?)", note_rows
        )
        return count - known

    def write_edges(
        self, src: np.ndarray, dst: np.ndarray, weights: np.ndarray | None, build_id: int
    ) -> tuple[np.ndarray, int]:
        """Store links given as page ids (a graph source's batch) in one transaction.

        Returns (the source pages' ids, links written).  The source pages are
        crawled by this build: the caller marks them with :meth:`mark_crawled`
        once it has read the whole graph, in one pass (marked batch by batch,
        a graph's sources, scattered over the pages table, rewrite most of it
        each time).
        """
        try:
            with self.transaction():
                return self._write_edges(src, dst, weights, build_id)
        except BaseException:
            self._reset_page_cache()
            raise

    def _write_edges(self, src, dst, weights, build_id) -> tuple[np.ndarray, int]:
        if weights is None:
            key = np.sort(src.astype(np.int64) << 32 | dst.astype(np.int64))
            if len(key):  # a set: repeats dropped by sort and compare (numpy 2's np.unique hashes, slower)
                key = key[np.concatenate([[True], key[1:] != key[:-1]])]
            w = None
        else:
            order = np.lexsort((-weights, dst, src))  # the largest weight of a repeated link first
            key = (src.astype(np.int64) << 32 | dst.astype(np.int64))[order]
            first = np.concatenate([[True], key[1:] != key[:-1]]) if len(key) else np.zeros(0, bool)
            key, w = key[first], weights[order][first]
        sources = key >> 32
        targets = (key & 0xFFFFFFFF).astype(">i4")
        cuts = np.flatnonzero(sources[1:] != sources[:-1]) + 1
        starts = np.concatenate([[0], cuts]).tolist() if len(key) else []
        ends = np.concatenate([cuts, [len(key)]]).tolist() if len(key) else []
        heads = sources[starts].tolist() if len(key) else []
        again = [i for i, head in enumerate(heads) if head in self._written]
        links = 0
        if w is None and again:
            # sources already written in this build (a graph whose sources recur): their links joined in bulk,
            # but for those with notes to merge link by link
            noted = self._noted([heads[i] for i in again])
            plain = np.array([heads[i] for i in again if heads[i] not in noted], dtype=np.int64)
            if len(plain):
                links += self._extend_plain(plain, key[np.isin(sources, plain)])
            again_noted = [i for i in again if heads[i] in noted]
        else:
            again_noted = again
        if w is not None or again_noted:
            # weights to note, or sources already written in this build with notes: merged page by page
            slow = range(len(heads)) if w is not None else again_noted
            out: dict[int, dict[int, tuple[bool, float, str | None]]] = {}
            for i in slow:
                start, end = starts[i], ends[i]
                ws = w[start:end].tolist() if w is not None else [1.0] * (end - start)
                out[heads[i]] = {t: (False, x, None) for t, x in zip(targets[start:end].tolist(), ws)}
            links += self._write_out_links(out)
        if w is None:
            skip = set(again)
            data = targets.tobytes()
            step = 4 * PART_LINKS
            rows, fresh = [], []
            for i, (head, start, end) in enumerate(zip(heads, starts, ends)):
                if i in skip:
                    continue
                fresh.append((head,))
                for part, offset in enumerate(range(4 * start, 4 * end, step)):
                    rows.append((head, part, data[offset : min(offset + step, 4 * end)]))
                links += end - start
            if self._had_links:  # a recrawl: the pages' old links go, remembered as lost if they are not here now
                self._record_history(
                    {
                        head: targets[start:end].tolist()
                        for i, (head, start, end) in enumerate(zip(heads, starts, ends))
                        if i not in skip
                    },
                    build_id,
                )
                self.db.executemany("DELETE FROM out_links WHERE src = ?", fresh)
                self.db.executemany("DELETE FROM link_notes WHERE src = ?", fresh)
            self.db.executemany("INSERT INTO out_links (src, part, targets) VALUES (?, ?, ?)", rows)
            self._written.update(head for (head,) in fresh)
        return np.asarray(heads, dtype=np.int64), links

    def _noted(self, ids: Sequence[int]) -> set[int]:
        """Those of these pages that have link notes."""
        found: set[int] = set()
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT DISTINCT src FROM link_notes WHERE src IN ({marks})"
            found.update(row[0] for row in self.db.execute(query, chunk))
        return found

    def _extend_plain(self, ids: np.ndarray, key: np.ndarray) -> int:
        """Pages this build wrote already, none with link notes, gain the links of ``key`` (sorted
        ``source << 32 | target`` of these pages): each page's out-links become the union, written once.
        Returns the links that are new to the build."""
        heads = ids.tolist()
        held_src: list[int] = []
        held_len: list[int] = []
        blobs: list[bytes] = []
        for start in range(0, len(heads), _IN_CHUNK):
            chunk = heads[start : start + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            for src, data in self.db.execute(
                f"SELECT src, targets FROM out_links WHERE src IN ({marks}) ORDER BY src, part", chunk
            ):
                held_src.append(src)
                held_len.append(len(data) // 4)
                blobs.append(data)
        held = np.repeat(np.array(held_src, dtype=np.int64), held_len) << 32 | np.frombuffer(
            b"".join(blobs), dtype=">i4"
        ).astype(np.int64)
        merged = np.sort(np.concatenate([held, key]))
        if len(merged):
            merged = merged[np.concatenate([[True], merged[1:] != merged[:-1]])]
        self.db.executemany("DELETE FROM out_links WHERE src = ?", ((head,) for head in heads))
        sources = merged >> 32
        data = (merged & 0xFFFFFFFF).astype(">i4").tobytes()
        cuts = np.flatnonzero(sources[1:] != sources[:-1]) + 1
        starts = np.concatenate([[0], cuts]).tolist()
        ends = np.concatenate([cuts, [len(merged)]]).tolist()
        step = 4 * PART_LINKS
        self.db.executemany(
            "INSERT INTO out_links (src, part, targets) VALUES (?, ?, ?)",
            (
                (head, part, data[offset : min(offset + step, 4 * end)])
                for head, start, end in zip(sources[starts].tolist(), starts, ends)
                for part, offset in enumerate(range(4 * start, 4 * end, step))
            ),
        )
        return len(merged) - len(held)

    def _record_history(self, new: dict[int, Iterable[int]], build_id: int) -> None:
        """Before pages crawled again replace their out-links: the links they gained are born in this build,
        the links they lost are kept in ``lost_links`` (call inside the write transaction, before the old
        links are deleted and before the pages' ``build_id`` is moved on)."""
        for src, targets in new.items():
            # a page crawled before, even one found gone then, has a build: what it links to now that it did not
            # then is new
            row = self.db.execute("SELECT build_id, first_build FROM pages WHERE id = ?", (src,)).fetchone()
            if row is None or row[0] is None or row[0] == build_id:
                continue  # never crawled before (its links are as old as its first crawl), or already this build
            last_build, first_crawl = row
            old = set(
                unpack_targets(
                    [
                        part
                        for (part,) in self.db.execute(
                            "SELECT targets FROM out_links WHERE src = ? ORDER BY part", (src,)
                        )
                    ]
                ).tolist()
            )
            now = set(targets)
            gained, lost = now - old, old - now
            if gained:
                self.db.executemany(
                    "INSERT OR REPLACE INTO link_births (src, dst, build) VALUES (?, ?, ?)",
                    ((src, dst, build_id) for dst in gained),
                )
            if lost:
                born = dict(self.db.execute("SELECT dst, build FROM link_births WHERE src = ?", (src,)))
                self.db.executemany(
                    "INSERT OR REPLACE INTO lost_links (dst, src, lost_build, first_build, last_build)"
                    " VALUES (?, ?, ?, ?, ?)",
                    ((dst, src, build_id, born.get(dst, first_crawl), last_build) for dst in lost),
                )
                self.db.executemany("DELETE FROM link_births WHERE src = ? AND dst = ?", ((src, dst) for dst in lost))

    def _record_backfill(self, src: int, old: Iterable[int], newer_build: int, build_id: int) -> None:
        """A capture of page ``src`` older than the one build ``newer_build`` stored: history only.  Its links
        that the newer capture lacks were lost by then (first and last seen by this build, which loaded the
        older capture; lost as of the newer capture, the store keeping no captures between); the links of the
        newer capture that the older one lacks and no earlier build saw are born in ``newer_build``: new.
        Call inside the write transaction."""
        now = set(self.out_link_ids(src).tolist())
        before = set(old)
        self.db.executemany(
            "INSERT OR IGNORE INTO lost_links (dst, src, lost_build, first_build, last_build) VALUES (?, ?, ?, ?, ?)",
            ((dst, src, newer_build, build_id, build_id) for dst in sorted(before - now)),
        )
        first = self.db.execute("SELECT first_build FROM pages WHERE id = ?", (src,)).fetchone()[0]
        born = dict(self.db.execute("SELECT dst, build FROM link_births WHERE src = ?", (src,)))
        self.db.executemany(
            "INSERT OR IGNORE INTO link_births (src, dst, build) VALUES (?, ?, ?)",
            ((src, dst, newer_build) for dst in sorted(now - before) if born.get(dst, first) == newer_build),
        )

    def _record_superseded(self, src: int, links: Iterable[int], build_id: int) -> None:
        """Before a newer capture of page ``src`` replaces the one this build wrote already: the history that
        one recorded, made right for the newer one.  A link only the replaced capture had was never the page's
        (unless the page had it before this build: then it is lost now); a link only the newer one has is born
        now (or, lost by the replaced capture, is back as it was).  Call inside the write transaction."""
        written = set(self.out_link_ids(src).tolist())
        now = set(links)
        first = self.db.execute("SELECT first_build FROM pages WHERE id = ?", (src,)).fetchone()[0]
        recrawl = first is not None and first < build_id  # the page was crawled before this build
        for dst in sorted(now - written):
            lost = self.db.execute(
                "SELECT first_build FROM lost_links WHERE dst = ? AND src = ? AND lost_build = ?", (dst, src, build_id)
            ).fetchone()
            if lost is not None:  # the replaced capture lost it: the page has kept it
                self.db.execute(
                    "DELETE FROM lost_links WHERE dst = ? AND src = ? AND lost_build = ?", (dst, src, build_id)
                )
                if lost[0] is not None and lost[0] != first:
                    self.db.execute("INSERT OR REPLACE INTO link_births VALUES (?, ?, ?)", (src, dst, lost[0]))
            elif recrawl:
                self.db.execute("INSERT OR IGNORE INTO link_births VALUES (?, ?, ?)", (src, dst, build_id))
        if not recrawl:
            return  # a page first crawled by this build: the replaced capture leaves no history
        for dst in sorted(written - now):
            born = self.db.execute("SELECT build FROM link_births WHERE src = ? AND dst = ?", (src, dst)).fetchone()
            self.db.execute("DELETE FROM link_births WHERE src = ? AND dst = ?", (src, dst))
            if born is None or born[0] != build_id:  # the page had it before this build
                self.db.execute(
                    "INSERT OR IGNORE INTO lost_links (dst, src, lost_build, first_build, last_build)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (dst, src, build_id, born[0] if born is not None else first, build_id),
                )

    def mark_crawled(self, ids: np.ndarray, build_id: int) -> None:
        """Mark pages crawled by a build, in one transaction, by runs of consecutive ids.

        A graph's sources mostly are consecutive: a few statements mark them all.
        """
        ids = np.unique(ids)
        if not len(ids):
            return
        breaks = np.flatnonzero(np.diff(ids) != 1) + 1
        lows = ids[np.concatenate([[0], breaks])].tolist()
        highs = ids[np.concatenate([breaks - 1, [len(ids) - 1]])].tolist()
        with self.transaction():
            self.db.executemany(
                # a page found gone once that a graph now gives links is there again
                "UPDATE pages SET crawled = 1, status = coalesce(nullif(nullif(status, 404), 410), 200), build_id = ?,"
                " first_build = coalesce(first_build, ?) WHERE id BETWEEN ? AND ?",
                ((build_id, build_id, low, high) for low, high in zip(lows, highs)),
            )

    # ------------------------------------------------------------ reading

    def page_id(self, url: str) -> int | None:
        row = self.db.execute("SELECT id FROM pages WHERE url = ?", (url,)).fetchone()
        return row[0] if row else None

    def last_page_id(self) -> int:
        """The largest page id, which is the store's page count (ids are dense from 1): a ranking version of
        fewer pages predates the pages past its count."""
        return self.db.execute("SELECT max(id) FROM pages").fetchone()[0] or 0

    def page_ids_for(self, urls: Sequence[str]) -> dict[str, int]:
        """{url: page id} for the URLs in the store."""
        return self._ids_by_url(list(dict.fromkeys(urls)))

    def root_page_ids(self) -> list[int]:
        """The root page (``scheme://host/``) of every server in the store."""
        return [
            row[0]
            for row in self.db.execute("SELECT id FROM pages WHERE substr(url, instr(url, '//') + 2) = host || '/'")
        ]

    def out_link_ids(self, page_id: int) -> np.ndarray:
        return unpack_targets(
            [row[0] for row in self.db.execute("SELECT targets FROM out_links WHERE src = ? ORDER BY part", (page_id,))]
        )

    def out_links(self, url: str) -> list[str]:
        page_id = self.page_id(url)
        if page_id is None:
            return []
        return sorted(self.urls_of(self.out_link_ids(page_id).tolist()).values())

    def last_keyed_page(self) -> int:
        """The largest page id with a URL key (reads the key table's index, as a long-running reader has it)."""
        return self.db.execute("SELECT max(page_id) FROM page_keys").fetchone()[0] or 0

    def retitle(self, titles: Iterable[tuple[str, int]]) -> None:
        """Give pages new titles, ``(title, page id)`` pairs, and index them for title search again."""
        with self.transaction():
            self.db.executemany("UPDATE pages SET title = ? WHERE id = ?", titles)
            self.db.execute("INSERT INTO titles (titles) VALUES ('rebuild')")

    def link_urls(self) -> Iterator[tuple[str, str]]:
        """Every link as (source URL, target URL), by source and target id."""
        yield from self.db.execute(
            "SELECT s.url, t.url FROM links l JOIN pages s ON s.id = l.src"
            " JOIN pages t ON t.id = l.dst ORDER BY l.src, l.dst"
        )

    def page_urls(self, last: int) -> list[tuple[int, str]]:
        """(id, url) of every page up to id ``last``, in one pass."""
        return self.db.execute("SELECT id, url FROM pages WHERE id <= ?", (last,)).fetchall()

    def page_batches(self, size: int = 1 << 16) -> Iterator[PageBatch]:
        """Every page in id order, ``size`` at a time, as columns (``rankstore export --what pages``)."""
        cursor = self.db.execute(
            "SELECT id, url, host, title, crawled, status, first_build, build_id FROM pages ORDER BY id"
        )
        while rows := cursor.fetchmany(size):
            yield PageBatch(*zip(*rows))

    def pages_by_id(self, columns: str, ids: Sequence[int]) -> Iterator[tuple]:
        """Rows ``(id, <columns>)`` of the pages with these ids, a query per 500."""
        ids = list(ids)
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            yield from self.db.execute(f"SELECT id, {columns} FROM pages WHERE id IN ({marks})", chunk)

    def urls_of(self, ids: Sequence[int]) -> dict[int, str]:
        return dict(self.pages_by_id("url", ids))

    def dump(self) -> tuple[list[tuple], list[tuple]]:
        """Pages and links by URL, for comparing stores."""
        pages = self.db.execute(
            "SELECT url, host, title, crawled, status, canonical_url FROM pages ORDER BY url"
        ).fetchall()
        links = self.db.execute(
            "SELECT s.url, t.url, l.nofollow, l.weight, l.anchor FROM links l"
            " JOIN pages s ON s.id = l.src JOIN pages t ON t.id = l.dst ORDER BY 1, 2"
        ).fetchall()
        return pages, links


def _merged(
    held: dict[int, tuple[bool, float, str | None]], more: dict[int, tuple[bool, float, str | None]]
) -> dict[int, tuple[bool, float, str | None]]:
    """Two sets of one page's links as one: a link follows if either does, with the larger weight."""
    out = dict(held)
    for dst, (nofollow, weight, anchor) in more.items():
        seen = out.get(dst)
        if seen is not None:
            nofollow, weight, anchor = seen[0] and nofollow, max(seen[1], weight), seen[2] or anchor
        out[dst] = (nofollow, weight, anchor)
    return out


def builds_json(rows) -> list[dict]:
    builds = [
        dict(
            zip(
                ("id", "started_at", "finished_at", "status", "sources", "pages", "links", "skipped", "skip_reasons"),
                row,
            )
        )
        for row in rows
    ]
    for build in builds:
        build["sources"] = json.loads(build["sources"])
        build["skip_reasons"] = json.loads(build["skip_reasons"] or "{}")
    return builds
