"""The own pages' SVG charts (proxy_addon.pages.charts): well-formed, drawn by attributes alone (no script, no
style, nothing fetched), every number in their text, every label escaped."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from proxy_addon.pages.charts import Bar, bars, changes_over_builds, columns, place_over_versions

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = '<script>alert(1)</script>" onload="alert(2)'


def parsed(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg" and root.get("role") == "img"
    for element in root.iter():
        names = {name.lower() for name in element.attrib}
        assert not any(name.startswith("on") for name in names) and "style" not in names, element.attrib
        assert not any("href" in name for name in names)
        assert element.tag.removeprefix(SVG) in {"svg", "title", "desc", "text", "line", "polyline", "circle", "rect"}
    return root


def texts(root: ET.Element) -> list[str]:
    return [element.text or "" for element in root.iter(f"{SVG}text")]


def test_changes_over_builds_draws_each_builds_count_and_its_new_and_lost_as_bars():
    svg = changes_over_builds("Referring hosts", ["1", "2", "3"], [40, 52, 47], [40, 15, 0], [0, 3, 5], "hosts")
    root = parsed(svg)
    rects = [rect for rect in root.iter(f"{SVG}rect") if rect.find(f"{SVG}title") is not None]
    said = sorted(rect.find(f"{SVG}title").text for rect in rects)
    assert said == sorted(["build 1: 40 new", "build 2: 15 new", "build 2: 3 lost", "build 3: 5 lost"])
    assert {"40", "52", "47", "build 1", "build 2", "build 3"} <= set(texts(root))
    assert len(list(root.iter(f"{SVG}circle"))) == 3
    desc = root.find(f"{SVG}desc").text
    assert (
        desc == "build 1: 40 hosts, 40 new, 0 lost; build 2: 52 hosts, 15 new, 3 lost; build 3: 47 hosts, 0 new, 5 lost"
    )
    # a larger count draws a taller bar: new 40 in build 1 is the tallest, lost 3 shorter than lost 5
    heights = {rect.find(f"{SVG}title").text: float(rect.get("height")) for rect in rects}
    assert (
        heights["build 1: 40 new"]
        > heights["build 2: 15 new"]
        > heights["build 3: 5 lost"]
        > heights["build 2: 3 lost"]
    )


def test_place_over_versions_puts_the_best_place_highest_and_leaves_a_gap_where_unranked():
    svg = place_over_versions("Rank", ["1", "2", "3", "4"], [120, 3, None, 1], [500, 510, 520, 530])
    root = parsed(svg)
    dots = {c.find(f"{SVG}title").text: float(c.get("cy")) for c in root.iter(f"{SVG}circle")}
    assert dots["version 4: #1 of 530"] < dots["version 2: #3 of 510"] < dots["version 1: #120 of 500"]
    assert len(dots) == 3  # version 3 ranked it not
    assert "version 3: not ranked" in root.find(f"{SVG}desc").text
    assert len(list(root.iter(f"{SVG}polyline"))) == 1  # versions 1-2; version 4 stands alone after the gap


@pytest.mark.parametrize("draw", [bars, columns])
def test_bar_labels_from_the_crawl_are_text_never_markup(draw):
    rows = [Bar(HOSTILE, 7), Bar("docs", 3), Bar("", 1)]
    svg = draw("Anchor texts", rows, "links")
    assert "<script" not in svg and 'onload="' not in svg
    root = parsed(svg)
    assert any(text.startswith("<script>") for text in texts(root)) or any(
        HOSTILE in (t.text or "") for t in root.iter(f"{SVG}title")
    )
    assert {"7", "3", "1"} <= set(texts(root))


def test_columns_draw_a_bar_a_score_with_its_count_and_none_for_an_empty_one():
    rows = [Bar(str(score), count) for score, count in enumerate([0, 4, 9, 2, 0, 1, 0, 0, 0, 0, 0])]
    root = parsed(columns("Referring pages by toolbar score", rows, "pages"))
    drawn = {r.find(f"{SVG}title").text: float(r.get("height")) for r in root.iter(f"{SVG}rect")}
    assert set(drawn) == {"1: 4 pages", "2: 9 pages", "3: 2 pages", "5: 1 page"}
    assert drawn["2: 9 pages"] > drawn["1: 4 pages"] > drawn["3: 2 pages"] > drawn["5: 1 page"]
