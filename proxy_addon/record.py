"""Recording what the user browses: ``pagerank-proxy --record DIR`` (opt-in; off by default).

For each HTML page the PageRank addon annotates, one JSON line goes to ``DIR/pages-<UTCSTAMP>-<PID>.jsonl``:
the page's URL, status, title, fetch time and out-links (nofollow, anchor text), read by the build's own
extractor (:func:`rankstore.extract.extract`), so that ``rankstore build DIR`` finds the links a crawl of the
page finds.  With ``pagerank_record_warc`` the same responses go to ``DIR/responses-<UTCSTAMP>-<PID>.warc.gz``
too, one gzip member a record: a response, or for a body the file holds already (compared byte for byte), a
revisit record naming that response (:func:`revisit_member`).  The format is the record contract's
(docs/ARCHITECTURE.md, "The record").

The record holds what the user chose, nothing a page chose.  Never recorded: the proxy's own pages (never
annotated), what is not a top-level navigation (a request whose ``Sec-Fetch-Dest`` is not ``document``: a
frame, a ``fetch()``, an image; a request without Fetch Metadata is recorded), a response to a request that
carried an ``Authorization`` header, a host that matches a ``pagerank_record_exclude`` pattern (with or without
its port; ``*.bank.example`` covers ``bank.example`` too), the page URL's query string unless
``pagerank_record_queries`` (link targets keep theirs: they are other pages' URLs), and, in any URL, the query
parameters that carry secrets (:data:`SECRET_PARAMETERS`).  A page answered ``Cache-Control: no-store`` or
``private`` is a visit without title, links or WARC body unless ``pagerank_record_private``.

The record's folder and files are made readable by their owner alone (0700, 0600), whatever the umask; a
folder that was there keeps its mode.

The addon calls this one's hooks from its own, as it does :mod:`.deadlines`'.  This process decides what is
recorded (:meth:`Recorder.take`: a :class:`~.jobs.RecordJob`); a page's record (its line and WARC member) is
made by :func:`make_record` beside its rewrite, where the addon says: a rewriting worker process (the wire
format is :mod:`.jobs`'), or a thread without workers.  This process appends them, before the client gets
the page, each with one ``write()`` on a file opened ``O_APPEND``, unbuffered: a proxy killed outright loses
at most the page it was answering.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import fnmatch
import hashlib
import json
import logging
import os
import random
import re
import struct
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import NamedTuple
from urllib.parse import unquote_plus, urlsplit, urlunsplit

from mitmproxy import ctx, exceptions, http
from mitmproxy.net.http import url as mitm_url

from rankstore.extract import extract
from rankstore.sources.record import (
    PAGES_PREFIX,
    PAGES_SUFFIX,
    RECORD_FILE,
    RECORD_FORMAT,
    RECORD_VERSION,
    WARC_PREFIX,
    WARC_SUFFIX,
)
from rankstore.urls import canonical

from .bodies import decode
from .jobs import PageJob, Recorded, RecordJob

try:  # ISA-L's deflate (isal): a page's member in a fraction of zlib's time
    from isal import isal_zlib as _isal_zlib
except ImportError:
    _isal_zlib = None  # type: ignore[assignment]
# a gzip member's CRC-32 of a page's body: ISA-L's where it is installed (the same sum, several times faster)
_crc32 = zlib.crc32 if _isal_zlib is None else _isal_zlib.crc32

__all__ = [
    "RecordSettings",
    "HostPattern",
    "SECRET_PARAMETERS",
    "RecordedLink",
    "RecordedPage",
    "ResponseHead",
    "Recorder",
    "Making",
    "Recording",
    "RecordFiles",
    "parse_record_settings",
    "exclude_patterns",
    "excluded_host",
    "private_reason",
    "private_response",
    "secret_parameter",
    "without_secrets",
    "recorded_page",
    "warc_member",
    "revisit_member",
    "payload_digest",
    "WarcOriginal",
    "REVISIT_PROFILE",
    "deflated_body",
    "Deflater",
    "DEFLATER",
    "ISAL",
    "ZLIB",
    "FirstMember",
    "recorded_url",
    "make_record",
    "PageKey",
    "RevisitCache",
    "FORMAT",
    "VERSION",
]

log = logging.getLogger(__name__)
# the format as its reader (rankstore.sources.record) names it: one source for both sides
FORMAT, VERSION, MARKER = RECORD_FORMAT, RECORD_VERSION, RECORD_FILE
OPTIONS = (
    "pagerank_record",
    "pagerank_record_warc",
    "pagerank_record_exclude",
    "pagerank_record_queries",
    "pagerank_record_private",
)
_STAMP = "%Y%m%dT%H%M%SZ"
_WHEN = "%Y-%m-%dT%H:%M:%SZ"
# a WARC member written in the event loop at most (a larger one goes to a thread: the disk may be slow)
WARC_IN_LOOP = 256 * 1024
DEFLATE_IN_LOOP = 64 * 1024  # a first visit's body compressed in the loop at most (a larger one in a thread)
# response headers a WARC keeps none of: the body is kept decoded and whole, and a cookie is the user's own
_WARC_DROPPED = frozenset((b"content-encoding", b"content-length", b"transfer-encoding", b"set-cookie"))

# Query parameters that carry secrets, dropped from every URL the record keeps (a page's, even with
# pagerank_record_queries, and its links' targets; the WARC's target URI is the page's): a parameter is
# secret when its name, lower-cased and percent-decoded (``user[password]`` read as ``password``), is one of
# these words, or ends with one after ``_``, ``-`` or ``.`` (``reset_token``, ``x-api-key``, ``X-Amz-Signature``)
# or as a capitalised word (``accessToken``, ``sessionKey``).  Names written as one word (``accesstoken``)
# are listed whole.  The same rule takes ``;jsessionid=...`` path parameters out of a URL's path.
SECRET_PARAMETERS = frozenset(
    {
        # tokens and keys
        "token", "key", "apikey", "api_key", "accesstoken", "authtoken", "refreshtoken", "idtoken",
        "csrftoken", "xsrftoken", "csrfmiddlewaretoken", "accesskey", "authkey", "secretkey", "privatekey",
        "passkey", "jwt", "bearer", "credential", "credentials", "secret", "hmac",
        # sessions
        "session", "sessionid", "session_id", "sessid", "phpsessid", "jsessionid", "aspsessionid", "sessionkey", "sid",
        # log-in, its answers and resets
        "auth", "authorization", "password", "passwd", "pwd", "pass", "passphrase", "pin", "otp", "totp",
        "mfa", "code", "verifier", "state", "relaystate", "samlrequest", "samlresponse", "ticket", "reset",
        "nonce", "csrf", "xsrf", "signature", "sig",
    }
)  # fmt: skip


# how a page's record is made, given its raw body and its job: a future of the record (in a thread, a worker)
Making = Callable[[bytes, RecordJob], "asyncio.Future[Recorded | None]"]


@dataclass(frozen=True)
class Recording:
    """A page's record on its way (:meth:`Recorder.take`), where it is made, in words (the flow's note), and
    the page's key in the revisits' cache, if it is kept there."""

    future: asyncio.Future[Recorded | None]
    place: str
    key: PageKey | None = None


class HostPattern(NamedTuple):
    """A ``pagerank_record_exclude`` pattern, read: a host (fnmatch, lower case, no trailing dot, an IPv6
    address without its brackets) and the port it names (fnmatch too), or None for every port."""

    host: str
    port: str | None


@dataclass(frozen=True)
class RecordSettings:
    """The recording options, checked."""

    directory: str
    warc: bool = False
    exclude: tuple[HostPattern, ...] = ()
    queries: bool = False
    private: bool = False  # pages answered Cache-Control: no-store or private recorded whole


@dataclass(frozen=True)
class RecordedLink:
    url: str
    nofollow: bool
    anchor: str | None


@dataclass(frozen=True)
class RecordedPage:
    """One line of a record: a page as the proxy saw it, and a visit to it at ``fetched``."""

    url: str
    status: int
    title: str | None
    fetched: str  # UTC, to the second
    links: tuple[RecordedLink, ...]
    withheld: bool = False  # a private response: a visit, its title and links not recorded

    def line(self) -> bytes:
        """The page as one line of JSON, with its newline."""
        data: dict[str, object] = {
            "url": self.url,
            "status": self.status,
            "title": self.title,
            "fetched": self.fetched,
            "links": [{"url": link.url, "nofollow": link.nofollow, "anchor": link.anchor} for link in self.links],
        }
        if self.withheld:
            data["private"] = True  # the reader's: a view, not what the page holds (no links is not "none")
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


@dataclass(frozen=True)
class ResponseHead:
    """A response's status line and headers as they came, copied in the event loop: the rewrite then changes
    the response's own."""

    status: int
    reason: str
    fields: tuple[tuple[bytes, bytes], ...]

    @classmethod
    def of(cls, response: http.Response) -> ResponseHead:
        return cls(response.status_code, response.reason or "", tuple(response.headers.fields))

    def header(self, name: str) -> str | None:
        wanted = name.encode().lower()
        return next((value.decode("latin-1") for key, value in self.fields if key.lower() == wanted), None)


def parse_record_settings(
    directory: str, warc: bool, exclude: Sequence[str], queries: bool, private: bool = False
) -> RecordSettings | None:
    """Check the options; None while recording is off (no directory).  OptionsError if the directory cannot be
    a record (a file, or a folder of other files that no RECORD marks as one), or a pattern cannot be read."""
    if not directory:
        return None
    patterns = exclude_patterns(exclude)
    problem = _directory_problem(directory)
    if problem:
        raise exceptions.OptionsError(f"pagerank_record: {directory}: {problem}")
    return RecordSettings(directory, warc, patterns, queries, private)


def exclude_patterns(patterns: Sequence[str]) -> tuple[HostPattern, ...]:
    """``pagerank_record_exclude``'s patterns read as ``NO_PROXY`` conventions read them: ``HOST`` (every port)
    or ``HOST:PORT`` (``[IPv6]:PORT``), each an fnmatch pattern, in any case, a trailing dot ignored;
    ``.bank.example`` is ``*.bank.example``.  (That ``*.bank.example`` covers ``bank.example`` too is
    :func:`excluded_host`'s.)  OptionsError for a pattern without a host, or with a port that is not a number."""
    read = []
    for given in patterns:
        text = given.strip().lower()
        if not text:
            continue
        port: str | None = None
        if text.startswith("["):  # [IPv6] or [IPv6]:PORT
            host, _, rest = text[1:].partition("]")
            if rest and not rest.startswith(":"):
                raise exceptions.OptionsError(f"pagerank_record_exclude: {given!r}: write an IPv6 host as [::1]:PORT")
            port = rest[1:] if rest else None
        elif text.count(":") == 1:  # HOST:PORT (a bare IPv6 address has more than one colon)
            host, port = text.split(":")
        else:
            host = text
        host = host.rstrip(".")
        if host.startswith("."):
            host = "*" + host
        if not host:
            raise exceptions.OptionsError(f"pagerank_record_exclude: {given!r}: no host before the port")
        if port is not None and not re.fullmatch(r"[0-9*?\[\]!-]+", port):
            raise exceptions.OptionsError(
                f"pagerank_record_exclude: {given!r}: the port after ':' must be a number (such as "
                "127.0.0.1:8080), or leave it out to exclude every port"
            )
        read.append(HostPattern(host, port or None))
    return tuple(read)


def excluded_host(host: str, port: int | None, patterns: Sequence[HostPattern]) -> bool:
    """Whether a host (and the port it is reached on) matches one of the patterns: a pattern without a port
    matches every port, and ``*.bank.example`` matches ``bank.example`` itself too."""
    name = host.lower().rstrip(".").removeprefix("[").removesuffix("]")
    number = "" if port is None else str(port)
    for pattern in patterns:
        if pattern.port is not None and not fnmatch.fnmatchcase(number, pattern.port):
            continue
        if fnmatch.fnmatchcase(name, pattern.host):
            return True
        if pattern.host.startswith("*.") and fnmatch.fnmatchcase(name, pattern.host[2:]):
            return True
    return False


def _directory_problem(directory: str) -> str | None:
    if os.path.exists(directory) and not os.path.isdir(directory):
        return "not a directory"
    marker = os.path.join(directory, MARKER)
    if os.path.isfile(marker):
        try:
            with open(marker, encoding="utf-8") as file:
                head = json.load(file)
        except (OSError, ValueError) as error:
            return f"its {MARKER} file cannot be read ({error})"
        if not isinstance(head, dict) or head.get("format") != FORMAT:
            return f"its {MARKER} file is not a pagerank-proxy record's"
        if head.get("version") != VERSION:
            return f"a record of version {head.get('version')!r}; this proxy writes version {VERSION}"
        return None
    if os.path.isdir(directory) and os.listdir(directory):
        return f"not empty and not a record (no {MARKER} file): choose a new or empty directory"
    return None


def private_reason(flow: http.HTTPFlow, exclude: Sequence[HostPattern]) -> str | None:
    """Why a page must never be recorded, or None: not a top-level navigation (what a page chose to load, not
    the user), a request with credentials, or an excluded host (the one connected to, or the Host header's)."""
    request = flow.request
    destinations: list[bytes] = []
    authorization = False
    for name, value in request.headers.fields:  # one pass: a page's every visit asks, while it waits
        lowered = name.lower()
        if lowered == b"sec-fetch-dest":
            destinations.append(value)
        elif lowered == b"authorization":
            authorization = True
    # fields of one name are one list, as the headers' own reading joins them: "document" alone is a navigation
    if destinations and b", ".join(destinations).strip().lower() != b"document":
        return "not a top-level navigation"
    if authorization:
        return "an Authorization request"
    if not exclude:
        return None
    places: set[tuple[str, int | None]] = {(request.host, request.port)}
    if request.host_header:
        try:
            named, named_port = mitm_url.parse_authority(request.host_header, check=False)
        except ValueError:
            named, named_port = request.host_header, None
        places.add((named, named_port if named_port is not None else mitm_url.default_port(request.scheme)))
    if any(excluded_host(host, port, exclude) for host, port in places):
        return "an excluded host"
    return None


def private_response(head: ResponseHead) -> bool:
    """Whether the origin said its response is the user's alone: ``Cache-Control: no-store`` or ``private``
    (with or without the fields it names), in any of its ``Cache-Control`` headers."""
    directives = b",".join(value for name, value in head.fields if name.lower() == b"cache-control")
    for directive in directives.split(b","):
        name = directive.partition(b"=")[0].strip().lower()
        if name in (b"no-store", b"private"):
            return True
    return False


def secret_parameter(name: str) -> bool:
    """Whether a query parameter's name says it carries a secret (:data:`SECRET_PARAMETERS`' rule)."""
    decoded = unquote_plus(name).strip()
    if decoded.endswith("]") and "[" in decoded:  # user[password]: the innermost name
        decoded = decoded[decoded.rindex("[") + 1 : -1]
    lower = decoded.lower()
    if lower in SECRET_PARAMETERS:
        return True
    if len(lower) != len(decoded):  # a letter whose lower case is longer: no case to read words by
        decoded = lower
    for word in SECRET_PARAMETERS:
        if len(lower) <= len(word) or not lower.endswith(word):
            continue
        start = len(lower) - len(word)
        before = decoded[start - 1]
        if before in "_-.[ " or (decoded[start].isupper() and before.islower()):  # reset_token, accessToken
            return True
    return False


_PATH_PARAMETER = re.compile(r";([^;/=]*)(=[^;/]*)?")


def without_secrets(url: str) -> str:
    """``url`` without the query parameters (and ``;name=value`` path parameters) that carry secrets, the rest
    as written, in order; a query left empty goes with its ``?``."""
    if "?" not in url and ";" not in url:  # no parameter at all (most links): nothing to read
        return url
    parts = urlsplit(url)
    path = parts.path
    if ";" in path:
        path = _PATH_PARAMETER.sub(lambda found: "" if secret_parameter(found.group(1)) else found.group(0), path)
    query = parts.query
    if query:
        query = "&".join(piece for piece in query.split("&") if not secret_parameter(piece.partition("=")[0]))
    if path == parts.path and query == parts.query:
        return url
    return urlunsplit(parts._replace(path=path, query=query))


def recorded_page(
    body: bytes,
    content_type: str | None,
    url: str,
    status: int,
    fetched: float,
    queries: bool = False,
    withheld: bool = False,
) -> RecordedPage | None:
    """A decoded HTML page as a record's line: its links by the build's extractor (resolved against the URL
    as fetched, its query too), its URL without its query unless ``queries``, and no URL with a secret
    parameter (:func:`without_secrets`); ``withheld`` (a private response): the visit alone, without title
    or links.  None if it has no http(s) URL."""
    page_url = canonical(url)
    if page_url is None:
        return None
    shown = _shown(page_url, queries)
    when = time.strftime(_WHEN, time.gmtime(fetched))
    if withheld:
        return RecordedPage(shown, status, None, when, (), withheld=True)
    parsed = extract(body, page_url, content_type)
    links: dict[str, RecordedLink] = {}  # two links alike once their secrets are gone are one, as extract's
    for link in parsed.links:
        target = without_secrets(link.url)
        held = links.get(target)
        anchor = link.anchor_text or None
        if held is None:
            links[target] = RecordedLink(target, link.nofollow, anchor)
        else:
            links[target] = RecordedLink(target, held.nofollow and link.nofollow, held.anchor or anchor)
    return RecordedPage(shown, status, parsed.title, when, tuple(links.values()))


def recorded_url(url: str, queries: bool = False) -> str | None:
    """The URL a page's record names it by (:func:`recorded_page`'s), None for no http(s) URL."""
    page_url = canonical(url)
    return None if page_url is None else _shown(page_url, queries)


def _shown(page_url: str, queries: bool) -> str:
    return without_secrets(page_url if queries else _without_query(page_url))


def _without_query(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(query="")) if parts.query else url


def warc_member(
    page: RecordedPage,
    head: ResponseHead,
    body: bytes,
    deflated: bytes | None = None,
    digest: bytes | None = None,
    record_id: bytes | None = None,
) -> bytes:
    """The response as a WARC response record, compressed as a gzip member of its own: its body decoded (what
    a reader parses; none for a private response, marked ``WARC-Truncated``) under the origin's status line
    and headers, less those that no longer hold and cookies.  ``deflated``: the body already compressed
    (:func:`deflated_body`), put in the member as it is between the record's head and its end; ``digest``:
    the body's :func:`payload_digest`, made here if not given; ``record_id``: the record's, a new one if not
    given.

    The record is laid out as fastwarc writes one (the build reads it with fastwarc), but put together
    here: the body is never copied into a record to be found in it again."""
    http_head = _http_head(head, len(body))
    fields = [b"WARC-Payload-Digest: " + (digest or payload_digest(body))] if body else []
    before = _warc_head(page, len(http_head) + len(body), record_id or _record_id(), fields) + http_head
    if deflated is None or not body:
        return _gzip(before + body + _RECORD_END)
    # the parts around the body go in as stored blocks, the body's deflate blocks between them, and the gzip
    # trailer sums the whole
    crc = _crc32(_RECORD_END, _crc32(body, _crc32(before)))
    size = len(before) + len(body) + len(_RECORD_END)
    return b"".join(
        (
            _GZIP_HEADER,
            _stored(before, final=False),
            deflated,
            _stored(_RECORD_END, final=True),
            struct.pack("<II", crc, size & 0xFFFFFFFF),
        )
    )


def revisit_member(page: RecordedPage, head: ResponseHead, length: int, original: WarcOriginal) -> bytes:
    """A revisit of a page whose body is the one of a response record this process wrote (``original``): a
    WARC revisit record (WARC 1.1, 6.7.2, profile identical-payload-digest, as wget's and Heritrix's
    deduplication write one) holding the response's status line and headers (the body's ``length`` said in
    them) and no body, which names the response that holds it.  Compressed as a gzip member of stored blocks:
    a few hundred bytes that a compressor would take longer to set up for than to copy."""
    return _revisit(_revisit_fields(page.url, original), page.fetched.encode(), _http_head(head, length))


def _revisit_fields(url: str, original: WarcOriginal) -> bytes:
    """A revisit's WARC fields after its Content-Length, the same for each revisit of a body: made once."""
    fields = [
        b"",
        b"WARC-Target-URI: " + url.encode(),
        b"WARC-Refers-To: " + original.record_id,
        b"WARC-Refers-To-Target-URI: " + original.url.encode(),
        b"WARC-Refers-To-Date: " + original.date.encode(),
        b"WARC-Profile: " + REVISIT_PROFILE,
        b"WARC-Payload-Digest: " + original.digest,
        b"Content-Type: application/http; msgtype=response",
    ]
    return b"\r\n".join(fields) + b"\r\n\r\n"


def _revisit(fields: bytes, fetched: bytes, http_head: bytes) -> bytes:
    """:func:`revisit_member` from its parts: its fields made once (:func:`_revisit_fields`), its time and its
    status line and headers."""
    data = b"".join(
        (
            b"WARC/1.1\r\nWARC-Type: revisit\r\nWARC-Date: ",
            fetched,
            b"\r\nWARC-Record-ID: ",
            _record_id(),
            b"\r\nContent-Length: %d" % len(http_head),
            fields,
            http_head,
            _RECORD_END,
        )
    )
    return b"".join((_GZIP_HEADER, _stored(data, final=True), struct.pack("<II", zlib.crc32(data), len(data))))


# WARC 1.1's revisit profile for a body found the same as one recorded before
REVISIT_PROFILE = b"http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"


class WarcOriginal(NamedTuple):
    """A response record with a body, written to this process's WARC file: what a revisit of the same body
    names (:func:`revisit_member`)."""

    record_id: bytes  # <urn:uuid:...>
    url: str  # its WARC-Target-URI
    date: str  # its WARC-Date
    digest: bytes  # its WARC-Payload-Digest


def payload_digest(body: bytes) -> bytes:
    """A body's ``WARC-Payload-Digest``: SHA-1 in base 32, as wget, Heritrix and warcio write it."""
    return b"sha1:" + base64.b32encode(hashlib.sha1(body).digest())


def _record_id() -> bytes:
    """A new ``WARC-Record-ID``: a random (version 4) UUID, as uuid4 makes, but from a generator seeded by
    the system's once a process rather than a system call a record (a revisit is made while its page
    waits); ids need to be unique, not secret."""
    global _ids_pid
    if _ids_pid != os.getpid():  # a process forked: its own sequence
        _ids.seed(os.urandom(32))
        _ids_pid = os.getpid()
    value = _ids.getrandbits(128) & _UUID_RANDOM | _UUID_V4
    text = b"%032x" % value
    return b"<urn:uuid:%s-%s-%s-%s-%s>" % (text[:8], text[8:12], text[12:16], text[16:20], text[20:])


_ids = random.Random()
_ids_pid: int | None = None
_UUID_RANDOM = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)  # all but the version's and variant's bits
_UUID_V4 = (0x4000 << 64) | (0x8000 << 48)  # version 4, variant RFC 4122


def _http_head(head: ResponseHead, length: int) -> bytes:
    """The response's status line and headers, less those a record's decoded body makes wrong and cookies, and
    the body's ``length``."""
    lines = [f"HTTP/1.1 {head.status} {head.reason}".rstrip().encode("latin-1", errors="replace")]
    lines += [name + b": " + value for name, value in head.fields if name.lower() not in _WARC_DROPPED]
    lines.append(b"Content-Length: %d" % length)
    return b"\r\n".join(lines) + b"\r\n\r\n"


def _warc_head(
    page: RecordedPage, length: int, record_id: bytes, more: list[bytes], kind: bytes = b"response"
) -> bytes:
    """A record's WARC head, for a block of ``length`` bytes, its fields in fastwarc's order, ``more`` after
    its target."""
    fields = [
        b"WARC/1.1",
        b"WARC-Type: " + kind,
        b"WARC-Date: " + page.fetched.encode(),
        b"WARC-Record-ID: " + record_id,
        b"Content-Length: %d" % length,
        b"WARC-Target-URI: " + page.url.encode(),
        *more,
        b"Content-Type: application/http; msgtype=response",
    ]
    if page.withheld:  # a private response: its body is not kept
        fields.append(b"WARC-Truncated: unspecified")
    return b"\r\n".join(fields) + b"\r\n\r\n"


def deflated_body(body: bytes) -> bytes:
    """A body's deflate blocks (by :data:`DEFLATER`, as a member's) for :func:`warc_member`, to be put in as they are:
    raw, ending on a byte boundary, not the last blocks of their stream."""
    return _deflate(body, zlib.Z_SYNC_FLUSH)


def _stored(data: bytes, final: bool) -> bytes:
    """``data`` as deflate's stored blocks (RFC 1951, 3.2.4), starting and ending on a byte boundary: the
    record's head and end around a revisit's body, a few hundred bytes that a compressor would take longer
    to set up for than to copy."""
    blocks: list[bytes] = []
    start = 0
    while True:
        chunk = data[start : start + _STORED_MOST]
        start += len(chunk)
        last = start >= len(data)
        blocks += (b"\x01" if final and last else b"\x00", struct.pack("<HH", len(chunk), len(chunk) ^ 0xFFFF), chunk)
        if last:
            return b"".join(blocks)


_STORED_MOST = 0xFFFF  # a stored block's most bytes


class Deflater(NamedTuple):
    """A deflate implementation with zlib's interface (``compressobj``, ``Z_SYNC_FLUSH``, ``Z_FINISH``) and the
    level the record asks of it: its output differs from another's, and any inflater reads either."""

    module: ModuleType
    level: int


# a member is compressed while its page waits: the fastest level whose output is about zlib's level 3's
ZLIB = Deflater(zlib, 3)  # a third of level 9's time for a seventh more bytes
ISAL = None if _isal_zlib is None else Deflater(_isal_zlib, 2)  # ISA-L: about zlib 3's size, far faster
DEFLATER = ISAL or ZLIB  # the one the record uses: ISA-L where it is installed


def _deflate(data: bytes, end: int) -> bytes:
    deflater = DEFLATER
    compressor = deflater.module.compressobj(deflater.level, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush(end)


def _gzip(data: bytes) -> bytes:
    """``data`` as a gzip member of its own (a WARC record's), by :data:`DEFLATER`."""
    trailer = struct.pack("<II", _crc32(data), len(data) & 0xFFFFFFFF)
    return b"".join((_GZIP_HEADER, _deflate(data, zlib.Z_FINISH), trailer))


_RECORD_END = b"\r\n\r\n"
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03"  # as gzip.compress(mtime=0) writes it: no name


class PageKey(NamedTuple):
    """What a page's line depends on but its fetch time and its body (kept beside it, compared byte for byte:
    a memcmp, where a digest would cost a revisit more than the rest of its record)."""

    url: str
    length: int
    status: int
    content_type: str | None
    queries: bool
    withheld: bool


class _Kept(NamedTuple):
    body: bytes  # as it was sent: a revisit's is compared with it
    line: bytes
    url: str  # as the line and the WARC record name it
    deflated: bytes | None  # its body's deflate blocks (none for a private response's, or without WARC)
    digest: bytes | None  # its body's payload_digest (with its deflate blocks)
    original: WarcOriginal | None = None  # the response holding this body, once written: revisits name it
    revisit_fields: bytes = b""  # then its revisits' WARC fields that name it (_revisit_fields)

    @property
    def size(self) -> int:
        return len(self.body) + len(self.line) + len(self.deflated or b"")


class FirstMember(NamedTuple):
    """A first visit's WARC member (:meth:`RevisitCache.response`), made before its line, and what its cache
    entry keeps of it."""

    url: str  # as the line and the WARC record name the page
    deflated: bytes | None
    digest: bytes | None
    member: bytes | None  # None without WARC
    original: WarcOriginal | None  # the response it is, for its revisits to name once written


class RevisitCache:
    """The records of the pages last recorded, for a revisit of one whose body has not changed (byte for
    byte): its line is the one made at its first visit with its new fetch time, and its WARC member a revisit
    record naming the response that holds the body (:func:`revisit_member`), or, until that response is
    written (:meth:`written`), a response put together around the body compressed once
    (:func:`warc_member`): here in the event loop, in a fraction of a parse.  Only a page sent uncompressed
    and of at most ``most_body`` bytes (what the loop may hold a body for); at most ``most_pages`` pages and
    ``most_bytes`` of bodies, lines and compressed bodies kept, the oldest let go.  One cache a WARC file:
    a revisit names a response of its own file."""

    def __init__(self, most_pages: int = 256, most_bytes: int = 32 * 1024 * 1024, most_body: int = 1024 * 1024):
        self.most_pages, self.most_bytes, self.most_body = most_pages, most_bytes, most_body
        self._kept: dict[PageKey, _Kept] = {}
        self._bytes = 0

    def key(self, body: bytes, job: RecordJob) -> PageKey | None:
        """The page's key, None if it is not one to keep (coded, or too large)."""
        if len(body) > self.most_body or not _identity(job.content_encoding):
            return None
        content_type = ResponseHead(job.status, job.reason, job.headers).header("content-type")
        return PageKey(job.url, len(body), job.status, content_type, job.queries, job.withheld)

    def made(self, key: PageKey, body: bytes, job: RecordJob) -> Recorded | None:
        """The page's record made from what is kept of it, None if nothing is (or another body was)."""
        kept = self._kept.get(key)
        if kept is None or kept.body != body:
            return None
        del self._kept[key]
        self._kept[key] = kept  # the newest now
        if job.warc and kept.deflated is None and kept.original is None and body and not job.withheld:
            self._bytes -= kept.size
            kept = self._kept[key] = kept._replace(deflated=deflated_body(body), digest=payload_digest(body))
            self._bytes += kept.size
        record = self._record(kept, body, job)
        self._trim()
        return record

    @staticmethod
    def response(url: str, body: bytes, job: RecordJob, deflated: bytes | None, digest: bytes | None) -> FirstMember:
        """The WARC member of a page's first visit (or of a changed body's) named ``url`` (:func:`recorded_url`),
        from its body's deflate blocks and digest: made while its line is made elsewhere."""
        member, original = RevisitCache._member(_Kept(body, b"", url, deflated, digest), body, job)
        return FirstMember(url, deflated, digest, member, original)

    def first(self, key: PageKey, body: bytes, job: RecordJob, line: bytes, made: FirstMember) -> Recorded:
        """The record of a page's first visit (or of a changed body's), from its line (made elsewhere:
        :func:`make_record`, with this visit's fetch time) and its WARC member (:meth:`response`), kept for its
        revisits."""
        kept = _Kept(body, line, made.url, made.deflated, made.digest)
        gone = self._kept.pop(key, None)
        if gone is not None:
            self._bytes -= gone.size
        self._kept[key] = kept
        self._bytes += kept.size
        self._trim()
        return Recorded(line, made.member, made.original)

    def written(self, key: PageKey, original: WarcOriginal) -> None:
        """A response this cache made has been written: the page's revisits name it from now on (if its body
        is still the one kept)."""
        kept = self._kept.get(key)
        if kept is not None and kept.original is None and kept.digest == original.digest:
            fields = _revisit_fields(kept.url, original)
            now = self._kept[key] = kept._replace(deflated=None, original=original, revisit_fields=fields)  # no body
            self._bytes += now.size - kept.size

    @staticmethod
    def _record(kept: _Kept, body: bytes, job: RecordJob) -> Recorded:
        when = _when(job)
        return Recorded(_with_fetched(kept.line, when), *RevisitCache._member(kept, body, job, when))

    @staticmethod
    def _member(
        kept: _Kept, body: bytes, job: RecordJob, when: str | None = None
    ) -> tuple[bytes | None, WarcOriginal | None]:
        """A visit's WARC member (None without WARC) and, for a response holding its body, what its revisits
        name; ``when``: the visit's time as the record writes it, if made already."""
        if not job.warc:
            return None, None
        when = when or _when(job)
        head = ResponseHead(job.status, job.reason, job.headers)
        if kept.original is not None and body and not job.withheld:
            return _revisit(kept.revisit_fields, when.encode(), _http_head(head, len(body))), None
        page = RecordedPage(kept.url, job.status, None, when, (), withheld=job.withheld)
        if job.withheld or not body:  # no body kept: a response without one
            return warc_member(page, head, b""), None
        assert kept.digest is not None  # made with the deflate blocks
        record_id = _record_id()
        member = warc_member(page, head, body, kept.deflated, kept.digest, record_id)
        return member, WarcOriginal(record_id, kept.url, when, kept.digest)

    def _trim(self) -> None:
        while self._kept and (len(self._kept) > self.most_pages or self._bytes > self.most_bytes):
            oldest = next(iter(self._kept))
            self._bytes -= self._kept.pop(oldest).size


# a line's fetch time, as RecordedPage.line writes it: its key follows the URL and the title, JSON strings
# whose quotes are escaped, so the first match is the key
_FETCHED = re.compile(rb',"fetched":"([0-9T:Z-]{20})"')


def _with_fetched(line: bytes, when: str) -> bytes:
    found = _FETCHED.search(line)
    if found is None:
        raise ValueError("a record's line without its fetch time")
    return line[: found.start(1)] + when.encode() + line[found.end(1) :]


def _when(job: RecordJob) -> str:
    return time.strftime(_WHEN, time.gmtime(job.fetched))


def _identity(content_encoding: str | None) -> bool:
    return content_encoding is None or content_encoding.strip().lower() in ("", "identity")


class RecordFiles:
    """A record directory's files for this process: made (and marked) when opened, each file opened at its
    first write, ``O_APPEND`` and unbuffered (one ``write()`` a line or member).  What it makes is its
    owner's alone (the folder 0700, the files 0600, whatever the umask); what was there keeps its mode."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        _private_folder(directory)
        marker = os.path.join(directory, MARKER)
        if not os.path.exists(marker):
            head = {"format": FORMAT, "version": VERSION, "created": time.strftime(_WHEN, time.gmtime())}
            temporary = f"{marker}.{os.getpid()}.tmp"
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)  # a process of the same id left it: made anew, the owner's alone
            fd = _open_private(temporary, os.O_WRONLY | os.O_TRUNC)
            try:
                _write_whole(fd, json.dumps(head).encode() + b"\n")
            finally:
                os.close(fd)
            os.replace(temporary, marker)  # whole or absent, for a reader that looks meanwhile
        stamp = f"{time.strftime(_STAMP, time.gmtime())}-{os.getpid()}"
        self.pages_path = os.path.join(directory, f"{PAGES_PREFIX}{stamp}{PAGES_SUFFIX}")
        self.warc_path = os.path.join(directory, f"{WARC_PREFIX}{stamp}{WARC_SUFFIX}")
        self._pages: int | None = None
        self._warc: int | None = None

    def write_page(self, line: bytes) -> None:
        if self._pages is None:
            self._pages = _open_append(self.pages_path)
        _write_whole(self._pages, line)

    def write_warc(self, member: bytes) -> None:
        if self._warc is None:
            self._warc = _open_append(self.warc_path)
        _write_whole(self._warc, member)

    def close(self) -> None:
        for fd in (self._pages, self._warc):
            if fd is not None:
                os.close(fd)
        self._pages = self._warc = None


def _open_append(path: str) -> int:
    return _open_private(path, os.O_WRONLY | os.O_APPEND)


def _open_private(path: str, flags: int) -> int:
    """``path`` opened with ``flags``; made readable by its owner alone (0600, whatever the umask) if it was
    not there, kept as it is if it was."""
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return os.open(path, flags | os.O_CLOEXEC)
    try:
        os.fchmod(fd, 0o600)  # a umask takes bits away: 0600 whatever it is
    except BaseException:
        os.close(fd)
        raise
    return fd


def _private_folder(directory: str) -> None:
    """``directory`` made (its parents too) readable by its owner alone (0700, whatever the umask), unless it
    was there: then it keeps its mode (its owner's choice)."""
    parent = os.path.dirname(os.path.abspath(directory))
    os.makedirs(parent, exist_ok=True)
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        if not os.path.isdir(directory):
            raise NotADirectoryError(f"not a directory: {directory}") from None
        return
    os.chmod(directory, 0o700)


def _write_whole(fd: int, data: bytes) -> None:
    """``data`` at the file's end; a regular file takes it in one write, and a short one (a full disk) goes on."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Recorder:
    """The recording: options, files, and the two steps of a page (:meth:`take`, then :meth:`keep`)."""

    def __init__(self) -> None:
        self.settings: RecordSettings | None = None
        self.files: RecordFiles | None = None
        self.revisits = RevisitCache()  # pages recorded lately, for revisits of the same body

    def load(self, loader) -> None:
        loader.add_option(
            "pagerank_record",
            str,
            "",
            "A directory to record the HTML pages the proxy annotates in (URL, status, title, time, links), "
            "for `rankstore build DIR` (empty: no recording, the default).",
        )
        loader.add_option(
            "pagerank_record_warc", bool, False, "Also keep the recorded pages' responses as WARC in the record."
        )
        loader.add_option(
            "pagerank_record_exclude",
            Sequence[str],
            [],
            "Host patterns whose pages are never recorded: HOST (every port) or HOST:PORT ([IPv6]:PORT), "
            "fnmatch, any case, as NO_PROXY reads them: *.bank.example (or .bank.example) also covers "
            "bank.example; 127.0.0.1:8080, as `rankstore forget --host` names it, that port alone.",
        )
        loader.add_option(
            "pagerank_record_queries",
            bool,
            False,
            "Record a page URL's query string too (by default it is dropped; its links keep theirs). "
            "Parameters that carry secrets (token, session, key, password, code, state, ...) never are.",
        )
        loader.add_option(
            "pagerank_record_private",
            bool,
            False,
            "Record the title and links (and WARC body) of pages answered Cache-Control: no-store or private "
            "too (by default such a page is recorded as a visit alone).",
        )

    def configure(self, updated) -> None:
        if not updated & set(OPTIONS):
            return
        settings = parse_record_settings(
            ctx.options.pagerank_record,
            ctx.options.pagerank_record_warc,
            ctx.options.pagerank_record_exclude,
            ctx.options.pagerank_record_queries,
            ctx.options.pagerank_record_private,
        )
        if settings is not None and (self.files is None or self.files.directory != settings.directory):
            try:
                files = RecordFiles(settings.directory)
            except OSError as error:
                raise exceptions.OptionsError(f"pagerank_record: {settings.directory}: {error}") from None
            self.close()
            self.files = files
        elif settings is None:
            self.close()
        self.settings = settings

    def take(
        self, flow: http.HTTPFlow, body: bytes, page: PageJob, make: Making | None = None, place: str = "in a thread"
    ) -> Recording | None:
        """Start making a page's record (while it is rewritten) with ``make``, which makes it ``place`` (by
        default in a thread), unless it is not to be recorded, or from what is kept of it if its body is
        the same as at a visit lately (:class:`RevisitCache`)."""
        job = self.job(flow, page)
        if job is None:
            return None
        if make is None:
            make, place = _in_thread, "in a thread"
        key = self.revisits.key(body, job)
        if key is None:
            return Recording(make(body, job), place)
        made = self.revisits.made(key, body, job)
        if made is not None:  # made here, at once
            done: asyncio.Future[Recorded | None] = asyncio.get_running_loop().create_future()
            done.set_result(made)
            return Recording(done, "from its visit before", key)
        # its line made elsewhere, while this loop (once the page's rewrite is done) compresses its body, from
        # which the WARC member is put together here
        making = make(body, job._replace(warc=False))
        return Recording(asyncio.ensure_future(self._first_visit(key, body, job, making)), place, key)

    async def _first_visit(
        self, key: PageKey, body: bytes, job: RecordJob, making: asyncio.Future[Recorded | None]
    ) -> Recorded | None:
        url = recorded_url(job.url, job.queries)  # as the line names the page
        if url is None:
            return await making  # nothing to record
        deflated = digest = None
        if job.warc and body and not job.withheld:
            # a large body is compressed off the loop (beside the worker's parse); a page's, in a fraction of it
            small = len(body) <= DEFLATE_IN_LOOP
            deflated, digest = _compressed(body) if small else await asyncio.to_thread(_compressed, body)
        # the member is made whole while the line is made elsewhere: once the line comes, both are written
        member = self.revisits.response(url, body, job, deflated, digest)
        made = await making
        if made is None:
            return None
        return self.revisits.first(key, body, job, made.line, member)

    def job(self, flow: http.HTTPFlow, page: PageJob) -> RecordJob | None:
        """What making a page's record needs besides its body, None if it is not to be recorded: decided here,
        in the event loop, from the options, the flow and its rewrite's job (``page``)."""
        settings, response = self.settings, flow.response
        if settings is None or response is None or private_reason(flow, settings.exclude) is not None:
            return None
        head = ResponseHead.of(response)
        return RecordJob(
            page.url,
            head.status,
            head.reason,
            head.fields,
            response.timestamp_end or time.time(),
            page.content_encoding,
            page.limit,
            settings.queries,
            not settings.private and private_response(head),  # the visit alone: no title, links or body
            settings.warc,
        )

    async def keep(self, recording: Recording | None) -> str | None:
        """Write a page's record, made by :meth:`take`: its line (one write), then its WARC member (one write;
        a large one in a thread, so that the loop is not held by the disk).  Where it was made, if written."""
        files = self.files
        if recording is None or files is None:
            return None
        try:
            taken = await recording.future
            if taken is None:
                return None
            files.write_page(taken.line)
            if taken.warc is not None:
                if len(taken.warc) <= WARC_IN_LOOP:
                    files.write_warc(taken.warc)
                else:
                    await asyncio.to_thread(files.write_warc, taken.warc)
                if taken.original is not None and recording.key is not None and files is self.files:
                    self.revisits.written(recording.key, taken.original)
        except OSError as error:
            log.warning("pagerank: recording %s: %s", files.directory, error)
            return None
        except Exception:  # a bug of ours (or a worker's failure): the page goes on unrecorded, the log has it once
            log.exception("pagerank: recording failed")
            return None
        return recording.place

    @staticmethod
    def drop(recording: Recording | None) -> None:
        """A page not annotated after all: its record is not kept (its maker's work is let go)."""
        if recording is not None:
            recording.future.add_done_callback(_consumed)

    def close(self) -> None:
        if self.files is not None:
            self.files.close()
            self.files = None
            self.revisits = RevisitCache()  # a revisit names a response of its own file

    def done(self) -> None:
        self.close()


def _compressed(body: bytes) -> tuple[bytes, bytes]:
    """A body's deflate blocks and payload digest, for its response and its revisits."""
    return deflated_body(body), payload_digest(body)


def _consumed(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()  # retrieved: asyncio logs no "exception never retrieved"


def _in_thread(body: bytes, job: RecordJob) -> asyncio.Future[Recorded | None]:
    return asyncio.ensure_future(asyncio.to_thread(make_record, body, job))


def make_record(raw: bytes, job: RecordJob) -> Recorded | None:
    """A page's record, wherever it is made: its body decoded (as its rewrite decodes it), parsed into its
    line, and its WARC member if one is kept; None for a page with nothing to record."""
    try:
        body = decode(raw, job.content_encoding, job.limit)
    except Exception:  # its rewrite says why it is left untouched, and so unrecorded
        return None
    head = ResponseHead(job.status, job.reason, job.headers)
    page = recorded_page(body, head.header("content-type"), job.url, job.status, job.fetched, job.queries, job.withheld)
    if page is None:
        return None
    return Recorded(page.line(), warc_member(page, head, b"" if job.withheld else body) if job.warc else None)
