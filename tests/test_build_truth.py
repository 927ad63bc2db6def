"""Issue 47, points 5 and 6: a build's history tells the truth (an interrupted build is marked so, with what
it committed; the bar counts work done) and inputs are read as what they are (one saved HTML page or other
text is refused in one line, writing nothing; two folders of Common Crawl graph parts are a graph)."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from rankstore.cli import cli

from conftest import data


def _build(*args):
    return CliRunner().invoke(cli, ["build", *args], catch_exceptions=False)


# ------------------------------------------------------------ point 6: inputs read as what they are


@pytest.mark.parametrize(
    "name, text, said",
    [
        (
            "page.html",
            "<!doctype html>\n<html><head><title>T</title></head>\n<body><a href='a.html'>a</a></body></html>\n",
            "a saved HTML page",
        ),
        ("page.htm", "<html>\n<body>hello</body>\n</html>\n", "a saved HTML page"),
        ("notes.txt", "hello\nworld foo\nthe end\n", "not an edge list"),
    ],
)
def test_a_single_html_file_or_other_text_is_refused_in_one_line_and_nothing_is_written(tmp_path, name, text, said):
    source = tmp_path / name
    source.write_text(text)
    store = tmp_path / "s.db"
    result = _build(str(source), "--store", str(store))
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert str(source) in lines[0] and said in lines[0]
    assert "--base-url" in lines[0] and "WARC" in lines[0]  # what to give instead
    assert not os.path.exists(store)  # no store made, no empty build recorded


def test_an_edge_list_with_comments_and_a_bad_line_is_still_an_edge_list(tmp_path):
    source = tmp_path / "edges.txt"
    source.write_text("# a comment\n\nbroken\nhttp://a.example/ http://b.example/\n")
    result = _build(str(source), "--store", str(tmp_path / "s.db"), "-q")
    assert result.exit_code == 3, result.output  # the bad line skipped, the rest loaded
    assert ", 1 links" in result.output


@pytest.mark.parametrize("order", [("vertices", "edges"), ("edges", "vertices")])
def test_two_folders_of_common_crawl_graph_parts_are_a_graph(tmp_path, order):
    folders = [data(f"ccgraph/host/{kind}") for kind in order]
    result = _build(*folders, "--store", str(tmp_path / "s.db"), "-q")
    assert result.exit_code == 0, result.output
    assert "8 pages, 13 links" in result.output
