"""Common Crawl's web-graph format: small files written as it is published, broken ones among them."""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from rankstore.sources import EdgeBatch, Skipped, SourceError, ccgraph
from rankstore.sources.ccgraph import cc_parts, looks_like_cc_edges, looks_like_cc_vertices, read_cc_graph

from conftest import ROOT, data

HOST = data("ccgraph/host")
HOST_URLS = [
    "https://example.com/",
    "https://blog.example.com/",
    "https://shop.example.com/",
    "https://en.wikipedia.org/",
    "https://de.wikipedia.org/",
    "https://bbc.co.uk/",
    "https://news.bbc.co.uk/",
    "https://xn--bcher-kva.net/",
]
HOST_EDGES = [(0, 1), (0, 2), (0, 3), (1, 0), (1, 2), (2, 0), (3, 4), (3, 0), (4, 3), (5, 6), (6, 5), (6, 0), (7, 0)]
# tests/data/ccgraph/make.py prints it: the first line not whole in what the cut gzip stream still gives
TRUNCATED_AT = 98043


def read(vertices, edges, **options):
    urls, pairs, skipped = [], [], []
    for item in read_cc_graph(vertices, edges, **options):
        if isinstance(item, Skipped):
            skipped.append(item)
        else:
            assert isinstance(item, EdgeBatch)
            assert item.src.dtype == item.dst.dtype == np.int64
            urls += item.urls
            pairs += list(zip(item.src.tolist(), item.dst.tolist()))
    return urls, pairs, skipped


def gz(path, text: str) -> str:
    path.write_bytes(gzip.compress(text.encode(), mtime=0))
    return str(path)


def names(paths):
    return [os.path.relpath(path, HOST) for path in paths]


@pytest.mark.parametrize(
    "given",
    [
        [HOST],
        [os.path.join(HOST, "vertices.paths.gz"), os.path.join(HOST, "edges.paths.gz")],
        [os.path.join(HOST, "edges"), os.path.join(HOST, "vertices")],  # order does not matter: told by content
        [os.path.join(HOST, "edges.paths.gz"), os.path.join(HOST, "vertices")],
    ],
)
def test_host_graph_in_parts(given):
    vertices, edges = cc_parts(given)
    assert names(vertices) == ["vertices/part-00000.gz", "vertices/part-00001.gz"]
    assert names(edges) == ["edges/part-00000.gz", "edges/part-00001.gz"]
    urls, pairs, skipped = read(vertices, edges)
    assert urls == HOST_URLS and pairs == HOST_EDGES and skipped == []


def test_parts_named_one_by_one_or_listed_with_a_remote_prefix(tmp_path):
    one = [os.path.join(HOST, "edges", "part-00001.gz"), os.path.join(HOST, "vertices", "part-00000.gz")]
    assert cc_parts(one) == (one[1:], one[:1])
    # Common Crawl's lists name parts by their place in its bucket: a part beside the list is taken instead
    with open(one[1], "rb") as part:
        (tmp_path / "part-00000.gz").write_bytes(part.read())
    listed = gz(tmp_path / "vertices.paths.gz", "projects/hyperlinkgraph/host/vertices/part-00000.gz\n")
    assert cc_parts([listed, one[0]]) == ([str(tmp_path / "part-00000.gz")], one[:1])


def test_a_domain_graphs_vertices_are_sites_and_a_host_graphs_root_pages_take_the_scheme():
    """A domain graph (vertices with a third column, the number of hosts) names sites, not root pages."""
    batches = list(read_cc_graph(*cc_parts([data("ccgraph/domain")]), scheme="http"))
    assert [item for item in batches if isinstance(item, Skipped)] == []
    assert [site for batch in batches for site in list(batch.sites.to_pylist() if len(batch.sites) else [])] == [
        "example.com",
        "wikipedia.org",
        "bbc.co.uk",
    ]
    assert [url for batch in batches for url in batch.urls] == []
    assert [pair for batch in batches for pair in zip(batch.src.tolist(), batch.dst.tolist())] == [
        (0, 1),
        (1, 0),
        (2, 0),
        (2, 1),
    ]
    urls, _, _ = read(*cc_parts([HOST]), scheme="http")
    assert urls == [url.replace("https://", "http://") for url in HOST_URLS]


def test_batches_hold_at_most_chunk_lines_and_progress_counts_bytes_on_disk():
    vertices, edges = cc_parts([HOST])
    read_bytes = []
    batches = list(read_cc_graph(vertices, edges, progress=read_bytes.append, chunk_lines=2))
    assert [(os.path.relpath(batch.where, HOST), len(batch.urls), len(batch.src)) for batch in batches] == [
        ("vertices/part-00000.gz:1-2", 2, 0),
        ("vertices/part-00000.gz:3-4", 2, 0),
        ("vertices/part-00000.gz:5-5", 1, 0),
        ("vertices/part-00001.gz:1-2", 2, 0),
        ("vertices/part-00001.gz:3-3", 1, 0),
        ("edges/part-00000.gz:1-2", 0, 2),
        ("edges/part-00000.gz:3-4", 0, 2),
        ("edges/part-00000.gz:5-6", 0, 2),
        ("edges/part-00000.gz:7-7", 0, 1),
        ("edges/part-00001.gz:1-2", 0, 2),
        ("edges/part-00001.gz:3-4", 0, 2),
        ("edges/part-00001.gz:5-6", 0, 2),
    ]
    assert [url for batch in batches for url in batch.urls] == HOST_URLS
    assert [pair for batch in batches for pair in zip(batch.src.tolist(), batch.dst.tolist())] == HOST_EDGES
    assert sum(read_bytes) == sum(os.path.getsize(path) for path in vertices + edges)


def test_broken_files_are_counted_reported_by_line_and_skipped():
    folder = data("ccgraph/broken")
    vertices = [os.path.join(folder, "vertices.txt.gz")]
    edges = [os.path.join(folder, "edges-00000.txt.gz"), os.path.join(folder, "edges-00001.txt.gz")]
    urls, pairs, skipped = read(vertices, edges)
    assert urls == ["https://example.com/", "https://blog.example.com/", "https://en.wikipedia.org/"]
    assert [(item.where, item.reason, item.count) for item in skipped] == [
        (f"{vertices[0]}:4", "not a vertex line (expected ID<TAB>reversed.host.name)", 1),
        (f"{vertices[0]}:6", "not a plausible host name ('com..example')", 1),
        (f"{vertices[0]}:3", "duplicate vertex id (id 1 seen before)", 1),
        (f"{edges[0]}:5", "not an edge line (expected FROM_ID<TAB>TO_ID)", 1),
        (f"{edges[0]}:3", "vertex not in the vertices file (id 2)", 1),
        (
            f"{edges[1]}:{TRUNCATED_AT}",
            (
                "unreadable data (compressed file ended before the end-of-stream marker "
                "was reached); the rest of the part is lost"
            ),
            1,
        ),
    ]
    # the good lines are kept: the first part's four, then every whole line of the second before the cut
    assert pairs[:4] == [(0, 1), (1, 0), (2, 0), (1, 2)]
    assert pairs[4:] == [(0, 1), (1, 0)] * ((TRUNCATED_AT - 1) // 2) + [(0, 1)] * ((TRUNCATED_AT - 1) % 2)


def test_a_flood_of_bad_lines_is_reported_in_part_and_counted_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(ccgraph, "REPORTED", 3)
    vertices = gz(tmp_path / "v.gz", "0\tcom.a\n1\tcom.b\n")
    edges = gz(tmp_path / "e.gz", "0\t1\n" + "0\t9\n" * 10 + "1\t0\n" + "x\n" * 4)
    _, pairs, skipped = read([vertices], [edges])
    assert pairs == [(0, 1), (1, 0)]
    assert [(item.where, item.reason, item.count) for item in skipped] == [
        (f"{edges}:13", "not an edge line (expected FROM_ID<TAB>TO_ID)", 1),
        (f"{edges}:14", "not an edge line (expected FROM_ID<TAB>TO_ID)", 1),
        (f"{edges}:15", "not an edge line (expected FROM_ID<TAB>TO_ID)", 1),
        (f"{edges}:2", "vertex not in the vertices file (id 9)", 1),
        (f"{edges}:3", "vertex not in the vertices file (id 9)", 1),
        (f"{edges}:4", "vertex not in the vertices file (id 9)", 1),
        (f"{edges}:16-16", "not an edge line (1 more lines)", 1),
        (f"{edges}:5-11", "vertex not in the vertices file (7 more lines)", 7),
    ]
    assert sum(item.count for item in skipped) == 14  # every bad line, though not every one is reported


def graph_text(count: int) -> tuple[list[str], list[str]]:
    """Vertex and edge lines of a small graph (CC ids in reverse file order, to be numbered in file order)."""
    vertex_lines = [f"{count - 1 - i}\tcom.site{i // 7}.h{i % 7}\n" for i in range(count)]
    edge_lines = [f"{i % count}\t{(i * 7 + 3) % count}\n" for i in range(5 * count)]
    return vertex_lines, edge_lines


def test_blocks_with_bad_lines_read_line_by_line_give_what_clean_ones_do(tmp_path, monkeypatch):
    monkeypatch.setattr(ccgraph, "BLOCK", 4096)  # many blocks: most clean, taken apart in C
    vertex_lines, edge_lines = graph_text(2000)
    (tmp_path / "e.txt").write_text("".join(edge_lines))  # plain text parts are read too
    clean = read([gz(tmp_path / "v.gz", "".join(vertex_lines))], [str(tmp_path / "e.txt")])
    assert clean[2] == [] and len(clean[0]) == 2000 and len(clean[1]) == 10_000
    bad_vertices = {100: "-1\tcom.negative\n", 500: "7\tCOM.UPPER\n", 900: "\n", 901: "8 \tcom.space\n"}
    bad_edges = {10: "1\t-2\n", 20: "3 \t4\n", 30: "\n", 40: "5\t6\t7\n", 50: "99999999999999999999\t1\n"}
    dirty = read(
        [gz(tmp_path / "bad-v.gz", "".join(bad_vertices.get(i, "") + line for i, line in enumerate(vertex_lines)))],
        [gz(tmp_path / "bad-e.gz", "".join(bad_edges.get(i, "") + line for i, line in enumerate(edge_lines)))],
    )
    assert dirty[0] == clean[0] and dirty[1] == clean[1]
    not_vertex, not_edge = (
        "not a vertex line (expected ID<TAB>reversed.host.name)",
        "not an edge line (expected FROM_ID<TAB>TO_ID)",
    )
    assert [(item.where.rsplit(":", 1)[1], item.reason) for item in dirty[2]] == [
        ("101", not_vertex),
        ("502", "not a plausible host name ('COM.UPPER')"),
        ("905", not_vertex),
        ("11", not_edge),
        ("22", not_edge),
        ("44", not_edge),
        ("55", not_edge),
    ]  # blank lines are no error
    crlf = read(
        [gz(tmp_path / "crlf-v.gz", "".join(vertex_lines).replace("\n", "\r\n"))],
        [gz(tmp_path / "crlf-e.gz", "".join(edge_lines).replace("\n", "\r\n"))],
    )
    assert crlf == clean


def test_concatenated_gzip_members_are_one_part(tmp_path):
    vertices = tmp_path / "v.gz"
    vertices.write_bytes(gzip.compress(b"0\tcom.a\n", mtime=0) + gzip.compress(b"1\tcom.b\n", mtime=0))
    urls, pairs, skipped = read([str(vertices)], [gz(tmp_path / "e.gz", "0\t1\n1\t0\n")])
    assert urls == ["https://a.com/", "https://b.com/"] and pairs == [(0, 1), (1, 0)] and skipped == []


def test_a_corrupt_gzip_part_loses_its_rest_and_the_next_part_is_read(tmp_path):
    vertices = gz(tmp_path / "v.gz", "0\tcom.a\n1\tcom.b\n")
    data = bytearray(gzip.compress("".join(f"{i % 2}\t{(i + 1) % 2}\n" for i in range(100_000)).encode(), mtime=0))
    data[len(data) // 2 : len(data) // 2 + 64] = b"\xff" * 64
    (tmp_path / "e1.gz").write_bytes(bytes(data))
    edges = [str(tmp_path / "e1.gz"), gz(tmp_path / "e2.gz", "1\t1\n")]
    _, pairs, skipped = read([vertices], edges)
    assert len(skipped) == 1 and skipped[0].where.startswith(f"{edges[0]}:")
    assert skipped[0].reason.startswith("unreadable data (corrupt gzip data: ") and skipped[0].reason.endswith(
        "; the rest of the part is lost"
    )
    assert 0 < len(pairs) - 1 < 100_000 and pairs[-1] == (1, 1)


def test_a_part_that_cannot_be_opened_is_an_error(tmp_path):
    vertices = gz(tmp_path / "v.gz", "0\tcom.a\n")
    with pytest.raises(SourceError, match="missing.gz: cannot open"):
        read([vertices], [str(tmp_path / "missing.gz")])


def test_content_sniffers():
    assert looks_like_cc_vertices(b"0\tcom.example\n1\tcom.example.www\n")
    assert looks_like_cc_vertices(b"\n12\tcom.example\t3\n")  # a domain graph's vertices
    assert looks_like_cc_vertices(b"5\tcom.example\r\n")
    assert not looks_like_cc_vertices(b"0\t1\n") and not looks_like_cc_vertices(b"http://a/ http://b/\n")
    assert (
        not looks_like_cc_vertices(b"0\tcom example\n")
        and not looks_like_cc_vertices(b"")
        and not looks_like_cc_vertices(b"com.example\t0\n")
    )
    assert looks_like_cc_edges(b"0\t1\n2\t3\n") and looks_like_cc_edges(b"\n\n17\t4\r\n")
    assert (
        not looks_like_cc_edges(b"0\tcom.example\n")
        and not looks_like_cc_edges(b"0 1\n")
        and not looks_like_cc_edges(b"0\t1\t2\n")
        and not looks_like_cc_edges(b"")
    )


def test_cc_parts_says_what_it_cannot_tell(tmp_path):
    with pytest.raises(SourceError, match="expected a Common Crawl vertices file and an edges file"):
        cc_parts([os.path.join(HOST, "edges"), os.path.join(HOST, "edges.paths.gz")])
    with pytest.raises(SourceError, match="no Common Crawl vertices parts found"):
        cc_parts([os.path.join(HOST, "edges")])
    with pytest.raises(SourceError, match="VERTICES EDGES"):
        cc_parts([os.path.join(HOST, "edges.paths.gz")])
    with pytest.raises(SourceError):  # a folder of saved pages is no web graph (detect_format relies on it)
        cc_parts([data("site")])
    # an empty part tells nothing: the name decides
    empty = gz(tmp_path / "cc-main-host-vertices.txt.gz", "")
    edges = os.path.join(HOST, "edges.paths.gz")
    assert cc_parts([empty, edges])[0] == [empty]
    with pytest.raises(SourceError, match="read: neither, edges"):
        cc_parts([gz(tmp_path / "part-00000.gz", ""), edges])


def test_paper_graph_generator_writes_what_the_reader_reads(tmp_path):
    out = tmp_path / "graph"
    subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "tools", "make_paper_graph.py"),
            "--pages",
            "2000",
            "--links",
            "20000",
            "--parts",
            "3",
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    assert sorted(os.listdir(out)) == ["edges", "edges.paths.gz", "vertices", "vertices.paths.gz"]
    assert sorted(os.listdir(out / "edges")) == [f"part-0000{i}.gz" for i in range(3)]
    urls, pairs, skipped = read(*cc_parts([str(out)]))
    assert skipped == [] and len(urls) == 2000 == len(set(urls)) and len(pairs) == 20_000
    assert all(re.fullmatch(r"https://(h\d+\.)?site\d+\.(com|de|net|org|co\.uk)/", url) for url in urls)
    pairs_array = np.array(pairs)
    assert len(set(pairs)) == 20_000 and not (pairs_array[:, 0] == pairs_array[:, 1]).any()
    assert pairs == sorted(pairs)  # as Common Crawl writes them: by source, then target
    out_degree = np.bincount(pairs_array[:, 0], minlength=2000)
    in_degree = np.bincount(pairs_array[:, 1], minlength=2000)
    assert out_degree.max() > 10 * out_degree.mean() and in_degree.max() > 10 * in_degree.mean()  # heavy tails
    # ids 0, 1, 2... in the order of the names, as Common Crawl numbers its vertices
    lines = [
        line.split("\t")
        for part in sorted((out / "vertices").iterdir())
        for line in gzip.decompress(part.read_bytes()).decode().splitlines()
    ]
    assert [int(line[0]) for line in lines] == list(range(2000))
    assert [line[1] for line in lines] == sorted(line[1] for line in lines)
