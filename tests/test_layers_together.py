"""Page crawls, Common Crawl's graphs and its ranks files in one store: each level's rankings stay what their
own graph makes them, whatever else the store holds and in whatever order it came."""

from __future__ import annotations

import gzip
import json

import pytest
from barkit import bar_for

from proxy_addon.ranks import Ranks
from proxy_addon.rewrite import annotate
from rankstore.store import Store

from conftest import invoke, run

HOST_HEADER = "#harmonicc_pos\t#harmonicc_val\t#pr_pos\t#pr_val\t#host_rev\n"
DOMAIN_HEADER = "#harmonicc_pos\t#harmonicc_val\t#pr_pos\t#pr_val\t#host_rev\t#n_hosts\n"
CRAWL = """https://a.example.co.uk/\thttps://b.example.co.uk/x
https://a.example.co.uk/\thttps://user.github.io/
https://a.example.co.uk/p1\thttps://a.example.co.uk/
https://b.example.co.uk/x\thttps://a.example.co.uk/
https://b.example.co.uk/x\thttp://127.0.0.1:8000/
https://user.github.io/\thttps://a.example.co.uk/p1
https://user.github.io/\thttps://other.github.io/
https://other.github.io/\thttps://user.github.io/
http://127.0.0.1:8000/\thttps://a.example.co.uk/
"""
# a ranks file naming two hosts of the crawl and one it has not; the crawl's other hosts score 0 in it
HOST_RANKS = (
    HOST_HEADER
    + "1\t1.2E7\t1\t0.5\tuk.co.example.a\n2\t1.1E7\t2\t0.3\tio.github.user\n3\t1.0E7\t3\t0.2\tcom.unrelated\n"
)
DOMAIN_RANKS = DOMAIN_HEADER + "1\t5.0E6\t1\t0.6\tuk.co.example\t3\n2\t4.0E6\t2\t0.4\tio.github\t9\n"


def _file(path, text: str) -> str:
    if str(path).endswith(".gz"):
        with gzip.open(path, "wt") as handle:
            handle.write(text)
    else:
        path.write_text(text)
    return str(path)


def _scores(store: str, name: str) -> dict[str, float]:
    rows = json.loads(run("top", "--ranking", name, "-n", "0", "--format", "json", "--store", store))
    return {row.get("host") or row.get("site"): row[f"{'host' if 'host' in row else 'site'}_pagerank"] for row in rows}


@pytest.fixture
def crawl(tmp_path) -> str:
    return _file(tmp_path / "edges.tsv", CRAWL)


def test_a_ranks_file_leaves_our_host_and_site_rankings_as_they_were(tmp_path, crawl):
    """Hosts and sites only a ranks file names are no nodes of our graphs: no teleport mass, score 0."""
    alone, both = str(tmp_path / "alone.db"), str(tmp_path / "both.db")
    ranks = _file(tmp_path / "host-ranks.txt.gz", HOST_RANKS)
    for store, sources in ((alone, [crawl]), (both, [crawl, ranks])):
        run("build", *sources, "--store", store, "-q")
        run("rank", "--level", "host", "--store", store, "-q", "--tol", "1e-12")
        run("rank", "--level", "site", "--store", store, "-q", "--tol", "1e-12")
    for name in ("hostrank", "siterank"):
        ours, beside = _scores(alone, name), _scores(both, name)
        assert {node: beside[node] for node in ours} == pytest.approx(ours, abs=1e-10)
        assert [score for node, score in beside.items() if node not in ours] == [0.0]  # unrelated.com
    assert _scores(both, "hostrank")["unrelated.com"] == 0.0
    assert _scores(both, "siterank")["unrelated.com"] == 0.0


def test_a_host_graphs_sites_fold_alike_whatever_came_first(tmp_path):
    """Common Crawl folds a host graph into domains counting each pair once; a ranks file loaded first (which
    numbers hosts before the graph's pages) must not turn that into a sum of host pairs."""
    vertices = tmp_path / "g" / "vertices"
    edges = tmp_path / "g" / "edges"
    vertices.mkdir(parents=True)
    edges.mkdir(parents=True)
    _file(vertices / "part-00000.gz", "0\tcom.a.x\n1\tcom.a.y\n2\tcom.b\n3\tcom.c\n")
    _file(edges / "part-00000.gz", "0\t2\n1\t2\n0\t3\n")
    ranks = _file(tmp_path / "host-ranks.txt.gz", HOST_HEADER + "1\t2.0\t1\t0.7\tcom.b\n2\t1.0\t2\t0.3\tcom.zzz\n")
    first, second = str(tmp_path / "graph-first.db"), str(tmp_path / "ranks-first.db")
    run("build", str(tmp_path / "g"), "--store", first, "-q")
    run("build", ranks, "--store", first, "-q")
    run("build", ranks, "--store", second, "-q")
    run("build", str(tmp_path / "g"), "--store", second, "-q")
    for store in (first, second):
        run("rank", "--level", "site", "--store", store, "-q", "--tol", "1e-12")
    one, other = _scores(first, "siterank"), _scores(second, "siterank")
    assert other == pytest.approx(one, abs=1e-12)
    assert one["b.com"] == pytest.approx(one["c.com"], abs=1e-12)  # a.com -> b.com counts once, as a.com -> c.com


def test_a_host_and_a_domain_ranks_file_are_refused_before_anything_is_written(tmp_path):
    store = str(tmp_path / "s.db")
    host = _file(tmp_path / "host-ranks.txt.gz", HOST_RANKS)
    domain = _file(tmp_path / "domain-ranks.txt.gz", DOMAIN_RANKS)
    run("build", host, "--store", store, "-q")
    with Store(store, readonly=True) as opened:
        before = opened.pages.dump()
    result = invoke("build", domain, "--store", store)
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == (
        f"Error: {domain} ranks sites, but this store's cc-harmonic ranks hosts (a name keeps its level): "
        "load it into another store"
    )
    with Store(store, readonly=True) as opened:
        assert opened.pages.dump() == before
    both = invoke("build", host, domain, "--store", str(tmp_path / "t.db"))
    assert both.exit_code == 1 and "both would be cc-pagerank, which ranks one level" in both.output


def test_a_ranks_file_build_makes_no_ranking_of_ours_stale(tmp_path, crawl):
    store = str(tmp_path / "s.db")
    run("build", crawl, "--store", store, "-q")
    run("rank", "--store", store, "-q")
    run("build", _file(tmp_path / "host-ranks.txt.gz", HOST_RANKS), "--store", store, "-q")
    with Store(store, readonly=True) as opened:
        assert opened.rankings.stale_note(opened.rankings.ranking("pagerank")) is None
    assert run("rank", "--store", store).startswith("pagerank v1 unchanged")


def test_a_host_a_ranks_file_scores_0_lets_its_site_answer(tmp_path, crawl):
    """cc-pagerank scores 0 every host its file does not name: that is no rank, and the site's answers."""
    store = str(tmp_path / "s.db")
    run("build", crawl, _file(tmp_path / "host-ranks.txt.gz", HOST_RANKS), "--store", store, "-q")
    run("rank", "--store", store, "-q")
    run("rank", "--level", "site", "--store", store, "-q")
    site = _scores(store, "siterank")["example.co.uk"]
    ranks = Ranks(store)  # the host ranking that answers: hostrank, else the newest of the level (cc-pagerank)
    page = '<p><a href="https://b.example.co.uk/zzz">b</a> <a href="https://a.example.co.uk/zzz">a</a></p>'
    with ranks.page() as view:
        html = annotate(page, "https://elsewhere.example/", view.lookup, None, view.marks).text
    b, a = (bar_for(html, href).attributes for href in ("https://b.example.co.uk/zzz", "https://a.example.co.uk/zzz"))
    assert (b["data-pagerank-level"], b["data-pagerank-estimate"]) == ("site", repr(site))  # b.example.co.uk scored 0
    assert (a["data-pagerank-level"], a["data-pagerank-estimate"]) == ("host", "0.5")  # a.example.co.uk: its file's 0.5
    shown = invoke("show", "https://b.example.co.uk/zzz", "--format", "json", "--store", store)
    assert shown.exit_code == 1
    shown = json.loads(shown.stdout)
    assert [(row["level"], row["answered_by"], row["estimate"]) for row in shown] == [("site", "example.co.uk", site)]


def test_show_says_a_url_its_host_answers_for_once_and_names_the_unknown_ones(tmp_path, crawl):
    store = str(tmp_path / "s.db")
    run("build", crawl, "--store", store, "-q")
    run("rank", "--store", store, "-q")
    run("rank", "--level", "host", "--store", store, "-q")
    result = invoke("show", "https://a.example.co.uk/nothere", "https://nowhere.example/", "--store", store)
    assert result.exit_code == 1  # one is not in the store as a page, one in no way at all
    said = result.stderr.splitlines()
    assert "note: not in the store (answered by their host's or site's rank): https://a.example.co.uk/nothere" in said
    assert said[-1] == "not in the store: https://nowhere.example/"
    assert "answered_by a.example.co.uk" in result.stdout
