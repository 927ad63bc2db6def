"""The one URL normal form used by the build, the CLI and the proxy alike.

``canonical(url, base=None)`` resolves ``url`` against ``base`` and returns the
normal form of the result, or ``None`` when it is not an http(s) URL worth
keeping.  URLs are read as browsers read them: parsing, host parsing (IPv4 in
its numeric forms, IPv6 compressed), UTS #46 IDNA (``faß.de`` ->
``xn--fa-hia.de``) and percent-encoding follow the WHATWG URL Standard, through
ada (the parser Node.js uses); what the standard rejects is ``None``.  On top of
the standard's ``href`` (which already drops default ports and gives an empty
path ``/``), our normalisations, each because it never names a different page:

* the fragment dropped;
* user info dropped;
* percent-escapes of unreserved characters (``A-Z a-z 0-9 - . _ ~``) decoded,
  the hex digits of the others upper-cased (RFC 3986 section 6.2.2);
* the trailing dots of a host dropped (``example.com.`` -> ``example.com``), and the URL
  rejected when what is left is no host by itself (``.``, ``foo.09``, which the standard
  reads as a bad IPv4 address);
* an empty query dropped (``/a?`` -> ``/a``);
* only ``http`` and ``https`` kept;
* URLs longer than ``MAX_URL_LENGTH`` rejected.

``tests/test_urls.py`` holds the code to WPT's ``urltestdata.json``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import NamedTuple

# ada's C API (ada_c.h) through the cffi module the ada-url package builds and its own adapter uses:
# one parse and one copy of the href, without the package's Python objects (2.1 us a URL against
# 7.1 us for ada_url.URL(url).href).  A private module: pyproject.toml holds ada-url to one major version.
from ada_url._ada_wrapper import ffi, lib  # compiled by cffi, no stubs

__all__ = ["MAX_URL_LENGTH", "canonical", "canonical_many", "host_of", "site_of", "sites_of", "resolver", "resolving",
           "Resolving"]  # fmt: skip

MAX_URL_LENGTH = 4096

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")
_LONE_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_HEX = frozenset("0123456789ABCDEFabcdef")
_HEX_CHARS = tuple(_HEX)  # for ``in`` on a string of one character (or none: "" is not a digit)
# an escape that _fix_escape changes: lower-case hex, or an unreserved character (- . 0-9 A-Z _ a-z ~)
_ESCAPE_TO_FIX = re.compile(r"%(?:[0-9A-Fa-f][a-f]|[a-f][0-9A-F]|2[DE]|3[0-9]|4[1-9A-F]|5[0-9AF]|6[1-9A-F]|7[0-9AE])")
_STRIP = "".join(chr(c) for c in range(0x21))  # C0 controls and space, stripped from both ends by the standard
_INNER_WS = re.compile(r"[\t\n\r]")  # removed anywhere by the standard
_SURROGATE = re.compile("[\ud800-\udfff]")
# URLs already in normal form, the usual case in a web graph (`https://example.com/`): lower-case
# ASCII host labels, none IDNA-encoded, a top-level label that starts with a letter (so no IPv4
# form), no port, a path of plain segments without dot segments, no query.
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_SEGMENT = r"[A-Za-z0-9_~-]+(?:\.[A-Za-z0-9_~-]+)*"
_NORMAL = re.compile(rf"https?://(?:{_LABEL}\.)*[a-z](?:[a-z0-9-]{{0,61}}[a-z0-9])?/(?:{_SEGMENT}/)*(?:{_SEGMENT})?\Z")
# a last path segment that the standard reads as a dot segment
_DOT_SEGMENTS = frozenset([".", "..", "%2e", ".%2e", "%2e.", "%2e%2e"])


def _fix_escape(match: re.Match) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else "%" + match.group(1).upper()


def _fix_escapes(text: str) -> str:
    """Escapes of unreserved characters decoded, the others' hex in upper case.

    Beside a ``%`` that starts no escape (the standard keeps it), a decoded
    hex digit could make a new escape (``%%41a`` would read ``%Aa``, then
    ``%AA``: another byte): such an escape stays as it is, upper-cased.
    """
    if not _LONE_PERCENT.search(text):
        return _PERCENT.sub(_fix_escape, text)
    out: list[str] = []
    tail = ""  # the output's last two characters
    at = 0
    for match in _PERCENT.finditer(text):
        out.append(text[at : match.start()])
        tail = (tail + text[at : match.start()])[-2:]
        char = chr(int(match.group(1), 16))
        joins = char in _HEX and (
            (tail[-1:] == "%" and text[match.end() : match.end() + 1] in _HEX_CHARS)
            or (tail[:1] == "%" and tail[1:] in _HEX_CHARS)
        )
        piece = char if char in _UNRESERVED and not joins else "%" + match.group(1).upper()
        out.append(piece)
        tail = (tail + piece)[-2:]
        at = match.end()
    out.append(text[at:])
    return "".join(out)


def _utf8(text: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError:  # lone surrogates: the standard reads a string as scalar values, these as U+FFFD
        return _SURROGATE.sub("\ufffd", text).encode()


def _whatwg_href(url: str, base: str | None) -> str | None:
    """The standard's serialisation of ``url`` parsed against ``base``, or None on failure."""
    data = _utf8(url)
    if base is None:
        parsed = lib.ada_parse(data, len(data))
    else:
        base_data = _utf8(base)
        parsed = lib.ada_parse_with_base(data, len(data), base_data, len(base_data))
    try:
        if not lib.ada_is_valid(parsed):
            return None
        href = lib.ada_get_href(parsed)
        return ffi.unpack(href.data, href.length).decode()
    finally:
        lib.ada_free(parsed)


def _normal_form(href: str | None) -> str | None:
    """Our normalisations of a standard href; None unless it is http(s)."""
    if href is None:
        return None
    if href.startswith("https://"):
        start = 8
    elif href.startswith("http://"):
        start = 7
    else:
        return None
    path_start = href.find("/", start)  # a special URL's path starts with "/"; "/" ends the authority
    authority = href[start:path_start]
    if "@" in authority:  # "@" inside user info is percent-encoded: the last one ends it
        authority = authority[authority.rindex("@") + 1 :]
    if "." in authority and authority[0] != "[":
        host, colon, port = authority.partition(":")
        if host[-1] == ".":
            host = host.rstrip(".")
            # "a.." is a domain to the standard but "a" might not be ("foo.09" ends in a number: IPv4)
            if not host or _whatwg_href(f"http://{host}/", None) != f"http://{host}/":
                return None
            authority = host + colon + port
    rest = href[path_start:]
    if "#" in rest:
        rest = rest[: rest.index("#")]
    if "?" in rest and rest.index("?") == len(rest) - 1:
        rest = rest[:-1]
    if "%" in rest and _ESCAPE_TO_FIX.search(rest):
        rest = _fix_escapes(rest)
    result = href[:start] + authority + rest
    return result if len(result) <= MAX_URL_LENGTH else None


def _clean(url: str) -> str:
    """What the standard strips first: C0 controls and spaces at both ends, tab and newlines inside;
    and the fragment, which we drop (the first "#" starts it, wherever it stands)."""
    url = url.strip(_STRIP)
    if "\t" in url or "\n" in url or "\r" in url:
        url = _INNER_WS.sub("", url)
    if "#" in url:
        cut = url.index("#")
        if not cut or url[cut - 1] > " ":  # else the standard keeps the blanks before it: left to the parser
            url = url[:cut]
    return url


@lru_cache(maxsize=65536)
def _canonical_absolute(url: str) -> str | None:
    return _normal_form(_whatwg_href(url, None))


def _directory(base: str) -> str | None:
    """``base`` cut after its path's last "/", when resolving against that gives the same answers for
    every URL that does not depend on the whole base (see _depends_on_page), so that pages of one
    directory share them; None when it might not."""
    if not base.startswith(("http://", "https://")) or "\\" in base or "\t" in base or "\n" in base or "\r" in base:
        return None
    end = len(base)
    for stop in "?#":
        if stop in base:
            end = min(end, base.index(stop))
    path_start = base.find("/", base.index("//") + 2, end)
    if path_start < 0:
        return None
    cut = base.rfind("/", path_start, end)
    last = base[cut + 1 : end]
    if last.lower() in _DOT_SEGMENTS or (last and last[-1] <= " "):  # the standard would resolve or strip it
        return None
    return base[: cut + 1]


def _depends_on_page(url: str) -> bool:
    """Whether ``url`` (cleaned) resolves against more of its base than the base's directory: an empty
    URL or a query alone, and the same after the base's own scheme (``http:?q``)."""
    if url[:5].lower() == "http:":
        url = url[5:]
    elif url[:6].lower() == "https:":
        url = url[6:]
    return not url or url[0] == "?"


def canonical(url: str | None, base: str | None = None) -> str | None:
    """Return the normal form of ``url`` (resolved against ``base``), or None.

    >>> canonical("../b/./c.html#top", "HTTP://Example.COM:80/a/x/")
    'http://example.com/a/b/c.html'
    >>> canonical("http://0x7f.1/")
    'http://127.0.0.1/'
    >>> canonical("mailto:someone@example.com") is None
    True
    """
    if url is None or len(url) > MAX_URL_LENGTH:
        return None
    url = _clean(url)
    if not base:
        return _canonical_absolute(url) if url else None
    if not _depends_on_page(url):
        base = _directory(base) or base
    return _resolve(base, url)


@lru_cache(maxsize=262144)
def _resolve(base: str, url: str) -> str | None:
    return _normal_form(_whatwg_href(url, base))


def canonical_many(urls: list[str]) -> list[str | None]:
    """:func:`canonical` of each URL; those already in a plain normal form are taken as they are."""
    normal = _NORMAL.match
    return [url if len(url) <= MAX_URL_LENGTH and normal(url) and "xn--" not in url else canonical(url) for url in urls]


def host_of(url: str) -> str:
    """The host (with port, if any) of a canonical URL."""
    start = url.index("//") + 2
    end = url.find("/", start)
    return url[start:end] if end >= 0 else url[start:]


_IPV4 = re.compile(r"\d+\.\d+\.\d+\.\d+\Z")  # what the URL Standard leaves of any IPv4 host
_PARENTS_LIMIT = 1 << 21  # parent names remembered before starting over


class _Sites:
    """The bundled Public Suffix List (ICANN and private sections: nothing is fetched at run time), asked
    once per parent name rather than once per host.

    The list's answer for ``first.rest`` is its answer for ``rest`` unless a rule names ``first.rest``
    itself (as a name, ``*.first.rest`` or ``!first.rest``) or a wildcard or exception rule sits on
    ``rest`` (``*.rest``, ``!rest``): the rules it reads for a name are those of the name's suffixes, longest
    first.  So a host's site is its parent's site (found the same way), or the host itself where the parent
    is a public suffix; hosts that share a parent (``a.example.com``, ``b.example.com``) cost a dict look-up,
    and the list is asked only of names that a rule names or sits above.  The rules come from the parser's
    own set (a private attribute): without it every name is asked of the list.
    """

    def __init__(self) -> None:
        from publicsuffixlist import PublicSuffixList

        self.psl = PublicSuffixList(_psl_rules(), accept_encoded_idn=False)
        rules = getattr(self.psl, "_publicsuffix", None)
        rules = rules if isinstance(rules, frozenset) else frozenset()
        self.named = frozenset(rule.removeprefix("!").removeprefix("*.") for rule in rules)
        self.special = frozenset(rule.removeprefix("!").removeprefix("*.") for rule in rules if rule[0] in "!*")
        self.shortcut = bool(rules)
        self.parents: dict[str, str | None] = {}  # name -> its site, None for a public suffix

    def site(self, name: str) -> str | None:
        """The registered domain of a lower-case host name without port; None where it is a public suffix."""
        first, _, rest = name.partition(".")
        if (
            first
            and rest
            and self.shortcut
            and name not in self.named
            and rest not in self.special
            and ".." not in rest
            and rest[-1] != "."
        ):
            parents = self.parents
            found = parents.get(rest, name)  # a name is never its own parent: the mark of one not seen
            if found is name:
                if len(parents) >= _PARENTS_LIMIT:
                    parents.clear()
                found = parents[rest] = self.site(rest)
            return name if found is None else found
        return self.psl.privatesuffix(name)

    def of(self, host: str) -> str:
        """:func:`site_of`, uncached; a host whose parent's site is known costs a few look-ups, inline."""
        if ":" in host or host[-1:].isdigit() or host[:1] == "[":  # an IP address, or a port
            if host[:1] == "[":  # IPv6
                return host
            name = host.rsplit(":", 1)[0] if ":" in host else host
            if _IPV4.match(name):
                return host
        else:
            name = host.lower()
            first, _, rest = name.partition(".")
            # only a name that passed site()'s checks is ever a parent: a hit needs this host's checks alone
            if first and name not in self.named and rest not in self.special:
                found = self.parents.get(rest, name)
                if found is not name:
                    return name if found is None else found
        return self.site(name.lower()) or host


def _psl_rules() -> list[str]:
    """The bundled list's rules, one a line, each with non-ASCII labels also in punycode: what the parser makes
    of the list with its IDN option, which encodes every rule, though most are ASCII already (every build reads
    the list)."""
    from publicsuffixlist import PSLFILE, encode_idn

    with open(PSLFILE, encoding="utf-8") as file:
        text = file.read()
    rules = []
    for line in text.splitlines():
        rule = line.split(" ", 1)[0].rstrip().lower()
        if not rule or rule.startswith("//"):
            continue
        rules.append(rule)
        if not rule.isascii():
            encoded = encode_idn(rule.lstrip("!"))
            rules.append("!" + encoded if rule[0] == "!" else encoded)
    return rules


@lru_cache(maxsize=1)
def _sites() -> _Sites:
    return _Sites()


@lru_cache(maxsize=1 << 16)
def site_of(host: str) -> str:
    """The site of a host (with its port, as ``host_of`` gives it): its registered domain, the Public Suffix
    List's eTLD+1 with the list's private section, as browsers define a site (``user.github.io``;
    ``example.co.uk`` for ``a.b.example.co.uk``), the port dropped.  A host with no registered domain stands
    as its own site, port and all: an IP address, ``localhost``, a public suffix itself, a single label."""
    return _sites().of(host)


def sites_of(hosts: Iterable[str]) -> list[str]:
    """:func:`site_of` of each host, without its per-call cache (a build's new hosts come once each)."""
    of = _sites().of
    return [of(host) for host in hosts]


# base directory -> {href: canonical URL}, shared across pages: most links of a
# site repeat from page to page.
_resolved: dict[str, dict[str, str | None]] = {}
_RESOLVED_LIMIT = 500_000  # hrefs remembered in all before starting over
_remembered = [0]


def shared_by(base: str) -> str | None:
    """What the answers of ``resolver(base)`` depend on, where other pages may share them (its directory):
    or None, where they depend on the whole base."""
    return _directory(base)


def page_bound(href: str) -> bool:
    """Does ``href`` resolve against more of its base than the directory (an empty URL, a query alone)?"""
    first = href[:1]
    if first and first not in _STRIP and first not in _MAY_BIND:  # most hrefs: a path, a name, "/", "."
        return False
    return len(href) <= MAX_URL_LENGTH and _depends_on_page(_clean(href))


_MAY_BIND = "?#hH"  # the first characters of an href that may be bound to its page (?q, #, http:?q)


class Resolving(NamedTuple):
    """How a page's hrefs are resolved: ``resolve`` (href -> canonical URL, or None) and the answers it keeps
    for the page's directory (href -> answer), shared with the other pages of that directory; None where its
    answers depend on the whole base."""

    resolve: Callable[[str], str | None]
    cache: dict[str, str | None] | None


def resolver(base: str) -> Callable[[str], str | None]:
    """A function href -> canonical URL for links on a page whose base is ``base``."""
    return resolving(base).resolve


def resolving(base: str) -> Resolving:
    """:func:`resolver` of ``base``, with the answers it keeps (which a reader may look up first itself)."""
    directory = _directory(base)
    if _remembered[0] > _RESOLVED_LIMIT:
        _resolved.clear()
        _remembered[0] = 0
    if directory is None:  # answers may depend on the whole base: nothing to share
        return Resolving(lambda href: canonical(href, base), None)
    cache = _resolved.get(directory)
    if cache is None:
        cache = _resolved[directory] = {}

    def resolve(href: str) -> str | None:
        try:
            return cache[href]
        except KeyError:
            pass
        if len(href) > MAX_URL_LENGTH:
            return None
        url = _clean(href)
        if _depends_on_page(url):
            return _resolve(base, url)
        target = cache[href] = _resolve(directory, url)
        _remembered[0] += 1
        return target

    return Resolving(resolve, cache)
