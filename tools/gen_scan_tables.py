#!/usr/bin/env python3
"""Write the rewriter's tokenizer tables for both scanners from the one source below.

    python tools/gen_scan_tables.py          # rewrite proxy_addon/scan_tables.py and proxy_addon/_scan_tables.h
    python tools/gen_scan_tables.py --check  # exit 1 when either file is not what this would write

The Python scanner (proxy_addon/_scan_python.py) and its C twin (proxy_addon/_fastscan.c)
decide the same things from the same names: which elements switch the tokenizer to
RCDATA, RAWTEXT, script data or PLAINTEXT, which start tags break out of SVG/MathML,
which foreign elements are integration points.  Kept in one place so that the twins
cannot drift; tests/test_rewrite.py runs --check.  Names are from the HTML standard
(https://html.spec.whatwg.org/multipage/parsing.html).
"""

from __future__ import annotations

import html.entities
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON_OUT = os.path.join(ROOT, "proxy_addon", "scan_tables.py")
C_OUT = os.path.join(ROOT, "proxy_addon", "_scan_tables.h")

# The tokenizer state the tree builder switches to after each of these start tags
# (in HTML content; a foreign element of the same name never switches it).
# noscript is RAWTEXT because browsers run scripts.
CONTENT_MODELS = ("DATA", "RCDATA", "RAWTEXT", "SCRIPT_DATA", "PLAINTEXT")
TEXT_ELEMENTS = {
    "title": "RCDATA",
    "textarea": "RCDATA",
    "style": "RAWTEXT",
    "xmp": "RAWTEXT",
    "iframe": "RAWTEXT",
    "noembed": "RAWTEXT",
    "noframes": "RAWTEXT",
    "noscript": "RAWTEXT",
    "script": "SCRIPT_DATA",
    "plaintext": "PLAINTEXT",
}
# Start tags that end foreign content ("in foreign content", the breakout list).
BREAKOUT = (
    "b",
    "big",
    "blockquote",
    "body",
    "br",
    "center",
    "code",
    "dd",
    "div",
    "dl",
    "dt",
    "em",
    "embed",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "hr",
    "i",
    "img",
    "li",
    "listing",
    "menu",
    "meta",
    "nobr",
    "ol",
    "p",
    "pre",
    "ruby",
    "s",
    "small",
    "span",
    "strong",
    "strike",
    "sub",
    "sup",
    "table",
    "tt",
    "u",
    "ul",
    "var",
)
FONT_BREAKOUT_ATTRIBUTES = ("color", "face", "size")  # <font> with any of these breaks out too
END_TAG_BREAKOUT = ("br", "p")  # end tags that break out
SVG_HTML_INTEGRATION = ("foreignobject", "desc", "title")
MATHML_TEXT_INTEGRATION = ("mi", "mo", "mn", "ms", "mtext")
MATHML_TEXT_INTEGRATION_FOREIGN = ("mglyph", "malignmark")  # stay MathML inside those
ANNOTATION_XML_HTML_ENCODINGS = ("text/html", "application/xhtml+xml")
# HTML elements (the standard's index): an end tag naming one, met in foreign content
# that has no open element of its name, is taken to close an HTML element holding
# the SVG or MathML (the scanner does not keep the HTML stack of open elements).
# Not body, head or html: their end tags close nothing there (</body> and </html> only
# move the parser on to "after body", with the SVG or MathML still open).
HTML_ELEMENTS = (
    "a",
    "abbr",
    "address",
    "area",
    "article",
    "aside",
    "audio",
    "b",
    "base",
    "bdi",
    "bdo",
    "blockquote",
    "br",
    "button",
    "canvas",
    "caption",
    "cite",
    "code",
    "col",
    "colgroup",
    "data",
    "datalist",
    "dd",
    "del",
    "details",
    "dfn",
    "dialog",
    "div",
    "dl",
    "dt",
    "em",
    "embed",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hgroup",
    "hr",
    "i",
    "iframe",
    "img",
    "input",
    "ins",
    "kbd",
    "label",
    "legend",
    "li",
    "link",
    "main",
    "map",
    "mark",
    "menu",
    "meta",
    "meter",
    "nav",
    "noscript",
    "object",
    "ol",
    "optgroup",
    "option",
    "output",
    "p",
    "picture",
    "pre",
    "progress",
    "q",
    "rp",
    "rt",
    "ruby",
    "s",
    "samp",
    "search",
    "section",
    "select",
    "slot",
    "small",
    "source",
    "span",
    "strong",
    "sub",
    "summary",
    "sup",
    "table",
    "tbody",
    "td",
    "template",
    "textarea",
    "tfoot",
    "th",
    "thead",
    "time",
    "tr",
    "track",
    "u",
    "ul",
    "var",
    "video",
    "wbr",
)
VOID_ELEMENTS = (
    "area",
    "base",
    "basefont",
    "bgsound",
    "br",
    "col",
    "embed",
    "frame",
    "hr",
    "img",
    "input",
    "keygen",
    "link",
    "meta",
    "param",
    "source",
    "track",
    "wbr",
)  # no end tag: never open
# Start tags the HTML-content scan acts on; every other tag is skipped whole.
INTERESTING = tuple(
    sorted(
        {"a", "area", "base", "body", "frameset", "head", "html", "meta", "math", "svg", "template"}
        | set(TEXT_ELEMENTS)
    )
)
INTERESTING_END = ("math", "svg", "template")
# What a link may hold with its bar placed before its end tag: phrasing elements that close nothing around the
# <a> (a block, list item, cell, form control, <template> or raw-text element might, or the tree builder
# may move it), so the parser keeps the bar inside the link.  Any other start tag inside a link, or an end
# tag of an element not opened inside it, leaves that link's bar after its start tag instead.
LINK_CONTENT = (
    "abbr b bdi bdo big br cite code data del dfn em font i img ins kbd mark math nobr picture q s samp small "
    "source span strike strong sub sup svg time tt u var wbr"
).split()
# Named character references a document may write without ';' (the standard's
# table: the names whose entries exist both with and without the semicolon).
LEGACY_ENTITIES = tuple(sorted(name for name in html.entities.html5 if not name.endswith(";")))


def trie_pattern(names: tuple[str, ...]) -> str:
    """A regex alternation of `names` as a trie (Python's engine tries it far faster than a flat list)."""
    groups: dict[str, list[str]] = {}
    ends = False
    for name in sorted(names):
        if name:
            groups.setdefault(name[0], []).append(name[1:])
        else:
            ends = True
    parts = []
    for first, rests in groups.items():
        if rests == [""]:
            parts.append(first)
        else:
            parts.append(first + trie_pattern(tuple(rests)))
    body = "|".join(parts)
    if ends:
        return f"(?:{body})?"
    return body if len(parts) == 1 else f"(?:{body})"


def python_source() -> str:
    lines = [
        '"""Tokenizer tables of the rewriter\'s scanners: written by tools/gen_scan_tables.py, do not edit."""',
        "",
        f"CONTENT_MODELS = {CONTENT_MODELS!r}",
        f"TEXT_ELEMENTS = {dict(sorted(TEXT_ELEMENTS.items()))!r}",
        f"BREAKOUT = frozenset({sorted(BREAKOUT)!r})",
        f"FONT_BREAKOUT_ATTRIBUTES = frozenset({sorted(FONT_BREAKOUT_ATTRIBUTES)!r})",
        f"END_TAG_BREAKOUT = frozenset({sorted(END_TAG_BREAKOUT)!r})",
        f"SVG_HTML_INTEGRATION = frozenset({sorted(SVG_HTML_INTEGRATION)!r})",
        f"MATHML_TEXT_INTEGRATION = frozenset({sorted(MATHML_TEXT_INTEGRATION)!r})",
        f"MATHML_TEXT_INTEGRATION_FOREIGN = frozenset({sorted(MATHML_TEXT_INTEGRATION_FOREIGN)!r})",
        f"ANNOTATION_XML_HTML_ENCODINGS = frozenset({sorted(ANNOTATION_XML_HTML_ENCODINGS)!r})",
        f"HTML_ELEMENTS = frozenset({sorted(HTML_ELEMENTS)!r})",
        f"VOID_ELEMENTS = frozenset({sorted(VOID_ELEMENTS)!r})",
        f"LINK_CONTENT = frozenset({sorted(LINK_CONTENT)!r})",
        f"INTERESTING_PATTERN = {trie_pattern(INTERESTING)!r}",
        f"INTERESTING_END_PATTERN = {trie_pattern(INTERESTING_END)!r}",
        # first letters no interesting name has: such tags are skipped without the lookahead
        f"DULL_INITIALS = {''.join(sorted(set('abcdefghijklmnopqrstuvwxyz') - {n[0] for n in INTERESTING}))!r}",
        f"LEGACY_ENTITIES = frozenset({list(LEGACY_ENTITIES)!r})",
        "",
    ]
    return "\n".join(lines)


def c_list(name: str, values: tuple[str, ...]) -> str:
    items = ", ".join(f'"{value}"' for value in sorted(values))
    return f"static const char *const {name}[] = {{{items}, NULL}};"


def c_source() -> str:
    models = "\n".join(f"#define MODEL_{model} {index}" for index, model in enumerate(CONTENT_MODELS))
    text_names = ", ".join(f'"{name}"' for name in sorted(TEXT_ELEMENTS))
    text_models = ", ".join(f"MODEL_{TEXT_ELEMENTS[name]}" for name in sorted(TEXT_ELEMENTS))
    longest = max(map(len, HTML_ELEMENTS + INTERESTING + SVG_HTML_INTEGRATION + ("annotation-xml",)))
    return "\n".join(
        [
            "/* Tokenizer tables of the rewriter's scanners: written by tools/gen_scan_tables.py, do not edit. */",
            "#ifndef PAGERANK_SCAN_TABLES_H",
            "#define PAGERANK_SCAN_TABLES_H",
            models,
            f"static const char *const TEXT_ELEMENTS[] = {{{text_names}, NULL}};",
            f"static const int TEXT_ELEMENT_MODELS[] = {{{text_models}}};",
            c_list("BREAKOUT", BREAKOUT),
            c_list("FONT_BREAKOUT_ATTRIBUTES", FONT_BREAKOUT_ATTRIBUTES),
            c_list("END_TAG_BREAKOUT", END_TAG_BREAKOUT),
            c_list("SVG_HTML_INTEGRATION", SVG_HTML_INTEGRATION),
            c_list("MATHML_TEXT_INTEGRATION", MATHML_TEXT_INTEGRATION),
            c_list("MATHML_TEXT_INTEGRATION_FOREIGN", MATHML_TEXT_INTEGRATION_FOREIGN),
            c_list("ANNOTATION_XML_HTML_ENCODINGS", ANNOTATION_XML_HTML_ENCODINGS),
            c_list("HTML_ELEMENTS", HTML_ELEMENTS),
            c_list("VOID_ELEMENTS", VOID_ELEMENTS),
            c_list("LINK_CONTENT", tuple(LINK_CONTENT)),
            c_list("INTERESTING", INTERESTING),
            c_list("INTERESTING_END", INTERESTING_END),
            f"#define LONGEST_NAME {longest}",
            "#endif",
            "",
        ]
    )


def main(argv: list[str]) -> int:
    outputs = {PYTHON_OUT: python_source(), C_OUT: c_source()}
    if argv[1:] == ["--check"]:
        stale = []
        for path, text in outputs.items():
            if not os.path.exists(path):
                stale.append(path)
                continue
            with open(path, encoding="utf-8") as file:
                if file.read() != text:
                    stale.append(path)
        for path in stale:
            print(f"{os.path.relpath(path, ROOT)} is out of date: run tools/gen_scan_tables.py", file=sys.stderr)
        return 1 if stale else 0
    for path, text in outputs.items():
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
