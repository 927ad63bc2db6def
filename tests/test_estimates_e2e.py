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


SHOWN = """
return Array.from(document.querySelectorAll('ul > li > a')).map(a => {
  const bar = a.querySelector("pagerank-bar"), fill = bar && bar.firstElementChild;  // inside: after the start tag
  if (!bar || bar.localName !== "pagerank-bar") return {kind: a.className, bar: null, fill: null};
  const barStyle = getComputedStyle(bar), fillStyle = getComputedStyle(fill);
  return {
    kind: a.className,
    bar: {
      level: bar.getAttribute('data-pagerank-level'),
      estimate: bar.getAttribute('data-pagerank-estimate'),
      pagerank: bar.getAttribute('data-pagerank'),
      title: bar.getAttribute('title'),
      width: bar.getBoundingClientRect().width,
      background: barStyle.backgroundColor,
    },
    fill: {
      width: fill.getBoundingClientRect().width,
      height: fill.getBoundingClientRect().height,
      background: fillStyle.backgroundColor,
      border: fillStyle.borderTopStyle + ' ' + fillStyle.borderTopWidth + ' ' + fillStyle.borderTopColor,
      visible: fillStyle.visibility === 'visible' && fillStyle.display !== 'none',
    },
  };
});
"""


def test_every_link_to_a_ranked_host_shows_a_visible_estimate_bar(host_graph_store, origin):
    proxy = Proxy(host_graph_store)
    driver = browser(proxy.port)
    try:
        driver.get(origin)
        shown = driver.execute_script(SHOWN)
        panel = driver.execute_script(
            "const p = document.getElementById('pagerank-panel'); return p && p.getAttribute('data-pagerank-level')"
        )
    finally:
        driver.quit()
        said = proxy.stop()
    assert len(shown) == ESTIMATED + PAGES + NOWHERE, said[-2000:]
    estimates = [one for one in shown if one["kind"] == "estimate"]
    pages = [one for one in shown if one["kind"] == "page"]
    for one in estimates:
        bar, fill = one["bar"], one["fill"]
        assert bar is not None and bar["level"] == "host" and bar["pagerank"] == "unranked", one
        assert float(bar["estimate"]) > 0 and bar["title"].startswith("host "), one
        # visible, outlined not filled: a non-zero outline box on a white bar
        assert fill["visible"] and fill["width"] > 0 and fill["height"] > 0, one
        assert fill["background"] == "rgba(0, 0, 0, 0)" and fill["border"] == "solid 1px rgb(221, 0, 0)", one
        assert bar["background"] == "rgb(255, 255, 255)", one
    for one in pages:
        bar, fill = one["bar"], one["fill"]
        assert bar is not None and bar["level"] is None and bar["estimate"] is None and float(bar["pagerank"]) > 0, one
        assert fill["width"] > 0 and fill["background"] == "rgb(221, 0, 0)" and fill["border"].startswith("none"), one
    for one in shown:
        if one["kind"] == "nowhere":
            assert one["bar"]["pagerank"] == "unranked" and one["bar"]["level"] is None and one["fill"]["width"] == 0
    # log widths within the host ranking: the estimates' widths vary with their hosts' ranks
    assert len({one["fill"]["width"] for one in estimates}) > 3
    assert panel == "none"  # the local page's host (127.0.0.1) is no host of the graph
