"""The proxy's own pages, called directly on a real ranked store: limits, FTS5 syntax, deadline, escaping."""

from __future__ import annotations

import re
import shutil

import pytest
from click.testing import CliRunner

from proxy_addon import pages
from proxy_addon.pages import CSP, MAX_PARAM, MAX_QUERY, MAX_WORDS, respond
from proxy_addon.ranks import Ranks
from rankstore.cli import cli
from rankstore.store import Store

FTS5_SYNTAX = [
    '"',
    '"built-in',
    "built*",
    "-functions",
    "NEAR(built functions)",
    "built OR functions",
    "(built",
    "functions)",
    "title:built",
    "AND",
    "NOT",
    "^built",
    "+",
    "NEAR",
    "a:b:c",
    "''",
    "*",
]


@pytest.fixture(scope="module")
def ranks(python_doc_store, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("own-pages") / "py.db")
    shutil.copy(python_doc_store, path)
    result = CliRunner().invoke(cli, ["rank", "--store", path, "-q"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    ranks = Ranks(path)
    yield ranks
    ranks.close()


@pytest.fixture(scope="module")
def target(ranks):
    with Store(ranks.store_path, readonly=True) as store:
        return store.db.execute("SELECT url FROM pages WHERE url LIKE '%/library/functions.html'").fetchone()[0]


def get(ranks, path, **params):
    status, headers, body = respond("GET", path, {key: [value] for key, value in params.items()}, ranks)
    assert headers["Content-Type"].startswith(("text/html", "text/csv"))
    if headers["Content-Type"].startswith("text/html"):
        assert headers["Content-Security-Policy"] == CSP
    # no other site's page may embed an answer of ours, nor frame it
    assert headers["Cross-Origin-Resource-Policy"] == "same-origin" and headers["X-Frame-Options"] == "DENY"
    return status, body.decode()


def message(body: str) -> str:
    return re.search(r"</h1><p>(.*?)</p>", body).group(1)


def test_search_finds_titles_best_first(ranks):
    status, body = get(ranks, "/search", q="built-in functions")
    assert status == 200
    scores = [float(s) for s in re.findall(r'data-pagerank="([^"]+)"', body)]
    assert scores and scores == sorted(scores, reverse=True)
    assert "Built-in Functions" in body


@pytest.mark.parametrize(
    "params, said",
    [
        ({"q": "x" * (MAX_QUERY + 1)}, f"at most {MAX_QUERY} characters"),
        ({"q": " ".join(["word"] * (MAX_WORDS + 1))}, f"at most {MAX_WORDS} words"),
        ({"q": "python", "page": "abc"}, "page must be a whole number"),
        ({"q": "python", "page": "0"}, "page must be a whole number"),
        ({"q": "python", "page": "401"}, "page must be a whole number"),
        ({"q": "python", "page": "9" * 40}, "page must be a whole number"),
        ({"n": "-5"}, "n must be a whole number"),
        ({"n": "1e3"}, "n must be a whole number"),
        ({"url": "http://a.example/" + "x" * MAX_PARAM}, f"at most {MAX_PARAM:,} characters"),
    ],
)
def test_bounds_answered_with_our_400(ranks, params, said):
    path = "/top" if "n" in params else "/backlinks" if "url" in params else "/search"
    status, body = get(ranks, path, **params)
    assert status == 400
    assert said in message(body)
    assert "Traceback" not in body


def test_too_many_parameters(ranks):
    status, headers, body = respond("GET", "/top", {f"k{i}": ["1"] for i in range(40)}, ranks)
    assert status == 400 and headers["Content-Security-Policy"] == CSP and b"at most" in body


@pytest.mark.parametrize("q", FTS5_SYNTAX + ['"built" built* -functions NEAR( OR title:x )'])
def test_fts5_syntax_is_searched_as_words(ranks, q):
    status, body = get(ranks, "/search", q=q)
    assert status == 200, message(body)
    assert "Nothing found." in body or "data-pagerank" in body


def test_fts5_operators_are_plain_words(ranks):
    plain = re.findall(r'data-pagerank="([^"]+)"', get(ranks, "/search", q="built functions")[1])
    # OR as syntax would widen the answer; as a word (in no title here) it narrows it
    either = re.findall(r'data-pagerank="([^"]+)"', get(ranks, "/search", q="built OR functions")[1])
    assert plain and len(either) <= len(plain)
    with Store(ranks.store_path, readonly=True) as store:
        assert store.queries.search_titles(["built*"]) == store.queries.search_titles(["built"])


def test_deep_search_page_is_empty_not_an_error(ranks):
    status, body = get(ranks, "/search", q="python", page="400")
    assert status == 200 and "Nothing found." in body


def test_deadline_gives_our_page_and_the_store_still_works(ranks, target, monkeypatch):
    # a deadline already past, checked at every SQLite step: any query that touches the store is too slow
    monkeypatch.setattr(pages, "_PROGRESS_STEPS", 1)
    for path, params in [
        ("/search", {"q": ["python"]}),
        ("/backlinks", {"url": [target]}),
        ("/page", {"url": [target]}),
        ("/top", {}),
    ]:
        status, headers, body = respond("GET", path, params, ranks, deadline=0.0)
        assert status == 503, (path, body)
        assert headers["Content-Security-Policy"] == CSP
        assert "took too long" in body.decode() and "Traceback" not in body.decode()
        assert not ranks.store().db.in_transaction
    monkeypatch.undo()
    status, body = get(ranks, "/search", q="python")
    assert status == 200 and "data-pagerank" in body
    status, body = get(ranks, "/backlinks", url=target)
    assert status == 200 and "data-pagerank" in body


XSS = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>"


@pytest.mark.parametrize(
    "path, params",
    [
        ("/search", {"q": XSS}),
        ("/search", {"q": "python " + XSS}),
        ("/backlinks", {"url": "http://evil.example/" + XSS}),
        ("/page", {"url": "http://evil.example/?q=" + XSS}),
        ("/" + XSS, {}),
        ("/search", {"q": XSS * 10}),
        ("/top", {"n": XSS}),
    ],
)
def test_user_input_is_escaped(ranks, path, params):
    status, body = get(ranks, path, **params)
    assert status in (200, 400, 404)
    assert "<script" not in body.lower() and "<img" not in body.lower()
    if path == "/search" and status == 200:
        assert "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#x27;&gt;&lt;img" in body


def test_every_page_escapes_and_carries_csp(ranks, target):
    for path, params in [
        ("/", {}),
        ("/top", {"n": "5"}),
        ("/search", {"q": "built-in"}),
        ("/backlinks", {"url": target}),
        ("/page", {"url": target}),
    ]:
        status, body = get(ranks, path, **params)
        assert status == 200, (path, body)
        assert "<script" not in body.lower()


def test_backlinks_csv_within_the_deadline(ranks, target):
    status, headers, body = respond("GET", "/backlinks", {"url": [target], "format": ["csv"]}, ranks)
    assert status == 200 and headers["Content-Type"].startswith("text/csv")
    lines = body.decode().splitlines()
    # the CLI's columns (`rankstore backlinks --format csv`), the bar among them as in JSON
    assert lines[0] == (
        "rank,pagerank,percentile,toolbar,inlinks,bar,url,title,kind,contribution,share,first_seen,nofollow,anchor"
    )
    assert len(lines) > 10
    assert "X-Backlinks-Truncated" not in headers
