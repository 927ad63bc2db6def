"""Title search is best PageRank first over every match, not over the first matches in page-id order."""

from __future__ import annotations

import csv
import io

import pytest
from click.testing import CliRunner

from rankstore.cli import cli
from rankstore.store import Store

SEARCH_FIRST = 20_000  # the matches, in page-id order, that title search once ranked (and reads first now)
PAGES = SEARCH_FIRST * 2 + 4000
STAR = SEARCH_FIRST + 3000  # the page most pages link to: past the first SEARCH_FIRST matches of every word


def url(i: int) -> str:
    return f"http://site{i % 50}.example/p/{i}"


def words_of(i: int) -> list[str]:
    """Every title has "common"; even pages "half"; one page in 97 "rare"."""
    return ["common", "page", str(i)] + (["half"] if i % 2 == 0 else []) + (["rare"] if i % 97 == 0 else [])


@pytest.fixture(scope="module")
def store_path(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("search-order")
    edges = folder / "edges.tsv"
    with open(edges, "w", encoding="utf-8") as out:
        for i in range(PAGES):  # each page first as a source in page order, so that page i has id i + 1
            out.write(f"{url(i)}\t{url((i + 1) % PAGES)}\n")
            out.write(f"{url(i)}\t{url((i * 7919 + 13) % PAGES)}\n")
        for i in range(1, 3000):
            out.write(f"{url(i)}\t{url(STAR)}\n")
    path = str(folder / "s.db")
    runner = CliRunner()
    result = runner.invoke(cli, ["build", str(edges), "--store", path, "-q"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    with Store(path) as store, store.transaction():
        for i in range(PAGES):
            assert store.db.execute(
                "UPDATE pages SET title = ? WHERE url = ?", (" ".join(words_of(i)).capitalize(), url(i))
            ).rowcount
        store.db.execute("INSERT INTO titles (titles) VALUES ('rebuild')")
    result = runner.invoke(cli, ["rank", "--store", path, "-q"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return path


def test_best_match_lies_past_the_first_matches_by_id(store_path):
    with Store(store_path, readonly=True) as store:
        assert store.db.execute("SELECT id FROM pages WHERE url = ?", (url(STAR),)).fetchone()[0] > SEARCH_FIRST
        assert store.queries.top("pagerank", 1)[0]["url"] == url(STAR)
    for word in ("common", "half", "page"):
        result = CliRunner().invoke(cli, ["search", word, "-n", "1", "--store", store_path, "--format", "csv"])
        assert result.exit_code == 0, result.output
        assert next(csv.DictReader(io.StringIO(result.output)))["url"] == url(STAR), result.output


@pytest.mark.parametrize("words", [["common"], ["half"], ["rare"], ["half", "page"], ["common", "rare"]])
@pytest.mark.parametrize("offset, limit", [(0, 1), (0, 50), (40, 60), (5000, 50), (SEARCH_FIRST + 100, 50)])
def test_search_is_exact_at_every_depth(store_path, words, offset, limit):
    with Store(store_path, readonly=True) as store:
        arrays = store.rankings.ranking_arrays(store.rankings.page_ranking("pagerank").id)
        by_index = {row[0] - 1: row[1] for row in store.db.execute("SELECT id, url FROM pages WHERE title IS NOT NULL")}
        number = {url(i): i for i in range(PAGES)}
        expected = [
            by_index[index] for index in arrays.best.tolist() if set(words) <= set(words_of(number[by_index[index]]))
        ][offset : offset + limit]
        found = [row["url"] for row in store.queries.search_titles(words, limit=limit, offset=offset)]
    assert found == expected
    if offset < 2000 and words != ["common", "rare"]:
        assert found, "a search within the matches finds pages"
