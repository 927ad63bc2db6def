"""Issue 46, point 5: `rankstore forget` leaves no trace anywhere, the record's WARC files included.

A real pagerank-proxy on loopback records (with `--record-warc`) pages of two hosts of a real origin (python's
http.server on two ports); the record, and its WARC too, are built into a real store and ranked; `forget
--host` one of them; then every byte of every file of the record and of the store (the .db, its -wal and
-shm held open by another connection, and whatever else lies beside them), gzip members decompressed, is
searched for the host's name, its URLs and its content (a title, an e-mail address, a reset token).
"""

from __future__ import annotations

import gzip
import os
import sqlite3
import stat
import time
import zlib
from pathlib import Path

import pytest
from recordkit import Origin, small_ranked_store
from test_record_private import NAVIGATION, warc_records
from test_record_proxy import Proxy, lines_of

from conftest import data, invoke, run


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    return small_ranked_store(tmp_path_factory.mktemp("forgetwarc"))


def gunzipped(raw: bytes) -> bytes:
    """Every gzip member of ``raw`` decompressed, as far as each goes (a cut one up to its cut)."""
    out = b""
    while raw:
        inflater = zlib.decompressobj(31)
        try:
            out += inflater.decompress(raw)
        except zlib.error:
            break
        raw = inflater.unused_data
    return out


def traces(folder: Path, needles: list[bytes]) -> dict[str, list[bytes]]:
    """Which needles each file under ``folder`` holds, as raw bytes or gzip members decompressed."""
    found = {}
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        raw = path.read_bytes()
        seen = raw + (gunzipped(raw) if raw[:2] == b"\x1f\x8b" else b"")
        hits = [needle for needle in needles if needle.lower() in seen.lower()]
        if hits:
            found[str(path.relative_to(folder))] = hits
    return found


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_forgetting_a_host_leaves_no_trace_in_the_record_its_warc_or_the_store(store, tmp_path):
    origin = Origin(2)
    kept, secret = origin.base(0), origin.base(1)
    host = secret[len("http://") : -1]  # 127.0.0.1:PORT, as `forget --host` takes it
    origin.serve(
        "/news.html", f"<title>News</title><a href='story.html'>story</a><a href='{secret}login.html'>my bank</a>"
    )
    origin.serve("/story.html", "<title>Story</title><p>Nothing to hide.</p><a href='news.html'>news</a>")
    origin.serve(
        "/login.html",
        "<title>Hushbank login (confidential)</title><p>Write to alice.hushbank@mail.example</p>"
        "<a href='reset?token=RST-93817-XYZ'>reset your password</a><a href='account.html'>account</a>",
    )
    origin.serve("/account.html", "<title>Hushbank account</title><p>Balance 4711</p><a href='login.html'>out</a>")
    folder = tmp_path / "mine"
    record = folder / "record"
    proxy = Proxy(store, "--record", str(record), "--record-warc")
    try:
        for url in (kept + "news.html", secret + "login.html", secret + "account.html", kept + "story.html"):
            assert proxy.get(url, NAVIGATION)[0] == 200, url
    finally:
        proxy.stop()
        origin.close()
    mine = str(folder / "mine.db")
    [warc] = record.glob("responses-*.warc.gz")
    run("build", str(record), "--store", mine, "-q")
    run("build", str(warc), "--store", mine, "-q")  # the WARC too: its pages' links, token and all
    run("rank", "--store", mine, "-q")
    run("rank", "--store", mine, "--level", "host", "-q")
    needles = [host.encode(), b"Hushbank", b"alice.hushbank", b"RST-93817-XYZ", b"login.html", b"Balance 4711"]
    before = traces(folder, needles)
    assert {hit for hits in before.values() for hit in hits} == set(needles)
    assert any(name.startswith("record/responses-") for name in before)
    inode = os.stat(warc).st_ino
    # another connection holds the store open, as a proxy would: its -wal and -shm stay to be read
    holder = sqlite3.connect(mine, isolation_level=None)
    try:
        holder.execute("SELECT count(*) FROM pages").fetchone()
        result = invoke("forget", "--host", host, "--record", str(record), "--store", mine)
        assert result.exit_code == 0, result.output
        assert "record: 2 lines and 1 links to the host taken out of 1 files" in result.output
        assert "WARC: 3 records (1 naming the host) taken out of 1 files" in result.output
        assert os.path.exists(mine + "-wal") and os.path.exists(mine + "-shm")
        assert traces(folder, needles) == {}
    finally:
        holder.close()
    # the WARC written anew, renamed over the old one, owner-only as it was; the page that named nothing kept
    assert os.stat(warc).st_ino != inode and mode(warc) == 0o600
    assert [uri for uri, _ in warc_records(record)] == [kept + "story.html"]
    assert sorted(os.listdir(record)) == sorted(["RECORD", warc.name, next(record.glob("pages-*")).name])
    # building the record and its WARC again restores nothing
    run("build", str(record), "--store", mine, "-q")
    run("build", str(warc), "--store", mine, "-q")
    assert traces(folder, needles) == {}


def test_forgetting_before_a_date_takes_the_warcs_records_before_it(store, tmp_path):
    origin = Origin()
    base = origin.base()
    for name in ("early", "earlier", "late"):
        origin.serve(f"/{name}.html", f"<title>{name}</title><p>text of {name}</p><a href='late.html'>on</a>")
    record = tmp_path / "record"
    proxy = Proxy(store, "--record", str(record), "--record-warc")
    try:
        for name in ("earlier", "early"):
            assert proxy.get(base + f"{name}.html", NAVIGATION)[0] == 200
        cut = int(time.time()) + 1  # the next second: what came before is before it
        time.sleep(cut - time.time() + 0.05)
        assert proxy.get(base + "late.html", NAVIGATION)[0] == 200
    finally:
        proxy.stop()
        origin.close()
    moment = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(cut))
    mine = str(tmp_path / "mine.db")
    run("build", str(record), "--store", mine, "-q")
    result = invoke("forget", "--before", moment, "--record", str(record), "--store", mine)
    assert result.exit_code == 0, result.output
    assert "record: 2 lines and 0 links" in result.output
    assert "WARC: 2 records (0 naming the host) taken out of 1 files" in result.output
    assert [line["url"] for line in lines_of(record)] == [base + "late.html"]
    assert [uri for uri, _ in warc_records(record)] == [base + "late.html"]
    assert traces(tmp_path / "record", [b"text of early", b"text of earlier", b"early.html"]) == {}


def _member(url: str, body: bytes, fetched: str = "2026-11-01T10:00:00Z") -> bytes:
    from proxy_addon.record import RecordedPage, ResponseHead, warc_member

    page = RecordedPage(url, 200, None, fetched, ())
    return warc_member(page, ResponseHead(200, "OK", ((b"Content-Type", b"text/html"),)), body)


def test_forget_takes_cut_and_damaged_warc_members_that_name_the_host_and_keeps_the_rest_byte_for_byte(tmp_path):
    from recordkit import append, make_record, page

    record = make_record(str(tmp_path / "record"))
    append(record, "20261127T000000Z", 7, page("http://news.example/", "2026-11-01T10:00:00Z"))
    kept = _member("http://news.example/", b"<title>News</title><p>all quiet</p>")
    other = _member("http://shop.example/", b"<title>Shop</title>")
    named = _member("http://blog.example/", b"<a href='https://Secret.Example/x'>see</a>")
    gone = _member("http://secret.example/login", b"<title>Secret login</title>")
    damaged = bytearray(_member("http://secret.example/help", b"<p>Secret help</p>" * 50))
    damaged[-8:-4] = bytes(4 - n for n in range(4))  # its CRC wrong: zlib says so at its end, after its data
    cut = _member("http://secret.example/account", b"<p>Secret account " + os.urandom(4000).hex().encode())
    path = os.path.join(record, "responses-20261127T000000Z-7.warc.gz")
    with open(path, "wb") as handle:
        # a damaged member amid the file; the writer killed inside the last
        handle.write(kept + gone + named + bytes(damaged) + other + cut[: len(cut) // 2])
    os.chmod(path, 0o600)
    result = invoke("forget", "--host", "secret.example", "--record", record, "--store", _empty_store(tmp_path))
    assert result.exit_code == 0, result.output
    assert "WARC: 4 records (1 naming the host) taken out of 1 files" in result.output
    with open(path, "rb") as handle:
        assert handle.read() == kept + other  # untouched members copied as they were, never recompressed
    assert mode(path) == 0o600
    assert b"secret" not in gzip.decompress(kept + other).lower()
    # a cut member of another host is kept as it is, as a cut line is
    with open(path, "ab") as handle:
        handle.write(other[:40])
    again = invoke("forget", "--host", "secret.example", "--record", record, "--store", _empty_store(tmp_path))
    assert "WARC: 0 records (0 naming the host) taken out of 0 files" in again.output
    with open(path, "rb") as handle:
        assert handle.read() == kept + other + other[:40]


def _empty_store(folder: Path) -> str:
    path = str(folder / "empty.db")
    if not os.path.exists(path):
        run("build", data("small.warc.gz"), "--store", path, "-q")
    return path


def _visited_twice(url: str, body: bytes, first: str, again: str) -> tuple[bytes, bytes]:
    """A page's response and a revisit naming it, as the proxy writes them for a body seen twice."""
    from proxy_addon.record import (
        RecordedPage,
        ResponseHead,
        WarcOriginal,
        payload_digest,
        revisit_member,
        warc_member,
    )

    head = ResponseHead(200, "OK", ((b"Content-Type", b"text/html"),))
    record_id = f"<urn:uuid:{abs(hash((url, first))):032x}>".encode()
    response = warc_member(RecordedPage(url, 200, None, first, ()), head, body, record_id=record_id)
    original = WarcOriginal(record_id, url, first, payload_digest(body))
    return response, revisit_member(RecordedPage(url, 200, None, again, ()), head, len(body), original)


def test_forget_takes_a_revisit_with_the_response_it_names_and_makes_one_whole_when_its_response_goes(tmp_path):
    from fastwarc.warc import ArchiveIterator as FastIterator
    from recordkit import make_record
    from warcio import ArchiveIterator

    record = make_record(str(tmp_path / "record"))
    path = os.path.join(record, "responses-20261127T000000Z-7.warc.gz")
    news = _visited_twice("http://news.example/", b"<a href='https://secret.example/'>it</a>", *_TIMES[:2])
    story = _visited_twice("http://news.example/story", b"<p>Nothing to hide.</p>", *_TIMES[:2])
    login = _visited_twice("http://secret.example/login", b"<title>Login</title>", *_TIMES[:2])
    Path(path).write_bytes(b"".join((*news, *story, *login)))
    result = invoke("forget", "--host", "secret.example", "--record", record, "--store", _empty_store(tmp_path))
    assert result.exit_code == 0, result.output
    # news' revisit goes with its response, whose body names the host: its own member does not
    assert b"secret" not in gzip.decompress(news[1]).lower()
    assert "WARC: 4 records (2 naming the host) taken out of 1 files" in result.output
    assert Path(path).read_bytes() == b"".join(story)  # byte for byte

    early = _visited_twice("http://news.example/early", b"<p>early text</p>", "2026-11-01T10:00:00Z", _TIMES[1])
    late = _visited_twice("http://news.example/late", b"<p>late text</p>", _TIMES[1], _TIMES[1])
    Path(path).write_bytes(b"".join((*early, *late)))
    result = invoke("forget", "--before", "2026-11-10", "--record", record, "--store", _empty_store(tmp_path))
    assert result.exit_code == 0, result.output
    assert "WARC: 1 records (0 naming the host) taken out of 1 files; 1 later revisits made whole" in result.output
    with open(path, "rb") as handle:
        read = [
            (r.headers["WARC-Type"], r.headers["WARC-Date"], r.reader.read())
            for r in FastIterator(handle, parse_http=True)
        ]
    assert read == [
        ("response", _TIMES[1], b"<p>early text</p>"),  # the later visit, its body given back
        ("response", _TIMES[1], b"<p>late text</p>"),
        ("revisit", _TIMES[1], b""),  # its response stays: as it was
    ]
    remade = gzip.decompress(Path(path).read_bytes()).split(b"WARC/1.1")[1]
    assert b"WARC-Refers-To" not in remade and b"WARC-Profile" not in remade
    assert warc_fields(remade)[b"WARC-Record-ID"] == warc_fields(gzip.decompress(early[1]))[b"WARC-Record-ID"]
    with open(path, "rb") as handle:  # warcio checks the block's length and reads every record
        assert [(r.rec_type, r.content_stream().read()) for r in ArchiveIterator(handle)] == [
            ("response", b"<p>early text</p>"),
            ("response", b"<p>late text</p>"),
            ("revisit", b""),
        ]
    assert Path(path).read_bytes().endswith(b"".join(late))


_TIMES = ("2026-11-20T10:00:00Z", "2026-11-21T10:00:00Z")


def warc_fields(record: bytes) -> dict[bytes, bytes]:
    head = record.split(b"\r\n\r\n", 1)[0]
    return dict(line.split(b": ", 1) for line in head.split(b"\r\n")[1:] if b": " in line)
