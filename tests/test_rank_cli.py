"""`rankstore rank` and the commands that read rankings, on real stores."""

from __future__ import annotations

import csv
import io
import json
import shutil
import threading

import numpy as np
import pytest
from click.testing import CliRunner

from rankstore import display
from rankstore.cli import cli
from rankstore.store import Store

from conftest import data


def run(*args, ok=True):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result


@pytest.fixture
def py_store(python_doc_store, tmp_path):
    """A private copy of the python3.11-doc store, ranked once."""
    path = str(tmp_path / "py.db")
    shutil.copy(python_doc_store, path)
    run("rank", "--store", path, "-q")
    return path


@pytest.fixture
def site(py_store):
    with Store(py_store, readonly=True) as store:
        url = store.db.execute("SELECT url FROM pages WHERE url LIKE '%/library/functions.html'").fetchone()[0]
    return url[: -len("library/functions.html")]


def test_rank_prints_each_iteration_and_stores_history(python_doc_store, tmp_path):
    path = str(tmp_path / "r.db")
    shutil.copy(python_doc_store, path)
    result = run("rank", "--store", path, "--method", "power", "--name", "paper")
    assert "paper iteration    1  L1 residual" in result.output
    assert "ranked paper v1" in result.output
    run("rank", "--store", path, "--cold")  # the default: BiCGSTAB
    with Store(path, readonly=True) as store:
        ranking = store.rankings.ranking("paper")
        assert ranking.params["damping"] == 0.85 and ranking.params["dangling"] == "uniform"
        assert ranking.params["method"] == "power"
        assert len(ranking.residuals) == ranking.iterations and ranking.residuals[-1] < 1e-10
        _, power_scores = store.rankings.scores_of(ranking.id)
        assert abs(power_scores.sum() - 1) < 1e-9
        krylov = store.rankings.ranking("pagerank")
        assert krylov.params["method"] == "bicgstab" and krylov.iterations < ranking.iterations / 2
        _, krylov_scores = store.rankings.scores_of(krylov.id)
        assert np.abs(krylov_scores - power_scores).sum() < 1e-9


def test_top_json_fields(py_store, site):
    rows = json.loads(run("top", "--store", py_store, "-n", "15", "--format", "json").output)
    assert len(rows) == 15
    for key in ("url", "title", "pagerank", "percentile", "toolbar"):
        assert key in rows[0]
    scores = [row["pagerank"] for row in rows]
    assert scores == sorted(scores, reverse=True)
    assert rows[0]["percentile"] == 100.0 and 0 <= rows[0]["toolbar"] <= 10


def test_top_table_and_csv(py_store):
    table = run("top", "--store", py_store, "-n", "3").output
    assert "pagerank" in table.splitlines()[0] and "█" in table
    lines = list(csv.reader(io.StringIO(run("top", "--store", py_store, "-n", "3", "--format", "csv").output)))
    assert lines[0][:3] == ["rank", "pagerank", "percentile"] and len(lines) == 4


def test_show_known_and_unknown_urls(py_store, site):
    rows = json.loads(run("show", site + "library/functions.html", "--store", py_store, "--format", "json").output)
    assert rows[0]["url"] == site + "library/functions.html" and rows[0]["inlinks"] > 10
    missing = run("show", "http://nowhere.example/", "--store", py_store, ok=False)
    assert missing.exit_code == 1 and "not in the store" in missing.output


def test_backlinks_sorted_by_pagerank(py_store, site):
    rows = json.loads(
        run("backlinks", site + "library/functions.html", "--store", py_store, "--format", "json", "-n", "500").output
    )["rows"]
    rows = [row for row in rows if row["kind"] == "link"]  # then the nofollow links
    assert len(rows) > 10
    scores = [row["pagerank"] for row in rows]
    assert scores == sorted(scores, reverse=True)
    with Store(py_store, readonly=True) as store:
        count = store.db.execute(
            "SELECT count(*) FROM links l JOIN pages t ON t.id = l.dst WHERE t.url = ? AND NOT l.nofollow",
            (site + "library/functions.html",),
        ).fetchone()[0]
    assert len(rows) == count


def test_export_csv_and_parquet(py_store, tmp_path):
    text = run("export", "--store", py_store).output
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0])[:2] == ["url", "pagerank"]
    assert abs(sum(float(row["pagerank"]) for row in rows) - 1) < 1e-9
    import pyarrow.parquet as pq

    out = tmp_path / "r.parquet"
    run("export", "--store", py_store, "--format", "parquet", "-o", str(out))
    table = pq.read_table(out)
    assert table.num_rows == len(rows) and table.column_names[:2] == ["url", "pagerank"]


def test_stats_plot(py_store, tmp_path):
    png = tmp_path / "stats.png"
    result = run("stats", "--store", py_store, "--plot", str(png))
    assert "iterations" in result.output and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 20_000


def test_warm_start_after_rebuild_saves_iterations(python_doc_crawl, tmp_path):
    path = str(tmp_path / "w.db")
    run("build", data("small.warc.gz"), "--store", path)
    run("rank", "--store", path, "-q")
    run("build", python_doc_crawl.warc, "--store", path)
    cold = run("rank", "--store", path, "--cold", "-q", "--name", "coldcheck").output
    run("rank", "--store", path, "-q", "--name", "warmcheck")
    run("build", data("small.warc.gz"), "--store", path)  # a rebuild: the graph barely changes
    warm = run("rank", "--store", path, "-q", "--name", "warmcheck").output
    assert "warm start from v1" in warm and "iterations saved against a cold start" in warm
    cold_iterations = int(cold.split(" in ")[1].split()[0])
    warm_iterations = int(warm.split(" in ")[1].split()[0])
    assert warm_iterations < cold_iterations / 2


def test_variants_are_named_rankings(py_store, site, tmp_path):
    topic_a = tmp_path / "a.txt"
    topic_a.write_text(site + "library/functions.html\n" + site + "library/stdtypes.html\n")
    topic_b = tmp_path / "b.txt"
    topic_b.write_text("# tutorial\n" + site + "tutorial/index.html\n")
    run("rank", "--store", py_store, "-q", "--source", site + "library/index.html")
    run("rank", "--store", py_store, "-q", "--source-roots", "--name", "roots")
    run("rank", "--store", py_store, "-q", "--topic", f"lib={topic_a}", "--topic", f"tut={topic_b}")
    run("rank", "--store", py_store, "-q", "--trusted", str(topic_a))
    run("rank", "--store", py_store, "-q", "--flagged", str(topic_b))
    run("rank", "--store", py_store, "-q", "--dangling", "remove", "--name", "paper")
    with Store(py_store, readonly=True) as store:
        names = {ranking.name: ranking for ranking in store.rankings.all()}
        assert set(names) >= {
            "pagerank",
            "personalized",
            "roots",
            "topic:lib",
            "topic:tut",
            "trust",
            "badrank",
            "paper",
        }
        assert names["trust"].params["kind"] == "trust" and names["badrank"].params["kind"] == "badrank"
        top_lib = store.queries.top("topic:lib", 2)
        assert {row["url"] for row in top_lib} & {site + "library/functions.html", site + "library/stdtypes.html"}
        spam = store.db.execute(
            "SELECT count(*) FROM scores WHERE ranking_id = ? AND extra IS NOT NULL", (names["trust"].id,)
        ).fetchone()[0]
        assert spam == names["trust"].pages
        # BadRank flows backwards: the pages linking to the flagged page rank high
        bad_top = store.queries.top("badrank", 5)[0]["url"]
        assert bad_top == site + "tutorial/index.html" or site + "tutorial/index.html" in store.pages.out_links(bad_top)


def test_bad_rank_inputs(py_store, tmp_path):
    result = run("rank", "--store", py_store, "-q", "--source", "http://nowhere.example/", ok=False)
    assert result.exit_code == 1 and "not in the store" in result.output
    result = run("rank", "--store", py_store, "-q", "--max-iter", "3", "--cold", "--name", "short", ok=False)
    assert result.exit_code == 1 and "did not converge" in result.output
    result = run("top", "--store", py_store, "--ranking", "nope", ok=False)
    assert result.exit_code == 1 and "no ranking 'nope'" in result.output


def test_readers_see_one_version_never_a_mix(tmp_path):
    path = str(tmp_path / "v.db")
    run("build", data("small.warc.gz"), "--store", path)
    with Store(path) as store:
        page_ids, src, dst, _ = store.graph.graph_arrays()
    n = len(page_ids)
    inlinks = np.bincount(dst, minlength=n)
    stop = threading.Event()
    seen: list[tuple[int, set]] = []

    def read() -> None:
        with Store(path, readonly=True) as reader:
            while not stop.is_set():
                with reader.snapshot():
                    try:
                        ranking = reader.rankings.ranking("mix")
                    except Exception:
                        continue
                    values = {
                        row[0]
                        for row in reader.db.execute("SELECT score FROM scores WHERE ranking_id = ?", (ranking.id,))
                    }
                    arrays = reader.rankings.ranking_arrays(ranking.id)
                seen.append((ranking.version, values | set(arrays.scores.tolist()), len(arrays.best)))

    thread = threading.Thread(target=read)
    thread.start()
    try:
        with Store(path) as writer:
            for version in range(1, 2001):
                if version > 40 and len(seen) > 20:
                    break
                writer.rankings.write_ranking("mix", {}, 1, [0.0], page_ids, np.full(n, float(version)), inlinks)
    finally:
        stop.set()
        thread.join()
    assert len(seen) > 10
    for version, values, pages in seen:
        assert values == {float(version)}
        assert pages == n


def test_display_scales():
    assert display.percentile(0, 200) == 100.0 and display.percentile(199, 200) == 0.5
    assert list(display.toolbar([0.5 / 100, 1 / 100, 6.5 / 100, 6.5**2 / 100, 1.0], 100)) == [0, 1, 2, 3, 3]
    assert display.toolbar(1.0, 10**12) == 10
    widths = display.bar_width([1e-6, 1e-4, 1e-2, 0.0], 1e-6, 1e-2, 41)
    assert list(widths) == [1, 21, 41, 0]


def test_older_schema_is_upgraded_by_a_writing_open(tmp_path):
    """A store written by schema 4 (tests/data/schema4.db): read-only opens say what to run; a writing
    open migrates it, and every ranking, export and backlink list reads as schema 4 wrote it.  (The golden files'
    rank and percentile of tied pages were written again when ties came to read alike; no other cell changed.)"""
    import shutil
    import sqlite3

    from rankstore.store import SCHEMA_VERSION, StoreError

    path = str(tmp_path / "old.db")
    shutil.copy(data("schema4.db"), path)
    with pytest.raises(StoreError, match="rankstore upgrade"):
        Store(path, readonly=True)
    assert run("upgrade", "--store", path).output == f"{path}: schema {SCHEMA_VERSION}\n"
    for ranking in ("pagerank", "personalized"):
        with open(data(f"schema4-{ranking}.csv"), encoding="utf-8") as handle:
            assert run("export", "--store", path, "--ranking", ranking).output == handle.read()
    with open(data("schema4-backlinks.json"), encoding="utf-8") as handle:
        golden = json.load(handle)
    output = run("backlinks", "http://127.0.0.1:45779/docs/", "--store", path, "--format", "json").output
    rows = json.loads(output)["rows"]
    # the same rows with the same values; nofollow links now come after the followed ones
    kept = [{key: row[key] for key in golden[0]} for row in rows if row["url"] is not None]
    assert sorted(kept, key=lambda row: row["url"]) == sorted(golden, key=lambda row: row["url"])
    assert [row["url"] for row in kept if not row["nofollow"]] == [row["url"] for row in golden if not row["nofollow"]]
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    assert [r[0] for r in db.execute("SELECT version FROM rankings WHERE name = 'pagerank' ORDER BY 1")] == [1, 2]


def test_rank_says_when_it_writes_the_version_and_how_long_that_took(tmp_path):
    path = str(tmp_path / "s.db")
    run("build", data("small.warc.gz"), "--store", path, "-q")
    loud = run("rank", "--store", path).output
    assert "  writing pagerank: " in loud and " pages\n" in loud
    assert ", written in " in loud.splitlines()[-1]
    quiet = run("rank", "--store", path, "-q", "--force").output
    assert "writing" not in quiet and ", written in " in quiet
