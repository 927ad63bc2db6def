"""The SQLite store of pages, links, builds and rankings: the only module that speaks SQL.

Layout (schema version in ``meta``):

* ``pages``: one row per canonical URL, crawled (its content was read) or only
  linked to; ``host`` for per-server views.
* ``links``: a set per source page (primary key ``src, dst``), with the
  nofollow flag, a weight (edge lists) and the first anchor text; indexed by
  target for backlinks.
* ``builds``: each ``rankstore build`` run: times, sources, counts, status
  (``running`` until it completes, so an interrupted run shows as such).
* ``rankings`` / ``scores``: named, versioned PageRank results.

The store runs in WAL mode: a reader (the proxy) never blocks a writer and
sees each transaction whole or not at all.  A build commits in large batches;
each page's out-links are replaced inside the batch that holds the page, so a
build killed at any point leaves every page with either its old links or its
new ones.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from .urls import host_of

__all__ = ["Store", "StoreError", "PageData", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1
_URL_CACHE_LIMIT = 2_000_000
_IN_CHUNK = 500

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
    UNIQUE (name, version)
);
CREATE TABLE IF NOT EXISTS scores (
    ranking_id INTEGER NOT NULL,
    page_id    INTEGER NOT NULL,
    score      REAL NOT NULL,
    PRIMARY KEY (ranking_id, page_id)
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


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Store:
    """A rankstore SQLite file.  ``readonly=True`` for readers such as the proxy."""

    def __init__(self, path: str, readonly: bool = False):
        self.path = path
        self.readonly = readonly
        if readonly and not os.path.exists(path):
            raise StoreError(f"{path}: no such store (run `rankstore build` first)")
        try:
            if readonly:
                self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
            else:
                # one thread at a time: the build writes from its writer thread
                self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA busy_timeout = 10000")
            if not readonly:
                self.db.execute("PRAGMA journal_mode = WAL")
                self.db.execute("PRAGMA synchronous = NORMAL")
                self.db.execute("PRAGMA cache_size = -262144")
                self.db.executescript(_SCHEMA)
                self._check_version(create=True)
            else:
                self._check_version(create=False)
        except sqlite3.DatabaseError as error:
            raise StoreError(f"{path}: not a rankstore database ({error})") from error
        self._url_ids: dict[str, int] = {}
        self._written: set[int] = set()

    def _check_version(self, create: bool) -> None:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None and create:
            self.db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        elif row is None or int(row[0]) != SCHEMA_VERSION:
            found = row[0] if row else "none"
            raise StoreError(f"{self.path}: schema version {found}, this rankstore reads {SCHEMA_VERSION}")

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
