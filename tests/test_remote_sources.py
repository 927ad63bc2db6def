"""Sources at their URLs: WARCs, Common Crawl graph parts and *.paths.gz listings served over HTTP on 127.0.0.1.

The server serves a folder, with faults asked per path: a 404, a 503, a
connection dropped in the middle of the file (once each), and Range requests
honoured or not.  A truncated file is served as it is, with its own length.
"""

from __future__ import annotations

import gzip
import http.server
import io
import json
import os
import shutil
import socket
import sqlite3
import threading
from urllib.parse import urlsplit

import pytest
import xxhash
from click.testing import CliRunner
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter
from watgen import write_wat

from rankstore.build import BuildProgress, build
from rankstore.cli import EXIT_SKIPPED, cli
from rankstore.progress import progress_words
from rankstore.sources import Record, Skipped, SourceError
from rankstore.sources.warc import read_warc
from rankstore.sources.warc_stream import read_warc_stream
from rankstore.store import Store

from conftest import data

HTML = [("Content-Type", "text/html; charset=utf-8")]
CRAWL = "crawl-data/CC-MAIN-TEST"


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, root: str):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.root = root
        self.ranges = True  # whether Range requests are honoured (206) or answered with the whole file
        # path -> faults, one used per request: "404", "503", "drop" (half the body, then the connection closed)
        # or "ok" (none)
        self.faults: dict[str, list[str]] = {}
        self.requests: list[tuple[str, str | None]] = []  # (path, Range header) of each request
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"

    def reset(self) -> None:
        self.ranges = True
        self.faults = {}
        self.requests = []

    def fetched(self, path: str) -> list[str | None]:
        """The Range headers of the requests for ``path`` (None: the whole file asked for)."""
        return [rng for asked, rng in self.requests if asked == "/" + path]


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def do_GET(self):  # noqa: N802 - http.server's name
        path = urlsplit(self.path).path
        wanted = self.headers.get("Range")
        with self.server.lock:
            self.server.requests.append((path, wanted))
            faults = self.server.faults.get(path)
            fault = faults.pop(0) if faults else None
        file = os.path.join(self.server.root, path.lstrip("/"))
        if fault in ("404", "503") or not os.path.isfile(file):
            status = 503 if fault == "503" else 404
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with open(file, "rb") as handle:
            body = handle.read()
        start, end = 0, len(body)
        if wanted and self.server.ranges:
            first, _, last = wanted.removeprefix("bytes=").partition("-")
            start, end = int(first), min(int(last) + 1 if last else len(body), len(body))
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(body)}")
        else:
            self.send_response(200)
            self.send_header("Accept-Ranges", "bytes" if self.server.ranges else "none")
        self.send_header("Content-Length", str(end - start))
        self.end_headers()
        if fault == "drop":  # half the body, then the connection is gone
            self.wfile.write(body[start : start + (end - start) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(body[start:end])


def _warc(path: str, site: int, pages: int = 3) -> None:
    """A WARC.gz of a small site: each page links to the next, to the site's first page and to the next site."""
    with open(path, "wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        for page in range(pages):
            body = (
                f"<title>site {site} page {page}</title>"
                f"<a href='/p{(page + 1) % pages}'>next</a><a href='/p0'>home</a>"
                f"<a href='http://site{site + 1}.example/p0'>next site</a>"
                + "<p>filler text to make a record of some size</p>"
                * 40
            ).encode()
            http_headers = StatusAndHeaders("200 OK", HTML, protocol="HTTP/1.1")
            record = writer.create_warc_record(
                f"http://site{site}.example/p{page}", "response", payload=io.BytesIO(body), http_headers=http_headers
            )
            writer.write_record(record)


def _listing(path: str, lines: list[str]) -> str:
    with gzip.open(path, "wt") as handle:
        handle.write("".join(line + "\n" for line in lines))
    return path


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A folder laid out as Common Crawl's data server is, served on 127.0.0.1: five WARCs of five sites, a
    truncated one, the test data's WARCs, a host graph in parts, and listings of them."""
    root = tmp_path_factory.mktemp("served")
    warcs = root / CRAWL / "warc"
    warcs.mkdir(parents=True)
    for site in range(5):
        _warc(str(warcs / f"part-{site:05d}.warc.gz"), site)
    whole = (warcs / "part-00001.warc.gz").read_bytes()
    (warcs / "cut-00001.warc.gz").write_bytes(whole[: len(whole) * 2 // 3])
    for name in WARCS:
        shutil.copy(data(name), root / name)
    for name in WHIRLWIND:  # Common Crawl's own WARC, WAT and WET of one page
        shutil.copy(data(f"whirlwind/{name}"), root / name)
    write_wat(data("small.warc.gz"), str(root / "small.warc.wat.gz"))
    with gzip.open(root / "host-ranks.txt.gz", "wt") as handle:
        handle.write(RANKS)
    graph = root / CRAWL / "host"
    shutil.copytree(data("ccgraph/host/vertices"), graph / "vertices")
    shutil.copytree(data("ccgraph/host/edges"), graph / "edges")
    names = {kind: sorted(os.listdir(graph / kind)) for kind in ("vertices", "edges")}
    for kind, parts in names.items():
        _listing(str(root / CRAWL / f"{kind}.paths.gz"), [f"{CRAWL}/host/{kind}/{part}" for part in parts])
    _listing(str(root / CRAWL / "warc.paths.gz"), [f"{CRAWL}/warc/part-{site:05d}.warc.gz" for site in range(5)])
    with gzip.open(root / "edges.tsv.gz", "wt") as handle:
        handle.write("# from to weight\nhttp://a.example/ http://b.example/ 2.5\nhttp://b.example/ http://a.example/\n")
    server = _Server(str(root))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def server(served, monkeypatch):
    served.reset()
    monkeypatch.setenv("RANKSTORE_HTTP_BACKOFF", "0.01")
    monkeypatch.setenv("RANKSTORE_HTTP_ATTEMPTS", "4")
    return served


def invoke(*args):
    return CliRunner().invoke(cli, [str(arg) for arg in args], catch_exceptions=False)


def built(*args):
    result = invoke("build", *args)
    assert result.exit_code == 0, result.output
    return result


def said_built(result) -> str:
    """What the build's line says it loaded: "N pages, M links from K source(s)"."""
    line = [line for line in result.output.splitlines() if line.startswith("built ")][0]
    return line.split(": ", 1)[1].split(" in ")[0]


def dump(store: str):
    with Store(store, readonly=True) as opened:
        return opened.pages.dump()


def source_files(store: str) -> list[tuple]:
    db = sqlite3.connect(store)
    try:
        return db.execute("SELECT name, size, checksum, build, unreadable FROM source_files ORDER BY rowid").fetchall()
    finally:
        db.close()


def file_bytes(server: _Server, path: str) -> bytes:
    with open(os.path.join(server.root, path), "rb") as handle:
        return handle.read()


def checksum(content: bytes) -> str:
    return f"xxh3_64:{xxhash.xxh3_64(content).hexdigest()}"


def warc_paths(sites) -> list[str]:
    return [f"{CRAWL}/warc/part-{site:05d}.warc.gz" for site in sites]


def local_warc_listing(tmp_path, server: _Server, names: list[str]) -> str:
    """A warc.paths.gz on disk naming served files, as one downloads Common Crawl's."""
    return _listing(str(tmp_path / "warc.paths.gz"), names)


# ------------------------------------------------------------------ one file by URL


WARCS = ["small.warc.gz", "small.warc", "truncated.warc.gz", "garbage.warc.gz", "garbage.warc"]
WHIRLWIND = ["whirlwind.warc.gz", "whirlwind.warc.wat.gz", "whirlwind.warc.wet.gz"]
RANKS = (
    "#harmonicc_pos\t#harmonicc_val\t#pr_pos\t#pr_val\t#host_rev\n"
    "1\t1.2E7\t2\t0.3\tcom.example\n2\t1.1E7\t1\t0.5\torg.example.www\n3\t1.0E7\t3\t0.2\tnet.example\n"
)


def test_a_ranks_file_by_url_loads_as_its_file_does(server, tmp_path):
    local, remote = str(tmp_path / "local.db"), str(tmp_path / "remote.db")
    built(os.path.join(server.root, "host-ranks.txt.gz"), "--store", local)
    said = built(server.url + "host-ranks.txt.gz", "--store", remote).output
    assert "loaded cc-pagerank v1: 3 hosts" in said
    for name in ("cc-harmonic", "cc-pagerank"):
        tops = [
            invoke("top", "--ranking", name, "--format", "json", "--store", store).stdout for store in (local, remote)
        ]
        assert tops[0] == tops[1] and json.loads(tops[0])[0]["host"] == (
            "example.com" if "harmonic" in name else "www.example.org"
        )


@pytest.mark.parametrize("name", [*WHIRLWIND, "small.warc.wat.gz"])
def test_common_crawls_files_by_url_read_as_their_files_do(server, tmp_path, name):
    """A WARC streamed in passes over its request and metadata records, not read past as damage; a WAT
    streams in as its file reads; a WET says in one line that it holds no page, as its file does."""
    local, remote = str(tmp_path / "local.db"), str(tmp_path / "remote.db")
    by_file = invoke("build", os.path.join(server.root, name), "--store", local)
    by_url = invoke("build", server.url + name, "--store", remote)
    assert by_url.exit_code == by_file.exit_code, by_url.output
    assert "unreadable" not in by_url.output
    assert dump(remote) == dump(local)
    said = [line.replace(server.url, "").replace(server.root + "/", "") for line in by_url.output.splitlines()]
    assert [line for line in said if "no HTML responses" in line] == [
        line.replace(server.root + "/", "") for line in by_file.output.splitlines() if "no HTML responses" in line
    ]
    # the WET holds no page, nor the sample WAT (its one envelope describes the request record)
    with Store(remote, readonly=True) as opened:
        crawled = opened.db.execute("SELECT count(*) FROM pages WHERE crawled").fetchone()[0]
    assert crawled == {"whirlwind.warc.gz": 1, "small.warc.wat.gz": 8}.get(name, 0)


@pytest.mark.parametrize("name", WARCS)
def test_a_warc_by_url_builds_what_the_file_builds(server, tmp_path, name):
    local, remote = str(tmp_path / "local.db"), str(tmp_path / "remote.db")
    by_file = invoke("build", data(name), "--store", local)
    by_url = invoke("build", server.url + name, "--store", remote)
    assert by_url.exit_code == by_file.exit_code, by_url.output
    assert dump(remote) == dump(local)
    skipped = [line for line in by_file.output.splitlines() if line.startswith("skipped")]
    assert [line for line in by_url.output.splitlines() if line.startswith("skipped")] == skipped
    unreadable = int(skipped[0].split()[1]) if skipped else 0  # "skipped N record(s):"
    content = file_bytes(server, name)
    assert source_files(remote) == [(server.url + name, len(content), checksum(content), 1, unreadable)]
    assert server.fetched(name) == ["bytes=0-65535", None]  # its head, to tell its format; then the file


@pytest.mark.parametrize("name", ["small.warc.gz", "small.warc", "garbage.warc.gz"])
def test_a_warc_cut_anywhere_streams_the_pages_the_file_reader_reads(tmp_path, name):
    """The stream reader against the file reader, on the file cut at many points (a transfer or a file cut
    short): the same pages, whole; the stream reader also names a cut in the first record."""
    whole = open(data(name), "rb").read()
    for cut in range(97, len(whole), len(whole) // 40):
        part = tmp_path / f"cut-{cut}.warc"
        part.write_bytes(whole[:cut])
        try:
            by_file = [item for item in read_warc(str(part)) if isinstance(item, Record)]
        except SourceError:
            by_file = []
        by_stream = [item for item in read_warc_stream(str(part), io.BufferedReader(io.BytesIO(whole[:cut])))]
        pages = [item for item in by_stream if isinstance(item, Record)]
        assert [(p.url, p.status, p.body, p.location) for p in pages] == [
            (p.url, p.status, p.body, p.location) for p in by_file
        ], cut
        assert any(isinstance(item, Skipped) for item in by_stream), cut  # the cut is said


def test_a_missing_url_is_one_line(server, tmp_path):
    result = invoke("build", server.url + "nothing.warc.gz", "--store", tmp_path / "s.db")
    assert result.exit_code == 1
    assert result.output == f"Error: {server.url}nothing.warc.gz: HTTP 404 Not Found\n"
    assert not (tmp_path / "s.db").exists()


def test_an_unreachable_base_is_one_line(server, tmp_path):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    listing = local_warc_listing(tmp_path, server, warc_paths(range(2)))
    result = invoke("build", listing, "--paths-base", f"http://127.0.0.1:{port}/", "--store", tmp_path / "s.db")
    assert result.exit_code == 1
    first = f"http://127.0.0.1:{port}/{warc_paths([0])[0]}"
    assert result.output == f"Error: {first}: cannot connect: Connection refused (4 attempts)\n"


# ------------------------------------------------------------------ listings


def test_a_listing_of_warcs_reads_its_first_files_with_limit(server, tmp_path):
    store = str(tmp_path / "s.db")
    result = built(server.url + f"{CRAWL}/warc.paths.gz", "--paths-base", server.url, "--limit", "2", "--store", store)
    assert "built" in result.output and ": 6 pages," in result.output
    assert "2 file(s) at URLs taken whole" in result.output
    with Store(store, readonly=True) as opened:
        crawled = {page[0] for page in opened.pages.dump()[0] if page[3]}  # url, host, title, crawled...
    assert crawled == {f"http://site{site}.example/p{page}" for site in range(2) for page in range(3)}
    assert [name for name, *_ in source_files(store)] == [server.url + path for path in warc_paths(range(2))]
    for path in warc_paths(range(2, 5)):
        assert server.fetched(path) == []  # past the limit: never asked for


def test_a_listing_builds_what_its_files_build(server, tmp_path):
    listing = local_warc_listing(tmp_path, server, warc_paths(range(3)))
    built(listing, "--paths-base", server.url, "--store", tmp_path / "listed.db")
    files = [os.path.join(server.root, path) for path in warc_paths(range(3))]
    built(*files, "--store", tmp_path / "files.db")
    assert dump(str(tmp_path / "listed.db")) == dump(str(tmp_path / "files.db"))


def test_a_listing_of_graph_parts_builds_the_graph(server, tmp_path):
    remote = str(tmp_path / "remote.db")
    built(
        server.url + f"{CRAWL}/vertices.paths.gz",
        server.url + f"{CRAWL}/edges.paths.gz",
        "--paths-base",
        server.url,
        "--store",
        remote,
    )
    built(data("ccgraph/host"), "--store", tmp_path / "local.db")
    assert dump(remote) == dump(str(tmp_path / "local.db"))
    parts = [f"{CRAWL}/host/{kind}/part-0000{i}.gz" for kind in ("vertices", "edges") for i in range(2)]
    assert [name for name, *_ in source_files(remote)] == [server.url + part for part in parts]
    # again: the graph was taken whole, so none of its parts is read (but for the head that tells each listing's kind)
    before = dump(remote)
    server.reset()
    again = built(
        server.url + f"{CRAWL}/vertices.paths.gz",
        server.url + f"{CRAWL}/edges.paths.gz",
        "--paths-base",
        server.url,
        "--store",
        remote,
    )
    assert "4 taken by an earlier build, not read again" in again.output
    assert [rng for part in parts for rng in server.fetched(part)] == ["bytes=0-65535", "bytes=0-65535"]
    assert dump(remote) == before


def test_an_edge_list_by_url_builds_what_the_file_builds(server, tmp_path):
    built(server.url + "edges.tsv.gz", "--store", tmp_path / "remote.db")
    built(os.path.join(server.root, "edges.tsv.gz"), "--store", tmp_path / "local.db")
    assert dump(str(tmp_path / "remote.db")) == dump(str(tmp_path / "local.db"))
    assert dump(str(tmp_path / "remote.db"))[1][0][:2] == ("http://a.example/", "http://b.example/")


def test_a_local_listing_of_parts_on_disk_reads_them_as_before(tmp_path):
    store = str(tmp_path / "s.db")
    host = data("ccgraph/host")
    built(os.path.join(host, "vertices.paths.gz"), os.path.join(host, "edges.paths.gz"), "--store", store)
    assert dump(store) == dump(str(_built(tmp_path / "folder.db", host)))
    assert source_files(store) == []  # files on disk are not noted: a file on disk may change in place


def _built(path, *sources):
    built(*sources, "--store", path)
    return path


# ------------------------------------------------------------------ failures


@pytest.mark.parametrize("ranges", [True, False])
def test_a_dropped_connection_is_retried_and_the_build_equals_a_clean_one(server, tmp_path, ranges):
    name = warc_paths([3])[0]
    built(server.url + name, "--store", tmp_path / "clean.db")
    server.reset()
    server.ranges = ranges
    server.faults["/" + name] = ["503", "ok", "drop"]  # its head asked twice (the server busy a moment), then it
    result = built(server.url + name, "--store", tmp_path / "dropped.db")
    assert "skipped" not in result.output
    assert dump(str(tmp_path / "dropped.db")) == dump(str(tmp_path / "clean.db"))
    content = file_bytes(server, name)
    asked = server.fetched(name)
    assert asked[:3] == ["bytes=0-65535", "bytes=0-65535", None]  # 503, the head, the file (dropped)
    if ranges:  # resumed where it broke off
        assert len(asked) == 4 and asked[3] == f"bytes={len(content) // 2}-"
    else:  # the server cannot resume: the file again, its first half read past
        assert len(asked) == 4 and asked[3].startswith("bytes=")
    assert source_files(str(tmp_path / "dropped.db"))[0][1:3] == (len(content), checksum(content))


def test_a_transfer_that_keeps_failing_is_reported_and_not_noted(server, tmp_path):
    """A transfer that makes headway is resumed however often it breaks; one that fails again and again with
    nothing coming is given up, said, and not noted as taken (a re-run reads it)."""
    names = warc_paths(range(3))
    # cut, then unavailable at each of the three tries left: four failures in a row with no byte between
    server.faults["/" + names[1]] = ["drop", "503", "503", "503"]
    store = str(tmp_path / "s.db")
    result = invoke("build", local_warc_listing(tmp_path, server, names), "--paths-base", server.url, "--store", store)
    assert result.exit_code == EXIT_SKIPPED
    said = f"{server.url}{names[1]}: HTTP 503 Service Unavailable (4 attempts); the rest of the file is lost"
    assert said in result.output
    assert [name for name, *_ in source_files(store)] == [server.url + names[0], server.url + names[2]]


def test_a_truncated_file_is_reported_and_the_rest_loads(server, tmp_path):
    names = [warc_paths([0])[0], f"{CRAWL}/warc/cut-00001.warc.gz", warc_paths([2])[0]]
    store = str(tmp_path / "s.db")
    result = invoke("build", local_warc_listing(tmp_path, server, names), "--paths-base", server.url, "--store", store)
    assert result.exit_code == EXIT_SKIPPED, result.output
    assert f"at {server.url}{names[1]}@" in result.output
    assert "unreadable WARC data (file ends inside this record)" in result.output
    with Store(store, readonly=True) as opened:
        crawled = {page[0] for page in opened.pages.dump()[0] if page[3]}  # url, host, title, crawled...
    whole = {f"http://site{site}.example/p{page}" for site in (0, 2) for page in range(3)}
    assert whole < crawled and len(crawled - whole) == 1  # one page of the cut file came whole
    # read to its end as served: taken, with its unreadable record counted
    assert [(name, unreadable) for name, _, _, _, unreadable in source_files(store)] == [
        (server.url + names[0], 0),
        (server.url + names[1], 1),
        (server.url + names[2], 0),
    ]


def test_a_missing_file_of_a_listing_is_reported_and_the_build_goes_on(server, tmp_path):
    names = warc_paths(range(3))
    server.faults["/" + names[1]] = ["404"]
    listing = local_warc_listing(tmp_path, server, names)
    store = str(tmp_path / "s.db")
    result = invoke("build", listing, "--paths-base", server.url, "--store", store)
    assert result.exit_code == EXIT_SKIPPED
    assert "         1  HTTP 404 Not Found\n" in result.output
    assert f"at {server.url}{names[1]}: HTTP 404 Not Found\n" in result.output
    assert [name for name, *_ in source_files(store)] == [server.url + names[0], server.url + names[2]]
    # the file is there now: a re-run reads it alone
    server.reset()
    again = built(listing, "--paths-base", server.url, "--store", store)
    assert "1 file(s) at URLs taken whole; 2 taken by an earlier build, not read again" in again.output
    assert [server.fetched(name) for name in names] == [["bytes=0-65535"], [None], []]
    assert dump(store) == dump(str(_built(tmp_path / "clean.db", listing, "--paths-base", server.url)))


# ------------------------------------------------------------------ resuming


def test_a_rerun_passes_over_the_files_taken_whole(server, tmp_path):
    listing = local_warc_listing(tmp_path, server, warc_paths(range(3)))
    store = str(tmp_path / "s.db")
    first = built(listing, "--paths-base", server.url, "--store", store)
    before = dump(store)
    counts = said_built(first)
    server.reset()
    again = built(listing, "--paths-base", server.url, "--store", store)
    assert "0 pages, 0 links" in again.output
    assert "0 file(s) at URLs taken whole; 3 taken by an earlier build, not read again" in again.output
    assert [server.fetched(name) for name in warc_paths(range(3))] == [["bytes=0-65535"], [], []]
    assert dump(store) == before  # nothing doubled
    assert {build for *_, build, _ in source_files(store)} == {1}
    server.reset()
    reread = built(listing, "--paths-base", server.url, "--reread", "--store", store)
    assert "3 file(s) at URLs taken whole" in reread.output
    assert said_built(reread) == counts
    assert dump(store) == before
    assert {build for *_, build, _ in source_files(store)} == {3}


def test_a_build_cut_short_is_continued_by_the_next_run(server, tmp_path):
    listing = local_warc_listing(tmp_path, server, warc_paths(range(4)))
    store = str(tmp_path / "s.db")

    def cut_short(state: BuildProgress) -> None:
        if state.files >= 2:
            raise KeyboardInterrupt

    with Store(store) as opened, pytest.raises(KeyboardInterrupt):
        build(opened, [listing], paths_base=server.url, progress=cut_short, jobs=1)
    taken = [name for name, *_ in source_files(store)]
    assert taken and taken == [server.url + path for path in warc_paths(range(len(taken)))]
    server.reset()
    result = built(listing, "--paths-base", server.url, "--store", store)
    assert "build #1 was cut short: continued\n" in result.output
    assert ": 12 pages," in result.output
    for path in warc_paths(range(len(taken))):
        assert server.fetched(path) in ([], ["bytes=0-65535"])  # not read again
    with Store(store, readonly=True) as opened:
        assert [(item["id"], item["status"]) for item in opened.info()["builds"]] == [(1, "complete")]
    assert dump(store) == dump(str(_built(tmp_path / "clean.db", listing, "--paths-base", server.url)))


# ------------------------------------------------------------------ what is shown


def test_info_lists_the_files_a_build_took(server, tmp_path):
    listing = local_warc_listing(tmp_path, server, warc_paths(range(2)))
    store = str(tmp_path / "s.db")
    built(listing, "--paths-base", server.url, "--store", store)
    table = invoke("info", "--store", store).output
    sizes = [len(file_bytes(server, path)) for path in warc_paths(range(2))]
    assert f"    2 file(s) at URLs taken whole ({sum(sizes) / 1024:.1f} KiB):" in table
    for path, size in zip(warc_paths(range(2)), sizes):
        content = file_bytes(server, path)
        assert f"      {server.url}{path} ({size:,} bytes, {checksum(content)})" in table
    files = json.loads(invoke("info", "--store", store, "--format", "json").output)["builds"][0]["files"]
    assert [(item["name"], item["size"]) for item in files] == [
        (server.url + path, size) for path, size in zip(warc_paths(range(2)), sizes)
    ]


def test_progress_counts_files_and_bytes(server, tmp_path):
    listing = local_warc_listing(tmp_path, server, warc_paths(range(3)))
    seen: list[tuple[int, int, int]] = []

    def progress(state: BuildProgress) -> None:
        seen.append((state.files, state.files_total, state.bytes_read))
        text = progress_words(state, 1.0)
        assert text.startswith(f"{state.files:,}/{state.files_total:,} files, ")

    with Store(str(tmp_path / "s.db")) as opened:
        build(opened, [listing], paths_base=server.url, progress=progress, jobs=1)
    sizes = sum(len(file_bytes(server, path)) for path in warc_paths(range(3)))
    assert seen[-1] == (3, 3, sizes)
    assert [files for files, _, _ in seen] == sorted(files for files, _, _ in seen)  # files counted as they end
