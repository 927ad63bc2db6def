"""The peer suite: html5lib-tests' documents through the rewriter and the extractor, html5lib as the judge.

For each document (tree-construction ``#data`` and tokenizer ``input``, run as whole
documents): html5lib's tree of our output, with our own elements taken out, is its
tree of the input; every HTML ``<a href>``/``<area href>`` html5lib builds outside
templates has exactly one bar, for its own target (a copy html5lib makes of an
``<a>`` when it reopens formatting elements carries its attributes, not the bar);
every bar and the panel are HTML elements outside SVG, MathML and templates.  The
extractor stores the links and the title html5lib finds.  Cases that do not hold
are listed, each with its reason, in tests/data/html5lib-expected-failures.txt;
a listed case that passes fails the test too, so the list stays true.
"""

from __future__ import annotations

import functools
import glob
import json
import os
import re

import html5lib
import pytest

from proxy_addon import _scan_python, rewrite
from proxy_addon.markup import LinkInfo, PanelData
from proxy_addon.rewrite import annotate
from rankstore.extract import sniff_charset
from rankstore.urls import canonical

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITE = os.path.join(ROOT, "tests", "data", "html5lib-tests")
EXPECTED = os.path.join(ROOT, "tests", "data", "html5lib-expected-failures.txt")
PAGE = "http://site.example/dir/page.html"
HTML = "{http://www.w3.org/1999/xhtml}"
OURS = ("data-pagerank-bar", "data-pagerank-panel")  # the attributes of our host elements


def _tree_construction(path: str) -> list[str]:
    documents, lines, reading = [], [], False
    with open(path, encoding="utf-8") as file:
        text = file.read()
    for line in text.split("\n"):
        if line == "#data":
            reading, lines = True, []
        elif reading and line.startswith("#"):
            documents.append("\n".join(lines))
            reading = False
        elif reading:
            lines.append(line)
    return documents


def _tokenizer(path: str) -> list[str]:
    documents = []
    with open(path, encoding="utf-8") as file:
        tests = json.load(file).get("tests", [])
    for test in tests:
        text = test["input"]
        if test.get("doubleEscaped"):
            text = re.sub(r"\\u([0-9A-Fa-f]{4})", lambda m: chr(int(m.group(1), 16)), text)
        documents.append(text)
    return documents


FILES = sorted(
    glob.glob(os.path.join(SUITE, "tree-construction", "*.dat")) + glob.glob(os.path.join(SUITE, "tokenizer", "*.test"))
)


def _documents(path: str) -> list[str]:
    return _tree_construction(path) if path.endswith(".dat") else _tokenizer(path)


def _case_id(path: str, index: int) -> str:
    return f"{os.path.relpath(path, SUITE)}#{index}"


def _expected_failures() -> dict[str, str]:
    listed = {}
    with open(EXPECTED, encoding="utf-8") as file:
        lines = file.read().splitlines()
    for line in lines:
        line = line.strip()
        if line and not line.startswith("#"):
            case, _, reason = line.partition(" ")
            listed[case] = reason.strip()
    return listed


def _parse(text: str):
    # scripting on, as browsers run it (noscript is raw text, as the rewriter reads it)
    return html5lib.parse(text, treebuilder="etree", namespaceHTMLElements=True, scripting=True)


@functools.cache
def _input_tree(source: str) -> list:
    """html5lib's tree of an input, as nested lists: parsed once for both scanners and the extractor."""
    return _dump(_parse(source))


def _local(tag) -> tuple[str, str]:
    if not isinstance(tag, str):
        return "", ""  # comment, processing instruction
    if tag.startswith("{"):
        namespace, _, name = tag[1:].partition("}")
        return namespace, name
    return "", tag


def _is_ours(element) -> bool:
    name = _local(element.tag)[1]
    if name in ("span", "aside") and any(element.get(attribute) is not None for attribute in OURS):
        return True
    return name == "style" and element.get("id") == "pagerank-proxy-style"


def _is_bar(element) -> bool:
    return _local(element.tag)[1] == "span" and element.get("data-pagerank-bar") is not None


def _bar_value(bar) -> str | None:
    """The score a bar shows: on the drawing in its shadow root's template."""
    return next((e.get("data-pagerank") for e in bar.iter() if e.get("data-pagerank") is not None), None)


def _without_ours(element) -> None:
    """Take our elements out, joining the text around each as a parser would have made it."""
    children = list(element)
    for index, child in enumerate(children):
        if _is_ours(child):
            tail = child.tail or ""
            previous = None
            for before in reversed(children[:index]):
                if before in element:
                    previous = before
                    break
            if previous is None:
                element.text = (element.text or "") + tail
            else:
                previous.tail = (previous.tail or "") + tail
            element.remove(child)
        else:
            _without_ours(child)


def _dump(element) -> list:
    return [
        element.tag if isinstance(element.tag, str) else "#comment",
        sorted(element.attrib.items()),
        element.text or "",
        element.tail or "",
        [_dump(child) for child in element],
    ]


def _problems(source: str) -> list[str]:
    """What does not hold for one document (empty when all does)."""
    values: dict[str, str] = {}

    def lookup(urls):
        found = {}
        for url in urls:  # a score per target, so that each bar says which target it is for
            value = repr(float(f"{len(values) + 1}e-7"))
            values.setdefault(value, url)
            found[url] = LinkInfo(float(value), 50.0, 1, 1, 1)
        return found

    out = annotate(source, PAGE, lookup, lambda url: PanelData(url, LinkInfo(None), [], 0))
    problems = []
    if rewrite.remove_edits(out.text, out.edits) != source:
        problems.append("original text not kept")
    return problems + list(_output_problems(out.text, tuple(values.items()), source))


@functools.cache
def _output_problems(text: str, bars: tuple[tuple[str, str], ...], source: str) -> tuple[str, ...]:
    """What does not hold for the rewriter's output ``text`` of ``source``, its bars' values naming their targets
    (``bars``): once per output, for both scanners (html5lib's parse is most of the time)."""
    values = dict(bars)
    problems = []
    tree = _parse(text)
    parents = {child: parent for parent in tree.iter() for child in parent}

    def inside(element, names) -> bool:
        while element in parents:
            element = parents[element]
            namespace, name = _local(element.tag)
            if name == "template" or (name in names and namespace != HTML[1:-1]):
                return True
        return False

    def in_ours(element) -> bool:  # in a shadow root of ours: the panel's own links and bars
        while element in parents:
            element = parents[element]
            if _is_ours(element):
                return True
        return False

    barred = []  # attribute sets of links with their bar: a copy of one of them needs none
    for element in tree.iter():
        namespace, name = _local(element.tag)
        html = namespace == HTML[1:-1]
        # an HTML element under SVG/MathML is one only through an integration point: it renders
        ours = "a bar" if _is_bar(element) else "the panel" if element.get("data-pagerank-panel") is not None else None
        if in_ours(element):
            continue
        if ours and (not html or inside(element, ())):
            problems.append(f"{ours} outside HTML content")
        if not html or name not in ("a", "area") or element.get("href") is None or inside(element, ()):  # in a template
            continue
        href = element.get("href")
        target = None if href.lstrip()[:1] in ("", "#") else canonical(href, PAGE)
        if name == "a":  # its bar, not the one of an <area> inside it
            children = list(element)
            bars = [
                child
                for index, child in enumerate(children)
                if _is_bar(child)
                and not (index and _local(children[index - 1].tag)[1] == "area" and not children[index - 1].tail)
            ]
        else:
            siblings = list(parents[element])
            following = siblings[siblings.index(element) + 1 :][:1]
            bars = [bar for bar in following if _is_bar(bar) and not element.tail]
        if target is None:
            if bars:
                problems.append(f"a bar for {href!r}, which has no target")
            continue
        attributes = sorted(element.attrib.items())
        if not bars and name == "a" and attributes in barred:
            continue  # a copy made by the tree builder
        if len(bars) != 1:
            problems.append(f"{len(bars)} bars for <{name} href={href!r}>")
            continue
        barred.append(attributes)
        if values.get(_bar_value(bars[0])) != target:
            problems.append(f"the bar for {href!r} is for {values.get(_bar_value(bars[0]))!r}")
    _without_ours(tree)
    if _dump(tree) != _input_tree(source):
        problems.append("html5lib's tree differs once our elements are taken out")
    return tuple(problems)


def _extractor_problems(source: str) -> list[str]:
    from rankstore.extract import extract

    tree = _parse(source)
    parents = {child: parent for parent in tree.iter() for child in parent}

    def in_template(element) -> bool:
        while element in parents:
            element = parents[element]
            if _local(element.tag)[1] == "template":
                return True
        return False

    base = next(
        (e.get("href") for e in tree.iter(f"{HTML}base") if e.get("href") is not None and not in_template(e)), None
    )
    base_url = (canonical(base, PAGE) or PAGE) if base is not None else PAGE
    links = set()
    for element in tree.iter():
        namespace, name = _local(element.tag)
        if (
            namespace == HTML[1:-1]
            and name in ("a", "area")
            and element.get("href") is not None
            and not in_template(element)
        ):
            href = element.get("href")
            if href and not href.lstrip().startswith("#"):
                target = canonical(href, base_url)
                if target:
                    links.add(target)
    title = next(
        (" ".join("".join(e.itertext()).split()) or None for e in tree.iter(f"{HTML}title") if not in_template(e)), None
    )
    page = extract(source.encode("utf-8", errors="surrogatepass"), PAGE, "text/html; charset=utf-8")
    problems = []
    found = {link.url for link in page.links}
    if found != links:
        problems.append(f"extract links: extra {sorted(found - links)}, missing {sorted(links - found)}")
    if (page.title or None) != (title[:500] if title else None):
        problems.append(f"extract title {page.title!r}, html5lib {title!r}")
    return problems


@pytest.mark.parametrize("path", FILES, ids=lambda path: os.path.relpath(path, SUITE))
def test_rewriter_output_parses_as_the_input_with_one_bar_per_link(path, scanner):
    listed = _expected_failures()
    unexpected, fixed = [], []
    for index, source in enumerate(_documents(path)):
        case = _case_id(path, index)
        problems = _problems(source)
        if problems and f"rewrite:{case}" not in listed:
            unexpected.append(f"{case} {source!r}: {problems}")
        elif not problems and f"rewrite:{case}" in listed:
            fixed.append(case)
    assert not unexpected, "\n".join(unexpected)
    assert not fixed, f"listed as failing, but pass: {fixed}"


@pytest.mark.parametrize("path", FILES, ids=lambda path: os.path.relpath(path, SUITE))
def test_extractor_finds_the_links_and_title_html5lib_finds(path):
    listed = _expected_failures()
    unexpected, fixed = [], []
    for index, source in enumerate(_documents(path)):
        case = _case_id(path, index)
        problems = _extractor_problems(source)
        if problems and f"extract:{case}" not in listed:
            unexpected.append(f"{case} {source!r}: {problems}")
        elif not problems and f"extract:{case}" in listed:
            fixed.append(case)
    assert not unexpected, "\n".join(unexpected)
    assert not fixed, f"listed as failing, but pass: {fixed}"


@pytest.mark.parametrize("path", FILES, ids=lambda path: os.path.relpath(path, SUITE))
def test_the_scanners_answer_alike_on_every_document(path):
    from proxy_addon import _fastscan

    for index, source in enumerate(_documents(path)):
        fast = rewrite._scan_of(_fastscan.scan(source), source)
        python = rewrite._scan_of(_scan_python.scan(source), source)
        assert fast == python, (_case_id(path, index), source)


@pytest.mark.parametrize("scanner", ["c"], indirect=True)
@pytest.mark.parametrize("charset", ["utf-8", "cp1252"])
@pytest.mark.parametrize("path", FILES, ids=lambda path: os.path.relpath(path, SUITE))
def test_bytes_read_as_they_are_give_the_page_their_text_gives(path, charset, scanner):
    """UTF-8 and single-byte bodies are scanned and spliced as bytes by the C twin: the same new body, byte
    for byte, as the text decoded, annotated and encoded again (and the same edits, in bytes)."""

    def lookup(urls):
        return {url: LinkInfo(0.25, 50.0, 5, 3, 20) for url in urls if "x" in url}

    def panel_data(url):
        return PanelData(url, LinkInfo(None), [], 0)

    content_type = f"text/html; charset={charset}"
    for index, source in enumerate(_documents(path)):
        try:
            body = source.encode(charset)
        except UnicodeEncodeError:
            continue
        new_body, done = rewrite.annotate_bytes(body, content_type, PAGE, lookup, panel_data)
        _, skip = sniff_charset(body, content_type)  # a byte-order mark stays where it is
        text = body[skip:].decode(charset, errors="surrogateescape")
        expected = annotate(text, PAGE, lookup, panel_data)
        case = (_case_id(path, index), source)
        assert new_body == body[:skip] + expected.text.encode(charset, errors="surrogateescape"), case
        assert done.edits == rewrite._edits_in_bytes(text, expected.edits, charset, skip), case
        assert (done.links, done.ranked) == (expected.links, expected.ranked)
