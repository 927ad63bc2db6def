"""`rankstore build` and `info` on real crawls, broken files, and interrupted runs."""

from __future__ import annotations

import gzip
import io
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from bs4.dammit import EncodingDetector
from click.testing import CliRunner
from lxml import etree
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from rankstore.cli import EXIT_SKIPPED, cli
from rankstore.store import Store
from rankstore.urls import canonical

from conftest import data

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args, store=None):
    runner = CliRunner()
    argv = list(args) + (["--store", str(store)] if store else [])
    return runner.invoke(cli, argv, catch_exceptions=False)


def counts(store_path):
    with Store(str(store_path), readonly=True) as store:
        details = store.info()
    return details["crawled_pages"], details["links"]


def write_warc(path, records):
    """records: (url, status, headers list, body bytes) -> a WARC.gz written by warcio."""
    with open(path, "wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        for url, status, headers, body in records:
            http = StatusAndHeaders(f"{status} X", headers, protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http))


HTML = [("Content-Type", "text/html; charset=utf-8")]


# ------------------------------------------------------------------ real crawl


def _lxml_targets(item):
    url, body = item
    # the tree libxml2's HTML parser builds, in the encoding beautifulsoup4's detector offers first that decodes
    root = None
    for encoding in EncodingDetector(body, is_html=True).encodings:
        try:
            root = etree.fromstring(body, etree.HTMLParser(recover=True, strip_cdata=False, encoding=encoding))
            break
        except (UnicodeDecodeError, LookupError, etree.ParserError):
            continue
    targets = set()
    for tag in root.iter("a", "area") if root is not None else ():
        href = tag.get("href")
        if href and not href.strip().startswith("#"):
            target = canonical(href, url)
            if target:
                targets.add(target)
    return len(targets)


def independent_count(warc_path):
    """Pages and links of a crawl counted with warcio + lxml (not our code)."""
    pages, redirects, html = set(), 0, []
    for record in ArchiveIterator(open(warc_path, "rb")):
        if record.rec_type != "response":
            continue
        url = canonical(record.rec_headers.get_header("WARC-Target-URI").strip("<>"))
        status = int(record.http_headers.get_statuscode())
        content_type = record.http_headers.get_header("Content-Type") or ""
        if 300 <= status < 400 and record.http_headers.get_header("Location"):
            pages.add(url)
            redirects += 1
        elif 200 <= status < 300 and content_type.startswith("text/html"):
            pages.add(url)
            html.append((url, record.content_stream().read()))
    with multiprocessing.get_context("fork").Pool(os.cpu_count()) as pool:
        links = sum(pool.map(_lxml_targets, html, chunksize=8))
    return len(pages), links + redirects


def test_build_python_doc_crawl_matches_independent_count(python_doc_crawl, tmp_path):
    store = tmp_path / "py.db"
    result = run("build", python_doc_crawl.warc, store=store)
    assert result.exit_code == 0, result.output
    pages, links = counts(store)
    expected_pages, expected_links = independent_count(python_doc_crawl.warc)
    html_files = sum(1 for _, _, files in os.walk(python_doc_crawl.mirror) for f in files if f.endswith(".html"))
    assert pages == expected_pages
    assert links == expected_links
    assert pages >= html_files > 500
    assert f"{pages:,} pages, {links:,} links" in result.output


def test_build_mirror_directory_from_wget(python_doc_crawl, tmp_path):
    store = tmp_path / "mirror.db"
    result = run("build", python_doc_crawl.mirror, store=store)
    assert result.exit_code == 0, result.output
    html_files = sum(1 for _, _, files in os.walk(python_doc_crawl.mirror) for f in files if f.endswith(".html"))
    pages, links = counts(store)
    assert pages == html_files
    with Store(str(store), readonly=True) as opened:
        assert opened.pages.page_id(python_doc_crawl.base_url + "library/functions.html") is not None


def test_mirror_directory_with_base_url(tmp_path):
    store = tmp_path / "site.db"
    result = run("build", data("site"), "--base-url", "http://small.example/", store=store)
    assert result.exit_code == 0, result.output
    with Store(str(store), readonly=True) as opened:
        assert "http://small.example/docs/latin1.html" in opened.pages.out_links("http://small.example/index.html")


def test_directory_without_host_folders_needs_base_url(tmp_path):
    result = CliRunner().invoke(cli, ["build", data("site"), "--store", str(tmp_path / "x.db")])
    assert result.exit_code == 1
    assert "--base-url" in result.output


# ------------------------------------------------------------------ semantics


def test_small_crawl_contents(tmp_path):
    store = tmp_path / "small.db"
    assert run("build", data("small.warc.gz"), store=store).exit_code == 0
    with Store(str(store), readonly=True) as opened:
        pages, links = opened.pages.dump()
    by_url = {row[0]: row for row in pages}
    home = [url for url in by_url if url.endswith(":45779/index.html") or url.endswith("/index.html")][0]
    site = home[: -len("index.html")]
    assert by_url[site + "docs/latin1.html"][2] == "Café crème"  # charset only in a meta tag
    assert by_url[site + "docs/base.html"][2] == "Base & <href>"
    assert by_url[site + "docs"][4] == 301
    link_set = {(s, t): nofollow for s, t, nofollow, _, _ in links}
    assert link_set[(site + "docs", site + "docs/")] == 0  # a redirect is a link
    assert link_set[(home, "https://ads.example/")] == 1  # rel=sponsored
    assert link_set[(site + "docs/nofollow.html", site + "index.html")] == 1  # meta robots
    assert (site + "docs/base.html", "https://mirror.example/root/page.html") in link_set  # <base href>
    assert (home, site + "docs/area.html") in link_set  # <area href>
    assert not any(t.startswith(("mailto:", "javascript:")) for _, t in link_set)
    assert site + "docs/missing.html" in by_url and by_url[site + "docs/missing.html"][3] == 0  # 404: only linked


def test_same_crawl_twice_gives_same_store(tmp_path):
    one, two = tmp_path / "one.db", tmp_path / "two.db"
    run("build", data("small.warc.gz"), store=one)
    run("build", data("small.warc.gz"), store=two)
    run("build", data("small.warc.gz"), store=two)
    with Store(str(one), readonly=True) as a, Store(str(two), readonly=True) as b:
        assert a.pages.dump() == b.pages.dump()


def test_later_crawl_adds_and_recrawl_replaces_out_links(tmp_path):
    store = tmp_path / "edges.db"
    first = tmp_path / "first.tsv"
    first.write_text(
        "http://a.example/ http://b.example/\nhttp://a.example/ http://c.example/\n"
        "http://b.example/ http://a.example/\n"
    )
    second = tmp_path / "second.tsv"
    second.write_text("http://a.example/ http://d.example/\nhttp://e.example/ http://a.example/\n")
    run("build", str(first), store=store)
    run("build", str(second), store=store)
    with Store(str(store), readonly=True) as opened:
        assert opened.pages.out_links("http://a.example/") == ["http://d.example/"]  # replaced
        assert opened.pages.out_links("http://b.example/") == ["http://a.example/"]  # kept
        assert opened.pages.out_links("http://e.example/") == ["http://a.example/"]  # added
        assert len(opened.info()["builds"]) == 2


def test_edge_list_format(tmp_path):
    path = tmp_path / "edges.txt.gz"
    lines = [
        "# a comment line",
        "http://a.example/\thttp://b.example/  2.5",
        "http://a.example/ http://c.example/page#frag   # trailing comment",
        "",
        "http://a.example/ http://b.example/ 1",  # the same link again: a set, larger weight kept
        "only-one-field",
        "http://a.example/ http://d.example/ -1",
        "http://a.example/ mailto:x@example.com",
        "ftp://x.example/ http://a.example/",
        "http://a.example/ http://" + "x" * 70000 + ".example/",
        "http://b.example/ http://a.example/",
    ]
    path.write_bytes(gzip.compress("\n".join(lines).encode()))
    result = CliRunner().invoke(cli, ["build", str(path), "--store", str(tmp_path / "e.db")])
    assert result.exit_code == EXIT_SKIPPED, result.output
    assert "expected SRC DST [WEIGHT], got 1 fields" in result.output
    assert f"{path}:6" in result.output  # the location of a bad line
    assert "line over 65536 bytes" in result.output
    db = sqlite3.connect(tmp_path / "e.db")
    rows = db.execute(
        "SELECT s.url, t.url, l.weight FROM links l JOIN pages s ON s.id = l.src"
        " JOIN pages t ON t.id = l.dst ORDER BY 1, 2"
    ).fetchall()
    assert rows == [
        ("http://a.example/", "http://b.example/", 2.5),
        ("http://a.example/", "http://c.example/page", 1.0),
        ("http://b.example/", "http://a.example/", 1.0),
    ]


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("name, pages", [("truncated.warc.gz", 6), ("garbage.warc.gz", 8), ("garbage.warc", 8)])
def test_broken_warc_files_load_their_good_records(tmp_path, name, pages):
    store = tmp_path / "broken.db"
    result = CliRunner().invoke(cli, ["build", data(name), "--store", str(store)])
    assert result.exit_code == EXIT_SKIPPED, result.output
    assert f"{data(name)}@" in result.output  # file and offset
    assert "unreadable WARC data" in result.output
    assert counts(store)[0] == pages
    db = sqlite3.connect(store)
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_uncompressed_warc_loads_like_compressed(tmp_path):
    run("build", data("small.warc"), store=tmp_path / "a.db")
    run("build", data("small.warc.gz"), store=tmp_path / "b.db")
    with Store(str(tmp_path / "a.db"), readonly=True) as a, Store(str(tmp_path / "b.db"), readonly=True) as b:
        assert a.pages.dump() == b.pages.dump()


def test_hostile_records_are_skipped_or_survived(tmp_path):
    warc = tmp_path / "hostile.warc.gz"
    huge_line = b"<title>huge</title><p>" + b"x" * (20 * 1024 * 1024) + b"<a href='/after-huge'>a</a>"
    deep = b"<title>deep</title>" + b"<div>" * 10000 + b"<a href='/deep'>d</a>"
    write_warc(
        warc,
        [
            ("http://ok.example/", 200, HTML, b"<title>ok</title><a href='/x'>x</a>"),
            ("http://bin.example/", 200, HTML, bytes(range(256)) * 64),
            (
                "http://lat.example/",
                200,
                [("Content-Type", "text/html; charset=utf-8")],
                "<title>Caf\xe9</title>".encode("latin-1"),
            ),  # mislabelled
            ("http://none.example/", 200, [("Content-Type", "text/html")], "<title>Café</title>".encode("cp1252")),
            ("http://huge.example/", 200, HTML, huge_line),
            ("http://deep.example/", 200, HTML, deep),
            ("not a url at all", 200, HTML, b"<title>bad url</title>"),
            ("http://img.example/x.png", 200, [("Content-Type", "image/png")], b"\x89PNG...."),
            ("http://err.example/", 500, HTML, b"<title>error</title>"),
            ("http://redir.example/", 302, [("Location", "/target")], b""),
            ("http://redir2.example/", 301, [("Location", "javascript:alert(1)")], b""),
            ("http://last.example/", 200, HTML, b"<title>last</title>"),
        ],
    )
    store = tmp_path / "h.db"
    result = CliRunner().invoke(cli, ["build", str(warc), "--store", str(store)])
    assert result.exit_code == EXIT_SKIPPED, result.output
    assert "binary content labelled as HTML" in result.output
    assert "not an http(s) URL" in result.output
    db = sqlite3.connect(store)
    titles = dict(db.execute("SELECT url, title FROM pages WHERE crawled"))
    assert titles["http://ok.example/"] == "ok"
    assert titles["http://lat.example/"] == "Caf\ufffd"
    assert titles["http://none.example/"] == "Café"
    assert titles["http://huge.example/"] == "huge"
    assert titles["http://deep.example/"] == "deep"
    assert titles["http://last.example/"] == "last"
    assert "http://bin.example/" not in titles and "http://err.example/" not in titles
    assert "http://img.example/x.png" not in titles
    assert db.execute(
        "SELECT t.url FROM links JOIN pages s ON s.id = src JOIN pages t ON t.id = dst"
        " WHERE s.url = 'http://redir.example/'"
    ).fetchall() == [("http://redir.example/target",)]
    assert "http://redir2.example/" in titles  # a redirect to javascript: is a page without links


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: None, "no such file or directory"),
        (lambda p: p.write_bytes(b""), "empty file"),
        (lambda p: p.write_bytes(b"\x1f\x8b\x08\x00garbage"), "cannot decompress"),
        (lambda p: p.write_bytes(bytes(range(256)) * 10), "binary content"),
    ],
)
def test_unusable_source_is_an_error(tmp_path, make, message):
    source = tmp_path / "source.bin"
    make(source)
    result = CliRunner().invoke(cli, ["build", str(source), "--store", str(tmp_path / "s.db")])
    assert result.exit_code == 1
    assert message in result.output and str(source) in result.output


def test_store_that_is_not_a_database(tmp_path):
    bogus = tmp_path / "bogus.db"
    bogus.write_bytes(b"this is not sqlite" * 100)
    result = CliRunner().invoke(cli, ["build", data("small.warc.gz"), "--store", str(bogus)])
    assert result.exit_code == 1 and "not a rankstore store" in result.output


def test_sigkill_half_way_leaves_a_good_store(python_doc_crawl, tmp_path):
    store = tmp_path / "killed.db"
    assert run("build", data("small.warc.gz"), store=store).exit_code == 0
    before = counts(store)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rankstore",
            "build",
            python_doc_crawl.warc,
            "--store",
            str(store),
            "--commit-every",
            "20",
            "-q",
        ],
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            time.sleep(0.05)
            try:
                with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
                    crawled = db.execute("SELECT count(*) FROM pages WHERE crawled").fetchone()[0]
            except sqlite3.OperationalError:
                continue
            if crawled > before[0] + 100:
                break
        else:
            pytest.fail("the build did not commit anything within 60 s")
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    db = sqlite3.connect(store)
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    statuses = [row[0] for row in db.execute("SELECT status FROM builds ORDER BY id")]
    assert statuses == ["complete", "running"]
    db.close()
    partial = counts(store)
    assert partial[0] > before[0]
    # everything from the earlier build is still there
    clean = tmp_path / "clean.db"
    run("build", data("small.warc.gz"), store=clean)
    with Store(str(clean), readonly=True) as a, Store(str(store), readonly=True) as b:
        small_pages = {row[0] for row in a.pages.dump()[0] if row[3]}
        assert small_pages <= {row[0] for row in b.pages.dump()[0] if row[3]}
    # a re-run completes it: the same store as an uninterrupted build
    assert run("build", python_doc_crawl.warc, store=store).exit_code == 0
    run("build", python_doc_crawl.warc, store=clean)
    with Store(str(clean), readonly=True) as a, Store(str(store), readonly=True) as b:
        assert a.pages.dump()[1] == b.pages.dump()[1]
        assert {r[0] for r in a.pages.dump()[0]} == {r[0] for r in b.pages.dump()[0]}


def test_info_lists_counts_builds_and_size(tmp_path):
    store = tmp_path / "i.db"
    run("build", data("small.warc.gz"), store=store)
    result = run("info", store=store)
    assert result.exit_code == 0
    assert "pages:    17 (8 crawled, 9 only linked to)" in result.output
    assert "#1" in result.output and "complete" in result.output and "KiB" in result.output
    assert run("info", "--json", store=store).output.startswith("{")


def test_info_on_missing_store(tmp_path):
    result = CliRunner().invoke(cli, ["info", "--store", str(tmp_path / "none.db")])
    assert result.exit_code == 1 and "no such store" in result.output


def test_store_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("RANKSTORE", str(tmp_path / "env.db"))
    assert CliRunner().invoke(cli, ["build", data("small.warc.gz")]).exit_code == 0
    assert (tmp_path / "env.db").exists()


@pytest.mark.parametrize("command", [[], ["build"], ["info"]])
def test_help_has_examples(command):
    result = CliRunner().invoke(cli, command + ["--help"])
    assert result.exit_code == 0 and "Example" in result.output


# ------------------------------------------------------------------ Common Crawl's web graphs

CC_HOST = data("ccgraph/host")
CC_URLS = [
    "https://example.com/",
    "https://blog.example.com/",
    "https://shop.example.com/",
    "https://en.wikipedia.org/",
    "https://de.wikipedia.org/",
    "https://bbc.co.uk/",
    "https://news.bbc.co.uk/",
    "https://xn--bcher-kva.net/",
]
CC_EDGES = [(0, 1), (0, 2), (0, 3), (1, 0), (1, 2), (2, 0), (3, 4), (3, 0), (4, 3), (5, 6), (6, 5), (6, 0), (7, 0)]


def test_common_crawl_graph_built_and_ranked_from_the_command_line(tmp_path):
    store = tmp_path / "cc.db"
    result = CliRunner().invoke(
        cli,
        [
            "build",
            os.path.join(CC_HOST, "vertices.paths.gz"),
            os.path.join(CC_HOST, "edges.paths.gz"),
            "--store",
            str(store),
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "8 pages, 13 links" in result.output
    assert CliRunner().invoke(cli, ["rank", "--store", str(store), "-q"]).exit_code == 0
    db = sqlite3.connect(store)
    assert sorted(db.execute("SELECT url FROM pages")) == sorted((url,) for url in CC_URLS)
    links = db.execute("SELECT s.url, t.url FROM links l JOIN pages s ON s.id = l.src JOIN pages t ON t.id = l.dst")
    assert sorted(links) == sorted((CC_URLS[a], CC_URLS[b]) for a, b in CC_EDGES)
    best = db.execute("SELECT url FROM current_scores ORDER BY pagerank DESC LIMIT 1").fetchone()[0]
    assert best == "https://example.com/"  # linked from five hosts of three sites
    broken = CliRunner().invoke(
        cli,
        [
            "build",
            data("ccgraph/broken/vertices.txt.gz"),
            data("ccgraph/broken/edges-00000.txt.gz"),
            "--store",
            str(tmp_path / "b.db"),
        ],
    )
    assert broken.exit_code == EXIT_SKIPPED
    assert "edges-00000.txt.gz:5: not an edge line" in broken.output
    missing = CliRunner().invoke(
        cli, ["build", os.path.join(CC_HOST, "edges.paths.gz"), "--store", str(tmp_path / "m.db")]
    )
    assert missing.exit_code == 1 and "VERTICES EDGES" in missing.output and "Traceback" not in missing.output


def test_common_crawl_graphs_are_told_from_content():
    from rankstore.sources import detect_format

    assert detect_format(CC_HOST) == "ccgraph"  # a folder holding both halves
    assert detect_format(os.path.join(CC_HOST, "vertices", "part-00000.gz")) == "ccgraph"
    assert detect_format(os.path.join(CC_HOST, "edges.paths.gz")) == "ccgraph"
    assert detect_format(data("site")) == "html"
