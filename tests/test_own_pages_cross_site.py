"""The own pages answer no other site: a subresource or frame another site's page asks for gets one answer, the
same status and bytes whatever it asks and whatever the store holds; every answer of ours carries
Cross-Origin-Resource-Policy and X-Frame-Options; the reserved host is known in every spelling and never
forwarded.  The person's own ways in (a typed URL, a link of the panel, a link within the pages, curl) still work.

The rule as a table (``proxy_addon.pages.gate``), the addon's hooks in mitmproxy's harness, then a real
pagerank-proxy on loopback, and one in upstream mode whose upstream is a server that notes what reaches it.
"""

from __future__ import annotations

import http.client
import http.server
import socket
import threading
from urllib.parse import quote

import pytest
import test_addon
from mitmproxy.test import tflow
from test_addon import running_addon
from test_proxy_e2e import Proxy

from proxy_addon.addon import PageRankProxy
from proxy_addon.jobs import FlowState, state_of
from proxy_addon.pages import respond
from proxy_addon.pages.gate import OWN_ONLY_HEADERS, Asker, asker, is_reserved
from proxy_addon.ranks import Ranks

store_path = test_addon.store_path  # its small store (tests/data/small.warc.gz), a fixture used by name

IN_STORE = "http://127.0.0.1:45779/docs/area.html"  # pages of tests/data/small.warc.gz, and one it lacks
NOT_IN_STORE = "http://127.0.0.1:45779/docs/private-not-in-the-store.html"

# What another site's page can ask for: each path (with a URL the store has, and one it lacks) as each kind of
# subresource, and by other methods
PATHS = [
    f"/page?url={quote(IN_STORE)}",
    f"/page?url={quote(NOT_IN_STORE)}",
    f"/backlinks?url={quote(IN_STORE)}",
    f"/backlinks?url={quote(NOT_IN_STORE)}",
    f"/builds?url={quote(IN_STORE)}",
    f"/builds?url={quote(NOT_IN_STORE)}",
    f"/compare?target={quote(IN_STORE)}&target={quote(NOT_IN_STORE)}",
    f"/compare?target={quote(NOT_IN_STORE)}",
    "/top",
    "/top?n=abc",
    "/search?q=docs",
    "/usage",
    "/",
    "/nonexistent",
    f"/page?url={quote(IN_STORE)}&format=json",
]
# (Sec-Fetch-Dest, Sec-Fetch-Mode) of another site's requests: <img>, <script>, <link rel=stylesheet>, fetch(),
# <iframe>, <object>
SUBRESOURCES = [
    ("image", "no-cors"),
    ("script", "no-cors"),
    ("style", "no-cors"),
    ("empty", "cors"),
    ("empty", "no-cors"),
    ("iframe", "navigate"),
    ("object", "no-cors"),
]


def cross_site(destination: str, mode: str, site: str = "cross-site") -> dict[str, str]:
    return {"Sec-Fetch-Site": site, "Sec-Fetch-Dest": destination, "Sec-Fetch-Mode": mode}


# ------------------------------------------------------------------ the rule


@pytest.mark.parametrize(
    "site, destination, purpose, expected",
    [
        (None, None, None, Asker.PERSON),  # no Fetch Metadata: curl, a script, a browser on plain http
        ("none", "document", None, Asker.PERSON),  # typed, a bookmark
        ("same-origin", "document", None, Asker.PERSON),  # a link within the own pages
        ("same-origin", "empty", None, Asker.PERSON),  # the own pages' own requests (they make none today)
        ("cross-site", "document", None, Asker.PERSON),  # a link of a page's panel
        ("same-site", "document", None, Asker.PERSON),
        ("Cross-Site", "Document", None, Asker.PERSON),
        ("cross-site", "image", None, Asker.OTHER_SITE),
        ("cross-site", "script", None, Asker.OTHER_SITE),
        ("cross-site", "style", None, Asker.OTHER_SITE),
        ("cross-site", "empty", None, Asker.OTHER_SITE),  # fetch(), XHR, <link rel=prefetch>
        ("cross-site", "iframe", None, Asker.OTHER_SITE),
        ("cross-site", "frame", None, Asker.OTHER_SITE),
        ("cross-site", "object", None, Asker.OTHER_SITE),
        ("cross-site", "embed", None, Asker.OTHER_SITE),
        ("cross-site", None, None, Asker.OTHER_SITE),  # another site's, destination unsaid: not a navigation
        ("same-site", "image", None, Asker.OTHER_SITE),
        ("cross-site", "", None, Asker.OTHER_SITE),
        (None, None, "prefetch", Asker.OTHER_SITE),  # <link rel=prefetch> of a page on plain http
        (None, "document", "prefetch;prerender", Asker.OTHER_SITE),
        ("cross-site", "document", "prefetch", Asker.OTHER_SITE),
        ("none", "document", "prefetch;prerender", Asker.PERSON),  # the browser's own, of a typed URL
        ("same-origin", "empty", "prefetch", Asker.PERSON),
    ],
)
def test_who_asks(site, destination, purpose, expected):
    assert asker(site, destination, purpose) is expected


@pytest.mark.parametrize(
    "authority, expected",
    [
        ("pagerank.proxy", True),
        ("PAGERANK.Proxy", True),
        ("pagerank.proxy.", True),
        ("pagerank.proxy:80", True),
        ("pagerank.proxy:8080", True),
        ("pagerank.proxy:", True),
        ("Pagerank.Proxy.:80", True),
        ("pagerank.proxy..", True),
        (" pagerank.proxy ", True),
        ("pagerank.proxy:443", True),
        ("example.com", False),
        ("pagerank.proxy.example.com", False),
        ("www.pagerank.proxy", False),
        ("xpagerank.proxy", False),
        ("pagerank-proxy", False),
        ("127.0.0.1:8080", False),
        ("[::1]:80", False),
        ("::1", False),
        ("", False),
        (None, False),
    ],
)
def test_the_reserved_host_in_every_spelling(authority, expected):
    assert is_reserved(authority) is expected


# ------------------------------------------------------------------ the addon, in mitmproxy's harness


def own_flow(url: str, method: str = "GET", headers: dict[str, str] | None = None, host: str | None = None):
    flow = tflow.tflow()
    flow.request.url = url
    flow.request.method = method
    for name, value in (headers or {}).items():
        flow.request.headers[name] = value
    if host is not None:
        flow.request.headers["Host"] = host
    return flow


@pytest.fixture
async def addon(store_path):
    async with running_addon(store_path, pagerank_inline_bytes=0, pagerank_workers=0) as running:
        yield running


@pytest.fixture
def storeless():
    """The addon with no store set (never configured): idle, but its own host is still answered."""
    return PageRankProxy()


def answer(flow) -> tuple[int, bytes, str | None, str | None]:
    response = flow.response
    assert response is not None, "not answered by the proxy: it would have gone upstream"
    return (
        response.status_code,
        response.content,
        response.headers.get("cross-origin-resource-policy"),
        response.headers.get("x-frame-options"),
    )


async def test_another_sites_requests_get_one_answer_whatever_they_ask(addon, storeless):
    answers = set()
    for path in PATHS:
        for destination, mode in SUBRESOURCES:
            for method in ("GET", "POST", "OPTIONS", "PUT"):
                for proxy in (addon, storeless):
                    flow = own_flow("http://pagerank.proxy" + path, method, cross_site(destination, mode))
                    await proxy.request(flow)
                    assert state_of(flow) is FlowState.OWN_PAGE
                    answers.add(answer(flow))
    # the <link rel=prefetch> of a page on plain http carries no Fetch Metadata, only Sec-Purpose
    for path in PATHS:
        flow = own_flow("http://pagerank.proxy" + path, headers={"Sec-Purpose": "prefetch"})
        await addon.request(flow)
        answers.add(answer(flow))
    assert len(answers) == 1, answers
    ((status, body, corp, xfo),) = answers
    assert status == 403 and corp == "same-origin" and xfo == "DENY"
    assert b"answer only the person at the screen" in body


async def test_the_person_still_reads_them(addon):
    for headers in (
        {},  # curl
        {"Sec-Fetch-Site": "none", "Sec-Fetch-Dest": "document", "Sec-Fetch-Mode": "navigate"},  # typed
        cross_site("document", "navigate"),  # a link of the panel
        cross_site("document", "navigate", "same-origin"),  # a link within the own pages
    ):
        found = own_flow(f"http://pagerank.proxy/page?url={quote(IN_STORE)}", headers=headers)
        await addon.request(found)
        assert answer(found)[0] == 200 and IN_STORE.encode() in found.response.content, headers
        missing = own_flow(f"http://pagerank.proxy/page?url={quote(NOT_IN_STORE)}", headers=headers)
        await addon.request(missing)
        assert answer(missing)[0] == 404


@pytest.mark.parametrize(
    "url, host",
    [
        ("http://pagerank.proxy./top", None),
        ("http://PAGERANK.Proxy/top", None),
        ("http://pagerank.proxy:80/top", None),
        ("http://pagerank.proxy:8080/top", None),
        ("http://Pagerank.Proxy.:80/top", None),
        ("http://example.com/top", "pagerank.proxy"),
        ("http://example.com/top", "PAGERANK.PROXY.:80"),
        ("https://pagerank.proxy/top", None),  # inside a tunnel another host's CONNECT opened, or ours
    ],
)
async def test_every_spelling_is_answered_here(addon, url, host):
    flow = own_flow(url, host=host)
    await addon.request(flow)
    status, body, corp, xfo = answer(flow)
    assert status == 200 and b"<title>Top" in body and corp == "same-origin" and xfo == "DENY"


async def test_other_hosts_go_on_their_way(addon):
    for url in ("http://example.com/", "http://pagerank.proxy.example.com/", "http://www.pagerank.proxy/"):
        flow = own_flow(url)
        addon.http_connect(flow)
        addon.requestheaders(flow)
        await addon.request(flow)
        assert flow.response is None and state_of(flow) is not FlowState.OWN_PAGE


@pytest.mark.parametrize("authority", ["pagerank.proxy:443", "PAGERANK.PROXY.:443", "pagerank.proxy:80"])
def test_a_tunnel_to_the_reserved_host_is_refused_before_any_connection(storeless, authority):
    flow = tflow.tflow()
    flow.request.method = "CONNECT"
    flow.request.host, _, port = authority.rpartition(":")
    flow.request.port = int(port)
    storeless.http_connect(flow)
    status, body, corp, xfo = answer(flow)
    assert status == 403 and b"http://pagerank.proxy/" in body and corp == "same-origin" and xfo == "DENY"


def test_a_streamed_body_is_held_for_the_request_hook(storeless):
    """mitmproxy's stream_large_bodies would send the request upstream before the request hook could answer."""
    flow = own_flow("http://PAGERANK.proxy./top", "POST")
    flow.request.stream = True
    storeless.requestheaders(flow)
    assert flow.request.stream is False


async def test_the_errors_of_the_addon_carry_the_headers_too(storeless):
    flow = own_flow("http://pagerank.proxy/top")
    await storeless.request(flow)
    status, _, corp, xfo = answer(flow)
    assert status == 503 and corp == "same-origin" and xfo == "DENY"


def test_every_answer_of_the_pages_carries_the_headers(store_path):
    ranks = Ranks(store_path)
    try:
        for method, path, query in [
            ("GET", "/top", {}),
            ("GET", "/page", {"url": [IN_STORE]}),
            ("GET", "/page", {"url": [NOT_IN_STORE]}),  # 404
            ("GET", "/top", {"n": ["abc"]}),  # 400
            ("GET", "/nowhere", {}),  # 404
            ("POST", "/top", {}),  # 405
            ("GET", "/top", {"format": ["csv"]}),
            ("GET", "/backlinks", {"url": [IN_STORE], "format": ["json"]}),
        ]:
            status, headers, _ = respond(method, path, query, ranks)
            for name, value in OWN_ONLY_HEADERS.items():
                assert headers.get(name) == value, (method, path, query, status)
    finally:
        ranks.close()


# ------------------------------------------------------------------ through a real pagerank-proxy


class Noted(http.server.BaseHTTPRequestHandler):
    """An upstream that notes every request that reaches it (CONNECT too) and answers 502."""

    seen: list[str] = []

    def note(self) -> None:
        self.seen.append(f"{self.command} {self.path} Host={self.headers.get('Host')}")
        self.send_response(502)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_HEAD = do_POST = do_CONNECT = do_OPTIONS = note

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def upstream():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Noted)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def proxy(store_path):
    running = Proxy(store_path, "--", "--set", "pagerank_workers=0")
    yield running
    running.stop()


@pytest.fixture(scope="module")
def chained(store_path, upstream):
    """The proxy in upstream mode: whatever it forwards reaches ``upstream``, which notes it."""
    port = upstream.server_address[1]
    running = Proxy(store_path, "--", "--set", "pagerank_workers=0", "--mode", f"upstream:http://127.0.0.1:{port}")
    yield running
    running.stop()


def through(
    proxy: Proxy, url: str, method: str = "GET", headers: dict[str, str] | None = None
) -> tuple[int, bytes, http.client.HTTPMessage]:
    """A proxy request (absolute-form), its Host header ``url``'s unless ``headers`` says another."""
    connection = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    try:
        connection.request(method, url, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read(), response.headers
    finally:
        connection.close()


def tunnel(proxy: Proxy, authority: str) -> bytes:
    """The proxy's answer to ``CONNECT authority``: its head, and its body if it says how long."""
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=30) as sock:
        sock.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
        said = b""
        while b"\r\n\r\n" not in said and (chunk := sock.recv(65536)):
            said += chunk
        head, _, body = said.partition(b"\r\n\r\n")
        length = next(
            (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
        )
        while len(body) < length and (chunk := sock.recv(65536)):
            body += chunk
        return head + b"\r\n\r\n" + body


def test_another_sites_requests_through_the_proxy_get_one_answer(proxy):
    answers = set()
    for path in PATHS:
        for destination, mode in SUBRESOURCES:
            status, body, headers = through(
                proxy, "http://pagerank.proxy" + path, headers=cross_site(destination, mode)
            )
            answers.add((status, body))
            assert headers["Cross-Origin-Resource-Policy"] == "same-origin" and headers["X-Frame-Options"] == "DENY"
        status, body, _ = through(proxy, "http://pagerank.proxy" + path, "POST", cross_site("empty", "cors"))
        answers.add((status, body))
        status, body, _ = through(proxy, "http://pagerank.proxy" + path, headers={"Sec-Purpose": "prefetch"})
        answers.add((status, body))
    assert len(answers) == 1
    assert next(iter(answers))[0] == 403


def test_the_person_reads_them_through_the_proxy(proxy):
    for headers in (
        {},
        {"Sec-Fetch-Site": "none", "Sec-Fetch-Dest": "document", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-User": "?1"},
        cross_site("document", "navigate"),
        cross_site("document", "navigate", "same-origin"),
    ):
        status, body, answered = through(proxy, f"http://pagerank.proxy/page?url={quote(IN_STORE)}", headers=headers)
        assert status == 200 and IN_STORE.encode() in body, headers
        assert answered["Cross-Origin-Resource-Policy"] == "same-origin" and answered["X-Frame-Options"] == "DENY"
        status, _, answered = through(proxy, f"http://pagerank.proxy/page?url={quote(NOT_IN_STORE)}", headers=headers)
        assert status == 404 and answered["X-Frame-Options"] == "DENY"


SPELLINGS = [
    ("http://pagerank.proxy./top?n=3", {}),
    ("http://PAGERANK.Proxy/top?n=3", {}),
    ("http://pagerank.proxy:80/top?n=3", {}),
    ("http://pagerank.proxy:8080/top?n=3", {}),
    ("http://Pagerank.PROXY.:80/top?n=3", {}),
    ("http://elsewhere.invalid/top?n=3", {"Host": "PAGERANK.proxy."}),
    ("http://elsewhere.invalid/top?n=3", {"Host": "pagerank.proxy:80"}),
]


@pytest.mark.parametrize("url, headers", SPELLINGS)
def test_every_spelling_is_answered_by_the_proxy(proxy, url, headers):
    status, body, answered = through(proxy, url, headers=headers)
    assert status == 200 and b"<title>Top" in body and answered["X-Frame-Options"] == "DENY"


def test_no_spelling_ever_reaches_an_upstream(chained, upstream):
    Noted.seen.clear()
    for url, headers in SPELLINGS:
        status, body, _ = through(chained, url, headers=headers)
        assert status == 200 and b"<title>Top" in body, url
    for authority in ("pagerank.proxy:443", "PAGERANK.PROXY.:443", "pagerank.proxy.:8443"):
        said = tunnel(chained, authority)
        assert said.startswith(b"HTTP/1.1 403") and b"http://pagerank.proxy/" in said, said[:300]
    assert Noted.seen == []
    # the upstream does note what is forwarded to it
    status, _, _ = through(chained, "http://elsewhere.invalid/x?n=3")
    assert status == 502 and Noted.seen == ["GET http://elsewhere.invalid/x?n=3 Host=elsewhere.invalid"]


def test_a_tunnel_to_the_reserved_host_is_refused_by_the_proxy(proxy):
    said = tunnel(proxy, "pagerank.proxy:443")
    assert said.startswith(b"HTTP/1.1 403") and b"http://pagerank.proxy/" in said
