"""Issue 32 end to end: headless Chromium through pagerank-proxy on a page whose links go to many hosts of a loaded
host graph (Common Crawl's format, made by tools/make_paper_graph.py).  Every link to a ranked host whose page
the store does not hold shows a visible estimate bar, drawn apart from the page bars of the same page."""

from __future__ import annotations

import functools
import http.server
import random
import subprocess
import sys
import threading

import pytest
from barkit import panel_root, shown_bars, what_the_page_reads
from test_proxy_e2e import Proxy, browser

from rankstore.store import Store

from conftest import ROOT, run

ESTIMATED, PAGES, NOWHERE = 60, 10, 5


@pytest.fixture(scope="module")
def host_graph_store(tmp_path_factory):
    work = tmp_path_factory.mktemp("estimates-e2e")
    graph = work / "graph"
    subprocess.run(
        [sys.executable, "tools/make_paper_graph.py", "--pages", "2000", "--links", "20000", "--parts", "2"]
        + ["--out", str(graph)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    store = str(work / "hosts.db")
    run("build", str(graph / "vertices.paths.gz"), str(graph / "edges.paths.gz"), "--store", store, "-q")
    run("rank", "--store", store, "-q")
    run("rank", "--level", "host", "--store", store, "-q")
    return store


@pytest.fixture(scope="module")
def origin(host_graph_store, tmp_path_factory):
    """A local site whose one page links to many hosts of the graph: deep pages of ranked hosts (estimates),
    root pages (in the store: page bars) and hosts the store has not (unranked)."""
    folder = tmp_path_factory.mktemp("estimates-site")
    with Store(host_graph_store, readonly=True) as store:
        names = list(
            store.hosts.host_names(
                random.Random(32).sample(range(1, store.hosts.host_count() + 1), ESTIMATED + PAGES)
            ).values()
        )
    links = (
        [
            f'<a class="estimate" href="https://{name}/deep/page-{i}.html">{name}</a>'
            for i, name in enumerate(names[:ESTIMATED])
        ]
        + [f'<a class="page" href="https://{name}/">{name}</a>' for name in names[ESTIMATED:]]
        + [f'<a class="nowhere" href="https://nowhere{i}.invalid/x">x</a>' for i in range(NOWHERE)]
    )
    (folder / "index.html").write_text(
        "<!doctype html><html><head><title>Many hosts</title></head><body><ul>"
        + "".join(f"<li>{link}</li>" for link in links)
        + "</ul></body></html>",
        encoding="utf-8",
    )
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/index.html"
    server.shutdown()
    server.server_close()


def shown(driver) -> list[dict]:
    """Each link of the list: its kind, and its bar as drawn (read from the bar's closed shadow root, as the screen
    shows it): the drawing's attributes and tooltip, its frame's and its fill's box and paint."""
    kinds, hosts = driver.execute_script(
        "const links = [...document.querySelectorAll('ul > li > a')];"
        "return [links.map(a => a.className), links.map(a => a.querySelector('span[data-pagerank-bar]'))]"
    )
    drawn = dict(zip((i for i, host in enumerate(hosts) if host), shown_bars(driver, [h for h in hosts if h])))
    return [{"kind": kind, **drawn.get(i, {"attributes": None})} for i, kind in enumerate(kinds)]


def test_every_link_to_a_ranked_host_shows_a_visible_estimate_bar(host_graph_store, origin):
    proxy = Proxy(host_graph_store)
    driver = browser(proxy.port)
    try:
        driver.get(origin)
        links = shown(driver)
        panel = panel_root(driver).find_element("css selector", "#pagerank-panel").get_attribute("data-pagerank-level")
        read = what_the_page_reads(driver)
    finally:
        driver.quit()
        said = proxy.stop()
    assert len(links) == ESTIMATED + PAGES + NOWHERE, said[-2000:]
    assert all(one["attributes"] is not None for one in links)  # a bar in every link
    # after the link's text, the last thing in it; a host of one size, whatever it shows
    assert all(one["last_in_link"] for one in links)
    assert len({(one["host"]["width"], one["host"]["height"]) for one in links}) == 1
    estimates = [one for one in links if one["kind"] == "estimate"]
    pages = [one for one in links if one["kind"] == "page"]
    for one in estimates:
        bar, fill = one["attributes"], one["fill"]
        assert bar.get("data-pagerank-level") == "host" and bar["data-pagerank"] == "unranked", one
        assert float(bar["data-pagerank-estimate"]) > 0 and one["title"].startswith("host "), one
        # visible, outlined not filled: a non-zero outline box on a white bar
        assert fill["visible"] and fill["width"] > 0 and fill["height"] > 0, one
        assert fill["fill"] == "none" and (fill["stroke"], fill["strokeWidth"]) == ("rgb(221, 0, 0)", "1px"), one
        assert one["frame"]["fill"] == "rgb(255, 255, 255)", one
    for one in pages:
        bar, fill = one["attributes"], one["fill"]
        assert "data-pagerank-level" not in bar and "data-pagerank-estimate" not in bar, one
        assert float(bar["data-pagerank"]) > 0, one
        assert fill["width"] > 0 and fill["fill"] == "rgb(221, 0, 0)" and fill["stroke"] == "none", one
    for one in links:
        if one["kind"] == "nowhere":
            bar = one["attributes"]
            assert bar["data-pagerank"] == "unranked" and "data-pagerank-level" not in bar and one["fill"] is None
    # log widths within the host ranking: the estimates' widths vary with their hosts' ranks
    assert len({one["fill"]["width"] for one in estimates}) > 3
    assert panel == "none"  # the local page's host (127.0.0.1) is no host of the graph
    # the page's script reads none of it: hosts that carry nothing, and no shadow root it reaches
    assert read["data"] == 0 and read["shadowRoots"] == 0 and read["text"] == "" and read["children"] == 0
    assert read["hosts"] == len(links) + 1 and set(read["attributes"]) == {"data-pagerank-bar", "data-pagerank-panel"}
