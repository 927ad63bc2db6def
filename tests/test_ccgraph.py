"""Common Crawl's web-graph format: small files written as it is published, broken ones among them."""

from __future__ import annotations

import gzip
import os
import sqlite3
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import ROOT, data
from rankstore.cli import EXIT_SKIPPED, cli
from rankstore.sources import EdgeBatch, Skipped, SourceError, detect_format
from rankstore.sources import ccgraph
from rankstore.sources.ccgraph import cc_parts, looks_like_cc_edges, looks_like_cc_vertices, read_cc_graph

HOST = data("ccgraph/host")
HOST_URLS = ["https://example.com/", "https://blog.example.com/", "https://shop.example.com/",
             "https://en.wikipedia.org/", "https://de.wikipedia.org/", "https://bbc.co.uk/",
             "https://news.bbc.co.uk/", "https://xn--bcher-kva.net/"]
HOST_EDGES = [(0, 1), (0, 2), (0, 3), (1, 0), (1, 2), (2, 0), (3, 4), (3, 0), (4, 3), (5, 6), (6, 5), (6, 0), (7, 0)]


def read(vertices, edges, **options):
    urls, pairs, skipped = [], [], []
    for item in read_cc_graph(vertices, edges, **options):
        if isinstance(item, Skipped):
            skipped.append(item)
        else:
            assert isinstance(item, EdgeBatch)
            urls += item.urls
            pairs += list(zip(item.src.tolist(), item.dst.tolist()))
    return urls, pairs, skipped


@pytest.mark.parametrize("given", [
    [HOST],
    [os.path.join(HOST, "vertices.paths.gz"), os.path.join(HOST, "edges.paths.gz")],
    [os.path.join(HOST, "edges"), os.path.join(HOST, "vertices")],  # order does not matter: told by content
])
def test_host_graph_in_parts(given):
    vertices, edges = cc_parts(given)
    assert [os.path.basename(p) for p in vertices] == ["part-00000.gz", "part-00001.gz"]
    urls, pairs, skipped = read(vertices, edges)
    assert urls == HOST_URLS and pairs == HOST_EDGES and skipped == []


def test_domain_graph_and_http_scheme():
    urls, pairs, skipped = read(*cc_parts([data("ccgraph/domain")]), scheme="http")
    assert urls == ["http://example.com/", "http://wikipedia.org/", "http://bbc.co.uk/"]
    assert pairs == [(0, 1), (1, 0), (2, 0), (2, 1)] and skipped == []


def test_broken_files_are_counted_reported_by_line_and_skipped():
    folder = data("ccgraph/broken")
    vertices = [os.path.join(folder, "vertices.txt.gz")]
    edges = [os.path.join(folder, "edges-00000.txt.gz"), os.path.join(folder, "edges-00001.txt.gz")]
    urls, pairs, skipped = read(vertices, edges)
    assert urls == ["https://example.com/", "https://blog.example.com/", "https://en.wikipedia.org/"]
    assert sorted((item.where, item.reason) for item in skipped[:4]) == [
        (f"{edges[0]}:3", "vertex not in the vertices file (id 2)"),
        (f"{edges[0]}:5", "not an edge line (expected FROM_ID<TAB>TO_ID)"),
        (f"{vertices[0]}:3", "duplicate vertex id (id 1 seen before)"),
        (f"{vertices[0]}:4", "not a vertex line (expected ID<TAB>reversed.host.name)"),
    ]
    truncated = skipped[4:]
    assert len(truncated) == 1 and "unreadable data" in truncated[0].reason and "the rest of the part is lost" \
        in truncated[0].reason
    line = int(truncated[0].where.rsplit(":", 1)[1])
    assert 1000 < line <= 200_001
    # the good lines before the cut are kept: the first part's four, then the second part's up to the cut
    assert pairs[:4] == [(0, 1), (1, 0), (2, 0), (1, 2)]
    assert len(pairs) == 4 + (line - 1) and (2, 1) not in pairs[4:]


def test_a_flood_of_bad_lines_is_reported_in_part_and_counted_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(ccgraph, "REPORTED", 3)
    vertices = tmp_path / "v.gz"
    vertices.write_bytes(gzip.compress(b"0\tcom.a\n1\tcom.b\n"))
    edges = tmp_path / "e.gz"
    edges.write_bytes(gzip.compress(b"0\t1\n" + b"0\t9\n" * 10 + b"1\t0\n"))
    _, pairs, skipped = read([str(vertices)], [str(edges)])
    assert pairs == [(0, 1), (1, 0)]
    assert [item.count for item in skipped] == [1, 1, 1, 7]
    assert [item.where for item in skipped[:3]] == [f"{edges}:2", f"{edges}:3", f"{edges}:4"]
    assert skipped[3].reason == "vertex not in the vertices file (7 more lines)"


def test_content_sniffers_and_detection(tmp_path):
    assert looks_like_cc_vertices(b"0\tcom.example\n") and looks_like_cc_vertices(b"\n12\tcom.example\t3\n")
    assert not looks_like_cc_vertices(b"0\t1\n") and not looks_like_cc_vertices(b"http://a/ http://b/\n")
    assert looks_like_cc_edges(b"0\t1\n2\t3\n") and not looks_like_cc_edges(b"0\tcom.example\n")
    assert detect_format(HOST) == "ccgraph"
    assert detect_format(os.path.join(HOST, "vertices", "part-00000.gz")) == "ccgraph"
    assert detect_format(os.path.join(HOST, "edges.paths.gz")) == "ccgraph"
    assert detect_format(data("site")) == "html"
    with pytest.raises(SourceError, match="expected a Common Crawl vertices file and an edges file"):
        cc_parts([os.path.join(HOST, "edges"), os.path.join(HOST, "edges.paths.gz")])
    with pytest.raises(SourceError, match="no Common Crawl vertices parts found"):
        cc_parts([os.path.join(HOST, "edges")])
    with pytest.raises(SourceError, match="VERTICES EDGES"):
        cc_parts([os.path.join(HOST, "edges.paths.gz")])


def test_build_and_rank_from_the_command_line(tmp_path):
    store = tmp_path / "cc.db"
    result = CliRunner().invoke(cli, ["build", os.path.join(HOST, "vertices.paths.gz"),
                                      os.path.join(HOST, "edges.paths.gz"), "--store", str(store), "-q"])
    assert result.exit_code == 0, result.output
    assert "8 pages, 13 links" in result.output
    assert CliRunner().invoke(cli, ["rank", "--store", str(store), "-q"]).exit_code == 0
    db = sqlite3.connect(store)
    assert sorted(db.execute("SELECT url FROM pages")) == sorted((url,) for url in HOST_URLS)
    links = db.execute("SELECT s.url, t.url FROM links l JOIN pages s ON s.id = l.src JOIN pages t ON t.id = l.dst")
    assert sorted(links) == sorted((HOST_URLS[a], HOST_URLS[b]) for a, b in HOST_EDGES)
    best = db.execute("SELECT url FROM current_scores ORDER BY pagerank DESC LIMIT 1").fetchone()[0]
    assert best == "https://example.com/"  # linked from five hosts of three sites
    broken = CliRunner().invoke(cli, ["build", data("ccgraph/broken/vertices.txt.gz"),
                                      data("ccgraph/broken/edges-00000.txt.gz"), "--store", str(tmp_path / "b.db")])
    assert broken.exit_code == EXIT_SKIPPED
    assert "edges-00000.txt.gz:5: not an edge line" in broken.output
    missing = CliRunner().invoke(cli, ["build", os.path.join(HOST, "edges.paths.gz"), "--store",
                                       str(tmp_path / "m.db")])
    assert missing.exit_code == 1 and "VERTICES EDGES" in missing.output and "Traceback" not in missing.output


def test_paper_graph_generator_writes_what_the_reader_reads(tmp_path):
    out = tmp_path / "graph"
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_paper_graph.py"), "--pages", "3000",
                    "--links", "40000", "--out", str(out)], check=True, capture_output=True)
    urls, pairs, skipped = read(*cc_parts([str(out)]))
    assert skipped == [] and len(urls) == 3000 == len(set(urls)) and len(pairs) == 40_000
    pairs_array = np.array(pairs)
    assert len(set(pairs)) == 40_000 and not (pairs_array[:, 0] == pairs_array[:, 1]).any()
    assert pairs == sorted(pairs)  # as Common Crawl writes them: by source, then target
    out_degree = np.bincount(pairs_array[:, 0], minlength=3000)
    in_degree = np.bincount(pairs_array[:, 1], minlength=3000)
    assert out_degree.max() > 10 * out_degree.mean() and in_degree.max() > 10 * in_degree.mean()  # heavy tails
