"""/history: a target over time in pictures (inline SVG) with their numbers as CSV, on real recrawls.

Three wget crawls of an edited copy of python3.11-doc, each built and ranked (``historykit``): the page's
pictures must carry the numbers ``rankstore history`` prints, its CSV downloads must be the CLI's rows and
an independent count, and in headless Chromium every picture must be drawn, inside the page, in light and
dark, with no CSP violation.
"""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from historykit import TARGET, history_json, recrawls
from test_proxy_e2e import Proxy, browser, severe

from proxy_addon.pages import CSP, respond
from proxy_addon.ranks import Ranks
from rankstore import display
from rankstore.store import Store, analysis

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def crawls(tmp_path_factory):
    found = recrawls(tmp_path_factory)
    ranks = Ranks(found.three)
    yield found, ranks
    ranks.close()


def get(ranks: Ranks, **params: str) -> tuple[int, dict, str]:
    status, headers, body = respond("GET", "/history", {key: [value] for key, value in params.items()}, ranks)
    return status, headers, body.decode()


def charts(body: str) -> list[ET.Element]:
    return [ET.fromstring(found) for found in re.findall(r"<svg class=\"chart\".*?</svg>", body, re.S)]


def test_the_pictures_carry_the_histories_numbers_and_the_csv_is_the_clis(crawls):
    found, ranks = crawls
    target = found.url + TARGET
    status, headers, body = get(ranks, url=target)
    assert status == 200 and headers["Content-Security-Policy"] == CSP and "<script" not in body.lower()
    cli = history_json(found.three, target)
    drawn = charts(body)
    assert len(drawn) == 4  # referring hosts by build, place by version, anchor texts, linking pages by score
    builds = {row["build"]: row for row in cli}
    expected = "; ".join(
        f"build {b}: {row['referring_hosts']:,} referring hosts, {row['new_hosts']:,} new, {row['lost_hosts']:,} lost"
        for b, row in sorted(builds.items())
    )
    assert drawn[0].find(f"{SVG}desc").text == expected
    places = [f"version {row['version']}: #{row['place']:,}" for row in cli if row.get("place")]
    assert places and all(place in drawn[1].find(f"{SVG}desc").text for place in places)
    status, headers, text = get(ranks, url=target, format="csv")
    assert status == 200 and headers["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [int(row["build"]) for row in rows] == [row["build"] for row in cli]
    assert [int(row["backlinks"]) for row in rows] == [row["backlinks"] for row in cli]


def test_anchor_texts_and_the_linking_pages_by_toolbar_score_are_counted_independently(crawls):
    found, ranks = crawls
    target = found.url + TARGET
    with Store(found.three, readonly=True) as store:
        anchors = analysis.anchors(store, target, "pagerank", 10_000)
        arrays = store.rankings.ranking_arrays(store.rankings.ranking_head()[0])
        page = store.pages.page_id(target)
        sources = {
            int(src) for (src,) in store.db.execute("SELECT src FROM links WHERE dst = ? AND src != ?", (page, page))
        }
        scores = arrays.scores[np.array(sorted(sources)) - 1]
        counts = np.bincount(display.toolbar(scores, arrays.pages), minlength=11)
    _, _, text = get(ranks, url=target, what="anchors", format="csv")
    assert [(row["anchor"], int(row["links"])) for row in csv.DictReader(io.StringIO(text))] == [
        (row["anchor"], row["links"]) for row in anchors
    ]
    _, _, text = get(ranks, url=target, what="profile", format="csv")
    profile = [int(row["pages"]) for row in csv.DictReader(io.StringIO(text))]
    assert profile == counts.tolist() and sum(profile) == len(sources) > 0
    _, _, body = get(ranks, url=target)
    columns = charts(body)[3]
    drawn = {r.find(f"{SVG}title").text for r in columns.iter(f"{SVG}rect")}
    assert drawn == {f"{score}: {n} page{'s' if n != 1 else ''}" for score, n in enumerate(profile) if n}


def test_a_host_and_a_site_and_what_is_refused(crawls):
    found, ranks = crawls
    host = found.url.split("/")[2]
    status, _, body = get(ranks, url=host, host="1")
    # its referring hosts by build; no host ranking, no anchor texts for a whole host, no page of another host
    assert status == 200 and len(charts(body)) == 1
    assert "No version of hostrank ranks it" in body and "links to it now" in body
    status, _, body = get(ranks, site=host)  # an IP address's host is its own site, port and all
    assert status == 200 and f"Referring sites of {host}, by build" in body and len(charts(body)) == 1
    assert get(ranks, url="http://nowhere.example/")[0] == 404
    assert get(ranks, url=found.url + TARGET, site="example.com")[0] == 400
    assert get(ranks, url=found.url + TARGET, what="nothing")[0] == 400
    assert get(ranks, url=host, host="1", what="anchors", format="csv")[0] == 400


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_pictures_in_headless_chromium(crawls, scheme, tmp_path):
    found, ranks = crawls
    running = Proxy(found.three)
    driver = browser(running.port)
    try:
        driver.execute_cdp_cmd(
            "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]}
        )
        driver.get_log("browser")
        driver.get(f"http://pagerank.proxy/history?url={found.url + TARGET}")
        boxes = driver.execute_script(
            "const page = document.body.getBoundingClientRect();"
            "return [...document.querySelectorAll('svg.chart')].map(s => {const r = s.getBoundingClientRect();"
            "const text = s.querySelector('text'); return [r.left >= page.left - 1, r.right <= page.right + 1,"
            "r.width, r.height, getComputedStyle(text).fill, getComputedStyle(document.body).backgroundColor,"
            "s.querySelectorAll('rect, circle').length]})"
        )
        assert len(boxes) == 4
        for inside_left, inside_right, width, height, fill, background, marks in boxes:
            assert inside_left and inside_right and width > 300 and height > 100 and marks > 0
            assert fill != background  # the text takes the page's colour, whatever the scheme
        if scheme == "dark":
            assert boxes[0][5] == "rgb(23, 25, 29)" and boxes[0][4] == "rgb(221, 221, 221)"
        driver.save_screenshot(str(tmp_path / f"history-{scheme}.png"))
        assert severe(driver) == []  # no CSP violation, no console error
    finally:
        driver.quit()
        output = running.stop()
    assert "Traceback" not in output
