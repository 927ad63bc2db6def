"""Every ranking variant through a real proxy and headless Chromium: bars drawn for every positive score, an
empty bar that says why for a score of 0, and a ranking that a newer build has outdated named as stale.

Personalised, root-page, topic, TrustRank and BadRank rankings score 0 every page their rank source E
cannot reach; their bars are scaled from the lowest positive score (``Store.rankings.score_range``).  One store is
ranked with every variant once; one browser, pointed at one port, sees a proxy started there for each.
"""

from __future__ import annotations

import functools
import http.server
import shutil
import threading

import pytest
from barkit import panel_root, shown_bars, what_the_page_reads
from click.testing import CliRunner
from test_proxy_e2e import Proxy, browser, free_port

from rankstore.cli import cli
from rankstore.store import Store
from rankstore.urls import canonical

PAGE = "library/functions.html"
ZERO = "PageRank 0: the rank source never reaches this page"
# name -> the `rankstore rank` options that make it (seed files named by their key in the fixture)
VARIANTS = {
    "personalized": ["--source", "{base}library/functions.html"],
    "roots": ["--source-roots", "--name", "roots"],
    "topic:a": ["--topic", "a={topic}"],
    "trust": ["--trusted", "{trusted}"],
    "badrank": ["--flagged", "{flagged}"],
}


def run(*arguments: str) -> None:
    done = CliRunner().invoke(cli, [*arguments, "-q"])
    assert done.exit_code == 0, done.output


@pytest.fixture(scope="module")
def variant_store(python_doc_store, python_doc_crawl, tmp_path_factory) -> str:
    work = tmp_path_factory.mktemp("variants")
    path = str(work / "py.db")
    shutil.copy(python_doc_store, path)
    base = python_doc_crawl.base_url
    seeds = {
        "topic": ["tutorial/index.html", "tutorial/classes.html"],
        "trusted": ["index.html", "library/index.html"],
        "flagged": ["glossary.html"],
    }
    files = {}
    for name, pages in seeds.items():
        files[name] = str(work / f"{name}.txt")
        with open(files[name], "w") as handle:
            handle.write("".join(base + page + "\n" for page in pages))
    for options in VARIANTS.values():
        run("rank", "--store", path, *(option.format(base=base, **files) for option in options))
    return path


@pytest.fixture(scope="module")
def port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def driver(port):
    running = browser(port)
    yield running
    running.quit()


def bars_of(driver) -> list[dict]:
    """Each bar of the page (the panel's are in its shadow root, not among them): its score, its box's width,
    its fill's (0 for none), its tooltip, whether its link is shown; read from its closed shadow root."""
    return [
        {
            "score": bar["attributes"]["data-pagerank"],
            "w": int(bar["attributes"]["data-w"]),
            "bar": bar["host"]["width"],
            "fill": bar["fill"]["width"] if bar["fill"] else 0,
            "title": bar["title"],
            "shown": bar["shown"],
        }
        for bar in shown_bars(driver)
    ]


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_positive_score_of_every_variant_gets_a_visible_bar(variant_store, python_doc_crawl, port, driver, name):
    proxy = Proxy(variant_store, "--ranking", name, port=port)
    try:
        # the browser's cache is kept from variant to variant: the page another ranking's proxy rewrote must
        # not come back from it (the proxy leaves no validator of the origin's to revalidate it with)
        driver.get(python_doc_crawl.base_url + PAGE)
        every = bars_of(driver)
        bars = [bar for bar in every if bar["shown"]]  # links in hidden menus are not drawn
        panel = panel_root(driver).find_element("css selector", "#pagerank-panel").get_attribute("data-pagerank")
        zero_names = [  # what a screen reader says of each empty bar shown
            drawing.accessible_name
            for drawing in (
                host.shadow_root.find_element("css selector", "svg")
                for host in driver.find_elements("css selector", "span[data-pagerank-bar]")
            )
            if drawing.get_attribute("data-pagerank") == "0.0" and drawing.is_displayed()
        ]
        read = what_the_page_reads(driver)
    finally:
        said = proxy.stop()
    assert f"(ranking {name})" in said
    positive = [bar for bar in bars if bar["score"] not in ("unranked", "0.0")]
    assert len(positive) > 20, name
    assert all(bar["bar"] > 10 for bar in bars)  # the style applies: every bar's box is drawn
    assert all(bar["w"] >= 1 and bar["fill"] >= 1 for bar in positive), [bar for bar in positive if bar["fill"] < 1][:3]
    # the page's script reads none of it: hosts with one attribute that names them, and no shadow root it reaches
    assert read["data"] == 0 and read["shadowRoots"] == 0 and read["text"] == "" and read["children"] == 0
    assert read["hosts"] == len(every) + 1  # every bar's and the panel's
    assert set(read["attributes"]) <= {"data-pagerank-bar", "data-icon", "data-pagerank-panel"}
    assert panel not in (None, "unranked")
    with Store(variant_store, readonly=True) as store:  # this ranking's score, not a copy kept from another's
        url = canonical(python_doc_crawl.base_url + PAGE)
        assert panel == repr(store.queries.lookup([url], name)[url]["pagerank"])
    zeros = [bar for bar in bars if bar["score"] == "0.0"]
    assert zeros  # the page links to a page that no rank source reaches (only nofollow links lead there)
    assert all(bar["fill"] == 0 and bar["title"].startswith(ZERO) for bar in zeros)  # empty, and says why
    assert len(zero_names) == len(zeros) and all(text.startswith(ZERO) for text in zero_names)  # to a reader too


NEW = "http://new.example/a"  # a page the second build adds: in the store, not in the ranking


@pytest.fixture
def links_origin(tmp_path):
    """A page that links to the page the second build adds, and to the docs."""
    (tmp_path / "links.html").write_text(f"<!doctype html><title>links</title><body><p><a href='{NEW}'>new</a></p>")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_a_stale_ranking_is_named_in_the_panel_and_a_new_page_is_not_ranked_yet(
    python_doc_store, python_doc_crawl, links_origin, tmp_path, port, driver
):
    path = str(tmp_path / "py.db")
    shutil.copy(python_doc_store, path)
    run("rank", "--store", path)
    (tmp_path / "new.txt").write_text(f"{NEW} {python_doc_crawl.base_url}{PAGE}\n")
    run("build", str(tmp_path / "new.txt"), "--store", path)  # build 2, after the ranking
    proxy = Proxy(path, port=port)
    try:
        driver.execute_cdp_cmd("Network.clearBrowserCache", {})
        driver.get(python_doc_crawl.base_url + PAGE)
        root = panel_root(driver)
        hidden = driver.execute_script(
            "return arguments[0].querySelector('[data-stale]').getClientRects().length", root
        )
        root.find_element("css selector", "label.tab").click()  # the tab opens the panel
        stale = driver.execute_script(
            "const p = arguments[0].querySelector('[data-stale]');"
            "return [p.textContent, p.getBoundingClientRect().height, arguments[0].querySelector('.head').textContent]",
            root,
        )
        driver.get(links_origin + "links.html")
        (bar,) = shown_bars(driver)
        new = [bar["title"], bar["attributes"]["data-pagerank"]]
    finally:
        proxy.stop()
    assert hidden == 0  # the panel closed: a tab
    assert stale[0] == "Stale: ranking pagerank v1 predates build 2: run “rankstore rank”." and stale[1] > 0
    assert stale[2].endswith("stale ranking")
    assert new == [
        "PageRank: not ranked yet: the page came into the store after this ranking was made",
        "unranked",
    ]


def test_a_browser_that_connects_at_once_finds_the_proxy_up(variant_store, python_doc_crawl, port, driver):
    """A browser pointed at the port before the proxy starts (its own background connections come first, some
    of them TLS) is served: the addon's start goes on beside mitmproxy's, whose TLS certificates come after
    it, and a connection before them ended the proxy ("Errors logged during startup, exiting")."""
    for name in list(VARIANTS)[:3]:
        proxy = Proxy(variant_store, "--ranking", name, port=port)
        try:
            driver.get(python_doc_crawl.base_url + PAGE)
            assert bars_of(driver)
        finally:
            said = proxy.stop()
        assert "Errors logged during startup" not in said and "get_cert" not in said
