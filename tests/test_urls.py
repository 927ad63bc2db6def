"""The one URL normal form: a table of cases, each with its reason."""

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
    ("http://example.com/100%", None, "http://example.com/100%25"),  # lone percent
    ("http://example.com/%zz", None, "http://example.com/%25zz"),
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
    ("http://" + "a" * MAX_URL_LENGTH + ".com/", None, None),  # over-long
    ("http://example.com/" + "a" * (MAX_URL_LENGTH + 10), None, None),
    # relative resolution against a base
    ("other.html", BASE, "http://example.com/dir/other.html"),
    ("../up.html", BASE, "http://example.com/up.html"),
    ("../../../up.html", BASE, "http://example.com/up.html"),
    ("/root.html", BASE, "http://example.com/root.html"),
    ("//cdn.example.org/x", BASE, "http://cdn.example.org/x"),  # scheme-relative
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


@pytest.mark.parametrize("url, host", [
    ("http://example.com/a", "example.com"),
    ("http://example.com:8080/", "example.com:8080"),
    ("https://[::1]/", "[::1]"),
])
def test_host_of(url, host):
    assert host_of(url) == host


@settings(max_examples=500, deadline=None)
@given(st.from_regex(urls._NORMAL, fullmatch=True))
def test_urls_taken_as_normal_are_normal(url):
    assert urls.canonical_many([url]) == [urls.canonical(url)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["%2d", "%2D", "%41", "%7e", "%7E", "%20", "%2F", "%ff", "%FF", "%c3%a9", "a", "/",
                                 "%5f", "%5F", "%60", "%3A"]), max_size=12))
def test_escapes_left_alone_only_when_nothing_to_fix(parts):
    """The check that skips the escape rewrite agrees with doing it: same answer either way."""
    text = "".join(parts)
    rewritten = urls._PERCENT.sub(urls._fix_escape, text)
    assert (rewritten != text) == bool(urls._ESCAPE_TO_FIX.search(text))
