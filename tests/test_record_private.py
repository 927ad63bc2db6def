"""Issue 46, point 4: the record holds what the user chose, nothing a page chose.

A real pagerank-proxy on loopback records pages of a real origin (python's http.server, in a thread: each
page with the response headers a test gives it).  Only top-level navigations are recorded; `--record-exclude`
matches a host with or without its port, and `*.bank.example` (or `.bank.example`) covers `bank.example` too;
a page answered `Cache-Control: no-store` or `private` is recorded without title, links or body unless
`--record-private`; query parameters that carry secrets never reach the record, even with `--record-queries`.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest
from recordkit import Origin, small_ranked_store
from test_record_proxy import Proxy, lines_of

from conftest import ROOT


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    return small_ranked_store(tmp_path_factory.mktemp("private"))


@pytest.fixture(scope="module")
def origin():
    served = Origin(2)
    yield served
    served.close()


def page(title: str, *links: str, text: str = "") -> str:
    anchors = "".join(f"<a href='{href}'>{href}</a> " for href in links)
    return f"<!doctype html><title>{title}</title><body><p>{text}</p>{anchors}</body>"


def warc_records(record) -> list[tuple[str, bytes]]:
    """(WARC-Target-URI, HTTP body) of every response record of the record's WARC files, in order."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    found = []
    for path in sorted(record.glob("responses-*.warc.gz")):
        with open(path, "rb") as handle:
            for item in ArchiveIterator(handle, record_types=WarcRecordType.response, parse_http=True):
                found.append((item.headers["WARC-Target-URI"], item.reader.read()))
    return found


NAVIGATION = {"Sec-Fetch-Dest": "document", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Site": "none"}


def test_only_top_level_navigations_are_recorded(store, origin, tmp_path):
    """A page's frames, fetches, images and scripts are the page's choice, not the user's: never a visit."""
    base = origin.base()
    asked = {
        "typed.html": NAVIGATION,
        "framed.html": {"Sec-Fetch-Dest": "iframe", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Site": "cross-site"},
        "frameset.html": {"Sec-Fetch-Dest": "frame", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Site": "same-origin"},
        "fetched.html": {"Sec-Fetch-Dest": "empty", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Site": "same-origin"},
        "nocors.html": {"Sec-Fetch-Dest": "empty", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Site": "cross-site"},
        "image.html": {"Sec-Fetch-Dest": "image", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Site": "cross-site"},
        "script.html": {"Sec-Fetch-Dest": "script", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Site": "same-site"},
        "embedded.html": {"Sec-Fetch-Dest": "embed", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Site": "cross-site"},
        "old-browser.html": {},  # no Fetch Metadata at all: recorded, as before
    }
    for path in asked:
        origin.serve("/" + path, page(f"Title of {path}", "other.html"))
    record = tmp_path / "record"
    proxy = Proxy(store, "--record", str(record), "--record-warc")
    try:
        for path, headers in asked.items():
            assert proxy.get(base + path, headers)[0] == 200, path
    finally:
        proxy.stop()
    wanted = [base + "typed.html", base + "old-browser.html"]
    assert [line["url"] for line in lines_of(record)] == wanted
    assert [uri for uri, _ in warc_records(record)] == wanted


def test_record_exclude_matches_a_host_with_or_without_its_port(store, origin, tmp_path):
    """A pattern copied from `forget --host` (127.0.0.1:PORT) excludes that host on that port only; one without
    a port excludes every port; `*.localhost` covers `localhost` itself."""
    origin.serve("/a.html", page("A", "b.html"))
    kept, other = origin.ports
    record = tmp_path / "record"
    proxy = Proxy(
        store, "--record", str(record), "--record-exclude", f"127.0.0.1:{other}", "--record-exclude", "*.localhost"
    )
    try:
        for url in (
            f"http://127.0.0.1:{kept}/a.html",
            f"http://127.0.0.1:{other}/a.html",
            f"http://localhost:{kept}/a.html",
            f"http://LOCALHOST:{other}/a.html",
        ):
            assert proxy.get(url, NAVIGATION)[0] == 200, url
    finally:
        proxy.stop()
    assert [line["url"] for line in lines_of(record)] == [f"http://127.0.0.1:{kept}/a.html"]


@pytest.mark.parametrize(
    "pattern, host, port, excluded",
    [
        ("bank.example", "bank.example", 443, True),
        ("bank.example", "www.bank.example", 443, False),
        ("*.bank.example", "bank.example", 80, True),
        ("*.bank.example", "www.bank.example", 80, True),
        ("*.bank.example", "notbank.example", 80, False),
        (".bank.example", "bank.example", 443, True),
        (".bank.example", "login.www.bank.example", 443, True),
        (".bank.example", "bank.example.org", 443, False),
        ("*.Bank.Example.", "WWW.BANK.EXAMPLE.", 443, True),
        ("bank.example:8443", "bank.example", 8443, True),
        ("bank.example:8443", "bank.example", 443, False),
        ("*.bank.example:8443", "bank.example", 8443, True),
        ("127.0.0.1:28102", "127.0.0.1", 28102, True),
        ("127.0.0.1:28102", "127.0.0.1", 28103, False),
        ("127.0.0.1", "127.0.0.1", 28103, True),
        ("192.168.*", "192.168.1.20", 80, True),
        ("[::1]:8080", "::1", 8080, True),
        ("[::1]:8080", "::1", 8081, False),
        ("[::1]", "::1", 8081, True),
        ("::1", "::1", 8081, True),
        ("intranet.example:*", "intranet.example", 9000, True),
    ],
)
def test_exclude_patterns_read_as_no_proxy_does(pattern, host, port, excluded):
    from proxy_addon.record import exclude_patterns, excluded_host

    assert excluded_host(host, port, exclude_patterns([pattern])) is excluded


@pytest.mark.parametrize(
    "fields, reason",
    [
        ([], None),  # no Fetch Metadata: recorded (its client is no browser, or an opt-in's)
        ([(b"Sec-Fetch-Dest", b"document")], None),
        ([(b"sec-fetch-dest", b" Document ")], None),
        ([(b"Sec-Fetch-Dest", b"iframe")], "not a top-level navigation"),
        ([(b"Sec-Fetch-Dest", b"empty")], "not a top-level navigation"),
        # two fields are one list, as the headers' own reading joins them: no navigation says two things
        ([(b"Sec-Fetch-Dest", b"document"), (b"Sec-Fetch-Dest", b"iframe")], "not a top-level navigation"),
        ([(b"Sec-Fetch-Dest", b"document"), (b"AUTHORIZATION", b"Basic eDp5")], "an Authorization request"),
        ([(b"Authorization", b"")], "an Authorization request"),
    ],
)
def test_only_a_navigation_without_credentials_is_recorded(fields, reason):
    from mitmproxy.test import tflow

    from proxy_addon.record import private_reason

    flow = tflow.tflow(resp=True)
    flow.request.headers.fields = tuple(fields)
    assert private_reason(flow, ()) == reason


def test_the_help_says_how_exclude_patterns_match():
    help_text = subprocess.run(
        [sys.executable, "-m", "proxy_addon.cli", "--help"], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout
    flat = " ".join(help_text.split())
    assert "--record-private" in flat
    for said in ("HOST:PORT", "every port", "also covers bank.example"):
        assert said in flat, said
    from mitmproxy.test import taddons

    from proxy_addon.addon import PageRankProxy

    with taddons.context(PageRankProxy()) as context:
        option_help = " ".join(context.options._options["pagerank_record_exclude"].help.split())
        assert "HOST:PORT" in option_help and "also covers bank.example" in option_help
        assert "pagerank_record_private" in context.options._options


PRIVATE = {
    "no-store.html": [("Cache-Control", "no-store")],
    "private.html": [("Cache-Control", "max-age=60, private")],
    "named-private.html": [("Cache-Control", "max-age=0"), ("cache-control", 'PRIVATE="Set-Cookie"')],
    "public.html": [("Cache-Control", "public, max-age=60")],
    "plain.html": [],
}


def _private_session(store, origin, record, *flags: str) -> None:
    for name, headers in PRIVATE.items():
        origin.serve("/" + name, page(f"Title {name}", f"/linked-from-{name}", text=f"Body of {name}"), *headers)
    proxy = Proxy(store, "--record", str(record), "--record-warc", *flags)
    try:
        for name in PRIVATE:
            assert proxy.get(origin.base() + name, NAVIGATION)[0] == 200, name
    finally:
        proxy.stop()


def test_a_page_marked_private_is_recorded_without_title_links_or_body(store, origin, tmp_path):
    record = tmp_path / "record"
    _private_session(store, origin, record)
    base = origin.base()
    lines = {line["url"][len(base) :]: line for line in lines_of(record)}
    assert list(lines) == list(PRIVATE)  # each a visit all the same
    bodies = {uri[len(base) :]: body for uri, body in warc_records(record)}
    assert list(bodies) == list(PRIVATE)
    for name in PRIVATE:
        private = name.endswith("private.html") or name == "no-store.html"
        assert (lines[name]["title"] is None) is private, name
        assert (lines[name]["links"] == []) is private, name
        assert (bodies[name] == b"") is private, name
    raw = b"".join(path.read_bytes() for path in record.glob("pages-*.jsonl"))
    for name in ("no-store.html", "private.html", "named-private.html"):
        assert f"Title {name}".encode() not in raw and f"linked-from-{name}".encode() not in raw


def test_record_private_records_them_whole(store, origin, tmp_path):
    record = tmp_path / "record"
    _private_session(store, origin, record, "--record-private")
    base = origin.base()
    for line in lines_of(record):
        name = line["url"][len(base) :]
        assert line["title"] == f"Title {name}"
        assert [link["url"] for link in line["links"]] == [f"{base}linked-from-{name}"]
    for uri, body in warc_records(record):
        assert f"Body of {uri[len(base) :]}".encode() in body


SECRET_LINKS = {
    "reset?token=TOK1&lang=en": "reset?lang=en",
    "?sid=SID2": "search.html",
    "/api?apiKey=KEY3&x=1": "api?x=1",
    "/cb?code=CODE4&state=STATE5": "cb",
    "/form?csrfmiddlewaretoken=CSRF6&q=a": "form?q=a",
    "/s3?X-Amz-Signature=SIG7&X-Amz-Date=20260101": "s3?X-Amz-Date=20260101",
    "/login?user_password=PW8&next=%2Fhome": "login?next=%2Fhome",
    "/p?PHPSESSID=SESS9": "p",
    "/oauth?access_token=AT10&refresh_token=RT11&id=3": "oauth?id=3",
    "/unsubscribe?email_key=EK12&session=S13&auth=A14&otp=O15&nonce=N16": "unsubscribe",
    "/q?page=2&sort=new": "q?page=2&sort=new",
}


def test_secret_query_parameters_never_reach_the_record(store, origin, tmp_path):
    """Not in a page's URL (even with --record-queries), not in its links' targets, not in the WARC's target."""
    base = origin.base()
    anchors = "".join(f"<a href='{href}'>result {n}</a>" for n, href in enumerate(SECRET_LINKS))
    origin.serve("/search.html", f"<title>Search</title>{anchors}")
    record = tmp_path / "record"
    proxy = Proxy(store, "--record", str(record), "--record-warc", "--record-queries")
    try:
        url = base + "search.html?q=shoes&access_token=TOKA&Session_ID=SESSB&page=2"
        assert proxy.get(url, NAVIGATION)[0] == 200
    finally:
        proxy.stop()
    [line] = lines_of(record)
    assert line["url"] == base + "search.html?q=shoes&page=2"
    assert [link["url"] for link in line["links"]] == [base + target for target in SECRET_LINKS.values()]
    [(uri, _)] = warc_records(record)
    assert uri == line["url"]
    raw = b"".join(path.read_bytes() for path in record.glob("pages-*.jsonl"))
    for secret in ("TOKA", "SESSB", "TOK1", "SID2", "KEY3", "CODE4", "STATE5", "CSRF6", "SIG7", "PW8", "SESS9"):
        assert secret.encode() not in raw, secret


@pytest.mark.parametrize(
    "name",
    ["token", "Token", "access_token", "id_token", "authenticity_token", "accessToken", "csrfmiddlewaretoken",
     "session", "sessionid", "session_id", "JSESSIONID", "phpsessid", "sid", "key", "api_key", "apikey", "API-KEY",
     "auth", "password", "passwd", "pwd", "code", "state", "RelayState", "signature", "sig", "X-Amz-Signature",
     "X-Amz-Credential", "X-Amz-Security-Token", "csrf", "_csrf", "xsrf_token", "nonce", "otp", "secret",
     "client_secret", "ticket", "jwt", "reset", "user[password]", "oauth_verifier", "SAMLResponse"],
)  # fmt: skip
def test_a_secret_parameter_is_known_by_its_name(name):
    from proxy_addon.record import secret_parameter, without_secrets

    assert secret_parameter(name)
    assert without_secrets(f"http://x.example/p?{name}=v&q=1") == "http://x.example/p?q=1"


@pytest.mark.parametrize("name", ["q", "page", "id", "lang", "sort", "search", "tokens_per_page", "keyboard"])
def test_an_ordinary_parameter_is_kept(name):
    from proxy_addon.record import secret_parameter, without_secrets

    assert not secret_parameter(name)
    assert without_secrets(f"http://x.example/p?{name}=v&token=1") == f"http://x.example/p?{name}=v"


def test_a_recorded_url_without_queries_has_its_links_stripped_too():
    from proxy_addon.record import recorded_page

    body = b"<title>Mail</title><a href='/reset?token=abc&lang=en'>reset</a><a href='/inbox?sid=1'>in</a>"
    found = recorded_page(body, "text/html", "http://mail.example/login?next=/&session=9", 200, 0.0)
    assert found is not None
    assert found.url == "http://mail.example/login"
    assert [link.url for link in found.links] == ["http://mail.example/reset?lang=en", "http://mail.example/inbox"]
    assert json.loads(found.line())["links"][0]["url"] == "http://mail.example/reset?lang=en"


def test_a_private_line_is_a_view_and_not_a_page_without_links(tmp_path):
    """The reader's side: a page seen public with its links, then private (no title or links recorded), keeps
    the links and title it was seen with, and both views count."""
    from recordkit import append, link, make_record
    from recordkit import page as line

    from rankstore.store import Store

    from conftest import run

    record = make_record(str(tmp_path / "record"))
    seen = line("http://mail.example/", "2026-11-01T10:00:00Z", [link("http://mail.example/help")], title="Mail")
    private = {**line("http://mail.example/", "2026-11-02T10:00:00Z"), "private": True}
    only_private = {**line("http://bank.example/", "2026-11-02T11:00:00Z"), "private": True}
    append(record, "20261127T000000Z", 7, seen, private, only_private)
    mine = str(tmp_path / "mine.db")
    run("build", record, "--store", mine, "-q")
    with Store(mine, readonly=True) as opened:
        assert opened.visits.count() == 3
    db = sqlite3.connect(mine)
    rows = dict(db.execute("SELECT url, title FROM pages WHERE crawled").fetchall())
    assert rows == {"http://mail.example/": "Mail"}  # bank.example: viewed, never crawled
    assert db.execute("SELECT count(*) FROM pages WHERE url = 'http://bank.example/'").fetchone() == (1,)
    assert db.execute("SELECT count(*) FROM links").fetchone() == (1,)
