"""The proxy on a store that holds only a Common Crawl domain graph, ranked by site (issue 34).

Such a store has sites and their links, no pages and no page ranking.  With
no page ranking named, pagerank-proxy starts on it: every link's bar is its
site's rank ("Not in the PageRank store" where the store has not the site),
the panel says there is no page ranking, and the own pages answer 200 in
plain words that point to the site top list.  A page ranking named that is
not there is still an error; a store that ranks nothing gets advice that fits
it, and so does ``rankstore rank`` on a domain graph.
"""

from __future__ import annotations

import functools
import html
import http.server
import json
import re
import threading
import urllib.error
import urllib.request

import pytest
from barkit import Bar, bar_for, bar_links, panel_of, panel_summary
from click.testing import CliRunner
from make_domain_graph import GraphSize, make_domain_graph
from test_addon import make_flow, run_hooks, running_addon
from test_proxy_e2e import Proxy

from proxy_addon import cli as proxy_cli
from proxy_addon.ranks import Ranks
from rankstore.cli import cli
from rankstore.store import Store, analysis

from conftest import data, run

UNKNOWN = "https://no-such-site.invalid/page.html"


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sites-only")
    make_domain_graph(GraphSize(500, 3000), str(folder / "graph"), parts=1, seed=34)
    return folder


@pytest.fixture(scope="module")
def unranked_store(graph):
    """The domain graph built, nothing ranked."""
    path = str(graph / "unranked.db")
    run("build", str(graph / "graph"), "--store", path, "-q")
    return path


@pytest.fixture(scope="module")
def site_store(graph):
    """The domain graph built and ranked by site, as a new user does: no page ranking at all."""
    path = str(graph / "sites.db")
    run("build", str(graph / "graph"), "--store", path, "-q")
    run("rank", "--level", "site", "--store", path, "-q")
    return path


@pytest.fixture(scope="module")
def best_sites(site_store) -> list[str]:
    with Store(site_store, readonly=True) as store:
        return [row["site"] for row in analysis.top_nodes(store, "siterank", "site", 3)]


def page_linking(sites: list[str]) -> str:
    links = "".join(f'<li><a class="site" href="https://www.{name}/deep/page.html">{name}</a></li>' for name in sites)
    return (
        "<!doctype html><html><head><title>Links</title></head><body><ul>"
        f'{links}<li><a class="unknown" href="{UNKNOWN}">x</a></li></ul></body></html>'
    )


def bars_by_link(text: str) -> dict[str, Bar]:
    """href -> the bar in its link (outside the panel), each link's one bar."""
    return {href: bar_for(text, href) for href, _ in bar_links(text)}


def check_bars(text: str, sites: list[str]) -> None:
    bars = bars_by_link(text)
    assert len(bars) == len(sites) + 1, text[-3000:]
    for name in sites:
        bar = bars[f"https://www.{name}/deep/page.html"]
        assert bar.attributes.get("data-pagerank-level") == "site" and bar.tooltip.startswith(f"site {name}: "), bar
        assert float(bar.attributes["data-pagerank-estimate"]) > 0
    assert (
        bars[UNKNOWN].tooltip == "Not in the PageRank store" and "data-pagerank-level" not in bars[UNKNOWN].attributes
    )
    panel = panel_of(text)
    assert panel is not None and panel_summary(panel).startswith("No page ranking in this store"), panel


# --- the CLIs' advice ---------------------------------------------------------------------------------------


def test_rank_of_a_domain_graph_says_to_rank_its_sites(unranked_store):
    result = CliRunner().invoke(cli, ["rank", "--store", unranked_store, "-q"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "Error: the store has no pages, only sites (a domain graph): rank them with `rankstore rank --level site`"
    ]


def proxy_error(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as stopped:
        proxy_cli.main(argv)
    assert stopped.value.code == 1
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1, said
    return said[0]


def test_the_proxy_on_a_store_that_ranks_nothing_gives_advice_that_fits_it(unranked_store, tmp_path, capsys):
    said = proxy_error(["--store", unranked_store], capsys)
    assert said == (
        "pagerank-proxy: error: no ranking 'pagerank' "
        "(the store holds a domain graph and no pages: run `rankstore rank --level site`)"
    )
    pages = str(tmp_path / "pages.db")
    run("build", data("small.warc.gz"), "--store", pages, "-q")
    assert (
        proxy_error(["--store", pages], capsys) == "pagerank-proxy: error: no ranking 'pagerank' (run `rankstore rank`)"
    )


def test_a_page_ranking_named_that_is_not_there_is_still_an_error(site_store, capsys):
    said = proxy_error(["--store", site_store, "--ranking", "foo"], capsys)
    assert said.startswith("pagerank-proxy: error: no ranking 'foo' (the store ranks no pages, only sites (siterank)")


# --- the library and the addon ------------------------------------------------------------------------------


def test_links_get_their_sites_rank_from_the_library(site_store, best_sites):
    ranks = Ranks(site_store)  # no error: the default ranking may be missing here
    found = ranks.lookup([f"https://www.{name}/deep/page.html" for name in best_sites] + [UNKNOWN])
    assert [found[f"https://www.{name}/deep/page.html"].estimate.name for name in best_sites] == best_sites
    assert UNKNOWN not in found
    panel = ranks.panel(f"https://{best_sites[0]}/")
    assert not panel.pages_ranked and panel.levels[0].estimate is not None and panel.backlinks == []
    assert [head.name for head in ranks.levels_only()] == ["siterank"]
    ranks.close()


def test_a_page_in_the_loop_counts_its_sites_look_ups(site_store, best_sites):
    """The loop's bound on a page's look-ups (``lookups_needed``) counts the hosts a page's links need
    estimates for: with no page ranking, those are all of its links' hosts until they are known."""
    ranks = Ranks(site_store)
    ranks.preload()
    assert ranks.ready()
    urls = [f"https://www.{name}/deep/page.html" for name in best_sites] + [UNKNOWN]
    with ranks.page() as view:
        assert view.lookups_needed(urls) == len(urls)
        view.lookup(urls)
        assert view.lookups_needed(urls) == 0
    ranks.close()


@pytest.mark.parametrize("inline", [0, 65536], ids=["workers", "loop"])
async def test_the_addon_starts_and_shows_site_bars(site_store, best_sites, inline):
    async with running_addon(site_store, pagerank_inline_bytes=inline) as addon:
        flow = make_flow("http://origin.example/index.html", page_linking(best_sites).encode())
        await run_hooks(addon, flow)
        assert flow.metadata["pagerank"].startswith(f"{len(best_sites) + 1} bars (0 ranked)"), flow.metadata
        check_bars(flow.response.text, best_sites)


# --- a real pagerank-proxy on loopback -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def origin(best_sites, tmp_path_factory):
    folder = tmp_path_factory.mktemp("sites-only-origin")
    (folder / "index.html").write_text(page_linking(best_sites), encoding="utf-8")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/index.html"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def proxy(site_store):
    running = Proxy(site_store)
    yield running
    running.stop()


def fetch(proxy: Proxy, url: str) -> tuple[int, str]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{proxy.port}"}))
    try:
        with opener.open(url, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_the_proxy_starts_and_says_what_it_shows(proxy):
    said = proxy.said()
    assert proxy.process.poll() is None, said
    assert "(ranking siterank of sites: the store ranks no pages)" in said, said
    assert "Traceback" not in said


def test_every_link_through_the_proxy_shows_its_sites_rank(proxy, origin, best_sites):
    status, text = fetch(proxy, origin)
    assert status == 200
    check_bars(text, best_sites)


@pytest.mark.parametrize(
    "path",
    ["/", "/top", "/search?q=python", "/backlinks?url=https://example.com/", "/compare?target=https://a.example/"],
)
def test_the_own_pages_say_the_store_ranks_sites_only(proxy, path):
    status, text = fetch(proxy, "http://pagerank.proxy" + path)
    assert status == 200, text
    said = html.unescape(re.sub(r"<[^>]+>", " ", text.split("</nav>", 1)[1]))
    assert "This store ranks sites only: it holds a domain graph, no pages" in said, said
    assert 'href="http://pagerank.proxy/top?ranking=siterank"' in text


def test_the_own_page_of_a_url_is_its_sites_rank(proxy, best_sites):
    status, text = fetch(proxy, f"http://pagerank.proxy/page?url=https://www.{best_sites[0]}/x.html")
    assert status == 200, text
    assert f"The store ranks no pages: answered by its site {best_sites[0]}" in html.unescape(text)
    status, text = fetch(proxy, "http://pagerank.proxy/top?ranking=siterank")
    assert status == 200 and f'data-site="{best_sites[0]}"' in text
    status, text = fetch(proxy, "http://pagerank.proxy/builds")
    assert status == 200


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_a_download_of_pages_rows_says_there_are_none(proxy, best_sites, fmt):
    status, text = fetch(proxy, f"http://pagerank.proxy/top?format={fmt}")
    assert status == 404 and "This store ranks no pages" in text
    status, text = fetch(proxy, f"http://pagerank.proxy/top?ranking=siterank&format={fmt}")
    assert status == 200 and best_sites[0] in text


def test_top_with_no_ranking_named_lists_the_sites_of_a_store_that_ranks_no_pages(site_store, best_sites):
    result = CliRunner().invoke(cli, ["top", "-n", "3", "--format", "json", "--store", site_store])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [row["site"] for row in rows] == best_sites[:3]
    assert "the store ranks no pages: the best sites of siterank" in result.stderr
    named = CliRunner().invoke(cli, ["top", "--ranking", "nosuch", "--store", site_store])
    assert named.exit_code == 1 and "no ranking 'nosuch'" in named.output
