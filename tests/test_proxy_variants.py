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
    return driver.execute_script(
        "return [...document.querySelectorAll('a > pagerank-bar, area + pagerank-bar, pagerank-bar')]"
        ".filter(b => !b.closest('#pagerank-panel')).map(b => ({score: b.dataset.pagerank, "
        "bar: b.getBoundingClientRect().width, fill: b.firstElementChild.getBoundingClientRect().width, "
        "title: b.title, shown: b.parentElement.getClientRects().length > 0}))"
    )


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_positive_score_of_every_variant_gets_a_visible_bar(variant_store, python_doc_crawl, port, driver, name):
    proxy = Proxy(variant_store, "--ranking", name, port=port)
    try:
        # the browser's cache is kept from variant to variant: the page another ranking's proxy rewrote must
        # not come back from it (the proxy leaves no validator of the origin's to revalidate it with)
        driver.get(python_doc_crawl.base_url + PAGE)
        bars = [bar for bar in bars_of(driver) if bar["shown"]]  # links in hidden menus are not drawn
        panel = driver.execute_script("return document.getElementById('pagerank-panel').dataset.pagerank")
        zero_names = [  # what a screen reader says of each empty bar shown
            bar.accessible_name
            for bar in driver.find_elements("css selector", 'pagerank-bar[data-pagerank="0.0"]')
            if bar.is_displayed()
        ]
    finally:
        said = proxy.stop()
    assert f"(ranking {name})" in said
    positive = [bar for bar in bars if bar["score"] not in ("unranked", "0.0")]
    assert len(positive) > 20, name
    assert all(bar["bar"] > 10 for bar in bars)  # the style applies: every bar's box is drawn
    assert all(bar["fill"] >= 1 for bar in positive), [bar for bar in positive if bar["fill"] < 1][:3]
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
        driver.execute_script("document.querySelector('#pagerank-panel details').open = true")
        stale = driver.execute_script(
            "const p = document.querySelector('#pagerank-panel [data-stale]');"
            "return [p.textContent, p.getBoundingClientRect().height, "
            "document.querySelector('#pagerank-panel summary').textContent]"
        )
        driver.get(links_origin + "links.html")
        new = driver.execute_script(
            "const b = document.querySelector('pagerank-bar'); return [b.title, b.dataset.pagerank]"
        )
    finally:
        proxy.stop()
    assert stale[0] == "Stale: ranking pagerank v1 predates build 2: run “rankstore rank”." and stale[1] > 0
    assert stale[2].endswith("stale ranking")
    assert new == [
        "PageRank: not ranked yet: the page came into the store after this ranking (run `rankstore rank`)",
        "unranked",
    ]
