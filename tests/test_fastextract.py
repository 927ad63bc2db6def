"""The tokenizer that reads a page in place of lexbor's tree (``rankstore._fastextract``), held to the tree.

``extract`` reads a page's links with the C tokenizer where it can tell that no tree-construction rule moves
or closes an element holding a link, and with lexbor's tree otherwise.  Every page here is read both ways: where
the tokenizer answers, its page (title, canonical URL, each link's target, nofollow, anchor text) is the tree's,
exactly.  The pages: the doc sites on disk, every document of html5lib-tests (tree construction and tokenizer),
and generated ones made of what the rules care about.  Each set must also be mostly read by the tokenizer, so
that the comparisons are not empty.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_html5lib_suite import FILES, _documents

from rankstore import extract as extraction

from conftest import POSTGRES_DOC, PYTHON_DOC

RUST_DOC = "/usr/share/doc/rust-doc/html"
PAGE = "http://site.example/dir/page.html"


@pytest.fixture(autouse=True)
def built():
    assert extraction._fastextract is not None, "rankstore._fastextract did not build (is a C compiler installed?)"


def _page(page: extraction.Page) -> tuple:
    return (
        page.title,
        page.canonical_url,
        [(link.url, link.nofollow, link.anchor_text, link.weight) for link in page.links],
    )


def _both(body: bytes, url: str) -> tuple[bool, tuple, tuple]:
    """Whether the tokenizer reads the page, and the page as extract reads it with it, and with the tree."""
    fast = extraction._fastextract
    read = fast.read(body) is not None
    tokens = _page(extraction.extract(body, url))
    try:
        extraction._fastextract = None
        tree = _page(extraction.extract(body, url))
    finally:
        extraction._fastextract = fast
    return read, tokens, tree


def _compare(job: tuple[str, str]) -> tuple[str, bool, bool]:
    path, url = job
    with open(path, "rb") as file:
        read, tokens, tree = _both(file.read(), url)
    return path, read, tokens == tree


def _site(root: str, most: int | None = None) -> list[tuple[str, str]]:
    assert os.path.isdir(root), f"{root} missing: run tools/setup.sh"
    paths = sorted(
        os.path.join(folder, name)
        for folder, _, names in os.walk(root, followlinks=True)
        for name in names
        if name.endswith(".html")
    )
    if most is not None and len(paths) > most:
        paths = sorted(random.Random(0).sample(paths, most))
    return [(path, "http://docs.example/" + os.path.relpath(path, root)) for path in paths]


@pytest.mark.parametrize("root, most", [(PYTHON_DOC, None), (POSTGRES_DOC, None), (RUST_DOC, 4000)])
def test_every_doc_page_the_tokens_read_is_the_trees(root, most):
    jobs = _site(root, most)
    assert len(jobs) > 500
    with multiprocessing.get_context("fork").Pool(os.cpu_count()) as pool:
        results = pool.map(_compare, jobs, chunksize=32)
    differ = [path for path, _, same in results if not same]
    assert not differ, differ[:5]
    read = sum(1 for _, was_read, _ in results if was_read)
    assert read >= 0.97 * len(results)  # the doc sites are the tokenizer's to read, nearly all


_A_START = re.compile(r"<a(?=[\t\n\f\r />])", re.IGNORECASE)


def _with_hrefs(document: str) -> str:
    """The document with an href first in each <a> start tag (html5lib's cases seldom give one): each <a>
    a link of its own, to be read wherever the tree puts it."""
    counter = iter(range(1 << 30))
    return _A_START.sub(lambda _: f'<a href="/h{next(counter)}"', document)


def test_every_html5lib_document_the_tokens_read_is_the_trees():
    read = links = 0
    differ = []
    for path in FILES:
        for index, document in enumerate(_documents(path)):
            for variant in {document, _with_hrefs(document)}:
                body = variant.encode("utf-8", "surrogatepass")
                was_read, tokens, tree = _both(body, PAGE)
                read += was_read
                links += len(tree[2]) if was_read else 0
                if tokens != tree:
                    differ.append((os.path.basename(path), index, variant[:80]))
    assert not differ, differ[:5]
    assert read > 5000 and links > 300  # most are read; of the 434 links their trees hold, most


# What the rules care about, as fragments to put together: links and what holds them, blocks that close
# a <p>, tables and their cells, select, SVG, comments, doctypes, raw text, titles, bases, robots,
# canonical links, character references and line breaks.
FRAGMENTS = [
    "<a href='/x'>",
    "<a href=y rel=nofollow>",
    "<a href='#top'>",
    "<a>",
    "</a>",
    "<A HREF=&quot;q&amp;r&copy=1>",
    "<area href=/m alt='map &amp; m'>",
    "<p>",
    "</p>",
    "<div>",
    "</div>",
    "<span>",
    "</span>",
    "<b>",
    "</b>",
    "<h2>",
    "</h2>",
    "<ul>",
    "<li>",
    "</li>",
    "</ul>",
    "<table>",
    "<tr>",
    "<td>",
    "</td>",
    "</table>",
    "<caption>",
    "<select>",
    "<option>",
    "</select>",
    "<button>",
    "</button>",
    "<svg><path d=M0/></svg>",
    "<svg><a href=/s>s</a></svg>",
    "<math><mi>",
    "<template>",
    "</template>",
    "<!-- c -->",
    "<!DOCTYPE html>",
    "</>",
    "<?pi?>",
    "<script>x<a href=/no></script>",
    "<style>a{}</style>",
    "<textarea><a href=/t></textarea>",
    "<noscript><a href=/n>n</a></noscript>",
    "<title>T &amp; t</title>",
    "<title></title>",
    "<base href=/b/>",
    "<base href>",
    "<meta name=robots content=nofollow>",
    "<meta name=ROBOTS content=index>",
    "<link rel=canonical href=/c>",
    "<link rel=canonical href>",
    "<br>",
    "<img src=i alt=i>",
    "<hr>",
    "<plaintext>",
    "text ",
    "a &amp b &lt; ",
    "\r\n",
    "\u00e9",
    "<",
    "&",
    "&#13;",
    "&#6;",
    "&#x80;",
    "&#0;",
    "&#xD800;",
    "<nav>",
    "</nav>",
    "<ol>",
    "</ol>",
    "<dl><dt>",
    "<dd>",
    "</dl>",
    "<h1>",
    "</h1>",
    "<pre>\n",
    "</pre>",
    "<object>",
    "</object>",
    "<form>",
    "</form>",
    "<input>",
    "<font color=red>",
    "</font>",
    "<nobr>",
    "<label>",
    "</label>",
    "<svg><g>",
    "</g></svg>",
    "<iframe><a href=/i></iframe>",
    "<image>",
]


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=24))
def test_every_generated_page_the_tokens_read_is_the_trees(fragments):
    body = "".join(fragments).encode()
    _, tokens, tree = _both(body, PAGE)
    assert tokens == tree


@settings(max_examples=500, deadline=None)
@given(
    st.binary(max_size=400) | st.text(alphabet=st.sampled_from("<>/=!-?'\" \tabrefhtilpdvsgm&;#x0\u00e9"), max_size=300)
)
def test_any_bytes_are_read_as_the_tree_reads_them_or_left_to_it(data):
    body = data if isinstance(data, bytes) else data.encode()
    _, tokens, tree = _both(body, PAGE)
    assert tokens == tree


@pytest.mark.parametrize(
    "document",
    [
        "<a href=x>one<b>two</a>three</b>",  # misnested: the adoption agency splits the link
        "<p><a href=x>one<div>two</div></a>",  # the <div> closes the <p>, and the link with it
        "<table><a href=x>one</a><tr><td>cell</td></tr></table>",  # foster parented
        "<select><a href=x>one</a></select>",  # dropped
        "<template><a href=x>one</a></template>",
        "<math><mi><a href=x>one</a></mi></math>",
        "<svg><foreignObject><a href=x>one</a></foreignObject></svg>",
        "<a href=x>one\x00two</a>",
        "<a href=x>one<!DOCTYPE html>two</a>",
        "<a href=x>one</>two</a>",
        "<a href=x><li>one</a>",
        # foster parented: put before the table, ahead of what the cell holds (found by a review's fuzzer)
        "<table><caption><title>T</title><tfoot><title><",
        "<table><tr><td><base href=/a/></td><base href=/b/><a href=x>x</a>",
        "<table><caption><link rel=canonical href=/a></caption><link rel=canonical href=/b></table>",
        # a </button> that ends no button: the </p> inside the <object> closes none, the outer <p> is open
        "<p><object></button></p></object><a href=x>foo<div>bar</div></a>",
        "<p><applet></marquee></p></applet><a href=x>foo<hr>bar</a>",
    ],
)
def test_what_a_tree_may_move_or_close_is_left_to_the_tree(document):
    body = document.encode()
    assert extraction._fastextract.read(body) is None
    _, tokens, tree = _both(body, PAGE)
    assert tokens == tree


@pytest.mark.parametrize(
    "document",
    [
        "<link rel=canonical href=>",  # "=" and no value: lexbor holds none, as for <base href>
        "<base href=><base href=/x/><a href=a>a</a>",
        "<base href= \n><base href=/x/><a href=a>a</a>",
        "<a href=>x</a><a href=''>y</a><a href=z>z</a>",
    ],
)
def test_an_attribute_with_an_equals_sign_and_no_value_is_read_as_the_tree_reads_it(document):
    body = document.encode()
    read, tokens, tree = _both(body, PAGE)
    assert read and tokens == tree


def test_a_value_not_in_utf8_is_left_to_the_tree():
    body = b"<a href='/caf\xe9'>caf\xe9</a>"
    assert extraction._fastextract.read(body) is None
    _, tokens, tree = _both(body, PAGE)
    assert tokens == tree


@pytest.mark.parametrize(
    "document, expected",
    [
        (
            "<div><a class=logo href='../std/index.html'><div class=logo-container><img src=l.svg></div></a></div>",
            [("http://site.example/std/index.html", False, "")],
        ),
        (
            "<p>x</p><a href=y rel='ugc'>A <b>bold</b>&amp;<!-- c -->more</a><a href=y>second</a>",
            [("http://site.example/dir/y", False, "A bold & more")],
        ),
        (
            "<table><tr><td><a href='/t?a=1&copy=2'>cell</a></td></tr></table><area href=/m alt='m &amp; m'>",
            [("http://site.example/t?a=1&copy=2", False, "cell"), ("http://site.example/m", False, "m & m")],
        ),
    ],
)
def test_pages_the_tokens_read_as_the_tree_does(document, expected):
    body = document.encode()
    assert extraction._fastextract.read(body) is not None
    read, tokens, tree = _both(body, PAGE)
    assert read and tokens == tree
    assert [(url, nofollow, anchor) for url, nofollow, anchor, _ in tokens[2]] == expected


def test_the_position_weights_read_the_tree():
    """Weights by where a link stands need the tree's regions: that reading never takes the tokens."""
    body = b"<nav><a href=/n>n</a></nav><main><a href=/m>m</a></main>"
    fast = extraction._fastextract
    try:
        extraction._fastextract = None
        tree = _page(extraction.extract(body, PAGE, weights=extraction.LinkWeights.POSITION))
    finally:
        extraction._fastextract = fast
    assert _page(extraction.extract(body, PAGE, weights=extraction.LinkWeights.POSITION)) == tree


@pytest.mark.parametrize("spelled", ["&#{n};", "&#x{n:x};", "&#{n}", "&#X{n:X}"])
def test_numeric_references_read_as_the_tree_reads_them(spelled):
    """The standard's table, as lexbor reads it: a control character kept (html.unescape drops it), NUL, a
    surrogate or a number past U+10FFFF read as U+FFFD, 0x80-0x9F as windows-1252's characters."""
    from selectolax.lexbor import LexborHTMLParser

    from rankstore.charrefs import decode_attribute

    numbers = [*range(0, 0x300), *range(0xD7F0, 0xE010), *range(0xFDC0, 0xFE00), 0xFFFE, 0x10FFFF, 0x110000, 10**30]
    for number in numbers:
        reference = spelled.format(n=number)
        tree = LexborHTMLParser(f"<title>a{reference}b</title><a href='a{reference}b'>")
        assert extraction._text(f"a{reference}b") == tree.css_first("title").text(deep=True), reference
        assert decode_attribute(f"a{reference}b") == tree.css_first("a").attributes["href"], reference
