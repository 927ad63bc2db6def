#!/usr/bin/env python3
"""Writes the small Common Crawl web-graph files the tests read (deterministic: run it to regenerate).

    .venv/bin/python tests/data/ccgraph/make.py

host/       a host graph as Common Crawl publishes one: vertices and edges, each in
            two gzipped parts, with vertices.paths.gz and edges.paths.gz naming them
domain/     a domain graph: vertices with a third column (hosts per domain), one part each
broken/     vertices with a repeated id, a line that is not a vertex and an implausible
            host name; edges naming a missing vertex, with a non-numeric line, and a
            second part cut off mid-stream (a truncated gzip)

It prints the line the truncated part breaks off in (the first line not
whole in what can be decompressed): tests/test_ccgraph.py expects it.
"""

import gzip
import os
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))

HOSTS = ["com.example", "com.example.blog", "com.example.shop", "org.wikipedia.en", "org.wikipedia.de",
         "uk.co.bbc", "uk.co.bbc.news", "net.xn--bcher-kva"]
EDGES = [(0, 1), (0, 2), (0, 3), (1, 0), (1, 2), (2, 0), (3, 4), (3, 0), (4, 3), (5, 6), (6, 5), (6, 0), (7, 0)]


def write(path: str, text: str, cut: int | None = None) -> bytes:
    data = gzip.compress(text.encode(), mtime=0)
    with open(os.path.join(HERE, path), "wb") as out:
        out.write(data if cut is None else data[:cut])
    return data if cut is None else data[:cut]


def main() -> None:
    for folder in ("host/vertices", "host/edges", "domain", "broken"):
        os.makedirs(os.path.join(HERE, folder), exist_ok=True)
    vertices = [f"{i}\t{name}\n" for i, name in enumerate(HOSTS)]
    write("host/vertices/part-00000.gz", "".join(vertices[:5]))
    write("host/vertices/part-00001.gz", "".join(vertices[5:]))
    edges = [f"{a}\t{b}\n" for a, b in EDGES]
    write("host/edges/part-00000.gz", "".join(edges[:7]))
    write("host/edges/part-00001.gz", "".join(edges[7:]))
    write("host/vertices.paths.gz", "vertices/part-00000.gz\nvertices/part-00001.gz\n")
    write("host/edges.paths.gz", "edges/part-00000.gz\nedges/part-00001.gz\n")

    write("domain/vertices.txt.gz", "0\tcom.example\t3\n1\torg.wikipedia\t2\n2\tuk.co.bbc\t2\n")
    write("domain/edges.txt.gz", "0\t1\n1\t0\n2\t0\n2\t1\n")

    write("broken/vertices.txt.gz", "0\tcom.example\n1\tcom.example.blog\n1\tcom.example.again\n"
                                    "not a vertex line\n3\torg.wikipedia.en\n4\tcom..example\n")
    write("broken/edges-00000.txt.gz", "0\t1\n1\t0\n0\t2\n3\t0\nzero\tone\n1\t3\n")
    many = "".join(f"{i % 2}\t{(i + 1) % 2}\n" for i in range(200_000)) + "3\t1\n"
    cut = write("broken/edges-00001.txt.gz", many, cut=len(gzip.compress(many.encode(), mtime=0)) // 2)
    lines = zlib.decompressobj(31).decompress(cut).count(b"\n") + 1
    print(f"broken/edges-00001.txt.gz breaks off in line {lines}")


if __name__ == "__main__":
    main()
