"""`rankstore build --link-weights position`: each link weighed by where it stands on its page.

The weights of tests/data/linkweights/page/index.html are worked out by hand below, from the rule in
:class:`rankstore.extract.Placement` (V x E x R x P per occurrence, summed); the three pages of
tests/data/linkweights/seed/ are the seed notes' (000) worked example of visibility and position, whose
PageRank at d = 0.5 the notes give exactly: 819/693, 721/693, 539/693 (algorithm 1, ranks summing to 3).
"""

from __future__ import annotations

import csv
import io
import json
import shutil

import pytest

from rankstore.choices import LINK_WEIGHTS
from rankstore.extract import LinkWeights, Placement, extract, position
from rankstore.store import Store

from conftest import data, invoke, run

SITE = "http://weights.example/"
SEED = "http://seed.example/"

# The hand page's visible link occurrences, in document order (n = 17, so the first half is k = 0..8):
#   k  target        where                      E  R  P  weight
#   0  home          page header                1  1  3  3
#   1  docs          nav                        1  1  3  3
#   2  about         nav                        1  1  3  3
#   3  author        the article's header       1  3  3  9
#   4  guide         main, in <strong>          2  3  3  18
#   5  partner       main, rel=nofollow         1  3  3  (9, casts no vote)
#   6  docs          main                       1  3  3  9
#   7  shown-again   visibility undone inline   1  3  3  9
#   8  guide         main                       1  3  3  9
#   9  sponsor       main, rel=nofollow         1  3  1  3
#  10  late          main, in <em>              2  3  1  6
#  11  related       aside                      1  1  1  1
#  12  docs          page footer                1  1  1  1
#  13  legal         page footer                1  1  1  1
#  14  hidden-attr   page footer                1  1  1  1
#  15  partner       page footer                1  1  1  1
#  16  mailto:       page footer (no web link)  1  1  1  -
# Hidden, so neither counted nor stored: hidden-attr in the header (hidden attribute), display-none
# (display:none !important), aria (aria-hidden="true"), invisible (visibility:hidden), noscript, template.
# Repeated targets add up: docs 3 + 9 + 1, guide 18 + 9; partner follows through its footer occurrence
# alone (1); sponsor casts no vote and keeps the weight of all its occurrences (3).
BY_HAND = {
    "home.html": (False, 3.0),
    "docs.html": (False, 13.0),
    "about.html": (False, 3.0),
    "author.html": (False, 9.0),
    "guide.html": (False, 27.0),
    "partner.html": (False, 1.0),
    "shown-again.html": (False, 9.0),
    "sponsor.html": (True, 3.0),
    "late.html": (False, 6.0),
    "related.html": (False, 1.0),
    "legal.html": (False, 1.0),
    "hidden-attr.html": (False, 1.0),
}
HIDDEN = ("display-none.html", "aria.html", "invisible.html", "noscript.html")


def _links(path: str) -> dict[str, tuple[str, bool, float]]:
    with Store(path, readonly=True) as store:
        return {dst: (src, bool(nofollow), weight) for src, dst, nofollow, weight, _ in store.pages.dump()[1]}


@pytest.fixture(scope="module")
def hand_stores(tmp_path_factory) -> dict[str, str]:
    """The hand page built both ways (the position build through the parser pool: -j 2)."""
    folder = tmp_path_factory.mktemp("linkweights")
    stores = {}
    for weights, jobs in (("position", "2"), ("uniform", "1")):
        stores[weights] = str(folder / f"{weights}.db")
        run(
            "build", data("linkweights/page"), "--base-url", SITE, "--link-weights", weights, "-j", jobs,
            "--store", stores[weights], "-q",
        )  # fmt: skip
    return stores


@pytest.fixture(scope="module")
def seed_stores(tmp_path_factory) -> dict[str, str]:
    """The seed's three pages built both ways and ranked at d = 0.5."""
    folder = tmp_path_factory.mktemp("seedweights")
    stores = {}
    for weights in LINK_WEIGHTS:
        stores[weights] = str(folder / f"{weights}.db")
        run(
            "build",
            data("linkweights/seed"),
            "--base-url",
            SEED,
            "--link-weights",
            weights,
            "--store",
            stores[weights],
            "-q",
        )
        run("rank", "--damping", "0.5", "--store", stores[weights], "-q")
    return stores


def test_position_weights_of_the_page_worked_by_hand(hand_stores):
    links = _links(hand_stores["position"])
    assert {src for src, _, _ in links.values()} == {SITE + "index.html"}
    assert {dst: (nofollow, weight) for dst, (_, nofollow, weight) in links.items()} == {
        SITE + target: expected for target, expected in BY_HAND.items()
    }


def test_uniform_weights_stay_as_they_were(hand_stores):
    """The default: every link weighs 1, hidden or not (a <template>'s is in no document)."""
    links = _links(hand_stores["uniform"])
    assert {weight for _, _, weight in links.values()} == {1.0}
    assert set(links) == {SITE + target for target in (*BY_HAND, *HIDDEN)}


def test_the_seeds_worked_example_ranks_as_the_seed_says(seed_stores):
    """Seed 000: L(A,B) = L(B,A) = L(C,A) = 0.75, the rest 0.25; the stored weights are the seed's X x Y
    times R = 3 (all three pages are main content), and PageRank divides by each page's sum."""
    with Store(seed_stores["position"], readonly=True) as store:
        weights = {(src, dst): weight for src, dst, _, weight, _ in store.pages.dump()[1]}
    assert weights == {
        (SEED + "a.html", SEED + "b.html"): 9.0,
        (SEED + "a.html", SEED + "c.html"): 3.0,
        (SEED + "b.html", SEED + "a.html"): 18.0,
        (SEED + "b.html", SEED + "c.html"): 6.0,
        (SEED + "c.html", SEED + "a.html"): 18.0,
        (SEED + "c.html", SEED + "b.html"): 6.0,
    }
    scores = {
        row["url"]: row["pagerank"]
        for row in json.loads(run("top", "--format", "json", "--store", seed_stores["position"]))
    }
    # the seed's 819/693, 721/693, 539/693 with ranks summing to 1 instead of 3
    assert scores == pytest.approx(
        {SEED + "a.html": 819 / 2079, SEED + "b.html": 721 / 2079, SEED + "c.html": 539 / 2079}, abs=1e-12
    )
    uniform = {
        row["url"]: row["pagerank"]
        for row in json.loads(run("top", "--format", "json", "--store", seed_stores["uniform"]))
    }
    assert uniform == pytest.approx(dict.fromkeys(scores, 1 / 3), abs=1e-12)


def test_rank_unweighted_ignores_them(seed_stores, tmp_path):
    """`rank --unweighted` ranks the same store as if every link weighed 1: the weights are all that differ."""
    path = str(tmp_path / "copy.db")
    shutil.copy(seed_stores["position"], path)
    run("rank", "--damping", "0.5", "--unweighted", "--store", path, "-q")
    scores = {row["url"]: row["pagerank"] for row in json.loads(run("top", "--format", "json", "--store", path))}
    assert scores == pytest.approx({SEED + page: 1 / 3 for page in ("a.html", "b.html", "c.html")}, abs=1e-12)


def test_contribution_and_export_use_the_weights(seed_stores):
    store = seed_stores["position"]
    report = json.loads(run("backlinks", SEED + "a.html", "--with-shares", "--format", "json", "--store", store))
    contributions = {row["url"]: row["contribution"] for row in report["rows"]}
    # d x PR(v) x w / W(v): B and C each give A three quarters of what they pass on
    assert contributions == pytest.approx(
        {SEED + "b.html": 0.5 * 0.75 * 721 / 2079, SEED + "c.html": 0.5 * 0.75 * 539 / 2079}, abs=1e-12
    )
    rows = list(csv.DictReader(io.StringIO(run("export", "--what", "links", "--store", store))))
    assert sorted(float(row["weight"]) for row in rows) == [3.0, 6.0, 6.0, 9.0, 18.0, 18.0]


def test_an_unknown_weighting_is_refused_in_one_line(tmp_path):
    result = invoke(
        "build", data("linkweights/seed"), "--link-weights", "visibility", "--store", str(tmp_path / "x.db")
    )
    assert result.exit_code == 2
    assert "'visibility' is not one of 'uniform', 'position'" in result.output


def test_the_cli_names_are_the_library_s():
    assert LINK_WEIGHTS == tuple(weights.value for weights in LinkWeights)


URL = "http://w.example/dir/page.html"


def _weights(html: str) -> dict[str, float]:
    page = extract(html.encode(), URL, weights=LinkWeights.POSITION)
    return {link.url.rsplit("/", 1)[1]: link.weight for link in page.links}


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        # no regions marked: all main content; two links, one in each half
        ("<p><a href=a>a</a><p><a href=b>b</a>", {"a": 9.0, "b": 3.0}),
        # an odd count: the middle one is in the lower half (2k < n)
        ("<a href=a>a</a><a href=b>b</a><a href=c>c</a>", {"a": 9.0, "b": 9.0, "c": 3.0}),
        # a <main>: what is outside it weighs as navigation does
        ("<div><a href=a>a</a></div><main><a href=b>b</a><a href=c>c</a></main>", {"a": 3.0, "b": 9.0, "c": 3.0}),
        ("<div role='Main'><a href=a>a</a></div><p><a href=b>b</a>", {"a": 9.0, "b": 1.0}),
        # a section's header and footer are content, the page's are not; a nav inside <main> is navigation
        ("<section><header><a href=a>a</a></header></section><footer><a href=b>b</a></footer>", {"a": 9.0, "b": 1.0}),
        ("<main><nav><a href=a>a</a></nav><a href=b>b</a></main>", {"a": 3.0, "b": 3.0}),
        ("<div role='banner navigation'><a href=a>a</a></div><a href=b>b</a>", {"a": 3.0, "b": 3.0}),
        # emphasis around the link or inside it
        ("<h2><a href=a>a</a></h2><a href=b><i>b</i></a>", {"a": 18.0, "b": 6.0}),
        # hidden: not counted in the halves, not a link
        ("<a href=a hidden>a</a><a href=b>b</a><a href=c aria-hidden=TRUE>c</a>", {"b": 9.0}),
        ("<a href=a style='DISPLAY : none'>a</a><a href=b>b</a>", {"b": 9.0}),
        ("<dialog><a href=a>a</a></dialog><dialog open><a href=b>b</a></dialog>", {"b": 9.0}),
        (
            "<div style='visibility:hidden'><p style='visibility:collapse'><a href=a>a</a></p></div><a href=b>b</a>",
            {"b": 9.0},
        ),
        ("<div style='visibility:hidden'><a href=a style='visibility:visible'>a</a></div>", {"a": 9.0}),
        ("<div style='visibility:visible; visibility:hidden'><a href=a>a</a></div><a href=b>b</a>", {"b": 9.0}),
        # the same target written two ways adds up; <area> is a link too
        ("<a href=a>a</a><a href='./a'>again</a><map><area href=b alt=b></map>", {"a": 9.0 + 9.0, "b": 3.0}),
        # an SVG link is no HTML link: not counted either
        ("<svg><a href=s>s</a></svg><a href=a>a</a>", {"a": 9.0}),
    ],
)
def test_placement_rules(html, expected):
    assert _weights(html) == expected


def test_a_robots_nofollow_page_keeps_its_weights():
    page = extract(
        b"<meta name=robots content=nofollow><a href=a>a</a><a href=b>b</a>", URL, weights=LinkWeights.POSITION
    )
    assert {link.url.rsplit("/", 1)[1]: (link.nofollow, link.weight) for link in page.links} == {
        "a": (True, 9.0),
        "b": (True, 3.0),
    }


def test_uniform_extraction_weighs_every_link_one():
    page = extract(b"<nav><a href=a>a</a></nav><a href=a>a</a><b><a href=b>b</a></b><a href=c hidden>c</a>", URL)
    assert {link.url.rsplit("/", 1)[1]: link.weight for link in page.links} == {"a": 1.0, "b": 1.0, "c": 1.0}


def test_position_halves():
    assert [position(k, 5) for k in range(5)] == [3.0, 3.0, 3.0, 1.0, 1.0]
    assert [position(k, 4) for k in range(4)] == [3.0, 3.0, 1.0, 1.0]


def test_placement_reads_each_set_once():
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser("<header><a href=h>h</a></header><main><b><a href=m>m</a></b></main><a hidden href=x>x</a>")
    placed = Placement.of(tree)
    nodes = {node.attributes["href"]: node for node in tree.css("a[href]")}
    assert placed.hidden == {nodes["x"].mem_id}
    assert placed.emphasised == {nodes["m"].mem_id}
    assert nodes["h"].mem_id in placed.boilerplate
    assert placed.main == {nodes["m"].mem_id}
    assert placed.factor(nodes["h"].mem_id) == 1.0 and placed.factor(nodes["m"].mem_id) == 6.0
