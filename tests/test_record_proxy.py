"""pagerank-proxy --record DIR: a real proxy process on loopback, browsing the python docs served from disk.

What a browsing session leaves in the record (the contract in docs/ARCHITECTURE.md, "The record"), that what
must stay private never reaches it, that a proxy killed outright loses at most the page in hand, and that
nothing is recorded unless asked.
"""

from __future__ import annotations

import gzip
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastwarc.warc import ArchiveIterator
from recordkit import small_ranked_store

from rankstore.cli import cli
from rankstore.extract import extract
from rankstore.urls import canonical

from conftest import PYTHON_DOC, ROOT

sys.path.insert(0, os.path.join(ROOT, "tools"))
from sitecrawl import serve_process  # noqa: E402

BAR = b"<span data-pagerank-bar"  # a bar's host element: the page was annotated

# pages of the python docs, each a real page with dozens to hundreds of links
PAGES = [
    "index.html",
    "contents.html",
    "library/index.html",
    "tutorial/index.html",
    "library/functions.html",
    "glossary.html",
]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    """A small ranked store: the proxy annotates every HTML page, in the store or not."""
    return small_ranked_store(tmp_path_factory.mktemp("record"))


@pytest.fixture(scope="module")
def origin():
    if not os.path.isdir(PYTHON_DOC):
        pytest.fail(f"{PYTHON_DOC} is missing: run tools/setup.sh")
    server, port = serve_process(PYTHON_DOC)
    yield port
    server.terminate()
    server.wait()


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Proxy:
    """``pagerank-proxy`` in its own process, run from ``cwd``; ready once its banner says it serves."""

    def __init__(self, store: str, *flags: str, cwd: str = ROOT) -> None:
        self.port = free_port()
        self.log = tempfile.TemporaryFile("w+")  # a pipe nobody reads would fill up
        environment = {**os.environ, "PYTHONPATH": ROOT}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "proxy_addon.cli", "--store", store, "--port", str(self.port), *flags],
            cwd=cwd,
            env=environment,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while "(ranking " not in self.said():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the proxy did not start: {self.said()}")
            time.sleep(0.05)

    def said(self) -> str:
        """What it has written so far, read without moving the file offset it shares with the process."""
        self.log.flush()
        fd = self.log.fileno()
        return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")

    def get(self, url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        """GET ``url`` through the proxy (an absolute URL in the request line, as a browser sends it)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.request("GET", url, headers={"Accept-Encoding": "identity", **(headers or {})})
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def lines_of(directory: Path) -> list[dict]:
    """Every whole line of the record's page files, parsed (each must parse)."""
    found = []
    for path in sorted(directory.glob("pages-*.jsonl")):
        text = path.read_bytes()
        for line in text.split(b"\n")[:-1]:  # what follows the last newline is a cut line, or nothing
            found.append(json.loads(line))
    return found


def everything_in(directory: Path) -> bytes:
    """All the bytes the record holds, its WARC files decompressed: what a grep of it would see."""
    out = b""
    for path in sorted(directory.iterdir()):
        raw = path.read_bytes()
        out += gzip.decompress(raw) if path.name.endswith(".gz") else raw
    return out


def expected_links(url: str, path: str) -> list[dict]:
    """The page's links as the build's extractor gives them for the same HTML."""
    with open(os.path.join(PYTHON_DOC, path), "rb") as file:
        page = extract(file.read(), canonical(url), "text/html")
    return [{"url": link.url, "nofollow": link.nofollow, "anchor": link.anchor_text or None} for link in page.links]


@pytest.fixture(scope="module")
def session(store, origin, tmp_path_factory):
    """A session through a proxy recording with WARC: the pages browsed (one twice), a stylesheet, and the
    proxy's own pages."""
    record = tmp_path_factory.mktemp("session") / "record"
    proxy = Proxy(store, "--record", str(record), "--record-warc")
    base = f"http://127.0.0.1:{origin}/"
    started = time.time()
    try:
        browsed = []
        for path in [*PAGES, PAGES[0]]:
            status, body = proxy.get(base + path)
            assert status == 200 and BAR in body  # annotated
            browsed.append(path)
        assert proxy.get(base + "_static/pygments.css")[0] == 200  # no page
        assert proxy.get("http://pagerank.proxy/")[0] == 200
        assert proxy.get("http://pagerank.proxy/top")[0] == 200
    finally:
        proxy.stop()
    return record, base, browsed, started, time.time()


def test_a_session_is_recorded_one_line_a_page_viewed_with_the_links_a_crawl_finds(session):
    record, base, browsed, started, ended = session
    head = json.loads((record / "RECORD").read_text())
    assert head["format"] == "pagerank-proxy record" and head["version"] == 1
    assert time.strptime(head["created"], "%Y-%m-%dT%H:%M:%SZ")
    [pages_file] = record.glob("pages-*.jsonl")
    assert pages_file.name.endswith(f"-{pages_file.name.split('-')[-1]}")
    stamp, pid = pages_file.name[len("pages-") : -len(".jsonl")].split("-")
    assert time.strptime(stamp, "%Y%m%dT%H%M%SZ") and pid.isdigit()
    lines = lines_of(record)
    # one line a page viewed, in order (the first page twice); no stylesheet, none of the proxy's own pages
    assert [line["url"] for line in lines] == [base + path for path in browsed]
    for line, path in zip(lines, browsed):
        assert set(line) == {"url", "status", "title", "fetched", "links"}
        assert line["status"] == 200
        fetched = time.mktime(time.strptime(line["fetched"], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
        assert int(started) - 1 <= fetched <= ended + 1
        with open(os.path.join(PYTHON_DOC, path), "rb") as file:
            assert line["title"] == extract(file.read(), canonical(base + path)).title
        assert line["links"] == expected_links(base + path, path)
        assert len(line["links"]) > 10
    assert b"pagerank.proxy" not in everything_in(record)


def test_the_warc_holds_the_same_responses_and_the_build_reads_the_same_links(session):
    from rankstore.build import prepare
    from rankstore.sources.warc import read_warc

    record, base, browsed, *_ = session
    [warc] = record.glob("responses-*.warc.gz")
    assert warc.name[len("responses-") :] == next(record.glob("pages-*.jsonl")).name[len("pages-") : -6] + ".warc.gz"
    records = list(read_warc(str(warc)))
    assert [r.url for r in records] == [base + path for path in browsed[:-1]]  # the page seen again: a revisit
    with open(warc, "rb") as handle:
        kinds = [
            (item.headers.get("WARC-Type"), item.headers.get("WARC-Record-ID"), item.headers.get("WARC-Refers-To"))
            for item in ArchiveIterator(handle)
        ]
    assert [kind for kind, _, _ in kinds] == ["response"] * len(PAGES) + ["revisit"]
    assert kinds[-1][2] == kinds[0][1]  # it names the first visit's response, which holds the body
    lines = lines_of(record)
    for found, path, line in zip(records, browsed, lines):
        with open(os.path.join(PYTHON_DOC, path), "rb") as file:
            assert found.body == file.read()  # the page as the origin sent it, not annotated
        assert found.status == 200 and found.fetched_at == line["fetched"]
        page, skipped = prepare(found)
        assert not skipped and page is not None
        assert [list(link) for link in page.links] == [
            [x["url"], x["nofollow"], 1.0, x["anchor"] or ""] for x in line["links"]
        ]
    # each record a gzip member of its own: a file cut after any of them still reads whole up to the cut
    raw = warc.read_bytes()
    assert raw.count(b"\x1f\x8b\x08") >= len(browsed)


def test_what_is_private_never_reaches_the_record(store, origin, tmp_path):
    record = tmp_path / "record"
    proxy = Proxy(
        store,
        "--record",
        str(record),
        "--record-warc",
        "--record-exclude",
        "localhost",
        "--record-exclude",
        "*.bank.example",
    )
    base = f"http://127.0.0.1:{origin}/"
    try:
        shown = {
            "credentials": proxy.get(base + "library/os.html", {"Authorization": "Basic c2VjcmV0OnNlY3JldA=="}),
            "excluded host": proxy.get(f"http://localhost:{origin}/library/sys.html"),
            "query": proxy.get(base + "library/json.html?token=SECRET123"),
            "plain": proxy.get(base + "glossary.html"),
            "own page": proxy.get("http://pagerank.proxy/search?q=PRIVATE42"),
        }
    finally:
        proxy.stop()
    for name, (status, body) in shown.items():
        assert status == 200, name
        assert name == "own page" or BAR in body, name  # annotated all the same
    lines = lines_of(record)
    # the page with a query is recorded without it; the rest not at all
    assert [line["url"] for line in lines] == [base + "library/json.html", base + "glossary.html"]
    everything = everything_in(record)
    for secret in (b"c2VjcmV0", b"SECRET123", b"localhost", b"PRIVATE42", b"pagerank.proxy"):
        assert secret not in everything, secret
    for page in ("library/os.html", "library/sys.html"):  # (other pages' links to them are links, not visits)
        assert f"WARC-Target-URI: {base}{page}\r".encode() not in everything


def test_a_record_keeps_queries_only_when_asked():
    from proxy_addon.record import recorded_page

    body = b"<title>Results</title><a href='?page=2'>next</a>"
    url = "http://shop.example/search?q=shoes"
    kept = recorded_page(body, "text/html", url, 200, 0.0, queries=True)
    dropped = recorded_page(body, "text/html", url, 200, 0.0)
    assert kept is not None and dropped is not None
    assert kept.url == url and dropped.url == "http://shop.example/search"
    # the link resolves against the URL as fetched, and keeps its own query either way
    assert (
        [link.url for link in dropped.links]
        == [link.url for link in kept.links]
        == ["http://shop.example/search?page=2"]
    )


def test_sigkill_while_recording_loses_at_most_the_last_page(store, origin, tmp_path):
    record = tmp_path / "record"
    proxy = Proxy(store, "--record", str(record), "--record-warc")
    base = f"http://127.0.0.1:{origin}/"
    # many pages, browsed one after another until the proxy dies under them
    with open(os.path.join(PYTHON_DOC, "contents.html"), "rb") as file:
        targets = [link.url for link in extract(file.read(), canonical(base + "contents.html")).links]
    targets = [url for url in dict.fromkeys(u.partition("#")[0] for u in targets) if url.endswith(".html")][:200]
    answered: list[str] = []
    stop = threading.Event()

    def browse() -> None:
        for url in targets:
            if stop.is_set():
                return
            try:
                status, body = proxy.get(url)
            except OSError:
                return  # the proxy is gone
            if status == 200 and BAR in body:
                answered.append(url)

    browser = threading.Thread(target=browse)
    browser.start()
    deadline = time.monotonic() + 60
    while len(answered) < 12 and time.monotonic() < deadline and browser.is_alive():
        time.sleep(0.01)
    os.kill(proxy.process.pid, signal.SIGKILL)  # mid-session: a page is likely in hand
    proxy.process.wait()
    stop.set()
    browser.join(30)
    proxy.stop()
    assert len(answered) >= 12
    for path in record.glob("pages-*.jsonl"):
        tail = path.read_bytes().rpartition(b"\n")[2]
        assert tail == b"" or tail.count(b"\n") == 0  # at most a cut last line
    recorded = [line["url"] for line in lines_of(record)]  # every whole line parses
    # every page the client had is recorded, in order; at most one more (the one in hand) besides
    assert recorded[: len(answered)] == answered
    assert len(recorded) <= len(answered) + 1
    from rankstore.sources import Record
    from rankstore.sources.warc import read_warc

    warc = next(record.glob("responses-*.warc.gz"))
    in_warc = [found.url for found in read_warc(str(warc)) if isinstance(found, Record)]
    assert in_warc[: len(answered)] == answered


async def test_recording_is_off_unless_asked(store, origin, tmp_path):
    from mitmproxy.test import taddons

    from proxy_addon.addon import PageRankProxy

    addon = PageRankProxy()
    with taddons.context(addon) as context:
        context.configure(addon, rankstore=store)
        assert context.options.pagerank_record == ""  # the option's default: no record
        assert addon.recorder.settings is None and addon.recorder.files is None
    folder = tmp_path / "cwd"
    folder.mkdir()
    proxy = Proxy(store, cwd=str(folder))
    try:
        assert BAR in proxy.get(f"http://127.0.0.1:{origin}/index.html")[1]
    finally:
        proxy.stop()
    assert list(folder.iterdir()) == []  # nothing written where it ran


def test_the_cli_refuses_record_options_it_cannot_honour(store, tmp_path, capsys):
    from proxy_addon.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["--store", store, "--record-warc"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip() == (
        "pagerank-proxy: error: --record-warc, --record-exclude, --record-queries and --record-private need "
        "--record DIR"
    )
    with pytest.raises(SystemExit) as exited:
        main(["--store", store, "--record", str(tmp_path / "new"), "--record-exclude", "bank.example:https"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("pagerank-proxy: error: pagerank_record_exclude: 'bank.example:https': the port")
    assert err.count("\n") == 1 and not (tmp_path / "new").exists()
    (tmp_path / "saved.html").write_text("<a href=x>x</a>")  # a folder of other files, not a record
    with pytest.raises(SystemExit) as exited:
        main(["--store", store, "--record", str(tmp_path)])
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("pagerank-proxy: error: pagerank_record: ") and "not a record" in err
    assert "\n" not in err
    help_text = subprocess.run(
        [sys.executable, "-m", "proxy_addon.cli", "--help"], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout
    for flag in (
        "--record DIR",
        "--record-warc",
        "--record-exclude PATTERN",
        "--record-queries",
        "--record-private",
        "--record ~/",
    ):
        assert flag in help_text


@pytest.mark.parametrize("inline", [0, 65536], ids=["workers", "loop"])
async def test_the_addon_records_a_compressed_page_as_decoded_and_not_a_page_left_untouched(store, tmp_path, inline):
    """In mitmproxy's test harness: a gzip page's record holds its decoded links, wherever it was rewritten;
    a page the proxy leaves untouched (over pagerank_max_links) is not recorded."""
    from test_addon import make_flow, run_hooks, running_addon

    record = tmp_path / "record"
    html = b"<title>Shop</title><a href='/a'>A</a><a rel='nofollow ugc' href='b?x=1'>B</a>" + b"<p>x</p>" * 200
    async with running_addon(
        store, pagerank_inline_bytes=inline, pagerank_record=str(record), pagerank_max_links=50
    ) as addon:
        flow = make_flow("http://shop.example/c/page?session=1", html, headers=[("content-encoding", "gzip")])
        assert flow.response.raw_content[:2] == b"\x1f\x8b"  # encoded by mitmproxy as its header says
        await run_hooks(addon, flow)
        assert flow.metadata["pagerank"].startswith("2 bars")
        many = b"<a href='/x'>x</a>" * 60 + b"<p>" * 200
        untouched = make_flow("http://shop.example/many", many)
        await run_hooks(addon, untouched)
        assert flow.metadata["pagerank"].startswith("2 bars") and untouched.metadata["pagerank"].startswith("untouched")
    [line] = lines_of(record)
    assert line["url"] == "http://shop.example/c/page" and line["title"] == "Shop"
    assert line["links"] == [
        {"url": "http://shop.example/a", "nofollow": False, "anchor": "A"},
        {"url": "http://shop.example/c/b?x=1", "nofollow": True, "anchor": "B"},
    ]


def test_a_recorded_session_builds_with_its_visits_and_since_tells_the_next_sessions_links(session, store, tmp_path):
    """Point 7: what the proxy recorded is a build like any source (the reader's side is tests/test_record_build.py,
    on hand-made records): its pages, its views as visits; a second session browsed into the same record, built
    again, is a recrawl whose new links `--since` lists."""
    import shutil

    from rankstore.store import Store

    record, base, browsed, *_ = session
    grown = tmp_path / "record"
    shutil.copytree(record, grown)
    built = str(tmp_path / "browsed.db")
    runner = CliRunner()
    result = runner.invoke(cli, ["build", str(grown), "--store", built, "-q"])
    assert result.exit_code == 0, result.output
    with Store(built, readonly=True) as opened:
        assert opened.visits.count() == len(browsed)
        assert set(opened.pages.page_ids_for([base + path for path in browsed])) == {base + p for p in browsed}
    proxy = Proxy(store, "--record", str(grown))
    try:
        status, body = proxy.get(base + "library/stdtypes.html")
        assert status == 200 and BAR in body
    finally:
        proxy.stop()
    new_line = [line for line in lines_of(grown) if line["url"].endswith("library/stdtypes.html")]
    assert len(new_line) == 1
    target = new_line[0]["links"][0]["url"]
    for step in (["build", str(grown)], ["rank"]):
        result = runner.invoke(cli, [*step, "--store", built, "-q"])
        assert result.exit_code == 0, result.output
    with Store(built, readonly=True) as opened:
        assert opened.visits.count() == len(browsed) + 1  # the first session's views not counted twice
    since = runner.invoke(cli, ["backlinks", target, "--since", "1", "--format", "json", "--store", built])
    assert since.exit_code == 0, since.output
    rows = json.loads(since.stdout)["rows"]
    assert rows and {row["url"] for row in rows} == {base + "library/stdtypes.html"}


def test_forget_refuses_a_record_the_proxy_is_still_writing(store, origin, tmp_path):
    """`rankstore forget --record DIR` rewrites the record's files: while the proxy appends to one, that would
    lose what it writes after, so forget says so in one line and changes nothing, store included."""
    record = tmp_path / "record"
    base = f"http://127.0.0.1:{origin}/"
    built = str(tmp_path / "mine.db")
    proxy = Proxy(store, "--record", str(record))
    try:
        assert proxy.get(base + "glossary.html")[0] == 200
        assert CliRunner().invoke(cli, ["build", str(record), "--store", built, "-q"]).exit_code == 0
        before = (record / next(record.glob("pages-*.jsonl")).name).read_bytes()
        forget = ["forget", "--host", f"127.0.0.1:{origin}", "--record", str(record), "--store", built]
        result = CliRunner().invoke(cli, forget)
        assert result.exit_code == 1
        assert f"the proxy (pid {proxy.process.pid}) still records into it; stop it first" in result.output
        assert next(record.glob("pages-*.jsonl")).read_bytes() == before
    finally:
        proxy.stop()
    result = CliRunner().invoke(cli, forget)
    assert result.exit_code == 0, result.output
    assert b"glossary" not in everything_in(record)
