"""The store's tables and views, and the migrations from older layouts.

Layout (schema 16; ``docs/ARCHITECTURE.md`` gives the reasons and figures):

* ``pages``: one row per canonical URL, crawled (its content was read) or only
  linked to; ids are dense (1, 2, 3...: pages are never deleted), so page id
  ``i`` is index ``i - 1`` of every array below.  ``page_keys`` maps a 63-bit
  hash of each URL to its page id, for the proxy's batched lookups.
* ``out_links``: each crawled page's out-links, a set, as packed big-endian
  int32 target page ids, in parts of at most :data:`PART_LINKS` (a part stays
  inside one database page, so SQL can read it in place).  ``link_notes``
  holds what only some links have: nofollow, a weight other than 1, anchor
  text; ``link_notes_by_dst`` finds a page's anchored in-links by target
  (``rankstore anchors``).  The ``links`` view joins the two into one row per
  link.
* ``in_links``: the whole graph as in-link CSR, derived from ``out_links`` at
  the end of each build: blocks of target pages, each with its pages' offsets
  and their linking pages (int32 page indices), a nofollow byte per link and
  float64 weights where any link needs them, and ``born``: the build that
  first saw each link (NULL while every link was first seen by one build,
  named in ``meta``).  ``rank`` reads it in one pass; a page's backlinks are
  one slice of it.
* Link history: a link was first seen by the first build that crawled its
  source page (``pages.first_build``) unless ``link_births`` names a later
  one (a link a recrawl found); it was last seen by its source page's last
  crawl (``pages.build_id``).  ``lost_links`` keeps the links a recrawl no
  longer found: when they were first and last seen and which build lost them.
* ``hosts``: each host (with its port) once, numbered in order of first
  appearance; ``page_hosts`` each page's host id, in blocks.  A ranking of
  ``level`` 'host' (``rank --level host``) has its arrays by host index.
* ``sites``: each site (a host's registered domain, :func:`rankstore.urls.site_of`)
  once, numbered in order of first appearance; ``host_sites`` each host's site
  id, in blocks.  A ranking of ``level`` 'site' has its arrays by site index.
  ``site_key_buckets`` holds the 63-bit hash of each site's name (as
  ``page_keys`` hashes URLs) with its site id, 0 where two sites' names share
  a hash, sorted and split by the hash's top bits into buckets of about 128
  (:mod:`.key_buckets`): a batch of names is found by reading the buckets
  they fall in, not by the text index ``sites_by_name``
  (:meth:`rankstore.store.levels.Levels.level_scores`), and a reader holds
  every key after reading them in bulk.  ``host_key_buckets`` holds the
  hosts' the same way.
* ``site_links``: the site-level edges of a Common Crawl domain graph (whose
  vertices are sites, not pages), as the sites' in-link CSR in blocks like
  ``in_links``, each site's sources packed as varint gaps (:mod:`.gaps`);
  replaced whole by each load (:mod:`.site_links`).  The ``site_link_pairs``
  view unpacks them in SQL, one row (``src``, ``dst``: site ids) a link.
* ``titles``: the full-text index of page titles (FTS5 over the titled pages
  only, no per-row sizes: results are ordered by PageRank, not by BM25).
* ``rankings``: named, versioned results, never under an id or a number a
  dropped version had (``AUTOINCREMENT``; ``ranking_names`` keeps each name's
  highest number, schema 15); ``ranking_blocks`` holds one
  version's arrays in blocks of :data:`BLOCK_PAGES` pages: scores (float64),
  in-link counts (int32; :data:`UNKNOWN_INLINKS` where the version's source gave none: a Common Crawl ranks
  file), the variant's extra value (float64, TrustRank's spam
  mass), and ``best``: the pages at those positions of the order by score.  A
  version costs O(pages), however many links.  ``votes`` is what each page
  gives each unit of weight of its followed out-links, d·PR(v)/W(v), so that a
  link's contribution to its target is ``votes[v]·w``; ``rankings.teleport``
  holds the rank source E where it is not uniform (page ids and weights);
  ``rankings.build`` the build whose graph the version ranked (a newer
  build makes it stale).  The ``scores`` view reads the
  blocks as one row per page (per host, ``page_id`` then the host's id, for a
  host ranking); ``current_scores`` is each ranking's newest version with its
  ``level``, joined to the pages (URL and title) or, for a host ranking, to
  the hosts or sites: ``name`` is the page's URL or the host's or site's name,
  ``page_id``, ``host_id`` or ``site_id`` its id (the others NULL, schema 16);
  an unknown in-link count is NULL.

* ``source_files``: each file at a URL a build took whole (name, size,
  checksum, build, when, records or lines it could not read), so that a
  build of the same sources skips it (:mod:`.sources`).
* ``visits``: each view of a page the proxy's record holds (page id, time in
  seconds since 1970, UTC), keyed by its record line's identity, so that a
  build of the same record adds no view twice (:mod:`.visits`).

Packed arrays are big-endian so that the views can read them with SQLite's
own functions (``hex``, ``instr``, ``pow``): plain ``sqlite3``, sqlite-utils
and datasette see tables and views, no extension needed.
"""

from __future__ import annotations

SCHEMA_VERSION = 16
# a version's in-link count where its source gave none (a Common Crawl ranks file): unknown, never 0 (NULL in SQL)
UNKNOWN_INLINKS = -1

PART_LINKS = 224  # targets per out_links row: 896 bytes, under a 4 KiB page's local payload limit
BLOCK_PAGES = 128  # pages per ranking_blocks row (with votes and link mass, 4 KiB: one overflow page a row)
# counter's rows, 0..COUNTER_ROWS - 1: the elements of a part, a block, or (two of them) a site's list of links
COUNTER_ROWS = 8192

_HEX = "'123456789ABCDEF'"


def known_count(inlinks: int) -> int | None:
    """A stored in-link count, None where the version's source gave none (:data:`UNKNOWN_INLINKS`: a ranks
    file says nothing of in-links)."""
    return None if inlinks < 0 else inlinks


def sql_uint(blob: str, index: str, width: int) -> str:
    """SQL for the big-endian unsigned integer of ``width`` bytes at element ``index`` of ``blob``."""
    piece = f"hex(substr({blob}, {width} * ({index}) + 1, {width}))"
    return (
        "("
        + " + ".join(
            f"(instr({_HEX}, substr({piece}, {i + 1}, 1)) << {4 * (2 * width - 1 - i)})" for i in range(2 * width)
        )
        + ")"
    )


def sql_float64(blob: str, index: str) -> str:
    """SQL for the big-endian IEEE 754 double at element ``index`` of ``blob``: exact for every finite
    double (zero's sign aside); NULL for NaN and the infinities."""
    bits = sql_uint(blob, index, 8)  # wraps to a negative int64 when the sign bit is set, as wanted
    exponent = f"(({bits} >> 52) & 2047)"
    mantissa = f"({bits} & 4503599627370495)"
    sign = f"(CASE WHEN {bits} < 0 THEN -1 ELSE 1 END)"
    return (
        f"(CASE WHEN {exponent} = 2047 THEN NULL WHEN {exponent} = 0 THEN {sign} * {mantissa} * pow(2, -1074)"
        f" ELSE {sign} * ({mantissa} + 4503599627370496) * pow(2, {exponent} - 1075) END)"
    )


_BYTES = "'" + " ".join(f"{value:02X}" for value in range(256)) + "'"  # a byte's value: where its hex pair stands


def sql_byte(blob: str, index: str) -> str:
    """SQL for the byte at ``index`` of ``blob`` (0-255): its hex pair's place in a table of all 256."""
    return f"((instr({_BYTES}, hex(substr({blob}, ({index}) + 1, 1))) - 1) / 3)"


def sql_uint32_le(blob: str, index: str) -> str:
    """SQL for the little-endian uint32 at element ``index`` of ``blob`` (``site_links.offsets``)."""
    return "(" + " | ".join(f"({sql_byte(blob, f'4 * ({index}) + {i}')} << {8 * i})" for i in range(4)) + ")"


def _varint_value(byte) -> str:
    """SQL for the value of the varint whose last byte is ``v`` at ``p`` (LEB128: the bytes before it with the
    high bit on, back to its list's start ``lo``, hold its lower bits); ``byte(k)``: the byte k places before."""
    cases = []
    for more in range(4, 0, -1):
        held = " AND ".join(f"p - {j} >= lo AND {byte(j)} >= 128" for j in range(1, more + 1))
        terms = [f"(v << {7 * more})"] + [f"(({byte(j)} - 128) << {7 * (more - j)})" for j in range(1, more + 1)]
        cases.append(f"WHEN {held} THEN {' + '.join(terms)}")
    return f"CASE {' '.join(cases)} ELSE v END"


# site_link_pairs: a domain graph's site links unpacked (:mod:`.gaps`) by SQL alone, one row a link.  A block's
# offsets and sources are cut into small parts first, each read once (SQLite reads a whole value each time an
# expression names it: a byte read from a part costs the part, not the block); a sources part starts 4 bytes
# early, so that a varint's bytes before its last are in the same part.  Each site's sources are its varint gaps;
# a byte below 128 ends one, and the sources are the running sum of gap + 1 (the first is itself; + 1: ids are
# indices + 1).  Each site's bounds are read once too (grouped: kept as numbers, not decoded again where named).
_SITES_A_PART = 64
_BYTES_A_PART = 4096


def _site_link_pairs(rows: int) -> str:
    at = f"r.lo + c1.k * {rows} + c2.k"

    def byte(back: int) -> str:  # the byte ``back`` places before p, read from p's part
        return sql_byte("part", f"p - {back} - start")

    return f"""CREATE VIEW IF NOT EXISTS site_link_pairs AS
SELECT sum(gap + 1) OVER (PARTITION BY dst ORDER BY p) AS src, dst FROM (
 SELECT dst, p, {_varint_value(byte)} AS gap FROM (
  SELECT r.dst AS dst, r.lo AS lo, {at} AS p, s.start AS start, s.part AS part,
         {sql_byte("s.part", f"{at} - s.start")} AS v
  FROM (
   SELECT o.first AS first, o.first + o.j * {_SITES_A_PART} + c.k + 1 AS dst,
          {sql_uint32_le("o.part", "c.k")} AS lo, {sql_uint32_le("o.part", "c.k + 1")} AS hi
   FROM (SELECT l.first AS first, c.k AS j, l.sites AS sites,
                substr(l.offsets, {4 * _SITES_A_PART} * c.k + 1, {4 * _SITES_A_PART + 4}) AS part
         FROM site_links l JOIN counter c ON c.k <= (l.sites - 1) / {_SITES_A_PART} GROUP BY l.first, c.k) o
   JOIN counter c ON c.k < min({_SITES_A_PART}, o.sites - o.j * {_SITES_A_PART})
   GROUP BY o.first, o.j, c.k
  ) r
  JOIN counter c1 ON c1.k <= (r.hi - r.lo - 1) / {rows}
  JOIN counter c2 ON c2.k < min({rows}, r.hi - r.lo - c1.k * {rows})
  JOIN (SELECT l.first AS first, a.k * {rows} + b.k AS j, max({_BYTES_A_PART} * (a.k * {rows} + b.k) - 4, 0) AS start,
               substr(l.sources, max({_BYTES_A_PART} * (a.k * {rows} + b.k) - 4, 0) + 1, {_BYTES_A_PART + 4}) AS part
        FROM site_links l JOIN counter a ON a.k <= (length(l.sources) - 1) / {_BYTES_A_PART * rows}
        JOIN counter b ON b.k < min({rows}, (length(l.sources) - 1) / {_BYTES_A_PART} + 1 - a.k * {rows})
        GROUP BY l.first, a.k, b.k) s
    ON s.first = r.first AND s.j = ({at}) / {_BYTES_A_PART}
 ) WHERE v < 128
)"""


SOURCE_FILES = """CREATE TABLE IF NOT EXISTS source_files (
    name       TEXT PRIMARY KEY,
    size       INTEGER NOT NULL,
    checksum   TEXT NOT NULL,
    build      INTEGER NOT NULL,
    taken_at   TEXT NOT NULL,
    unreadable INTEGER NOT NULL DEFAULT 0
)"""


# AUTOINCREMENT (schema 15): an id is never given twice over the store's life, though ``forget`` deletes
# versions, so that a reader that keeps a version's arrays or look-ups by its id never takes a new version for a
# dropped one; ``ranking_names`` keeps each name's highest version number, so that no number is given twice either
RANKINGS = """CREATE TABLE IF NOT EXISTS rankings (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT NOT NULL,
    version    INTEGER NOT NULL,
    params     TEXT NOT NULL,
    iterations INTEGER NOT NULL,
    residuals  TEXT NOT NULL,
    created_at TEXT NOT NULL,
    pages      INTEGER NOT NULL,
    seconds    REAL,
    teleport   BLOB,
    level      TEXT NOT NULL DEFAULT 'page',
    build      INTEGER,
    UNIQUE (name, version)
)"""
RANKING_NAMES = """CREATE TABLE IF NOT EXISTS ranking_names (
    name TEXT PRIMARY KEY,
    last INTEGER NOT NULL
) WITHOUT ROWID"""


# the line's identity is a hash of the record line (:func:`rankstore.sources.record.read_lines`)
VISITS = """CREATE TABLE IF NOT EXISTS visits (
    line    INTEGER PRIMARY KEY,
    page_id INTEGER NOT NULL,
    at      INTEGER NOT NULL
)"""
VISITS_BY_PAGE = "CREATE INDEX IF NOT EXISTS visits_by_page ON visits (page_id, at)"


SITES = """CREATE TABLE IF NOT EXISTS sites (
    id    INTEGER PRIMARY KEY,
    name  TEXT NOT NULL,
    hosts INTEGER NOT NULL DEFAULT 0
)"""
# unique, but an index of its own rather than the column's constraint: a domain graph's 135 million sites are
# inserted without it and indexed once, sorted (see :meth:`rankstore.store.sites.Sites.ensure_sites`)
SITES_BY_NAME = "CREATE UNIQUE INDEX IF NOT EXISTS sites_by_name ON sites (name)"
# each bucket's keys (int64, ascending) and site (host) ids (int32), little-endian: see :mod:`.key_buckets`
SITE_KEY_BUCKETS = """CREATE TABLE IF NOT EXISTS site_key_buckets (
    bucket INTEGER PRIMARY KEY,
    hashes BLOB NOT NULL,
    ids    BLOB NOT NULL
)"""
HOST_KEY_BUCKETS = SITE_KEY_BUCKETS.replace("site_key_buckets", "host_key_buckets")

# only anchored links: the notes of nofollow or weight alone are never read by target
ANCHORS_BY_TARGET = "CREATE INDEX IF NOT EXISTS link_notes_by_dst ON link_notes (dst) WHERE anchor IS NOT NULL"
PAGES = """CREATE TABLE IF NOT EXISTS {name} (
    id            INTEGER PRIMARY KEY,
    url           TEXT NOT NULL,
    host          TEXT NOT NULL,
    title         TEXT,
    crawled       INTEGER NOT NULL DEFAULT 0,
    status        INTEGER,
    canonical_url TEXT,
    fetched_at    TEXT,
    build_id      INTEGER,
    first_build   INTEGER
)"""

TABLES = f"""
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
{PAGES.format(name="pages")};
CREATE UNIQUE INDEX IF NOT EXISTS pages_by_url ON pages (url);
CREATE INDEX IF NOT EXISTS pages_by_host ON pages (host);
CREATE TABLE IF NOT EXISTS page_keys (
    url_hash INTEGER PRIMARY KEY,
    page_id  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS out_links (
    src     INTEGER NOT NULL,
    part    INTEGER NOT NULL,
    targets BLOB NOT NULL,
    PRIMARY KEY (src, part)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS link_notes (
    src      INTEGER NOT NULL,
    dst      INTEGER NOT NULL,
    nofollow INTEGER NOT NULL DEFAULT 0,
    weight   REAL NOT NULL DEFAULT 1.0,
    anchor   TEXT,
    PRIMARY KEY (src, dst)
) WITHOUT ROWID;
{ANCHORS_BY_TARGET};
CREATE TABLE IF NOT EXISTS link_births (
    src   INTEGER NOT NULL,
    dst   INTEGER NOT NULL,
    build INTEGER NOT NULL,
    PRIMARY KEY (src, dst)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS lost_links (
    dst         INTEGER NOT NULL,
    src         INTEGER NOT NULL,
    lost_build  INTEGER NOT NULL,
    first_build INTEGER,
    last_build  INTEGER,
    PRIMARY KEY (dst, src, lost_build)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS in_links (
    first    INTEGER PRIMARY KEY,
    pages    INTEGER NOT NULL,
    offsets  BLOB NOT NULL,
    sources  BLOB NOT NULL,
    nofollow BLOB,
    weights  BLOB,
    born     BLOB
);
CREATE TABLE IF NOT EXISTS hosts (
    id    INTEGER PRIMARY KEY,
    name  TEXT NOT NULL UNIQUE,
    pages INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS page_hosts (
    first INTEGER PRIMARY KEY,
    hosts BLOB NOT NULL
);
{SITES};
{SITES_BY_NAME};
{SITE_KEY_BUCKETS};
{HOST_KEY_BUCKETS};
CREATE TABLE IF NOT EXISTS host_sites (
    first INTEGER PRIMARY KEY,
    sites BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS site_links (
    first   INTEGER PRIMARY KEY,
    sites   INTEGER NOT NULL,
    offsets BLOB NOT NULL,
    sources BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS counter (
    k INTEGER PRIMARY KEY
);
CREATE VIEW IF NOT EXISTS titled_pages AS SELECT id, title FROM pages WHERE title IS NOT NULL;
CREATE VIRTUAL TABLE IF NOT EXISTS titles USING fts5 (
    title, content = 'titled_pages', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2',
    columnsize = 0
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
{SOURCE_FILES};
{VISITS};
{VISITS_BY_PAGE};
{RANKINGS};
{RANKING_NAMES};
CREATE TABLE IF NOT EXISTS ranking_blocks (
    ranking_id INTEGER NOT NULL,
    first      INTEGER NOT NULL,
    scores     BLOB NOT NULL,
    inlinks    BLOB NOT NULL,
    best       BLOB NOT NULL,
    extra      BLOB,
    votes      BLOB,
    linked     BLOB,
    PRIMARY KEY (ranking_id, first)
);
"""

VIEWS = f"""
CREATE VIEW IF NOT EXISTS link_pairs AS
SELECT o.src AS src, {sql_uint("o.targets", "c.k", 4)} AS dst
FROM out_links o JOIN counter c ON c.k < length(o.targets) / 4;
CREATE VIEW IF NOT EXISTS links AS
SELECT l.src AS src, l.dst AS dst, coalesce(n.nofollow, 0) AS nofollow, coalesce(n.weight, 1.0) AS weight,
       n.anchor AS anchor
FROM link_pairs l LEFT JOIN link_notes n ON n.src = l.src AND n.dst = l.dst;
CREATE VIEW IF NOT EXISTS scores AS
SELECT b.ranking_id AS ranking_id, b.first + c.k + 1 AS page_id, {sql_float64("b.scores", "c.k")} AS score,
       nullif({sql_uint("b.inlinks", "c.k", 4)}, 4294967295) AS inlinks,
       CASE WHEN b.extra IS NULL THEN NULL ELSE {sql_float64("b.extra", "c.k")} END AS extra
FROM ranking_blocks b JOIN counter c ON c.k < length(b.scores) / 8;
CREATE VIEW IF NOT EXISTS current_scores AS
SELECT r.name AS ranking, r.version AS version, r.level AS level, r.build AS build, p.id AS page_id,
       NULL AS host_id, NULL AS site_id, p.url AS name, p.url AS url, p.title AS title, s.score AS pagerank,
       s.inlinks AS inlinks, s.extra AS extra
FROM rankings r JOIN scores s ON s.ranking_id = r.id JOIN pages p ON p.id = s.page_id
WHERE r.level = 'page' AND r.version = (SELECT max(version) FROM rankings WHERE name = r.name)
UNION ALL
SELECT r.name, r.version, r.level, r.build, NULL, h.id, NULL, h.name, NULL, NULL, s.score, s.inlinks, s.extra
FROM rankings r JOIN scores s ON s.ranking_id = r.id JOIN hosts h ON h.id = s.page_id
WHERE r.level = 'host' AND r.version = (SELECT max(version) FROM rankings WHERE name = r.name)
UNION ALL
SELECT r.name, r.version, r.level, r.build, NULL, NULL, t.id, t.name, NULL, NULL, s.score, s.inlinks, s.extra
FROM rankings r JOIN scores s ON s.ranking_id = r.id JOIN sites t ON t.id = s.page_id
WHERE r.level = 'site' AND r.version = (SELECT max(version) FROM rankings WHERE name = r.name);
{_site_link_pairs(COUNTER_ROWS)};
"""
