"""Real recrawls for ``rankstore history`` and ``rankstore watch``, and an independent reading of them.

A few dozen pages of python3.11-doc are copied and served on 127.0.0.1, crawled
by wget, built and ranked; the copy is edited (links to the target taken out of
two pages, put into two others, a new page that links to it), crawled, built
and ranked again; then crawled a third time unchanged (a recrawl that changes
nothing), built and ranked.  ``two_builds.db`` is the store as it stood after
the second build, ``three_builds.db`` after the third.

What the tests compare the commands against is read from the WARC files by
this module alone: gzip, the WARC records split by their Content-Length, the
HTTP responses' bodies parsed by ``html.parser`` (no part of rankstore), and
each page's links taken from its latest capture, as a recrawl leaves them.
"""

from __future__ import annotations

import gzip
import html.parser
import json
import os
import random
import shutil
import sqlite3
from dataclasses import dataclass
from urllib.parse import urldefrag, urljoin, urlsplit

from click.testing import CliRunner
from sitecrawl import crawl, serve

from rankstore.cli import cli

from conftest import PYTHON_DOC, edge_store, once

TARGET = "library/functions.html"
LOSES = ("library/stdtypes.html", "library/exceptions.html")  # every link to the target taken out
GAINS = ("library/_thread.html", "library/aifc.html")  # a link to the target put in
NEW_PAGE = "library/zz-new.html"  # a page of the second crawl, linking to the target
PAGES = 30  # pages copied from the doc, besides the index and the new page


def run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def _copy(site: str) -> None:
    """The target, the pages edited and the first others of library/ (some link to the target, some not),
    and an index linking to each, so that wget finds them all."""
    library = os.path.join(PYTHON_DOC, "library")
    chosen = [TARGET, *LOSES, *GAINS]
    for name in sorted(os.listdir(library)):
        if len(chosen) >= PAGES:
            break
        if name.endswith(".html") and f"library/{name}" not in chosen:
            chosen.append(f"library/{name}")
    for page in chosen:
        os.makedirs(os.path.dirname(os.path.join(site, page)), exist_ok=True)
        shutil.copy(os.path.join(PYTHON_DOC, page), os.path.join(site, page))
    _write_index(site, chosen)


def _write_index(site: str, pages: list[str]) -> None:
    links = "".join(f'<li><a href="{page}">{page}</a></li>' for page in pages)
    with open(os.path.join(site, "index.html"), "w", encoding="utf-8") as out:
        out.write(f"<!doctype html><title>index</title><ul>{links}</ul>")


def _edit(site: str) -> None:
    for page in LOSES:
        path = os.path.join(site, page)
        text = open(path, encoding="utf-8").read()
        assert 'href="functions.html' in text
        with open(path, "w", encoding="utf-8") as out:
            out.write(text.replace('href="functions.html', 'data-was="functions.html'))
    for page in GAINS:
        path = os.path.join(site, page)
        text = open(path, encoding="utf-8").read()
        assert 'href="functions.html' not in text
        with open(path, "w", encoding="utf-8") as out:
            out.write(text.replace("</body>", '<p><a href="functions.html#len">len()</a></p></body>', 1))
    with open(os.path.join(site, NEW_PAGE), "w", encoding="utf-8") as out:
        out.write('<!doctype html><title>new</title><p><a href="functions.html">built-ins</a></p>')
    pages = [line.split('"')[1] for line in open(os.path.join(site, "index.html")).read().split("<li>")[1:]]
    _write_index(site, [*pages, NEW_PAGE])


def _backup(store: str, copy: str) -> None:
    with sqlite3.connect(store) as source, sqlite3.connect(copy) as target:
        source.backup(target)


def _make(folder) -> dict:
    work = str(folder)
    site = os.path.join(work, "site")
    _copy(site)
    store = os.path.join(work, "s.db")
    warcs = [os.path.join(work, f"crawl{n}.warc.gz") for n in (1, 2, 3)]
    with serve(site) as url:
        for number, warc in enumerate(warcs, 1):
            if number == 2:
                _edit(site)
            crawl(url, warc)
            run("build", warc, "--store", store, "-q")
            run("rank", "--store", store, "-q")
            if number == 2:
                _backup(store, os.path.join(work, "two_builds.db"))
    os.replace(store, os.path.join(work, "three_builds.db"))
    return {"url": url, "warcs": warcs, "two": os.path.join(work, "two_builds.db"),
            "three": os.path.join(work, "three_builds.db")}  # fmt: skip


@dataclass(frozen=True)
class Recrawls:
    url: str  # the served site's base URL
    warcs: list[str]  # the three crawls, in order
    two: str  # the store after two builds
    three: str  # the store after three


def recrawls(tmp_path_factory) -> Recrawls:
    """The three crawls and their stores, made once for the run."""
    found = once(tmp_path_factory, "target-history", _make)
    return Recrawls(found["url"], found["warcs"], found["two"], found["three"])


# ------------------------------------------------------------------ several hosts and sites, from edge lists

TARGET_HOSTS = ["www.target.test", "blog.target.test", "shop.target.test"]  # one site
BACK = "http://h.six.test/back"  # links to the target site, then not, then again
OTHER_HOSTS = ["a.one.test", "b.one.test", "c.two.test", "d.two.test", "e.three.test", "f.four.test"]


def _edge_lists(seed: int = 49) -> list[list[tuple[str, str]]]:
    """Three builds' edge lists: the first lists every page's links; each later one lists some pages again,
    with their links redrawn (the others keep theirs, as pages not crawled again do)."""
    chooser = random.Random(seed)
    pages = [f"http://{name}/{n}" for name in TARGET_HOSTS + OTHER_HOSTS for n in range(3)]
    four = [page for page in pages if "four.test" in page]
    lists = []
    for number in range(3):
        listed = pages if number == 0 else chooser.sample([p for p in pages if p not in four], 12)
        edges = []
        for page in listed:
            for other in chooser.sample([p for p in pages if p != page], 4):
                edges.append((page, other))
        lists.append(edges)
    # a site lost (four.test's pages crawled again, linking to one.test only) and one gained (five.test's)
    lists[0] += [(page, "http://www.target.test/0") for page in four]
    lists[1] += [(page, "http://a.one.test/0") for page in four]
    lists[2] += [("http://g.five.test/", "http://shop.target.test/1"), ("http://g.five.test/", "http://a.one.test/1")]
    # a link lost and found again: two lives of one link
    lists[0] += [(BACK, "http://www.target.test/1")]
    lists[1] += [(BACK, "http://a.one.test/2")]
    lists[2] += [(BACK, "http://www.target.test/1")]
    return lists


def _held(lists: list[list[tuple[str, str]]]) -> list[set[tuple[str, str]]]:
    """The links held after each build: each page's from the latest list that names it as a source."""
    held: dict[str, set[str]] = {}
    out = []
    for edges in lists:
        fresh: dict[str, set[str]] = {}
        for src, dst in edges:
            fresh.setdefault(src, set()).add(dst)
        held.update(fresh)
        out.append({(s, d) for s, targets in held.items() for d in targets})
    return out


def several_hosts_store(folder) -> tuple[str, list[set[tuple[str, str]]]]:
    """A store of three edge-list builds over several hosts and sites, ranked at each level after each; and the
    links it holds after each build, read from the lists."""
    lists = _edge_lists()
    store = None
    for number, edges in enumerate(lists):
        path = folder / f"e{number}.txt"
        path.write_text("".join(f"{s} {d}\n" for s, d in edges))
        if store is None:
            store = edge_store(folder, edges, ("--level", "host"), ("--level", "site"))
        else:
            run("build", str(path), "--store", store, "-q")
            for args in ((), ("--level", "host"), ("--level", "site")):
                run("rank", *args, "--store", store, "-q")
    return store, _held(lists)


# ------------------------------------------------------------------ the independent reading


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hrefs: list[str] = []
        self.base: str | None = None

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        if tag in ("a", "area") and values.get("href") is not None:
            self.hrefs.append(values["href"])
        elif tag == "base" and self.base is None and values.get("href"):
            self.base = values["href"]


def warc_pages(path: str) -> dict[str, set[str]]:
    """Each page of a WARC file and the URLs it links to: an HTML page answered 200, its links (fragments
    dropped, in-page links left out); a redirect, where it leads; a page found gone (404, 410), none."""
    data = gzip.open(path).read()
    pages: dict[str, set[str]] = {}
    at = 0
    while at < len(data):
        end = data.index(b"\r\n\r\n", at)
        head = data[at:end].decode("utf-8").split("\r\n")
        fields = dict(line.split(": ", 1) for line in head[1:])
        length = int(fields["Content-Length"])
        block = data[end + 4 : end + 4 + length]
        at = end + 4 + length + 4  # the block, then two CRLFs
        if fields.get("WARC-Type") != "response":
            continue
        http_head, _, body = block.partition(b"\r\n\r\n")
        lines = http_head.decode("iso-8859-1").split("\r\n")
        headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in lines[1:])}
        uri = fields["WARC-Target-URI"].strip("<>")
        status = lines[0].split()[1]
        if status in ("404", "410"):  # found gone: its links are lost as of this crawl
            pages[uri] = set()
            continue
        if status.startswith("3") and "location" in headers:  # a redirect links to where it leads
            pages[uri] = {urldefrag(urljoin(uri, headers["location"]))[0]}
            continue
        if status != "200" or "text/html" not in headers.get("content-type", ""):
            continue
        parser = _Links()
        parser.feed(body.decode("utf-8", errors="replace"))
        base = urljoin(uri, parser.base) if parser.base else uri
        links = set()
        for href in parser.hrefs:
            if not href.strip() or href.strip().startswith("#"):
                continue
            resolved = urldefrag(urljoin(base, href.strip()))[0]
            if resolved.startswith(("http://", "https://")):
                links.add(resolved)
        pages[uri] = links
    return pages


def links_by_build(warcs: list[str]) -> list[set[tuple[str, str]]]:
    """The links the store holds after each crawl: each page's from its latest capture."""
    held: dict[str, set[str]] = {}
    out = []
    for warc in warcs:
        held.update(warc_pages(warc))
        out.append({(page, target) for page, targets in held.items() for target in targets})
    return out


def host(url: str) -> str:
    return urlsplit(url).netloc


def site(url: str) -> str:
    """The registered domain of a URL's host, for the names the tests use: an address stands for itself, a
    name under .test is its last two labels."""
    name = urlsplit(url).hostname or ""
    return name if name.replace(".", "").isdigit() else ".".join(name.split(".")[-2:])


def expected_counts(links: list[set[tuple[str, str]]], inside) -> list[dict]:
    """Each build's counts, new and lost as history names them, of the links whose target ``inside`` takes and
    whose source it does not (``inside(url)``: the url is of the target)."""
    out = []
    before: tuple[set, set, set] = (set(), set(), set())
    for present in links:
        backlinks = {(s, t) for s, t in present if inside(t) and not inside(s)}
        now = (backlinks, {host(s) for s, _ in backlinks}, {site(s) for s, _ in backlinks})
        row = {}
        for name, held, was in zip(("backlinks", "hosts", "sites"), now, before):
            total = "backlinks" if name == "backlinks" else f"referring_{name}"
            row[total], row[f"new_{name}"], row[f"lost_{name}"] = len(held), len(held - was), len(was - held)
        out.append(row)
        before = now
    return out


def history_json(store: str, *args: str) -> list[dict]:
    return json.loads(run("history", *args, "--format", "json", "--store", store))
