"""The store's layout: packed arrays against what SQL reads through the views, and kills at any moment."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import numpy as np
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy_addon.ranks import Ranks
from rankstore.cli import cli
from rankstore.store import Store
from rankstore.store.rankings import order_by_score

from conftest import ROOT, data


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([0.0, 1e-300, 0.25, 0.5, 1.0, 5e-324, 0.125]), max_size=60))
def test_order_by_score_is_the_stable_descending_order(values):
    scores = np.array(values, dtype=np.float64)
    assert np.array_equal(order_by_score(scores), np.argsort(-scores, kind="stable"))


# ------------------------------------------------------------------ kills


def _graph_store(path, pages: int, links: int) -> None:
    """A store built by `rankstore build` from a generated edge list (hosts of 100 pages, Zipf targets)."""
    rng = np.random.default_rng(5)
    src = np.sort(rng.integers(0, pages, links))
    dst = (src // 100 * 100 + rng.zipf(1.4, links)) % pages
    edges = path.parent / "edges.tsv"
    with open(edges, "w") as out:
        out.write(
            "".join(
                f"http://h{s // 100}.example/{s}\thttp://h{d // 100}.example/{d}\n"
                for s, d in zip(src.tolist(), dst.tolist())
            )
        )
    assert CliRunner().invoke(cli, ["build", str(edges), "--store", str(path), "-q"]).exit_code == 0


def test_rank_killed_at_any_moment_leaves_the_old_ranking_served(tmp_path):
    """SIGKILL `rank` (told to rank again) at six moments spread evenly over its run, from its start to its last
    tenth, with the proxy's reader at work throughout: the store passes integrity_check, the ranking served is
    the old version or the new one whole, and every page the reader looked at came from one version."""
    path = tmp_path / "kill.db"
    _graph_store(path, 200_000, 2_000_000)
    command = [
        sys.executable,
        "-m",
        "rankstore",
        "rank",
        "--store",
        str(path),
        "-q",
        "--cold",
        "--tol",
        "1e-12",
        "--method",
        "power",
        "--force",  # each run ranks again: an unchanged graph is otherwise left as it was ranked
    ]
    started = time.monotonic()
    subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    duration = time.monotonic() - started
    urls = [f"http://h{i // 100}.example/{i}" for i in range(0, 200_000, 997)]
    stop = threading.Event()
    seen: list[tuple[int, float, int]] = []
    problems: list[str] = []

    def read() -> None:
        ranks = Ranks(str(path), "pagerank", panel_size=10)
        while not stop.is_set():
            try:
                with ranks.page() as view:
                    found = view.lookup(urls)
                    panel = view.panel(urls[0])
                    arrays = view.store.rankings.ranking_arrays(view.ranking_id)
                    seen.append((view.ranking_id, float(arrays.scores.sum()), len(found)))
                    if [b.info.pagerank for b in panel.backlinks] != sorted(
                        (b.info.pagerank for b in panel.backlinks), reverse=True
                    ):
                        problems.append("panel out of order")
            except Exception as error:  # noqa: BLE001 - anything a reader meets is a failure here
                problems.append(repr(error))
        ranks.close()

    thread = threading.Thread(target=read)
    thread.start()
    try:
        for moment in np.linspace(0.05, 0.95, 6):
            with Store(str(path), readonly=True) as store:
                before = store.rankings.ranking_head()
            process = subprocess.Popen(
                command, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            time.sleep(duration * moment)
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            db = sqlite3.connect(path)
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            db.close()
            with Store(str(path), readonly=True) as store:
                head = store.rankings.ranking_head()
                assert head == before or head[0] > before[0]  # the old version, or a whole new one
                scores = store.rankings.scores_of(head[0])[1]
                assert len(scores) == head[1] and abs(scores.sum() - 1) < 1e-9
    finally:
        stop.set()
        thread.join()
    assert not problems, problems[:5]
    assert len(seen) > 20
    for _ranking_id, total, found in seen:
        assert abs(total - 1) < 1e-9 and found == len(urls)
    assert subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL).returncode == 0  # and ranks again


# ------------------------------------------------------------------ the views plain SQL reads


def test_plain_sql_reads_links_and_scores_exactly(python_doc_store, tmp_path):
    """The views decode the packed arrays with SQLite's own functions: same links, bit-identical scores."""
    py_store = str(tmp_path / "py.db")
    shutil.copy(python_doc_store, py_store)
    assert CliRunner().invoke(cli, ["rank", "--store", py_store, "-q"]).exit_code == 0
    with Store(py_store, readonly=True) as store:
        page_ids, src, dst, weights = store.graph.graph_arrays(include_nofollow=True)
        ranking = store.rankings.ranking()
        arrays = store.rankings.ranking_arrays(ranking.id)
        top = store.queries.top(limit=5)
    db = sqlite3.connect(f"file:{py_store}?mode=ro", uri=True)
    rows = db.execute("SELECT src, dst, nofollow, weight FROM links").fetchall()
    assert sorted((s, d) for s, d, _, _ in rows) == sorted(zip((src + 1).tolist(), (dst + 1).tolist()))
    assert len(rows) > 10_000 and any(nofollow for _, _, nofollow, _ in rows)
    assert db.execute("SELECT count(*) FROM links WHERE anchor IS NOT NULL").fetchone()[0] > 1000
    scores = db.execute(
        "SELECT page_id, score, inlinks FROM scores WHERE ranking_id = ? ORDER BY page_id", (ranking.id,)
    ).fetchall()
    assert [row[0] for row in scores] == list(range(1, arrays.pages + 1))
    assert np.array_equal(np.array([row[1] for row in scores]), arrays.scores)  # exact, not approximately
    assert [row[2] for row in scores] == arrays.inlinks.tolist()
    best = db.execute(
        "SELECT url, pagerank FROM current_scores WHERE ranking = 'pagerank' ORDER BY pagerank DESC, page_id LIMIT 5"
    ).fetchall()
    assert best == [(row["url"], row["pagerank"]) for row in top]


def test_sqlite_utils_reads_the_store_as_it_is(python_doc_store, tmp_path):
    """What the README promises analysts: sqlite-utils (no extension, no code of ours) reads pages, links and
    the current scores, the same rows rankstore shows."""
    import sqlite_utils

    path = str(tmp_path / "py.db")
    shutil.copy(python_doc_store, path)
    assert CliRunner().invoke(cli, ["rank", "--store", path, "-q"]).exit_code == 0
    with Store(path, readonly=True) as store:
        top = store.queries.top(limit=3)
        links = store.info()["links"]
    db = sqlite_utils.Database(path)
    assert {"links", "scores", "current_scores"} <= set(db.view_names())
    best = list(db.query("SELECT url, pagerank FROM current_scores ORDER BY pagerank DESC, page_id LIMIT 3"))
    assert best == [{"url": row["url"], "pagerank": row["pagerank"]} for row in top]
    assert db["links"].count == links
    assert db["pages"].count > 500


def test_sql_float_decoding_is_exact_for_every_kind_of_double():
    """The scores view's float decoding, on the doubles that are hard to get right: subnormals, signs, NaN.

    Every finite double reads back exactly (zero's sign aside); NaN and the infinities read as NULL.
    """
    from rankstore.store.schema import sql_float64

    values = np.array(
        [0.0, -0.0, 5e-324, 2.2250738585072014e-308, 1e-300, 0.1, 1 / 3, 1.0, -2.5, 1e300, np.inf, -np.inf, np.nan]
    )
    db = sqlite3.connect(":memory:")
    decoded = [
        db.execute(
            f"SELECT {sql_float64('b.data', str(i))} FROM (SELECT ? AS data) b", (values.astype(">f8").tobytes(),)
        ).fetchone()[0]
        for i in range(len(values))
    ]
    for value, got in zip(values.tolist(), decoded):
        if np.isnan(value) or np.isinf(value):
            assert got is None  # the exponent's all-ones pattern reads as NULL
        else:
            assert got == value and (value == 0 or np.signbit(got) == np.signbit(value))  # -0.0 reads as 0.0


def test_a_first_build_killed_half_way_is_keyed_and_indexed_again(python_doc_crawl, tmp_path):
    """A first build makes its URL index and keys at its end: killed before, the next writing open makes them."""
    path = tmp_path / "first.db"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rankstore",
            "build",
            python_doc_crawl.warc,
            "--store",
            str(path),
            "--commit-every",
            "20",
            "-q",
        ],
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            time.sleep(0.05)
            try:
                with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
                    if db.execute("SELECT count(*) FROM pages WHERE crawled").fetchone()[0] > 100:
                        break
            except sqlite3.OperationalError:
                continue
        else:
            raise AssertionError("the build committed nothing within 60 s")
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert db.execute("SELECT value FROM meta WHERE key = 'pages_keyed'").fetchone() == ("0",)
    db.close()
    result = CliRunner().invoke(cli, ["build", python_doc_crawl.warc, "--store", str(path), "-q"])
    assert result.exit_code == 0, result.output
    assert CliRunner().invoke(cli, ["rank", "--store", str(path), "-q"]).exit_code == 0
    db = sqlite3.connect(path)
    pages = db.execute("SELECT count(*) FROM pages").fetchone()[0]
    assert db.execute("SELECT count(*) FROM page_keys").fetchone()[0] == pages
    assert db.execute("SELECT count(DISTINCT url) FROM pages").fetchone()[0] == pages
    indexes = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"pages_by_url", "pages_by_host"} <= indexes
    urls = [row[0] for row in db.execute("SELECT url FROM pages ORDER BY id")]
    db.close()
    with Store(str(path), readonly=True) as store:
        found, _ = store.queries.scores_by_url(urls)
    assert len(found) == pages  # every page found by its key


def _ranked(scores: np.ndarray, votes: np.ndarray | None = None):
    """A ranking version's arrays for these scores (and votes), as a reader loads them."""
    from rankstore.store.rankings import RankingArrays

    best = order_by_score(scores).astype(np.int32)
    position = np.empty(len(scores), dtype=np.int32)
    position[best] = np.arange(len(scores))
    return RankingArrays(scores, np.zeros(len(scores), dtype=np.int32), best, position, None, votes)


def test_the_best_of_a_long_list_narrowed_coarsely_is_the_exact_best(monkeypatch):
    """best_of narrows a long list by one-byte positions first: same answer as sorting every position."""
    from rankstore.store import rankings

    monkeypatch.setattr(rankings, "_COARSE_FROM", 100)
    rng = np.random.default_rng(3)
    for pages in (300, 5_000, 70_000):
        arrays = _ranked(rng.random(pages))
        position = arrays.position
        for size in (150, 2_000, pages):
            indices = np.sort(rng.choice(pages, min(size, pages), replace=False)).astype(np.int32)
            for count in (1, 10, 50):
                expected = np.argsort(position[indices], kind="stable")[:count]
                assert np.array_equal(arrays.best_of(indices, count), expected)


def test_the_largest_votes_of_a_long_list_narrowed_coarsely_are_the_exact_largest(monkeypatch):
    """largest_votes_of narrows a long list by two-byte vote steps first: same answer as sorting every vote
    (ties, zero votes of sinks, and votes spread over many orders of magnitude included)."""
    from rankstore.store import rankings
    from rankstore.store.analysis import _largest

    monkeypatch.setattr(rankings, "_COARSE_FROM", 100)
    rng = np.random.default_rng(4)
    for pages in (300, 5_000, 70_000):
        scores = rng.random(pages)
        votes = 0.85 * scores / rng.integers(1, 50, pages) * 10.0 ** -rng.integers(0, 12, pages)
        votes[rng.random(pages) < 0.1] = 0.0  # sinks
        votes[:40] = votes[40]  # ties
        arrays = _ranked(scores, votes)
        for size in (150, 2_000, pages):
            indices = np.sort(rng.choice(pages, min(size, pages), replace=False)).astype(np.int32)
            for count in (1, 10, 50):
                expected = _largest(votes[indices], arrays.positions_of, indices, count)
                assert np.array_equal(arrays.largest_votes_of(indices, count), expected)


def test_an_upgrade_moves_urls_to_todays_normal_form(tmp_path):
    """Schema 6 reads URLs as the WHATWG URL Standard does: a page stored under an older form is found again."""
    path = str(tmp_path / "old.db")
    shutil.copy(data("schema4.db"), path)
    with sqlite3.connect(path) as db:
        (last,) = db.execute("SELECT max(id) FROM pages").fetchone()
        db.execute("UPDATE pages SET url = 'http://0x7f.1/x' WHERE id = ?", (last,))  # an IPv4 numeric form
    with Store(path) as store:
        assert store.db.execute("SELECT url, host FROM pages WHERE id = ?", (last,)).fetchone() == (
            "http://127.0.0.1/x",
            "127.0.0.1",
        )
        assert "http://127.0.0.1/x" in store.queries.scores_by_url(["http://127.0.0.1/x"])[0]
        assert store.db.execute("SELECT value FROM meta WHERE key = 'urls_renormalised'").fetchone() == ("1",)


def _same_links(a, b) -> None:
    assert a.n == b.n
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    assert (a.nofollow is None) == (b.nofollow is None) and (a.weights is None) == (b.weights is None)


def test_a_big_graph_read_by_several_connections_is_the_graph_read_by_one(tmp_path, monkeypatch):
    from rankstore.store import graph

    path = tmp_path / "s.db"
    _graph_store(path, 30_000, 200_000)  # several in_links blocks
    store = Store(str(path), readonly=True)
    assert store.db.execute("SELECT count(*) FROM in_links").fetchone()[0] > 3
    alone = store.graph.in_links()
    monkeypatch.setattr(graph, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(graph, "READ_THREADS", 3)
    opened = []
    reader = Store.reader

    def counted(self):
        opened.append(1)
        return reader(self)

    monkeypatch.setattr(Store, "reader", counted)
    _same_links(store.graph.in_links(), alone)
    assert len(opened) == 3
    with store.snapshot():  # inside a transaction of the caller's, the store's connection reads alone
        _same_links(store.graph.in_links(), alone)
    assert len(opened) == 3

    # a reader that sees another graph (a build replaced it meanwhile): the store's own connection reads it all
    other = tmp_path / "other.db"
    shutil.copy(path, other)
    with sqlite3.connect(other) as db:
        db.execute("UPDATE meta SET value = value + 1 WHERE key = 'graph_build'")
        db.execute("DELETE FROM in_links WHERE first > 0")
    monkeypatch.setattr(Store, "reader", lambda self: Store._connect(str(other), readonly=True))
    _same_links(store.graph.in_links(), alone)


def test_dropping_an_old_version_writes_no_freed_page(tmp_path):
    # Debian's SQLite zeroes freed pages unless told otherwise: dropping a version would write (and first
    # read) every page of it, as much I/O as writing the new one
    path = tmp_path / "s.db"
    _graph_store(path, 30_000, 60_000)
    with Store(str(path)) as store:
        n = store.db.execute("SELECT max(id) FROM pages").fetchone()[0]
        rng = np.random.default_rng(1)

        def frames_of_a_new_version() -> int:
            store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            scores = rng.random(n)
            ids, inlinks = np.arange(1, n + 1), np.zeros(n, dtype=np.int32)
            store.rankings.write_ranking(
                "r", {}, 1, [0.0], ids, scores / scores.sum(), inlinks, votes=scores, linked=scores
            )
            return store.db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]

        store.db.execute("PRAGMA wal_autocheckpoint = 0")
        frames_of_a_new_version()
        kept = frames_of_a_new_version()  # v1 kept as the previous version
        dropped = frames_of_a_new_version()  # v1 goes
        assert store.db.execute("SELECT count(DISTINCT ranking_id) FROM ranking_blocks").fetchone()[0] == 2
        assert dropped < 1.2 * kept, (kept, dropped)


def test_an_upgrade_to_schema_7_names_the_build_each_ranking_ranked(tmp_path):
    """Schema 7 records the build a version ranked; an older store's versions get the last build finished before
    them, so that a ranking made before a later build is named stale at once."""
    path = str(tmp_path / "s.db")
    edges = tmp_path / "edges.tsv"
    edges.write_text("http://a.test/\thttp://b.test/\nhttp://b.test/\thttp://a.test/\n")
    runner = CliRunner()
    assert runner.invoke(cli, ["build", str(edges), "--store", path, "-q"]).exit_code == 0
    assert runner.invoke(cli, ["rank", "--store", path, "-q"]).exit_code == 0
    with Store(path) as store:
        assert store.rankings.ranking().build == 1 and store.rankings.stale_note(store.rankings.ranking()) is None
    time.sleep(1.1)  # the migration orders versions and builds by their times, to the second
    edges.write_text("http://b.test/\thttp://c.test/\n")
    assert runner.invoke(cli, ["build", str(edges), "--store", path, "-q"]).exit_code == 0
    with sqlite3.connect(path) as db:  # as schema 6 left it: no build column, the views of schema 6
        db.execute("DROP VIEW current_scores")  # schema 7's reads the column
        db.execute("ALTER TABLE rankings DROP COLUMN build")
        db.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    with Store(path) as store:
        ranking = store.rankings.ranking()
        assert ranking.build == 1
        assert store.rankings.stale_note(ranking) == "ranking pagerank v1 predates build 2: run `rankstore rank`"
        assert store.db.execute("SELECT count(*) FROM current_scores").fetchone()[0] == 2
