"""The proxy's analyst pages (/backlinks views, /compare, /builds) and the panel's "new" marks.

Each page must show the rows the library computes, the rows the CLI prints:
on two crawls of an edited python docs site (``test_history``) for new and
lost links and builds, on three sites on three ports (``test_hosts``) for
referring hosts and link intersect.  Hostile titles, URLs, hosts and anchors
must come out as text; oversize parameters get our 400 page.  One test drives
headless Chromium through a real pagerank-proxy.
"""

from __future__ import annotations

import html
import re

import pytest
from barkit import BAR
from click.testing import CliRunner
from test_history import GAINS, LOSES, TARGET, two_crawls  # noqa: F401  (a module fixture, used by name)
from test_hosts import sites  # noqa: F401  (a module fixture, used by name)
from test_proxy_e2e import Proxy, browser, severe

from proxy_addon import pages
from proxy_addon.markup import panel
from proxy_addon.pages import CSP, MAX_PARAM, respond
from proxy_addon.pages.params import MAX_NOT, MAX_SINCE, MAX_TARGETS
from proxy_addon.ranks import Ranks
from rankstore.cli import cli
from rankstore.store import PageData, Store, analysis


def get(ranks: Ranks, path: str, **params) -> tuple[int, str]:
    query = {key: value if isinstance(value, list) else [value] for key, value in params.items()}
    status, headers, body = respond("GET", path, query, ranks)
    if headers["Content-Type"].startswith("text/html"):
        assert headers["Content-Security-Policy"] == CSP
        assert "<script" not in body.decode().lower()
    return status, body.decode()


def urls(body: str) -> list[str]:
    """The linking pages of a page's table rows, in order."""
    return [html.unescape(found) for found in re.findall(r'<tr [^>]*data-url="([^"]*)"', body)]


def hosts(body: str) -> list[str]:
    return [html.unescape(found) for found in re.findall(r'<tr [^>]*data-host="([^"]*)"', body)]


def cli_csv(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def history(two_crawls):  # noqa: F811
    store, url = two_crawls
    ranks = Ranks(store)
    yield ranks, url, Store(store, readonly=True)
    ranks.close()


@pytest.fixture(scope="module")
def three(sites):  # noqa: F811
    store, site_urls, links = sites
    ranks = Ranks(store)
    yield ranks, site_urls, Store(store, readonly=True)
    ranks.close()


# ------------------------------------------------------------------ the library's rows, rendered


def test_backlinks_show_the_reports_rows_and_shares(history):
    ranks, url, store = history
    target = url + TARGET
    for sort in ("pagerank", "contribution"):
        status, body = get(ranks, "/backlinks", url=target, sort=sort)
        assert status == 200
        report = analysis.backlink_report(store, target, sort=sort, limit=50)
        assert urls(body) == [row["url"] for row in report.rows + report.nofollow_rows]
        shown = [float(v) for v in re.findall(r'data-contribution="([^"]+)"', body)]
        assert shown == [row["contribution"] for row in report.rows]
        if sort == "contribution":
            assert shown == sorted(shown, reverse=True)
        assert "random jump" in body and "pages without out-links" in body
        assert re.search(r"<td>total</td><td class=\"n\">100\.00%</td>", body)  # the shares add up to 1
    second = get(ranks, "/backlinks", url=target, page="2")[1]
    assert urls(second)[:5] == [row["url"] for row in analysis.backlink_report(store, target, limit=5, offset=50).rows]


def test_since_and_lost_views_equal_the_librarys_rows(history):
    ranks, url, store = history
    target = url + TARGET
    status, body = get(ranks, "/backlinks", url=target, since="1")
    assert status == 200
    assert urls(body) == [row["url"] for row in analysis.backlink_report(store, target, since=1).rows] == [url + GAINS]
    assert body.count('data-new="true"') == 1 and "<mark class=new>new</mark>" in body
    assert urls(get(ranks, "/backlinks", url=target, since="2")[1]) == []
    status, body = get(ranks, "/backlinks", url=target, lost="1")
    assert status == 200
    assert urls(body) == [row["url"] for row in analysis.lost_backlinks(store, target)] == [url + LOSES]
    assert urls(get(ranks, "/backlinks", url=target, lost="1", since="2")[1]) == []
    # a date reads as the CLI reads it: the builds started before that day
    assert urls(get(ranks, "/backlinks", url=target, since="2000-01-01")[1])[:3] == [
        row["url"]
        for row in analysis.backlink_report(
            store, target, since=analysis.since_build(store, "2000-01-01"), limit=3
        ).rows
    ]


@pytest.mark.parametrize("since", [None, 1])
def test_referring_hosts_contributions_are_their_pages_whichever_the_order(history, since):
    """A linking host's contribution is the sum of its linking pages' (new since a build too), whether the hosts
    are sorted by it (every host's summed) or by rank (the hosts shown alone)."""
    from rankstore.urls import host_of

    _, url, store = history
    target = url + TARGET
    by_rank = analysis.referring_hosts(store, target, since=since, limit=1000)
    by_contribution = analysis.referring_hosts(store, target, since=since, sort="contribution", limit=1000)
    assert by_rank and {row["host"]: row["contribution"] for row in by_rank} == {
        row["host"]: row["contribution"] for row in by_contribution
    }
    pages = analysis.backlink_report(store, target, since=since, limit=1000).rows
    summed: dict[str, float] = {}
    for row in pages:
        summed[host_of(row["url"])] = summed.get(host_of(row["url"]), 0.0) + row["contribution"]
    assert {row["host"]: row["contribution"] for row in by_rank} == pytest.approx(summed, rel=1e-12)
    assert [row["host"] for row in analysis.referring_hosts(store, target, since=since, limit=2, offset=1)] == [
        row["host"] for row in by_rank[1:3]
    ]


def test_views_link_to_each_other_as_shareable_urls(history):
    ranks, url, store = history
    target = url + TARGET
    body = get(ranks, "/backlinks", url=target, since="1")[1]
    links = {html.unescape(href) for href in re.findall(r'href="(http://pagerank\.proxy/[^"]+)"', body)}
    quoted = target.replace(":", "%3A").replace("/", "%2F")
    for expected in (
        f"http://pagerank.proxy/backlinks?url={quoted}&sort=contribution&since=1",
        f"http://pagerank.proxy/backlinks?url={quoted}&since=1&group=host",
        f"http://pagerank.proxy/backlinks?url={quoted}&since=1&lost=1",
        f"http://pagerank.proxy/backlinks?url={quoted}",
        f"http://pagerank.proxy/backlinks?url={quoted}&since=1&format=csv",
        f"http://pagerank.proxy/compare?target={quoted}",
    ):
        assert expected in links, expected
        path, _, query = expected[len("http://pagerank.proxy") :].partition("?")
        params: dict[str, list[str]] = {}
        for pair in query.split("&"):
            key, _, value = pair.partition("=")
            params.setdefault(key, []).append(value.replace("%3A", ":").replace("%2F", "/"))
        assert respond("GET", path, params, ranks)[0] == 200, expected


@pytest.mark.parametrize("fmt", ["csv", "json"])
@pytest.mark.parametrize(
    "params, args",
    [
        ({}, []),
        ({"sort": "contribution"}, ["--sort", "contribution"]),
        ({"since": "1"}, ["--since", "1"]),
        ({"lost": "1"}, ["--lost"]),
        ({"group": "host"}, ["--group-by", "host"]),
    ],
)
def test_downloads_are_the_clis_csv_and_json(history, params, args, fmt):
    ranks, url, store = history
    target = url + TARGET
    status, headers, body = respond(
        "GET", "/backlinks", {"url": [target], "format": [fmt], **{k: [v] for k, v in params.items()}}, ranks
    )
    assert status == 200 and headers["Content-Type"].startswith(f"{'text/csv' if fmt == 'csv' else 'application/json'}")
    expected = cli_csv("backlinks", target, *args, "-n", "20000", "--format", fmt, "--store", ranks.store_path)
    assert body.decode() == expected


def test_builds_page_and_its_links(history):
    ranks, url, store = history
    target = url + TARGET
    status, body = get(ranks, "/builds", url=target)
    assert status == 200
    rows = analysis.build_history(store)
    shown = re.findall(r'<tr data-build="(\d+)">(.*?)</tr>', body)
    assert [int(build) for build, _ in shown] == [row["build"] for row in rows] == [1, 2]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", shown[1][1])
    assert cells[6:8] == [f"{rows[1]['new_links']:,}", f"{rows[1]['lost_links']:,}"] == ["2", "1"]
    assert "new since build 1" in shown[1][1] and "since=1" in shown[1][1] and "lost=1" in shown[1][1]
    for fmt in ("csv", "json"):
        assert respond("GET", "/builds", {"format": [fmt]}, ranks)[2].decode() == cli_csv(
            "builds", "--format", fmt, "--store", ranks.store_path
        )


def test_referring_hosts_and_compare_equal_the_librarys_rows(three):
    ranks, site_urls, store = three
    host_a = site_urls["a"].split("/")[2]
    status, body = get(ranks, "/backlinks", url=host_a, host="1", group="host")
    assert status == 200
    rows = analysis.referring_hosts(store, None, host_a, limit=50)
    assert rows and hosts(body) == [row["host"] for row in rows]
    assert "#" in body and "its backlinks" in body
    status, body = get(ranks, "/backlinks", url=host_a, host="1")  # the whole site as the target, with host rank
    assert status == 200 and "<th>Host rank</th>" in body
    report = analysis.backlink_report(store, None, host=host_a)
    assert urls(body) == [row["url"] for row in report.rows + report.nofollow_rows]
    assert "internal links and pages without out-links" in body

    one, two, mine = site_urls["a"] + "p1.html", site_urls["b"] + "p2.html", site_urls["c"] + "p3.html"
    status, body = get(ranks, "/compare", target=[one, two, ""], **{"not": [mine, ""]})
    assert status == 200
    expected = analysis.intersect(store, [(one, None), (two, None)], [(mine, None)])
    assert urls(body) == [row["url"] for row in expected]
    assert f'value="{html.escape(one)}"' in body  # the form keeps what was asked
    host_b, host_c = site_urls["b"].split("/")[2], site_urls["c"].split("/")[2]
    status, body = get(ranks, "/compare", target=[host_a, host_b], host="1", group="host", **{"not": host_c})
    assert status == 200
    expected = analysis.intersect(store, [(None, host_a), (None, host_b)], [(None, host_c)], by_host=True)
    assert hosts(body) == [row["host"] for row in expected]
    for fmt in ("csv", "json"):
        status, headers, csv_body = respond(
            "GET", "/compare", {"target": [one, two], "not": [mine], "format": [fmt]}, ranks
        )
        assert csv_body.decode() == cli_csv(
            "intersect", one, two, "--not", mine, "--format", fmt, "-n", "20000", "--store", ranks.store_path
        )
    hosts_json = respond(
        "GET", "/compare", {"target": [host_a, host_b], "host": ["1"], "group": ["host"], "format": ["json"]}, ranks
    )
    assert hosts_json[2].decode() == cli_csv(
        "intersect", host_a, host_b, "--host", "--group-by", "host", "--format", "json", "--store", ranks.store_path
    )


# ------------------------------------------------------------------ the panel


def test_panel_marks_the_backlinks_new_since_the_previous_build(history):
    ranks, url, store = history
    wide = Ranks(ranks.store_path, panel_size=1000)
    try:
        data = wide.panel(url + TARGET)
    finally:
        wide.close()
    assert data.since == 1 and data.new_backlinks == 1
    assert [link.url for link in data.backlinks if link.new] == [url + GAINS]
    assert len(data.backlinks) > 50 and sum(link.new for link in data.backlinks) == 1
    shown = panel(data)
    assert shown.count('data-new="true"') == 1 and "<mark>new</mark>" in shown
    assert "1 new since build 1" in shown and "since=1" in shown
    assert data.host_position is None  # no host ranking in this store: nothing shown
    assert ranks.panel(url + "library/zipapp.html").new_backlinks == 1  # the moved link


def test_panel_shows_host_rank_beside_page_rank(three):
    ranks, site_urls, store = three
    data = ranks.panel(site_urls["a"] + "p1.html")
    host = site_urls["a"].split("/")[2]
    assert (data.hostrank, data.host_position) == analysis.host_ranks(store, [host])[host]
    assert f"host #{data.host_position}" in panel(data)
    assert data.since is None and not any(link.new for link in data.backlinks)  # one build: nothing is new


def test_panel_follows_a_new_version_of_the_host_ranking(sites, tmp_path):  # noqa: F811
    import shutil

    path = str(tmp_path / "s.db")
    shutil.copy(sites[0], path)
    page = sites[1]["b"] + "p2.html"
    host = page.split("/")[2]
    ranks = Ranks(path)
    try:
        before = ranks.panel(page)
        cli_csv("rank", "--level", "host", "--damping", "0.5", "--store", path, "-q")  # the page ranking unchanged
        after = ranks.panel(page)
        with Store(path, readonly=True) as store:
            assert (after.hostrank, after.host_position) == analysis.host_ranks(store, [host])[host]
        assert after.hostrank != before.hostrank and after.info == before.info
    finally:
        ranks.close()


# ------------------------------------------------------------------ hostile input, bounds, deadline

XSS_TITLE = "<script>alert(1)</script>"
XSS_URL = 'http://evil.example/"><img src=x onerror=alert(2)>'
XSS_HOST_URL = "http://ev'il\"><svg onload=alert(3)>.example/x"
XSS_ANCHOR = "</td><script>alert(4)</script>"
VICTIM = "http://victim.example/"
OTHER = "http://victim.example/two"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("hostile-pages") / "h.db")
    sources = [XSS_URL, XSS_HOST_URL, "http://fine.example/'onmouseover='alert(5)"]
    with Store(path) as store:
        build = store.begin_build(["hostile"])
        pages_written = [
            PageData(VICTIM, title=XSS_TITLE, links=[(OTHER, False, 1.0, XSS_ANCHOR)]),
            PageData(OTHER, title=XSS_TITLE + "2", links=[(VICTIM, False, 1.0, XSS_ANCHOR)]),
        ] + [
            PageData(source, title=XSS_TITLE, links=[(VICTIM, False, 1.0, XSS_ANCHOR), (OTHER, True, 1.0, XSS_ANCHOR)])
            for source in sources
        ]
        store.pages.write_pages(pages_written, build)
        store.finish_build(build, len(pages_written), 8, {})
        build = store.begin_build(["hostile again"])  # one link gone, one new
        store.pages.write_pages(
            [
                PageData(XSS_URL, title=XSS_TITLE, links=[(OTHER, False, 1.0, XSS_ANCHOR)]),
                PageData("http://new.example/<b>", title=XSS_TITLE, links=[(VICTIM, False, 1.0, XSS_ANCHOR)]),
            ],
            build,
        )
        store.finish_build(build, 2, 2, {})
    for args in (["rank"], ["rank", "--level", "host"]):
        assert CliRunner().invoke(cli, [*args, "--store", path, "-q"]).exit_code == 0
    ranks = Ranks(path)
    yield ranks
    ranks.close()


_BAR_ATTRIBUTES = re.compile(r'(?:\s*[a-zA-Z-]+="[^"<>]*")*\s*')
_BAR_DRAWING = re.compile(r"<title>[^<>]*</title>|<rect [^<>]*/>")


def without_our_bars(markup: str) -> str:
    """``markup`` without the bars we draw (an SVG in a closed shadow root, issue 46), each first checked to be
    only ours: attributes with no markup in their values, an escaped title and its rects, white space to pad."""
    for found in BAR.finditer(markup):
        assert _BAR_ATTRIBUTES.fullmatch(found.group("attrs")), found.group(0)
        assert _BAR_DRAWING.sub("", found.group("inner")).strip() == "", found.group(0)
    return BAR.sub("", markup)


@pytest.mark.parametrize(
    "path, params",
    [
        ("/backlinks", {"url": VICTIM}),
        ("/backlinks", {"url": VICTIM, "sort": "contribution"}),
        ("/backlinks", {"url": VICTIM, "since": "1"}),
        ("/backlinks", {"url": VICTIM, "lost": "1"}),
        ("/backlinks", {"url": VICTIM, "group": "host"}),
        ("/backlinks", {"url": "victim.example", "host": "1"}),
        ("/backlinks", {"url": OTHER}),
        ("/compare", {"target": [VICTIM, OTHER]}),
        ("/compare", {"target": ["victim.example"], "host": "1", "group": "host"}),
        ("/compare", {"target": [VICTIM, XSS_URL], "not": [XSS_HOST_URL]}),
        ("/builds", {"url": VICTIM}),
        ("/page", {"url": VICTIM}),
    ],
)
def test_hostile_titles_urls_hosts_and_anchors_are_text(hostile, path, params):
    status, body = get(hostile, path, **params)
    assert status in (200, 400, 404), body[-400:]
    lowered = without_our_bars(body).lower()  # our bars' SVGs apart, no markup of the store's
    for markup in ("<script", "<img", "<svg", "example/<b>"):
        assert markup not in lowered, markup
    assert "</td><script" not in lowered and "'onmouseover='" not in lowered
    if status == 200 and path == "/backlinks" and "group" not in params and "lost" not in params:
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body  # shown, as text
    for attribute in re.findall(r'(?:href|value|data-url|data-host)="([^"]*)"', body):
        assert "<" not in attribute and '"' not in attribute


def test_hostile_store_rows_are_all_there(hostile):
    status, body = get(hostile, "/backlinks", url=VICTIM)
    assert status == 200 and XSS_HOST_URL in urls(body) and XSS_URL not in urls(body)  # its link was lost
    status, body = get(hostile, "/backlinks", url=VICTIM, lost="1")
    assert urls(body) == [XSS_URL]
    status, body = get(hostile, "/backlinks", url=VICTIM, group="host")
    assert "ev'il\"><svg onload=alert(3)>.example" in hosts(body)
    status, body = get(hostile, "/backlinks", url=OTHER)  # nofollow links apart, passing nothing
    nofollow = body.split("<h2>Nofollow links</h2>")[1]
    assert urls(nofollow) and set(re.findall(r'data-contribution="([^"]*)"', nofollow)) == {"0.0"}
    data = hostile.panel(VICTIM)
    shown = without_our_bars(panel(data))
    assert "<script" not in shown and "<svg" not in shown and "<b>" not in shown
    assert [link.url for link in data.backlinks if link.new] == ["http://new.example/<b>"]


@pytest.mark.parametrize(
    "path, params, said",
    [
        ("/compare", {"target": [f"http://a.example/{i}" for i in range(MAX_TARGETS + 1)]}, f"At most {MAX_TARGETS}"),
        ("/compare", {"target": [VICTIM], "not": [f"http://a.example/{i}" for i in range(MAX_NOT + 1)]}, "At most"),
        ("/compare", {"target": ["http://a.example/" + "x" * MAX_PARAM]}, f"at most {MAX_PARAM:,} characters"),
        ("/compare", {"target": ["not a url"]}, "http(s) URL"),
        ("/compare", {"target": [VICTIM], "group": "nope"}, "group must be one of"),
        ("/backlinks", {"url": VICTIM, "since": "1" * (MAX_SINCE + 1)}, f"at most {MAX_SINCE}"),
        ("/backlinks", {"url": VICTIM, "since": "9"}, "since must be a build number"),
        ("/backlinks", {"url": VICTIM, "since": "<script>"}, "since must be a build number"),
        ("/backlinks", {"url": VICTIM, "sort": "random()"}, "sort must be one of"),
        ("/backlinks", {"url": VICTIM, "lost": "1", "group": "host"}, "not with host=1 or group=host"),
        ("/backlinks", {"url": "victim.example", "host": "1", "lost": "1"}, "not with host=1 or group=host"),
        ("/backlinks", {"url": VICTIM, "format": "xml"}, "format must be one of"),
        ("/builds", {"format": "<x>"}, "format must be one of"),
        ("/backlinks", {"url": VICTIM, "page": "0"}, "page must be a whole number"),
        ("/backlinks", {"url": VICTIM, "host": "yes"}, "host must be one of"),
        ("/builds", {"url": "nothing"}, "http(s) URL"),
    ],
)
def test_oversize_and_bad_parameters_get_our_400(hostile, path, params, said):
    status, body = get(hostile, path, **params)
    assert status == 400
    assert said in re.search(r"</h1><p>(.*?)</p>", body).group(1)
    assert "Traceback" not in body and "<script" not in body


def test_unknown_targets_get_our_404(hostile):
    for path, params in [
        ("/backlinks", {"url": "http://nowhere.example/"}),
        ("/backlinks", {"url": "nowhere.example", "host": "1"}),
        ("/compare", {"target": [VICTIM, "http://nowhere.example/<x>"]}),
        ("/builds", {"url": "http://nowhere.example/"}),
    ]:
        status, body = get(hostile, path, **params)
        assert status == 404 and "not in the store" in body.lower(), (path, body[-300:])
        assert "<x>" not in body


def test_analyst_pages_stop_at_the_deadline(hostile, monkeypatch):
    monkeypatch.setattr(pages, "_PROGRESS_STEPS", 1)
    for path, params in [
        ("/backlinks", {"url": [VICTIM], "since": ["1"]}),
        ("/backlinks", {"url": [VICTIM], "group": ["host"]}),
        ("/compare", {"target": [VICTIM, OTHER]}),
        ("/builds", {}),
    ]:
        status, headers, body = respond("GET", path, params, hostile, deadline=0.0)
        assert status == 503 and headers["Content-Security-Policy"] == CSP, (path, body)
        assert not hostile.store().db.in_transaction
    monkeypatch.undo()
    assert get(hostile, "/builds")[0] == 200


# ------------------------------------------------------------------ in a real browser, through the proxy


def test_analyst_pages_in_headless_chromium(history):
    ranks, url, store = history
    target = url + TARGET
    running = Proxy(ranks.store_path)
    driver = browser(running.port)
    try:
        driver.get_log("browser")
        driver.get(f"http://pagerank.proxy/backlinks?url={target}&sort=contribution")
        rows = driver.execute_script(
            "return [...document.querySelectorAll('tr[data-contribution]')].map(r => "
            "[parseFloat(r.dataset.contribution), r.innerText])"
        )
        best = analysis.backlink_report(store, target, sort="contribution", limit=50).rows
        assert len(rows) == len(best) == 50
        assert [value for value, _ in rows] == [row["contribution"] for row in best]
        assert best[0]["url"] in rows[0][1] and f"{best[0]['share']:.2%}" in rows[0][1]
        assert "random jump" in driver.execute_script("return document.body.innerText")
        # our hashed style applied: the policy let it through
        assert driver.execute_script("return getComputedStyle(document.querySelector('h1')).color") == "rgb(153, 0, 0)"

        other = url + "library/stdtypes.html"
        driver.get(f"http://pagerank.proxy/compare?target={target}&target={other}")
        text = driver.execute_script("return document.querySelector('table').innerText")
        expected = analysis.intersect(store, [(target, None), (other, None)], limit=3)
        assert all(row["url"] in text for row in expected)

        driver.get(f"http://pagerank.proxy/builds?url={target}")
        text = driver.execute_script("return document.querySelector('table').innerText")
        assert "new since build 1" in text and "lost since build 1" in text
        driver.find_element("link text", "lost since build 1").click()
        assert driver.execute_script(
            "return [...document.querySelectorAll('tr[data-url]')].map(r => r.dataset.url)"
        ) == [url + LOSES]
        assert severe(driver) == []  # no CSP violation, no console error
    finally:
        driver.quit()
        output = running.stop()
    assert "Traceback" not in output
