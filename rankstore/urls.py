"""The one URL normal form used by the build, the CLI and the proxy alike.

``canonical(url, base=None)`` resolves ``url`` against ``base`` and returns the
normal form of the result, or ``None`` when it is not an http(s) URL worth
keeping.  The rules (RFC 3986 section 6 plus the WHATWG URL standard's
whitespace handling):

* leading/trailing whitespace and C0 controls stripped, tab/CR/LF removed inside;
* only ``http`` and ``https`` are kept; scheme and host lower-cased;
* hosts IDNA-encoded (``bücher.de`` -> ``xn--bcher-kva.de``), trailing dot dropped;
* user info dropped (it never identifies a different page);
* default ports (80, 443) dropped, invalid ports rejected;
* dot segments resolved, an empty path becomes ``/``;
* percent-encoding normalised: hex digits upper-cased, unreserved characters
  decoded, characters that must be encoded (spaces, non-ASCII) encoded as UTF-8;
* the fragment dropped, an empty query dropped;
* URLs longer than ``MAX_URL_LENGTH`` rejected.
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import quote, urljoin, urlsplit

__all__ = ["MAX_URL_LENGTH", "canonical", "canonical_many", "host_of", "resolver"]

MAX_URL_LENGTH = 4096

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# Characters left as they are in a path or query (RFC 3986 pchar/query minus '%').
_PATH_SAFE = "/:@!$&'()*+,;=-._~"
_QUERY_SAFE = "/?:@!$&'()*+,;=-._~"
_CLEAN_PATH = re.compile(r"[A-Za-z0-9/:@!$&'()*+,;=\-._~]*\Z")
_CLEAN_QUERY = re.compile(r"[A-Za-z0-9/?:@!$&'()*+,;=\-._~]*\Z")
_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
# an escape that _fix_escape changes: lower-case hex, or an unreserved character (- . 0-9 A-Z _ a-z ~)
_ESCAPE_TO_FIX = re.compile(r"%(?:[0-9A-Fa-f][a-f]|[a-f][0-9A-F]|2[DE]|3[0-9]|4[1-9A-F]|5[0-9AF]|6[1-9A-F]|7[0-9AE])")
_STRIP = "".join(chr(c) for c in range(0x21))  # C0 controls and space
_INNER_WS = re.compile(r"[\t\n\r]")
_HOST_OK = re.compile(r"[a-z0-9\-._~!$&'()*+,;=]+\Z")
_DEFAULT_PORT = {"http": 80, "https": 443}
# URLs already in normal form, the usual case in a web graph (`https://example.com/`): lower-case
# ASCII host labels, none IDNA-encoded, a top-level label that starts with a letter (so no IPv4
# form), no port, a path of plain segments without dot segments, no query.
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_SEGMENT = r"[A-Za-z0-9_~-]+(?:\.[A-Za-z0-9_~-]+)*"
_NORMAL = re.compile(rf"https?://(?:{_LABEL}\.)*[a-z](?:[a-z0-9-]{{0,61}}[a-z0-9])?/(?:{_SEGMENT}/)*(?:{_SEGMENT})?\Z")


def _fix_escape(match: re.Match) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else "%" + match.group(1).upper()


def _normalise_encoding(text: str, safe: str, clean: re.Pattern) -> str:
    if clean.match(text):
        return text
    text = quote(text, safe=safe + "%", encoding="utf-8", errors="surrogatepass")
    if "%" in text:
        text = _BAD_PERCENT.sub("%25", text)
        if _ESCAPE_TO_FIX.search(text):
            text = _PERCENT.sub(_fix_escape, text)
    return text


def _remove_dot_segments(path: str) -> str:
    if "." not in path:
        return path
    segments = path.split("/")
    if not any(s in (".", "..") for s in segments):
        return path
    output: list[str] = []
    for segment in segments[1:]:
        if segment == ".":
            continue
        if segment == "..":
            if output:
                output.pop()
            continue
        output.append(segment)
    if segments[-1] in (".", ".."):
        output.append("")
    return "/" + "/".join(output)


def _normalise_host(host: str) -> str | None:
    host = host.rstrip(".")
    if not host:
        return None
    if host.startswith("["):
        return host if re.fullmatch(r"\[[0-9a-f:.]+\]", host) else None
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return None
    host = host.lower()
    if "%" in host or not _HOST_OK.match(host):
        return None
    return host


@lru_cache(maxsize=65536)
def _canonical_absolute(url: str) -> str | None:
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORT:
        return None
    netloc = parts.netloc.rpartition("@")[2]
    if netloc.startswith("["):
        close = netloc.find("]")
        if close < 0:
            return None
        host, port_text = netloc[: close + 1].lower(), netloc[close + 1 :]
        if port_text and not port_text.startswith(":"):
            return None
        port_text = port_text[1:]
    else:
        host, _, port_text = netloc.partition(":")
    host = _normalise_host(host)
    if host is None:
        return None
    if port_text:
        if not port_text.isdigit() or int(port_text) > 65535:
            return None
        if int(port_text) != _DEFAULT_PORT[scheme]:
            host = f"{host}:{int(port_text)}"
    path = _remove_dot_segments(_normalise_encoding(parts.path, _PATH_SAFE, _CLEAN_PATH)) or "/"
    if not path.startswith("/"):
        path = "/" + path
    query = parts.query
    if query:
        query = "?" + _normalise_encoding(query, _QUERY_SAFE, _CLEAN_QUERY)
    result = f"{scheme}://{host}{path}{query}"
    return result if len(result) <= MAX_URL_LENGTH else None


def canonical(url: str | None, base: str | None = None) -> str | None:
    """Return the normal form of ``url`` (resolved against ``base``), or None.

    >>> canonical("../b/./c.html#top", "HTTP://Example.COM:80/a/x/")
    'http://example.com/a/b/c.html'
    >>> canonical("mailto:someone@example.com") is None
    True
    """
    if not url:
        return None
    if len(url) > MAX_URL_LENGTH:
        return None
    url = url.strip(_STRIP)
    if "\t" in url or "\n" in url or "\r" in url:
        url = _INNER_WS.sub("", url)
    if not url:
        return None
    if "\\" in url:
        # Browsers treat backslashes in http(s) URLs as slashes.
        url = url.replace("\\", "/")
    if "#" in url:
        url = url[: url.index("#")]
    if base is None:
        return _canonical_absolute(url) if url else None
    if not url:
        return canonical(base)
    if url[0] != "?" and base.count("/") >= 3:
        # Resolution depends on the base's directory only: share the cache across pages.
        directory = base.split("?", 1)[0]
        base = directory[: directory.rfind("/") + 1]
    return _resolve(base, url)


@lru_cache(maxsize=262144)
def _resolve(base: str, url: str) -> str | None:
    try:
        joined = urljoin(base, url)
    except ValueError:
        return None
    return _canonical_absolute(joined)


def canonical_many(urls: list[str]) -> list[str | None]:
    """:func:`canonical` of each URL; those already in a plain normal form are taken as they are."""
    normal = _NORMAL.match
    return [url if len(url) <= MAX_URL_LENGTH and normal(url) and "xn--" not in url else canonical(url)
            for url in urls]


def host_of(url: str) -> str:
    """The host (with port, if any) of a canonical URL."""
    start = url.index("//") + 2
    end = url.find("/", start)
    return url[start:end] if end >= 0 else url[start:]


# base directory -> {href: canonical URL}, shared across pages: most links of a
# site repeat from page to page.
_resolved: dict[str, dict[str, str | None]] = {}
_RESOLVED_LIMIT = 500_000  # hrefs remembered in all before starting over
_remembered = [0]


def resolver(base: str):
    """A function href -> canonical URL for links on a page whose base is ``base``."""
    path = base.split("?", 1)[0]
    directory = path[: path.rfind("/") + 1]
    if _remembered[0] > _RESOLVED_LIMIT:
        _resolved.clear()
        _remembered[0] = 0
    cache = _resolved.get(directory)
    if cache is None:
        cache = _resolved[directory] = {}

    def resolve(href: str) -> str | None:
        try:
            return cache[href]  # only hrefs whose answer is the directory's alone are kept
        except KeyError:
            pass
        head = href.split("#", 1)[0]
        if not head or head[0] in "? \t\n\r\f" or head[-1] <= " ":
            return canonical(href, base)  # depends on the page's own URL, or unusual: not kept
        target = cache[href] = canonical(head, base)
        _remembered[0] += 1
        return target

    return resolve
