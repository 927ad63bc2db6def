"""A page's record made in a rewriting worker, beside the page's rewrite: the same line and WARC member as
this process makes (the build's extractor reads them alike), written by the proxy before the client has the
page; a thread makes it where there is no worker."""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import re
import zlib

import pytest
from fastwarc.warc import ArchiveIterator, WarcRecordType
from recordkit import small_ranked_store
from test_addon import make_flow, run_hooks, running_addon

from proxy_addon import pool
from proxy_addon.jobs import Recorded, RecordJob
from proxy_addon.pool import Workers
from proxy_addon.record import make_record


@pytest.fixture(scope="module")
def store_path(tmp_path_factory) -> str:
    """A small ranked store: the proxy annotates every HTML page, in the store or not."""
    return small_ranked_store(tmp_path_factory.mktemp("record-worker"))


RECORD_ID = re.compile(rb"WARC-Record-ID: <urn:uuid:[0-9a-f-]+>")


def crawled_pages(warc: str, most: int = 60) -> list[tuple[str, int, str, tuple[tuple[bytes, bytes], ...], bytes]]:
    """The crawl's HTML responses as the origin sent them: URL, status, reason, headers, body."""
    pages = []
    with open(warc, "rb") as stream:
        for record in ArchiveIterator(stream, record_types=WarcRecordType.response, parse_http=True):
            head = record.http_headers
            headers = tuple(head.items_bytes())
            if not any(name.lower() == b"content-type" and b"html" in value for name, value in headers):
                continue
            url = record.headers["WARC-Target-URI"].strip("<>")  # wget writes it in brackets
            pages.append((url, head.status_code, head.reason_phrase or "", headers, record.reader.read()))
            if len(pages) == most:
                break
    return pages


def same_warc(one: bytes, other: bytes) -> bool:
    """Two WARC members alike but for their record's id (a fresh uuid each time)."""
    return RECORD_ID.sub(b"", gzip.decompress(one)) == RECORD_ID.sub(b"", gzip.decompress(other))


def jobs_of(pages) -> list[tuple[bytes, RecordJob]]:
    """Each page as the proxy would record it with --record-warc; one of them gzipped as its origin might send
    it, one answered private (its visit alone), one with its query kept."""
    made = []
    for number, (url, status, reason, headers, body) in enumerate(pages):
        encoding, withheld, queries = None, False, False
        if number % 7 == 1:
            body, encoding = gzip.compress(body), "gzip"
        withheld = number % 7 == 2
        queries = number % 7 == 3
        job = RecordJob(url + ("?q=1&token=s3cret" if queries else ""), status, reason, headers, 1.8e9 + number)
        made.append((body, job._replace(content_encoding=encoding, withheld=withheld, queries=queries, warc=True)))
    return made


@pytest.mark.parametrize("shared", [pool.SHARED_BYTES, 0], ids=["shared-memory", "pipes"])
async def test_a_record_made_in_a_worker_is_the_one_made_here_for_every_page_of_the_crawl(
    python_doc_crawl, store_path, shared, monkeypatch
):
    monkeypatch.setattr(pool, "SHARED_BYTES", shared)
    jobs = jobs_of(crawled_pages(python_doc_crawl.warc))
    assert len(jobs) == 60
    workers = Workers(2, store_path, "pagerank", 10)
    await workers.start()
    try:
        assert await workers.wait_started()
        # all sent at once: they queue for the workers' room and come back each to its page
        made = await asyncio.gather(*(workers.record(body, job) for body, job in jobs))
    finally:
        await workers.aclose()
    for (body, job), there in zip(jobs, made, strict=True):
        here = make_record(body, job)
        assert isinstance(there, Recorded) and isinstance(here, Recorded)
        assert there.line == here.line, job.url
        assert here.warc is not None and there.warc is not None and same_warc(there.warc, here.warc), job.url
    lines = [json.loads(record.line) for record in made if record is not None]
    assert sum(bool(line["links"]) for line in lines) >= 50  # real pages, with their links
    assert sum(line.get("private", False) for line in lines) == 9 and not any(b"s3cret" in r.line for r in made)


async def test_a_page_with_nothing_to_record_comes_back_as_none_from_a_worker(store_path):
    workers = Workers(1, store_path, "pagerank", 10)
    await workers.start()
    try:
        job = RecordJob("ftp://files.example/x.html", 200, "OK", ((b"Content-Type", b"text/html"),), 1.8e9)
        undecodable = job._replace(url="http://files.example/", content_encoding="gzip")
        assert await workers.record(b"<a href=/y>y</a>", job) is None  # no http(s) URL
        assert await workers.record(b"not gzip", undecodable) is None  # its rewrite leaves it untouched too
    finally:
        await workers.aclose()


@pytest.mark.parametrize("inline", [0, 65536], ids=["rewritten-in-a-worker", "rewritten-in-the-loop"])
async def test_the_proxy_records_a_page_in_a_worker_and_writes_it_before_the_page_goes(
    python_doc_crawl, store_path, tmp_path, inline
):
    # a page the loop rewrites when it comes alone: under 64 KB, and fewer links than the loop looks up
    url, _, _, headers, body = next(
        page for page in crawled_pages(python_doc_crawl.warc, most=200) if page[4].count(b"<a ") in range(20, 90)
    )
    record = tmp_path / "record"
    async with running_addon(
        store_path, pagerank_inline_bytes=inline, pagerank_record=str(record), pagerank_record_warc=True
    ) as addon:
        flow = make_flow(url, body, content_type=dict(headers).get(b"Content-Type", b"text/html").decode())
        await run_hooks(addon, flow)
        note = flow.metadata["pagerank"]
        # written by the time the hook hands the page on
        [line] = (record / name for name in [p.name for p in record.glob("pages-*.jsonl")])
        written = line.read_bytes()
        [warc] = list(record.glob("responses-*.warc.gz"))
        member = warc.read_bytes()
    assert "bars" in note and note.endswith(", recorded in a worker"), note
    assert ("in the loop" in note) == bool(inline)
    response = flow.response
    job = RecordJob(
        url,
        200,
        "OK",
        tuple(
            make_flow(
                url, body, content_type=dict(headers).get(b"Content-Type", b"text/html").decode()
            ).response.headers.fields
        ),
        response.timestamp_end,
        warc=True,
    )
    here = make_record(body, job)
    assert here is not None and written == here.line and here.warc is not None and same_warc(member, here.warc)
    assert json.loads(written)["links"]


async def test_without_workers_a_thread_makes_the_record(store_path, tmp_path):
    record = tmp_path / "record"
    html = b"<title>Shop</title><a href='/a'>A</a>" + b"<p>x</p>" * 3000
    async with running_addon(store_path, pagerank_workers=0, pagerank_record=str(record)) as addon:
        flow = make_flow("http://shop.example/", html)
        await run_hooks(addon, flow)
    assert flow.metadata["pagerank"].endswith(", recorded in a thread")
    [line] = [json.loads(text) for path in record.glob("pages-*.jsonl") for text in path.read_text().splitlines()]
    assert line["title"] == "Shop" and line["links"] == [
        {"url": "http://shop.example/a", "nofollow": False, "anchor": "A"}
    ]


def warc_members(path) -> list[bytes]:
    """Each gzip member of a record's WARC file, decompressed, checking that each ends where the next starts."""
    data, members = path.read_bytes(), []
    while data:
        inflater = zlib.decompressobj(31)
        members.append(inflater.decompress(data))
        assert inflater.eof
        data = inflater.unused_data
    return members


def warc_fields(member: bytes) -> dict[bytes, bytes]:
    """The WARC head's fields of a member's record (decompressed), by name."""
    head = member.split(b"\r\n\r\n", 1)[0]
    return dict(line.split(b": ", 1) for line in head.split(b"\r\n")[1:])


@pytest.fixture(params=["zlib", "isal"])
def deflater(request, monkeypatch):
    """The record's members compressed by each deflate implementation it may use, as markupsafe's twins are
    tested: ISA-L's where it is installed (a dependency), zlib's without it."""
    from proxy_addon import record

    chosen = {"zlib": record.ZLIB, "isal": record.ISAL}[request.param]
    assert chosen is not None, "isal, a dependency, is not installed"
    monkeypatch.setattr(record, "DEFLATER", chosen)
    return chosen


def test_a_revisit_of_the_same_body_is_recorded_as_a_first_visit_would_be(python_doc_crawl, deflater):
    """For every page of the crawl: the revisit's line is the one make_record makes for that visit, its later
    fetch and its new Date header; its WARC member, until its first visit's response is written, is that
    visit's response too (put together around the body compressed once), and then a revisit record naming that
    response (WARC 1.1's identical-payload-digest profile), with the visit's own status line and headers and
    no body; each is one gzip member that the build's WARC reader and warcio read."""
    import warcio

    from proxy_addon.record import REVISIT_PROFILE, RevisitCache, deflated_body, payload_digest, recorded_url

    cache = RevisitCache()
    jobs = jobs_of(crawled_pages(python_doc_crawl.warc))
    plain = [(body, job) for body, job in jobs if job.content_encoding is None and len(body) <= cache.most_body]
    # a coded body is decoded off the loop only, and a large one is not held for a revisit made in the loop
    assert all(cache.key(body, job) is None for body, job in jobs if (body, job) not in plain)
    assert len(plain) >= 30
    for body, job in plain:
        key = cache.key(body, job)
        assert key is not None and cache.made(key, body, job) is None  # nothing kept before its first visit
        line = make_record(body, job._replace(warc=False)).line
        withheld = job.withheld
        # the member made first, as the proxy makes it while the line is made elsewhere
        deflated, digest = (None, None) if withheld else (deflated_body(body), payload_digest(body))
        named = recorded_url(job.url, job.queries)
        assert named is not None
        first = cache.first(key, body, job, line, RevisitCache.response(named, body, job, deflated, digest))
        expected = make_record(body, job)
        assert first.line == expected.line and same_warc(first.warc, expected.warc), job.url
        assert (first.original is None) == job.withheld  # a response without its body is none to name
    originals = {}
    for hours, turn in enumerate(("unwritten", "written"), 1):
        for body, job in plain:
            later = job._replace(
                fetched=job.fetched + 3600 * hours,
                headers=tuple((n, b"Mon, 30 Nov 2026 10:00:00 GMT" if n == b"Date" else v) for n, v in job.headers),
            )
            key = cache.key(body, later)
            again = cache.made(key, body, later)
            expected = make_record(body, later)
            assert again is not None and again.line == expected.line, job.url
            inflater = zlib.decompressobj(31)
            inflater.decompress(again.warc)
            assert inflater.eof and not inflater.unused_data  # one whole member
            read = [
                (record.headers["WARC-Type"], record.headers["WARC-Target-URI"], record.reader.read())
                for record in ArchiveIterator(io.BytesIO(again.warc), parse_http=True)
            ]
            url = json.loads(again.line)["url"]
            if turn == "unwritten" or job.withheld:  # a response, as its first visit's
                assert same_warc(again.warc, expected.warc), job.url
                assert read == [("response", url, b"" if job.withheld else body)]
                if again.original is not None:
                    originals[job.url] = again.original
                    cache.written(key, again.original)
                continue
            original = originals[job.url]
            fields = warc_fields(gzip.decompress(again.warc))
            assert (fields[b"WARC-Type"], fields[b"WARC-Refers-To"]) == (b"revisit", original.record_id)
            assert fields[b"WARC-Refers-To-Target-URI"] == url.encode() == original.url.encode()
            assert fields[b"WARC-Refers-To-Date"] == original.date.encode() != fields[b"WARC-Date"]
            assert fields[b"WARC-Profile"] == REVISIT_PROFILE
            assert fields[b"WARC-Payload-Digest"] == payload_digest(body) == original.digest
            assert b"WARC-Payload-Digest: " + original.digest in gzip.decompress(expected.warc)
            # the visit's own status line and headers, the body's length said in them, and no body
            http_head = gzip.decompress(expected.warc).split(b"\r\n\r\n", 1)[1][: -len(body) - 4]
            assert gzip.decompress(again.warc).split(b"\r\n\r\n", 1)[1] == http_head + b"\r\n\r\n"
            assert read == [("revisit", url, b"")]
            [seen] = warcio.ArchiveIterator(io.BytesIO(again.warc))
            assert (seen.rec_type, seen.rec_headers["WARC-Refers-To"]) == ("revisit", original.record_id.decode())
            assert seen.http_headers.get_statuscode() == "200" and seen.content_stream().read() == b""
            assert again.original is None  # it names one; none names it
    changed = plain[0][0] + b"<!-- changed -->"
    assert cache.made(cache.key(changed, plain[0][1]), changed, plain[0][1]) is None  # another body: parsed anew
    body, job = plain[0]
    same_length = body[:-1] + (b"?" if body[-1:] != b"?" else b"!")
    key = cache.key(same_length, job)
    assert key == cache.key(body, job) and cache.made(key, same_length, job) is None  # compared byte for byte
    line = make_record(same_length, job._replace(warc=False)).line
    # kept in place of the body before, whose response a revisit names no more
    named = recorded_url(job.url, job.queries)
    assert named is not None
    member = RevisitCache.response(named, same_length, job, deflated_body(same_length), payload_digest(same_length))
    cache.first(key, same_length, job, line, member)
    assert cache.made(key, body, job) is None
    made = cache.made(key, same_length, job)
    assert made is not None and warc_fields(gzip.decompress(made.warc))[b"WARC-Type"] == b"response"


async def test_the_proxy_records_a_revisit_from_its_first_visit_and_a_changed_or_coded_page_anew(
    python_doc_crawl, store_path, tmp_path
):
    url, _, _, _, body = next(
        page for page in crawled_pages(python_doc_crawl.warc, most=200) if page[4].count(b"<a ") in range(20, 90)
    )
    visits = [
        (body, [], "recorded in a worker"),
        (body, [], "recorded from its visit before"),
        (body, [], "recorded from its visit before"),
        (body + b"<p>changed</p>", [], "recorded in a worker"),
        (body, [("content-encoding", "gzip")], "recorded in a worker"),
        (body, [("content-encoding", "gzip")], "recorded in a worker"),
    ]
    record = tmp_path / "record"
    flows, heads = [], []
    async with running_addon(store_path, pagerank_record=str(record), pagerank_record_warc=True) as addon:
        for sent, headers, _ in visits:
            flow = make_flow(url, sent, content_type="text/html", headers=headers)
            heads.append(tuple(flow.response.headers.fields))  # as the origin sent them: the rewrite changes them
            await run_hooks(addon, flow)
            flows.append(flow)
    assert [flow.metadata["pagerank"].rpartition(", ")[2] for flow in flows] == [said for _, _, said in visits]
    [pages] = list(record.glob("pages-*.jsonl"))
    [warc] = list(record.glob("responses-*.warc.gz"))
    lines, members = pages.read_bytes().splitlines(keepends=True), warc_members(warc)
    assert len(lines) == len(members) == len(visits)
    first = warc_fields(members[0])
    for (sent, _, said), flow, head, line, member in zip(visits, flows, heads, lines, members, strict=True):
        job = RecordJob(url, 200, "OK", head, flow.response.timestamp_end, warc=True)
        expected = make_record(sent, job)  # the body decoded: a coded one's encoding is not in the WARC
        assert line == expected.line
        if said == "recorded from its visit before":  # a revisit naming the first visit's response, written
            fields = warc_fields(member)
            assert (fields[b"WARC-Type"], fields[b"WARC-Refers-To"]) == (b"revisit", first[b"WARC-Record-ID"])
            assert fields[b"WARC-Payload-Digest"] == first[b"WARC-Payload-Digest"]
            assert (
                member.split(b"\r\n\r\n", 1)[1]
                == gzip.decompress(expected.warc).split(b"\r\n\r\n", 1)[1][: -len(sent) - 4] + b"\r\n\r\n"
            )
        else:
            assert RECORD_ID.sub(b"", member) == RECORD_ID.sub(b"", gzip.decompress(expected.warc))
