"""Only documents are rewritten: a response is annotated only when its request is a navigation to a document or a
frame (``Sec-Fetch-Dest``); a page's ``fetch()``, XHR, prefetch and every other subresource pass byte for byte,
streamed, never recorded.  A request without Fetch Metadata is judged as it always was.

Unit tests of the choice (mitmproxy's tflow and taddons), then the same through a real pagerank-proxy on
loopback, with plain HTTP requests that carry the headers a browser would.
"""

from __future__ import annotations

import http.client

import pytest
import test_addon
from test_addon import make_flow, run_hooks
from test_proxy_e2e import Proxy

from proxy_addon.jobs import FlowState, state_of
from proxy_addon.options import MAX_BODY, is_candidate

from conftest import ranked_copy

# test_addon's fixtures, by name: its small store, a URL of its site, and the addon as each way rewrites
store_path, site, either = test_addon.store_path, test_addon.site, test_addon.either

PAGE = b"<html><head></head><body><a href='docs/'>Docs</a><a href='https://nowhere.example/'>x</a></body></html>"

# Sec-Fetch-Dest values of a request whose answer a browser shows as a page, and of every other request
SHOWN: list[str | None] = ["document", "iframe", "frame", "Document"]
NOT_SHOWN: list[str | None] = ["empty", "image", "script", "style", "worker", "sharedworker", "object", "embed"]
NOT_SHOWN += ["audio", "video", "font", "manifest", "track", "report", "xslt", "serviceworker", "audioworklet", ""]


# a browser's, whose pages may be annotated at all
CHROMIUM = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"


def fetch_metadata(flow, destination: str | None, mode: str = "cors", origin: str = "same-origin") -> None:
    flow.request.headers["User-Agent"] = CHROMIUM
    if destination is not None:
        flow.request.headers["Sec-Fetch-Dest"] = destination
        flow.request.headers["Sec-Fetch-Mode"] = mode
        flow.request.headers["Sec-Fetch-Site"] = origin


@pytest.mark.parametrize("destination", SHOWN + NOT_SHOWN)
def test_only_a_request_for_a_page_to_show_makes_a_candidate(destination):
    flow = make_flow("http://a.example/page.html", PAGE)
    fetch_metadata(flow, destination)
    assert is_candidate(flow, MAX_BODY) is (destination in SHOWN)


@pytest.mark.parametrize(
    "user_agent, insecure_pages, shown",
    [
        ("curl/8.5.0", False, True),  # no browser: no page script runs
        (None, False, True),
        (CHROMIUM, False, False),  # a plain-http page of a browser: its own fetch() would look the same
        (CHROMIUM, True, True),  # the user accepts that (pagerank-proxy --insecure-pages)
    ],
)
def test_a_request_without_fetch_metadata_is_shown_annotated_unless_a_browser_sent_it(
    user_agent, insecure_pages, shown
):
    flow = make_flow("http://a.example/page.html", PAGE)
    if user_agent is not None:
        flow.request.headers["User-Agent"] = user_agent
    assert is_candidate(flow, MAX_BODY, insecure_pages) is shown


async def test_the_insecure_pages_option_annotates_a_browsers_plain_http_pages(store_path, site):
    from mitmproxy.test import taddons

    from proxy_addon.addon import PageRankProxy

    addon = PageRankProxy()
    with taddons.context(addon) as context:
        context.configure(addon, rankstore=store_path, pagerank_workers=0)
        flow = make_flow(site + "index.html", PAGE)
        flow.request.headers["User-Agent"] = CHROMIUM
        await run_hooks(addon, flow)
        assert state_of(flow) is FlowState.PASSED and flow.response.content == PAGE
        context.configure(addon, pagerank_insecure_pages=True)
        flow = make_flow(site + "index.html", PAGE)
        flow.request.headers["User-Agent"] = CHROMIUM
        await run_hooks(addon, flow)
        assert state_of(flow) is FlowState.REWRITTEN and flow.response.content != PAGE
        await addon.done()


@pytest.mark.parametrize(
    "destination, mode",
    [("empty", "cors"), ("empty", "same-origin"), ("empty", "no-cors"), ("script", "no-cors"), ("image", "no-cors")],
)
async def test_a_pages_fetch_of_a_page_passes_byte_for_byte_streamed_and_unrecorded(
    either, site, destination, mode, monkeypatch
):
    taken = []
    monkeypatch.setattr(either.recorder, "take", lambda *args, **kwargs: taken.append(args))
    flow = make_flow(site + "index.html", PAGE)
    fetch_metadata(flow, destination, mode)
    await run_hooks(either, flow)
    assert flow.response.content == PAGE
    assert flow.response.stream is True  # never buffered
    assert state_of(flow) is FlowState.PASSED
    assert taken == []


async def test_a_response_no_server_sent_is_judged_by_its_request_too(either, site):
    """A response another addon made (responseheaders never saw it): ``response`` decides alone, by the same rule."""
    fetched = make_flow(site + "index.html", PAGE)
    fetch_metadata(fetched, "empty")
    await either.response(fetched)
    assert fetched.response.content == PAGE
    shown = make_flow(site + "index.html", PAGE)
    fetch_metadata(shown, "iframe", "navigate")
    await either.response(shown)
    assert state_of(shown) is FlowState.REWRITTEN and shown.response.content != PAGE


@pytest.mark.parametrize("destination", SHOWN)
async def test_a_navigation_to_a_document_or_a_frame_is_annotated(either, site, destination):
    flow = make_flow(site + "index.html", PAGE)
    fetch_metadata(flow, destination, "navigate", "none")
    await run_hooks(either, flow)
    assert state_of(flow) is FlowState.REWRITTEN and flow.response.content != PAGE
    assert len(flow.response.content) > len(PAGE)


OLD_CHROMIUM = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/110.0.0.0 Safari/537.36"


async def test_a_browser_that_would_keep_the_template_readable_gets_the_page_as_it_came(either, site):
    """Chromium before 111 attaches no declarative shadow root: the bars' template would be an ordinary element
    whose content the page's script reads, so the page passes untouched, streamed."""
    flow = make_flow(site + "index.html", PAGE)
    fetch_metadata(flow, "document", "navigate", "none")
    flow.request.headers["User-Agent"] = OLD_CHROMIUM
    await run_hooks(either, flow)
    assert state_of(flow) is FlowState.PASSED and flow.response.content == PAGE


async def test_an_annotated_page_is_never_stored_by_a_cache(either, site):
    """A page's fetch(location.href, {cache: "force-cache"}) would read a stored annotated copy from the
    browser's cache, which never asks the proxy: the copy is not stored, and varies by Sec-Fetch-Dest."""
    flow = make_flow(site + "index.html", PAGE)
    flow.response.headers["Cache-Control"] = "max-age=600, public"
    fetch_metadata(flow, "document", "navigate", "none")
    await run_hooks(either, flow)
    assert state_of(flow) is FlowState.REWRITTEN
    assert flow.response.headers["cache-control"] == "private, no-store"
    assert "Sec-Fetch-Dest" in flow.response.headers.get_all("vary")


# ------------------------------------------------------------------ through a real pagerank-proxy


@pytest.fixture(scope="module")
def proxy(python_doc_store, tmp_path_factory):
    running = Proxy(ranked_copy(python_doc_store, tmp_path_factory.mktemp("fetch-metadata")))
    yield running
    running.stop()


def get(url: str, headers: dict[str, str], proxy_port: int | None = None) -> tuple[int, bytes]:
    """(status, body) of a plain GET, through the proxy on ``proxy_port`` (absolute-form) or straight to ``url``'s
    origin; no Accept-Encoding but identity, as http.client sends."""
    host = url.split("/")[2]
    connection = http.client.HTTPConnection("127.0.0.1", proxy_port) if proxy_port else http.client.HTTPConnection(host)
    try:
        connection.request("GET", url if proxy_port else "/" + url.split("/", 3)[3], headers=headers)
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def browser_headers(destination: str, mode: str, origin: str = "same-origin", **more: str) -> dict[str, str]:
    return {
        "Sec-Fetch-Dest": destination,
        "Sec-Fetch-Mode": mode,
        "Sec-Fetch-Site": origin,
        "Accept": "*/*",
        "User-Agent": CHROMIUM,
        **more,
    }


@pytest.mark.parametrize(
    "headers",
    [
        browser_headers("empty", "cors"),  # fetch(location.href)
        browser_headers("empty", "same-origin"),
        browser_headers("empty", "no-cors"),
        browser_headers("empty", "cors", "cross-site"),
        browser_headers("empty", "no-cors", "same-origin", **{"Sec-Purpose": "prefetch"}),  # <link rel=prefetch>
        browser_headers("script", "no-cors"),
        browser_headers("style", "no-cors"),
        browser_headers("object", "no-cors"),
        # a browser sends no Fetch Metadata to a plain-http site beyond loopback: its navigation and the page's
        # own fetch() of itself look alike, so neither is annotated (unless --insecure-pages)
        {"User-Agent": CHROMIUM, "Accept": "text/html,application/xhtml+xml", "Upgrade-Insecure-Requests": "1"},
    ],
    ids=[
        "fetch-cors",
        "fetch-same-origin",
        "fetch-no-cors",
        "fetch-cross-site",
        "prefetch",
        "script",
        "style",
        "object",
        "browser-without-fetch-metadata",
    ],
)
def test_a_subresource_request_for_a_page_gets_the_origins_bytes(proxy, python_doc_crawl, headers):
    url = python_doc_crawl.base_url + "library/functions.html"
    status, origin = get(url, {})
    assert status == 200 and b"<a " in origin
    assert get(url, headers, proxy.port) == (200, origin)


@pytest.mark.parametrize(
    "headers",
    [
        {"User-Agent": "curl/8.5.0"},  # no Fetch Metadata and no browser: as ever
        browser_headers("document", "navigate", "none"),
        browser_headers("document", "navigate", "cross-site"),
        browser_headers("iframe", "navigate", "same-origin"),
        browser_headers("frame", "navigate", "same-origin"),
    ],
    ids=["no-browser", "typed", "link", "iframe", "frame"],
)
def test_a_navigation_through_the_proxy_is_annotated(proxy, python_doc_crawl, headers):
    url = python_doc_crawl.base_url + "library/functions.html"
    _, origin = get(url, {})
    status, shown = get(url, headers, proxy.port)
    assert status == 200 and shown != origin
    assert b"pagerank" in shown.lower() and len(shown) > len(origin)
