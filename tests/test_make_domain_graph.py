"""tools/make_domain_graph.py: Common Crawl's domain graph (135M sites, 2B links) or a scaled copy, in its format."""

from __future__ import annotations

import gzip
import json
import os
import re
from collections import Counter
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from make_domain_graph import LINKS, SITES, GraphSize, main, make_domain_graph, scale_of, scaled

from rankstore.sources import Skipped
from rankstore.sources.ccgraph import cc_parts, is_domain_graph, read_cc_graph

from conftest import run

# the full graph's ratio of links to sites, so that the shape is measured as it is at the full size
SIZE = GraphSize(40_000, round(40_000 * LINKS / SITES))
PARTS = 3
# a reversed registered domain: a suffix of one or two labels, then the label of letters, digits and hyphens
NAME = re.compile(r"[a-z]+(\.[a-z]+)?\.[a-z0-9]([a-z0-9-]*[a-z0-9])?")


def _columns(folder, kind: str, types: list[pa.DataType]) -> list[np.ndarray]:
    parts = [line.strip() for line in gzip.open(folder / f"{kind}.paths.gz", "rt")]
    tables = [
        pacsv.read_csv(
            folder / part,
            pacsv.ReadOptions(column_names=[str(i) for i in range(len(types))]),
            pacsv.ParseOptions(delimiter="\t", quote_char=False),
            pacsv.ConvertOptions(column_types={str(i): t for i, t in enumerate(types)}),
        )
        for part in parts
    ]
    table = pa.concat_tables(tables)
    return [table.column(i).to_numpy() for i in range(len(types))]


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    folder = tmp_path_factory.mktemp("domains") / "graph"
    made = make_domain_graph(SIZE, str(folder), PARTS, seed=7)
    ids, names, hosts = _columns(folder, "vertices", [pa.int64(), pa.string(), pa.int64()])
    src, dst = _columns(folder, "edges", [pa.int64(), pa.int64()])
    return folder, made, ids, names, hosts, src, dst


def test_it_writes_exactly_the_sites_and_links_asked_in_common_crawls_domain_graph_format(graph):
    folder, made, ids, names, hosts, src, dst = graph
    assert sorted(os.listdir(folder)) == ["edges", "edges.paths.gz", "vertices", "vertices.paths.gz"]
    for kind in ("vertices", "edges"):
        listed = [line.strip() for line in gzip.open(folder / f"{kind}.paths.gz", "rt")]
        assert listed == [f"{kind}/part-{part:05d}.gz" for part in range(PARTS)]
        assert sorted(os.listdir(folder / kind)) == [os.path.basename(part) for part in listed]
    assert (made.sites, made.links) == (len(ids), len(src)) == (SIZE.sites, SIZE.links)
    # ids 0, 1, 2... in the sorted order of the reversed names, which are unique, as Common Crawl numbers them
    assert (ids == np.arange(SIZE.sites)).all()
    as_bytes = [name.encode() for name in names]
    assert as_bytes == sorted(set(as_bytes))
    assert all(NAME.fullmatch(name) for name in names)
    assert hosts.min() >= 1 and made.hosts == hosts.sum()
    # edges sorted by source, then target; none twice (strictly increasing), no self-link, every id a vertex
    key = src * SIZE.sites + dst
    assert (np.diff(key) > 0).all() and not (src == dst).any()
    assert src.min() >= 0 and max(src.max(), dst.max()) < SIZE.sites


def test_rankstores_reader_takes_it_for_a_domain_graph_and_build_loads_its_sites_and_site_links(graph, tmp_path):
    folder = graph[0]
    vertices, edges = cc_parts([str(folder)])
    assert is_domain_graph(vertices)
    assert not [item for item in read_cc_graph(vertices, edges) if isinstance(item, Skipped)]
    store = str(tmp_path / "domains.db")
    run("build", str(folder), "--store", store, "-q")
    info = json.loads(run("info", "--store", store, "--format", "json"))
    assert (info["sites"], info["site_links"]) == (SIZE.sites, SIZE.links)
    assert info["pages"] == 0 and info["links"] == 0


def test_its_shape_is_a_domain_graphs(graph):
    _, made, _, names, hosts, src, dst = graph
    in_degree = np.bincount(dst, minlength=SIZE.sites)
    out_degree = np.bincount(src, minlength=SIZE.sites)
    # the most-linked site has about 1% of all links, a power law's head far above the mean
    assert in_degree.max() == made.top_in_degree
    assert 0.005 < in_degree.max() / SIZE.links < 0.025
    assert in_degree.max() > 100 * in_degree.mean() and np.median(in_degree) < in_degree.mean() / 2
    # many sites dangle; the linking ones have heavy-tailed out-degrees
    dangling = (out_degree == 0).mean()
    assert made.dangling == (out_degree == 0).sum() and abs(dangling - 0.65) < 0.03
    linking = out_degree[out_degree > 0]
    assert linking.max() > 50 * linking.mean() and np.median(linking) < linking.mean() / 3
    # the popular sites are spread over the names (a random order), not the first ids
    top = np.argsort(in_degree)[-100:]
    assert 0.3 < top.mean() / SIZE.sites < 0.7
    # most domains have one host, a few very many
    assert 0.6 < (hosts == 1).mean() < 0.8 and hosts.max() > 200
    # names: labels of realistic length, com about 45%, the second-level suffixes as Common Crawl writes them
    labels = [name.rsplit(".", 1)[1] for name in names]
    assert 9.5 < np.mean([len(label) for label in labels]) < 12.5
    suffixes = Counter(name.rsplit(".", 1)[0] for name in names)
    assert 0.42 < suffixes["com"] / SIZE.sites < 0.48
    assert suffixes.most_common(1)[0][0] == "com"
    assert {suffix for suffix, _ in suffixes.most_common(4)} == {"com", "de", "net", "org"}
    assert suffixes["uk.co"] > suffixes["nl"] > 0 and suffixes["br.com"] > 0 and suffixes["au.com"] > 0
    assert 0.05 < np.mean(["-" in label for label in labels]) < 0.2


def test_the_same_seed_writes_the_same_bytes(tmp_path):
    small = GraphSize(300, 3000)
    for name in ("a", "b"):
        make_domain_graph(small, str(tmp_path / name), 2, seed=3)
    for part in ("vertices/part-00000.gz", "vertices/part-00001.gz", "edges/part-00000.gz", "edges/part-00001.gz"):
        assert (tmp_path / "a" / part).read_bytes() == (tmp_path / "b" / part).read_bytes()
    make_domain_graph(small, str(tmp_path / "c"), 2, seed=4)
    first = "edges/part-00000.gz"
    assert (tmp_path / "a" / first).read_bytes() != (tmp_path / "c" / first).read_bytes()


def test_the_default_is_common_crawls_domain_graph_exactly_and_scale_scales_both():
    assert scaled(Fraction(1)) == GraphSize(135_153_877, 2_037_859_503)
    assert scaled(scale_of("1/16")) == GraphSize(round(135_153_877 / 16), round(2_037_859_503 / 16))
    assert scaled(scale_of("0.25")) == GraphSize(round(135_153_877 / 4), round(2_037_859_503 / 4))


def test_the_command_line(tmp_path, capsys):
    out = tmp_path / "cli"
    main(["--sites", "500", "--links", "4000", "--parts", "2", "--seed", "1", "--out", str(out)])
    assert "4,000 links written" in capsys.readouterr().err
    lines = gzip.decompress((out / "edges" / "part-00000.gz").read_bytes()).decode().splitlines()
    lines += gzip.decompress((out / "edges" / "part-00001.gz").read_bytes()).decode().splitlines()
    assert len(lines) == 4000 and all(re.fullmatch(r"\d+\t\d+", line) for line in lines)
    with pytest.raises(SystemExit):
        main(["--help"])
    shown = capsys.readouterr().out
    assert "Examples:" in shown and "make_domain_graph.py --scale 1/16 --out" in shown
    for wrong in (["--scale", "0"], ["--scale", "x"], ["--sites", "3"], ["--sites", "100", "--links", "100000"]):
        with pytest.raises(SystemExit) as exit_:
            main([*wrong, "--out", str(tmp_path / "no")])
        assert exit_.value.code == 2
        assert capsys.readouterr().err.startswith("usage:")
    assert not (tmp_path / "no").exists()
