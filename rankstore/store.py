"""The SQLite store of pages, links, builds and rankings: the only module that speaks SQL.

Layout (schema version in ``meta``):

* ``pages``: one row per canonical URL, crawled (its content was read) or only
  linked to; ``host`` for per-server views.
* ``links``: a set per source page (primary key ``src, dst``), with the
  nofollow flag, a weight (edge lists) and the first anchor text; indexed by
  target for backlinks.
* ``builds``: each ``rankstore build`` run: times, sources, counts, status
  (``running`` until it completes, so an interrupted run shows as such).
* ``rankings`` / ``scores``: named, versioned PageRank results; each score
  row carries the page's position in its ranking (0 = best), its in-link count
  and a variant's extra value (TrustRank's spam mass).
* ``score_keys``: score, position and in-links by (ranking, 63-bit URL hash),
  for the proxy's batched lookups.
* ``ranked_links``: for the newest version of each ranking, every link keyed by
  (target, position of its source), so the best backlinks of a page are an
  index range scan however many it has.

The store runs in WAL mode: a reader (the proxy) never blocks a writer and
sees each transaction whole or not at all.  A build commits in large batches;
each page's out-links are replaced inside the batch that holds the page, so a
build killed at any point leaves every page with either its old links or its
new ones.
"""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
import xxhash

from .urls import host_of

__all__ = ["Store", "StoreError", "RankingNotFound", "Ranking", "PageData", "SCHEMA_VERSION", "url_key"]

SCHEMA_VERSION = 4
_URL_CACHE_LIMIT = 2_000_000
_IN_CHUNK = 500
_LOOKUP_CHUNK = 2000

_SCORE_KEYS = """CREATE TABLE IF NOT EXISTS score_keys (
    ranking_id INTEGER NOT NULL,
    url_hash   INTEGER NOT NULL,
    score      REAL NOT NULL,
    position   INTEGER NOT NULL,
    inlinks    INTEGER NOT NULL,
    PRIMARY KEY (ranking_id, url_hash)
) WITHOUT ROWID"""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS pages (
    id            INTEGER PRIMARY KEY,
    url           TEXT NOT NULL UNIQUE,
    host          TEXT NOT NULL,
    title         TEXT,
    crawled       INTEGER NOT NULL DEFAULT 0,
    status        INTEGER,
    canonical_url TEXT,
    fetched_at    TEXT,
    build_id      INTEGER
);
CREATE INDEX IF NOT EXISTS pages_by_host ON pages (host);
CREATE TABLE IF NOT EXISTS links (
    src      INTEGER NOT NULL,
    dst      INTEGER NOT NULL,
    nofollow INTEGER NOT NULL DEFAULT 0,
    weight   REAL NOT NULL DEFAULT 1.0,
    anchor   TEXT,
    PRIMARY KEY (src, dst)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS links_by_dst ON links (dst, src);
CREATE VIRTUAL TABLE IF NOT EXISTS titles USING fts5 (
    title, content = 'pages', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TABLE IF NOT EXISTS builds (
    id          INTEGER PRIMARY KEY,
    started_at  TEXT NOT NULL,
    finished_at TEXT,
    status      TEXT NOT NULL,
    sources     TEXT NOT NULL,
    pages       INTEGER NOT NULL DEFAULT 0,
    links       INTEGER NOT NULL DEFAULT 0,
    skipped     INTEGER NOT NULL DEFAULT 0,
    skip_reasons TEXT
);
CREATE TABLE IF NOT EXISTS rankings (
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    version    INTEGER NOT NULL,
    params     TEXT NOT NULL,
    iterations INTEGER NOT NULL,
    residuals  TEXT NOT NULL,
    created_at TEXT NOT NULL,
    pages      INTEGER NOT NULL,
    seconds    REAL,
    UNIQUE (name, version)
);
CREATE TABLE IF NOT EXISTS scores (
    ranking_id INTEGER NOT NULL,
    page_id    INTEGER NOT NULL,
    score      REAL NOT NULL,
    position   INTEGER NOT NULL,
    inlinks    INTEGER NOT NULL,
    extra      REAL,
    PRIMARY KEY (ranking_id, page_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS scores_by_position ON scores (ranking_id, position);
""" + _SCORE_KEYS + """;
CREATE TABLE IF NOT EXISTS ranked_links (
    ranking_id INTEGER NOT NULL,
    dst        INTEGER NOT NULL,
    position   INTEGER NOT NULL,
    src        INTEGER NOT NULL,
    PRIMARY KEY (ranking_id, dst, position)
) WITHOUT ROWID;
"""


class StoreError(Exception):
    """A store that cannot be opened or used."""


@dataclass(slots=True)
class PageData:
    """A crawled page ready to store: canonical URLs only."""

    url: str
    status: int = 200
    title: str | None = None
    canonical_url: str | None = None
    fetched_at: str | None = None
    # (target url, nofollow, weight, anchor text)
    links: list[tuple[str, bool, float, str | None]] = field(default_factory=list)


def url_key(url: str) -> int:
    """A 63-bit key for a canonical URL (XXH3): an integer B-tree is smaller and faster than one on text.

    Collisions: about n^2 / 2^64 expected, 5e-8 for a million URLs.
    """
    return xxhash.xxh3_64_intdigest(url.encode("utf-8")) >> 1


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class RankingNotFound(StoreError):
    """No ranking of that name in the store."""


@dataclass
class Ranking:
    id: int
    name: str
    version: int
    params: dict
    iterations: int
    residuals: list[float]
    created_at: str
    pages: int
    seconds: float | None


_PAGE_COLUMNS = "p.url, p.title, s.score, s.position, s.inlinks, s.extra, p.crawled"


def _page_row(row, total: int) -> dict:
    url, title, score, position, inlinks, extra, crawled = row
    return {"url": url, "title": title, "pagerank": score, "position": position, "inlinks": inlinks,
            "extra": extra, "crawled": bool(crawled), "pages": total}


def _link_row(row, total: int) -> dict:
    """A page row followed by the link's nofollow flag and anchor text."""
    entry = _page_row(row[:7], total)
    entry["nofollow"] = bool(row[7])
    entry["anchor"] = row[8]
    return entry


class RankingsMixin:
    """Reading and writing rankings; part of :class:`Store`."""

    db: sqlite3.Connection

    # --------------------------------------------------------------- graph

    def graph_arrays(self, include_nofollow: bool = False):
        """(page ids, link sources, link targets, link weights) as page indices, all numpy.

        Page index ``i`` is ``page_ids[i]``; links come in storage order.
        """
        page_ids = np.fromiter(itertools.chain.from_iterable(self.db.execute("SELECT id FROM pages ORDER BY id")),
                               dtype=np.int64)
        where = "" if include_nofollow else " WHERE NOT nofollow"
        count = self.db.execute(f"SELECT count(*) FROM links{where}").fetchone()[0]
        flat = np.fromiter(
            itertools.chain.from_iterable(self.db.execute(f"SELECT src, dst, weight FROM links{where}")),
            dtype=np.float64, count=3 * count,
        ).reshape(-1, 3)
        src_ids, dst_ids, weights = flat[:, 0].astype(np.int64), flat[:, 1].astype(np.int64), flat[:, 2]
        if len(page_ids) and page_ids[-1] == len(page_ids):
            src, dst = src_ids - 1, dst_ids - 1  # ids are 1..n: no search needed
        else:
            src, dst = np.searchsorted(page_ids, src_ids), np.searchsorted(page_ids, dst_ids)
        return page_ids, src, dst, weights

    def page_ids_for(self, urls: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        urls = list(dict.fromkeys(urls))
        for start in range(0, len(urls), _IN_CHUNK):
            chunk = urls[start : start + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            found.update(self.db.execute(f"SELECT url, id FROM pages WHERE url IN ({marks})", chunk))
        return found

    def root_page_ids(self) -> list[int]:
        """The root page (``scheme://host/``) of every server in the store."""
        return [row[0] for row in self.db.execute(
            "SELECT id FROM pages WHERE substr(url, instr(url, '//') + 2) = host || '/'")]

    # ------------------------------------------------------------ rankings

    def write_ranking(self, name: str, params: dict, iterations: int, residuals: list[float], page_ids, scores,
                      inlinks, links_src=None, links_dst=None, extra=None, seconds: float | None = None) -> Ranking:
        """Store a new version of ranking ``name`` in one transaction.

        ``page_ids``/``scores``/``inlinks``/``extra`` are arrays by page index;
        ``links_src``/``links_dst`` (page indices) fill ``ranked_links``.
        Older versions keep their scores (one previous version, for warm
        starts and comparisons) but lose their ranked links.
        """
        order = np.argsort(-scores, kind="stable")
        position = np.empty(len(scores), dtype=np.int64)
        position[order] = np.arange(len(scores))
        extra_list = [None] * len(scores) if extra is None else [None if np.isnan(v) else float(v) for v in extra]
        with self.transaction():
            row = self.db.execute("SELECT max(version) FROM rankings WHERE name = ?", (name,)).fetchone()
            version = (row[0] or 0) + 1
            cursor = self.db.execute(
                "INSERT INTO rankings (name, version, params, iterations, residuals, created_at, pages, seconds)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (name, version, json.dumps(params, sort_keys=True), iterations, json.dumps(residuals), _now(),
                 len(scores), seconds),
            )
            ranking_id = cursor.lastrowid
            keys = [url_key(row[0]) for row in self.db.execute("SELECT url FROM pages ORDER BY id")]
            if len(keys) != len(page_ids):
                raise StoreError("the pages changed while ranking: run `rankstore rank` again")
            score_list, position_list = scores.tolist(), position.tolist()
            inlink_list = np.asarray(inlinks).tolist()
            self.db.executemany(
                "INSERT INTO scores (ranking_id, page_id, score, position, inlinks, extra) VALUES (?, ?, ?, ?, ?, ?)",
                zip(itertools.repeat(ranking_id), page_ids.tolist(), score_list, position_list, inlink_list,
                    extra_list),
            )
            self.db.executemany(
                "INSERT OR REPLACE INTO score_keys (ranking_id, url_hash, score, position, inlinks)"
                " VALUES (?, ?, ?, ?, ?)",
                zip(itertools.repeat(ranking_id), keys, score_list, position_list, inlink_list),
            )
            if links_src is not None:
                self.db.executemany(
                    "INSERT OR IGNORE INTO ranked_links (ranking_id, dst, position, src) VALUES (?, ?, ?, ?)",
                    zip(itertools.repeat(ranking_id), page_ids[links_dst].tolist(), position[links_src].tolist(),
                        page_ids[links_src].tolist()),
                )
            old = [r[0] for r in self.db.execute(
                "SELECT id FROM rankings WHERE name = ? AND version < ? ORDER BY version DESC", (name, version))]
            for old_id in old:
                self.db.execute("DELETE FROM ranked_links WHERE ranking_id = ?", (old_id,))
            for old_id in old[1:]:
                self.db.execute("DELETE FROM scores WHERE ranking_id = ?", (old_id,))
                self.db.execute("DELETE FROM score_keys WHERE ranking_id = ?", (old_id,))
        return self.ranking(name, version)

    def ranking(self, name: str = "pagerank", version: int | None = None) -> Ranking:
        sql = ("SELECT id, name, version, params, iterations, residuals, created_at, pages, seconds FROM rankings"
               " WHERE name = ?" + (" AND version = ?" if version else "") + " ORDER BY version DESC LIMIT 1")
        row = self.db.execute(sql, (name, version) if version else (name,)).fetchone()
        if row is None:
            known = ", ".join(r[0] for r in self.db.execute("SELECT DISTINCT name FROM rankings ORDER BY 1"))
            raise RankingNotFound(f"no ranking {name!r}" + (f" version {version}" if version else "")
                                  + (f" (the store has: {known})" if known else " (run `rankstore rank` first)"))
        return Ranking(row[0], row[1], row[2], json.loads(row[3]), row[4], json.loads(row[5]), row[6], row[7], row[8])

    def cold_iterations(self, name: str) -> int | None:
        """Iterations of the newest version of ``name`` computed without a warm start."""
        row = self.db.execute(
            "SELECT iterations FROM rankings WHERE name = ? AND json_extract(params, '$.warm_from') IS NULL"
            " ORDER BY version DESC LIMIT 1", (name,)).fetchone()
        return row[0] if row else None

    def rankings(self) -> list[Ranking]:
        names = [r[0] for r in self.db.execute("SELECT DISTINCT name FROM rankings ORDER BY name")]
        return [self.ranking(name) for name in names]

    def scores_of(self, ranking_id: int):
        """(page ids, scores) of a stored ranking version, as numpy arrays."""
        flat = np.fromiter(itertools.chain.from_iterable(self.db.execute(
            "SELECT page_id, score FROM scores WHERE ranking_id = ?", (ranking_id,))), dtype=np.float64)
        return flat[0::2].astype(np.int64), flat[1::2]

    def score_range(self, ranking: "Ranking") -> tuple[float, float]:
        """(lowest, highest) score of a ranking, for bar widths."""
        rows = dict(self.db.execute(
            "SELECT position, score FROM scores WHERE ranking_id = ? AND position IN (0, ?)",
            (ranking.id, ranking.pages - 1)))
        return rows.get(ranking.pages - 1, 0.0), rows.get(0, 0.0)

    def ranking_head(self, name: str = "pagerank") -> tuple[int, int]:
        """(id, pages) of the newest version of a ranking: a cheap check for a new version."""
        row = self.db.execute("SELECT id, pages FROM rankings WHERE name = ? ORDER BY version DESC LIMIT 1",
                              (name,)).fetchone()
        if row is None:
            raise RankingNotFound(f"no ranking {name!r} (run `rankstore rank` first)")
        return row[0], row[1]

    def search_titles(self, words: Sequence[str], name: str = "pagerank", limit: int = 50,
                      offset: int = 0) -> list[dict]:
        """Pages whose title has every word, best PageRank first (the paper's section 5.1)."""
        query = " ".join('"' + word.replace('"', '""') + '"' for word in words if word)
        if not query:
            return []
        with self.snapshot():
            ranking = self.ranking(name)
            rows = self.db.execute(
                f"SELECT {_PAGE_COLUMNS} FROM titles t JOIN pages p ON p.id = t.rowid"
                " JOIN scores s ON s.ranking_id = ? AND s.page_id = p.id"
                " WHERE titles MATCH ? ORDER BY s.position LIMIT ? OFFSET ?",
                (ranking.id, query, limit, offset)).fetchall()
        return [_page_row(row, ranking.pages) for row in rows]

    def export_rows(self, ranking: "Ranking") -> list[tuple]:
        """(url, score, position, inlinks, title) of every page of a ranking, best first."""
        return self.db.execute(
            "SELECT p.url, s.score, s.position, s.inlinks, p.title FROM scores s JOIN pages p ON p.id = s.page_id"
            " WHERE s.ranking_id = ? ORDER BY s.position", (ranking.id,)).fetchall()

    def snapshot(self):
        """A read transaction: every query inside sees one version of the store."""
        return _Snapshot(self.db)

    def top(self, name: str = "pagerank", limit: int = 15, offset: int = 0) -> list[dict]:
        with self.snapshot():
            ranking = self.ranking(name)
            rows = self.db.execute(
                f"SELECT {_PAGE_COLUMNS} FROM scores s JOIN pages p ON p.id = s.page_id"
                " WHERE s.ranking_id = ? AND s.position >= ? ORDER BY s.position LIMIT ?",
                (ranking.id, offset, limit),
            ).fetchall()
        return [_page_row(row, ranking.pages) for row in rows]

    def lookup(self, urls: Sequence[str], name: str = "pagerank") -> dict[str, dict]:
        """Scores of many URLs (already canonical) in one query per 500; absent URLs are left out."""
        found: dict[str, dict] = {}
        urls = list(dict.fromkeys(urls))
        with self.snapshot():
            ranking_id, pages = self.ranking_head(name)
            for start in range(0, len(urls), _LOOKUP_CHUNK):
                chunk = urls[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                for row in self.db.execute(
                    # CROSS JOIN pins the join order: URL index first, then one score probe each
                    f"SELECT {_PAGE_COLUMNS} FROM pages p CROSS JOIN scores s ON s.page_id = p.id"
                    f" AND s.ranking_id = ? WHERE p.url IN ({marks})", [ranking_id, *chunk]):
                    found[row[0]] = _page_row(row, pages)
        return found

    def backlinks(self, url: str, name: str = "pagerank", limit: int = 50, offset: int = 0) -> list[dict]:
        """Pages linking to ``url``, best PageRank first (the paper's section 7.4)."""
        with self.snapshot():
            ranking_id, pages = self.ranking_head(name)
            target = self.db.execute("SELECT id FROM pages WHERE url = ?", (url,)).fetchone()
            if target is None:
                return []
            start = 0
            if offset:
                # skip on the index alone, then join only the rows shown
                row = self.db.execute(
                    "SELECT position FROM ranked_links WHERE ranking_id = ? AND dst = ?"
                    " ORDER BY position LIMIT 1 OFFSET ?", (ranking_id, target[0], offset)).fetchone()
                if row is None:
                    return []
                start = row[0]
            rows = self.db.execute(
                f"SELECT {_PAGE_COLUMNS}, l.nofollow, l.anchor FROM ranked_links r"
                " JOIN scores s ON s.ranking_id = r.ranking_id AND s.page_id = r.src"
                " JOIN pages p ON p.id = r.src"
                " LEFT JOIN links l ON l.src = r.src AND l.dst = r.dst"
                " WHERE r.ranking_id = ? AND r.dst = ? AND r.position >= ? ORDER BY r.position LIMIT ?",
                (ranking_id, target[0], start, limit),
            ).fetchall()
        return [_link_row(row, pages) for row in rows]

    def scores_by_url(self, urls: Sequence[str], name: str = "pagerank") -> tuple[dict[str, tuple], int]:
        """{url: (score, position, inlinks)} for the URLs in the store, and the ranking's page count.

        The proxy's lookup: one probe of the (ranking, URL hash) B-tree of score_keys per URL, all
        in one query per 2,000 URLs.
        """
        with self.snapshot():
            ranking_id, pages = self.ranking_head(name)
            return self.scores_in(ranking_id, urls), pages

    def scores_in(self, ranking_id: int, urls: Sequence[str]) -> dict[str, tuple]:
        """:meth:`scores_by_url` for a ranking version already known (call it inside a snapshot)."""
        by_key = {url_key(url): url for url in dict.fromkeys(urls)}
        found: dict[str, tuple] = {}
        keys = list(by_key)
        for start in range(0, len(keys), _LOOKUP_CHUNK):
            chunk = keys[start : start + _LOOKUP_CHUNK]
            marks = ",".join("?" * len(chunk))
            for key, score, position, inlinks in self.db.execute(
                    "SELECT url_hash, score, position, inlinks FROM score_keys"
                    f" WHERE ranking_id = ? AND url_hash IN ({marks})", [ranking_id, *chunk]):
                found[by_key[key]] = (score, position, inlinks)
        return found

    def top_backlinks(self, ranking_id: int, url: str, limit: int) -> list[tuple]:
        """(url, title, score, position, inlinks, nofollow) of the pages linking to ``url``, best first.

        The proxy's panel, in one query, for a ranking version already known (call it inside a
        snapshot); :meth:`backlinks` is the general form.
        """
        return self.db.execute(
            "SELECT p.url, p.title, s.score, s.position, s.inlinks, l.nofollow FROM ranked_links r"
            " JOIN scores s ON s.ranking_id = r.ranking_id AND s.page_id = r.src"
            " JOIN pages p ON p.id = r.src"
            " LEFT JOIN links l ON l.src = r.src AND l.dst = r.dst"
            " WHERE r.ranking_id = ? AND r.dst = (SELECT id FROM pages WHERE url = ?) ORDER BY r.position LIMIT ?",
            (ranking_id, url, limit)).fetchall()

    def backlink_count(self, url: str, name: str = "pagerank") -> int:
        with self.snapshot():
            ranking = self.ranking(name)
            row = self.db.execute(
                "SELECT s.inlinks FROM pages p JOIN scores s ON s.ranking_id = ? AND s.page_id = p.id"
                " WHERE p.url = ?", (ranking.id, url)).fetchone()
        return row[0] if row else 0

    def out_links_ranked(self, url: str, name: str = "pagerank", limit: int = 200) -> list[dict]:
        with self.snapshot():
            ranking = self.ranking(name)
            rows = self.db.execute(
                f"SELECT {_PAGE_COLUMNS}, l.nofollow, l.anchor FROM pages src JOIN links l ON l.src = src.id"
                " JOIN pages p ON p.id = l.dst LEFT JOIN scores s ON s.ranking_id = ? AND s.page_id = l.dst"
                " WHERE src.url = ? ORDER BY s.position LIMIT ?",
                (ranking.id, url, limit),
            ).fetchall()
        return [_link_row(row, ranking.pages) for row in rows]


class _Snapshot:
    def __init__(self, db: sqlite3.Connection):
        self.db = db
        self.outer = False

    def __enter__(self):
        self.outer = not self.db.in_transaction
        if self.outer:
            self.db.execute("BEGIN")
        return self.db

    def __exit__(self, *exc):
        if self.outer:
            self.db.execute("COMMIT")


class Store(RankingsMixin):
    """A rankstore SQLite file.  ``readonly=True`` for readers such as the proxy."""

    def __init__(self, path: str, readonly: bool = False):
        self.path = path
        self.readonly = readonly
        if readonly and not os.path.exists(path):
            raise StoreError(f"{path}: no such store (run `rankstore build` first)")
        try:
            if readonly:
                self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False,
                                          isolation_level=None)
            else:
                # one thread at a time: the build writes from its writer thread
                self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA busy_timeout = 10000")
            # Lookups probe two B-trees per URL: read them through the OS page cache
            # without a copy per page (mmap) and keep hot pages in SQLite's cache.
            self.db.execute("PRAGMA mmap_size = 2147483648")
            self.db.execute("PRAGMA cache_size = -262144")
            if not readonly:
                self.db.execute("PRAGMA journal_mode = WAL")
                self.db.execute("PRAGMA synchronous = NORMAL")
                self._migrate()
                self.db.executescript(_SCHEMA)
                self._check_version(create=True)
            else:
                self._check_version(create=False)
        except sqlite3.DatabaseError as error:
            raise StoreError(f"{path}: not a rankstore database ({error})") from error
        self._url_ids: dict[str, int] = {}
        self._written: set[int] = set()

    def _migrate(self) -> None:
        has_meta = self.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone()
        row = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() if has_meta else None
        if row is not None and row[0] == "1":
            # Version 1 had placeholder ranking tables that nothing wrote.
            self.db.executescript(
                "BEGIN; DROP TABLE IF EXISTS scores; DROP TABLE IF EXISTS rankings;"
                " UPDATE meta SET value = '2' WHERE key = 'schema_version'; COMMIT;"
            )
            row = ("2",)
        if row is not None and row[0] in ("2", "3"):
            # Version 4 looks scores up by a 63-bit hash of the URL in a table of
            # their own: one probe of a compact integer B-tree per URL.
            with self.transaction():
                self.db.execute("DROP INDEX IF EXISTS scores_by_url_hash")
                self.db.execute(_SCORE_KEYS)
                rows = self.db.execute(
                    "SELECT s.ranking_id, p.url, s.score, s.position, s.inlinks FROM scores s"
                    " JOIN pages p ON p.id = s.page_id").fetchall()
                self.db.executemany("INSERT OR REPLACE INTO score_keys VALUES (?, ?, ?, ?, ?)",
                                    ((r, url_key(u), sc, po, i) for r, u, sc, po, i in rows))
                self.db.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")

    def _check_version(self, create: bool) -> None:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None and create:
            self.db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        elif row is None or int(row[0]) != SCHEMA_VERSION:
            found = row[0] if row else "none"
            hint = " (any writing command, e.g. `rankstore rank`, upgrades it)" if row and int(row[0]) < SCHEMA_VERSION else ""
            raise StoreError(f"{self.path}: schema version {found}, this rankstore reads {SCHEMA_VERSION}{hint}")

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ----------------------------------------------------------------- builds

    def begin_build(self, sources: Sequence[str]) -> int:
        cursor = self.db.execute(
            "INSERT INTO builds (started_at, status, sources) VALUES (?, 'running', ?)",
            (_now(), json.dumps(list(sources))),
        )
        self._written = set()
        if self.db.execute("SELECT 1 FROM links LIMIT 1").fetchone() is None:
            # A first load is 1.9x faster with the backlink index built once at
            # the end; an interrupted run gets it back at the next open.
            self.db.execute("DROP INDEX IF EXISTS links_by_dst")
        return cursor.lastrowid

    def finish_build(self, build_id: int, pages: int, links: int, skipped: dict[str, int]) -> None:
        self.db.execute("CREATE INDEX IF NOT EXISTS links_by_dst ON links (dst, src)")
        # the title search index (the paper's section 5.1) follows the pages table
        self.db.execute("INSERT INTO titles (titles) VALUES ('rebuild')")
        self.db.execute(
            "UPDATE builds SET finished_at = ?, status = 'complete', pages = ?, links = ?, skipped = ?,"
            " skip_reasons = ? WHERE id = ?",
            (_now(), pages, links, sum(skipped.values()), json.dumps(skipped), build_id),
        )

    def _ids_for(self, urls: Iterable[str]) -> dict[str, int]:
        """Page ids for URLs, adding the unknown ones as linked-to pages."""
        cache = self._url_ids
        wanted = list(dict.fromkeys(urls))
        if len(cache) + len(wanted) > _URL_CACHE_LIMIT:
            cache.clear()  # bounded memory on crawls of any size; SQLite has the rest
        missing = [url for url in wanted if url not in cache]
        if missing:
            self.db.executemany(
                "INSERT OR IGNORE INTO pages (url, host) VALUES (?, ?)",
                ((url, host_of(url)) for url in missing),
            )
            for start in range(0, len(missing), _IN_CHUNK):
                chunk = missing[start : start + _IN_CHUNK]
                marks = ",".join("?" * len(chunk))
                cache.update(self.db.execute(f"SELECT url, id FROM pages WHERE url IN ({marks})", chunk))
        return cache

    def write_pages(self, pages: Sequence[PageData], build_id: int) -> int:
        """Store a batch of crawled pages in one transaction; returns links written."""
        if not pages:
            return 0
        try:
            return self._write_pages(pages, build_id)
        except BaseException:
            self._url_ids.clear()  # ids added by the rolled-back transaction are gone
            raise

    def _write_pages(self, pages: Sequence[PageData], build_id: int) -> int:
        with self.transaction():
            ids = self._ids_for(
                [page.url for page in pages] + [link[0] for page in pages for link in page.links]
            )
            page_rows = []
            link_rows = []
            replace = []
            for page in pages:
                page_id = ids[page.url]
                page_rows.append((page.title, page.status, page.canonical_url, page.fetched_at, build_id, page_id))
                if page_id not in self._written:
                    self._written.add(page_id)
                    replace.append((page_id,))
                for target, nofollow, weight, anchor in page.links:
                    link_rows.append((page_id, ids[target], int(nofollow), weight, anchor or None))
            self.db.executemany("DELETE FROM links WHERE src = ?", replace)
            self.db.executemany(
                "UPDATE pages SET title = ?, crawled = 1, status = ?, canonical_url = ?, fetched_at = ?,"
                " build_id = ? WHERE id = ?",
                page_rows,
            )
            self.db.executemany(
                "INSERT INTO links (src, dst, nofollow, weight, anchor) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (src, dst) DO UPDATE SET nofollow = min(nofollow, excluded.nofollow),"
                " weight = max(weight, excluded.weight), anchor = coalesce(anchor, excluded.anchor)",
                link_rows,
            )
        return len(link_rows)

    def transaction(self):
        return _Transaction(self.db)

    # ---------------------------------------------------------------- lookups

    def info(self) -> dict:
        one = lambda sql: self.db.execute(sql).fetchone()[0]  # noqa: E731
        builds = [
            dict(zip(("id", "started_at", "finished_at", "status", "sources", "pages", "links", "skipped", "skip_reasons"), row))
            for row in self.db.execute(
                "SELECT id, started_at, finished_at, status, sources, pages, links, skipped, skip_reasons"
                " FROM builds ORDER BY id"
            )
        ]
        for build in builds:
            build["sources"] = json.loads(build["sources"])
            build["skip_reasons"] = json.loads(build["skip_reasons"] or "{}")
        rankings = [
            dict(zip(("name", "version", "iterations", "created_at", "pages"), row))
            for row in self.db.execute(
                "SELECT name, version, iterations, created_at, pages FROM rankings ORDER BY name, version"
            )
        ]
        size = sum(os.path.getsize(p) for p in (self.path, self.path + "-wal") if os.path.exists(p))
        return {
            "path": self.path,
            "schema_version": SCHEMA_VERSION,
            "pages": one("SELECT count(*) FROM pages"),
            "crawled_pages": one("SELECT count(*) FROM pages WHERE crawled"),
            "hosts": one("SELECT count(DISTINCT host) FROM pages"),
            "links": one("SELECT count(*) FROM links"),
            "nofollow_links": one("SELECT count(*) FROM links WHERE nofollow"),
            "builds": builds,
            "rankings": rankings,
            "size_bytes": size,
        }

    def page_id(self, url: str) -> int | None:
        row = self.db.execute("SELECT id FROM pages WHERE url = ?", (url,)).fetchone()
        return row[0] if row else None

    def out_links(self, url: str) -> list[str]:
        return [
            row[0]
            for row in self.db.execute(
                "SELECT t.url FROM pages s JOIN links l ON l.src = s.id JOIN pages t ON t.id = l.dst"
                " WHERE s.url = ? ORDER BY t.url",
                (url,),
            )
        ]

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


class _Transaction:
    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self):
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.db.execute("COMMIT")
        else:
            self.db.execute("ROLLBACK")
