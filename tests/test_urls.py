"""The one URL normal form: a table of cases, each with its reason, and WPT's URL tests."""

import json
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankstore import urls
from rankstore.urls import MAX_URL_LENGTH, canonical, host_of

BASE = "http://example.com/dir/page.html?q=1"

CASES = [
    # (url, base, expected)
    ("http://example.com/", None, "http://example.com/"),
    ("http://example.com", None, "http://example.com/"),  # empty path -> /
    ("HTTP://EXAMPLE.COM/Path", None, "http://example.com/Path"),  # scheme, host lower; path kept
    ("https://example.com:443/a", None, "https://example.com/a"),  # default port
    ("http://example.com:80/a", None, "http://example.com/a"),
    ("http://example.com:8080/a", None, "http://example.com:8080/a"),
    ("https://example.com:80/a", None, "https://example.com:80/a"),  # not the default for https
    ("http://example.com:0080/a", None, "http://example.com/a"),  # leading zeros in port
    ("http://example.com:99999/", None, None),  # port out of range
    ("http://example.com:abc/", None, None),  # port not a number
    ("http://example.com/a#frag", None, "http://example.com/a"),  # fragment dropped
    ("http://example.com/a?#frag", None, "http://example.com/a"),  # empty query dropped
    ("http://example.com/a?b=1&c=2", None, "http://example.com/a?b=1&c=2"),  # query order kept
    ("http://example.com/a/./b/../c", None, "http://example.com/a/c"),  # dot segments
    ("http://example.com/../a", None, "http://example.com/a"),  # .. above root
    ("http://example.com/a/b/..", None, "http://example.com/a/"),
    ("http://example.com/a/.", None, "http://example.com/a/"),
    ("http://example.com/%7euser/%7Ea", None, "http://example.com/~user/~a"),  # unreserved decoded
    ("http://example.com/%41%62%2d", None, "http://example.com/Ab-"),
    ("http://example.com/a%2fb", None, "http://example.com/a%2Fb"),  # reserved stays encoded, hex upper
    ("http://example.com/a%3f?x=%3d", None, "http://example.com/a%3F?x=%3D"),
    ("http://example.com/a b", None, "http://example.com/a%20b"),  # space encoded
    ("http://example.com/café", None, "http://example.com/caf%C3%A9"),  # non-ASCII as UTF-8
    ("http://example.com/?q=café", None, "http://example.com/?q=caf%C3%A9"),
    ("http://example.com/100%", None, "http://example.com/100%"),  # a lone percent stays, as browsers send it
    ("http://example.com/%zz", None, "http://example.com/%zz"),
    ("http://bücher.de/", None, "http://xn--bcher-kva.de/"),  # IDNA
    ("http://BÜCHER.de/", None, "http://xn--bcher-kva.de/"),
    ("http://example.com./a", None, "http://example.com/a"),  # trailing dot of FQDN
    ("http://user:pass@example.com/", None, "http://example.com/"),  # user info dropped
    ("http://[::1]:8080/a", None, "http://[::1]:8080/a"),  # IPv6 literal
    ("http://127.0.0.1:8000/x", None, "http://127.0.0.1:8000/x"),
    ("  http://example.com/a  ", None, "http://example.com/a"),  # surrounding whitespace
    ("http://exa\tmple.com/a\n/b\r", None, "http://example.com/a/b"),  # tab/newline removed
    ("\x00\x1fhttp://example.com/", None, "http://example.com/"),  # C0 controls stripped
    ("http:\\\\example.com\\a\\b", None, "http://example.com/a/b"),  # backslashes as browsers do
    ("javascript:alert(1)", None, None),
    ("JavaScript:alert(1)", BASE, None),
    ("mailto:someone@example.com", None, None),
    ("data:text/html,<script>x</script>", None, None),
    ("ftp://example.com/file", None, None),
    ("file:///etc/passwd", None, None),
    ("", None, None),
    ("   ", None, None),
    (None, None, None),
    ("http://", None, None),  # no host
    ("http://exa mple.com/", None, None),  # space in host
    ("http://exa<mple.com/", None, None),
    ("http://ex%61mple.com/", None, "http://example.com/"),  # a host is percent-decoded, then parsed
    ("http://0x7f.1/", None, "http://127.0.0.1/"),  # IPv4 in its numeric forms
    ("http://2130706433/", None, "http://127.0.0.1/"),
    ("http://1.2.3.256/", None, None),
    ("http://[0:0:0:0:0:0:0:1]/", None, "http://[::1]/"),  # IPv6 compressed
    ("http://faß.de/", None, "http://xn--fa-hia.de/"),  # UTS #46, not IDNA2003's fass.de
    ("http:example.com/", None, "http://example.com/"),  # no slashes after a special scheme
    ("http://" + "a" * MAX_URL_LENGTH + ".com/", None, None),  # over-long
    ("http://example.com/" + "a" * (MAX_URL_LENGTH + 10), None, None),
    # relative resolution against a base
    ("other.html", BASE, "http://example.com/dir/other.html"),
    ("../up.html", BASE, "http://example.com/up.html"),
    ("../../../up.html", BASE, "http://example.com/up.html"),
    ("/root.html", BASE, "http://example.com/root.html"),
    ("//cdn.example.org/x", BASE, "http://cdn.example.org/x"),  # scheme-relative
    ("///cdn.example.org/x", BASE, "http://cdn.example.org/x"),  # any number of slashes, as browsers do
    ("http:other.html", BASE, "http://example.com/dir/other.html"),  # the base's own scheme: relative
    ("?q=2", BASE, "http://example.com/dir/page.html?q=2"),
    ("#section", BASE, "http://example.com/dir/page.html?q=1"),  # same page
    ("./", BASE, "http://example.com/dir/"),
    ("sub/./x/../y.html#f", BASE, "http://example.com/dir/sub/y.html"),
    ("https://other.example/a", BASE, "https://other.example/a"),
    ("HTTPS://Other.Example:443", BASE, "https://other.example/"),
    # <base href> is just another base
    ("page.html", "https://mirror.example/root/", "https://mirror.example/root/page.html"),
    ("/abs.html", "https://mirror.example/root/", "https://mirror.example/abs.html"),
]


@pytest.mark.parametrize("url, base, expected", CASES)
def test_canonical(url, base, expected):
    assert canonical(url, base) == expected


def test_table_is_large():
    assert len(CASES) >= 40


@pytest.mark.parametrize("url, base, expected", [case for case in CASES if case[2] is not None])
def test_canonical_is_idempotent(url, base, expected):
    assert canonical(expected) == expected


def test_shared_resolution_cache_keeps_bases_apart():
    # Two pages in different directories resolve the same href differently.
    assert canonical("x.html", "http://h/a/p.html") == "http://h/a/x.html"
    assert canonical("x.html", "http://h/b/p.html") == "http://h/b/x.html"
    assert canonical("?x", "http://h/a/p.html") == "http://h/a/p.html?x"
    assert canonical("?x", "http://h/a/q.html") == "http://h/a/q.html?x"


@pytest.mark.parametrize(
    "url, host",
    [
        ("http://example.com/a", "example.com"),
        ("http://example.com:8080/", "example.com:8080"),
        ("https://[::1]/", "[::1]"),
    ],
)
def test_host_of(url, host):
    assert host_of(url) == host


_LOWER_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
_SEGMENT_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ" + _LOWER_ALNUM + "_~-"


def _label(first: str) -> st.SearchStrategy[str]:
    """A host label of ``urls._NORMAL``: ``first`` then, or not, up to 61 of [a-z0-9-] and [a-z0-9]."""
    middle = st.tuples(st.text(_LOWER_ALNUM + "-", max_size=61), st.sampled_from(_LOWER_ALNUM)).map("".join)
    return st.tuples(st.sampled_from(first), st.just("") | middle).map("".join)


_SEGMENT = st.lists(st.text(_SEGMENT_CHARS, min_size=1), min_size=1).map(".".join)
# Every string of urls._NORMAL's language, drawn a piece at a time: from_regex draws one character at a time
_NORMAL_URLS = st.builds(
    lambda scheme, labels, top, segments, last: (
        f"{scheme}://{''.join(label + '.' for label in labels)}{top}/"
        + "".join(segment + "/" for segment in segments)
        + last
    ),
    st.sampled_from(["http", "https"]),
    st.lists(_label(_LOWER_ALNUM)),
    _label("abcdefghijklmnopqrstuvwxyz"),
    st.lists(_SEGMENT),
    st.just("") | _SEGMENT,
)


@settings(max_examples=500, deadline=None)
@given(_NORMAL_URLS)
def test_urls_taken_as_normal_are_normal(url):
    assert urls._NORMAL.match(url)
    assert urls.canonical_many([url]) == [urls.canonical(url)]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "%2d",
                "%2D",
                "%41",
                "%7e",
                "%7E",
                "%20",
                "%2F",
                "%ff",
                "%FF",
                "%c3%a9",
                "a",
                "/",
                "%5f",
                "%5F",
                "%60",
                "%3A",
            ]
        ),
        max_size=12,
    )
)
def test_escapes_left_alone_only_when_nothing_to_fix(parts):
    """The check that skips the escape rewrite agrees with doing it: same answer either way."""
    text = "".join(parts)
    rewritten = urls._PERCENT.sub(urls._fix_escape, text)
    assert (rewritten != text) == bool(urls._ESCAPE_TO_FIX.search(text))


# ------------------------------------------------------------------ WPT's urltestdata.json

WPT_URL_TESTS = Path(__file__).parent / "data" / "wpt-url" / "urltestdata.json"
WPT_CASES = [case for case in json.loads(WPT_URL_TESTS.read_text(encoding="utf-8")) if isinstance(case, dict)]
# WPT's base for cases that parse relative to a base without an opaque path (`relativeTo`);
# an https base for inputs that start with `https:`.
WPT_HIERARCHICAL_BASE = "http://example.org/foo/bar"

# The http(s) cases where our answer is neither the browser's href in our normal form nor, where the
# standard rejects the URL, None; (input, base): the reason.
TRAILING_DOT = "our normalisation: a host's trailing dots dropped, which leaves no host: rejected"
WPT_DIFFERENCES: dict[tuple[str, str | None], str] = {
    ("http://./", None): TRAILING_DOT,
    ("http://../", None): TRAILING_DOT,
    ("http://foo.09..", None): "our normalisation: a host's trailing dots dropped leaves foo.09, which the "
    "standard reads as a bad IPv4 address: rejected",
    ("\\\\\\.\\Y:", WPT_HIERARCHICAL_BASE): TRAILING_DOT,  # the host is "."
    ("\\\\\\.\\y:", WPT_HIERARCHICAL_BASE): TRAILING_DOT,
}


def _scheme(text: str | None) -> str | None:
    """The scheme a URL string starts with, as the standard reads it (after stripping), if any."""
    if text is None:
        return None
    text = re.sub(r"[\t\n\r]", "", text.strip("".join(map(chr, range(0x21)))))
    match = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):", text)
    return match.group(1).lower() if match else None


def _is_http_case(case: dict) -> bool:
    """Whether the case's answer is an http(s) URL, or would be if the standard did not reject it."""
    if "href" in case:
        return _scheme(case["href"]) in ("http", "https")
    return (_scheme(case["input"]) or _scheme(case["base"])) in ("http", "https")


_UNRESERVED_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


def _escape_in_our_form(match: re.Match) -> str:
    char = chr(int(match.group(1), 16))
    return char if re.fullmatch(r"[A-Za-z0-9._~-]", char) else match.group(0).upper()


def our_form(href: str) -> str:
    """A browser's href with our documented normalisations (rankstore.urls' docstring) applied."""
    parts = urlsplit(href)
    netloc = parts.netloc.rpartition("@")[2]  # user info dropped
    if not netloc.startswith("["):
        host, colon, port = netloc.partition(":")
        netloc = host.rstrip(".") + colon + port  # a host's trailing dot dropped
    path = _UNRESERVED_ESCAPE.sub(_escape_in_our_form, parts.path)  # unreserved escapes decoded, hex upper
    query = _UNRESERVED_ESCAPE.sub(_escape_in_our_form, parts.query)
    return f"{parts.scheme}://{netloc}{path}" + (f"?{query}" if query else "")  # fragment, empty query dropped


HTTP_CASES = [case for case in WPT_CASES if _is_http_case(case)]
OTHER_CASES = [case for case in WPT_CASES if not _is_http_case(case)]


def _case_id(case: dict) -> str:
    return ascii(case["input"])[1:-1][:60] + ("" if case["base"] is None else " @ " + ascii(case["base"])[1:-1][:40])


def test_wpt_has_the_http_cases():
    assert len(HTTP_CASES) > 300


@pytest.mark.parametrize("case", HTTP_CASES, ids=_case_id)
def test_wpt_http_cases(case):
    """Each http(s) case: the browser's href in our normal form, None where the standard rejects it."""
    expected = None if case.get("failure") else our_form(case["href"])
    found = canonical(case["input"], case["base"])
    if (case["input"], case["base"]) in WPT_DIFFERENCES:
        assert found != expected  # still a difference: else it leaves the list
    else:
        assert found == expected


@pytest.mark.parametrize("case", HTTP_CASES, ids=_case_id)
def test_wpt_answers_are_normal(case):
    """What canonical returns it returns again, and canonical_many takes it as it is."""
    found = canonical(case["input"], case["base"])
    if found is not None:
        assert canonical(found) == found
        assert urls.canonical_many([found]) == [found]


@pytest.mark.parametrize("case", OTHER_CASES, ids=_case_id)
def test_wpt_other_schemes_are_rejected(case):
    assert canonical(case["input"], case["base"]) is None


@pytest.mark.parametrize("case", [case for case in WPT_CASES if "relativeTo" in case], ids=_case_id)
def test_wpt_relative_only_cases_resolve(case):
    """Inputs that fail alone but parse against a hierarchical base (WPT's `relativeTo`)."""
    base = (
        WPT_HIERARCHICAL_BASE.replace("http:", _scheme(case["input"]) + ":", 1)
        if _scheme(case["input"]) == "https"
        else WPT_HIERARCHICAL_BASE
    )
    if (case["input"], base) in WPT_DIFFERENCES:
        assert canonical(case["input"], base) is None
    else:
        assert canonical(case["input"], base) is not None


WPT_HOST_TESTS = [
    case
    for case in json.loads((WPT_URL_TESTS.parent / "toascii.json").read_text(encoding="utf-8"))
    if isinstance(case, dict)
]


@pytest.mark.parametrize("case", WPT_HOST_TESTS, ids=lambda case: ascii(case["input"])[1:-1][:60])
def test_wpt_hosts_to_ascii(case):
    """WPT's host tests (UTS #46 and host parsing), read as WPT reads them: in `https://{input}/x`."""
    expected = None if case["output"] is None else our_form(f"https://{case['output']}/x")
    assert canonical(f"https://{case['input']}/x") == expected


def test_wpt_differences_are_wpt_cases():
    relative_only = {(case["input"], WPT_HIERARCHICAL_BASE) for case in WPT_CASES if "relativeTo" in case}
    assert set(WPT_DIFFERENCES) <= {(case["input"], case["base"]) for case in HTTP_CASES} | relative_only


# ------------------------------------------------------------------ properties

# URL-ish text: characters and pieces that the parser treats specially
_URL_TEXT = st.lists(
    st.sampled_from(list("aAz09.:/?#@%[]\\ \t-_~'xß") + ["%2e", "%41", "xn--", "0x", "http:", "https://", "//", ".."]),
    max_size=16,
).map("".join)
_BASES = st.sampled_from(
    [
        "http://h/a/p.html",
        "http://h/a/p.html?q=1",
        "http://h/a/",
        "http://h",
        "http://h?x/y",
        "https://h/a/..",
        "https://h/a/%2E",
        "http://u@h./a/b#f/g",
        "http://h/a\\b/c",
        "http://h/a/b\\c",
        "HTTP://H/a/b",
        "http://h/a/b ",
        "http://[::1]/a/b",
    ]
)


@settings(max_examples=2000, deadline=None)
@given(_URL_TEXT.map(lambda text: "http://" + text))
def test_canonical_answers_are_fixed_points(url):
    found = canonical(url)
    if found is not None:
        assert canonical(found) == found


@settings(max_examples=2000, deadline=None)
@given(_BASES, st.lists(_URL_TEXT, min_size=1, max_size=4))
def test_resolver_shares_answers_only_where_the_base_does_not_matter(base, hrefs):
    """The directory cache gives what resolving against the whole base gives, also for the base's
    neighbours that share its directory."""
    neighbour = base.replace("p.html", "other.html").replace("/b", "/c")
    for page in (base, neighbour):
        resolve = urls.resolver(page)
        for href in hrefs:
            assert resolve(href) == urls._normal_form(urls._whatwg_href(href, page))


@pytest.mark.parametrize(
    "url, expected",
    [
        ("http://a/%%41a", "http://a/%%41a"),  # "%Aa" would be an escape of another byte
        ("http://a/%4%31", "http://a/%4%31"),
        ("http://a/%%34%31", "http://a/%4%31"),
        ("http://a/%%41%61", "http://a/%A%61"),
        ("http://a/%%41z", "http://a/%Az"),
        ("http://a/%41%62", "http://a/Ab"),
    ],
)
def test_a_decoded_escape_never_makes_a_new_one_beside_a_lone_percent(url, expected):
    assert canonical(url) == expected
    assert canonical(expected) == expected


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("?#hHtps:/. \t\n\x00\x1fa%é")), max_size=12))
def test_page_bound_answers_as_its_definition(href):
    from rankstore.urls import MAX_URL_LENGTH, _clean, _depends_on_page, page_bound

    assert page_bound(href) == (len(href) <= MAX_URL_LENGTH and _depends_on_page(_clean(href)))


@pytest.mark.parametrize(
    "href, bound",
    [
        ("", True),
        ("?q=1", True),
        ("#top", True),
        ("  ?q", True),
        ("http:?q", True),
        ("HTTPS:", True),
        ("a.html", False),
        ("/x?q", False),
        ("http://h/?q", False),
        ("./?q", False),
        ("h.html", False),
    ],
)
def test_page_bound(href, bound):
    from rankstore.urls import page_bound

    assert page_bound(href) is bound
