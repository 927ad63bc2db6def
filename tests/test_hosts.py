"""Referring hosts, whole sites as targets, link intersect and host rank, on three real sites on three ports.

Three small sites are written to disk, served on 127.0.0.1 on three ports,
crawled by wget (each crawl stays on its own site) and built into one store.
Every answer is checked against a count made independently from the HTML
files themselves (the standard library's HTML parser, not our extractor),
and the host ranking against networkx on the host graph counted the same way.
"""

from __future__ import annotations

import contextlib
import json
import random
from collections import Counter, defaultdict
from html.parser import HTMLParser
from pathlib import Path

import networkx as nx
import pytest
from click.testing import CliRunner
from sitecrawl import crawl, serve

from rankstore.cli import cli

from conftest import once

PAGES = {"a": 6, "b": 8, "c": 5}


def run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


class _Hrefs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.hrefs += [value for name, value in attrs if name == "href" and value]


def _write_sites(roots: dict[str, Path], urls: dict[str, str]) -> None:
    rng = random.Random(5)
    every = [(site, i) for site in PAGES for i in range(PAGES[site])]
    for site, count in PAGES.items():
        for i in range(count):
            links = [f"p{(i + 1) % count}.html"]  # a ring: wget reaches every page of the site
            for other, j in rng.sample(every, 5):
                if (other, j) == (site, i):
                    continue  # no link to itself
                links.append(f"{urls[other]}p{j}.html" if other != site else f"p{j}.html")
            body = "".join(f'<a href="{href}">link {k}</a> ' for k, href in enumerate(links))
            name = "index.html" if i == 0 else f"p{i}.html"
            (roots[site] / name).write_text(f"<!doctype html><title>{site} {i}</title><p>{body}</p>", "utf-8")
            if i == 0:
                (roots[site] / "p0.html").write_text(f"<!doctype html><title>{site} 0</title><p>{body}</p>", "utf-8")


def _links_from_files(roots: dict[str, Path], urls: dict[str, str]) -> set[tuple[str, str]]:
    """(source URL, target URL) of every link in the files, resolved by hand."""
    pairs = set()
    for site, root in roots.items():
        for path in root.glob("*.html"):
            parser = _Hrefs()
            parser.feed(path.read_text("utf-8"))
            source = urls[site] + ("" if path.name == "index.html" else path.name)
            for href in parser.hrefs:
                target = href if href.startswith("http") else urls[site] + href
                pairs.add((source, target))
    return pairs


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    """(store, each site's base URL, the links in the files), once for the run: test_analyst_pages reads
    it too, and no test writes to it."""

    def make(work):
        roots = {site: work / site for site in PAGES}
        for root in roots.values():
            root.mkdir()
        with contextlib.ExitStack() as stack:
            urls = {site: stack.enter_context(serve(str(root))) for site, root in roots.items()}
            _write_sites(roots, urls)
            warcs = []
            for site in PAGES:
                warcs.append(str(work / f"{site}.warc.gz"))
                crawl(urls[site], warcs[-1])
        store = str(work / "s.db")
        run("build", *warcs, "--store", store, "-q")
        run("rank", "--store", store, "-q")
        run("rank", "--level", "host", "--store", store, "-q")
        return store, urls, sorted(_links_from_files(roots, urls))

    store, urls, links = once(tmp_path_factory, "three-sites", make)
    return store, urls, {(source, target) for source, target in links}


def _host(url: str) -> str:
    return url.split("//", 1)[1].split("/", 1)[0]


def test_referring_hosts_of_a_whole_site(sites):
    store, urls, links = sites
    target = _host(urls["a"])
    rows = json.loads(
        run("backlinks", target, "--host", "--group-by", "host", "--format", "json", "-n", "100", "--store", store)
    )
    pages_by_host: dict[str, set[str]] = defaultdict(set)
    links_by_host: Counter = Counter()
    for source, dst in links:
        if _host(dst) == target and _host(source) != target:
            pages_by_host[_host(source)].add(source)
            links_by_host[_host(source)] += 1
    assert {row["host"]: row["pages"] for row in rows} == {h: len(p) for h, p in pages_by_host.items()}
    assert {row["host"]: row["links"] for row in rows} == dict(links_by_host)
    positions = [row["host_rank"] for row in rows]
    assert positions == sorted(positions)  # best host first
    for row in rows:
        assert row["best_url"] in pages_by_host[row["host"]]


def test_intersect_pages_and_hosts(sites):
    store, urls, links = sites
    one, two, mine = urls["a"] + "p1.html", urls["b"] + "p2.html", urls["c"] + "p3.html"

    def linking(target: str) -> set[str]:
        return {source for source, dst in links if dst == target}

    expected = (linking(one) & linking(two)) - linking(mine)
    rows = json.loads(run("intersect", one, two, "--not", mine, "--format", "json", "-n", "1000", "--store", store))
    assert {row["url"] for row in rows} == expected
    scores = [row["pagerank"] for row in rows]
    assert scores == sorted(scores, reverse=True)

    def hosts_linking(site: str) -> set[str]:
        return {_host(s) for s, d in links if _host(d) == _host(urls[site]) and _host(s) != _host(urls[site])}

    expected_hosts = (hosts_linking("a") & hosts_linking("b")) - hosts_linking("c")
    rows = json.loads(
        run(
            "intersect",
            _host(urls["a"]),
            _host(urls["b"]),
            "--host",
            "--group-by",
            "host",
            "--not",
            _host(urls["c"]),
            "--format",
            "json",
            "--store",
            store,
        )
    )
    assert {row["host"] for row in rows} == expected_hosts


def test_host_rank_agrees_with_networkx_on_the_host_graph(sites):
    store, urls, links = sites
    graph = nx.DiGraph()
    graph.add_nodes_from(_host(u) for u in urls.values())
    weights: Counter = Counter((_host(s), _host(d)) for s, d in links if _host(s) != _host(d))
    graph.add_weighted_edges_from((s, d, w) for (s, d), w in weights.items())
    expected = nx.pagerank(graph, weight="weight", tol=1e-14)
    rows = json.loads(run("top", "--ranking", "hostrank", "--format", "json", "--store", store))
    assert {row["host"]: pytest.approx(expected[row["host"]], abs=1e-9) for row in rows} == {
        row["host"]: row["host_pagerank"] for row in rows
    }
    shown = json.loads(run("show", urls["a"] + "p1.html", "--format", "json", "--store", store))[0]
    assert shown["host_pagerank"] == pytest.approx(expected[_host(urls["a"])], abs=1e-9)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_tables_hold_the_whole_store(sites, tmp_path, fmt):
    import csv
    import io
    import sqlite3

    import pyarrow.parquet as pq

    store, urls, links = sites

    def table(what: str) -> list[dict]:
        if fmt == "csv":
            return list(csv.DictReader(io.StringIO(run("export", "--what", what, "--store", store))))
        path = str(tmp_path / f"{what}.parquet")
        run("export", "--what", what, "--format", "parquet", "-o", path, "--store", store)
        return pq.read_table(path).to_pylist()

    with sqlite3.connect(store) as db:
        expected = set(db.execute("SELECT src, dst FROM links"))
        urls_by_id = dict(db.execute("SELECT id, url FROM pages"))
    exported = table("links")
    assert {(int(row["src"]), int(row["dst"])) for row in exported} == expected
    assert {(urls_by_id[s], urls_by_id[d]) for s, d in expected} == links
    pages = table("pages")
    assert {int(row["id"]): row["url"] for row in pages} == urls_by_id
    hosts = table("hosts")
    assert {row["name"] for row in hosts} == {_host(u) for u in urls.values()}
    assert sum(float(row["host_pagerank"]) for row in hosts) == pytest.approx(1.0)


def test_a_graph_of_hosts_is_its_own_host_graph(tmp_path):
    """Common Crawl's host graphs: every page is a host's root, so the host ranking is the page ranking."""
    edges = tmp_path / "hosts.tsv"
    edges.write_text(
        "http://a.example/\thttp://b.example/\nhttp://b.example/\thttp://c.example/\n"
        "http://c.example/\thttp://a.example/\nhttp://a.example/\thttp://c.example/\n"
        "http://d.example/\thttp://d.example/\n"
    )
    store = str(tmp_path / "s.db")
    run("build", str(edges), "--store", store, "-q")
    run("rank", "--store", store, "-q", "--tol", "1e-13")
    run("rank", "--level", "host", "--store", store, "-q", "--tol", "1e-13")
    pages = {
        row["url"].split("/")[2]: row["pagerank"]
        for row in json.loads(run("top", "-n", "10", "--format", "json", "--store", store))
    }
    hosts = {
        row["host"]: row["host_pagerank"]
        for row in json.loads(run("top", "--ranking", "hostrank", "-n", "10", "--format", "json", "--store", store))
    }
    graph = nx.DiGraph(
        [("a.example", "b.example"), ("b.example", "c.example"), ("c.example", "a.example"), ("a.example", "c.example")]
    )
    graph.add_node("d.example")  # its link to itself is left out of the host graph
    expected = nx.pagerank(graph, tol=1e-14)
    assert hosts == {host: pytest.approx(value, abs=1e-10) for host, value in expected.items()}
    assert set(pages) == set(hosts)
