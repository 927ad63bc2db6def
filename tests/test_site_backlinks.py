"""A whole site's backlinks: ``rankstore backlinks --site``, ``/backlinks?site=``, the panel's site link.

A site here is a registered domain of several hosts (a.example.com,
b.example.com, www.example.com), built from an edge list whose pages link
into it from other.org, blog.other.org, c.net and d.io, and link out to them.
Every answer is checked against a plain loop over the edge list (a site is a
host's last two labels here): the links into any host of the site from
outside it, grouped by referring host and referring site.  A store of a Common
Crawl domain graph (site links, no pages) lists the referring sites its edges
give, checked against the edge files themselves.
"""

from __future__ import annotations

import gzip
import html
import json
import os
import random
import re
from collections import defaultdict
from urllib.parse import urlsplit

import barkit
import pytest
from click.testing import CliRunner
from make_domain_graph import GraphSize, make_domain_graph

from proxy_addon.markup import panel
from proxy_addon.pages import CSP, respond
from proxy_addon.ranks import Ranks
from rankstore.cli import cli
from rankstore.store import Store

from conftest import edge_store, run

SITE = "example.com"
HOSTS = {
    "a.example.com": 4,
    "b.example.com": 4,
    "www.example.com": 4,
    "other.org": 4,
    "blog.other.org": 3,
    "c.net": 3,
    "d.io": 2,
}


def site_of(url: str) -> str:
    """The site of a URL in this graph: its host's last two labels (every site here has a two-label name)."""
    return ".".join(urlsplit(url).hostname.split(".")[-2:])


def host_of(url: str) -> str:
    return urlsplit(url).hostname


@pytest.fixture(scope="module")
def edges() -> list[tuple[str, str]]:
    pages = [f"http://{host}/{n}" for host, count in HOSTS.items() for n in range(count)]
    chosen = random.Random(49)
    found = {(src, dst) for src in pages for dst in chosen.sample(pages, 5) if src != dst}
    return sorted(found)


@pytest.fixture(scope="module")
def store_path(edges, tmp_path_factory) -> str:
    return edge_store(tmp_path_factory.mktemp("site-backlinks"), edges, ("--level", "host"), ("--level", "site"))


def into_site(edges, site: str = SITE) -> set[tuple[str, str]]:
    """The links into any host of ``site`` from outside it, by a plain loop over the edge list."""
    return {(src, dst) for src, dst in edges if site_of(dst) == site and site_of(src) != site}


def cli_json(*args: str):
    return json.loads(run(*args, "--format", "json"))


def scores(store_path: str, ranking: str = "pagerank", level: str = "page") -> dict[str, float]:
    """Every node's score in the newest version of ``ranking``, by URL (host, site name), read from the store."""
    table = {"page": ("pages", "url"), "host": ("hosts", "name"), "site": ("sites", "name")}[level]
    with Store(store_path, readonly=True) as store:
        _, values = store.rankings.scores_of(store.rankings.ranking(ranking).id)
        names = dict(store.db.execute(f"SELECT id, {table[1]} FROM {table[0]}"))
    return {names[i + 1]: float(value) for i, value in enumerate(values) if i + 1 in names}


# ------------------------------------------------------------------ rankstore backlinks --site


def test_a_sites_backlinks_are_the_links_into_its_hosts_from_other_sites(edges, store_path):
    expected = into_site(edges)
    assert {host_of(dst) for _, dst in expected} == {"a.example.com", "b.example.com", "www.example.com"}
    found = cli_json("backlinks", "--site", SITE, "-n", "0", "--store", store_path)
    rows = found["rows"]
    assert len(rows) == len(expected)
    assert {(row["url"], row["target"]) for row in rows} == expected
    # best PageRank first, each the linking page's own score
    pagerank = scores(store_path)
    assert [row["pagerank"] for row in rows] == [pagerank[row["url"]] for row in rows]
    assert [row["pagerank"] for row in rows] == sorted((row["pagerank"] for row in rows), reverse=True)
    # contribution d·PR(v)/C(v): the page graph's, each link of weight 1
    out_degree = defaultdict(int)
    for src, _ in edges:
        out_degree[src] += 1
    for row in rows:
        assert row["contribution"] == pytest.approx(0.85 * pagerank[row["url"]] / out_degree[row["url"]], rel=1e-9)
    # each link's share is of the whole site's PageRank; with the random jump and the site's own links the
    # shares add up to 1
    site_pagerank = sum(score for url, score in pagerank.items() if site_of(url) == SITE)
    for row in rows:
        assert row["share"] == pytest.approx(row["contribution"] / site_pagerank, rel=1e-9)
    assert sum(row["share"] for row in rows) + sum(found["shares"].values()) == pytest.approx(1.0, abs=1e-9)
    # a host given is taken as its site; the CSV has the same rows
    assert cli_json("backlinks", "--site", "www.example.com", "-n", "0", "--store", store_path)["rows"] == rows
    csv_lines = run("backlinks", "--site", SITE, "-n", "0", "--format", "csv", "--store", store_path).splitlines()
    assert len(csv_lines) == len(expected) + 1 and csv_lines[0].startswith("rank,pagerank,")


def test_grouped_by_referring_host_and_site_the_counts_are_the_loops(edges, store_path):
    expected = into_site(edges)
    by_host: dict[str, list[tuple[str, str]]] = defaultdict(list)
    by_site: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for src, dst in expected:
        by_host[host_of(src)].append((src, dst))
        by_site[site_of(src)].append((src, dst))
    hosts = cli_json("backlinks", "--site", SITE, "--group-by", "host", "-n", "0", "--store", store_path)
    assert {row["host"]: (row["pages"], row["links"]) for row in hosts} == {
        host: (len({src for src, _ in links}), len(links)) for host, links in by_host.items()
    }
    hostrank = scores(store_path, "hostrank", "host")
    assert [row["host_pagerank"] for row in hosts] == sorted(hostrank[name] for name in by_host)[::-1]
    sites = cli_json("backlinks", "--site", SITE, "--group-by", "site", "-n", "0", "--store", store_path)
    assert {row["site"]: (row["hosts"], row["pages"], row["links"]) for row in sites} == {
        site: (len({host_of(src) for src, _ in links}), len({src for src, _ in links}), len(links))
        for site, links in by_site.items()
    }
    siterank = scores(store_path, "siterank", "site")
    assert [row["site_pagerank"] for row in sites] == sorted((siterank[name] for name in by_site), reverse=True)
    assert [row["site_rank"] for row in sites] == sorted(row["site_rank"] for row in sites)
    # what the sites pass on adds up to what the links listed page by page pass on
    pages = cli_json("backlinks", "--site", SITE, "-n", "0", "--store", store_path)["rows"]
    assert sum(row["contribution"] for row in sites) == pytest.approx(sum(row["contribution"] for row in pages))
    # each group's contribution is the same whether the groups are sorted by it (every group's summed) or by
    # rank (the shown groups' alone), a page at a time too; and it is the sum of its linking pages' contributions
    for group in ("host", "site"):
        by_rank = cli_json("backlinks", "--site", SITE, "--group-by", group, "-n", "0", "--store", store_path)
        by_contribution = cli_json(
            "backlinks", "--site", SITE, "--group-by", group, "--sort", "contribution", "-n", "0", "--store", store_path
        )
        assert {row[group]: row["contribution"] for row in by_rank} == {
            row[group]: row["contribution"] for row in by_contribution
        }
        summed: dict[str, float] = defaultdict(float)
        for row in pages:
            summed[(host_of if group == "host" else site_of)(row["url"])] += row["contribution"]
        assert {row[group]: row["contribution"] for row in by_rank} == pytest.approx(summed, rel=1e-12)
        for page in range(0, len(by_rank), 3):
            shown = cli_json(
                "backlinks", "--site", SITE, "--group-by", group, "-n", "3", "--offset", str(page),
                "--store", store_path,
            )  # fmt: skip
            assert shown == by_rank[page : page + 3]
    # one page's referring sites too
    target = "http://a.example.com/0"
    linking = {site_of(src) for src, dst in edges if dst == target}
    one = cli_json("backlinks", target, "--group-by", "site", "-n", "0", "--store", store_path)
    assert {row["site"] for row in one} == linking


def test_intersect_takes_sites(edges, store_path):
    targets = (SITE, "c.net")
    linking_pages = [{src for src, _ in into_site(edges, site)} for site in targets]
    mine = {src for src, _ in into_site(edges, "d.io")}
    rows = cli_json("intersect", *targets, "--site", "-n", "0", "--store", store_path)
    assert {row["url"] for row in rows} == linking_pages[0] & linking_pages[1]
    rows = cli_json("intersect", *targets, "--site", "--not", "d.io", "-n", "0", "--store", store_path)
    assert {row["url"] for row in rows} == (linking_pages[0] & linking_pages[1]) - mine
    linking_sites = [{site_of(src) for src in found} for found in linking_pages]
    rows = cli_json("intersect", *targets, "--site", "--group-by", "site", "-n", "0", "--store", store_path)
    assert {row["site"] for row in rows} == linking_sites[0] & linking_sites[1]
    assert [row["site_rank"] for row in rows] == sorted(row["site_rank"] for row in rows)
    hosts = cli_json("intersect", *targets, "--site", "--group-by", "host", "-n", "0", "--store", store_path)
    assert {row["host"] for row in hosts} == {host_of(src) for src in linking_pages[0]} & {
        host_of(src) for src in linking_pages[1]
    }


def test_cli_errors_are_one_line(store_path):
    runner = CliRunner()
    unknown = runner.invoke(cli, ["backlinks", "--site", "no-such-site.example", "--store", store_path])
    assert unknown.exit_code == 1 and "Traceback" not in unknown.output
    assert unknown.output.strip().splitlines() == [
        "Error: no-such-site.example: not in the store (a site is a registered domain, as `top --ranking siterank` "
        "names it)"
    ]
    # the same exit status as an unknown host's
    assert runner.invoke(cli, ["backlinks", "--host", "no-such-host.example", "--store", store_path]).exit_code == 1
    both = runner.invoke(cli, ["backlinks", SITE, "--site", "--host", "--store", store_path])
    assert both.exit_code == 2 and "Traceback" not in both.output
    assert [line for line in both.output.splitlines() if line.startswith("Error")] == [
        "Error: --host and --site: TARGET is one host or one site, not both"
    ]
    lost = runner.invoke(cli, ["backlinks", SITE, "--site", "--lost", "--store", store_path])
    assert lost.exit_code == 2 and "--lost lists pages that linked to one URL" in lost.output
    for command in ("backlinks", "intersect"):
        shown = runner.invoke(cli, [command, "--help"])
        examples = shown.output[shown.output.rindex("Examples:") : shown.output.index("Options:")]
        assert any("--site" in line for line in examples.strip().splitlines()[1:]), examples


# ------------------------------------------------------------------ a domain graph: its site links


@pytest.fixture(scope="module")
def domain_graph(tmp_path_factory):
    folder = tmp_path_factory.mktemp("site-backlinks-domains")
    make_domain_graph(GraphSize(400, 3000), str(folder / "graph"), parts=1, seed=49)
    path = str(folder / "sites.db")
    run("build", str(folder / "graph"), "--store", path, "-q")
    run("rank", "--level", "site", "--store", path, "-q")
    return folder / "graph", path


def _graph_file(folder, kind: str) -> list[list[str]]:
    lines = []
    for name in sorted(os.listdir(folder / kind)):
        with gzip.open(folder / kind / name, "rt", encoding="utf-8") as part:
            lines += [line.rstrip("\n").split("\t") for line in part if line.strip()]
    return lines


def test_a_domain_graphs_site_lists_the_sites_its_edges_give(domain_graph):
    folder, path = domain_graph
    names = {row[0]: ".".join(reversed(row[1].split("."))) for row in _graph_file(folder, "vertices")}
    linking: dict[str, set[str]] = defaultdict(set)
    for src, dst in _graph_file(folder, "edges"):
        if src != dst:
            linking[names[dst]].add(names[src])
    best = cli_json("top", "--ranking", "siterank", "-n", "1", "--store", path)[0]["site"]
    small = min(
        (name for name, found in linking.items() if len(found) >= 2), key=lambda name: (len(linking[name]), name)
    )
    siterank = scores(path, "siterank", "site")
    for site in (best, small):
        rows = cli_json("backlinks", "--site", site, "-n", "0", "--store", path)
        assert len(rows) == len(linking[site]) and {row["site"] for row in rows} == linking[site]
        assert [row["site_pagerank"] for row in rows] == sorted((siterank[n] for n in linking[site]), reverse=True)
    refused = CliRunner().invoke(cli, ["backlinks", "--site", best, "--since", "1", "--store", path])
    assert refused.exit_code == 1 and refused.output.startswith("Error: the store holds no pages")
    two = cli_json("backlinks", "--site", best, "-n", "2", "--offset", "1", "--store", path)
    assert [row["site"] for row in two] == [row["site"] for row in rows_of(path, best)[1:3]]
    # the sites linking to both of two sites, from the edges
    rows = cli_json("intersect", best, small, "--site", "--group-by", "site", "-n", "0", "--store", path)
    assert {row["site"] for row in rows} == linking[best] & linking[small]


def rows_of(path: str, site: str) -> list[dict]:
    return cli_json("backlinks", "--site", site, "-n", "0", "--store", path)


# ------------------------------------------------------------------ the own page and the panel


def get(ranks: Ranks, **params: str) -> tuple[int, str]:
    status, headers, body = respond("GET", "/backlinks", {key: [value] for key, value in params.items()}, ranks)
    if headers["Content-Type"].startswith("text/html"):
        assert headers["Content-Security-Policy"] == CSP and "<script" not in body.decode().lower()
    return status, body.decode()


def test_the_own_page_gives_the_clis_rows(edges, store_path):
    ranks = Ranks(store_path)
    try:
        status, body = get(ranks, site=SITE)
        assert status == 200 and "the whole site <b>example.com</b>" in body
        cli_rows = cli_json("backlinks", "--site", SITE, "--store", store_path)["rows"]
        shown = [html.unescape(found) for found in re.findall(r'<tr [^>]*data-url="([^"]*)"', body)]
        assert shown == [row["url"] for row in cli_rows] and set(shown) == {src for src, _ in into_site(edges)}
        status, csv_text = get(ranks, site=SITE, format="csv")
        assert status == 200
        assert csv_text == run("backlinks", "--site", SITE, "--format", "csv", "-n", "0", "--store", store_path)
        status, body = get(ranks, site=SITE, group="site")
        sites = cli_json("backlinks", "--site", SITE, "--group-by", "site", "--store", store_path)
        assert status == 200 and "Referring sites" in body
        assert [html.unescape(s) for s in re.findall(r'<tr data-site="([^"]*)"', body)] == [r["site"] for r in sites]
        for group in ("site", "host"):
            status, text = get(ranks, site=SITE, group=group, format="csv")
            cli_text = run("backlinks", "--site", SITE, "--group-by", group, "--format", "csv", "--store", store_path)
            assert status == 200 and text == cli_text
        assert get(ranks, site="no-such-site.example")[0] == 404
        assert get(ranks, site=SITE, url="http://a.example.com/0")[0] == 400
        assert get(ranks, site=SITE, lost="1")[0] == 400
    finally:
        ranks.close()


def test_the_own_page_of_a_domain_graphs_site(domain_graph):
    _, path = domain_graph
    ranks = Ranks(path)
    try:
        best = cli_json("top", "--ranking", "siterank", "-n", "1", "--store", path)[0]["site"]
        status, text = get(ranks, site=best, format="csv")
        assert status == 200 and text == run("backlinks", "--site", best, "--format", "csv", "-n", "0", "--store", path)
        assert get(ranks, site=best, since="1")[0] == 400
        status, body = get(ranks, site=best, ranking="pagerank")  # the link the panel gives: the proxy's ranking
        assert status == 200
        assert [html.unescape(s) for s in re.findall(r'<tr data-site="([^"]*)"', body)] == [
            row["site"] for row in rows_of(path, best)[:50]
        ]
        # the panel of a page of the site links there
        sections = dict(barkit.panel_sections(panel(ranks.panel(f"https://www.{best}/page.html"))))
        assert f"http://pagerank.proxy/backlinks?site={best}&amp;group=site&amp;ranking=pagerank" in sections["site"]
    finally:
        ranks.close()


def test_the_panels_site_section_links_to_the_sites_view(store_path):
    ranks = Ranks(store_path)
    try:
        data = ranks.panel("http://a.example.com/not-in-the-store")
        markup = panel(data)
        sections = dict(barkit.panel_sections(markup))
        link = "http://pagerank.proxy/backlinks?site=example.com&group=site&ranking=pagerank"
        assert f'<a href="{html.escape(link)}">Backlinks of the whole site example.com</a>' in sections["site"]
        assert "host=1" not in sections["site"]
        # still a closed shadow root of the one size every panel of these slots takes
        assert markup.startswith('<aside data-pagerank-panel><template shadowrootmode="closed">')
        assert len(markup) == len(panel(ranks.panel("http://a.example.com/0")))
        # the link answers with the referring sites
        query = dict(part.split("=") for part in link.split("?")[1].split("&"))
        status, body = get(ranks, **query)
        assert status == 200 and "Referring sites" in body
    finally:
        ranks.close()
