"""The SQLite store of pages, links, builds and rankings: the only package that speaks SQL.

Its modules, one job each: :mod:`.schema` (tables, views), :mod:`.migrations`
(older layouts brought up to date), :mod:`.pages` (pages and out-links, what a
build writes), :mod:`.graph` (the in-link CSR that ``rank`` and backlinks
read), :mod:`.rankings` (versions as arrays), :mod:`.queries` (what the CLI
and the proxy ask), :mod:`.analysis` (the analyst's views, functions over the
parts).  :class:`Store` puts them together on one connection.

The store runs in WAL mode: a reader (the proxy) never blocks a writer and
sees each transaction whole or not at all.  A build commits in large batches;
each page's out-links are replaced inside the batch that holds the page, and
the graph's arrays are derived again in one transaction at its end, so a
build killed at any point leaves every page with either its old links or its
new ones, and readers the previous graph.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import socket
import sqlite3
import time
import urllib.parse
from collections.abc import Iterator, Sequence

import numpy as np

from ..stop_at import stop_at
from . import analysis, migrations
from .analysis import BacklinkReport, TargetLinks
from .base import Transaction
from .errors import (
    NotAStore,
    RankingNotFound,
    StoreBusy,
    StoreDamaged,
    StoreError,
    StoreFull,
    StoreMissing,
    StoreReadOnly,
    check_path,
    explain,
)
from .graph import Graph, InLinks
from .hosts import Hosts
from .levels import LevelHead, Levels, LevelScores, Referrer
from .mapped import Mapped
from .pages import PageData, Pages, builds_json, url_key
from .queries import PanelHeads, Queries
from .rankings import Ranking, RankingArrays, RankingLevelError, Rankings
from .schema import COUNTER_ROWS, SCHEMA_VERSION, TABLES, VIEWS
from .site_links import InLinkSource, SiteLinks
from .sites import Sites
from .sources import SourceFiles, TakenFile
from .space import space as store_space
from .visits import ForgetReport, VisitCounts, Visits

__all__ = [
    "Store",
    "Pages",
    "Graph",
    "Rankings",
    "Hosts",
    "Sites",
    "SiteLinks",
    "SourceFiles",
    "Visits",
    "VisitCounts",
    "ForgetReport",
    "Levels",
    "Queries",
    "analysis",
    "PanelHeads",
    "BacklinkReport",
    "StoreError",
    "RankingNotFound",
    "RankingLevelError",
    "TargetLinks",
    "NotAStore",
    "StoreMissing",
    "StoreBusy",
    "StoreReadOnly",
    "StoreFull",
    "StoreDamaged",
    "explain",
    "Ranking",
    "RankingArrays",
    "InLinks",
    "LevelHead",
    "LevelScores",
    "Referrer",
    "PageData",
    "TakenFile",
    "SCHEMA_VERSION",
    "url_key",
]


_BUILD_CHECKPOINT_PAGES = 262144  # 1 GiB of 4 KiB pages


def _busy_timeout() -> float:
    """Seconds a command waits for another process's write lock: $RANKSTORE_BUSY_TIMEOUT, 10 by default."""
    try:
        return max(0.0, float(os.environ.get("RANKSTORE_BUSY_TIMEOUT", "10")))
    except ValueError:
        return 10.0


def create_private(path: str) -> None:
    """Make the store's file, if it is not there, readable by its owner alone (0600, whatever the umask),
    before SQLite opens it: SQLite gives its -wal and -shm the file's mode.  A file that was there keeps its
    mode (its owner's choice)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return
    try:
        os.fchmod(fd, 0o600)  # a umask takes bits away: 0600 whatever it is
    finally:
        os.close(fd)


_PROCESS_KEY = "build_process:"  # meta: the process running build N, as {host, pid, start, pages_before}


def _process_start(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since boot (Linux's /proc), to tell it from a later process
    given the same pid; None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return int(handle.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _alive(process: dict) -> bool:
    """Whether the process a build noted still runs (a process on another machine is taken to)."""
    if process.get("host") != socket.gethostname():
        return True
    pid = int(process["pid"])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    start = _process_start(pid)
    return start is None or process.get("start") is None or start == process["start"]


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Store:
    """A rankstore SQLite file.  ``readonly=True`` for readers such as the proxy.

    The store keeps the connection, its transactions and the schema's upkeep; what is asked of the
    tables goes through its parts, each a :class:`~.base.Part` holding the store: :attr:`pages`,
    :attr:`graph`, :attr:`rankings`, :attr:`hosts`, :attr:`sites`, :attr:`site_links`,
    :attr:`sources`, :attr:`visits`, :attr:`levels` and :attr:`queries`.  The analyst's views are functions over those
    parts in :mod:`.analysis`, each taking the store first.
    """

    def __init__(self, path: str, readonly: bool = False, create: bool = True, arrays: dict | None = None):
        """Open the store at ``path``; a writer creates it (or brings an older schema up to date) unless
        ``create`` is False.  Errors are :class:`StoreError` subclasses that name the cause.  ``arrays``:
        the ranking versions' arrays read so far (:meth:`.Rankings.ranking_arrays`), a dict that readers of
        the same file in one process may share (a version's arrays never change)."""
        self.path = path
        self.readonly = readonly
        self.pages = Pages(self)
        self.graph = Graph(self)
        self.rankings = Rankings(self, {} if arrays is None else arrays)
        self.hosts = Hosts(self)
        self.sites = Sites(self)
        self.site_links = SiteLinks(self)
        self.sources = SourceFiles(self)
        self.visits = Visits(self)
        self.levels = Levels(self)
        self.queries = Queries(self)
        self.mapped = Mapped(self)
        check_path(path, create=create and not readonly)
        try:
            if create and not readonly:
                create_private(path)
            self.db = self._connect(path, readonly)
            self._check_version(writer=not readonly, create=create and not readonly)
            if not readonly:
                self.db.execute("PRAGMA journal_mode = WAL")
                self.db.execute("PRAGMA synchronous = NORMAL")
                # Debian's SQLite zeroes every page it frees (SECURE_DELETE), which reads the page and
                # writes it twice (log, then file): dropping a ranking's old version cost as much I/O as
                # writing the new one.  FAST zeroes deleted rows only where that costs no extra I/O.
                self.db.execute("PRAGMA secure_delete = FAST")
                self._create_or_migrate()
        except (sqlite3.Error, OSError) as error:
            raise explain(path, error) from error

    def reader(self) -> sqlite3.Connection:
        """Another read-only connection to the store's file, for reading in a thread of its own."""
        return self._connect(self.path, readonly=True)

    def transaction(self) -> Transaction:
        """A write transaction (BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on an exception)."""
        return Transaction(self.db, "BEGIN IMMEDIATE")

    def snapshot(self) -> Transaction:
        """A read transaction: every query inside sees one version of the store."""
        return Transaction(self.db, "BEGIN")

    def data_version(self) -> int:
        """SQLite's ``data_version``: it moves with every commit another connection makes to the store.

        Asked of SQLite, never read from the ``-shm`` file: opening and closing
        that file would drop every POSIX lock the process holds on it (SQLite's
        among them), and another process would then take the store for its own.
        """
        return self.db.execute("PRAGMA data_version").fetchone()[0]

    def begin_read(self) -> bool:
        """Begin a read transaction unless one is open (a reader's that spans several calls, ended by
        :meth:`end_read`); whether it began one."""
        if self.db.in_transaction:
            return False
        self.db.execute("BEGIN")
        return True

    def end_read(self) -> None:
        """End the read transaction :meth:`begin_read` began."""
        self.db.execute("COMMIT")

    @staticmethod
    def _connect(path: str, readonly: bool) -> sqlite3.Connection:
        if readonly:
            uri = f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro"
            db = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
            try:
                db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            except sqlite3.OperationalError:
                # A WAL store in a folder this user cannot write (a read-only mount, another user's
                # files): SQLite cannot make its -shm file.  With no log to replay it reads the file
                # as it is; a log left by a writer that is still running would not be seen.
                log = path + "-wal"
                if os.access(os.path.dirname(os.path.abspath(path)), os.W_OK) or (
                    os.path.exists(log) and os.path.getsize(log) > 0
                ):
                    raise
                db.close()
                db = sqlite3.connect(uri + "&immutable=1", uri=True, check_same_thread=False, isolation_level=None)
        else:
            # one thread at a time: the build writes from its writer thread
            db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        db.execute(f"PRAGMA busy_timeout = {int(1000 * _busy_timeout())}")
        # read the file through the OS page cache without a copy per page (mmap)
        db.execute("PRAGMA mmap_size = 17179869184")
        db.execute("PRAGMA cache_size = -262144")
        # sorts (an index made at once: a domain graph's 135 million site names) on the machine's cores
        db.execute(f"PRAGMA threads = {min(os.cpu_count() or 1, 8)}")
        return db

    def _create_or_migrate(self) -> None:
        if (
            migrations.schema_version(self.db) == SCHEMA_VERSION
            and self.db.execute("SELECT count(*) FROM counter").fetchone()[0] >= COUNTER_ROWS
            and self.db.execute("SELECT value FROM meta WHERE key = 'pages_keyed'").fetchone() != ("0",)
            and self.sites.keyed()
        ):
            return  # up to date: opening writes nothing
        with self.transaction():
            found = migrations.schema_version(self.db)
            if found is not None and found < SCHEMA_VERSION:
                migrations.migrate(self, found)
            for statement in (TABLES + VIEWS).split(";\n"):
                if statement.strip():
                    self.db.execute(statement)
            if self.db.execute("SELECT count(*) FROM counter").fetchone()[0] < COUNTER_ROWS:
                self.db.executemany("INSERT OR IGNORE INTO counter (k) VALUES (?)", ((k,) for k in range(COUNTER_ROWS)))
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            keyed = self.db.execute("SELECT value FROM meta WHERE key = 'pages_keyed'").fetchone()
            if keyed == ("0",):  # a first build was cut short before writing its URL keys
                self.pages.key_pages()
            if not self.sites.keyed():  # sites numbered in bulk, committed before their keys were written
                self.sites.key_sites()

    def _check_version(self, writer: bool, create: bool) -> None:
        """A store this rankstore can read; a writer may also bring an older one up to date, or fill an
        empty file when ``create``.  Another program's SQLite file is never written to."""
        found = migrations.schema_version(self.db)
        if found is None:
            if create and self.db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
                return
            raise NotAStore(f"{self.path}: not a rankstore store (a SQLite file without rankstore's tables)")
        if found > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: schema version {found} is newer than this rankstore "
                f"({SCHEMA_VERSION}): upgrade rankstore"
            )
        if found < SCHEMA_VERSION and not writer:
            raise StoreError(
                f"{self.path}: schema version {found}, this rankstore reads {SCHEMA_VERSION} "
                "(`rankstore upgrade` upgrades it, as any writing command does)"
            )

    def last_build(self) -> int | None:
        """The newest build's id, finished or not (None before the first)."""
        return self.db.execute("SELECT max(id) FROM builds").fetchone()[0]

    @contextlib.contextmanager
    def interrupted_after(self, seconds: float, steps: int = 1000) -> Iterator[None]:
        """SQLite's work on this connection is interrupted (``sqlite3.OperationalError``) once ``seconds`` have
        passed, checked every ``steps`` virtual-machine steps; a read transaction it cut short is rolled back."""
        ends = time.monotonic() + seconds
        self.db.set_progress_handler(lambda: time.monotonic() > ends, steps)
        try:
            yield
        finally:
            self.db.set_progress_handler(None, steps)
            if self.db.in_transaction:  # a read interrupted while ending its own transaction
                self.db.rollback()

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------ derived state

    def ensure_derived(self) -> None:
        """The graph's arrays and the hosts' and sites' numbers, derived again if a build was cut short since."""
        self.graph.ensure_graph()
        if self.hosts.hosts_behind() or self.sites.sites_behind():
            with self.transaction():
                self.hosts.derive_hosts()
                self.sites.derive_sites()

    # ----------------------------------------------------------------- builds

    def begin_build(self, sources: Sequence[str]) -> int:
        """A build's row in ``builds``, 'running', with the process that runs it noted (in ``meta``), so that
        a later command finding the row 'running' and the process gone knows the build was cut short.  The
        builds so cut short before are marked so first (:meth:`settle_builds`)."""
        self.settle_builds()
        with self.transaction():
            cursor = self.db.execute(
                "INSERT INTO builds (started_at, status, sources) VALUES (?, 'running', ?)",
                (_now(), json.dumps(list(sources))),
            )
            assert cursor.lastrowid is not None
            self._note_process(cursor.lastrowid)
        self.pages.start_build()
        # a build's batches append to the log; it is copied into the file once, at the end
        self.db.execute(f"PRAGMA wal_autocheckpoint = {_BUILD_CHECKPOINT_PAGES}")
        return cursor.lastrowid

    def continue_build(self, build_id: int) -> int:
        """Go on with a build cut short (:meth:`.SourceFiles.interrupted_build`): as :meth:`begin_build`,
        with the pages it wrote counted as this run's (a page captured again is weighed against them, a
        graph's links to them merged); returns the links it had written."""
        with self.transaction():
            self.db.execute("UPDATE builds SET status = 'running', finished_at = NULL WHERE id = ?", (build_id,))
            self._note_process(build_id)
        self.db.execute(f"PRAGMA wal_autocheckpoint = {_BUILD_CHECKPOINT_PAGES}")
        return self.pages.continue_build(build_id)

    def _note_process(self, build_id: int) -> None:
        pid = os.getpid()
        self.db.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            (
                f"{_PROCESS_KEY}{build_id}",
                json.dumps(
                    {
                        "host": socket.gethostname(),
                        "pid": pid,
                        "start": _process_start(pid),
                        "pages_before": self.db.execute("SELECT coalesce(max(id), 0) FROM pages").fetchone()[0],
                    }
                ),
            ),
        )

    def committed(self, build_id: int) -> tuple[int, int]:
        """(pages, links) build ``build_id`` committed: the pages it wrote (those it found gone apart), and
        their links."""
        # a graph's pages are marked crawled once it is read whole: until then, its pages with links are no build's
        ours = (
            "SELECT id FROM pages WHERE (build_id = ?1 AND NOT (NOT crawled AND status IN (404, 410)))"
            " OR (build_id IS NULL AND id IN (SELECT src FROM out_links))"
        )
        pages = self.db.execute(f"SELECT count(*) FROM ({ours})", (build_id,)).fetchone()[0]
        links = self.db.execute(
            f"SELECT coalesce(sum(length(targets)), 0) / 4 FROM out_links WHERE src IN ({ours})", (build_id,)
        ).fetchone()[0]
        return pages, links

    def gone_builds(self) -> list[int]:
        """The builds still 'running' whose process is gone (killed, or cut short before it could say so): a
        build's process noted by :meth:`begin_build` and no longer alive on this machine, or, for a build
        from before processes were noted, one that a later build followed."""
        last = self.last_build()
        noted = dict(self.db.execute("SELECT key, value FROM meta WHERE key LIKE ?", (f"{_PROCESS_KEY}%",)))
        gone = []
        for (build_id,) in self.db.execute("SELECT id FROM builds WHERE status = 'running' ORDER BY id").fetchall():
            process = noted.get(f"{_PROCESS_KEY}{build_id}")
            if process is None:
                if build_id != last:
                    gone.append(build_id)
            elif not _alive(json.loads(process)):
                gone.append(build_id)
        return gone

    def interrupt_build(self, build_id: int) -> tuple[int, int] | None:
        """Mark build ``build_id``, cut short, 'interrupted' with the pages and links it committed; a build
        that committed nothing leaves no record (:meth:`forget_build`), and None is returned."""
        if self.db.in_transaction:  # what the interrupted transaction had not committed
            self.db.rollback()
        noted = self.db.execute("SELECT value FROM meta WHERE key = ?", (f"{_PROCESS_KEY}{build_id}",)).fetchone()
        before = json.loads(noted[0]).get("pages_before") if noted else None
        pages_now = self.db.execute("SELECT coalesce(max(id), 0) FROM pages").fetchone()[0]
        if before == pages_now and self.forget_build(build_id):
            self.db.execute("DELETE FROM meta WHERE key = ?", (f"{_PROCESS_KEY}{build_id}",))
            return None
        with self.transaction():
            pages, links = self.committed(build_id)
            self.db.execute(
                "UPDATE builds SET status = 'interrupted', finished_at = ?, pages = ?, links = ?"
                " WHERE id = ? AND status = 'running'",
                (_now(), pages, links, build_id),
            )
            self.db.execute("DELETE FROM meta WHERE key = ?", (f"{_PROCESS_KEY}{build_id}",))
        return pages, links

    def settle_builds(self) -> list[int]:
        """Mark interrupted the builds found 'running' whose process is gone (:meth:`gone_builds`)."""
        gone = self.gone_builds()
        for build_id in gone:
            self.interrupt_build(build_id)
        return gone

    def forget_build(self, build_id: int, sites: int | None = None) -> bool:
        """Drop the record of build ``build_id`` if it committed nothing else (its first transaction failed,
        as when the disk fills): the store is then as it was before it, and no ranking reads as stale
        because of it.  Whether it was dropped; a build that committed pages, links, files or sites (more than
        ``sites``, the count before it, when given: a domain graph's vertices) is kept, to be continued or
        derived from as a build cut short is."""
        if sites is not None and self.sites.site_count() > sites:
            return False
        with self.transaction():
            wrote = self.db.execute(
                "SELECT EXISTS (SELECT 1 FROM pages WHERE build_id = ?1 OR first_build = ?1)"
                " OR EXISTS (SELECT 1 FROM source_files WHERE build = ?1)"
                " OR EXISTS (SELECT 1 FROM link_births WHERE build = ?1)"
                " OR EXISTS (SELECT 1 FROM lost_links WHERE lost_build = ?1)"
                " OR EXISTS (SELECT 1 FROM meta WHERE key = 'graph_build' AND value = CAST(?1 AS TEXT))"
                " OR EXISTS (SELECT 1 FROM builds WHERE id = ?1 AND status != 'running')",
                (build_id,),
            ).fetchone()[0]
            if wrote:
                return False
            self.db.execute("DELETE FROM builds WHERE id = ?", (build_id,))
        return True

    def finish_build(
        self, build_id: int, pages: int, links: int, skipped: dict[str, int], site_links: InLinkSource | None = None
    ) -> int:
        """Derive the graph's arrays and the title index, write a domain graph's ``site_links`` (replacing the
        store's), and mark the build complete, in one transaction.  Returns the site links written."""
        with self.transaction():
            written = 0
            if site_links is not None:
                written = self.site_links.replace(site_links.parts(), site_links.n)
                links += written
            self.pages._index_pages()
            stop_at("finish-indexed")
            self.graph.derive_graph()
            stop_at("finish-derived")
            self.hosts.derive_hosts()
            self.sites.derive_sites()
            stop_at("finish-numbered")
            # the title search index (the paper's section 5.1) follows the pages table
            self.db.execute("INSERT INTO titles (titles) VALUES ('rebuild')")
            self.db.execute(
                "UPDATE builds SET finished_at = ?, status = 'complete', pages = ?, links = ?, skipped = ?,"
                " skip_reasons = ? WHERE id = ?",
                (_now(), pages, links, sum(skipped.values()), json.dumps(skipped), build_id),
            )
            self.db.execute("DELETE FROM meta WHERE key = ?", (f"{_PROCESS_KEY}{build_id}",))
        stop_at("finish-committed")
        self.db.execute("PRAGMA wal_autocheckpoint = 1000")
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return written

    def info(self, space: bool = False) -> dict:
        """The store's counts, builds and rankings; with ``space``, also the bytes each part takes on disk
        (:func:`.space.space`, which reads every page of the file)."""
        one = lambda sql: self.db.execute(sql).fetchone()[0]  # noqa: E731
        builds = builds_json(
            self.db.execute(
                "SELECT id, started_at, finished_at, status, sources, pages, links, skipped, skip_reasons"
                " FROM builds ORDER BY id"
            )
        )
        rankings = []
        newest_of_level: dict[str, tuple[int, dict]] = {}  # the newest host (site) ranking version, by id
        for row in self.db.execute(
            "SELECT name, version, level, build, iterations, created_at, pages, id, params FROM rankings"
            " ORDER BY name, version"
        ):
            item = dict(zip(("name", "version", "level", "build", "iterations", "created_at", "pages"), row))
            # the nodes it scored: a ranks file's, or a graph's with a page or a link (the others at 0); not
            # known for a version ranked before it was kept
            item["scored"] = json.loads(row[8]).get("nodes")
            rankings.append(item)
            if item["level"] in ("host", "site") and row[7] > newest_of_level.get(item["level"], (0, {}))[0]:
                newest_of_level[item["level"]] = (row[7], item)
        files = self.sources.files_of_builds()
        gone = set(self.gone_builds())
        for build in builds:
            if build["status"] != "complete":  # what it committed so far
                build["pages"], build["links"] = self.committed(build["id"])
                if build["id"] in gone:
                    build["status"] = "interrupted"
            build["files"] = [
                {"name": f.name, "size": f.size, "checksum": f.checksum, "unreadable": f.unreadable}
                for f in files.get(build["id"], [])
            ]
        newest = {ranking.name: ranking for ranking in self.rankings.all()}
        for item in rankings:  # only a ranking's newest version is read, and only it can be stale
            current = newest.get(item["name"])
            item["stale"] = (
                self.rankings.stale_note(current) if current and current.version == item["version"] else None
            )
        ranked = {}  # what the newest host (site) ranking scores, beside what the store numbers
        for level, (number, item) in newest_of_level.items():
            scored = item["scored"]
            if scored is None:
                scored = int(np.count_nonzero(self.rankings.ranking_arrays(number, votes=False).scores))
            ranked[level] = {"ranking": item["name"], "version": item["version"], "nodes": scored}
        links, nofollow = self.graph.graph_counts()
        site_links = self.site_links.count()
        size = sum(os.path.getsize(p) for p in (self.path, self.path + "-wal") if os.path.exists(p))
        return {
            "path": self.path,
            "schema_version": SCHEMA_VERSION,
            "pages": one("SELECT count(*) FROM pages"),
            "crawled_pages": one("SELECT count(*) FROM pages WHERE crawled"),
            "hosts": one("SELECT count(DISTINCT host) FROM pages"),
            "hosts_numbered": self.hosts.host_count(),
            "hosts_ranked": ranked.get("host"),
            "sites": self.sites.site_count(),
            "sites_ranked": ranked.get("site"),
            "site_links": site_links,
            "links": links,
            "nofollow_links": nofollow,
            "builds": builds,
            "rankings": rankings,
            "size_bytes": size,
        } | ({"space": [dataclasses.asdict(part) for part in store_space(self, links + site_links)]} if space else {})

    def panel_heads(self) -> PanelHeads:
        """The previous build (links first seen after it may be new) and the host ranking's newest version."""
        row = self.db.execute(
            "SELECT (SELECT max(id) FROM builds WHERE id <"
            " (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'graph_build')),"
            " (SELECT id FROM rankings WHERE name = 'hostrank' AND level = 'host' ORDER BY version DESC LIMIT 1)"
        ).fetchone()
        return PanelHeads(row[0], row[1])
