"""Common Crawl's WAT files, and files of WARC records that hold no page (WAT, WET, requests only).

The golden files are Common Crawl's own (tests/data/whirlwind: a WARC, the WAT
Common Crawl made of it, the WET).  A WAT of a crawl made here (wget against a
local http.server, as conftest's fixtures crawl) is written by tests/watgen.py
in Common Crawl's layout, from the WARC, with a parser that is not ours; the
store built from it is held equal to the store built from the WARC.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import sqlite3

import pytest
from sitecrawl import crawl, serve
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter
from watgen import MAX_TEXT_LEN, write_wat

from rankstore.cli import EXIT_SKIPPED
from rankstore.sources import detect_format
from rankstore.store import Store

from conftest import data, invoke

REAL_WARC = data("whirlwind/whirlwind.warc.gz")
REAL_WAT = data("whirlwind/whirlwind.warc.wat.gz")
REAL_WET = data("whirlwind/whirlwind.warc.wet.gz")
REAL_PAGE = "https://an.wikipedia.org/wiki/Escopete"


def build(source, store, *options):
    return invoke("build", str(source), "--store", str(store), "-q", *options)


def crawled(store) -> dict[str, tuple]:
    """url -> (title, status, fetched_at) of the pages a build captured (those found gone too)."""
    with sqlite3.connect(store) as db:
        rows = db.execute(
            "SELECT url, title, status, fetched_at FROM pages WHERE crawled OR status IS NOT NULL"
        ).fetchall()
    return {url: (title, status, fetched) for url, title, status, fetched in rows}


def links_of(store, url) -> dict[str, tuple]:
    """target -> (nofollow, anchor) of one page's links."""
    with Store(str(store), readonly=True) as opened:
        _, links = opened.pages.dump()
    return {dst: (bool(nofollow), anchor) for src, dst, nofollow, _, anchor in links if src == url}


def _squashed(text: str | None) -> str:
    return "".join((text or "").split())


def _same_text(warc: str | None, wat: str | None) -> bool:
    """A title or anchor text as a WAT holds it: the page's, but for what Common Crawl's writer loses: what
    follows its 128th character (a space there is then stripped), and the space our parser puts between two
    elements' text (it joins them)."""
    if (warc or "") == (wat or ""):
        return True
    full, kept = _squashed(warc), _squashed(wat)
    return full.startswith(kept) and (full == kept or len(wat or "") >= MAX_TEXT_LEN - 1)


def assert_same_graph(warc_store, wat_store, area_alts=frozenset()) -> int:
    """The two builds hold the same pages (URL, host, status, crawled, canonical link, capture time, title)
    and links (target, nofollow, weight, anchor); ``area_alts`` are the alt texts of <area> links, which
    a WAT does not hold.  Returns the number of links."""
    with Store(str(warc_store), readonly=True) as one, Store(str(wat_store), readonly=True) as other:
        (pages_a, links_a), (pages_b, links_b) = one.pages.dump(), other.pages.dump()
    assert [page[0] for page in pages_a] == [page[0] for page in pages_b]
    for page_a, page_b in zip(pages_a, pages_b):
        url, host, title, is_crawled, status, canonical_url = page_a
        assert (url, host, is_crawled, status, canonical_url) == page_b[:2] + page_b[3:], url
        assert _same_text(title, page_b[2]), (url, title, page_b[2])
    assert {url: row[2] for url, row in crawled(warc_store).items()} == {
        url: row[2] for url, row in crawled(wat_store).items()
    }
    assert [link[:4] for link in links_a] == [link[:4] for link in links_b]
    for link_a, link_b in zip(links_a, links_b):
        if link_a[4] in area_alts:
            assert not link_b[4], link_b
        else:
            assert _same_text(link_a[4], link_b[4]), (link_a, link_b)
    return len(links_a)


# ------------------------------------------------------------------ a WARC's records passed over are no damage


def test_a_real_common_crawl_warc_loads_without_a_word_of_damage(tmp_path):
    """Its request and metadata records are passed over, not read past as "truncated or corrupt"."""
    result = build(REAL_WARC, tmp_path / "s.db")
    assert result.exit_code == 0, result.output
    assert "unreadable" not in result.output
    assert set(crawled(tmp_path / "s.db")) == {REAL_PAGE}
    assert len(links_of(tmp_path / "s.db", REAL_PAGE)) > 100


def _warc_of(path, records) -> str:
    """records: (type, url, http headers or None, payload, content type) -> a WARC.gz by warcio."""
    with open(path, "wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        for kind, url, http, payload, content_type in records:
            writer.write_record(
                writer.create_warc_record(
                    url, kind, payload=io.BytesIO(payload), http_headers=http, warc_content_type=content_type
                )
            )
    return str(path)


def _request(url):
    return (
        "request",
        url,
        StatusAndHeaders("GET / HTTP/1.1", [("Host", "x.example")], is_http_request=True),
        b"",
        None,
    )


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda tmp: REAL_WET, ["a WET file?", "1 conversion"]),
        (lambda tmp: REAL_WAT, ["a Common Crawl WAT file?", "1 metadata"]),
        (
            lambda tmp: _warc_of(tmp / "requests.warc.gz", [_request(f"http://x.example/{n}") for n in range(3)]),
            ["3 request"],
        ),
        (
            lambda tmp: _warc_of(
                tmp / "metadata.warc.gz",
                [("metadata", "http://x.example/", None, b"via: http://y.example/\r\n", "application/warc-fields")] * 2,
            ),
            ["2 metadata"],
        ),
    ],
    ids=["wet", "wat-as-warc", "requests-only", "metadata-only"],
)
def test_a_file_of_records_without_a_page_says_so_in_one_line(tmp_path, make, words):
    source = make(tmp_path)
    result = build(source, tmp_path / "s.db", "--format", "warc")
    assert "unreadable" not in result.output and "corrupt" not in result.output
    said = [line for line in result.output.splitlines() if "no HTML responses in it" in line and source in line]
    assert len(said) == 1, result.output
    for word in words:
        assert word in said[0]
    assert ("WAT file?" in said[0]) == ("WAT" in words[0]) and ("WET file?" in said[0]) == ("WET" in words[0])
    assert crawled(tmp_path / "s.db") == {}


# ------------------------------------------------------------------ Common Crawl's WAT, golden


def _envelopes(path) -> list[dict]:
    from warcio.archiveiterator import ArchiveIterator

    with open(path, "rb") as handle:
        return [
            json.loads(record.content_stream().read())
            for record in ArchiveIterator(handle)
            if record.rec_type == "metadata"
        ]


def test_common_crawls_wat_is_told_from_content_and_its_envelopes_read(tmp_path):
    assert detect_format(REAL_WAT) == "wat"
    assert detect_format(REAL_WARC) == "warc" and detect_format(REAL_WET) == "warc"
    renamed = tmp_path / "crawl.warc.gz"  # the content says WAT, whatever the name
    shutil.copy(REAL_WAT, renamed)
    assert detect_format(str(renamed)) == "wat"
    plain = tmp_path / "crawl.warc"
    plain.write_bytes(gzip.decompress(open(REAL_WAT, "rb").read()))
    assert detect_format(str(plain)) == "wat"
    # Common Crawl's WAT of this capture holds the envelope of its request only: no page, said so.
    result = build(REAL_WAT, tmp_path / "s.db")
    assert "unreadable" not in result.output
    assert "no HTML responses in it (2 records: 1 warcinfo, 1 metadata; their envelopes describe: 1 request)" in (
        result.output
    )
    assert crawled(tmp_path / "s.db") == {}


def test_the_test_wat_writer_writes_common_crawls_layout(tmp_path):
    """The envelope tests/watgen.py writes of the request holds what Common Crawl's own WAT holds of it."""
    write_wat(REAL_WARC, str(tmp_path / "made.warc.wat.gz"))
    (real,) = _envelopes(REAL_WAT)
    made = {
        envelope["Envelope"]["WARC-Header-Metadata"]["WARC-Type"]: envelope
        for envelope in _envelopes(tmp_path / "made.warc.wat.gz")
    }
    assert set(made) == {"warcinfo", "request", "response", "metadata"}
    real_warc, made_warc = real["Envelope"]["WARC-Header-Metadata"], made["request"]["Envelope"]["WARC-Header-Metadata"]
    assert {name: made_warc.get(name) for name in real_warc} == real_warc
    real_http = real["Envelope"]["Payload-Metadata"]["HTTP-Request-Metadata"]
    made_http = made["request"]["Envelope"]["Payload-Metadata"]["HTTP-Request-Metadata"]
    assert made_http["Request-Message"] == real_http["Request-Message"]
    assert made_http["Headers"] == real_http["Headers"]
    response = made["response"]["Envelope"]["Payload-Metadata"]["HTTP-Response-Metadata"]
    assert response["Response-Message"]["Status"] == "200"
    assert isinstance(response["Headers"]["set-cookie"], list)  # Wikipedia's repeated header, as a list
    paths = {entry["path"] for entry in response["HTML-Metadata"]["Links"]}
    assert {"A@/href", "IMG@/src"} <= paths


def test_common_crawls_page_from_its_wat_is_the_page_from_its_warc(wat_reader, tmp_path):
    """A real capture (Wikipedia, over HTTP/2: lower-case header names, Set-Cookie repeated)."""
    write_wat(REAL_WARC, str(tmp_path / "made.warc.wat.gz"))
    assert build(REAL_WARC, tmp_path / "warc.db").exit_code == 0
    result = build(tmp_path / "made.warc.wat.gz", tmp_path / "wat.db")
    assert result.exit_code == 0, result.output
    assert assert_same_graph(tmp_path / "warc.db", tmp_path / "wat.db") > 100
    assert crawled(tmp_path / "wat.db")[REAL_PAGE][0] == "Escopete - Biquipedia, a enciclopedia libre"


# ------------------------------------------------------------------ the same crawl as WARC and as WAT

EXTRA = """<!DOCTYPE html><html><head><title>Links of every kind</title>
<link rel="stylesheet" href="style.css"><link rel="canonical" href="extra.html?canonical=1">
<script src="app.js"></script><meta name="description" content="not a link"></head><body>
<a href="site/docs/area.html" rel="ugc">user content</a> <a href="site/docs/area.html">the same, followed</a>
<a href="https://ugc.example/" rel="UGC noopener">ugc</a> <a href="https://paid.example/" rel="sponsored">paid</a>
<a href="https://twice.example/" rel="nofollow">one</a> <a href="https://twice.example/" rel="nofollow">two</a>
<a href="site/index.html"><b>Bold</b> and <i>italic</i>  anchor</a>
<a href="site/index.html?x=1&amp;y=2">entities &amp; more &eacute;t&eacute;</a>
<a href="#top">in page</a> <a href="">empty</a> <a name="nothing">no href</a>
<a href="site/docs/long.html">{long}</a>
<img src="picture.png" alt="not a link"><iframe src="frame.html"></iframe>
<form action="/search"><input type="image" src="button.png"></form>
<map name="m"><area href="https://map.example/" rel="nofollow" alt="a region"></map>
<a href="https://caf\u00e9.example/\u00e9t\u00e9">IDN</a>
</body></html>
""".replace("{long}", "a long anchor " * 15)


# The alt text of the site's <area> links: a WAT holds no text of an <area>.
AREA_ALTS = frozenset({"Area target", "a region"})


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """tests/data/site (base, area, nofollow, Latin-1 pages, a redirect, a page gone) and a page of every
    kind of link, crawled by wget into a WARC; the WAT written from it, gzipped and plain."""
    work = tmp_path_factory.mktemp("wat-site")
    root = work / "root"
    shutil.copytree(data("site"), root / "site")
    (root / "extra.html").write_text(EXTRA, encoding="utf-8")
    (root / "index.html").write_text('<title>Root</title><a href="site/">Site</a> <a href="extra.html">Extra</a>')
    warc = str(work / "site.warc.gz")
    with serve(str(root)) as url:
        crawl(url, warc)
    write_wat(warc, str(work / "site.warc.wat.gz"))
    write_wat(warc, str(work / "site.warc.wat"))
    return {"url": url, "warc": warc, "work": work}


@pytest.fixture(scope="module")
def site_warc_store(site):
    store = site["work"] / "warc.db"
    result = build(site["warc"], store)
    assert result.exit_code == 0, result.output
    return store


@pytest.mark.parametrize("name", ["site.warc.wat.gz", "site.warc.wat"])
def test_a_wat_gives_the_store_its_warc_gives(wat_reader, site, site_warc_store, tmp_path, name):
    wat = site["work"] / name
    assert detect_format(str(wat)) == "wat"
    result = build(wat, tmp_path / "wat.db")
    assert "unreadable" not in result.output, result.output
    url = site["url"]
    assert assert_same_graph(site_warc_store, tmp_path / "wat.db", AREA_ALTS) > 20
    # What the equality stands on is there: rel, base, redirect, gone, anchors, what is no link.
    pages = crawled(tmp_path / "wat.db")
    assert pages[f"{url}site/docs/missing.html"][1] == 404
    assert pages[f"{url}site/docs"][1] == 301
    assert links_of(tmp_path / "wat.db", f"{url}site/docs") == {f"{url}site/docs/": (False, None)}
    assert pages[f"{url}site/docs/base.html"][0] == "Base & <href>"
    assert set(links_of(tmp_path / "wat.db", f"{url}site/docs/base.html")) == {
        "https://mirror.example/root/page.html",
        "https://mirror.example/abs.html",
        "http://other.example/x",
    }
    assert {nofollow for nofollow, _ in links_of(tmp_path / "wat.db", f"{url}site/docs/nofollow.html").values()} == {
        True
    }
    extra = links_of(tmp_path / "wat.db", f"{url}extra.html")
    assert extra == {
        f"{url}site/docs/area.html": (False, "user content"),
        "https://ugc.example/": (True, "ugc"),
        "https://paid.example/": (True, "paid"),
        "https://twice.example/": (True, "one"),
        f"{url}site/index.html": (False, "Bold and italic anchor"),
        f"{url}site/index.html?x=1&y=2": (False, "entities & more été"),
        f"{url}site/docs/long.html": (False, ("a long anchor " * 15)[:MAX_TEXT_LEN].strip()),
        "https://map.example/": (True, None),
        "https://xn--caf-dma.example/%C3%A9t%C3%A9": (False, "IDN"),
    }
    with sqlite3.connect(tmp_path / "wat.db") as db:
        assert db.execute("SELECT canonical_url FROM pages WHERE url = ?", (f"{url}extra.html",)).fetchone() == (
            f"{url}extra.html?canonical=1",
        )


def _as_december_2024(envelope: dict) -> None:
    """Every header a list, as Common Crawl may write any header since December 2024, the names lower-case
    (HTTP/2); a redirect's Location repeated and a page's Content-Type too: the first counts."""
    http = envelope["Envelope"]["Payload-Metadata"].get("HTTP-Response-Metadata")
    if http is None:
        return
    headers = {name.lower(): value if isinstance(value, list) else [value] for name, value in http["Headers"].items()}
    headers["set-cookie"] = ["a=1; Path=/", "b=2; Path=/"]
    if "location" in headers:
        headers["location"] = headers["location"] + ["/not-this-one"]
    if "content-type" in headers:
        headers["content-type"] = headers["content-type"] + ["text/plain"]
    http["Headers"] = headers


def test_headers_as_lists_read_as_common_crawl_writes_them_since_december_2024(
    wat_reader, site, site_warc_store, tmp_path
):
    wat = str(tmp_path / "lists.warc.wat.gz")
    write_wat(site["warc"], wat, edit=_as_december_2024)
    with gzip.open(wat, "rt") as handle:
        assert '"set-cookie":["a=1; Path=/","b=2; Path=/"]' in handle.read()
    build(wat, tmp_path / "wat.db")
    assert assert_same_graph(site_warc_store, tmp_path / "wat.db", AREA_ALTS) > 20


# ------------------------------------------------------------------ bad WAT records


def _metadata(writer, payload: bytes, url="http://x.example/"):
    record = writer.create_warc_record(
        url, "metadata", payload=io.BytesIO(payload), warc_content_type="application/json"
    )
    writer.write_record(record)


def _response(url: str, status="200", headers=None, html=None, **warc) -> bytes:
    http = {"Response-Message": {"Version": "HTTP/1.1", "Status": status, "Reason": "X"}}
    http["Headers"] = headers if headers is not None else {"Content-Type": "text/html"}
    if html is not None:
        http["HTML-Metadata"] = html
    return json.dumps(
        {
            "Envelope": {
                "WARC-Header-Metadata": {"WARC-Type": "response", "WARC-Target-URI": url, **warc},
                "Payload-Metadata": {"HTTP-Response-Metadata": http},
            }
        }
    ).encode()


LINK = {"Links": [{"path": "A@/href", "url": "/next", "text": "next"}]}


def test_bad_wat_envelopes_are_reported_and_skipped(wat_reader, tmp_path):
    bad = [
        (b"{not json", "invalid WAT JSON"),
        (b"[1, 2]", "malformed WAT envelope (not a JSON object)"),
        (b'{"Container": {}}', "malformed WAT envelope (no Envelope)"),
        (b'{"Envelope": {"WARC-Header-Metadata": {}}}', "malformed WAT envelope (no WARC-Type"),
        (_response(""), "WAT envelope without WARC-Target-URI"),
        (_response("http://x.example/s", status="abc"), "malformed WAT envelope (no Response-Message.Status)"),
        (
            _response("http://x.example/l", html={"Links": {"a": 1}}),
            "malformed WAT envelope (HTML-Metadata.Links is not an array)",
        ),
        (_response("http://x.example/r", status="302", headers={}), "HTTP 302 without Location"),
        (b"\xff\xfe not utf-8", "invalid WAT JSON"),
    ]
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True)
    _metadata(writer, _response("http://x.example/a", html=LINK))
    offsets = []
    for payload, _ in bad:
        offsets.append(buffer.tell())
        _metadata(writer, payload)
    _metadata(writer, _response("http://x.example/b", html=LINK))
    wat = tmp_path / "bad.warc.wat.gz"
    wat.write_bytes(buffer.getvalue())
    result = build(wat, tmp_path / "s.db")
    assert result.exit_code == EXIT_SKIPPED
    for offset, (_, reason) in zip(offsets, bad):
        assert f"{wat}@{offset}: {reason}" in result.output, (offset, reason, result.output)
    assert "unreadable" not in result.output
    assert set(crawled(tmp_path / "s.db")) == {"http://x.example/a", "http://x.example/b"}


def test_a_damaged_wat_loads_its_good_records(wat_reader, tmp_path):
    """Garbage between two gzip members, and a last member cut short: read past, as in a WARC."""
    head, tail = io.BytesIO(), io.BytesIO()
    _metadata(WARCWriter(head, gzip=True), _response("http://x.example/a", html=LINK))
    writer = WARCWriter(tail, gzip=True)
    _metadata(writer, _response("http://x.example/c", html=LINK))
    _metadata(writer, _response("http://x.example/cut", html=LINK))
    garbage = bytes(range(256)) * 8
    wat = tmp_path / "damaged.warc.wat.gz"
    wat.write_bytes(head.getvalue() + garbage + tail.getvalue()[:-40])
    result = build(wat, tmp_path / "s.db")
    assert result.exit_code == EXIT_SKIPPED
    assert f"{wat}@{len(head.getvalue())}: unreadable WARC data" in result.output  # where the garbage starts
    assert "unreadable WARC data (file ends inside this record)" in result.output
    assert set(crawled(tmp_path / "s.db")) == {"http://x.example/a", "http://x.example/c"}
    assert links_of(tmp_path / "s.db", "http://x.example/c") == {"http://x.example/next": (False, "next")}


def test_a_warc_read_as_wat_says_what_it_is(tmp_path):
    result = build(REAL_WARC, tmp_path / "s.db", "--format", "wat")
    assert "no HTML responses in it" in result.output and "it is read with --format warc" in result.output
    assert "unreadable" not in result.output


def test_wat_named_so_is_a_wat_even_when_its_head_is_one_long_warcinfo(tmp_path):
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True)
    writer.write_record(writer.create_warcinfo_record("x.warc.wat.gz", {"note": "x" * 8000}))
    _metadata(writer, _response("http://x.example/a"))
    for name, expected in (("crawl.warc.wat.gz", "wat"), ("crawl.warc.gz", "warc")):
        (tmp_path / name).write_bytes(buffer.getvalue())
        assert detect_format(str(tmp_path / name)) == expected
    assert build(tmp_path / "crawl.warc.wat.gz", tmp_path / "s.db").exit_code == 0
    assert set(crawled(tmp_path / "s.db")) == {"http://x.example/a"}


def test_python_doc_crawl_as_wat_gives_the_same_store(wat_reader, python_doc_crawl, python_doc_store, tmp_path):
    """A real site of 500 pages; the WAT uncompressed (its JSON names "WARC/1.0": no record starts there)."""
    wat = str(tmp_path / "python-doc.warc.wat")
    write_wat(python_doc_crawl.warc, wat)
    result = build(wat, tmp_path / "wat.db")
    assert "unreadable" not in result.output, result.output
    assert assert_same_graph(python_doc_store, tmp_path / "wat.db") > 20000
    assert os.path.getsize(wat) > 1_000_000


def test_envelopes_read_alike_by_orjson_and_the_standard_library(python_doc_crawl, tmp_path):
    """orjson reads the envelopes (it is the faster); json is its twin, and reads what orjson refuses."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    from rankstore.sources import wat

    assert wat._orjson is not None  # a dependency: installed
    path = str(tmp_path / "python-doc.warc.wat.gz")
    write_wat(python_doc_crawl.warc, path)
    bodies = []
    for name in (path, data("whirlwind/whirlwind.warc.wat.gz")):
        with open(name, "rb") as handle:
            bodies += [r.reader.read() for r in ArchiveIterator(handle) if r.record_type == WarcRecordType.metadata]
    assert len(bodies) > 1_000
    assert all(wat._loads(body) == json.loads(body) for body in bodies)
    lone = b'{"Envelope": {"text": "\\ud800 half a pair"}}'  # orjson refuses an escaped lone surrogate
    with pytest.raises(wat._orjson.JSONDecodeError):
        wat._orjson.loads(lone)
    assert wat._loads(lone) == json.loads(lone)


@pytest.mark.parametrize(
    "entries",
    [
        [("a", "nofollow", ""), ("a", "", "A"), ("a", "nofollow", "B")],  # one occurrence votes: the link does
        [("a", "nofollow", ""), ("a", "ugc sponsored", "  "), ("a", "NOFOLLOW", "late")],  # none votes; first words
        [("a", "noopener", "x"), ("a", "nofollow", "y")],  # a rel that is no vote's
        [("#top", "", "t"), ("a", "", ""), ("b", "", "\n b \t"), ("a", "", "first words"), ("a", "", "second")],
        [("../x.html", "sponsored", "ad"), ("http://o.example/", "", ""), ("../x.html", "", "")],
    ],
)
def test_a_pages_repeated_hrefs_listed_once_read_as_every_occurrence_would(wat_reader, entries):
    """The WAT reader lists an href once (``wat._listed``); the page read from it is the page read from every
    occurrence listed (``resolve_listed``'s rules: nofollow only if every occurrence is, the first anchor text
    that says something)."""
    from rankstore.extract import resolve_listed
    from rankstore.sources import ListedLink, ListedPage
    from rankstore.sources.wat import _listed

    html = {"Links": [{"path": "A@/href", "url": href, "rel": rel, "text": text} for href, rel, text in entries]}
    once = _listed(html)
    assert len(once.links) == len({href for href, _, _ in entries})
    every = ListedPage(links=[ListedLink(href, rel, text) for href, rel, text in entries])
    url = "http://site.example/dir/page.html"
    got, expected = resolve_listed(once, url), resolve_listed(every, url)
    assert [(link.url, link.nofollow, link.anchor_text) for link in got.links] == [
        (link.url, link.nofollow, link.anchor_text) for link in expected.links
    ]
