"""The WAT reader's C twins held to their Python twins, envelope by envelope and page by page.

``rankstore.sources._fastwat.prune`` reads only the fields of an envelope a page
is made of, and lists the page's links once an href; its twin parses the
envelope whole (``wat._loads``) and lists them with ``wat.unique_links``.
Where the C reader answers, ``WatPages.page_of`` must make the same page (or
find the same fault) of its answer as of the whole parse; where it is not sure
(JSON a parser might read otherwise, a key written twice, a field of another
kind) it must say so (None), and the whole parse decides.
``rankstore._fastlisted.listed_targets`` and ``extract.listed_targets`` read
the listed links into a page's set of links.  The envelopes: every one of
Common Crawl's sample WAT and of a WAT of a real crawl (python3.11-doc, by
tests/watgen.py), edge cases written here, and damaged copies of real ones.
"""

from __future__ import annotations

import json
import random

import pytest
from fastwarc.warc import ArchiveIterator, WarcRecordType
from watgen import write_wat

from rankstore import extract
from rankstore.sources import ListedLink, ListedPage, casts_no_vote, wat

from conftest import data

URL = "http://site.example/dir/page.html"

pytestmark = pytest.mark.skipif(wat._fastwat is None or extract._fastlisted is None, reason="the C twins did not build")


def prune(body: bytes):
    return wat._fastwat.prune(body, wat.UniqueLinks, ListedLink)


def outcome(document, reader: wat.WatPages | None = None):
    """What the reader makes of a parsed envelope: a page, None, a Skipped, or the fault it finds."""
    try:
        return (reader or wat.WatPages()).page_of(document, "here")
    except wat._Malformed as error:
        return ("malformed", str(error))
    except TypeError as error:  # a "path" that is an array: the Python reader's own failure, kept
        return ("TypeError", str(error))


def full(body: bytes):
    try:
        return wat._loads(body)
    except ValueError:
        return "invalid"


def assert_twins(body: bytes, answers: bool | None = True) -> None:
    """The C reader's page is the whole parse's; ``answers``: whether it must answer (None: either)."""
    pruned = prune(body)
    if answers is not None:
        assert (pruned is not None) == answers, body[:300]
    if pruned is None:
        return
    parsed = full(body)
    assert parsed != "invalid", body[:300]
    assert outcome(pruned) == outcome(parsed), body[:300]


def envelope(links=(), head=None, headers=None, status="200", kind="response", http=True) -> dict:
    payload: dict = {}
    if http:
        payload["HTTP-Response-Metadata"] = {
            "Response-Message": {"Status": status, "Reason": "OK"},
            "Headers": {"Content-Type": "text/html; charset=utf-8"} if headers is None else headers,
            "HTML-Metadata": {"Head": {"Title": "A page"} if head is None else head, "Links": list(links)},
        }
    return {
        "Container": {"Filename": "x.warc.gz", "Offset": "0"},
        "Envelope": {
            "Format": "WARC",
            "WARC-Header-Metadata": {"WARC-Type": kind, "WARC-Target-URI": URL, "WARC-Date": "2024-05-01T00:00:00Z"},
            "Payload-Metadata": payload,
        },
    }


def a(url, rel=None, text=None, path="A@/href", **more) -> dict:
    entry = {"path": path, "url": url, **more}
    if rel is not None:
        entry["rel"] = rel
    if text is not None:
        entry["text"] = text
    return entry


def bodies_of(*paths: str) -> list[bytes]:
    found = []
    for path in paths:
        with open(path, "rb") as handle:
            for record in ArchiveIterator(handle, parse_http=False):
                if record.record_type == WarcRecordType.metadata:
                    found.append(record.reader.read())
    return found


@pytest.fixture(scope="module")
def real_bodies(python_doc_crawl, tmp_path_factory) -> list[bytes]:
    path = str(tmp_path_factory.mktemp("wat") / "python-doc.warc.wat.gz")
    write_wat(python_doc_crawl.warc, path)
    return bodies_of(path, data("whirlwind/whirlwind.warc.wat.gz"))


def test_every_envelope_of_real_wats_reads_alike_and_the_c_reader_answers_each(real_bodies):
    assert len(real_bodies) > 1_000
    c_reader, python_reader = wat.WatPages(), wat.WatPages()
    pages = 0
    for body in real_bodies:
        pruned = prune(body)
        assert pruned is not None
        made = outcome(pruned, c_reader)
        assert made == outcome(wat._loads(body), python_reader)
        pages += made is not None and made.listed is not None
    assert c_reader.described == python_reader.described
    assert pages > 500


def test_every_page_of_real_wats_gives_the_same_links_by_both_twins(real_bodies, monkeypatch):
    from rankstore.build import prepare

    records = [page for page in map(outcome, map(prune, real_bodies)) if page is not None and page.listed is not None]
    links = [prepare(record)[0].links for record in records]
    monkeypatch.setattr(extract, "_fastlisted", None)
    assert [prepare(record)[0].links for record in records] == links
    assert sum(map(len, links)) > 20_000


EDGES = {
    # JSON read the same way by any parser
    "escapes": (json.dumps(envelope([a("caf\u00e9/\u2028x.html", text='\t"quoted"\\ \u00e9 \U0001f600')])), True),
    "escaped slash and ascii": (
        json.dumps(envelope([a("a.html", text="x")])).replace('"a.html"', '"a\\/\\u0062.html"'),
        True,
    ),
    "raw utf-8": (json.dumps(envelope([a("\u00e9t\u00e9.html", text="\u3000\u00a0")]), ensure_ascii=False), True),
    "nested and skipped": (
        json.dumps({**envelope([a("x.html")]), "More": [1, -2.5e-3, True, False, None, {"a": [[], {}]}]}),
        True,
    ),
    "status as a number": (json.dumps(envelope([a("x.html")], status=200)), True),
    "status padded": (json.dumps(envelope([a("x.html")], status=" 200 ")), True),
    "status absent": (json.dumps(envelope([a("x.html")])).replace('"Status": "200", ', ""), True),
    "status null": (json.dumps(envelope([a("x.html")], status=None)), True),
    "a redirect": (
        json.dumps(envelope(headers={"location": " /new ", "Content-Type": "text/html"}, status="301")),
        True,
    ),
    "a redirect's header as a list": (
        json.dumps(envelope(headers={"LOCATION": [1, "/new", "/other"]}, status="302")),
        True,
    ),
    "a header of another kind": (json.dumps(envelope(headers={"Location": 5}, status="302")), True),
    "gone": (json.dumps(envelope(status="404")), True),
    "not html": (json.dumps(envelope([a("x.html")], headers={"content-type": "image/png"})), True),
    "a request": (json.dumps(envelope(kind="request")), True),
    "not http": (json.dumps(envelope(http=False)), True),
    "title of another kind": (json.dumps(envelope([a("x.html")], head={"Title": 5, "Base": ["x"]})), True),
    "metas and links of the head": (
        json.dumps(
            envelope(
                [a("x.html")],
                head={
                    "Title": "t",
                    "Base": "http://other.example/base/",
                    "Metas": [{"name": " ROBOTS ", "content": "noindex, nofollow"}, "x", {"name": 5}],
                    "Link": [7, {"rel": "Canonical", "url": "/canon"}, {"rel": "canonical", "url": "/second"}],
                },
            )
        ),
        True,
    ),
    "links of every kind": (
        json.dumps(
            envelope(
                [
                    a("x.html", path="IMG@/src"),
                    a("y.html", path=None),
                    a("z.html", path=5),
                    {"path": "A@/href", "url": 7},
                    {"path": "A@/href"},
                    "not an object",
                    a("w.html", rel=5, text=None),
                    a("area.html", path="AREA@/href", text="area"),
                    a("#top", text="top"),
                    a("  #top"),
                    a("mailto:x@example.com", text="mail"),
                ]
            )
        ),
        True,
    ),
    "repeated hrefs": (
        json.dumps(
            envelope(
                [
                    a("r.html", rel="NoFollow", text=" "),
                    a("r.html", rel="ugc\x1csponsored", text="\u3000"),
                    a("r.html", rel="nofollow", text="late"),
                    a("s.html", rel="noopener", text="s"),
                    a("s.html", rel="nofollow", text="s2"),
                    a("./r.html", text="same target"),
                    a("t.html", rel="nofollow"),
                    a("t.html", text="votes"),
                ]
            )
        ),
        True,
    ),
    "an empty page": (json.dumps(envelope(head={})), True),
    "Links null": (json.dumps(envelope()).replace('"Links": []', '"Links": null'), True),
    # where a parser might read otherwise, or the reader finds a fault: the whole parse decides
    "a lone surrogate": (json.dumps(envelope([a("x.html", text="\ud800")])), False),
    "a lone low surrogate": (json.dumps(envelope([a("x.html", text="\udc00 x")])), False),
    "a key twice": (
        json.dumps(envelope([a("x.html")])).replace(
            '"WARC-Type": "response"', '"WARC-Type": "request", "WARC-Type": "response"'
        ),
        False,
    ),
    "a link's key twice": (
        json.dumps(envelope([a("x.html")])).replace('"url": "x.html"', '"url": "y.html", "url": "x.html"'),
        False,
    ),
    "a header twice in two cases": (
        json.dumps(envelope(headers={"Location": "/a", "location": "/b"}, status="301")),
        False,
    ),
    "status as a fraction": (json.dumps(envelope(status=200.0)), False),
    "status true": (json.dumps(envelope(status=True)), False),
    "Headers an array": (json.dumps(envelope(headers=["Content-Type"])), False),
    "Envelope an array": ('{"Envelope": []}', False),
    "Metas an object": (json.dumps(envelope(head={"Metas": {"name": "robots"}})), False),
    "a path that is an array": (json.dumps(envelope([a("x.html", path=["A@/href"])])), False),
    "a repeated href with a rel in other letters": (
        json.dumps(envelope([a("x.html", rel="nofollow"), a("x.html", rel="\u0130nofollow")])),
        False,
    ),
    "not an object": ("[1, 2]", False),
    "trailing data": (json.dumps(envelope()) + " {}", False),
    "a byte-order mark": ("\ufeff" + json.dumps(envelope()), False),
    "NaN": (json.dumps(envelope()).replace('"Offset": "0"', '"Offset": NaN'), False),
    "a control character": (json.dumps(envelope([a("x.html", text="ok")])).replace('"ok"', '"o\tk"'), False),
    "cut short": (json.dumps(envelope([a("x.html")]))[:-5], False),
    "deep": ('{"Deep": ' + "[" * 600 + "]" * 600 + "}", False),
}


@pytest.mark.parametrize("name", list(EDGES))
def test_edge_envelopes_read_alike_or_are_left_to_the_whole_parse(name):
    text, answers = EDGES[name]
    assert_twins(text.encode("utf-8", "surrogatepass"), answers)


def test_invalid_utf8_is_left_to_the_whole_parse():
    good = json.dumps(envelope([a("x.html", text="\u00e9")]), ensure_ascii=False).encode()
    latin1, surrogate = good.replace("\u00e9".encode(), b"\xe9"), good.replace("\u00e9".encode(), b"\xed\xa0\x80")
    assert prune(latin1) is None and full(latin1) == "invalid"
    # a surrogate written in UTF-8: orjson refuses it, the standard library reads it (surrogatepass)
    assert prune(surrogate) is None and outcome(full(surrogate)).listed.links[0].anchor_text == "\ud800"


def test_damaged_copies_of_real_envelopes_read_alike_wherever_the_c_reader_answers(real_bodies):
    """Bytes changed, taken out or cut short at random (a fixed seed, a bounded count): wherever the C reader
    answers, the whole parse reads the same page; where the whole parse finds no JSON, it answers nothing."""
    chooser = random.Random(20261129)
    pages = [body for body in real_bodies if b'"Links"' in body and len(body) < 200_000]
    answered = refused = 0
    for _ in range(600):
        body = bytearray(chooser.choice(pages))
        for _ in range(chooser.randint(1, 3)):
            at = chooser.randrange(len(body))
            change = chooser.randrange(3)
            if change == 0:
                body[at] = chooser.choice(b'{}[]",:\\u0123456789 abcdefnrt\x00\x80\xff')
            elif change == 1:
                del body[at : at + chooser.randint(1, 8)]
            else:
                del body[at:]
        pruned = prune(bytes(body))
        parsed = full(bytes(body))
        if parsed == "invalid":
            assert pruned is None
            refused += 1
        elif pruned is not None:
            assert outcome(pruned) == outcome(parsed)
            answered += 1
    assert answered > 50 and refused > 50


LISTED = {
    "plain": [("a.html", "", "A"), ("b.html", "", "B")],
    "fragments and blanks": [
        ("#top", "", "t"),
        ("", "", "e"),
        (" \t#x", "", "x"),
        ("\u3000#y", "", "y"),
        (" a.html", "", "a"),
    ],
    "nofollow on every occurrence": [
        ("a.html", "nofollow", ""),
        ("a.html", "UGC", "x"),
        ("b.html", "nofollow", "b"),
        ("b.html", "", ""),
    ],
    "anchors cleaned": [
        ("a.html", "", "  two\t\twords \n here "),
        ("b.html", "", "x" * 250),
        ("c.html", "", "\u00e9  \u3000 \u00e9"),
    ],
    "first anchor that says something": [
        ("a.html", "", ""),
        ("./a.html", "", "second href"),
        ("a.html", "", "first href, later"),
    ],
    "targets of several hrefs": [
        ("a.html", "nofollow", "1"),
        ("./a.html", "", "2"),
        ("../dir/a.html#frag", "nofollow", "3"),
    ],
    "nowhere": [("mailto:x@example.com", "", "m"), ("javascript:void(0)", "", "j"), ("http://[bad/", "", "b")],
    "rels in other letters": [("a.html", "\u0130nofollow", "i"), ("b.html", "no\u00adfollow", "b")],
    "long rels": [("a.html", "external nofollow noopener", "a"), ("b.html", "sponsoredx ugcy", "b")],
}


@pytest.mark.parametrize("name", list(LISTED))
@pytest.mark.parametrize("page_nofollow", [False, True])
@pytest.mark.parametrize("base", [URL, "http://site.example/dir/page.html?q=1", "http://site.example"])
def test_listed_links_read_alike_by_both_twins(name, page_nofollow, base):
    links = [ListedLink(href, rel, text) for href, rel, text in LISTED[name]]
    how = extract.resolving(base)
    got = extract._fastlisted.listed_targets(
        links, how.cache, how.resolve, page_nofollow, extract._clean_anchor, casts_no_vote
    )
    assert got == extract.listed_targets(links, base, page_nofollow)
    assert all(type(nofollow) is bool and weight == 1.0 for _, nofollow, weight, _ in got)


def test_listed_links_not_made_of_strings_are_left_to_the_python_twin():
    links = [ListedLink("a.html", None, "x")]  # type: ignore[arg-type]
    how = extract.resolving(URL)
    assert (
        extract._fastlisted.listed_targets(links, how.cache, how.resolve, False, extract._clean_anchor, casts_no_vote)
        is None
    )
    page = extract.read_listed(ListedPage(links=[ListedLink("a.html", "", "  x ")]), URL)
    assert page.links == [("http://site.example/dir/a.html", False, 1.0, "x")]
