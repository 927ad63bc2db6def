"""rankstore extract: crawl files -> Parquet of links and pages, parsed as build parses them; build of the result.

On the wget crawl of python3.11-doc (and its WAT, written by tests/watgen.py): the store built from the
extraction holds the same pages and links (nofollow and anchors too) as the store built from the WARC; the
WAT's extraction holds the WARC's links (anchors as far as a WAT keeps them); --to-site keeps exactly the
links into the site; a file that cannot be read is named and skipped while the rest go on; a second run
skips the files done, and a file changed is read again.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import sqlite3

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from sitecrawl import serve_process
from test_wat import _same_text
from watgen import write_wat

from proxy_addon.pages import respond
from proxy_addon.ranks import Ranks
from rankstore.cli import cli
from rankstore.sources.extracted import read_ledger
from rankstore.urls import host_of, site_of


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def links_of(store: str) -> set[tuple]:
    with sqlite3.connect(store) as db:
        return set(
            db.execute(
                "SELECT s.url, d.url, l.nofollow, coalesce(l.anchor, '') FROM links l JOIN pages s ON s.id = l.src"
                " JOIN pages d ON d.id = l.dst"
            )
        )


def pages_of(store: str) -> set[tuple]:
    with sqlite3.connect(store) as db:
        return set(db.execute("SELECT url, status, coalesce(title, ''), crawled FROM pages"))


def parquet_links(folder: str) -> set[tuple]:
    found = set()
    for name in os.listdir(os.path.join(folder, "links")):
        for row in pq.read_table(os.path.join(folder, "links", name)).to_pylist():
            found.add((row["source"], row["target"], row["nofollow"], row["anchor"] or ""))
    return found


@pytest.fixture(scope="module")
def extracted(python_doc_crawl, python_doc_store, tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("extract") / "out")
    result = invoke("extract", python_doc_crawl.warc, "-o", folder, "-q")
    assert result.exit_code == 0, result.output
    return folder


def test_a_build_of_the_extraction_is_the_build_of_the_crawl(wat_reader, extracted, python_doc_store, tmp_path):
    store = str(tmp_path / "x.db")
    result = invoke("build", extracted, "--store", store, "-q")
    assert result.exit_code == 0, result.output
    expected = links_of(python_doc_store)
    assert len(expected) > 20_000 and sum(1 for link in expected if link[2]) > 100  # nofollow ones among them
    assert links_of(store) == expected
    assert pages_of(store) == pages_of(python_doc_store)


def test_the_wat_of_the_crawl_extracts_the_same_links(wat_reader, python_doc_crawl, extracted, tmp_path):
    wat = str(tmp_path / "python-doc.warc.wat.gz")
    write_wat(python_doc_crawl.warc, wat)
    folder = str(tmp_path / "wat-out")
    assert invoke("extract", wat, "-o", folder, "-q").exit_code == 0
    from_wat = {link[:3]: link[3] for link in parquet_links(folder)}
    from_warc = {link[:3]: link[3] for link in parquet_links(extracted)}
    assert from_wat.keys() == from_warc.keys() and len(from_wat) > 20_000
    # the anchor texts, but for what Common Crawl's WAT writer loses past 128 characters (test_wat's rule)
    assert all(_same_text(from_warc[key], text) for key, text in from_wat.items())


def test_to_site_keeps_exactly_the_links_into_the_site(wat_reader, python_doc_crawl, extracted, tmp_path):
    everything = parquet_links(extracted)
    sites = {site_of(host_of(link[1])) for link in everything}
    outside = sorted(site for site in sites if not site.startswith("127.0.0.1"))
    assert len(outside) > 5
    chosen = outside[:3]
    listing = tmp_path / "sites.txt"
    listing.write_text("# watched\n" + "\n".join(chosen[1:]) + "\n")
    folder = str(tmp_path / "watched")
    result = invoke("extract", python_doc_crawl.warc, "-o", folder, "--to-site", chosen[0], "--to-sites", str(listing))
    assert result.exit_code == 0, result.output
    kept = parquet_links(folder)
    assert kept == {link for link in everything if site_of(host_of(link[1])) in chosen} and kept
    pages = {row["url"] for name in os.listdir(os.path.join(folder, "pages"))
             for row in pq.read_table(os.path.join(folder, "pages", name)).to_pylist()}  # fmt: skip
    assert pages == {link[0] for link in kept}  # the pages that hold them, no other


def test_a_bad_file_is_named_and_skipped_a_rerun_skips_what_is_done_and_reads_a_changed_file(
    python_doc_crawl, tmp_path
):
    good = str(tmp_path / "good.warc.gz")
    shutil.copy(python_doc_crawl.warc, good)
    bad = tmp_path / "bad.warc.gz"
    bad.write_bytes(b"not a crawl at all\n" * 10)
    folder = str(tmp_path / "out")
    result = invoke("extract", str(bad), good, "-o", folder, "-j", "2")
    assert result.exit_code == 3
    assert f"{bad}: skipped" in result.output and "1 could not be read" in result.output
    assert "Traceback" not in result.output
    done = [json.loads(line) for line in open(os.path.join(folder, "done.jsonl"))]
    assert [item["file"] for item in done] == [good] and done[0]["links"] > 20_000
    again = invoke("extract", good, "-o", folder)
    assert again.exit_code == 0 and "1 done before, skipped" in again.output and "extracted 0 file(s)" in again.output
    with open(good, "ab") as handle:  # the file changed (a record appended): read again
        handle.write(open(python_doc_crawl.warc, "rb").read(4096))
    third = invoke("extract", good, "-o", folder, "-q")
    assert "extracted 1 file(s)" in third.output


def test_a_folder_of_other_files_is_refused_in_one_line(python_doc_crawl, tmp_path):
    (tmp_path / "mine.txt").write_text("mine")
    result = invoke("extract", python_doc_crawl.warc, "-o", str(tmp_path))
    assert result.exit_code == 1 and "a folder of other files" in result.output and "Traceback" not in result.output
    assert invoke("extract", python_doc_crawl.warc, "-o", str(tmp_path / "x"), "--to-site", "http://").exit_code == 1


@pytest.mark.parametrize(
    "args", [["--jobs", "0"], ["--engine", "beam"], ["--master", "local[2]"], ["--spark-conf", "a=b"], ["--limit", "0"]]
)
def test_bad_options_are_usage_errors(python_doc_crawl, tmp_path, args):
    result = invoke("extract", python_doc_crawl.warc, "-o", str(tmp_path / "out"), *args)
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_a_missing_sites_file_is_one_line(python_doc_crawl, tmp_path):
    result = invoke("extract", python_doc_crawl.warc, "-o", str(tmp_path / "out"), "--to-sites", "no-such.txt")
    assert result.exit_code == 1 and "no-such.txt" in result.output and "Traceback" not in result.output


def test_a_missing_file_is_named_and_skipped(python_doc_crawl, tmp_path):
    result = invoke("extract", str(tmp_path / "nowhere.warc.gz"), "-o", str(tmp_path / "out"), "-q")
    assert result.exit_code == 3 and "nowhere.warc.gz" in result.output and "Traceback" not in result.output


def parquet_rows(folder: str, what: str) -> list[dict]:
    rows = []
    for name in sorted(os.listdir(os.path.join(folder, what))):
        rows.extend(pq.read_table(os.path.join(folder, what, name)).to_pylist())
    return sorted(rows, key=lambda row: json.dumps(row, sort_keys=True))


@pytest.fixture(scope="module")
def served(python_doc_crawl, tmp_path_factory):
    """The crawl's WARC and its WAT on a local HTTP server, as Common Crawl's archive serves its files."""
    folder = tmp_path_factory.mktemp("served")
    (folder / "crawl-data").mkdir()
    shutil.copy(python_doc_crawl.warc, folder / "crawl-data" / "python-doc.warc.gz")
    write_wat(python_doc_crawl.warc, str(folder / "crawl-data" / "python-doc.warc.wat.gz"))
    server, port = serve_process(str(folder))
    try:
        yield folder, f"http://127.0.0.1:{port}/"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_files_at_urls_and_a_listing_of_them_extract_as_the_files_on_disk(served, tmp_path):
    folder, base = served
    on_disk = str(tmp_path / "disk")
    files = [str(folder / "crawl-data" / name) for name in ("python-doc.warc.gz", "python-doc.warc.wat.gz")]
    assert invoke("extract", *files, "-o", on_disk, "-q").exit_code == 0
    by_url = str(tmp_path / "urls")
    urls = [base + "crawl-data/" + os.path.basename(name) for name in files]
    result = invoke("extract", *urls, "-o", by_url)
    assert result.exit_code == 0, result.output
    assert "2 of 2 files, 1,056 records, 44,056 links" in result.output  # the progress: files, records, links
    listing = tmp_path / "wat.paths.gz"
    listing.write_bytes(gzip.compress(b"crawl-data/python-doc.warc.wat.gz\ncrawl-data/python-doc.warc.gz\n"))
    by_listing = str(tmp_path / "listing")
    result = invoke("extract", str(listing), "--paths-base", base, "--limit", "1", "-o", by_listing, "-q")
    assert result.exit_code == 0, result.output
    assert list(read_ledger(by_listing)) == [urls[1]]  # the listing's first file alone
    for what in ("links", "pages"):
        assert parquet_rows(by_url, what) == parquet_rows(on_disk, what)
    wat_only = str(tmp_path / "wat-disk")
    assert invoke("extract", files[1], "-o", wat_only, "-q").exit_code == 0
    for what in ("links", "pages"):
        assert parquet_rows(by_listing, what) == parquet_rows(wat_only, what)
    ledger = read_ledger(by_url)
    assert all(item.checksum.startswith("xxh3_64:") for item in ledger.values())
    assert {item.size for item in ledger.values()} == {os.path.getsize(name) for name in files}
    # again: the URLs done are skipped, not fetched; the one not done yet is read
    again = invoke("extract", str(listing), "--paths-base", base, "-o", by_listing)
    assert again.exit_code == 0 and "extracted 1 file(s)" in again.output and "1 done before" in again.output


def test_a_missing_url_is_named_and_skipped_and_the_others_go_on(served, tmp_path):
    _, base = served
    missing = base + "crawl-data/nowhere.warc.wat.gz"
    result = invoke("extract", missing, base + "crawl-data/python-doc.warc.wat.gz", "-o", str(tmp_path / "out"))
    assert result.exit_code == 3, result.output
    assert f"{missing}: skipped" in result.output and "404" in result.output and "Traceback" not in result.output
    assert "extracted 1 file(s)" in result.output


def test_a_ledger_of_the_first_version_is_read(tmp_path):
    (tmp_path / "done.jsonl").write_text(
        json.dumps({"file": "a.warc.gz", "size": 3, "sha256": "ab" * 32, "part": "a-abab", "pages": 1, "links": 2,
                    "skipped": 0}) + "\n"
    )  # fmt: skip
    assert read_ledger(str(tmp_path))["a.warc.gz"].checksum == "sha256:" + "ab" * 32


def _referrers_warc(path) -> str:
    """Pages on several hosts, most of them linking into rival.example (one by nofollow, one with an anchor)."""
    import io

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    pages = {
        "http://a.one.example/p": '<a href="http://rival.example/">Rival</a><a href="http://other.example/">o</a>',
        "http://b.two.example/q": '<a href="http://shop.rival.example/">cheap shoes</a>',
        "http://c.three.example/r": '<a rel="nofollow" href="http://rival.example/x">x</a>',
        "http://d.four.example/s": '<a href="http://other.example/">none into the site</a>',
        "http://e.sited.example/t": '<a href="http://rival.example/">e</a><a href="http://shop.rival.example/">s</a>',
        "http://f.nowhere.example/u": '<a href="http://rival.example/">f</a>',
    }
    with open(path, "wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        for url, body in pages.items():
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            payload = io.BytesIO(f"<!doctype html><title>{url}</title><body>{body}</body>".encode())
            writer.write_record(writer.create_warc_record(url, "response", payload=payload, http_headers=http))
    return str(path)


def test_a_watched_sites_backlinks_from_an_extraction_are_ordered_by_host_else_site_rank_then_by_page(tmp_path):
    """The store of an extraction (no page ranked) with Common Crawl's host and domain ranks loaded: the
    site's backlinks by each referring page's host rank, else its site's, then the rest; ranked, by PageRank,
    and the analyst's other views answer on it."""
    folder = str(tmp_path / "watched")
    warc = _referrers_warc(tmp_path / "crawl.warc.gz")
    assert invoke("extract", warc, "--to-site", "rival.example", "-o", folder, "-q").exit_code == 0
    header = "#harmonicc_pos\t#harmonicc_val\t#pr_pos\t#pr_val\t#host_rev\n"
    hosts = tmp_path / "host-ranks.txt.gz"
    hosts.write_bytes(gzip.compress((header + "1\t9.0\t1\t0.5\texample.two.b\n2\t8.0\t2\t0.3\texample.one.a\n"
                                     "3\t7.0\t3\t0.1\texample.three.c\n").encode()))  # fmt: skip
    store = str(tmp_path / "w.db")
    result = invoke("build", folder, str(hosts), "--store", store, "-q")
    assert result.exit_code == 0, result.output
    result = invoke("backlinks", "rival.example", "--site", "--store", store, "--format", "json", "-n", "0")
    assert result.exit_code == 0, result.output
    placed = [(row["url"], row["level"]) for row in json.loads(result.stdout)]
    assert placed[:3] == [("http://b.two.example/q", "host"), ("http://a.one.example/p", "host"),
                          ("http://c.three.example/r", "host")]  # fmt: skip
    assert sorted(placed[3:]) == [("http://e.sited.example/t", None)] * 2 + [("http://f.nowhere.example/u", None)]
    # the sites ranked too (from the extracted links): a page whose host is not ranked, by its site's rank
    assert invoke("rank", "--store", store, "--level", "site", "-q").exit_code == 0
    result = invoke("backlinks", "rival.example", "--site", "--store", store, "--format", "json", "-n", "0")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    placed = [(row["url"], row["level"]) for row in rows]
    assert placed[:3] == [("http://b.two.example/q", "host"), ("http://a.one.example/p", "host"),
                          ("http://c.three.example/r", "host")]  # fmt: skip
    assert sorted(placed[3:]) == [("http://e.sited.example/t", "site")] * 2 + [("http://f.nowhere.example/u", "site")]
    assert rows[3]["estimate"] >= rows[5]["estimate"] and rows[3]["answered_by"] == "siterank"
    assert rows[0]["anchor"] == "cheap shoes" and rows[0]["target"] == "http://shop.rival.example/"
    assert rows[2]["kind"] == "nofollow" and rows[0]["level_rank"] == 1 and rows[0]["answered_by"].startswith("cc-")
    table = invoke("backlinks", "rival.example", "--site", "--store", store)
    assert "the store ranks no pages: each backlink by its host's rank in cc-" in table.output
    assert "else its site's rank in siterank" in table.output
    ranks = Ranks(store)  # the proxy's own /backlinks, in the same order
    try:
        status, _, body = respond("GET", "/backlinks", {"site": ["rival.example"]}, ranks)
        csv_status, _, csv = respond("GET", "/backlinks", {"site": ["rival.example"], "format": ["csv"]}, ranks)
    finally:
        ranks.close()
    assert status == 200 and re.findall(r'<tr data-url="([^"]+)"', body.decode()) == [row["url"] for row in rows]
    assert "cheap shoes" in body.decode() and "by its host&#x27;s rank in cc-" in body.decode()
    assert csv_status == 200 and csv.decode().splitlines()[0].startswith("level_rank,estimate,level,answered_by")
    refused = invoke("backlinks", "rival.example", "--site", "--store", store, "--sort", "contribution")
    assert refused.exit_code == 1 and "rankstore rank" in refused.output and "Traceback" not in refused.output
    # ranked: by the pages' own PageRank, with contribution; the other views answer too
    assert invoke("rank", "--store", store, "-q").exit_code == 0
    ranked = json.loads(invoke("backlinks", "http://rival.example/", "--store", store, "--format", "json").stdout)
    assert {row["url"] for row in ranked["rows"]} == {"http://a.one.example/p", "http://e.sited.example/t",
                                                      "http://f.nowhere.example/u"}  # fmt: skip
    assert all(row["contribution"] > 0 for row in ranked["rows"])
    anchors = invoke("anchors", "http://shop.rival.example/", "--store", store, "--format", "json")
    assert anchors.exit_code == 0 and "cheap shoes" in anchors.stdout
    both = invoke(
        "intersect", "http://rival.example/", "http://shop.rival.example/", "--store", store, "--format", "json"
    )
    assert both.exit_code == 0, both.output
    assert [row["url"] for row in json.loads(both.stdout)] == ["http://e.sited.example/t"]
    builds = invoke("builds", "--store", store, "--format", "json")
    assert builds.exit_code == 0 and json.loads(builds.stdout)
