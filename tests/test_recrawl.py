"""Recrawls that respect status and time, on real crawls by wget and on WARC records with set dates.

A small site is served on 127.0.0.1 and crawled three times by wget: then a
page is deleted (the second crawl gets 404 for it), a link is changed and a
page added; then one page gains a link and only that page is fetched again
(a small build).  A page found gone loses its links as of that build; loading
the crawls newest first keeps the newest links (the older crawl is history);
a small build keeps every other page's "new" marks.  Records written by
warcio with explicit WARC-Dates check the order of captures within one build,
a redirect and a 410.  The build's progress bar is read as a person sees it,
on a terminal.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import pty
import re
import shutil
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner
from sitecrawl import crawl, serve
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from proxy_addon.markup import panel
from proxy_addon.ranks import Ranks
from rankstore.cli import cli
from rankstore.sources import edgelist
from rankstore.store import Store, analysis

from conftest import POSTGRES_DOC

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def page(title: str, *hrefs: str) -> str:
    links = " ".join(f'<a href="{href}">{href}</a>' for href in hrefs)
    return f"<!doctype html><html><head><title>{title}</title></head><body>{links}</body></html>"


def fetch_one(url: str, warc: str) -> None:
    """One page fetched by wget into a WARC.gz (no mirror): a small recrawl."""
    subprocess.run(
        ["wget", "-q", f"--warc-file={warc[: -len('.warc.gz')]}", "--no-warc-keep-log", "-O", os.devnull, url],
        check=True,
        timeout=60,
    )


@pytest.fixture(scope="module")
def crawls(tmp_path_factory):
    """(work folder, base URL): one.warc.gz, two.warc.gz (b.html deleted, a.html's link to c.html now to the new
    d.html), three.warc.gz (index.html alone, which now links to d.html too)."""
    if shutil.which("wget") is None:
        pytest.fail("wget is missing: run tools/setup.sh")
    work = tmp_path_factory.mktemp("recrawl")
    site = work / "site"
    site.mkdir()
    (site / "index.html").write_text(page("Home", "a.html", "b.html", "c.html"))
    (site / "a.html").write_text(page("A", "b.html", "c.html"))
    (site / "b.html").write_text(page("B", "c.html"))
    (site / "c.html").write_text(page("C", "index.html"))
    with serve(str(site)) as url:
        crawl(url, str(work / "one.warc.gz"))
        (site / "b.html").unlink()
        (site / "a.html").write_text(page("A", "b.html", "d.html"))
        (site / "d.html").write_text(page("D", "c.html"))
        time.sleep(1.1)  # WARC-Date counts seconds: each crawl its own
        crawl(url, str(work / "two.warc.gz"))
        (site / "index.html").write_text(page("Home", "a.html", "b.html", "c.html", "d.html"))
        time.sleep(1.1)
        fetch_one(url + "index.html", str(work / "three.warc.gz"))
    return work, url


def pages_of(store: str) -> dict[str, tuple]:
    """{url: (title, crawled, status)}."""
    with Store(store, readonly=True) as opened:
        return {row[0]: (row[2], row[3], row[4]) for row in opened.pages.dump()[0]}


def out_links(store: str, url: str) -> list[str]:
    with Store(store, readonly=True) as opened:
        return opened.pages.out_links(url)


def lost(store: str, url: str, *more: str) -> dict[str, int]:
    """{linking page: the build that lost its link}, as `backlinks --lost` lists them."""
    rows = json.loads(run("backlinks", url, "--lost", "--format", "json", "--store", store, *more))
    return {row["url"]: row["lost_in"] for row in rows}


def new_marks(store: str, url: str):
    """The panel of ``url`` through the proxy's reader: (its data, the pages whose links to it are marked new)."""
    ranks = Ranks(store, panel_size=100)
    try:
        data = ranks.panel(url)
    finally:
        ranks.close()
    return data, sorted(link.url for link in data.backlinks if link.new)


# ------------------------------------------------------------------ a page found gone


@pytest.fixture(scope="module")
def in_order(crawls, tmp_path_factory):
    """The first two crawls built in the order they were made, and the output of the second build."""
    work, url = crawls
    store = str(tmp_path_factory.mktemp("in-order") / "s.db")
    run("build", str(work / "one.warc.gz"), "--store", store, "-q")
    output = run("build", str(work / "two.warc.gz"), "--store", store, "-q")
    run("rank", "--store", store, "-q")
    return store, url, output


def test_a_page_found_gone_loses_its_links_as_of_that_build(in_order):
    store, url, output = in_order
    assert pages_of(store)[url + "b.html"] == (None, 0, 404)  # gone: no title, not crawled now, its status
    assert out_links(store, url + "b.html") == []
    # its link to c.html is lost in build 2, beside the one a.html no longer has
    assert lost(store, url + "c.html") == {url + "a.html": 2, url + "b.html": 2}
    assert lost(store, url + "c.html", "--since", "2") == {}
    builds = json.loads(run("builds", "--format", "json", "--store", store))
    assert [(b["build"], b["lost_links"]) for b in builds] == [(1, 0), (2, 2)]
    assert "1 page(s) found gone (404, 410)" in output
    # still a page of the graph, linked from index.html and a.html, that ranks nothing on
    backlinks = json.loads(run("backlinks", url + "b.html", "--format", "json", "--store", store))["rows"]
    assert {row["url"] for row in backlinks if row["kind"] == "link"} == {url, url + "index.html", url + "a.html"}


def test_build_rank_ranks_after_building(crawls, tmp_path):
    work, url = crawls
    store = str(tmp_path / "s.db")
    run("build", str(work / "one.warc.gz"), "--store", store, "-q")
    output = run("build", str(work / "two.warc.gz"), "--store", store, "-q", "--rank")
    assert re.search(r"^built .*: 5 pages, ", output, re.M) and re.search(r"^ranked pagerank v1: 6 pages", output, re.M)
    with Store(store, readonly=True) as opened:
        assert opened.rankings.ranking("pagerank").build == 2  # the graph of the build just made
    top = json.loads(run("top", "--format", "json", "--store", store))
    assert url + "d.html" in {row["url"] for row in top}


# ------------------------------------------------------------------ captures ordered by their time


@pytest.fixture(scope="module")
def newest_first(crawls, tmp_path_factory):
    """The second crawl built first, then the first (older) one."""
    work, url = crawls
    store = str(tmp_path_factory.mktemp("newest-first") / "s.db")
    run("build", str(work / "two.warc.gz"), "--store", store, "-q")
    output = run("build", str(work / "one.warc.gz"), "--store", store, "-q")
    run("rank", "--store", store, "-q")
    return store, url, output


def test_an_older_crawl_loaded_later_never_replaces_the_newer_links(newest_first, in_order):
    store, url, output = newest_first
    assert out_links(store, url + "a.html") == [url + "b.html", url + "d.html"]
    assert pages_of(store)[url + "b.html"] == (None, 0, 404)
    assert lost(store, url + "d.html") == {}  # the newer link is current, not lost
    assert "5 capture(s) older than the store's copy of their page: kept as history" in output
    assert "built " in output and ": 0 pages, 0 links" in output
    # the same links as when the crawls came in order
    with Store(store, readonly=True) as a, Store(in_order[0], readonly=True) as b:
        assert a.pages.dump()[1] == b.pages.dump()[1]


def test_an_older_crawl_becomes_history(newest_first):
    store, url, _ = newest_first
    # the older capture had a.html -> c.html and b.html -> c.html: lost as of the newer capture (build 1),
    # seen by build 2, which loaded the older one
    rows = json.loads(run("backlinks", url + "c.html", "--lost", "--format", "json", "--store", store))
    assert {row["url"]: (row["first_seen"], row["last_seen"], row["lost_in"]) for row in rows} == {
        url + "a.html": (2, 2, 1),
        url + "b.html": (2, 2, 1),
    }
    # a.html -> d.html is what the newer capture found that the older one had not: new
    data, new = new_marks(store, url + "d.html")
    assert new == [url + "a.html"] and data.new_backlinks == 1


# ------------------------------------------------------------------ new against each page's previous crawl


@pytest.fixture(scope="module")
def small_build(crawls, tmp_path_factory):
    """The three crawls built in order, the third (index.html alone) a small build, ranked."""
    work, url = crawls
    store = str(tmp_path_factory.mktemp("small-build") / "s.db")
    for name in ("one", "two", "three"):
        run("build", str(work / f"{name}.warc.gz"), "--store", store, "-q")
    run("rank", "--store", store, "-q")
    return store, url


def test_a_small_build_keeps_the_other_pages_new_marks(small_build):
    store, url = small_build
    data, new = new_marks(store, url + "d.html")
    # a.html's link was found by its latest crawl (build 2), index.html's by its own (build 3): both new
    assert new == [url + "a.html", url + "index.html"]
    assert data.new_backlinks == 2 and data.since == 1
    assert "2 new since build 1" in panel(data)
    # every new backlink is among those the "since" link lists
    since = json.loads(run("backlinks", url + "d.html", "--since", "1", "--format", "json", "--store", store))["rows"]
    assert set(new) <= {row["url"] for row in since}


def test_a_link_is_new_until_its_page_is_crawled_again(small_build):
    store, url = small_build
    # d.html, first crawled by build 2 and not since: its link to c.html is new; index.html's, there since the
    # store's first crawl, is not
    data, new = new_marks(store, url + "c.html")
    assert new == [url + "d.html"] and data.new_backlinks == 1
    # a.html's link to b.html, found by its first crawl and again by its second, is not
    data, new = new_marks(store, url + "b.html")
    assert new == [] and data.new_backlinks == 0 and url + "a.html" in {link.url for link in data.backlinks}
    with Store(store, readonly=True) as opened:
        target = opened.pages.page_id(url + "d.html")
        links = analysis.in_slice(opened, target)
        marked = opened.graph.new_in_links(target, links)
        assert len(marked) == len(links.sources)
        by_url = opened.pages.urls_of((links.sources + 1).tolist())
        assert sorted(by_url[int(s) + 1] for s in links.sources[marked]) == [url + "a.html", url + "index.html"]


# ------------------------------------------------------------------ WARC records with set dates


def warc(path, *records) -> str:
    """records: (url, WARC-Date, status, body or Location) -> a WARC.gz written by warcio."""
    with open(path, "wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        for url, date, status, content in records:
            headers = [("Content-Type", "text/html; charset=utf-8")]
            body = b""
            if 300 <= status < 400:
                headers.append(("Location", content))
            else:
                body = content.encode()
            http = StatusAndHeaders(f"{status} X", headers, protocol="HTTP/1.1")
            record = writer.create_warc_record(
                url, "response", payload=io.BytesIO(body), http_headers=http, warc_headers_dict={"WARC-Date": date}
            )
            writer.write_record(record)
    return str(path)


P = "http://dates.example/p"


def link(name: str) -> str:
    return f"http://dates.example/{name}"


@pytest.mark.parametrize("commit_every", ["20000", "1"])  # the captures in one batch, or one a batch
def test_captures_are_ordered_by_their_warc_date(tmp_path, commit_every):
    store = str(tmp_path / "s.db")

    def load(*records) -> str:
        path = warc(tmp_path / f"w{len(os.listdir(tmp_path))}.warc.gz", *records)
        output = run("build", path, "--store", store, "-q", "--commit-every", commit_every)
        run("rank", "--store", store, "-q")
        return output

    def linking(url: str, since: str) -> list[str]:
        rows = json.loads(run("backlinks", url, "--since", since, "--format", "json", "--store", store))["rows"]
        return [row["url"] for row in rows if row["kind"] == "link"]

    load((P, "2024-01-01T00:00:00Z", 200, page("P", "y", "z")))
    # one build, three captures out of order: the newest (to the fraction of a second) holds the links
    output = load(
        (P, "2024-02-01T00:00:00Z", 200, page("P", "y", "w")),
        (P, "2024-03-01T00:00:00.5Z", 200, page("P", "z", "v")),
        (P, "2024-03-01T00:00:00Z", 200, page("P", "q")),
    )
    assert out_links(store, P) == [link("v"), link("z")]
    assert "1 capture(s) older" in output
    assert lost(store, link("y")) == {P: 2}  # the page had it before this build
    assert lost(store, link("w")) == {} and lost(store, link("q")) == {}  # only in captures it replaced
    assert linking(link("v"), "1") == [P] and linking(link("z"), "1") == []
    # an older capture than all: history only (k lost as of the capture the store holds), z not made new
    load((P, "2023-12-01T00:00:00Z", 200, page("P", "y", "k")))
    assert out_links(store, P) == [link("v"), link("z")]
    assert lost(store, link("k")) == {P: 2}
    assert linking(link("z"), "1") == []
    # a redirect replaces the links with the one to its target; a 410 takes every link
    load((P, "2024-04-01T00:00:00Z", 301, link("r")))
    assert out_links(store, P) == [link("r")] and pages_of(store)[P][2] == 301
    assert lost(store, link("v")) == {P: 4}
    load((P, "2024-05-01T00:00:00Z", 410, "gone"))
    assert out_links(store, P) == [] and pages_of(store)[P] == (None, 0, 410)
    assert lost(store, link("r")) == {P: 5}
    # and back again: its links are new against the crawl that found it gone
    load((P, "2024-06-01T00:00:00Z", 200, page("P", "r")))
    assert pages_of(store)[P] == ("P", 1, 200)
    assert linking(link("r"), "5") == [P]


def test_a_gone_page_nothing_links_to_is_not_added(tmp_path):
    store = str(tmp_path / "s.db")
    path = warc(
        tmp_path / "w.warc.gz",
        (link("home"), "2024-01-01T00:00:00Z", 200, page("Home", "there")),
        (link("nowhere"), "2024-01-01T00:00:00Z", 404, "not found"),
        (link("there"), "2024-01-01T00:00:00Z", 404, "not found"),
    )
    output = run("build", path, "--store", store, "-q")
    assert pages_of(store)[link("there")] == (None, 0, 404)
    assert set(pages_of(store)) == {link("home"), link("there")}
    assert "1 pages, 1 links" in output and "1 page(s) found gone" in output


# ------------------------------------------------------------------ the progress bar


def on_a_terminal(*args: str) -> tuple[str, list[str]]:
    """`rankstore build ARGS` with its stderr on a terminal: (stdout, each state of the progress bar drawn)."""
    master, slave = pty.openpty()
    env = dict(os.environ, PYTHONPATH=ROOT, COLUMNS="160")
    proc = subprocess.Popen(
        [sys.executable, "-m", "rankstore", "build", *args], stdout=subprocess.PIPE, stderr=slave, env=env
    )
    os.close(slave)
    drawn = b""
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        drawn += chunk
    os.close(master)
    out = proc.stdout.read().decode() if proc.stdout else ""
    assert proc.wait(timeout=120) == 0, out
    lines = [line for line in re.split(r"[\r\n]", drawn.decode(errors="replace")) if "%" in line]
    return out, lines


def shown(lines: list[str]) -> list[tuple[int, int, int]]:
    """(percent, pages, links) of each drawing of the bar that shows counts."""
    found = []
    for line in lines:
        match = re.search(r"(\d+)%\s+(?:[\d:]+\s+)?([\d,]+) pages, (?:([\d,]+) links, )?[\d,]+ (pages|links)/s", line)
        if match:
            found.append((int(match[1]), int(match[2].replace(",", "")), int((match[3] or "-1").replace(",", ""))))
    return found


@pytest.mark.parametrize("kind", ["warc", "html"])
def test_the_progress_bar_counts_pages_as_they_are_done(kind, python_doc_crawl, tmp_path):
    """The bar moves with the pages parsed (a chunk of them at a time), never ahead of them: it once ran on the
    bytes read, 99% with 51 of 527 pages done on a busy machine (issue 47, 5)."""
    store = str(tmp_path / "s.db")
    if kind == "warc":
        args = [python_doc_crawl.warc]
    else:
        args = [POSTGRES_DOC, "--base-url", "http://postgres.local/docs/"]
    out, lines = on_a_terminal(*args, "--store", store)
    built = int(re.search(r"built .*?: ([\d,]+) pages, ([\d,]+) links", out)[1].replace(",", ""))
    states = shown(lines)
    midway = [pages for percent, pages, _ in states if 0 < percent < 100]
    assert len(set(midway)) >= 4 and midway == sorted(midway) and midway[-1] > built // 2  # rising as the bar moves
    records = states[-1][1]  # each record read, parsed at the end
    # by bytes (pages differ in size), not far from the share of the records parsed: never 99% at 51 of 527
    ahead = [(percent, pages) for percent, pages, _ in states if percent > 150 * pages / records + 3]
    assert not ahead, ahead  # the bar shows the pages done
    assert max(pages for _, pages, _ in states) >= built > 500
    assert states[-1][2] > 0  # and the links parsed


def test_a_graph_build_reports_its_links_as_it_goes(tmp_path, monkeypatch):
    monkeypatch.setattr(edgelist, "BLOCK", 1 << 14)  # a batch for each piece read of a gzip: many in a small file
    path = tmp_path / "edges.tsv.gz"
    lines = (f"http://h{i % 97}.example/{i} http://h{i % 89}.example/{i * 7 % 5000}\n" for i in range(20000))
    path.write_bytes(gzip.compress("".join(lines).encode(), 1))
    from rankstore.build import BuildProgress, build  # the callback's argument: what a build has done so far

    seen: list[BuildProgress] = []
    with Store(str(tmp_path / "s.db")) as store:
        report = build(store, [str(path)], progress=lambda state: seen.append(BuildProgress(**vars(state))))
    links = [state.links for state in seen[:-1]]  # the last is told once the build is done
    assert all(state.graph for state in seen)
    assert len(set(links)) > 5 and links == sorted(links) and links[-1] > 0  # moving as batches are stored
    assert seen[-1].links == report.links == 20000 and seen[-1].pages == report.pages
