"""`rankstore rank --source-visits`: E on the pages (hosts, sites) you browsed, weighted by views (issue 35,
point 2; the paper's section 6), checked against networkx's personalised PageRank on a tiny record."""

from __future__ import annotations

import networkx as nx
import pytest
from recordkit import append, link, make_record, page

from rankstore.ranking import load_level_graph
from rankstore.store import Store

from conftest import invoke, run

A, X, BLOG, B, Z = (
    "http://www.a.example/",
    "http://www.a.example/x",
    "http://blog.a.example/",
    "http://b.example/",
    "http://b.example/z",
)
LINKS = {A: [X, BLOG, B], X: [A], BLOG: [B, X], B: [A, Z]}
# each line of the record is a view: day 1, then day 2
DAY_1 = [
    (A, "2026-11-20T10:00:00Z"),
    (X, "2026-11-20T10:01:00Z"),
    (BLOG, "2026-11-20T10:02:00Z"),
    (B, "2026-11-20T10:03:00Z"),
]
DAY_2 = [(A, "2026-11-22T09:00:00Z"), (B, "2026-11-22T09:01:00Z"), (B, "2026-11-22T09:02:00Z")]
VIEWS = {A: 2, X: 1, BLOG: 1, B: 3}
VIEWS_DAY_2 = {A: 1, B: 2}


def _record(folder: str) -> str:
    record = make_record(folder)
    for n, (url, at) in enumerate(DAY_1 + DAY_2):
        append(record, "20261120T100000Z", 1, page(url, at, [link(dst) for dst in LINKS[url]], title=f"T{n}"))
    return record


@pytest.fixture(scope="module")
def browsed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("visits")
    store = str(folder / "s.db")
    run("build", _record(str(folder / "record")), "--store", store, "-q")
    return store


def _scores(store_path: str, name: str) -> dict[str, float]:
    """The ranking's scores by URL (page level) or by host or site name."""
    with Store(store_path, readonly=True) as store:
        ranking = store.rankings.ranking(name)
        ids, scores = store.rankings.scores_of(ranking.id)
        names = {
            "page": store.pages.urls_of,
            "host": store.hosts.host_names,
            "site": store.sites.site_names,
        }[ranking.level]([int(i) for i in ids])
        return {names[int(i)]: float(s) for i, s in zip(ids, scores) if int(i) in names}


def _networkx(graph: nx.DiGraph, views: dict[str, int]) -> dict[str, float]:
    weights = {node: float(views.get(node, 0)) for node in graph}
    # the source rule at sinks: a page without out-links jumps by E, as the ranking's default with an E
    return nx.pagerank(graph, 0.85, personalization=weights, dangling=weights, tol=1e-15, max_iter=10000)


def _page_graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from([A, X, BLOG, B, Z])
    graph.add_edges_from((src, dst) for src, dsts in LINKS.items() for dst in dsts)
    return graph


def _level_graph(store_path: str, level: str) -> nx.DiGraph:
    """The host (site) graph the library ranks, as networkx's: its nodes named, its links weighted."""
    with Store(store_path, readonly=True) as store:
        loaded = load_level_graph(store, level)
        ids = [int(i) for i in loaded.page_ids]
        names = (store.hosts.host_names if level == "host" else store.sites.site_names)(ids)
    g = loaded.graph
    graph = nx.DiGraph()
    graph.add_nodes_from(names[i] for i in ids)
    for row in range(g.n):
        for at in range(int(g.indptr[row]), int(g.indptr[row + 1])):
            weight = 1.0 if g.weights is None else float(g.weights[at])
            src, dst = names[ids[int(g.indices[at])]], names[ids[row]]
            graph.add_edge(src, dst, weight=graph.get_edge_data(src, dst, {"weight": 0.0})["weight"] + weight)
    return graph


def _close(got: dict[str, float], expected: dict[str, float]) -> None:
    assert set(got) == set(expected)
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-9), key


def test_E_on_the_pages_visited_weighted_by_views_is_networkx_personalised_pagerank(browsed):
    result = invoke("rank", "--store", browsed, "--source-visits", "-q")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("ranked visits v1")
    expected = _networkx(_page_graph(), VIEWS)
    _close(_scores(browsed, "visits"), expected)
    # E itself as stored: the views, normalised
    with Store(browsed, readonly=True) as store:
        ranking = store.rankings.ranking("visits")
        ids, weights = store.rankings.teleport_of(ranking.id)
        urls = store.pages.urls_of([int(i) for i in ids])
        assert ranking.params["kind"] == "visits"
    assert {urls[int(i)]: float(w) for i, w in zip(ids, weights)} == pytest.approx({u: v / 7 for u, v in VIEWS.items()})
    # and not the uniform ranking: the views moved it
    run("rank", "--store", browsed, "-q")
    assert _scores(browsed, "pagerank")[B] != pytest.approx(expected[B], abs=1e-6)


def test_since_counts_only_the_views_from_that_date_on(browsed):
    result = invoke("rank", "--store", browsed, "--source-visits", "--since", "2026-11-21", "--name", "recent", "-q")
    assert result.exit_code == 0, result.output
    _close(_scores(browsed, "recent"), _networkx(_page_graph(), VIEWS_DAY_2))


def test_host_level_puts_E_on_hosts_by_their_pages_views(browsed):
    result = invoke("rank", "--store", browsed, "--source-visits", "--level", "host", "-q")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("ranked hostvisits v1")
    views = {"www.a.example": 3, "blog.a.example": 1, "b.example": 3}
    _close(_scores(browsed, "hostvisits"), _networkx(_level_graph(browsed, "host"), views))


def test_site_level_puts_E_on_sites_by_their_hosts_views(browsed):
    result = invoke("rank", "--store", browsed, "--source-visits", "--level", "site", "--since", "2026-11-22", "-q")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("ranked sitevisits v1")
    got = _scores(browsed, "sitevisits")
    assert set(got) == {"a.example", "b.example"}
    _close(got, _networkx(_level_graph(browsed, "site"), {"a.example": 1, "b.example": 2}))


def test_no_visits_says_how_to_record_them(tmp_path):
    store = str(tmp_path / "s.db")
    record = make_record(str(tmp_path / "r"))
    run("build", record, "--store", store, "-q")  # an empty record: a store, no page, no visit
    edges = tmp_path / "edges.tsv"
    edges.write_text("http://p.example/\thttp://q.example/\n")
    run("build", str(edges), "--store", store, "-q")
    result = invoke("rank", "--store", store, "--source-visits")
    assert result.exit_code == 1
    # said before the graph is read: the one line
    assert result.output == (
        "Error: the store has no visits: record your browsing with `pagerank-proxy --record DIR`, "
        "then `rankstore build DIR`\n"
    )


def test_since_after_every_visit_and_bad_dates_are_one_line_errors(browsed):
    result = invoke("rank", "--store", browsed, "--source-visits", "--since", "2026-12-01", "-q")
    assert result.exit_code == 1
    assert result.output.startswith("Error: no visits since 2026-12-01T00:00:00Z")
    assert result.output.count("\n") == 1
    bad = invoke("rank", "--store", browsed, "--source-visits", "--since", "yesterday")
    assert bad.exit_code == 2 and "'yesterday' is not a date" in bad.output
    alone = invoke("rank", "--store", browsed, "--since", "2026-11-01")
    assert alone.exit_code == 2 and "--since is for --source-visits" in alone.output
    both = invoke("rank", "--store", browsed, "--source-visits", "--source", A)
    assert both.exit_code == 2 and "choose one of" in both.output


async def test_the_proxy_shows_the_visits_ranking_instead_of_the_global_one(browsed):
    """``pagerank-proxy --ranking visits`` (the addon's ``pagerank_ranking``): the bars carry its scores."""
    from barkit import bar_values, outside_panel
    from test_addon import make_flow, run_hooks, running_addon

    run("rank", "--store", browsed, "--source-visits", "-q")
    run("rank", "--store", browsed, "-q")
    expected, plain = _scores(browsed, "visits"), _scores(browsed, "pagerank")
    body = f"<html><body><a href='{B}'>b</a><a href='{Z}'>z</a></body></html>".encode()
    shown = {}
    for name in ("visits", "pagerank"):
        async with running_addon(browsed, pagerank_ranking=name, pagerank_workers=0) as addon:  # in its loop
            flow = make_flow(A, body)
            await run_hooks(addon, flow)
        values = bar_values(outside_panel(flow.response.text))
        shown[name] = [float(value) for value in values]  # the bars of B's link and Z's
    assert shown["visits"] == [expected[B], expected[Z]]
    assert shown["pagerank"] == [plain[B], plain[Z]] != shown["visits"]
