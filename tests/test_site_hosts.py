"""A site's hosts as a true number, and a site ranking's lines that agree (issue 34, noticed items).

A Common Crawl domain graph loads no host: its vertices' third column, the
number of hosts Common Crawl found of each domain, is what ``top``, ``show``,
``export`` and the own pages show as a site's ``hosts``; a site whose count
nobody knows shows none (``-``, empty, null), never 0; a site both crawled and
in a domain graph shows the larger count, whichever came first.
``rank --level site`` says how many sites its graph holds of how many it
writes, in every line.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os

import pytest
from click.testing import CliRunner
from make_domain_graph import GraphSize, make_domain_graph

from proxy_addon.pages import respond
from proxy_addon.ranks import Ranks
from rankstore.cli import cli

from conftest import run


def _cc_counts(folder: str) -> tuple[dict[str, int], dict[int, str]]:
    """({site: Common Crawl's number of hosts}, {vertex id: site}) read from a domain graph's vertex parts."""
    counts, names = {}, {}
    for part in sorted(os.listdir(os.path.join(folder, "vertices"))):
        with gzip.open(os.path.join(folder, "vertices", part), "rt") as handle:
            for line in handle:
                number, reversed_name, hosts = line.rstrip("\n").split("\t")
                site = ".".join(reversed(reversed_name.split(".")))
                counts[site], names[int(number)] = int(hosts), site
    return counts, names


def _linked(folder: str) -> set[int]:
    """The vertex ids that an edge names."""
    linked = set()
    for part in sorted(os.listdir(os.path.join(folder, "edges"))):
        with gzip.open(os.path.join(folder, "edges", part), "rt") as handle:
            for line in handle:
                linked.update(int(field) for field in line.split("\t"))
    return linked


@pytest.fixture(scope="module")
def domain(tmp_path_factory):
    """A generated domain graph (some sites in no edge), built and ranked by site: (folder, store, rank's
    result)."""
    work = tmp_path_factory.mktemp("site-hosts")
    folder = str(work / "graph")
    make_domain_graph(GraphSize(800, 4000), folder, parts=2, seed=11)
    store = str(work / "s.db")
    run("build", folder, "--store", store, "-q")
    ranked = CliRunner().invoke(cli, ["rank", "--level", "site", "--store", store], catch_exceptions=False)
    assert ranked.exit_code == 0, ranked.output
    return folder, store, ranked


def test_top_show_and_export_give_common_crawls_host_counts(domain):
    folder, store, _ = domain
    counts, _ = _cc_counts(folder)
    assert max(counts.values()) > 1  # not all 1: the counts are told apart
    rows = json.loads(run("top", "--ranking", "siterank", "-n", "0", "--format", "json", "--store", store))
    assert len(rows) == len(counts)
    assert {row["site"]: row["hosts"] for row in rows} == counts
    table = run("top", "--ranking", "siterank", "-n", "5", "--store", store).splitlines()
    at = table[0].split().index("hosts")
    assert [int(line.split()[at]) for line in table[1:]] == [row["hosts"] for row in rows[:5]]
    best = rows[0]["site"]
    shown = json.loads(
        run("show", f"https://www.{best}/a", "--ranking", "siterank", "--format", "json", "--store", store)
    )
    assert [(row["site"], row["hosts"]) for row in shown] == [(best, counts[best])]
    exported = list(csv.DictReader(io.StringIO(run("export", "--what", "sites", "--format", "csv", "--store", store))))
    assert {row["name"]: int(row["hosts"]) for row in exported} == counts
    scores = run("export", "--ranking", "siterank", "--format", "csv", "--store", store)
    assert {row["site"]: int(row["hosts"]) for row in csv.DictReader(io.StringIO(scores))} == counts


def test_rank_says_the_sites_in_the_graph_of_the_sites_written(domain):
    folder, _, ranked = domain
    counts, names = _cc_counts(folder)
    linked = len(_linked(folder))
    assert linked < len(counts)  # some sites are in no edge: they score 0, outside the graph
    said = f"{linked:,} sites with a page or a link (of {len(counts):,})"
    assert ranked.stdout.startswith(f"ranked siterank v1: {said} in ")
    assert f"graph: {said}, " in ranked.stderr
    assert f"writing siterank: {len(counts):,} sites ({linked:,} with a page or a link, the rest at 0)" in ranked.stderr


def _domain_graph(folder, vertices: list[str], edges: list[tuple[int, int]]) -> list[str]:
    """A small Common Crawl domain graph as two plain files: vertices, edges."""
    folder.mkdir()
    (folder / "vertices.txt").write_text("".join(f"{line}\n" for line in vertices))
    (folder / "edges.txt").write_text("".join(f"{s}\t{d}\n" for s, d in edges))
    return [str(folder / "vertices.txt"), str(folder / "edges.txt")]


def test_a_site_whose_hosts_nobody_counted_shows_no_number(tmp_path):
    """A vertex line without the count (read line by line), and no crawl of it: not known, not 0 (a crawl of
    another site beside it, for the proxy's page ranking)."""
    store = str(tmp_path / "s.db")
    vertices = ["0\tcom.alpha\t3", "1\tcom.beta", "2\tcom.gamma\t1"]
    run("build", *_domain_graph(tmp_path / "graph", vertices, [(0, 1), (1, 2), (2, 0)]), "--store", store, "-q")
    crawl = tmp_path / "links.tsv"
    crawl.write_text("https://a.delta.org/\thttps://b.delta.org/\n")
    run("build", str(crawl), "--store", store, "-q")
    run("rank", "--store", store, "-q")
    run("rank", "--level", "site", "--store", store, "-q")
    rows = json.loads(run("top", "--ranking", "siterank", "--format", "json", "--store", store))
    assert {row["site"]: row["hosts"] for row in rows} == {
        "alpha.com": 3,
        "beta.com": None,
        "gamma.com": 1,
        "delta.org": 2,
    }
    table = run("top", "--ranking", "siterank", "--store", store).splitlines()
    at = table[0].split().index("hosts")
    assert {line.split()[-1]: line.split()[at] for line in table[1:]} == {
        "alpha.com": "3",
        "beta.com": "-",
        "gamma.com": "1",
        "delta.org": "2",
    }
    exported = csv.DictReader(io.StringIO(run("export", "--what", "sites", "--format", "csv", "--store", store)))
    assert {row["name"]: row["hosts"] for row in exported} == {
        "alpha.com": "3",
        "beta.com": "",
        "gamma.com": "1",
        "delta.org": "2",
    }
    ranks = Ranks(store)
    try:
        status, _, body = respond("GET", "/top", {"ranking": ["siterank"]}, ranks)
        assert status == 200
        assert '<td class="n">&#8211;</td><td>beta.com</td>' in body.decode()
        assert '<td class="n">3</td><td>alpha.com</td>' in body.decode()
        status, _, body = respond("GET", "/page", {"url": ["https://beta.com/"], "ranking": ["siterank"]}, ranks)
        assert status == 200 and "its hosts not known" in body.decode()
    finally:
        ranks.close()


@pytest.mark.parametrize("first", ["crawl", "domain graph"])
def test_a_site_crawled_and_in_a_domain_graph_shows_the_larger_count(tmp_path, first):
    """The crawl holds two hosts of example.co.uk and two of user.github.io; the domain graph counts five
    and one: 5 and 2, in either order of the builds."""
    crawl = tmp_path / "links.tsv"
    crawl.write_text(
        "https://www.example.co.uk/\thttps://user.github.io/\n"
        "https://shop.example.co.uk/\thttps://blog.user.github.io/\n"
        "https://user.github.io/\thttps://www.example.co.uk/\n"
    )
    graph = _domain_graph(tmp_path / "graph", ["0\tio.github.user\t1", "1\tuk.co.example\t5"], [(0, 1), (1, 0)])
    store = str(tmp_path / "s.db")
    for source in [[str(crawl)], graph] if first == "crawl" else [graph, [str(crawl)]]:
        run("build", *source, "--store", store, "-q")
    run("rank", "--level", "site", "--store", store, "-q")
    rows = json.loads(run("top", "--ranking", "siterank", "--format", "json", "--store", store))
    assert {row["site"]: row["hosts"] for row in rows} == {"example.co.uk": 5, "user.github.io": 2}
    # a later crawl of more hosts than Common Crawl counted raises it
    more = tmp_path / "more.tsv"
    more.write_text("".join(f"https://h{i}.user.github.io/\thttps://user.github.io/\n" for i in range(3)))
    run("build", str(more), "--store", store, "-q")
    run("rank", "--level", "site", "--store", store, "-q")
    rows = json.loads(run("top", "--ranking", "siterank", "--format", "json", "--store", store))
    assert {row["site"]: row["hosts"] for row in rows} == {"example.co.uk": 5, "user.github.io": 5}
