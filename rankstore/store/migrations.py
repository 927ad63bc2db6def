"""Older store layouts brought up to date, inside the opening transaction (all or nothing).

* 1 -> 2: version 1 had placeholder ranking tables that nothing wrote.
* 6 -> 7: each ranking version names the build whose graph it ranked
  (``rankings.build``); for older versions, the last build finished before
  the version was made.  The views are made again (``current_scores`` gained
  the ranking's level).
* 7 -> 8: each host's site (registered domain) numbered in ``sites`` and
  ``host_sites``; ``site_links`` (empty) for a domain graph's edges;
  ``current_scores`` joins a site ranking to its sites; ``source_files``, the
  files at URLs that builds took whole (a build of the same sources skips
  them), empty in an older store.
* 8 -> 9: ``link_notes_by_dst``, the anchored links by target, so that
  ``anchors`` reads a page's in-links without a scan of ``link_notes``.
* 9 -> 10: the sites' names unique by an index of their own
  (``sites_by_name``), which a domain graph's load can drop and make again;
  ``site_links`` packs each site's sources as varint gaps (:mod:`.gaps`), not
  int32.
* 10 -> 11: ``site_keys``, each site's name hash and id, filled from
  ``sites`` (hashed in bulk, written in key order: minutes for a domain
  graph's 135 million sites, in the opening transaction like every step).
  A schema-10 store now gets schema 12's buckets at once.
* 11 -> 12: the sites' name keys in sorted buckets, a row a bucket
  (``site_key_buckets``, :mod:`.key_buckets`), from ``site_keys``'s rows
  (no name hashed again); ``site_keys`` dropped.
* 12 -> 13: ``visits`` (empty), the views of pages the proxy's record holds.
* 13 -> 14: the hosts' name keys in sorted buckets (``host_key_buckets``, as
  the sites'), hashed from every host's name.
* 14 -> 15: ``rankings`` made again with ``AUTOINCREMENT`` (its rows kept, ids and all), so that no id a
  dropped version had is given again; ``ranking_names``, each name's highest version number, from the versions
  there (the numbers of versions dropped before are not known).
* 15 -> 16: the views made again: ``current_scores`` gives a site's id in
  ``site_id`` (schema 15 put it in ``host_id``), an unknown in-link count
  as NULL; ``site_link_pairs`` reads a domain graph's site links.  A loaded
  ranks file's versions, which stored their in-link counts as 0, have them
  unknown (:data:`.schema.UNKNOWN_INLINKS`): the file gives none.
* 2, 3, 4 -> 5: links and scores were a row each (``links``, ``scores``,
  ``score_keys``, ``ranked_links``: about 79 bytes a link after one ranking,
  and every ranking version copied every link); version 5 packs them as
  arrays (see :mod:`.schema`).  Pages, builds, titles and ranking metadata
  stay; the two newest versions of each ranking keep their scores.
"""

from __future__ import annotations

import sqlite3

import numpy as np

from . import gaps, key_buckets
from .rankings import ranking_rows
from .schema import (
    ANCHORS_BY_TARGET,
    HOST_KEY_BUCKETS,
    PAGES,
    PART_LINKS,
    RANKING_NAMES,
    RANKINGS,
    SITE_KEY_BUCKETS,
    SITES,
    SITES_BY_NAME,
    SOURCE_FILES,
    TABLES,
    UNKNOWN_INLINKS,
    VIEWS,
    VISITS,
    VISITS_BY_PAGE,
)

__all__ = ["schema_version", "migrate"]


def schema_version(db: sqlite3.Connection) -> int | None:
    if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone() is None:
        return None
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else None


def migrate(store, found: int) -> None:
    """Bring a store of schema ``found`` to the current one (call inside a write transaction)."""
    db = store.db
    if found <= 13:  # before any step that numbers hosts (each adds its keys)
        db.execute(HOST_KEY_BUCKETS)
    if found == 1:
        db.execute("DROP TABLE IF EXISTS scores")
        db.execute("DROP TABLE IF EXISTS rankings")
        found = 2
    if found in (2, 3, 4):
        _packed_arrays(store)
    if found <= 5:
        _link_history(db)
        _renormalise_urls(db)
        store.hosts.derive_hosts()
    if found <= 6:
        _ranking_builds(db)
    if found <= 7:
        _source_files(db)
        _sites(store)
    if found <= 8:
        _anchor_index(db)
    if found <= 9:
        _sites_index(db)
        _packed_site_links(db)
    if found <= 10:
        _site_keys(store)
    elif found == 11:
        _bucketed_site_keys(store)
    if found <= 12:
        _visits(db)
    if found <= 13:
        store.hosts.key_hosts()
    if found <= 14:
        _ranking_ids(db)
    if found <= 15:
        _levels_in_sql(db)


def _levels_in_sql(db: sqlite3.Connection) -> None:
    """Schema 16: the views dropped, made again by the caller; a ranks file's in-link counts unknown."""
    for name in [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'view'")]:
        db.execute(f"DROP VIEW {name}")
    imported = "SELECT id FROM rankings WHERE json_extract(params, '$.kind') = 'imported'"
    blocks = db.execute(
        f"SELECT ranking_id, first, length(inlinks) FROM ranking_blocks WHERE ranking_id IN ({imported})"
    ).fetchall()
    unknown = np.int32(UNKNOWN_INLINKS).astype(">i4").tobytes()
    db.executemany(
        "UPDATE ranking_blocks SET inlinks = ? WHERE ranking_id = ? AND first = ?",
        ((unknown * (length // 4), ranking_id, first) for ranking_id, first, length in blocks),
    )


def _ranking_ids(db: sqlite3.Connection) -> None:
    """Schema 15: ``rankings`` copied into a table of the same columns with ``AUTOINCREMENT`` (SQLite adds it
    to no table in place), which numbers past its highest id from then on; ``ranking_names`` filled from the
    versions there.  The views are made again by the caller."""
    for name in [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'view'")]:
        db.execute(f"DROP VIEW {name}")
    if "AUTOINCREMENT" not in (
        db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'rankings'").fetchone()[0].upper()
    ):
        db.execute("ALTER TABLE rankings RENAME TO rankings_v14")
        db.execute(RANKINGS)
        kept = [row[1] for row in db.execute("PRAGMA table_info(rankings_v14)")]
        columns = ", ".join(c for c in (row[1] for row in db.execute("PRAGMA table_info(rankings)")) if c in kept)
        db.execute(f"INSERT INTO rankings ({columns}) SELECT {columns} FROM rankings_v14 ORDER BY id")
        db.execute("DROP TABLE rankings_v14")
    db.execute(RANKING_NAMES)
    db.execute(
        "INSERT OR REPLACE INTO ranking_names (name, last) SELECT name, max(version) FROM rankings GROUP BY name"
    )


def _visits(db: sqlite3.Connection) -> None:
    """Schema 13: ``visits``, empty: no record was loaded before."""
    db.execute(VISITS)
    db.execute(VISITS_BY_PAGE)


def _renormalise_urls(db: sqlite3.Connection) -> None:
    """Pages stored under an older normal form moved to today's (the WHATWG URL Standard's, since schema 6).

    A URL whose new form another page already has, or that is now rejected,
    is left as it was (a look-up of it then misses, as it would have); the
    counts are kept in ``meta`` as ``urls_renormalised`` and ``urls_left``.
    """
    from ..urls import canonical_many, host_of
    from .pages import url_key

    moved = left = 0
    last = 0
    while rows := db.execute("SELECT id, url FROM pages WHERE id > ? ORDER BY id LIMIT 65536", (last,)).fetchall():
        last = rows[-1][0]
        normal = canonical_many([url for _, url in rows])
        for (page_id, url), new in zip(rows, normal):
            if new == url:
                continue
            if new is None or db.execute("SELECT 1 FROM pages WHERE url = ?", (new,)).fetchone():
                left += 1
                continue
            db.execute("UPDATE pages SET url = ?, host = ? WHERE id = ?", (new, host_of(new), page_id))
            db.execute("DELETE FROM page_keys WHERE url_hash = ? AND page_id = ?", (url_key(url), page_id))
            db.execute("INSERT OR IGNORE INTO page_keys (url_hash, page_id) VALUES (?, ?)", (url_key(new), page_id))
            moved += 1
    db.executemany(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
        [("urls_renormalised", str(moved)), ("urls_left", str(left))],
    )


def _add_column(db: sqlite3.Connection, table: str, column: str, kind: str) -> None:
    if column not in {row[1] for row in db.execute(f"PRAGMA table_info({table})")}:
        db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")


def _link_history(db: sqlite3.Connection) -> None:
    """Schema 6: when each link was first seen (and which were lost), and each ranking's votes.

    A store of schema 5 or older kept no history: its links count as first
    seen by their source page's last crawl, the only one it remembers.
    """
    _add_column(db, "pages", "first_build", "INTEGER")
    db.execute("UPDATE pages SET first_build = build_id WHERE crawled AND first_build IS NULL")
    _add_column(db, "in_links", "born", "BLOB")
    _add_column(db, "rankings", "teleport", "BLOB")
    _add_column(db, "ranking_blocks", "votes", "BLOB")
    _add_column(db, "ranking_blocks", "linked", "BLOB")
    _add_column(db, "rankings", "level", "TEXT NOT NULL DEFAULT 'page'")
    for statement in TABLES.split(";\n"):  # the new tables: link births, lost links, hosts
        if statement.strip():
            db.execute(statement)
    # the in-link arrays stay: with no births recorded, a link's first build is unknown (and never "new")


def _ranking_builds(db: sqlite3.Connection) -> None:
    """Schema 7: ``rankings.build``, filled from the builds finished before each version was made."""
    _add_column(db, "rankings", "build", "INTEGER")
    db.execute(
        "UPDATE rankings SET build = (SELECT max(b.id) FROM builds b WHERE b.status = 'complete'"
        " AND b.finished_at <= rankings.created_at) WHERE build IS NULL"
    )
    for name in [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'view'")]:
        db.execute(f"DROP VIEW {name}")  # made again from VIEWS by the caller


def _sites(store) -> None:
    """Schema 8: each host's site (registered domain), numbered; the views are made again (``current_scores``
    joins the sites of a site ranking)."""
    db = store.db
    for statement in TABLES.split(";\n"):  # the new tables: sites, host_sites, site_links
        if statement.strip():
            db.execute(statement)
    store.sites.derive_sites()
    for name in [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'view'")]:
        db.execute(f"DROP VIEW {name}")  # made again from VIEWS by the caller


def _anchor_index(db: sqlite3.Connection) -> None:
    """Schema 9: ``link_notes_by_dst``, made from the notes already stored."""
    db.execute(ANCHORS_BY_TARGET)


def _sites_index(db: sqlite3.Connection) -> None:
    """Schema 10: ``sites`` without the column's UNIQUE, ``sites_by_name`` instead; the views are made again
    by the caller (``current_scores`` reads the sites)."""
    for name in [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'view'")]:
        db.execute(f"DROP VIEW {name}")
    db.execute(SITES.replace("sites (", "sites_moved (", 1))
    db.execute("INSERT INTO sites_moved (id, name, hosts) SELECT id, name, hosts FROM sites ORDER BY id")
    db.execute("DROP TABLE sites")
    db.execute("ALTER TABLE sites_moved RENAME TO sites")
    db.execute(SITES_BY_NAME)


def _site_keys(store) -> None:
    """Schema 11 (then 12): the sites' name keys, written from every site's name."""
    store.db.execute(SITE_KEY_BUCKETS)
    store.sites.key_sites()


_KEY_ROWS = 1 << 20  # site_keys rows read at once by _bucketed_site_keys


def _bucketed_site_keys(store) -> None:
    """Schema 12: schema 11's ``site_keys`` (a row a key, already zeroed where shared) into sorted buckets
    (:mod:`.key_buckets`): read in key order as decimal text a chunk at a time (``group_concat``, parsed by
    numpy), no name read or hashed again."""
    db = store.db
    hashes: list[np.ndarray] = []
    ids: list[np.ndarray] = []
    after = -1  # the keys are 63-bit: none below 0
    while True:
        text_hashes, text_ids, highest = db.execute(
            "SELECT group_concat(name_hash), group_concat(site_id), max(name_hash) FROM (SELECT name_hash,"
            " site_id FROM site_keys WHERE name_hash > ? ORDER BY name_hash LIMIT ?)",
            (after, _KEY_ROWS),
        ).fetchone()
        if highest is None:
            break
        hashes.append(np.array(text_hashes.split(","), dtype=np.int64))
        ids.append(np.array(text_ids.split(","), dtype=np.int32))
        after = highest
    db.execute(SITE_KEY_BUCKETS)
    key_buckets.write(
        db,
        key_buckets.SITES,
        np.concatenate(hashes) if hashes else np.zeros(0, np.int64),
        np.concatenate(ids) if ids else np.zeros(0, np.int32),
    )
    db.execute("DROP TABLE site_keys")


def _packed_site_links(db: sqlite3.Connection) -> None:
    """Schema 10: each block of ``site_links`` again, its int32 sources packed as varint gaps."""
    rows = db.execute("SELECT first, offsets, sources FROM site_links ORDER BY first").fetchall()
    for first, offsets, sources in rows:
        indptr = np.frombuffer(offsets, dtype=np.int32).astype(np.int64)
        packed = gaps.pack(indptr, np.frombuffer(sources, dtype=np.int32))
        db.execute(
            "UPDATE site_links SET offsets = ?, sources = ? WHERE first = ?",
            (packed.offsets.tobytes(), packed.data, first),
        )


def _source_files(db: sqlite3.Connection) -> None:
    """Schema 8: ``source_files``, empty: no earlier build read files at URLs."""
    db.execute(SOURCE_FILES)


def _packed_arrays(store) -> None:
    db = store.db
    db.execute("DROP TABLE IF EXISTS titles")  # indexed every page; now only the titled ones
    # pages: the URL index becomes one that a first build can drop and make again at its end
    db.execute(PAGES.format(name="pages_v5"))
    db.execute(
        "INSERT INTO pages_v5 (id, url, host, title, crawled, status, canonical_url, fetched_at, build_id)"
        " SELECT id, url, host, title, crawled, status, canonical_url, fetched_at, build_id FROM pages"
    )
    db.execute("DROP TABLE pages")
    db.execute("ALTER TABLE pages_v5 RENAME TO pages")
    for statement in TABLES.split(";\n"):
        if statement.strip():
            db.execute(statement)
    # out-links: each source's set of targets, packed
    count = db.execute("SELECT count(*) FROM links").fetchone()[0]
    pairs = np.fromiter(
        (v for row in db.execute("SELECT src, dst FROM links ORDER BY src, dst") for v in row),
        dtype=np.int64,
        count=2 * count,
    ).reshape(-1, 2)
    rows: list[tuple] = []
    if count:
        cuts = np.flatnonzero(pairs[1:, 0] != pairs[:-1, 0]) + 1
        for group in np.split(pairs, cuts):
            data = group[:, 1].astype(">i4").tobytes()
            rows.extend(
                (int(group[0, 0]), part, data[start : start + 4 * PART_LINKS])
                for part, start in enumerate(range(0, len(data), 4 * PART_LINKS))
            )
    db.executemany("INSERT INTO out_links (src, part, targets) VALUES (?, ?, ?)", rows)
    db.execute(
        "INSERT INTO link_notes (src, dst, nofollow, weight, anchor) SELECT src, dst, nofollow, weight,"
        " anchor FROM links WHERE nofollow OR weight != 1.0 OR anchor IS NOT NULL"
    )
    store.pages.key_pages()
    # rankings: the scores of every version still holding them, as arrays
    has_scores = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'scores' AND type = 'table'").fetchone()
    kept = db.execute("SELECT DISTINCT ranking_id FROM scores").fetchall() if has_scores else []
    for (ranking_id,) in kept:
        rows = db.execute(
            "SELECT page_id, score, inlinks, extra FROM scores WHERE ranking_id = ? ORDER BY page_id", (ranking_id,)
        ).fetchall()
        page_ids = np.array([row[0] for row in rows])
        if not np.array_equal(page_ids, np.arange(1, len(rows) + 1)):
            continue  # not a whole version: nothing to keep
        scores = np.array([row[1] for row in rows], dtype=np.float64)
        inlinks = np.array([row[2] for row in rows], dtype=np.int32)
        extras = [row[3] for row in rows]
        extra = (
            None
            if all(e is None for e in extras)
            else np.array([np.nan if e is None else e for e in extras], dtype=np.float64)
        )
        db.executemany(
            "INSERT INTO ranking_blocks (ranking_id, first, scores, inlinks, best, extra, votes, linked)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            ranking_rows(ranking_id, scores, inlinks, extra),
        )
    for table in ("ranked_links", "score_keys", "scores", "links"):
        db.execute(f"DROP TABLE IF EXISTS {table}")
    for statement in VIEWS.split(";\n"):
        if statement.strip():
            db.execute(statement)
    db.execute("INSERT INTO titles (titles) VALUES ('rebuild')")
    db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', '5')")
    store.graph.derive_graph()
