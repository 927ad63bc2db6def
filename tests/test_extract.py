"""Extraction: title, link set, nofollow, <base href>, anchor text, charsets, hostile input."""

import multiprocessing
import os

import pytest
from bs4.dammit import EncodingDetector
from lxml import etree

from rankstore.extract import MAX_ANCHOR, decode_html, extract, sniff_charset
from rankstore.urls import canonical

from conftest import POSTGRES_DOC, PYTHON_DOC

URL = "http://site.example/dir/page.html"
pytestmark = pytest.mark.usefixtures("extractor")  # every test on both readings: the tokens', the tree's


def links_of(page):
    return {link.url: link.nofollow for link in page.links}


def test_title_links_anchor_text_and_set_semantics():
    page = extract(
        b"<html><head><title> The  <b>title</b>\n</title></head><body>"
        b"<a href='a.html'>First <i>anchor</i></a> <a href='a.html#x'>again</a>"
        b"<a href='/b.html'></a><a href='/b.html'>late text</a>"
        b"<a href='#top'>in-page</a><a href=''>empty</a><a>no href</a>"
        b"<a href='mailto:x@y'>mail</a><a href='javascript:void(0)'>js</a>"
        b"<map><area href='c.html' alt='Area alt'></map></body></html>",
        URL,
    )
    assert page.title == "The <b>title</b>"  # <title> is text only (RCDATA)
    assert links_of(page) == {
        "http://site.example/dir/a.html": False,
        "http://site.example/b.html": False,
        "http://site.example/dir/c.html": False,
    }
    anchors = {link.url: link.anchor_text for link in page.links}
    assert anchors["http://site.example/dir/a.html"] == "First anchor"
    assert anchors["http://site.example/b.html"] == "late text"
    assert anchors["http://site.example/dir/c.html"] == "Area alt"


@pytest.mark.parametrize("rel", ["nofollow", "NoFollow", "ugc", "sponsored", "noopener nofollow"])
def test_rel_values_that_cast_no_vote(rel):
    page = extract(f"<a rel='{rel}' href='x.html'>x</a><a rel='noopener' href='y.html'>y</a>".encode(), URL)
    assert links_of(page) == {"http://site.example/dir/x.html": True, "http://site.example/dir/y.html": False}


def test_a_target_followed_once_is_followed():
    page = extract(b"<a rel=nofollow href=x.html>1</a><a href=x.html>2</a>", URL)
    assert links_of(page) == {"http://site.example/dir/x.html": False}


@pytest.mark.parametrize("content", ["nofollow", "noindex, nofollow", "NONE", "noindex,NOFOLLOW"])
def test_meta_robots_nofollow_marks_every_link(content):
    page = extract(f"<meta name='robots' content='{content}'><a href='x.html'>x</a>".encode(), URL)
    assert links_of(page) == {"http://site.example/dir/x.html": True}


def test_meta_robots_noindex_alone_keeps_votes():
    page = extract(b"<meta name='robots' content='noindex'><a href='x.html'>x</a>", URL)
    assert links_of(page) == {"http://site.example/dir/x.html": False}


def test_base_href_applies_to_every_link_and_canonical():
    page = extract(
        b"<head><link rel=canonical href='canon.html'><base href='https://mirror.example/root/'></head>"
        b"<a href='p.html'>p</a><a href='/abs'>abs</a><a href='https://x.example/'>x</a>",
        URL,
    )
    assert set(links_of(page)) == {
        "https://mirror.example/root/p.html",
        "https://mirror.example/abs",
        "https://x.example/",
    }
    assert page.canonical_url == "https://mirror.example/root/canon.html"


def test_relative_base_href_resolves_against_the_page():
    page = extract(b"<base href='../other/'><a href='p.html'>p</a>", URL)
    assert set(links_of(page)) == {"http://site.example/other/p.html"}


def test_links_inside_script_style_comments_and_textarea_are_not_links():
    page = extract(
        b"<script>document.write('<a href=\"s.html\">s</a>')</script><style>a[href='t.html']{}</style>"
        b"<!-- <a href='c.html'>c</a> --><textarea><a href='ta.html'>t</a></textarea>"
        b"<noscript><a href='ns.html'>ns</a></noscript><a href='real.html'>real</a>",
        URL,
    )
    # <noscript> content is markup when scripting is off, which is how a crawler sees it.
    assert set(links_of(page)) <= {"http://site.example/dir/real.html", "http://site.example/dir/ns.html"}
    assert "http://site.example/dir/real.html" in links_of(page)


def test_svg_and_mathml_links_and_titles_are_not_the_pages_but_integration_points_are_html():
    page = extract(
        b"<svg><title>icon</title><a href='svg.html'>s</a><foreignObject><a href='fo.html'>f</a></foreignObject>"
        b"</svg><math><a href='math.html'></a><mi><a href='mi.html'>m</a></mi></math>"
        b"<title>Page</title><a href='html.html'>h</a>",
        URL,
    )
    assert page.title == "Page"
    assert set(links_of(page)) == {f"http://site.example/dir/{name}.html" for name in ("fo", "mi", "html")}


def test_href_character_references_read_as_the_standard_does():
    page = extract(b'<a href="/p?id=1&section=2&amp;x=&copy;">x</a>', URL)
    assert set(links_of(page)) == {"http://site.example/p?id=1&section=2&x=%C2%A9"}


def test_charset_from_header_meta_bom_and_fallback():
    latin = "<title>Café</title><a href='é.html'>é</a>".encode("latin-1")
    assert extract(latin, URL, "text/html; charset=ISO-8859-1").title == "Café"
    assert extract(b"<meta charset='windows-1252'>" + latin, URL).title == "Café"
    assert (
        extract(b'<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">' + latin, URL).title
        == "Café"
    )
    assert extract(latin, URL).title == "Café"  # not UTF-8: windows-1252 fallback
    assert extract(b"\xef\xbb\xbf<title>\xc3\xa9t\xc3\xa9</title>", URL).title == "été"
    utf16 = "\ufeff<title>été</title>".encode("utf-16-le")
    assert extract(utf16, URL).title == "été"
    # a header that lies (says UTF-8 for Latin-1 bytes) gives replacement characters, never an error
    assert extract(latin, URL, "text/html; charset=utf-8").title == "Caf\ufffd"
    assert extract(b"<title>x</title>", URL, "text/html; charset=no-such-charset").title == "x"
    assert sniff_charset(b"abc", "text/html; charset=latin1") == ("cp1252", 0)


def test_non_ascii_href_is_utf8_encoded_whatever_the_page_charset():
    page = extract("<a href='café.html'>x</a>".encode("latin-1"), URL, "text/html; charset=iso-8859-1")
    assert set(links_of(page)) == {"http://site.example/dir/caf%C3%A9.html"}


def test_decode_never_fails():
    text, name = decode_html(bytes(range(256)) * 10)
    assert isinstance(text, str) and name == "cp1252"


def test_deep_nesting_does_not_crash():
    body = b"<div>" * 10000 + b"<a href='deep.html'>deep</a>" + b"</div>" * 10000
    assert set(links_of(extract(body, URL))) == {"http://site.example/dir/deep.html"}


def test_huge_single_line_page():
    body = (
        b"<title>big</title>" + b"<a href='x%d.html'>link</a>" * 1 + b"<span>" + b"x" * (20 * 1024 * 1024) + b"</span>"
    )
    page = extract(body, URL)
    assert page.title == "big" and len(page.links) == 1


def test_long_anchor_text_is_cut():
    page = extract(b"<a href='x.html'>" + b"word " * 1000 + b"</a>", URL)
    assert len(page.links[0].anchor_text) == MAX_ANCHOR


def test_nul_bytes_do_not_truncate():
    page = extract(b"<title>a\x00b</title><a href='x.html'>x</a>", URL)
    assert page.title == "a\ufffdb" and len(page.links) == 1


# ---------------------------------------------------------------- oracle

NO_VOTE = {"nofollow", "ugc", "sponsored"}


def _lxml_tree(body: bytes):
    """The page as libxml2's HTML parser reads it, in the first encoding beautifulsoup4's detector offers that
    decodes (the tree beautifulsoup4 + lxml built, without its Python objects: most of the comparison's time)."""
    for encoding in EncodingDetector(body, is_html=True).encodings:
        try:
            return etree.fromstring(body, etree.HTMLParser(recover=True, strip_cdata=False, encoding=encoding))
        except (UnicodeDecodeError, LookupError, etree.ParserError):
            continue
    return None


def oracle(body: bytes, url: str):
    """The same contract written independently with lxml (libxml2's parser, not lexbor)."""
    root = _lxml_tree(body)
    if root is None:
        return None, {}
    base_tag = next((tag for tag in root.iter("base") if tag.get("href") is not None), None)
    base = (canonical(base_tag.get("href"), url) or url) if base_tag is not None else url
    page_nofollow = any(
        "nofollow" in (meta.get("content") or "").lower()
        for meta in root.iter("meta")
        if (meta.get("name") or "").strip().lower() == "robots"
    )
    links = {}
    for tag in root.iter("a", "area"):
        href = tag.get("href")
        if not href or href.strip().startswith("#"):
            continue
        target = canonical(href, base)
        if target is None:
            continue
        rel = (tag.get("rel") or "").split()
        nofollow = page_nofollow or bool(NO_VOTE & {r.lower() for r in rel})
        links[target] = links.get(target, True) and nofollow
    title_tag = next(root.iter("title"), None)
    title = title_tag.xpath("string()") if title_tag is not None else None
    return (" ".join(title.split()) or None) if title else None, links


def _pages(root):
    for folder, _, files in os.walk(root):
        for name in sorted(files):
            if name.endswith(".html"):
                yield os.path.join(folder, name)


def _compare(args):
    path, url = args
    body = open(path, "rb").read()
    ours = extract(body, url)
    title, expected = oracle(body, url)
    if links_of(ours) != expected or ours.title != title:
        return path, sorted(set(links_of(ours)) ^ set(expected))[:5], ours.title, title
    return len(expected)


@pytest.mark.parametrize("root, site", [(PYTHON_DOC, "http://python.local/"), (POSTGRES_DOC, "http://postgres.local/")])
def test_same_links_as_lxml_on_every_page(root, site):
    assert os.path.isdir(root), f"{root} missing: run tools/setup.sh"
    jobs = [(path, site + os.path.relpath(path, root)) for path in _pages(root)]
    assert len(jobs) > 500
    with multiprocessing.get_context("fork").Pool(os.cpu_count()) as pool:
        results = pool.map(_compare, jobs, chunksize=8)
    mismatches = [result for result in results if not isinstance(result, int)]
    assert not mismatches, mismatches[:3]
    assert sum(result for result in results if isinstance(result, int)) > 10_000
