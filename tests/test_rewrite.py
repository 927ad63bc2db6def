"""The rewriter: minimal-diff insertion, correct around raw text, foreign content, CSP."""

from __future__ import annotations

import hashlib
import os
import re

import pytest
from barkit import (
    bar_count,
    bar_links,
    bar_values,
    bars,
    hosts_only,
    light_dom,
    outside_panel,
    panel_box,
    panel_items,
    panel_of,
    strip_insertions,
)
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from proxy_addon.csp import allow_style_hash, apply
from proxy_addon.markup import PANEL_STYLE_HASH, STYLE_HASH, STYLE_HASHES, Backlink, LinkInfo, PanelData, bar
from proxy_addon.rewrite import TooManyLinks, annotate, annotate_bytes, remove_edits

from conftest import POSTGRES_DOC, PYTHON_DOC

PAGE = "http://site.example/dir/page.html"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def on_each_twin(scanner):
    """Every test here runs on both scanners: the C one and its pure-Python twin (conftest's ``scanner``)."""
    return scanner


INFO = LinkInfo(0.01, 99.5, 4, 12, 30)


def everything(urls):
    return {url: INFO for url in urls}


@pytest.mark.parametrize("charset", ["utf-8", "utf-16"])  # scanned as bytes; decoded and scanned as text
def test_past_most_links_nothing_is_resolved_or_looked_up(charset):
    text = "<html><body>" + "".join(f"<a href='p{n}.html'>x</a>" for n in range(5)) + "<a name=n>x</a></body></html>"
    body, content_type = text.encode(charset), f"text/html; charset={charset}"
    asked = []

    def lookup(urls):
        asked.append(urls)
        return everything(urls)

    for most in (0, 4):
        with pytest.raises(TooManyLinks, match="5 links"):
            annotate(text, PAGE, lookup, most_links=most)
        with pytest.raises(TooManyLinks, match="5 links"):
            annotate_bytes(body, content_type, PAGE, lookup, most_links=most)
    assert asked == []
    assert annotate(text, PAGE, lookup, most_links=5).text == annotate(text, PAGE, everything).text
    done = annotate_bytes(body, content_type, PAGE, lookup, most_links=5)
    assert done is not None and done[1].links == 5


def test_bar_before_each_links_end_tag_after_each_areas_tag_and_nowhere_else():
    source = (
        "<!DOCTYPE html><html><head><title>t</title></head><body>"
        '<a href="a.html">A</a> <a name="x">no href</a> <A HREF=/b>B</A>'
        '<map><area href="c.html" alt=c></map></body></html>'
    )
    out = annotate(source, PAGE, everything)
    assert out.links == 3 and bar_values(out.text) == ["0.01"] * 3
    assert (
        '<a href="a.html">A<span data-pagerank-bar>' in out.text and "<A HREF=/b>B<span data-pagerank-bar>" in out.text
    )
    assert '<area href="c.html" alt=c><span data-pagerank-bar>' in out.text
    assert bar_links(out.text) == [("a.html", "end"), ("/b", "end"), ("c.html", "start")]
    assert remove_edits(out.text, out.edits) == source
    assert strip_insertions(out.text) == source


@pytest.mark.parametrize(
    "snippet",
    [
        "<script>var s = '<a href=\"x.html\">x</a>';</script>",
        "<script type=module>if (a<b) { document.write('<a href=y>') }</script>",
        "<style>a[href='x'] { color: red } /* <a href=x> */</style>",
        "<textarea><a href='x.html'>not a link</a></textarea>",
        "<title><a href=x>in title</a></title>",
        "<!-- <a href='x.html'>commented out</a> -->",
        "<!-- a -- b --!> <a-still-text>",
        "<noscript><a href='x.html'>scripting browsers see text</a></noscript>",
        "<template><a href='x.html'>inert</a></template>",
        "<svg><a href='x.html'><text>svg link</text></a></svg>",
        "<svg><![CDATA[<a href='x.html'>]]></svg>",
        "<math><mi><a href='x.html'>math</a></mi></math>",
        "<xmp><a href=x></xmp>",
        "<iframe><a href=x></iframe>",
        "<a href='x.html' title='quote \" and > inside'>",
        "<a title=it's href=x.html>unquoted value with a quote</a>",
        "<a href=x.html/>",
        "<a\nhref\n=\n'x.html'\n>spread over lines</a>",
        "<!doctype html><?php echo '<a href=x>' ?>",
        "<div title='<a href=x.html>'>attribute text</div>",
        "<p>1 < 2 and <a href='x.html'>real</a></p>",
        "<a href='x.html'",
    ],
)
def test_tricky_markup_keeps_every_original_character(snippet):
    source = f"<html><head></head><body>{snippet}<a href='z.html'>z</a></body></html>"
    out = annotate(source, PAGE, everything)
    assert remove_edits(out.text, out.edits) == source
    assert strip_insertions(out.text) == source


# Where the HTML standard's tokenizer and tree builder put a link, or no link (issue 12):
# each source holds links to /ok... (HTML links, one bar each) and /no... (none).
@pytest.mark.parametrize(
    "source",
    [
        # legacy document.write in an escaped script: '</script>' inside it does not end the script
        '<script><!--\ndocument.write("<script src=a.js></script>");\nvar s = \'<a href="/no">\';\n//--></script>'
        "<a href=/ok>",
        "<script><!-- x --></script><a href=/ok>",
        "<script><!--<script></script><a href=/no>--></script><a href=/ok>",
        "<script><!--<script>--><a href=/no></script><a href=/ok>",  # '-->' ends both escapes
        "<script><!--<scripts></script><a href=/ok>",
        # a quote inside an unquoted value is a character of that value
        "<img alt=x' title=\"'><a href=/no>\"><a href=/ok>",
        '<p class=a"b><a href=/ok>',
        # bogus comments: '</' then no letter, '<!' then no '--', doctype or CDATA, '<?'
        "</3 <a href=/no> x><a href=/ok>",
        "<! <a href=/no> ><a href=/ok>",
        "<![CDATA[ <a href=/no> ]]><a href=/ok>",
        "<? <a href=/no> ?><a href=/ok>",
        "</><a href=/ok>",
        # comments as the tokenizer ends them
        "<!--><a href=/ok>",
        "<!---><a href=/ok>",
        "<!-- --!><a href=/ok>",
        "<!-- --!x <a href=/no> -->",
        # SVG/MathML: their own a elements; breakout; integration points; an end tag closing an HTML parent
        "<div><svg><circle></div><a href=/ok>",
        "<svg><g><a href=/no></a></g></svg><a href=/ok>",
        "<svg><p><a href=/ok>",
        "<svg><font color=red><a href=/ok>",
        "<svg><font><a href=/no>",
        "<svg></p><a href=/ok>",
        "<math><mi><a href=/ok></a></mi><a href=/no></math>",
        "<math><mi><mglyph><a href=/no>",
        '<math><annotation-xml encoding="text/html"><a href=/ok></a></annotation-xml></math>',
        '<math><annotation-xml encoding="Application/XHTML+XML"><a href=/ok></a></annotation-xml></math>',
        "<math><annotation-xml><a href=/no></annotation-xml></math><a href=/ok>",
        "<svg><foreignObject><a href=/ok></a></foreignObject><a href=/no></svg>",
        "<svg><foreignObject><div><svg><a href=/no></svg></div></foreignObject></svg><a href=/ok>",
        "<svg><desc><a href=/ok></a></desc><title>t</title><a href=/no></a></svg>",
        "<svg/><a href=/ok>",
        "<svg x=1/><a href=/no>",
        "<svg><foreignObject><![CDATA[ a > b <a href=/no> ]]><a href=/ok></foreignObject></svg>",
        "<svg><foreignObject><p><![CDATA[ <a href=/no> ]]><a href=/ok></foreignObject></svg>",  # a bogus comment there
    ],
)
def test_links_where_the_standard_puts_them(source):
    out = annotate(source, PAGE, everything)
    assert remove_edits(out.text, out.edits) == source
    expected = re.findall(r"<a href=\"?(/ok)", source)
    assert [href for href, _ in bar_links(out.text)] == expected
    assert out.links == bar_count(out.text) == len(expected)


# Where a link's bar goes (issue 46, 9): before its </a>, after its text, where the link holds only text and
# phrasing elements (what a screen reader says first is the link's own text, and the bar hides with it); else
# right after its start tag.  "|" marks the bar, "^" a bar of a link of no text (held out of the flow), "~" one
# of a link with no text before the block that kept its bar after its start tag (out of the flow at its start).
PLACEMENTS = [
    "<a href=x>text|</a>",
    "<a href=x><b>bold</b> text|</a>",
    "<a href=x><code>c</code>|</a>",
    "<a href=x><span>a <em>b</em></span><br>c|</a>",
    "<p>before <a href=x>inside|</a> after</p>",
    "<a href=x>&nbsp;|</a>",  # a character reference is text
    "<a href=x> <img> text|</a>",  # an image and text: not an icon
    "<a href=x><img src=i.png>^</a>",
    "<a href=x><svg viewBox='0 0 1 1'><path d='M0 0h1v1z'/></svg>^</a>",
    "<a href=x><span><img src=i.png></span>^</a>",
    "<a href=x> ^</a>",
    "<a href=x>~<div>block</div></a>",  # a block element inside: it may move the link
    "<a href=x>|t<p>u</a>",
    "<a href=x>~<table><td>t</table></a>",
    "<p><a href=x>|t</p>",  # an end tag of an element opened before the link
    "<b><a href=x>|t</b></a>",
    "<a href=x>|t</b></a>",  # an end tag of an element not opened in it
    "<a href=x>|t",  # no </a> before the end of the file
    "<a href=x>|one<a href=y>two|</a>",  # another <a> closes the first
    "<map><area href=x>|</map>",  # an <area>: right after its tag
    "<a href=x>|t<area href=y>|</a>",  # ... and the link it is in: after its start tag
]


def _placed(expected: str) -> str:
    """``expected`` with each marker replaced by the bar the marker stands for (INFO's)."""
    return (
        expected.replace("|", bar(INFO))
        .replace("^", bar(INFO).replace("<span data-pagerank-bar>", "<span data-pagerank-bar data-icon>"))
        .replace("~", bar(INFO).replace("<span data-pagerank-bar>", '<span data-pagerank-bar data-icon="start">'))
    )


@pytest.mark.parametrize("expected", PLACEMENTS)
def test_a_links_bar_goes_before_its_end_tag_where_it_holds_only_phrasing(expected):
    from proxy_addon.markup import STYLE_BLOCK

    source = re.sub(r"[|^~]", "", expected)
    out = annotate(source, PAGE, everything)
    assert out.text == STYLE_BLOCK + _placed(expected)
    assert out.links == bar_count(out.text) == len(re.findall(r"[|^~]", expected))
    assert [bar.icon for bar in bars(out.text)] == [marker != "|" for marker in re.findall(r"[|^~]", expected)]
    assert remove_edits(out.text, out.edits) == source and strip_insertions(out.text) == source


def test_where_each_bar_goes_told_by_its_link():
    out = annotate("<a href=x>one<a href=y>two</a><a href=z><div>block</div></a><a href=w><img></a>", PAGE, everything)
    assert bar_links(out.text) == [("x", "start"), ("y", "end"), ("z", "start"), ("w", "end")]
    assert [bar.icon for bar in bars(out.text)] == [False, False, True, True]


@pytest.mark.parametrize("scanner", ["c"], indirect=True)
@pytest.mark.parametrize("expected", PLACEMENTS)
def test_the_twins_place_bars_and_tell_icons_alike(scanner, expected):
    from proxy_addon import _fastscan, _scan_python

    source = re.sub(r"[|^~]", "", expected)
    python = _scanned(_scan_python, source)
    assert _scan_answer(_scanned(_fastscan, source)) == _scan_answer(python)
    assert _scan_answer(_scanned(_fastscan, source.encode(), "utf-8")) == _scan_answer(python)
    markers = list(re.finditer(r"[|^~]", expected))
    offsets = [marker.start() - index for index, marker in enumerate(markers)]  # each marker's place in the source
    assert [offset for offset, _, _ in python.links] == offsets
    assert python.icons == [offset for offset, marker in zip(offsets, markers) if marker.group() != "|"]


def _private_page():
    """A page with every kind of bar (a page's score, a nofollow link, an estimate, an unranked link, an icon,
    an <area>) and a panel with backlinks, each with a title, URL and score of the store's."""
    from proxy_addon.markup import Estimate

    estimate = LinkInfo(None, estimate=Estimate("host", "secret-host.example", 0.25, 50.0, 5, 12, 3, 10))
    known = {
        "http://site.example/dir/ranked.html": LinkInfo(0.0123, 97.5, 6, 4321, 33),
        "http://site.example/dir/nofollow.html": LinkInfo(0.02, 98.0, 6, 77, 35),
        "http://secret-host.example/deep.html": estimate,
        "http://site.example/dir/icon.html": LinkInfo(0.005, 80.0, 3, 9, 20),
        "http://site.example/dir/area.html": LinkInfo(0.004, 70.0, 2, 8, 18),
    }
    source = (
        "<!doctype html><html><head><title>Page</title></head><body><p>"
        "<a href=ranked.html>ranked</a> <a rel=nofollow href=nofollow.html>nofollow</a> "
        "<a href=http://secret-host.example/deep.html>estimated</a> <a href=unknown.html>unknown</a> "
        "<a href=icon.html><img src=icon.png alt=''></a> <a href=icon.html><div>block</div></a></p>"
        "<map><area href=area.html alt=a></map></body></html>"
    )
    data = PanelData(
        PAGE,
        LinkInfo(0.0456, 99.0, 7, 12, 38),
        [
            Backlink(
                "http://backlink.example/private?sid=1", "A private title (confidential)", LinkInfo(0.3, 99.9, 5, 3, 40)
            ),
            Backlink("http://other.example/b", "Other", LinkInfo(0.1, 90.0, 4, 1, 20), nofollow=True, new=True),
        ],
        2,
        since=1,
        new_backlinks=1,
        host="site.example",
        hostrank=0.5,
        host_position=1,
        stale="ranking pagerank v1 predates build 2: run `rankstore rank`",
    )
    return source, annotate(
        source, PAGE, lambda urls: {url: known[url] for url in urls if url in known}, lambda url: data
    )


def test_a_pages_script_reads_nothing_of_the_store_in_the_light_dom():
    from proxy_addon.markup import STYLE_BLOCK

    source, out = _private_page()
    assert out.links == bar_count(outside_panel(out.text)) == 7
    light = light_dom(out.text)
    # all we put where the page's script reads is our constant style block and host elements with one
    # attribute that names them, the same for every bar whatever it shows
    assert hosts_only(out.text) == source
    assert light.count(STYLE_BLOCK) == 1 and out.text.count('<style id="pagerank-proxy-style">') == 1
    hosts = re.findall(r"<(?:span|aside) data-pagerank[^>]*>", light)
    assert set(hosts) == {
        "<span data-pagerank-bar>",
        "<span data-pagerank-bar data-icon>",
        '<span data-pagerank-bar data-icon="start">',  # <a href=icon.html><div>block</div></a>: an icon at its start
        "<aside data-pagerank-panel>",
    }
    assert len(hosts) == 8 and light.count("<template") == 0
    outside_style = light.replace(STYLE_BLOCK, "")
    for attribute in (
        "data-pagerank=",
        "data-pagerank-level",
        "data-pagerank-estimate",
        "data-w=",
        "data-nofollow",
        "data-new",
        "data-stale",
        'id="pagerank-panel"',
        "title=",
        "aria-label",
        "role=",
    ):
        assert attribute not in outside_style, attribute
    for said in (
        "PageRank",
        "percentile",
        "toolbar",
        "in-links",
        "backlinks",
        "stale",
        "0.0123",
        "0.0456",
        "4,321",
        "secret-host.example",
        "backlink.example",
        "private",
        "confidential",
        "other.example",
        "pagerank.proxy",
    ):
        assert light.count(said) == source.count(said) < out.text.count(said), said  # the page's own alone
    # ... while the shadow roots hold it all: the screen shows what it did
    values = {bar.value for bar in bars(out.text)}
    assert {"0.0123", "0.02", "unranked", "0.005", "0.004", "0.0456", "0.3", "0.1"} <= values
    assert any(bar.attributes.get("data-pagerank-estimate") == "0.25" for bar in bars(out.text))
    panel = panel_of(out.text)
    assert "A private title (confidential)" in panel and "http://backlink.example/private?sid=1" in panel
    assert panel_box(panel)["data-pagerank"] == "0.0456" and 'data-stale="true"' in panel


def test_in_a_page_read_as_bytes_the_light_dom_holds_nothing_either():
    source, _ = _private_page()
    done = annotate_bytes(
        source.encode(), "text/html; charset=utf-8", PAGE, lambda urls: {}, lambda url: PanelData(url, INFO, [], 0)
    )
    assert done is not None
    new_body, _ = done
    assert hosts_only(new_body) == source.encode()
    assert b"data-pagerank=" not in light_dom(new_body) and b"data-pagerank=" in new_body


@pytest.mark.parametrize(
    "href, target",
    [
        ("/p?id=1&section=2", "http://site.example/p?id=1&section=2"),  # legacy name then '=': not a reference
        ("/p?a=1&copy2", "http://site.example/p?a=1&copy2"),  # then an alphanumeric: not one either
        ("/p?a=1&copy;2", "http://site.example/p?a=1%C2%A92"),
        ("/p?a=1&copy.2", "http://site.example/p?a=1%C2%A9.2"),  # legacy name then other text: decoded
        ("/p?a=1&amp;b=2", "http://site.example/p?a=1&b=2"),
        ("/p?a=1&ampb=2", "http://site.example/p?a=1&ampb=2"),
        ("/p?a=1&notit;", "http://site.example/p?a=1&notit;"),  # 'not' then an alphanumeric
        ("/p?a=1&notin;", "http://site.example/p?a=1%E2%88%89"),
        ("/p?a=1&#x26;b", "http://site.example/p?a=1&b"),
        ("/p?a=1&#38b", "http://site.example/p?a=1&b"),
        ("/p?a=&nosuch;", "http://site.example/p?a=&nosuch;"),
    ],
)
def test_character_references_in_href_read_as_the_standard_does(href, target):
    calls = []

    def lookup(urls):
        calls.extend(urls)
        return {}

    annotate(f'<a href="{href}">x</a>', "http://site.example/", lookup)
    assert calls == [target]


@pytest.mark.parametrize(
    "source, panel_at_end",
    [
        ("<textarea>unfinished", False),
        ("<title>unfinished", False),
        ("<plaintext>unfinished", False),
        ("<script>var a = 1", False),
        ("<style>p{}", False),
        ("<!-- unfinished", False),
        ("<p>text <a href='x", False),
        ("<p>text</", False),
        ("<! unfinished", False),
        ("<svg><circle>", False),
        ("<template><p>", False),
        ("<select><option>x", False),  # the panel's text would be the select's
        ("<p><a href=x>unclosed", False),  # the panel's links would close it, moving the page's elements
        ("<p><a href=x>closed</a><select></select>", True),
        ("<p>text", True),
        ("<p>text <", True),
        ("<svg></svg><p>text", True),
    ],
)
def test_panel_without_body_goes_at_the_end_only_where_it_renders(source, panel_at_end):
    out = annotate(source, PAGE, everything, lambda url: PanelData(url, INFO, [], 0))
    assert out.text.endswith("</aside>") is panel_at_end
    assert ("<aside data-pagerank-panel>" in out.text) is panel_at_end
    assert (panel_of(out.text) is not None) is panel_at_end
    if panel_at_end:
        assert out.text.endswith(panel_of(out.text))
    assert remove_edits(out.text, out.edits) == source


def test_many_comments_take_one_pass():
    # a search per ending, each running to the end of the file when the page never used that
    # ending, made the scan quadratic in the number of comments
    import time

    source = "<p>" + "<!-- c -->x" * 30_000 + "<a href=/z>"
    started = time.perf_counter()
    out = annotate(source, PAGE, everything)
    assert out.links == 1 and time.perf_counter() - started < 2.0


def test_generated_tables_are_up_to_date():
    import subprocess
    import sys

    check = subprocess.run(
        [sys.executable, os.path.join(ROOT, "tools", "gen_scan_tables.py"), "--check"], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr


def test_only_real_links_get_bars():
    source = (
        "<body><script>'<a href=s>'</script><svg><a href=v /></svg><template><a href=t>t</a></template>"
        "<textarea><a href=ta></textarea><!-- <a href=c> --><noscript><a href=n>n</a></noscript>"
        "<svg><foreignObject><a href=f.html>html inside svg</a></foreignObject></svg>"
        "<math><a href=m></math><p><a href=real.html>real</a></p></body>"
    )
    out = annotate(source, PAGE, everything)
    assert out.links == 2 and bar_count(out.text) == 2
    # (a link in SVG's HTML integration point keeps its bar after its start tag: the scanner does not follow
    # what is open inside it there)
    assert bar_links(out.text) == [("f.html", "start"), ("real.html", "end")]
    assert "<a href=f.html><span data-pagerank-bar>" in out.text and "real<span data-pagerank-bar>" in out.text


def test_fragment_javascript_and_mailto_links_get_no_bar():
    out = annotate(
        "<a href='#top'>t</a><a href='javascript:x()'>j</a><a href='mailto:a@b'>m</a>"
        "<a href=''>e</a><a href='y.html#frag'>y</a>",
        PAGE,
        everything,
    )
    assert out.links == 1


def test_unranked_and_nofollow_links():
    out = annotate("<a href=a.html>a</a><a rel='nofollow ugc' href=b.html>b</a>", PAGE, lambda urls: {})
    assert bar_values(out.text) == ["unranked", "unranked"]
    plain, nofollow = bars(out.text)
    assert "data-nofollow" not in plain.attributes and "passes no PageRank" not in plain.tooltip
    assert nofollow.attributes["data-nofollow"] == "true" and nofollow.tooltip.endswith("passes no PageRank")
    assert out.text.count('data-nofollow="true"') == 1


def test_meta_robots_nofollow_marks_every_bar():
    out = annotate("<meta name=robots content=nofollow><a href=a.html>a</a>", PAGE, everything)
    assert [bar.attributes.get("data-nofollow") for bar in bars(out.text)] == ["true"]


_META_PIECES = st.lists(
    st.sampled_from(
        [
            " ",
            "name=",
            "NAME=",
            "http-equiv=",
            "content=",
            '"',
            "'",
            "robots",
            "ROBOTS",
            "Robot",
            "s",
            "&#114;",
            "&#x72;obots",
            "&amp;",
            "nofollow",
            "NOFOLLOW",
            "content-security-policy",
            "Content-Security-Policy",
            "default-src 'none'",
            "\u0130",
            "\u212a",
            "\t",
            "=",
        ]
    ),
    max_size=12,
).map("".join)


_METAS_THAT_MATTER = (
    "name=robots content=nofollow",
    'NAME=" ROBOTS" content=NOFOLLOW',
    "name=&#114;obots content=nofollow",
    "http-equiv=Content-Security-Policy content=\"default-src 'none'\"",
    "http-equiv=content-security-polic&#121; content='default-src x'",
)


@given(attrs=_META_PIECES, as_bytes=st.booleans())
@example(attrs=_METAS_THAT_MATTER[0], as_bytes=True)
@example(attrs=_METAS_THAT_MATTER[1], as_bytes=False)
@example(attrs=_METAS_THAT_MATTER[2], as_bytes=True)
@example(attrs=_METAS_THAT_MATTER[3], as_bytes=True)
@example(attrs=_METAS_THAT_MATTER[4], as_bytes=False)
@settings(max_examples=400, deadline=None)
def test_a_meta_told_apart_without_parsing_is_one_the_parse_would_ignore(attrs, as_bytes):
    from proxy_addon import _scan_python, rewrite

    doc = f"<meta {attrs}>"
    start, end = len("<meta "), len(doc) - 1
    data = doc.encode("utf-8") if as_bytes else doc
    full = rewrite._Scan([], None, None, None, False, [])  # the tag read whole, its attributes parsed
    original = _scan_python.may_matter
    try:
        _scan_python.may_matter = lambda attrs: True
        rewrite._head_tag(full, "meta", data, start, end, "utf-8" if as_bytes else None)
    finally:
        _scan_python.may_matter = original
    if full.robots_nofollow or full.csp_metas:
        assert _scan_python.may_matter(data[start:end])
    if attrs in _METAS_THAT_MATTER:
        assert full.robots_nofollow or full.csp_metas
    quick = rewrite._Scan([], None, None, None, False, [])
    rewrite._head_tag(quick, "meta", data, start, end, "utf-8" if as_bytes else None)
    assert (quick.robots_nofollow, quick.csp_metas) == (full.robots_nofollow, full.csp_metas)
    if rewrite.fast is not None:  # the C scanner hands Python only the metas that may matter: the same
        reference = _scanned(_scan_python, doc)
        scans = [_scanned(rewrite.fast, doc)]
        if doc.isascii():
            scans.append(_scanned(rewrite.fast, doc.encode(), "utf-8"))
        for fast in scans:  # (in bytes, offsets are the characters' only where every one is ASCII)
            assert (fast.robots_nofollow, fast.csp_metas) == (reference.robots_nofollow, reference.csp_metas)


def test_lookup_gets_every_target_once_in_canonical_form_honouring_base():
    calls = []

    def lookup(urls):
        calls.append(list(urls))
        return {}

    annotate(
        "<head><base href='https://other.example/root/'></head><a href=a.html>1</a><a href='a.html#x'>2</a>"
        "<a href='/abs'>3</a><a href='HTTPS://OTHER.example:443/abs'>4</a>",
        PAGE,
        lookup,
    )
    assert calls == [["https://other.example/root/a.html", "https://other.example/abs"]]


def test_style_block_never_before_the_doctype():
    out = annotate("<!DOCTYPE html><p><a href=a>a</a>", PAGE, everything)
    assert out.text.startswith("<!DOCTYPE html><style")
    out = annotate("<p><a href=a>a</a>", PAGE, everything)
    assert out.text.startswith("<style")


@pytest.mark.parametrize(
    "source, before_style",
    [
        ("<!-- first -->\n<p><a href=a>a</a>", "<!-- first -->\n"),  # a comment before all stays at the top
        ("<!DOCTYPE html>\n<!--x--> <html>\n<body><a href=a>a</a>", "<!DOCTYPE html>\n<!--x--> <html>\n"),
        ("&#32;&Tab;</p><a href=a>a</a>", "&#32;&Tab;</p>"),  # ignored there: white space, stray end tags
        ("<html><head class=h><a href=a>a</a>", "<html><head class=h>"),
    ],
)
def test_style_block_after_what_the_parser_keeps_outside_the_head(source, before_style):
    out = annotate(source, PAGE, everything)
    assert out.text.startswith(before_style + '<style id="pagerank-proxy-style">')


def test_no_style_block_without_a_bar_or_a_panel():
    assert annotate("<!-- nothing to annotate", PAGE, everything).text == "<!-- nothing to annotate"


def test_panel_lists_backlinks_escaped_and_sorted_as_given():
    data = PanelData(
        PAGE,
        INFO,
        [
            Backlink("http://x.example/?a=1&b=<2>", "<script>alert(1)</script>", LinkInfo(0.3, 99.9, 5, 3, 40)),
            Backlink(
                'http://y.example/"onmouseover="alert(1)', "Y \"quoted\" 'single'", LinkInfo(0.1, 90.0, 4, 1, 20), True
            ),
        ],
        2,
    )
    out = annotate("<html><body><p>hi</p></body></html>", PAGE, everything, lambda url: data)
    panel = panel_of(out.text)
    assert "<script>" not in panel and "&lt;script&gt;" in panel
    assert 'onmouseover="alert' not in panel and "&quot;onmouseover=&quot;" in panel
    items = panel_items(out.text)
    assert [item.attributes["data-pagerank"] for item in items] == ["0.3", "0.1"]
    assert [item.bar.value for item in items] == ["0.3", "0.1"]
    assert [item.bar.attributes.get("data-nofollow") for item in items] == [None, "true"]
    assert [item.text for item in items] == [
        "&lt;script&gt;alert(1)&lt;/script&gt;",
        "Y &quot;quoted&quot; &#x27;single&#x27;",
    ]
    assert [item.href for item in items] == [
        "http://x.example/?a=1&amp;b=&lt;2&gt;",
        "http://y.example/&quot;onmouseover=&quot;alert(1)",
    ]
    assert panel_box(panel)["data-pagerank"] == "0.01"  # the page's own, and its bar in the panel's tab
    assert bar_values(panel) == ["0.01", "0.3", "0.1"]
    assert "http://pagerank.proxy/backlinks?url=" in panel
    assert out.text.index("<body>") < out.text.index("<aside data-pagerank-panel>")


def test_titles_with_non_ascii_become_character_references():
    info = LinkInfo(0.01, 99.0, 1, 1, 1)
    data = PanelData(PAGE, info, [Backlink("http://x.example/é", "Café ☕", LinkInfo(0.1, 50.0, 3, 1, 5))], 1)
    out = annotate("<body></body>", PAGE, everything, lambda url: data)
    assert out.text.isascii() and "Caf&#233; &#9749;" in out.text


@pytest.mark.parametrize(
    "charset, body",
    [
        ("utf-8", "<meta charset=utf-8><title>été</title><a href=a>ça</a>".encode()),
        ("iso-8859-1 (meta only)", "<meta charset=iso-8859-1><title>été</title><a href=a>ça</a>".encode("latin-1")),
        ("windows-1251 header", "<title>Привет</title><a href=a>ссылка</a>".encode("cp1251")),
        ("shift_jis", "<meta charset=shift_jis><title>日本語</title><a href=a>リンク</a>".encode("shift_jis")),
        ("utf-8 with BOM", "\ufeff<title>x</title><a href=a>y</a>".encode("utf-8")),
        ("utf-16 with BOM", "\ufeff<title>x</title><a href=a>y</a>".encode("utf-16")),
        ("invalid utf-8 bytes", b"<meta charset=utf-8><a href=a>\xff\xfe broken</a>"),
    ],
)
def test_charset_kept_byte_for_byte(charset, body):
    content_type = "text/html; charset=windows-1251" if "1251" in charset else "text/html"
    done = annotate_bytes(body, content_type, PAGE, everything)
    assert done is not None
    new_body, rewrite = done
    assert bar_count(new_body.decode("utf-16") if "16" in charset else new_body) == 1
    # removing the insertions (offsets in the body's bytes) gives the original bytes
    assert rewrite.text == new_body
    assert remove_edits(new_body, rewrite.edits) == body


def test_meta_csp_gets_the_style_hash_by_insertion_only():
    source = (
        "<html><head><meta http-equiv='Content-Security-Policy' content=\"default-src 'self'\">"
        "</head><body><a href=a>a</a></body></html>"
    )
    out = annotate(source, PAGE, everything)
    assert STYLE_HASHES == (STYLE_HASH, PANEL_STYLE_HASH)  # the page's style block, and the panel's own
    assert f"style-src 'self' &#39;{STYLE_HASH}&#39; &#39;{PANEL_STYLE_HASH}&#39;" in out.text
    assert remove_edits(out.text, out.edits) == source


@pytest.mark.parametrize(
    "policy, expected",
    [
        ("default-src 'self'", "default-src 'self'; style-src 'self' 'H'"),
        (
            "default-src 'self'; style-src 'self' https://cdn.example",
            "default-src 'self'; style-src 'self' https://cdn.example 'H'",
        ),
        ("style-src 'self' 'unsafe-inline'", "style-src 'self' 'unsafe-inline'"),  # already allowed: untouched
        ("style-src 'nonce-r4nd0m' 'unsafe-inline'", "style-src 'nonce-r4nd0m' 'unsafe-inline' 'H'"),
        ("script-src 'self'", "script-src 'self'"),  # styles not restricted
        ("default-src 'none'", "default-src 'none'; style-src 'H'"),
        (
            "default-src 'self'; style-src-elem 'self'; style-src 'none'",
            "default-src 'self'; style-src-elem 'self' 'H'; style-src 'none'",
        ),
        ("default-src 'self';", "default-src 'self'; style-src 'self' 'H'"),
        (
            "default-src 'self', style-src https://a.example",
            "default-src 'self'; style-src 'self' 'H', style-src https://a.example 'H'",
        ),
    ],
)
def test_csp_insertions(policy, expected):
    assert apply(policy, allow_style_hash(policy, "H")) == expected
    both = expected.replace("'H'", "'H' 'P'")  # the page's style block and the panel's, side by side
    assert apply(policy, allow_style_hash(policy, "H", "P")) == both


def _real_pages(root, count):
    pages = []
    for folder, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if name.endswith(".html"):
                pages.append(os.path.join(folder, name))
    return pages[:: max(1, len(pages) // count)]


@pytest.mark.parametrize("root", [PYTHON_DOC, POSTGRES_DOC])
def test_real_pages_round_trip_and_every_link_gets_a_bar(root):
    from rankstore.extract import extract
    from rankstore.urls import canonical

    checked = 0
    for path in _real_pages(root, 120):
        body = open(path, "rb").read()
        url = "http://docs.local/" + os.path.relpath(path, root)
        new_body, rewrite = annotate_bytes(body, "text/html", url, everything)
        text = body.decode("utf-8")
        assert remove_edits(new_body, rewrite.edits) == body
        # as many bars as links with an http(s) target the parser sees (the oracle counts occurrences)
        from selectolax.lexbor import LexborHTMLParser

        tree = LexborHTMLParser(text)
        expected = 0
        for node in tree.css("a[href], area[href]"):
            href = node.attributes.get("href") or ""
            if href.strip() and not href.strip().startswith("#") and canonical(href, url):
                expected += 1
        assert rewrite.links == expected, path
        checked += 1
        assert extract(body, url).links is not None
    assert checked >= 100


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(
    parts=st.lists(
        st.one_of(
            st.sampled_from(
                [
                    "<a href='x.html'>",
                    "<A HREF=y>",
                    "</a>",
                    "<area href=z>",
                    "<script>",
                    "</script>",
                    "<style>",
                    "</style>",
                    "<textarea>",
                    "</textarea>",
                    "<!--",
                    "-->",
                    "<svg>",
                    "</svg>",
                    "<template>",
                    "</template>",
                    "<![CDATA[",
                    "]]>",
                    "<title>",
                    "</title>",
                    "<body>",
                    "<head>",
                    "<base href='http://b.example/'>",
                    "<noscript>",
                    "</noscript>",
                    "<",
                    ">",
                    "'",
                    '"',
                    "=",
                    " ",
                    "\n",
                    "&amp;",
                    "é",
                    "<a href=",
                    "<!DOCTYPE html>",
                    "<meta charset=x>",
                    "<meta http-equiv=content-security-policy content=\"default-src 'self'\">",
                ]
            ),
            st.text(max_size=8),
        ),
        max_size=40,
    )
)
def test_any_input_comes_back_when_insertions_are_removed(parts):
    source = "".join(parts)
    out = annotate(source, PAGE, everything, lambda url: PanelData(url, INFO, [], 0))
    assert remove_edits(out.text, out.edits) == source


def test_bar_markup_is_plain():
    markup = bar(INFO)
    assert "style=" not in markup and "<script" not in markup and 'data-pagerank="0.01"' in markup
    assert markup.isascii()
    (drawn,) = bars(markup)
    assert (drawn.start, drawn.end) == (0, len(markup))
    assert drawn.attributes["data-w"] == "30" and drawn.fill == 30 and drawn.attributes["role"] == "img"
    assert drawn.tooltip == "PageRank 0.01 · 99.50 percentile · toolbar 4/10 · 12 in-links"
    assert light_dom(markup) == "<span data-pagerank-bar></span>"  # nothing of its own outside its shadow root


# ------------------------------------------------------------------ the C scanner against the Python reference

SOUP = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "<a href='x.html'>",
                "<A HREF=y>",
                "</a>",
                "<area href=z>",
                "<a rel='nofollow ugc' href=n>",
                "<a href=r&amp;s rel=&#110;ofollow>",
                "<a href=1 href=2>",
                "<a/href=q>",
                "<abbr>",
                "<aside>",
                "<script>",
                "</script>",
                "</SCRIPT >",
                "<style>",
                "</style>",
                "<textarea>",
                "</textarea>",
                "<xmp>",
                "</xmp>",
                "<iframe>",
                "</iframe>",
                "<noscript>",
                "</noscript>",
                "<plaintext>",
                "<!--",
                "-->",
                "--!>",
                "<!-->",
                "<svg>",
                "</svg>",
                "<svg/>",
                "<math>",
                "</math>",
                "<foreignObject>",
                "</foreignObject>",
                "<desc>",
                "<annotation-xml>",
                "<font color=r>",
                "<font>",
                "<b>",
                "<p>",
                "<template>",
                "</template>",
                "<![CDATA[",
                "]]>",
                "<title>",
                "</title>",
                "<body>",
                "<head>",
                "<html>",
                "<base href='http://b.example/'>",
                "<base>",
                "<meta name=robots content=nofollow>",
                "<meta http-equiv=content-security-policy content=\"default-src 'self'\">",
                "<",
                ">",
                "</",
                "<?",
                "<!",
                "'",
                '"',
                "=",
                " ",
                "\n",
                "\t",
                "/",
                "&amp;",
                "é",
                "ſ",
                "K",
                "<!--",
                "-->",
                "<script>",
                "</script>",
                "<script/",
                "</3",
                "<!x",
                "</ ",
                "</>",
                "alt=x'",
                "<img alt=",
                "<mi>",
                "</mi>",
                "<mglyph>",
                "<annotation-xml encoding=text/html>",
                "<annotation-xml encoding='TEXT/HTML'>",
                "</annotation-xml>",
                "</desc>",
                "<div>",
                "</div>",
                "</p>",
                "</br>",
                "<font size=3>",
                "<font face>",
                "<circle>",
                "</circle>",
                "<g/>",
                "<x y=z/>",
                "<svg x='1'/>",
                "<table>",
                "</foreignObject>",
                "<span>",
                "</span>",
                "<br>",
                "<a href=",
                "<div title='",
                '<img alt="',
                "<!DOCTYPE html>",
                "<!doctype",
                "<span class=x>",
            ]
        ),
        st.text(max_size=6),
    ),
    max_size=50,
).map("".join)


def _scanned(twin, doc, encoding=None):
    """What ``twin`` (the module ``_fastscan`` or ``_scan_python``) finds in ``doc``, read whole."""
    from proxy_addon import rewrite

    answer = twin.scan(doc) if encoding is None else twin.scan(doc, encoding)
    return rewrite._scan_of(answer, doc, encoding)


def _scan_answer(scan):
    return (
        scan.links,
        scan.body_at,
        scan.head_at,
        scan.base_href,
        scan.robots_nofollow,
        scan.csp_metas,
        scan.end_is_markup,
        scan.icons,
    )


# the twins against each other: once is enough
@pytest.mark.parametrize("scanner", ["c"], indirect=True)
def test_the_c_scanner_is_built_and_used(scanner):
    from proxy_addon import rewrite

    assert rewrite.fast is not None, "proxy_addon._fastscan did not build (is a C compiler installed?)"
    assert rewrite.scanner is rewrite.fast


@pytest.mark.parametrize("scanner", ["c"], indirect=True)
@settings(
    max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(source=SOUP)
def test_c_scanner_answers_as_the_python_reference_on_tag_soup(scanner, source):
    from proxy_addon import _fastscan, _scan_python

    assert _scan_answer(_scanned(_fastscan, source)) == _scan_answer(_scanned(_scan_python, source))


@pytest.mark.parametrize("scanner", ["c"], indirect=True)
@pytest.mark.parametrize("root", [PYTHON_DOC, POSTGRES_DOC])
def test_c_scanner_answers_as_the_python_reference_on_real_pages(scanner, root):
    from proxy_addon import _fastscan, _scan_python

    for path in _real_pages(root, 400):
        text = open(path, encoding="utf-8", errors="surrogateescape").read()
        assert _scan_answer(_scanned(_fastscan, text)) == _scan_answer(_scanned(_scan_python, text)), path


@pytest.mark.parametrize("scanner", ["c"], indirect=True)
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.binary(max_size=64)
    | st.lists(
        st.sampled_from(
            [
                b"a",
                b"<",
                b"\xc3\xa9",
                b"\xe2\x82\xac",
                b"\xf0\x9f\x98\x80",
                b"\xed\xa0\x80",
                b"\xc3",
                b"\x80",
                b"\xff",
                b"\xef\xbb\xbf",
                b"\xf4\x90\x80\x80",
                b"\xc0\xaf",
            ]
        ),
        max_size=24,
    ).map(b"".join)
)
def test_utf8_bodies_always_round_trip(scanner, body):
    # annotate_bytes skips its round-trip check for UTF-8 on the strength of this
    assert body.decode("utf-8", errors="surrogateescape").encode("utf-8", errors="surrogateescape") == body


# bytes read as they are (UTF-8, single-byte charsets) against the text decoded, annotated, encoded
def _bytes_and_text_ways(body, charset, url):
    """The new body by the C twin reading bytes, and by the Python twin on the decoded text."""
    from proxy_addon import _scan_python, rewrite

    content_type = f"text/html; charset={charset}"
    panel_data = lambda page: PanelData(page, INFO, [], 3)  # noqa: E731
    original = rewrite.scanner
    try:
        rewrite.scanner = rewrite.fast
        fast = annotate_bytes(body, content_type, url, everything, panel_data)
        rewrite.scanner = _scan_python
        python = annotate_bytes(body, content_type, url, everything, panel_data)
    finally:
        rewrite.scanner = original
    return fast, python


@pytest.mark.parametrize("scanner", ["c"], indirect=True)
@pytest.mark.parametrize("root", [PYTHON_DOC, POSTGRES_DOC])
def test_real_pages_read_as_bytes_come_out_as_their_text_does(scanner, root):
    for path in _real_pages(root, 200):
        body = open(path, "rb").read()
        (fast, fast_rewrite), (python, python_rewrite) = _bytes_and_text_ways(body, "utf-8", "http://docs.local/p")
        assert fast == python and fast_rewrite.edits == python_rewrite.edits, path


@pytest.mark.parametrize("scanner", ["c"], indirect=True)
@settings(
    max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(source=SOUP, charset=st.sampled_from(["utf-8", "cp1252", "koi8-r", "iso8859-7"]))
def test_tag_soup_read_as_bytes_comes_out_as_its_text_does(scanner, source, charset):
    body = source.encode(charset, errors="replace")
    (fast, fast_rewrite), (python, python_rewrite) = _bytes_and_text_ways(body, charset, PAGE)
    assert fast == python
    assert fast_rewrite.edits == python_rewrite.edits
    assert remove_edits(fast, fast_rewrite.edits) == body


def test_shift_jis_and_utf16_are_decoded_not_read_as_bytes():
    # a Shift_JIS character's second byte can read as an ASCII letter or backslash: such pages go the decoded way
    from proxy_addon import rewrite

    assert "shift_jis" not in rewrite._BYTES_READABLE and "utf-16-le" not in rewrite._BYTES_READABLE
    body = "<meta charset=shift_jis><a href=a>ソ</a><a href=b>表</a>".encode("shift_jis")
    new_body, done = annotate_bytes(body, None, PAGE, everything)
    assert bar_count(new_body.decode("shift_jis")) == 2
    assert remove_edits(new_body, done.edits) == body


@pytest.mark.parametrize("scanner", ["c"], indirect=True)
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    doc=st.one_of(st.text(max_size=40), st.binary(max_size=40)),
    inserts=st.lists(st.tuples(st.floats(0, 1), st.text(alphabet="ab<>\u00e9\u20ac\U0001f600", max_size=4))),
)
def test_the_splice_twins_agree(scanner, doc, inserts):
    from proxy_addon import _fastscan, _scan_python

    edits = sorted(((int(at * len(doc)), text) for at, text in inserts), key=lambda edit: edit[0])
    if isinstance(doc, bytes):  # into bytes: bytes, or ASCII text
        edits = [
            (at, text.encode() if i % 2 else text.encode().decode("ascii", "ignore"))
            for i, (at, text) in enumerate(edits)
        ]
    assert _fastscan.splice(doc, edits) == _scan_python.splice(doc, edits)


@pytest.mark.parametrize("scanner", ["c"], indirect=True)
@pytest.mark.parametrize(
    "doc, edits, error",
    [
        ("abc", [(2, "x"), (1, "y")], ValueError),  # out of order
        ("abc", [(4, "x")], ValueError),  # past the end
        ("abc", [(-1, "x")], ValueError),
        ("abc", [(1, b"x")], TypeError),  # bytes into a str
        (b"abc", [(1, "\u00e9")], TypeError),  # non-ASCII text into bytes
        (b"abc", [(1,)], TypeError),
        (b"abc", [(1, "x", 2)], TypeError),
        (b"abc", [("1", "x")], TypeError),
    ],
)
def test_the_c_splice_refuses_what_it_cannot_place(scanner, doc, edits, error):
    from proxy_addon import _fastscan

    with pytest.raises(error):
        _fastscan.splice(doc, edits)


# marks: what an href shows, kept from page to page of a directory for one version of the ranking
def _scored(urls):
    """A score per URL (from the URL itself): a bar says which target it is for."""
    return {url: LinkInfo(int(hashlib.sha1(url.encode()).hexdigest()[:6], 16) / 2**24, 50.0, 1, 1, 10) for url in urls}


def test_marks_are_shared_by_a_directory_but_not_for_hrefs_bound_to_the_page():
    tables: dict = {}
    asked = []

    def lookup(urls):
        asked.append(sorted(urls))
        return _scored(urls)

    html = "<a href='?x'>q</a><a href=''>e</a><a href='c.html'>c</a><a href='#f'>f</a><a href=' c.html'>c</a>"
    first = annotate(html, "http://s.example/d/a.html", lookup, marks=lambda key: tables.setdefault(key, {}))
    second = annotate(html, "http://s.example/d/b.html", lookup, marks=lambda key: tables.setdefault(key, {}))
    assert asked == [  # an empty href, like a fragment, is a link within the page: no bar
        ["http://s.example/d/a.html?x", "http://s.example/d/c.html"],
        ["http://s.example/d/b.html?x"],  # c.html's mark is the directory's
    ]
    assert list(tables) == ["http://s.example/d/"]
    assert sorted(tables["http://s.example/d/"]) == ["", " c.html", "#f", "c.html"]  # not "?x"
    assert first.text == annotate(html, "http://s.example/d/a.html", _scored).text
    assert second.text == annotate(html, "http://s.example/d/b.html", _scored).text
    assert first.links == second.links == 3


SHARED_MARKS: dict = {}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(source=SOUP, page=st.sampled_from(["a.html", "b.html", "", "c?q=1"]))
def test_marks_kept_from_page_to_page_change_no_page(scanner, source, page):
    url = "http://site.example/dir/" + page
    with_marks = annotate(source, url, _scored, marks=lambda key: SHARED_MARKS.setdefault(key, {}))
    assert with_marks == annotate(source, url, _scored)


def test_marks_of_a_ranking_version_are_not_used_with_the_next(tmp_path):
    from click.testing import CliRunner

    from proxy_addon.worker import rewrite_page
    from rankstore.cli import cli

    from conftest import data

    path = str(tmp_path / "s.db")
    runner = CliRunner()
    assert runner.invoke(cli, ["build", data("small.warc.gz"), "--store", path]).exit_code == 0
    assert runner.invoke(cli, ["rank", "--store", path, "-q"]).exit_code == 0
    from rankstore.store import Store

    with Store(path, readonly=True) as store:
        url = store.db.execute("SELECT url FROM pages WHERE url LIKE '%/index.html' LIMIT 1").fetchone()[0]
    body = f"<!doctype html><body><a href='{url}'>x</a>".encode()
    before = rewrite_page(path, "pagerank", 0, body, "text/html", url)
    assert rewrite_page(path, "pagerank", 0, body, "text/html", url) == before  # from the marks
    assert runner.invoke(cli, ["rank", "--store", path, "--damping", "0.5", "-q"]).exit_code == 0
    after = rewrite_page(path, "pagerank", 0, body, "text/html", url)
    score = re.compile(rb'data-pagerank="([^"]+)"')
    with Store(path, readonly=True) as store:
        expected = store.queries.lookup([url])[url]["pagerank"]
    assert score.findall(before[0]) != score.findall(after[0]) == [repr(expected).encode()]


@pytest.mark.parametrize("scanner", ["c"], indirect=True)
def test_the_c_marks_twins_answer_as_the_python_ones_and_refuse_what_they_cannot_read(scanner):
    from proxy_addon import _fastscan
    from proxy_addon._scan_python import place as _place_python

    links = [(5, "a", False), (9, "b", True), (12, "a", False), (20, "#", False), (30, "c", False)]
    table = {"a": ("A", "nA", True), "#": None, "z": ("Z", "nZ", False)}
    own = {"b": ("B", "nB", False), "c": ("C", "nC", True)}
    for nofollow_all in (False, True):
        expected = _place_python(links, table, own, nofollow_all)
        assert _fastscan.place(links, table, own, nofollow_all) == expected
    assert expected == ([(5, "nA"), (9, "nB"), (12, "nA"), (30, "nC")], 4, 3, [])
    # hrefs without a mark, in either table: given up on the edits, the hrefs named once each, in order
    unmarked = [(1, "new", False), *links, (40, "new", False), (50, "other", True)]
    for mine in (own, {}):
        expected = _place_python(unmarked, table, mine, False)
        assert _fastscan.place(unmarked, table, mine, False) == expected
    assert expected == (None, 0, 0, ["new", "b", "c", "other"])
    with pytest.raises(TypeError):
        _fastscan.place([(1, "a")], table, own, False)
    with pytest.raises(TypeError):
        _fastscan.place([(1, "q", False)], {"q": "not a mark"}, own, False)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(href=st.text(alphabet=st.sampled_from(list("ab#?/.: \t\n\x00%é\u00ad")), max_size=10))
def test_an_href_resolves_as_it_does_without_the_fragment_cut_before(scanner, href):
    from proxy_addon.rewrite import _without_fragment
    from rankstore.urls import canonical

    assert canonical(_without_fragment(href), PAGE) == canonical(href, PAGE)
