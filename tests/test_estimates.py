"""A bar for every link to the web (issue 32, points 2 and 3): host and site ranks where the page has none.

A Common Crawl host graph (tests/data/ccgraph/host: eight hosts, one root
page each) is built and ranked by page and by host, and its four sites are
given a site ranking written directly.  A link to a root page keeps its page
bar, byte for byte; a link to any other page of a ranked host shows that
host's rank, of a host the store has not its site's, drawn apart
(``data-pagerank-level``, ``data-pagerank-estimate``, outlined); a link with no
rank at any level stays ``unranked``.  A page the store does not hold gets a
panel of its host's and site's rank with their best referrers.
"""

from __future__ import annotations

import html
import json
import math
import re
import shutil

import barkit
import numpy as np
import pytest

from proxy_addon import markup, rewrite
from proxy_addon import ranks as ranks_module
from proxy_addon.jobs import Rewritten
from proxy_addon.markup import MAX_BAR_PX, LinkInfo, bars, format_score, panel
from proxy_addon.pages import respond
from proxy_addon.ranks import LevelChoice, Ranks
from proxy_addon.rewrite import annotate
from proxy_addon.worker import rewrite_page
from rankstore.store import Store, StoreError

from conftest import data, invoke, run

SITE_SCORES = {"example.com": 0.4, "wikipedia.org": 0.3, "bbc.co.uk": 0.2, "xn--bcher-kva.net": 0.1}
PAGE = "https://en.wikipedia.org/wiki/Some_article"  # not in the store: its host is


def write_site_ranking(path: str, name: str = "siterank", scores: dict[str, float] = SITE_SCORES) -> None:
    """A site ranking over every site of the store, written as `rank --level site` would store one."""
    with Store(path) as store:
        count = store.sites.site_count()
        ids = {site: store.sites.site_id(site) for site in scores}
        values = np.zeros(count)
        for site, score in scores.items():
            values[ids[site] - 1] = score
        store.rankings.write_ranking(
            name, {"kind": "test"}, 0, [], np.arange(1, count + 1), values, np.ones(count), level="site"
        )


@pytest.fixture(scope="module")
def hosts_store(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("estimates") / "hosts.db")
    run("build", data("ccgraph/host"), "--store", path, "-q")
    run("rank", "--store", path, "-q")
    run("rank", "--level", "host", "--store", path, "-q")
    write_site_ranking(path)
    return path


def expected(store: Store, level: str, name: str, ranking: str) -> dict:
    """What a level's ranking says of a host (site), worked out here from its raw scores."""
    found = store.rankings.ranking(ranking)
    _, scores = store.rankings.scores_of(found.id)
    number = store.hosts.host_id(name) if level == "host" else store.sites.site_id(name)
    score = float(scores[number - 1])
    position = int(np.sum(scores > score) + np.sum((scores == score)[: number - 1]))  # the order: ties by id
    place = int(np.sum(scores > score))  # what is shown: ties alike
    positive = scores[scores > 0]
    low, high = float(positive.min()), float(positive.max())
    fraction = (math.log(score) - math.log(low)) / (math.log(high) - math.log(low))
    nodes = len(scores)
    steps = math.floor(math.log(score * nodes) / math.log(6.5)) + 1 if score * nodes >= 1 else 0
    return {
        "score": score,
        "position": position,
        "place": place,
        "nodes": nodes,
        "width": 1 + round(fraction * (MAX_BAR_PX - 1)),
        "percentile": 100.0 * (nodes - place) / nodes,
        "toolbar": max(0, min(10, steps)),
    }


def tooltip(level: str, name: str, numbers: dict) -> str:
    return (
        f"{level} {name}: {level} rank {format_score(numbers['score'])}"
        f" · {numbers['percentile']:.2f} percentile of {level}s · toolbar {numbers['toolbar']}/10"
    )


def bar_of(text: str, href: str) -> barkit.Bar:
    """The bar of the link to ``href`` (before its ``</a>``, after its text)."""
    found = barkit.bar_for(text, href)
    assert text[found.end :].startswith("</a>"), text[found.end : found.end + 80]
    return found


def attributes(bar: barkit.Bar) -> dict[str, str]:
    """What the bar says: its drawing's data attributes and role, and its tooltip as ``title``."""
    drawn = {name: value for name, value in bar.attributes.items() if name.startswith("data-") or name == "role"}
    return {**drawn, "title": bar.tooltip}


LINKS = {
    "https://example.com/": "a page in the store",
    "https://example.com/about/team.html": "its host example.com",
    "https://news.bbc.co.uk/world/x?a=1&amp;b=2": "its host news.bbc.co.uk",
    "https://www.bbc.co.uk/news": "a host the store has not: its site bbc.co.uk",
    "/wiki/Other": "relative: its host en.wikipedia.org",
    "https://user.github.io/": "no rank at any level",
}
DOCUMENT = "<!doctype html><title>t</title><body>" + "".join(
    f'<a href="{href}">{text}</a>\n' for href, text in LINKS.items()
)


def test_a_level_answers_by_its_own_ranking(hosts_store, tmp_path):
    with Store(hosts_store, readonly=True) as store:
        host = store.levels.level_head("host")
        site = store.levels.level_head("site")
        assert (host.name, host.level, host.nodes) == ("hostrank", "host", 8)
        assert (site.name, site.level, site.nodes) == ("siterank", "site", 4)
        assert (site.lowest, site.highest) == (0.1, 0.4)
        found = store.levels.level_scores(site, ["bbc.co.uk", "example.com", "github.io", "bbc.co.uk"])
        assert dict(zip(found.names, found.scores.tolist())) == {"bbc.co.uk": 0.2, "example.com": 0.4}
        assert dict(zip(found.names, found.places.tolist())) == {"bbc.co.uk": 2, "example.com": 0}
        # the same answer from the level's keys in memory
        keys = store.levels.level_keys("site")
        assert keys.count == 4 and keys.find(["bbc.co.uk", "github.io"]) == {
            "bbc.co.uk": store.sites.site_id("bbc.co.uk")
        }
        again = store.levels.level_scores(site, ["bbc.co.uk", "example.com", "github.io"], keys)
        assert dict(zip(again.names, again.scores.tolist())) == {"bbc.co.uk": 0.2, "example.com": 0.4}
        assert dict(zip(again.names, again.places.tolist())) == {"bbc.co.uk": 2, "example.com": 0}
        found = store.levels.level_scores(host, ["news.bbc.co.uk", "www.bbc.co.uk"])
        numbers = expected(store, "host", "news.bbc.co.uk", "hostrank")
        assert found.names == ("news.bbc.co.uk",)
        assert (float(found.scores[0]), int(found.places[0])) == (numbers["score"], numbers["place"])
        with pytest.raises(StoreError, match="pagerank ranks pages, not hosts"):
            store.levels.level_head("host", "pagerank")
        with pytest.raises(StoreError, match="siterank ranks sites, not hosts"):
            store.levels.level_head("host", "siterank")
    # without siterank, the newest ranking of sites answers (a loaded cc-pagerank, say)
    other = str(tmp_path / "other.db")
    shutil.copy(hosts_store, other)
    with Store(other) as store:
        store.db.execute(
            "DELETE FROM ranking_blocks WHERE ranking_id IN (SELECT id FROM rankings WHERE name = 'siterank')"
        )
        store.db.execute("DELETE FROM rankings WHERE name = 'siterank'")
    write_site_ranking(other, "cc-pagerank", {**SITE_SCORES, "bbc.co.uk": 0.05})
    with Store(other, readonly=True) as store:
        assert store.levels.level_head("site").name == "cc-pagerank"
        assert store.levels.level_head("site", "cc-pagerank").lowest == 0.05
    write_site_ranking(other, "siterank")
    with Store(other, readonly=True) as store:
        assert store.levels.level_head("site").name == "siterank"  # the default name wins over a newer one


def test_best_referrers_by_rank_at_their_level(hosts_store):
    with Store(hosts_store, readonly=True) as store:
        host, site = store.levels.level_head("host"), store.levels.level_head("site")
        # example.com's in-links come from blog, shop, en.wikipedia, news.bbc and xn--bcher-kva (one link each)
        linking = ["blog.example.com", "shop.example.com", "en.wikipedia.org", "news.bbc.co.uk", "xn--bcher-kva.net"]
        by_rank = sorted(linking, key=lambda name: expected(store, "host", name, "hostrank")["position"])
        found = store.levels.referrers(host, "example.com", 3)
        assert [one.name for one in found] == by_rank[:3]
        assert [one.links for one in found] == [1, 1, 1]
        assert [one.score for one in found] == [expected(store, "host", n, "hostrank")["score"] for n in by_rank[:3]]
        # the site example.com: its own hosts' links to each other do not count
        found = store.levels.referrers(site, "example.com", 10)
        assert [(one.name, one.place, one.links) for one in found] == [
            ("wikipedia.org", 1, 1),
            ("bbc.co.uk", 2, 1),
            ("xn--bcher-kva.net", 3, 1),
        ]
        assert store.levels.referrers(site, "example.com", 10, most_pages=2) is None  # three pages: too many to read
        assert store.levels.referrers(host, "nowhere.example", 10) == []


def test_every_link_with_a_rank_at_any_level_gets_a_bar(hosts_store, scanner):
    ranks = Ranks(hosts_store)
    with ranks.page() as view:
        out = annotate(DOCUMENT, PAGE, view.lookup, None, view.marks)
    text = out.text
    assert isinstance(text, str)
    assert rewrite.remove_edits(text, out.edits) == DOCUMENT
    with Store(hosts_store, readonly=True) as store:
        # a page in the store: its page bar, byte for byte as before estimates
        page = store.queries.lookup(["https://example.com/"])["https://example.com/"]
        low, high = store.rankings.score_range(store.rankings.ranking("pagerank"))
        width = 1 + round((math.log(page["pagerank"]) - math.log(low)) / (math.log(high) - math.log(low)) * 39)
        percentile = 100.0 * (8 - page["place"]) / 8
        steps = math.floor(math.log(page["pagerank"] * 8) / math.log(6.5)) + 1
        shown = bar_of(text, "https://example.com/")
        assert shown.attributes == {
            "data-pagerank": repr(page["pagerank"]),
            "data-w": str(width),
            "role": "img",
            "viewBox": f"0 0 {MAX_BAR_PX + 4} 8",
            "display": "block",
        }
        assert shown.title == (
            f"PageRank {format_score(page['pagerank'])} &#183; {percentile:.2f} percentile &#183; toolbar "
            f"{max(0, min(10, steps))}/10 &#183; {page['inlinks']:,} in-links"
        )
        assert shown.fill == width and shown.rects[1]["fill"] == "#d00"  # filled: a page's own score
        page_info = LinkInfo(page["pagerank"], percentile, max(0, min(10, steps)), page["inlinks"], width)
        assert text[shown.start : shown.end] == bars(page_info)[0]
        for href, level, name, ranking in [
            ("https://example.com/about/team.html", "host", "example.com", "hostrank"),
            ("https://news.bbc.co.uk/world/x?a=1&amp;b=2", "host", "news.bbc.co.uk", "hostrank"),
            ("/wiki/Other", "host", "en.wikipedia.org", "hostrank"),
            ("https://www.bbc.co.uk/news", "site", "bbc.co.uk", "siterank"),
        ]:
            numbers = expected(store, level, name, ranking)
            drawn = bar_of(text, href)
            assert drawn.fill == numbers["width"] and drawn.rects[1]["fill"] == "none"  # outlined: an estimate
            shown = attributes(drawn)
            assert shown == {
                "data-pagerank": "unranked",
                "data-pagerank-level": level,
                "data-pagerank-estimate": repr(numbers["score"]),
                "data-w": str(numbers["width"]),
                "title": tooltip(level, name, numbers),
                "role": "img",
            }, href
    nowhere = bar_of(text, "https://user.github.io/")
    assert attributes(nowhere) == {
        "data-pagerank": "unranked",
        "data-w": "0",
        "title": "Not in the PageRank store",
        "role": "img",
    }
    assert nowhere.fill == 0 and len(nowhere.rects) == 1  # an empty frame
    assert out.links == 6 and out.ranked == 1
    # the same page again: every href answered from the marks, the same bytes
    with ranks.page() as view:
        again = annotate(DOCUMENT, PAGE, lambda urls: pytest.fail(f"looked up again: {urls}"), None, view.marks)
    assert again.text == text


def test_estimates_are_drawn_apart_outlined_not_filled():
    # drawn by the SVG's own attributes in the bar's shadow root: the page's style block holds no rule of the data
    style = markup.STYLE.replace("span[data-pagerank-bar]", "").replace("aside[data-pagerank-panel]", "")
    assert "data-pagerank" not in style and "data-nofollow" not in style and "data-w" not in style
    estimate = markup.Estimate("host", "h.example", 0.25, 50.0, 3, 12, 1, 4)
    page, page_nofollow = (barkit.bars(one)[0] for one in bars(LinkInfo(0.5, 90.0, 5, 3, 12)))
    guess, guess_nofollow = (barkit.bars(one)[0] for one in bars(LinkInfo(None, estimate=estimate)))
    (unranked,) = barkit.bars(bars(LinkInfo(None))[0])
    frame = lambda bar: {key: bar.rects[0].get(key) for key in ("fill", "stroke", "stroke-dasharray")}  # noqa: E731
    # an estimate: a white bar whose fill is outlined, not filled, of its level's width
    assert frame(guess) == {"fill": "#fff", "stroke": "#c00", "stroke-dasharray": None}
    assert (guess.rects[1]["fill"], guess.rects[1]["stroke"], guess.fill) == ("none", "#d00", 12)
    # a page's score: filled on its pale frame; nofollow: dashed, on white, a paler fill
    assert frame(page) == {"fill": "#f3d6d6", "stroke": "#c00", "stroke-dasharray": None}
    assert (page.rects[1]["fill"], page.rects[1].get("stroke"), page.fill) == ("#d00", None, 12)
    assert frame(page_nofollow) == {"fill": "#fff", "stroke": "#c00", "stroke-dasharray": "3 2"}
    assert page_nofollow.rects[1]["fill"] == "#e99"
    # a nofollow estimate stays outlined (the estimate's look wins over nofollow's fill), its frame dashed
    assert frame(guess_nofollow) == {"fill": "#fff", "stroke": "#c00", "stroke-dasharray": "3 2"}
    assert (guess_nofollow.rects[1]["fill"], guess_nofollow.rects[1]["stroke"]) == ("none", "#d00")
    # no rank at any level: a grey, empty frame
    assert frame(unranked) == {"fill": "#eee", "stroke": "#aaa", "stroke-dasharray": None} and len(unranked.rects) == 1


def test_a_tooltip_is_escaped_and_a_nofollow_estimate_says_so():
    estimate = markup.Estimate("host", 'a"<b>&.example', 0.25, 50.0, 3, 12, 1, 4)
    plain, nofollow = bars(LinkInfo(None, estimate=estimate))
    assert '"<b>' not in plain and "a&quot;&lt;b&gt;&amp;.example" in plain
    assert 'data-pagerank-level="host" data-pagerank-estimate="0.25" data-w="12"' in plain
    assert 'data-nofollow="true"' in nofollow and "nofollow: this link passes no PageRank" in nofollow
    # a page in the store but not ranked yet says so, with its host's estimate
    later = bars(LinkInfo(None, later=True, estimate=estimate))[0]
    assert 'data-pagerank="unranked" data-pagerank-level="host"' in later
    assert barkit.bars(later)[0].title.startswith(
        "Not ranked yet &#183; host a&quot;&lt;b&gt;&amp;.example: host rank 0.25 &#183; 50.00 percentile of hosts"
    )
    assert barkit.bars(nofollow)[0].tooltip.endswith(" · nofollow: this link passes no PageRank")
    # a page in the store keeps its page bar whatever an estimate would say
    assert bars(LinkInfo(0.5, 90.0, 5, 3, 20, estimate=estimate)) == bars(LinkInfo(0.5, 90.0, 5, 3, 20))


def test_a_new_host_ranking_version_is_never_served_stale(hosts_store, tmp_path, scanner):
    path = str(tmp_path / "moving.db")
    shutil.copy(hosts_store, path)
    ranks = Ranks(path)
    href = "https://example.com/about/team.html"
    with ranks.page() as view:
        before = attributes(bar_of(annotate(DOCUMENT, PAGE, view.lookup, None, view.marks).text, href))
    with Store(path) as store:
        count = store.hosts.host_count()
        scores = np.full(count, 0.5 / (count - 1))
        scores[store.hosts.host_id("example.com") - 1] = 0.5
        store.rankings.write_ranking(
            "hostrank", {}, 0, [], np.arange(1, count + 1), scores, np.ones(count), level="host"
        )
    with ranks.page() as view:
        after = attributes(bar_of(annotate(DOCUMENT, PAGE, view.lookup, None, view.marks).text, href))
    assert before["data-pagerank-estimate"] != after["data-pagerank-estimate"] == repr(0.5)
    assert after["data-w"] == str(MAX_BAR_PX) and "100.00 percentile" in after["title"]
    # and a new site ranking likewise
    write_site_ranking(path, scores={**SITE_SCORES, "bbc.co.uk": 0.15})
    with ranks.page() as view:
        site = attributes(
            bar_of(annotate(DOCUMENT, PAGE, view.lookup, None, view.marks).text, "https://www.bbc.co.uk/news")
        )
    assert site["data-pagerank-estimate"] == repr(0.15)


def test_a_page_built_since_the_ranking_says_not_ranked_yet_with_its_hosts_rank(hosts_store, tmp_path):
    """A page a later build added, on a ranked host: "not ranked yet" (``later``), and its host's estimate beside
    it; a page of the store that is not known stays without one."""
    path = str(tmp_path / "grown.db")
    shutil.copy(hosts_store, path)
    added = "https://example.com/added-since.html"
    edges = tmp_path / "later.tsv"
    edges.write_text(f"{added} https://example.com/\n")
    run("build", str(edges), "--store", path, "-q")
    elsewhere = "https://example.com/never-built.html"
    found = Ranks(path).lookup([added, elsewhere, PAGE])
    info = found[added]
    assert info.pagerank is None and info.later
    assert info.estimate is not None and (info.estimate.level, info.estimate.name) == ("host", "example.com")
    assert not found[elsewhere].later and found[elsewhere].estimate == info.estimate  # the same host's rank
    assert not found[PAGE].later and found[PAGE].estimate.level == "host"


def test_rankings_chosen_by_the_proxys_options(hosts_store):
    # a site ranking alone: a known host is answered by its site
    ranks = Ranks(hosts_store, levels=LevelChoice(site="siterank"))
    assert ranks.lookup(["https://example.com/x"])["https://example.com/x"].estimate.level == "host"
    with pytest.raises(StoreError, match="pagerank ranks pages, not hosts"):
        Ranks(hosts_store, levels=LevelChoice(host="pagerank"))
    with pytest.raises(StoreError, match="no ranking 'nothing' for sites"):
        Ranks(hosts_store, levels=LevelChoice(site="nothing"))


def test_the_worker_rewrites_with_estimates(hosts_store, scanner):
    done = rewrite_page(hosts_store, "pagerank", 10, DOCUMENT.encode(), "text/html; charset=utf-8", PAGE)
    assert isinstance(done, Rewritten)
    body = barkit.outside_panel(done[0].decode())
    assert body.isascii()
    levels = [bar.attributes.get("data-pagerank-level") for bar in barkit.bars(body) if bar.value == "unranked"]
    assert sorted(level for level in levels if level) == ["host", "host", "host", "site"]
    assert len(levels) == 5  # and the link with no rank at any level


def test_the_panel_of_a_page_the_store_does_not_hold(hosts_store):
    ranks = Ranks(hosts_store, panel_size=2)
    data_ = ranks.panel(PAGE)
    assert [(level.level, level.name) for level in data_.levels] == [
        ("host", "en.wikipedia.org"),
        ("site", "wikipedia.org"),
    ]
    markup = panel(data_)
    assert markup.startswith("<aside data-pagerank-panel>") and barkit.panel_of(markup) == markup
    assert barkit.panel_box(markup) == {
        "id": "pagerank-panel",
        "class": "box",
        "data-pagerank": "unranked",
        "data-pagerank-level": "host",
    }
    with Store(hosts_store, readonly=True) as store:
        numbers = expected(store, "host", "en.wikipedia.org", "hostrank")
        # en.wikipedia.org's in-links come from example.com and de.wikipedia.org
        linking = sorted(
            ["example.com", "de.wikipedia.org"], key=lambda name: expected(store, "host", name, "hostrank")["position"]
        )
    summary = html.unescape(barkit.panel_summary(markup))
    assert summary == f"PageRank: this page is not in the store · its host ranks {format_score(numbers['score'])}"
    host, site = barkit.panel_sections(markup)
    assert (host[0], site[0]) == ("host", "site")
    text = html.unescape(host[1])
    assert (
        f"host en.wikipedia.org: host rank {format_score(numbers['score'])} · {numbers['percentile']:.2f} percentile "
        f"of hosts · toolbar {numbers['toolbar']}/10 · #{numbers['place'] + 1} of 8"
    ) in text
    assert re.findall(r'<a href="http://([^/"]+)/">', host[1]) == linking
    assert 'data-pagerank-level="host" data-pagerank-estimate=' in host[1]
    assert (
        "http://pagerank.proxy/backlinks?url=en.wikipedia.org&host=1&group=host&ranking=pagerank" in text
    )  # the whole-site backlinks view
    # the site wikipedia.org: example.com links to en.wikipedia.org; de and en link to each other, inside it
    assert re.findall(r'<a href="http://([^/"]+)/">', site[1]) == ["example.com"]
    assert "site wikipedia.org: site rank 0.3 · 75.00 percentile of sites · toolbar 1/10 · #2 of 4" in html.unescape(
        site[1]
    )
    # the whole site's backlinks by referring site (wikipedia.org is no host of the store, but a site of it)
    assert "http://pagerank.proxy/backlinks?site=wikipedia.org&group=site&ranking=pagerank" in html.unescape(site[1])
    # a page in the store keeps its own panel
    assert 'data-pagerank-level="page"' in panel(ranks.panel("https://example.com/"))


def test_show_and_the_page_view_say_which_level_answered(hosts_store):
    url = "https://news.bbc.co.uk/world/x"
    result = invoke(
        "show", url, "https://www.bbc.co.uk/", "https://example.com/", "--format", "json", "--store", hosts_store
    )
    rows = {row["url"]: row for row in json.loads(result.stdout)}
    with Store(hosts_store, readonly=True) as store:
        host = expected(store, "host", "news.bbc.co.uk", "hostrank")
        site = expected(store, "site", "bbc.co.uk", "siterank")
    assert rows[url]["level"] == "host" and rows[url]["answered_by"] == "news.bbc.co.uk"
    assert rows[url]["estimate"] == host["score"] and rows[url]["pagerank"] is None
    assert rows[url]["rank"] == host["place"] + 1 and rows[url]["percentile"] == round(host["percentile"], 4)
    assert rows["https://www.bbc.co.uk/"]["level"] == "site"
    assert rows["https://www.bbc.co.uk/"]["estimate"] == site["score"] == 0.2
    assert rows["https://example.com/"]["level"] == "page" and rows["https://example.com/"]["pagerank"] > 0
    assert result.exit_code == 1  # the two pages are still not in the store
    assert "not in the store (answered by their host's or site's rank)" in result.stderr
    status, _, body = respond("GET", "/page", {"url": [url]}, Ranks(hosts_store))
    text = html.unescape(body.decode())
    assert status == 200
    assert "not in the store: answered by its host news.bbc.co.uk" in text
    assert f"host rank {format_score(host['score'])}" in text
    status, _, body = respond("GET", "/page", {"url": ["https://user.github.io/x"]}, Ranks(hosts_store))
    assert status == 404


@pytest.mark.parametrize("inline", [0, 65536], ids=["workers", "loop"])
async def test_the_addon_shows_estimates_with_the_rankings_its_options_name(hosts_store, inline):
    from mitmproxy import exceptions
    from test_addon import make_flow, run_hooks, running_addon

    async with running_addon(
        hosts_store, pagerank_inline_bytes=inline, pagerank_host_ranking="hostrank", pagerank_site_ranking="siterank"
    ) as addon:
        flow = make_flow(PAGE, DOCUMENT.encode())
        await run_hooks(addon, flow)
        text = flow.response.text
        assert flow.metadata["pagerank"].startswith("6 bars (1 ranked)"), flow.metadata["pagerank"]
        page = barkit.outside_panel(text)
        assert [bar.attributes.get("data-pagerank-level") for bar in barkit.bars(page)] == [
            None,
            "host",
            "host",
            "site",
            "host",
            None,
        ]
        assert barkit.panel_box(text)["data-pagerank-level"] == "host"  # its host answered for the page
    with pytest.raises(exceptions.OptionsError, match="pagerank ranks pages, not sites"):
        async with running_addon(hosts_store, pagerank_site_ranking="pagerank"):
            pass


def test_past_keys_most_names_the_name_index_answers_with_the_same_bars(hosts_store, monkeypatch):
    """A level of more names than KEYS_MOST (a Common Crawl domain graph's 135 million sites) is never read
    whole into keys: the name index answers, and the page's bars are byte for byte those the keys give."""
    with Ranks(hosts_store).page() as view:
        with_keys = annotate(DOCUMENT, PAGE, view.lookup, None, view.marks).text
    monkeypatch.setattr(ranks_module, "KEYS_MOST", 0)
    fresh = Ranks(hosts_store)
    with fresh.page() as view:
        assert view.level_keys("host") is None and view.level_keys("site") is None
        without = annotate(DOCUMENT, PAGE, view.lookup, None, view.marks).text
    assert fresh._keys == {}  # nothing read
    assert without == with_keys
