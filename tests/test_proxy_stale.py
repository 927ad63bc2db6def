"""A ranking that a newer build has outdated, through the proxy: the panel names it, and a page the build
added says "not ranked yet", not "not in the store" (which ``rankstore info`` would contradict).

A proxy that was running when the build came learns of it at its next page: what it had remembered as not
in the store, and its panels, are made again; nothing new is asked per link.
"""

from __future__ import annotations

import shutil

import pytest
from barkit import bar_for, bar_links, panel_summary
from click.testing import CliRunner

from proxy_addon import options
from proxy_addon.jobs import Rewritten
from proxy_addon.markup import LinkInfo, panel, prose
from proxy_addon.ranks import Ranks
from proxy_addon.worker import _ranks_for, preload, rewrite_page
from rankstore.cli import cli
from rankstore.store import Store

from conftest import data

NEW = "http://new.example/a"  # added by the second build: in the store, not in the ranking's version
NOWHERE = "http://nowhere.example/"  # in no build
STALE = "ranking pagerank v1 predates build 2: run `rankstore rank`"
LATER = "not ranked yet: the page came into the store after this ranking was made"


def run(*arguments: str) -> None:
    done = CliRunner().invoke(cli, [*arguments, "-q"])
    assert done.exit_code == 0, done.output


@pytest.fixture(scope="module")
def ranked(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("stale") / "small.db")
    run("build", data("small.warc.gz"), "--store", path)
    run("rank", "--store", path)
    return path


@pytest.fixture
def store(ranked, tmp_path) -> str:
    path = str(tmp_path / "small.db")
    shutil.copy(ranked, path)
    return path


@pytest.fixture(scope="module")
def site(ranked) -> str:
    with Store(ranked, readonly=True) as opened:
        url = opened.db.execute("SELECT url FROM pages WHERE url LIKE '%/index.html'").fetchone()[0]
    return url[: -len("index.html")]


def build_new_page(store: str, site: str, tmp_path) -> None:
    """A second build: an edge list whose one page, new, links to the site (the site's pages keep theirs)."""
    edges = tmp_path / "new.txt"
    edges.write_text(f"{NEW} {site}index.html\n")
    run("build", str(edges), "--store", store)


@pytest.mark.parametrize("preload", [0, 10**6])  # look-ups asked of the store, or every page of the version known
def test_a_running_proxy_names_the_stale_ranking_and_a_new_page_not_ranked_yet(store, site, tmp_path, preload):
    ranks = Ranks(store, preload=preload)
    ranks.preload()
    assert ranks.lookup([NEW, NOWHERE]) == {}  # remembered as in no page of the store: until a build adds one
    before = ranks.panel(site + "index.html")
    assert before.stale is None and 'data-stale="true"' not in panel(before)
    build_new_page(store, site, tmp_path)
    found = ranks.lookup([NEW, NOWHERE, site + "index.html"])
    assert found[NEW] == LinkInfo(None, later=True) and NOWHERE not in found  # in the store, but unranked
    assert found[site + "index.html"].pagerank == before.info.pagerank  # the version's own answers stand
    after = ranks.panel(site + "index.html")
    assert after.stale == STALE and after.info == before.info
    shown = panel(after)
    assert f'<span class="p" data-stale="true">Stale: {prose(STALE)}.</span>' in shown
    assert "stale ranking" in panel_summary(shown)
    new = panel(ranks.panel(NEW))
    assert LATER in panel_summary(new) and "not in the store" not in new
    assert "this page is not in the store" in panel(ranks.panel(NOWHERE))
    run("rank", "--store", store)
    assert ranks.lookup([NEW])[NEW].pagerank > 0 and ranks.panel(site + "index.html").stale is None
    ranks.close()


def titles(body: bytes) -> dict[str, str]:
    """Each link's href and its bar's title (the link's tooltip, as written), outside the panel."""
    return {href: bar_for(body, href).title for href, _ in bar_links(body)}


def test_a_link_to_a_page_added_since_says_not_ranked_yet_in_its_tooltip_and_the_kept_panel_follows(
    store, site, tmp_path
):
    body = (
        f'<!doctype html><title>t</title><body><a href="{NEW}">new</a><a href="{NOWHERE}">gone</a>'
        f'<a href="{site}docs/">docs</a>'
    ).encode()

    def rewrite() -> tuple[bytes, bool]:
        # as the event loop rewrites a page alone in the proxy: refused (TooManyLinks) if it would cost more than
        # its few look-ups, as it would if a build made it read the version again
        done = rewrite_page(
            store,
            "pagerank",
            10,
            body,
            "text/html",
            site + "index.html",
            most_links=options.INLINE_LINKS,
            most_backlinks=options.INLINE_BACKLINKS,
            most_lookups=options.INLINE_LOOKUPS,
        )
        assert isinstance(done, Rewritten)
        return done[0], done[3]

    preload(store, "pagerank", 10)  # as the addon does for its loop before the first page
    first, _ = rewrite()
    assert titles(first)[NEW] == "Not in the PageRank store" and b"data-stale" not in first
    build_new_page(store, site, tmp_path)
    after, kept = rewrite()
    shown = titles(after)
    assert not kept and shown[NEW] == f"PageRank: {LATER}"  # not "not in the store"
    assert shown[NOWHERE] == "Not in the PageRank store" and shown[f"{site}docs/"].startswith("PageRank ")
    assert b'<span class="p" data-stale="true">Stale: ranking pagerank v1 predates build 2' in after
    assert b"stale ranking" in panel_summary(after).encode()
    # the next page: its links' marks and its panel kept for this version of the store, no query but its version
    queries: list[str] = []
    _ranks_for(store, "pagerank", 10).store().db.set_trace_callback(queries.append)
    again, kept = rewrite()
    assert kept and again == after and queries == ["PRAGMA data_version"]
    run("rank", "--store", store)
    preload(store, "pagerank", 10)  # a new version: the addon reads it for the loop first
    ranked, kept = rewrite()
    assert not kept and b"data-stale" not in ranked and titles(ranked)[NEW].startswith("PageRank ")
