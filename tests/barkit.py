"""What the proxy inserts into a page, read back from the markup alone (issue 46's markup), for the tests.

A bar is a host element with nothing of its own and a closed declarative shadow root that holds an SVG::

    <span data-pagerank-bar[ data-icon[="start"]]><template shadowrootmode="closed"><svg data-pagerank="…"
      [data-pagerank-level="…" data-pagerank-estimate="…"] data-w="…" [data-nofollow="true"] role="img" …>
      <title>TOOLTIP</title><rect …/>[<rect …/>]</svg></template></span>

The panel is ``<aside data-pagerank-panel><template shadowrootmode="closed">…</template></aside>``, the page's
style block ``<style id="pagerank-proxy-style">…</style>``.  Every function takes the page as ``str`` or as
``bytes`` (read as Latin-1: what we insert is ASCII, so offsets and our markup are the same in both); those that
answer a page answer it in the type they were given.
"""

from __future__ import annotations

import html
import re
from typing import AnyStr, NamedTuple

__all__ = [
    "BAR",
    "PANEL",
    "STYLE_BLOCK",
    "Bar",
    "Item",
    "bars",
    "bar_values",
    "bar_count",
    "bar_links",
    "bar_for",
    "strip_insertions",
    "panel_of",
    "outside_panel",
    "panel_box",
    "panel_summary",
    "panel_items",
    "panel_sections",
    "light_dom",
    "hosts_only",
    "attributes",
    "shown_bars",
    "panel_root",
    "what_the_page_reads",
]

# A whole bar (the SVG's title and rects hold no '<' of their own: the tooltip is escaped).
BAR = re.compile(
    r'<span data-pagerank-bar(?P<icon> data-icon(?:="start")?)?><template shadowrootmode="closed">'
    r"<svg (?P<attrs>[^>]*)>(?P<inner>.*?)</svg></template></span>",
    re.S,
)
PANEL = re.compile(r"<aside data-pagerank-panel>.*?</aside>", re.S)
STYLE_BLOCK = re.compile(r'<style id="pagerank-proxy-style">.*?</style>', re.S)
_ATTRIBUTE = re.compile(r'([^\s"\'>/=]+)(?:="([^"]*)")?')
_TITLE = re.compile(r"<title>(.*?)</title>", re.S)
_RECT = re.compile(r"<rect ([^>]*?)/>")
_TEMPLATE = '<template shadowrootmode="closed">'


def _str(doc: str | bytes) -> str:
    return doc.decode("latin-1") if isinstance(doc, bytes) else doc


def _like(doc: AnyStr, text: str) -> AnyStr:
    return text.encode("latin-1") if isinstance(doc, bytes) else text  # type: ignore[return-value]


def attributes(markup: str) -> dict[str, str]:
    """The attributes of our markup's tag (``markup`` from after its name up to its '>'), their values
    unescaped; an attribute without a value is ``""``."""
    return {name: html.unescape(value or "") for name, value in _ATTRIBUTE.findall(markup)}


class Bar(NamedTuple):
    """One bar, as drawn inside its shadow root."""

    attributes: dict[str, str]  # the SVG's: data-pagerank, data-pagerank-level, data-pagerank-estimate, data-w, ...
    title: str  # the tooltip as written in the markup (escaped, as the old title attribute was)
    icon: bool  # the host's data-icon: a link of no text (="start": none before a block), its bar out of the flow
    rects: list[dict[str, str]]  # the frame, then the fill (none for a width of 0)
    start: int  # where the bar's markup starts and ends in the page
    end: int

    @property
    def tooltip(self) -> str:
        """What the tooltip says (and, with role="img", the bar's accessible name): the title unescaped."""
        return html.unescape(self.title)

    @property
    def value(self) -> str:
        return self.attributes["data-pagerank"]

    @property
    def fill(self) -> int:
        """The fill's width as drawn, in the drawing's units: 0 where there is none, or its rect is of width 0
        (which SVG does not render, its stroke neither); an outlined fill's rect is 1 narrower, its stroke of 1
        around it."""
        if len(self.rects) < 2:
            return 0
        width = float(self.rects[1]["width"])
        if width <= 0:
            return 0
        return int(width + 1) if self.rects[1].get("fill") == "none" else int(width)


def bars(doc: str | bytes) -> list[Bar]:
    """Every bar in the page (the panel's too), in order."""
    text = _str(doc)
    found = []
    for match in BAR.finditer(text):
        title = _TITLE.search(match.group("inner"))
        found.append(
            Bar(
                attributes(match.group("attrs")),
                title.group(1) if title else "",
                match.group("icon") is not None,
                [attributes(rect) for rect in _RECT.findall(match.group("inner"))],
                match.start(),
                match.end(),
            )
        )
    return found


def bar_values(doc: str | bytes) -> list[str]:
    """The score (``data-pagerank``) of every bar in the page, the panel's too, in order."""
    return [bar.value for bar in bars(doc)]


def bar_count(doc: str | bytes) -> int:
    return len(BAR.findall(_str(doc)))


# a start tag as the standard's tokenizer reads it: attribute values quoted, or unquoted up to white space or '>'
_LINK_START = re.compile(
    r"<(?P<name>a|area)(?=[\t\n\f\r />])(?P<attrs>(?:[\t\n\f\r /]+|[^\t\n\f\r />][^\t\n\f\r /=>]*"
    r"""(?:[\t\n\f\r ]*=[\t\n\f\r ]*(?:"[^"]*"|'[^']*'|[^\t\n\f\r >"'][^\t\n\f\r >]*))?)*)>""",
    re.I,
)
_HREF = re.compile(r"""(?:^|[\t\n\f\r /])href[\t\n\f\r ]*=[\t\n\f\r ]*(?:"([^"]*)"|'([^']*)'|([^\t\n\f\r >]+))""", re.I)
_END_A = re.compile(r"</a[\t\n\f\r />]", re.I)


def _linked(doc: str | bytes) -> list[tuple[str, str, Bar]]:
    text = outside_panel(_str(doc))
    found = []
    for bar in bars(text):
        starts = list(_LINK_START.finditer(text, 0, bar.start))
        link = starts[-1] if starts else None
        href = _HREF.search(link.group("attrs")) if link else None
        value = next((group for group in href.groups() if group is not None), "") if href else ""
        if _END_A.match(text, bar.end) and link is not None and link.group("name").lower() == "a":
            where = "end"
        elif link is not None and link.end() == bar.start:
            where = "start"
        else:
            where = "elsewhere"
        found.append((value, where, bar))
    return found


def bar_links(doc: str | bytes) -> list[tuple[str, str]]:
    """(href as written, where) of each bar outside the panel, in order: the link it is for is the last <a> or
    <area> start tag before it; where is ``"end"`` for a bar right before that link's ``</a>``, ``"start"`` for
    one right after its start tag (a link of no content: ``"end"``), else ``"elsewhere"`` (never, if right)."""
    return [(href, where) for href, where, _ in _linked(doc)]


def bar_for(doc: str | bytes, href: str) -> Bar:
    """The one bar (outside the panel) of the link whose href is written ``href``; placed before the link's
    ``</a>`` or right after an <area>'s tag."""
    found = [(where, bar) for written, where, bar in _linked(doc) if written == href]
    assert len(found) == 1, (href, found)
    where, bar = found[0]
    assert where in ("end", "start"), (href, where)
    return bar


def strip_insertions(doc: AnyStr) -> AnyStr:
    """The page without what we insert, found by its markup alone (independent of the recorded edits)."""
    text = PANEL.sub("", _str(doc))
    text = BAR.sub("", text)
    return _like(doc, STYLE_BLOCK.sub("", text))


def panel_of(doc: str | bytes) -> str | None:
    """The panel's markup, or None."""
    found = PANEL.search(_str(doc))
    return found.group(0) if found else None


def outside_panel(doc: AnyStr) -> AnyStr:
    """The page without its panel (whose shadow root holds a bar of the page's own and a bar per backlink)."""
    return _like(doc, PANEL.sub("", _str(doc)))


def panel_box(doc: str | bytes) -> dict[str, str]:
    """The attributes of the panel's box (``<span id="pagerank-panel" class="box" data-pagerank=…
    data-pagerank-level=…>``), from the page or the panel's markup."""
    found = re.search(r'<span (id="pagerank-panel"[^>]*)>', _str(doc))
    assert found, "no panel"
    return attributes(found.group(1))


def panel_summary(doc: str | bytes) -> str:
    """The panel's summary, as written (escaped): its heading, which its tab's title and accessible name repeat."""
    text = _str(doc)
    found = re.search(r'<span class="p head">(.*?)</span>', text, re.S)
    assert found, "no panel"
    summary = found.group(1)
    assert f'title="{summary}"' in text and f'aria-label="PageRank panel: {summary}"' in text
    return summary


def _element_end(text: str, start: int, name: str) -> int:
    """The end of the element of ours whose start tag is at ``start`` (its elements of the same name nested)."""
    depth, position = 0, start
    opening, closing = re.compile(rf"<{name}[\s>]"), f"</{name}>"
    while True:
        opened = opening.search(text, position)
        closed = text.find(closing, position)
        assert closed >= 0, f"<{name}> left open"
        if opened is not None and opened.start() < closed:
            depth, position = depth + 1, opened.end()
        else:
            depth, position = depth - 1, closed + len(closing)
            if depth == 0:
                return position


def panel_sections(doc: str | bytes) -> list[tuple[str, str]]:
    """(level, markup) of each level section of the panel (a page with no score of its own: its host's, its
    site's rank and best referrers), in order."""
    text = panel_of(doc) or ""
    return [
        (m.group(1), text[m.start() : _element_end(text, m.start(), "span")])
        for m in re.finditer(r'<span class="section" data-pagerank-level="([^"]*)">', text)
    ]


class Item(NamedTuple):
    """One item of the panel's lists: a backlink, or a referring host or site."""

    attributes: dict[str, str]  # the item's: data-pagerank (a backlink), data-new, data-pagerank-level (a referrer)
    bar: Bar
    href: str  # as written (escaped)
    text: str  # the link's text, as written
    new: bool  # its <mark>new</mark>


_ITEM = re.compile(
    r'<span class="li" role="listitem"(?P<attrs>[^>]*)>(?P<bar><span data-pagerank-bar>.*?</span>)'
    r'<a href="(?P<href>[^"]*)">(?P<text>[^<]*)</a>(?P<mark><mark>new</mark>)?<small>',
    re.S,
)


def panel_items(doc: str | bytes) -> list[Item]:
    """The items of the panel's lists, in order."""
    return [
        Item(attributes(m.group("attrs")), bars(m.group("bar"))[0], m.group("href"), m.group("text"), bool(m["mark"]))
        for m in _ITEM.finditer(panel_of(doc) or "")
    ]


def light_dom(doc: AnyStr) -> AnyStr:
    """The page as its script sees it: every closed shadow root's template (ours nest: the panel's holds the
    bars') taken out, the host elements left empty."""
    text = _str(doc)
    out, at = [], 0
    while (start := text.find(_TEMPLATE, at)) >= 0:
        out.append(text[at:start])
        at = _element_end(text, start, "template")
    out.append(text[at:])
    return _like(doc, "".join(out))


_HOSTS = re.compile(r'<span data-pagerank-bar(?: data-icon(?:="start")?)?></span>|<aside data-pagerank-panel></aside>')


def hosts_only(doc: AnyStr) -> AnyStr:
    """The light DOM (:func:`light_dom`) without our empty host elements and our style block: what the page
    was, if all we put where its script can read it is hosts that carry no data."""
    return _like(doc, STYLE_BLOCK.sub("", _HOSTS.sub("", _str(light_dom(doc)))))


# ------------------------------------------------------------------ in a browser (Selenium, Chromium)

# What a bar shows on screen, read from its closed shadow root, which WebDriver reaches (as the person at the
# screen sees it) and no script of the page does.  arguments: the host elements and their shadow roots.
_SHOWN_JS = """
const [hosts, roots] = arguments;
const box = (e) => { const r = e.getBoundingClientRect(); return {width: r.width, height: r.height}; };
const paint = (e) => { const s = getComputedStyle(e); return {fill: s.fill, stroke: s.stroke,
  strokeWidth: s.strokeWidth, visible: s.visibility === 'visible' && s.display !== 'none'}; };
return hosts.map((host, i) => {
  const svg = roots[i].querySelector('svg'), rects = svg ? svg.querySelectorAll('rect') : [];
  const title = svg && svg.querySelector('title');
  return {
    attributes: svg ? Object.fromEntries([...svg.attributes].map(a => [a.name, a.value])) : null,
    title: title ? title.textContent : null,
    icon: host.hasAttribute('data-icon'),
    host: {...box(host), attributes: [...host.attributes].map(a => a.name),
           text: host.textContent, children: host.children.length},
    frame: rects[0] ? {...box(rects[0]), ...paint(rects[0])} : null,
    fill: rects[1] ? {...box(rects[1]), ...paint(rects[1])} : null,
    shown: host.parentElement.getClientRects().length > 0,
    last_in_link: host.parentElement.localName === 'a' && host.parentElement.lastChild === host,
  };
});
"""


def shown_bars(driver, hosts: list | None = None) -> list[dict]:
    """What each bar of the page shows (``hosts``: the bars' host elements, else every one in the page's light
    DOM, the panel's not among them): the SVG's ``attributes``, its ``title``, the ``host``'s box and what the
    page sees of it (its attributes, text and children: none but ``data-pagerank-bar``), the ``frame``'s and the
    ``fill``'s boxes and paint (``fill`` None for an empty bar), whether its link is ``shown``, and whether it
    is the ``last_in_link``."""
    if hosts is None:
        hosts = driver.execute_script("return [...document.querySelectorAll('span[data-pagerank-bar]')]")
    return driver.execute_script(_SHOWN_JS, hosts, [host.shadow_root for host in hosts]) if hosts else []


def panel_root(driver):
    """The panel's closed shadow root (through WebDriver), or None where the page has no panel."""
    hosts = driver.find_elements("css selector", "aside[data-pagerank-panel]")
    return hosts[0].shadow_root if hosts else None


def what_the_page_reads(driver) -> dict:
    """What the page's own script finds of ours: elements with a data attribute of the store, and every
    attribute and the text of our host elements (a closed shadow root's content is none of it)."""
    return driver.execute_script(
        "const hosts = [...document.querySelectorAll('[data-pagerank-bar], [data-pagerank-panel]')];"
        "return {data: document.querySelectorAll('[data-pagerank], [data-pagerank-level], [data-w]').length,"
        " hosts: hosts.length, shadowRoots: hosts.filter(h => h.shadowRoot !== null).length,"
        " attributes: [...new Set(hosts.flatMap(h => [...h.attributes].map(a => a.name)))].sort(),"
        " text: hosts.map(h => h.textContent).join(''), children: hosts.reduce((n, h) => n + h.children.length, 0)}"
    )
