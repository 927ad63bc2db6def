"""The site level (issue 32, point 1): page crawls and Common Crawl's host graphs fold into sites, Common
Crawl's domain graphs load as sites, and ``rank --level site`` ranks them all as one named ranking.

Each site graph is counted here by hand from the input files (a host's site written out, not asked of
:func:`rankstore.urls.site_of`) and each ranking checked against networkx's PageRank of that graph.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from collections import Counter

import networkx as nx
import numpy as np
import pytest

from proxy_addon.pages import respond
from proxy_addon.ranks import Ranks
from rankstore.store import Store
from rankstore.urls import _sites, site_of, sites_of

from conftest import invoke, run

EX, UG, OG, IP = "example.co.uk", "user.github.io", "other.github.io", "127.0.0.1:8701"
# (source, target) page links of a small crawl: two hosts of example.co.uk, two of user.github.io (the
# Public Suffix List's private section makes each github.io user a site), an IP host, other.github.io
PAGE_LINKS = [
    ("https://www.example.co.uk/", "https://shop.example.co.uk/"),  # within a site: left out
    ("https://www.example.co.uk/", "https://user.github.io/"),
    ("https://www.example.co.uk/a", "https://blog.user.github.io/p"),
    ("https://shop.example.co.uk/b", "https://user.github.io/"),
    ("https://user.github.io/", "https://www.example.co.uk/"),
    ("https://blog.user.github.io/p", "https://user.github.io/"),  # within a site
    ("https://blog.user.github.io/p", "http://127.0.0.1:8701/"),
    ("http://127.0.0.1:8701/", "https://www.example.co.uk/a"),
    ("http://127.0.0.1:8701/", "https://shop.example.co.uk/b"),
    ("https://other.github.io/", "https://user.github.io/"),
]
SITE_OF_HOST = {  # written out: the test does not ask the code under test
    "www.example.co.uk": EX,
    "shop.example.co.uk": EX,
    "user.github.io": UG,
    "blog.user.github.io": UG,
    "127.0.0.1:8701": IP,
    "other.github.io": OG,
}


def _site(url: str) -> str:
    return SITE_OF_HOST[url.split("/")[2]]


def _folded(links) -> Counter:
    """Site pairs weighted by the page links between them, links within a site left out."""
    return Counter((_site(s), _site(d)) for s, d in links if _site(s) != _site(d))


def _pagerank(weights: dict[tuple[str, str], float], nodes) -> dict[str, float]:
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    graph.add_weighted_edges_from((s, d, w) for (s, d), w in weights.items())
    return nx.pagerank(graph, weight="weight", tol=1e-14, max_iter=10_000)


def _graph_of(store: str) -> dict[tuple[str, str], float]:
    """The store's site graph as {(source site, target site): weight}."""
    with Store(store, readonly=True) as opened:
        graph = opened.sites.site_graph()
        names = opened.sites.site_names(range(1, graph.n + 1))
    out = {}
    for target in range(graph.n):
        for at in range(graph.indptr[target], graph.indptr[target + 1]):
            weight = float(graph.weights[at]) if graph.weights is not None else 1.0
            out[(names[int(graph.indices[at]) + 1], names[target + 1])] = weight
    return out


def _ranked(store: str, name: str = "siterank") -> dict[str, float]:
    rows = json.loads(run("top", "--ranking", name, "-n", "0", "--format", "json", "--store", store))
    return {row["site"]: row["site_pagerank"] for row in rows}


def _edge_list(path, links) -> str:
    path.write_text("".join(f"{s}\t{d}\n" for s, d in links))
    return str(path)


@pytest.fixture(scope="module")
def crawl(tmp_path_factory) -> str:
    """A store of the page links above, ranked by page (the proxy's own ranking) and by site."""
    work = tmp_path_factory.mktemp("site-rank")
    store = str(work / "s.db")
    run("build", _edge_list(work / "links.tsv", PAGE_LINKS), "--store", store, "-q")
    run("rank", "--store", store, "-q")
    run("rank", "--level", "site", "--store", store, "-q", "--tol", "1e-13")
    return store


def test_page_links_fold_into_the_site_graph_weighted_by_page_links(crawl):
    expected = _folded(PAGE_LINKS)
    assert expected == {(EX, UG): 3, (UG, EX): 1, (UG, IP): 1, (IP, EX): 2, (OG, UG): 1}
    assert _graph_of(crawl) == expected


def test_site_rank_is_networkx_pagerank_of_the_folded_graph(crawl):
    expected = _pagerank(_folded(PAGE_LINKS), [EX, UG, OG, IP])
    assert _ranked(crawl) == {site: pytest.approx(score, abs=1e-10) for site, score in expected.items()}


def test_rank_level_site_is_a_named_versioned_ranking(crawl, tmp_path):
    store = str(tmp_path / "s.db")
    run("build", _edge_list(tmp_path / "links.tsv", PAGE_LINKS), "--store", store, "-q")
    first = run("rank", "--level", "site", "--store", store, "-q")
    assert first.startswith("ranked siterank v1: 4 sites in ")
    assert run("rank", "--level", "site", "--store", store, "-q").startswith("siterank v1 unchanged")
    assert run("rank", "--level", "site", "--force", "--store", store, "-q").startswith("ranked siterank v2: 4 sites")
    # a name keeps its level, both ways
    run("rank", "--store", store, "-q")
    refused = invoke("rank", "--level", "site", "--name", "pagerank", "--store", store, "-q")
    assert refused.exit_code == 1 and "Error: pagerank ranks pages: give another --name" in refused.output
    refused = invoke("rank", "--name", "siterank", "--store", store, "-q")
    assert refused.exit_code == 1 and "Error: siterank ranks sites: give another --name" in refused.output
    refused = invoke("rank", "--level", "site", "--source", "https://user.github.io/", "--store", store)
    assert refused.exit_code == 2 and "--level site ranks sites with a uniform rank source" in refused.output
    info = run("info", "--store", store)
    assert "sites:    4 numbered, 4 ranked by siterank v2\n" in info and ": 4 sites of build 1" in info
    assert json.loads(run("info", "--format", "json", "--store", store))["sites"] == 4


def test_top_show_and_export_of_a_site_ranking_list_sites(crawl):
    rows = json.loads(run("top", "--ranking", "siterank", "--format", "json", "--store", crawl))
    assert [row["site_rank"] for row in rows] == [1, 2, 3, 4]
    assert {row["site"]: row["hosts"] for row in rows} == {EX: 2, UG: 2, IP: 1, OG: 1}
    table = run("top", "--ranking", "siterank", "--store", crawl).splitlines()
    assert table[0].split()[:2] == ["site_rank", "site_pagerank"] and table[1].endswith(rows[0]["site"])
    # a URL is answered by its site, named, whether or not the store holds the page
    asked = ["https://deep.shop.example.co.uk/never-crawled", "https://user.github.io/"]
    result = invoke("show", *asked, "--ranking", "siterank", "--format", "json", "--store", crawl)
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    by_site = {row["site"]: row for row in rows}
    assert [(row["url"], row["site"], row["site_pagerank"]) for row in shown] == [
        (asked[0], EX, by_site[EX]["site_pagerank"]),
        (asked[1], UG, by_site[UG]["site_pagerank"]),
    ]
    assert "note: siterank ranks sites: each URL is answered by its site's rank" in result.stderr
    missing = invoke("show", "https://nowhere.example.org/", "--ranking", "siterank", "--store", crawl)
    assert missing.exit_code == 1 and "not in the store: https://nowhere.example.org/" in missing.stderr
    exported = list(csv.DictReader(io.StringIO(run("export", "--ranking", "siterank", "--store", crawl))))
    assert list(exported[0]) == [
        "site",
        "site_pagerank",
        "algorithm1",
        "percentile",
        "toolbar",
        "site_rank",
        "hosts",
        "inlinks",
    ]
    assert [(row["site"], float(row["site_pagerank"])) for row in exported] == [
        (row["site"], pytest.approx(row["site_pagerank"], rel=1e-15)) for row in rows
    ]
    table = list(csv.DictReader(io.StringIO(run("export", "--what", "sites", "--store", crawl))))
    assert [(row["name"], int(row["hosts"]), int(row["site_rank"])) for row in table] == [
        (site, by_site[site]["hosts"], by_site[site]["site_rank"]) for site in (EX, UG, IP, OG)
    ]


def test_page_commands_refuse_a_site_ranking_in_one_line(crawl):
    result = invoke("search", "x", "--ranking", "siterank", "--store", crawl)
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "Error: siterank ranks sites, not pages: use --ranking pagerank, "
        "or `rankstore top --ranking siterank` for its sites"
    ]


def test_own_pages_read_a_site_ranking_at_its_level(crawl):
    ranks = Ranks(crawl)
    try:

        def get(path, **params):
            status, _, body = respond("GET", path, {key: [value] for key, value in params.items()}, ranks)
            return status, body.decode()

        status, body = get("/top", ranking="siterank")
        assert status == 200 and "Top 100 sites by siterank" in body
        top = json.loads(run("top", "--ranking", "siterank", "--format", "json", "--store", crawl))
        assert re.findall(r'<tr [^>]*data-site="([^"]*)"', body) == [row["site"] for row in top]
        status, body = get("/page", url="https://deep.shop.example.co.uk/never-crawled", ranking="siterank")
        position = next(row["site_rank"] for row in top if row["site"] == EX)
        assert status == 200 and f"Site <b>{EX}</b>" in body and f"site rank #{position} of 4 sites" in body
    finally:
        ranks.close()


# ------------------------------------------------------------------ Common Crawl's graphs


def _gz(path, text: str) -> str:
    path.write_bytes(gzip.compress(text.encode(), mtime=0))
    return str(path)


def _cc_graph(folder, vertices: list[str], edges: list[tuple[int, int]], parts: int = 2) -> list[str]:
    """A Common Crawl graph as published: vertices and edges in gzipped parts, each listed in a
    ``*.paths.gz`` whose lines name the parts by their place in Common Crawl's bucket."""
    folder.mkdir()
    out = []
    for kind, lines in (("vertices", vertices), ("edges", [f"{s}\t{d}" for s, d in edges])):
        (folder / kind).mkdir()
        size = -(-len(lines) // parts)
        names = []
        for part in range(parts):
            name = f"part-{part:05d}.gz"
            _gz(folder / kind / name, "".join(f"{line}\n" for line in lines[part * size : (part + 1) * size]))
            names.append(f"projects/hyperlinkgraph/cc-main-2024/domain/{kind}/{name}")
        out.append(_gz(folder / f"{kind}.paths.gz", "".join(f"{kind}/{name.rsplit('/', 1)[1]}\n" for name in names)))
    return out


# A domain graph: vertices `id<TAB>reversed.domain<TAB>number of hosts`, in reversed-name order as Common Crawl
# numbers them; edges by source, then target.
DOMAINS = ["com.example", "io.github.user", "org.wikipedia", "uk.co.bbc", "uk.co.example"]
DOMAIN_VERTICES = [f"{i}\t{name}\t{i + 2}" for i, name in enumerate(DOMAINS)]
DOMAIN_EDGES = [(0, 2), (0, 3), (1, 0), (2, 0), (2, 3), (3, 0), (3, 2), (4, 1)]


def _domain(index: int) -> str:
    return ".".join(DOMAINS[index].split(".")[::-1])


def test_a_domain_graph_loads_as_sites_and_is_ranked_as_its_graph(tmp_path):
    store = str(tmp_path / "s.db")
    run("build", *_cc_graph(tmp_path / "domain", DOMAIN_VERTICES, DOMAIN_EDGES), "--store", store, "-q")
    info = json.loads(run("info", "--format", "json", "--store", store))
    assert (info["pages"], info["sites"], info["site_links"]) == (0, 5, len(DOMAIN_EDGES))  # sites, no root page
    assert "sites:    5 numbered (8 site links from a domain graph)" in run("info", "--store", store)
    expected = {(_domain(s), _domain(d)): 1.0 for s, d in DOMAIN_EDGES}
    assert _graph_of(store) == expected
    run("rank", "--level", "site", "--store", store, "-q", "--tol", "1e-13")
    reference = _pagerank(expected, [_domain(i) for i in range(len(DOMAINS))])
    assert _ranked(store) == {site: pytest.approx(score, abs=1e-10) for site, score in reference.items()}
    shown = json.loads(
        run("show", "https://www.bbc.co.uk/news", "--ranking", "siterank", "--format", "json", "--store", store)
    )
    assert [(row["site"], row["site_pagerank"]) for row in shown] == [("bbc.co.uk", _ranked(store)["bbc.co.uk"])]
    # loading it again replaces its links: the same graph, not twice its weights; a new build ranks anew
    run("build", *_cc_graph(tmp_path / "again", DOMAIN_VERTICES, DOMAIN_EDGES), "--store", store, "-q")
    assert _graph_of(store) == expected
    assert run("rank", "--level", "site", "--store", store, "-q").startswith("ranked siterank v2: 5 sites")


def test_page_crawls_and_a_domain_graph_side_by_side_rank_as_their_union(tmp_path):
    """A domain-graph edge counts as one page link; a pair in both is their sum."""
    store = str(tmp_path / "s.db")
    run("build", _edge_list(tmp_path / "links.tsv", PAGE_LINKS), "--store", store, "-q")
    domain_vertices = ["0\tio.github.user\t3", "1\tuk.co.example\t2", "2\tuk.co.bbc\t4"]
    domain_edges = [(0, 1), (1, 0), (1, 2), (2, 1)]
    run("build", *_cc_graph(tmp_path / "domain", domain_vertices, domain_edges), "--store", store, "-q")
    expected = Counter(_folded(PAGE_LINKS))
    for s, d in domain_edges:
        expected[
            (
                ".".join(domain_vertices[s].split("\t")[1].split(".")[::-1]),
                ".".join(domain_vertices[d].split("\t")[1].split(".")[::-1]),
            )
        ] += 1
    assert _graph_of(store) == dict(expected)
    assert expected[(UG, EX)] == 2 and expected[(EX, UG)] == 4  # in both: summed
    run("rank", "--level", "site", "--store", store, "-q", "--tol", "1e-13")
    reference = _pagerank(dict(expected), [EX, UG, OG, IP, "bbc.co.uk"])
    assert _ranked(store) == {site: pytest.approx(score, abs=1e-10) for site, score in reference.items()}
    run("rank", "--store", store, "-q")  # the page ranking stands beside it, over the crawl's pages alone
    assert len(json.loads(run("top", "-n", "0", "--format", "json", "--store", store))) == 8


def test_a_common_crawl_host_graph_folds_into_sites_as_common_crawl_folds_hosts_into_domains(tmp_path):
    """Common Crawl's HostToDomainGraph keeps each pair of domains once (its edges go through `sort -u`):
    three host links from example.com to wikipedia.org weigh what one to bbc.co.uk does."""
    hosts = ["com.example", "com.example.blog", "org.wikipedia.de", "org.wikipedia.en", "uk.co.bbc.news"]
    vertices = [f"{i}\t{name}" for i, name in enumerate(hosts)]
    edges = [(0, 3), (0, 4), (1, 0), (1, 2), (1, 3), (2, 3), (3, 0), (4, 0)]
    store = str(tmp_path / "s.db")
    run("build", *_cc_graph(tmp_path / "host", vertices, edges), "--store", store, "-q")
    expected = {
        ("example.com", "wikipedia.org"): 1.0,
        ("example.com", "bbc.co.uk"): 1.0,
        ("wikipedia.org", "example.com"): 1.0,
        ("bbc.co.uk", "example.com"): 1.0,
    }
    assert _graph_of(store) == expected
    run("rank", "--level", "site", "--store", store, "-q", "--tol", "1e-13")
    reference = _pagerank(expected, ["example.com", "wikipedia.org", "bbc.co.uk"])
    ranked = _ranked(store)
    assert ranked == {site: pytest.approx(score, abs=1e-10) for site, score in reference.items()}
    assert ranked["wikipedia.org"] == pytest.approx(ranked["bbc.co.uk"], abs=1e-12)


# ------------------------------------------------------------------ site_of, fast


def _names_around_every_rule() -> list[str]:
    """Names at, under and above every rule of the bundled Public Suffix List (wildcards and exceptions too)."""
    names = []
    for rule in sorted(_sites().psl._publicsuffix):
        base = rule.removeprefix("!").removeprefix("*.")
        labels = base.split(".")
        for start in range(len(labels)):
            parent = ".".join(labels[start:])
            names += [parent, f"x.{parent}", f"www.x.{parent}", f"a.b.c.{parent}", f"x.{parent}:8080"]
    return list(dict.fromkeys(names))


def test_sites_of_gives_what_the_list_gives_name_by_name():
    names = _names_around_every_rule() + ["a..b.com", "www.example.com.", "A.Example.COM", "1.2.3.4:80", "[::1]"]
    psl = _sites().psl

    def asked(host: str) -> str:  # the list asked of every host alone, as site_of's contract says
        if host.startswith("["):
            return host
        name = host.rsplit(":", 1)[0] if ":" in host else host
        if name.replace(".", "").isdigit():
            return host
        return psl.privatesuffix(name) or host

    got = sites_of(names)
    assert [(name, site) for name, site in zip(names, got) if site != asked(name)] == []
    assert [site_of(name) for name in names[:2000]] == got[:2000]


def test_a_build_asks_the_public_suffix_list_once_per_parent_not_once_per_host(monkeypatch, tmp_path):
    sites = _sites()
    sites.parents.clear()
    asked = Counter()
    real = sites.psl.privatesuffix

    def counting(name, *args, **kwargs):
        asked[name] += 1
        return real(name, *args, **kwargs)

    monkeypatch.setattr(sites.psl, "privatesuffix", counting)
    hosts = [f"h{i}.s{i % 50}.example{i % 7}.co.uk" for i in range(20_000)]
    found = sites_of(hosts)
    assert found == [f"example{i % 7}.co.uk" for i in range(20_000)]
    assert sum(asked.values()) <= 10 and max(asked.values()) == 1  # co.uk once, uk once: the rest from parents
    edges = tmp_path / "e.tsv"
    edges.write_text("".join(f"https://{hosts[i]}/\thttps://{hosts[i + 1]}/\n" for i in range(0, 2000, 2)))
    asked.clear()
    run("build", str(edges), "--store", str(tmp_path / "s.db"), "-q")
    assert sum(asked.values()) <= 10
    with Store(str(tmp_path / "s.db"), readonly=True) as store:
        assert np.array_equal(np.unique(store.sites.host_sites()), np.arange(1, 8))
        assert store.sites.site_count() == 7


def test_a_domain_graphs_sites_answer_for_links_and_list_their_referring_sites(tmp_path):
    """A site loaded from a domain graph has no page: the bar of a link to it is its site's estimate, and the
    referrers of a page on it come from the domain graph's links into its site, best first."""
    from rankstore.store import Store

    store = str(tmp_path / "s.db")
    run("build", *_cc_graph(tmp_path / "domain", DOMAIN_VERTICES, DOMAIN_EDGES), "--store", store, "-q")
    run("rank", "--level", "site", "--store", store, "-q", "--tol", "1e-13")
    ranked = _ranked(store)
    with Store(store, readonly=True) as opened:
        head = opened.levels.level_head("site")
        assert head is not None and head.name == "siterank"
        # example.com is linked from wikipedia.org, user.github.io and bbc.co.uk (DOMAIN_EDGES into 0)
        referrers = opened.levels.referrers(head, "example.com", 10)
    linking = {_domain(s) for s, d in DOMAIN_EDGES if d == 0}
    assert {r.name for r in referrers} == linking
    assert [r.score for r in referrers] == sorted((ranked[site] for site in linking), reverse=True)
    assert [r.place for r in referrers] == sorted(r.place for r in referrers)  # best first
    assert all(r.links == 1 for r in referrers)


def test_the_list_read_with_its_names_encoded_once_is_the_parsers_own():
    """The bundled list read as its parser reads it with every rule encoded (IDN), but encoding only the rules
    with non-ASCII labels: the same rules, so the same answers."""
    from publicsuffixlist import PublicSuffixList

    own = PublicSuffixList(only_icann=False)
    ours = _sites().psl
    assert ours._publicsuffix == own._publicsuffix and ours._maxlabel == own._maxlabel
    assert any(not rule.isascii() for rule in ours._publicsuffix)  # the IDN rules are there, both ways
    assert any(rule.startswith("xn--") or ".xn--" in rule for rule in ours._publicsuffix)
    for name in ("www.example.co.uk", "a.b.github.io", "x.xn--p1ai", "x.рф", "www.city.kawasaki.jp", "a.b.kawasaki.jp"):
        assert ours.privatesuffix(name) == own.privatesuffix(name), name
