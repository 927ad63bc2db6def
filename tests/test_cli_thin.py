"""The CLI parses and calls (issue 33, 4): export's scores and `stats --plot`'s figure are the library's.

``rankstore.export.scores``/``write_scores`` write what ``rankstore export``
writes, ``rankstore.plots.stats_figure`` draws what ``stats --plot`` draws,
and ``rankstore/cli.py`` holds neither matplotlib nor pyarrow.
"""

from __future__ import annotations

import io
import pathlib
import shutil

import pytest

from rankstore.store import Store

from conftest import run

CLI = pathlib.Path(__file__).resolve().parent.parent / "rankstore" / "cli.py"


@pytest.fixture(scope="module")
def ranked(python_doc_store, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("thin") / "py.db")
    shutil.copy(python_doc_store, path)
    run("rank", "--store", path, "-q")
    return path


def test_export_scores_are_the_librarys(ranked, tmp_path):
    import pyarrow.parquet as pq

    from rankstore.export import scores, write_scores

    with Store(ranked, readonly=True) as store:
        found = scores(store, "pagerank")
    assert found.rows > 500 and found.notes == []
    text = io.StringIO()
    assert write_scores(found, text, "csv") == found.rows
    assert text.getvalue() == run("export", "--store", ranked)
    parquet = tmp_path / "s.parquet"
    assert write_scores(found, str(parquet), "parquet") == found.rows
    run("export", "--store", ranked, "--format", "parquet", "-o", str(tmp_path / "cli.parquet"))
    assert pq.read_table(parquet).equals(pq.read_table(tmp_path / "cli.parquet"))


def test_stats_figure_is_the_librarys(ranked, tmp_path):
    from matplotlib.image import imread

    from rankstore.plots import stats_figure

    with Store(ranked, readonly=True) as store:
        ranking = store.rankings.ranking("pagerank")
        _, values = store.rankings.scores_of(ranking.id)
        history = store.rankings.ranking_with_history(ranking)
    png = tmp_path / "lib.png"
    assert stats_figure(ranking, values[::-1], history, str(png)) == [f"wrote {png}"]
    assert imread(png).shape[:2] == (462, 1210)  # 11 x 4.2 inches at 110 dpi, as the CLI's


def test_the_cli_draws_and_writes_no_table_itself():
    source = CLI.read_text(encoding="utf-8")
    for name in ("matplotlib", "pyarrow", "csv.writer", "json.dumps(table", "subplots"):
        assert name not in source, name
