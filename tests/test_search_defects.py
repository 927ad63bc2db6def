"""Title search defects found tried as a user would: bad search text is an empty result or a 400, never a
500; the best PageRank comes first over every match, however many."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy_addon.pages import respond
from proxy_addon.ranks import Ranks
from rankstore.cli import cli
from rankstore.store import Store

from conftest import ranked_copy

NASTY = [
    "\x00",
    "built\x00functions",
    "\x00built",
    '"\x00"',
    "\x01\x02\x1b[31m",
    "built\x7f",
    "\ud800",
    'built"',
    '"',
    '""',
    "*",
    "NEAR(",
    "NEAR(built functions",
    "AND",
    "OR NOT",
    "-",
    "-built",
    "title:",
    "^",
    "ünïcödé ☃ 漢字 🐍",
    "\u200b\ufeff",
    "x" * 5000,
    " ".join(["built"] * 300),
]
CONTROL = {"\x00", "built\x00functions", "\x00built", '"\x00"', "\x01\x02\x1b[31m", "built\x7f"}


@pytest.fixture(scope="module")
def ranked(python_doc_store, tmp_path_factory) -> str:
    return ranked_copy(python_doc_store, tmp_path_factory.mktemp("search-defects"))


@pytest.fixture(scope="module")
def ranks(ranked):
    ranks = Ranks(ranked)
    yield ranks
    ranks.close()


@pytest.mark.parametrize("text", NASTY)
def test_cli_search_of_bad_text_is_an_answer(ranked, text):
    result = CliRunner().invoke(cli, ["search", "--store", ranked, "--", text])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 0, result.output
    assert result.output.strip(), "a search always prints its rows or (nothing)"
    assert "Traceback" not in result.output


@pytest.mark.parametrize("text", sorted(CONTROL))
def test_cli_search_notes_control_characters_in_one_line(ranked, text):
    result = CliRunner().invoke(cli, ["search", "--store", ranked, "--format", "json", "--", text])
    assert result.exit_code == 0, result.output
    notes = [line for line in result.stderr.splitlines() if "control characters" in line]
    assert notes == ["note: control characters in the search were read as spaces"]


def test_control_characters_are_spaces(ranked):
    with Store(ranked, readonly=True) as store:
        together = store.queries.search_titles(["built", "functions"])
        assert together, "the python docs have a title with both words"
        assert store.queries.search_titles(["built\x00functions"]) == together
        assert store.queries.search_titles(["\x00"]) == []


@pytest.mark.parametrize("text", NASTY)
@pytest.mark.parametrize("fmt", ["html", "csv"])
def test_own_search_page_of_bad_text_is_200_or_400(ranks, text, fmt):
    params = {"q": [text]} if fmt == "html" else {"q": [text], "format": [fmt]}
    status, _headers, body = respond("GET", "/search", params, ranks)
    assert status in (200, 400), (status, body[:300])
    if text in CONTROL:
        assert status == 400
        assert "control characters" in re.sub(r"\s+", " ", body.decode())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.characters(codec=None), max_size=60))
def test_any_search_text_is_an_answer_never_a_500(ranks, text):
    status, _headers, body = respond("GET", "/search", {"q": [text]}, ranks)
    assert status in (200, 400), (status, body[:300])
    with Store(ranks.store_path, readonly=True) as store:
        rows = store.queries.search_titles(text.split(), limit=5)
    assert all(row["url"] for row in rows)
