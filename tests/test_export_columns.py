"""Export's columns are declared once (issue 33, 4): ``rankstore export --help`` lists exactly them, and every
export's CSV header and Parquet schema is them.

A small edge list is ranked at every level (page, host, site) and by
TrustRank, so that each kind of ``--what scores`` is exported beside the
whole store's four tables.
"""

from __future__ import annotations

import csv
import io

import pyarrow.parquet as pq
import pytest

from rankstore import columns
from rankstore.choices import EXPORT_TABLES
from rankstore.export import ARROW_TYPES

from conftest import run

LINKS = [
    ("https://a.example.com/", "https://b.example.com/x"),
    ("https://b.example.com/x", "https://a.example.com/"),
    ("https://b.example.com/x", "https://c.example.org/"),
    ("https://c.example.org/", "https://a.example.com/"),
    ("https://c.example.org/", "https://www.example.org/y"),
    ("https://www.example.org/y", "https://b.example.com/x"),
]

# Which ranking's scores `export` writes, and the declaration they answer to: (level, with Spam Mass)
RANKINGS = {
    "pagerank": ("page", False),
    "hostrank": ("host", False),
    "siterank": ("site", False),
    "trust": ("page", True),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    work = tmp_path_factory.mktemp("export-columns")
    edges = work / "links.tsv"
    edges.write_text("".join(f"{src}\t{dst}\n" for src, dst in LINKS))
    seeds = work / "seeds.txt"
    seeds.write_text("https://a.example.com/\n")
    path = str(work / "s.db")
    run("build", str(edges), "--store", path, "-q")
    run("rank", "--store", path, "-q")
    run("rank", "--level", "host", "--store", path, "-q")
    run("rank", "--level", "site", "--store", path, "-q")
    run("rank", "--trusted", str(seeds), "--store", path, "-q")
    return path


def _listed(help_text: str) -> dict[tuple[str, str | None], list[str]]:
    """What `export --help` lists under Columns: {(what, level of a scores line or None): names}."""
    block = help_text.split("Columns:\n", 1)[1].split("\n\n", 1)[0]
    listed: dict[tuple[str, str | None], list[str]] = {}
    what = None
    for line in block.splitlines():
        words = line.split(None, 1)
        if words[0] in ("scores", *EXPORT_TABLES):
            what, rest = words[0], words[1]
        elif words[0] == "+":  # the page ranking's added column
            listed[("scores", "page+")] = listed[("scores", "page")] + [words[1].split()[0]]
            continue
        else:
            rest = line.strip()
        level = None
        if what == "scores":
            level, rest = rest.split(" ranking: ", 1)
        assert what is not None
        listed[(what, level)] = [name.strip() for name in rest.split(",")]
    return listed


def test_help_lists_exactly_the_declared_columns():
    listed = _listed(run("export", "--help"))
    expected = {(what, None): columns.declared(what) for what in EXPORT_TABLES}
    for level in columns.SCORE_COLUMNS:
        expected[("scores", level)] = columns.declared("scores", level)
    expected[("scores", "page+")] = columns.declared("scores", "page", spam_mass=True)
    assert listed == expected


@pytest.mark.parametrize("what", EXPORT_TABLES)
def test_each_table_has_the_declared_header_and_schema(store, tmp_path, what):
    text = run("export", "--what", what, "--store", store)
    assert next(csv.reader(io.StringIO(text))) == columns.declared(what)
    assert len(text.splitlines()) > 1
    parquet = tmp_path / f"{what}.parquet"
    run("export", "--what", what, "--format", "parquet", "-o", str(parquet), "--store", store)
    assert pq.read_schema(parquet).names == columns.declared(what)


@pytest.mark.parametrize("ranking", sorted(RANKINGS))
def test_scores_have_the_declared_header(store, tmp_path, ranking):
    level, spam_mass = RANKINGS[ranking]
    text = run("export", "--ranking", ranking, "--store", store)
    assert next(csv.reader(io.StringIO(text))) == columns.declared("scores", level, spam_mass)
    parquet = tmp_path / f"{ranking}.parquet"
    run("export", "--ranking", ranking, "--format", "parquet", "-o", str(parquet), "--store", store)
    assert pq.read_schema(parquet).names == columns.declared("scores", level, spam_mass)


def test_every_column_is_typed_and_said():
    every = [columns.SPAM_MASS]
    every += [column for table in columns.TABLE_COLUMNS.values() for column in table]
    every += [column for level in columns.SCORE_COLUMNS.values() for column in level]
    for column in every:
        assert column.kind in ARROW_TYPES, column
        assert column.meaning.strip(), column


@pytest.mark.parametrize("what", ["scores", "pages"])
def test_output_dash_is_stdout(store, tmp_path, monkeypatch, what):
    monkeypatch.chdir(tmp_path)
    assert run("export", "--what", what, "-o", "-", "--store", store) == run("export", "--what", what, "--store", store)
    assert not (tmp_path / "-").exists()
