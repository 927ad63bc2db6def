"""`rankstore usage` and the proxy's /usage: visits beside PageRank, most over- and under-ranked first (issue 35,
point 3; the paper's section 7.1), on a tiny record whose positions are worked out by hand."""

from __future__ import annotations

import base64
import io
import json
import re

import matplotlib.image
import networkx as nx
import pytest
from recordkit import append, link, make_record, page

from proxy_addon.pages import CSP, respond
from proxy_addon.pages.usage import CSP as USAGE_CSP
from proxy_addon.ranks import Ranks
from rankstore.store import Store

from conftest import invoke, run

A, X, BLOG, B, Z = (
    "http://www.a.example/",
    "http://www.a.example/x",
    "http://blog.a.example/",
    "http://b.example/",
    "http://b.example/z",
)
LINKS = {A: [X, BLOG, B], X: [A], BLOG: [B], B: [A, Z, X]}
# PageRank (uniform E): A > B > X > BLOG > Z, no two equal.  Views: B 3, A 2, X 1, BLOG 1 (day 2: B 2, A 1)
VIEWS = [
    (A, "2026-11-20T10:00:00Z"),
    (X, "2026-11-20T10:01:00Z"),
    (BLOG, "2026-11-20T10:02:00Z"),
    (B, "2026-11-20T10:03:00Z"),
    (A, "2026-11-22T09:00:00Z"),
    (B, "2026-11-22T09:01:00Z"),
    (B, "2026-11-22T09:02:00Z"),
]
COLUMNS = ["url", "visits", "visit_rank", "pagerank", "pagerank_rank", "rank", "log2_over", "pagerank_says"]
# by hand: visit_rank (X and BLOG tie for 3rd and 4th: 3.5 each), pagerank_rank among the four visited, rank
# among all five pages; log2_over = log2(visit_rank / pagerank_rank); |log2_over| largest first, at the same
# size over before under
EXPECTED = [
    (A, 2, 2.0, 1.0, 1, 1.0, "over"),
    (B, 3, 1.0, 2.0, 2, -1.0, "under"),
    (X, 1, 3.5, 3.0, 3, 0.222392, "over"),  # log2(3.5/3)
    (BLOG, 1, 3.5, 4.0, 4, -0.192645, "under"),  # log2(3.5/4)
]


@pytest.fixture(scope="module")
def browsed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("usage")
    record = make_record(str(folder / "record"))
    for n, (url, at) in enumerate(VIEWS):
        append(record, "20261120T100000Z", 1, page(url, at, [link(dst) for dst in LINKS[url]], title=f"T{n}"))
    store = str(folder / "s.db")
    run("build", record, "--store", store, "-q")
    run("rank", "--store", store, "-q")
    run("rank", "--store", store, "--level", "host", "-q")
    return store


@pytest.fixture(scope="module")
def ranks(browsed):
    ranks = Ranks(browsed)
    yield ranks
    ranks.close()


def _networkx_pagerank() -> dict[str, float]:
    graph = nx.DiGraph()
    graph.add_nodes_from([A, X, BLOG, B, Z])
    graph.add_edges_from((src, dst) for src, dsts in LINKS.items() for dst in dsts)
    return nx.pagerank(graph, 0.85, tol=1e-15, max_iter=10000)


def _json(*args: str) -> list[dict]:
    return json.loads(run("usage", *args, "--format", "json"))


def test_rows_by_hand_most_over_and_under_ranked_first(browsed):
    rows = _json("--store", browsed)
    assert list(rows[0]) == COLUMNS
    pagerank = _networkx_pagerank()
    got = [
        (r["url"], r["visits"], r["visit_rank"], r["pagerank_rank"], r["rank"], r["log2_over"], r["pagerank_says"])
        for r in rows
    ]
    assert got == EXPECTED
    for row in rows:
        assert row["pagerank"] == pytest.approx(pagerank[row["url"]], abs=1e-9)


def test_the_table_and_limit(browsed):
    out = run("usage", "--store", browsed, "-n", "2")
    lines = out.splitlines()
    assert lines[0].split() == ["visits", "visit_rank", "pagerank", "pagerank_rank", "rank", "log2_over"] + [
        "pagerank_says",
        "url",
    ]
    assert len(lines) == 3
    assert lines[1].split()[:2] == ["2", "2"] and lines[1].split()[-3:] == ["+1.00", "over", A]
    assert lines[2].split()[-3:] == ["-1.00", "under", B]
    assert len(_json("--store", browsed, "-n", "0")) == 4


def test_since_counts_the_views_from_that_date(browsed):
    rows = _json("--store", browsed, "--since", "2026-11-22")
    assert [(r["url"], r["visits"], r["visit_rank"], r["pagerank_rank"], r["log2_over"]) for r in rows] == [
        (A, 1, 2.0, 1.0, 1.0),
        (B, 2, 1.0, 2.0, -1.0),
    ]


def test_host_level_counts_a_hosts_pages_views(browsed):
    rows = _json("--store", browsed, "--level", "host")
    assert list(rows[0])[0] == "host"
    by_host = {r["host"]: r for r in rows}
    assert {h: (r["visits"], r["visit_rank"]) for h, r in by_host.items()} == {
        "www.a.example": (3, 1.5),
        "b.example": (3, 1.5),
        "blog.a.example": (1, 3.0),
    }
    with Store(browsed, readonly=True) as store:
        ranking = store.rankings.ranking("hostrank")
        ids, scores = store.rankings.scores_of(ranking.id)
        names = store.hosts.host_names([int(i) for i in ids])
    hostrank = {names[int(i)]: float(s) for i, s in zip(ids, scores)}
    placed = sorted(by_host, key=lambda h: -hostrank[h])
    for host, row in by_host.items():
        assert row["pagerank"] == hostrank[host]
        assert row["pagerank_rank"] == placed.index(host) + 1
    overs = [abs(r["log2_over"]) for r in rows]
    assert overs == sorted(overs, reverse=True)


def test_errors_are_one_line(browsed, tmp_path):
    other = invoke("usage", "--store", browsed, "--ranking", "hostrank")
    assert (other.exit_code, other.output) == (
        1,
        "Error: hostrank ranks hosts: give --level host, or a ranking of pages\n",
    )
    late = invoke("usage", "--store", browsed, "--since", "2027-01-01")
    assert late.exit_code == 1 and late.output.startswith("Error: no visits since 2027-01-01T00:00:00Z")
    assert late.output.count("\n") == 1
    missing = invoke("usage", "--store", browsed, "--level", "site")
    assert missing.exit_code == 1 and missing.output.startswith("Error: no ranking 'siterank'")
    edges = tmp_path / "edges.tsv"
    edges.write_text("http://p.example/\thttp://q.example/\n")
    store = str(tmp_path / "e.db")
    run("build", str(edges), "--store", store, "-q")
    run("rank", "--store", store, "-q")
    none = invoke("usage", "--store", store)
    assert none.exit_code == 1
    assert none.output == (
        "Error: the store has no visits: record your browsing with `pagerank-proxy --record DIR`, "
        "then `rankstore build DIR`\n"
    )


def _get(ranks, **params: str):
    return respond("GET", "/usage", {key: [value] for key, value in params.items()}, ranks)


@pytest.mark.parametrize("fmt", ["csv", "json"])
@pytest.mark.parametrize("options", [{}, {"level": "host"}, {"since": "2026-11-22"}])
def test_the_pages_csv_and_json_are_the_clis(browsed, ranks, fmt, options):
    status, headers, body = _get(ranks, format=fmt, n="3", **options)
    assert status == 200
    args = [arg for key, value in options.items() for arg in (f"--{key}", value)]
    assert body.decode() == run("usage", "--store", browsed, "-n", "3", "--format", fmt, *args)


def test_the_page_shows_the_rows_and_a_png_scatter_plot_under_a_strict_policy(ranks):
    status, headers, body = _get(ranks)
    assert status == 200
    text = body.decode()
    # the pages' policy with data: images alone added: no script, nothing from elsewhere
    assert headers["Content-Security-Policy"] == USAGE_CSP == CSP.replace("img-src 'none'", "img-src data:")
    assert "script-src" not in USAGE_CSP and "default-src 'none'" in USAGE_CSP
    assert "<script" not in text.lower()
    images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)
    assert len(images) == 1
    png = base64.b64decode(images[0])
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    pixels = matplotlib.image.imread(io.BytesIO(png), format="png")
    assert pixels.shape[0] > 100 and pixels.shape[1] > 100
    # the rows in the CLI's order, and a link that is the whole view
    assert [text.index(f"<tr><td>{url}</td>") for url in (A, B, X, BLOG)] == sorted(
        text.index(f"<tr><td>{url}</td>") for url in (A, B, X, BLOG)
    )
    assert "http://pagerank.proxy/usage?level=page&amp;ranking=pagerank&amp;n=100" in text
    # the other pages keep theirs: no image at all
    _, top_headers, _ = respond("GET", "/top", {}, ranks)
    assert top_headers["Content-Security-Policy"] == CSP and "img-src 'none'" in CSP


@pytest.mark.parametrize(
    "params, said",
    [
        ({"level": "domain"}, "level must be one of"),
        ({"since": "yesterday"}, "since must be a UTC date"),
        ({"since": "2027-01-01"}, "no visits since"),
        ({"ranking": "hostrank"}, "hostrank ranks hosts"),
        ({"ranking": "nosuch"}, "No ranking &#x27;nosuch&#x27;"),
    ],
)
def test_the_page_says_what_is_wrong_in_a_400(ranks, params, said):
    status, headers, body = _get(ranks, **params)
    assert status == 400 and said in body.decode()
