"""Sources at their URLs: files streamed over HTTP(S), and ``*.paths.gz`` listings of them.

A :class:`RemoteFile` is a file-like stream of one URL's bytes, never saved
to disk.  A connection error, a cut transfer or a 5xx answer (also 408, 429)
is retried with exponential back-off, within :class:`RetryPolicy`'s bounds
(a number of failures in a row, and a time since the last byte came); a cut
transfer is resumed with an HTTP Range request where the server honours one,
else the file is asked for again and the bytes already given are read past,
so that the reader never sees the break.  Any other answer (404, 403...)
is final.  Each stream counts the bytes it gave and hashes them (xxh3-64),
so that a build can record each file it took whole.

A listing names one file a line (Common Crawl's ``warc.paths.gz``, a web
graph's ``edges.paths.gz``): a line that is a URL is taken as it is, any other
is resolved against a base URL (``--paths-base``, Common Crawl's data server
by default).  A local listing whose first part lies beside it on disk is read
as before this module (Common Crawl graph parts on disk), not through here.

Failures surface as :class:`TransferError`, an ``OSError``: a reader treats
them as it treats a file it cannot read further (the rest of the file lost,
reported, and the next file read).  :class:`Fetcher` opens a build's files,
local or remote, under one policy and keeps each transfer, so that the build
can tell which files came whole.
"""

from __future__ import annotations

import contextlib
import contextvars
import gzip
import io
import os
import random
import socket
import time
import urllib.parse
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import xxhash

from .. import __version__
from . import DEFAULT_PATHS_BASE, SourceError

if TYPE_CHECKING:
    import http.client

# http.client and urllib.request (with ssl and email) are imported by what opens a URL: a build of local files,
# which asks is_url of each source and makes a Fetcher, starts without them

__all__ = [
    "DEFAULT_PATHS_BASE",
    "Fetcher",
    "Listing",
    "RemoteFile",
    "RetryPolicy",
    "TransferError",
    "is_listing",
    "is_url",
    "read_head",
    "read_listing",
]

LISTING_SUFFIXES = (".paths.gz", ".paths")
HEAD_BYTES = 1 << 16  # what is read of a file to tell its format
_RETRIED_STATUSES = frozenset({408, 429})  # with every 5xx: the server may answer later


def is_url(name: str) -> bool:
    return name[:8].lower().startswith(("http://", "https://"))


def is_listing(name: str) -> bool:
    """Whether ``name`` (a path or a URL) names a ``*.paths.gz`` (or plain ``*.paths``) listing."""
    path = urllib.parse.urlsplit(name).path if is_url(name) else name
    return path.endswith(LISTING_SUFFIXES)


@dataclass(frozen=True)
class RetryPolicy:
    """How hard a transfer is tried: ``attempts`` failures in a row at most, waiting ``first_delay`` seconds
    after the first and twice as long after each next (at most ``max_delay``), and never once ``deadline``
    seconds have passed since the last byte came; ``timeout`` seconds of silence on a socket is a failure."""

    attempts: int = 6
    first_delay: float = 1.0
    max_delay: float = 30.0
    deadline: float = 600.0
    timeout: float = 60.0

    @classmethod
    def from_env(cls) -> RetryPolicy:
        """The defaults, with ``$RANKSTORE_HTTP_BACKOFF`` (the first delay, in seconds; the longest is 30
        times it) and ``$RANKSTORE_HTTP_ATTEMPTS`` where set (tests make back-off short with them)."""
        policy = cls()
        try:
            delay = float(os.environ.get("RANKSTORE_HTTP_BACKOFF", policy.first_delay))
            attempts = int(os.environ.get("RANKSTORE_HTTP_ATTEMPTS", policy.attempts))
        except ValueError:
            return policy
        return cls(max(1, attempts), max(0.0, delay), max(0.0, 30 * delay), policy.deadline, policy.timeout)

    def delay(self, failures: int) -> float:
        """Seconds to wait after the ``failures``-th failure in a row (jittered, so that many clients spread)."""
        return min(self.max_delay, self.first_delay * 2 ** (failures - 1)) * random.uniform(0.75, 1.0)


class TransferError(OSError):
    """A URL that could not be read (whole): ``strerror`` says why; ``status`` is the HTTP status of a final
    answer (404...), else None."""

    def __init__(self, url: str, reason: str, status: int | None = None):
        super().__init__(f"{url}: {reason}")
        self.url = url
        self.strerror = reason
        self.status = status

    def __str__(self) -> str:
        return f"{self.url}: {self.strerror}"


class _Retry(Exception):
    """A failure worth another try, with what to say of it if it is the last."""


def _describe(error: BaseException) -> str:
    import http.client
    import urllib.error

    if isinstance(error, urllib.error.URLError) and not isinstance(error, urllib.error.HTTPError):
        reason = error.reason
        return f"cannot connect: {reason.strerror if isinstance(reason, OSError) and reason.strerror else reason}"
    if isinstance(error, http.client.IncompleteRead):
        return "connection closed in the middle of the file"
    if isinstance(error, socket.timeout | TimeoutError):
        return "timed out"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__


class RemoteFile(io.RawIOBase):
    """One URL's bytes as a stream (``readinto``), with retries and resumption (see the module's text).

    ``first``: only the file's first bytes are wanted (a Range request for
    them; a server that ignores it is read no further than that).
    ``closed`` is called once, when the stream is closed (read whole or not:
    ``complete`` tells).
    """

    def __init__(
        self,
        url: str,
        policy: RetryPolicy | None = None,
        first: int | None = None,
        closed: Callable[[RemoteFile], None] | None = None,
    ):
        super().__init__()
        self.url = url
        self.policy = policy or RetryPolicy.from_env()
        self.position = 0  # bytes given to the reader
        self.length: int | None = None  # the file's size, as the server says it
        self.complete = False
        self.retries = 0  # failures retried, over the whole transfer
        self._first = first
        self._closed = closed
        self._response: http.client.HTTPResponse | None = None
        self._response_end: int | None = None  # where the answer being read ends, by its Content-Length
        self._hash = xxhash.xxh3_64()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def tell(self) -> int:
        return self.position

    @property
    def checksum(self) -> str:
        return f"xxh3_64:{self._hash.hexdigest()}"

    def open(self) -> None:
        """Connect now (else the first read does): an answer that is final raises TransferError here."""
        self._with_retries(lambda: None)

    def readinto(self, buffer) -> int:
        if self.complete or (self._first is not None and self.position >= self._first):
            return 0
        return self._with_retries(lambda: self._read_into(buffer))

    def _with_retries(self, action: Callable[[], int | None]):
        import http.client

        failures = 0
        last_progress = time.monotonic()
        while True:
            try:
                if self._response is None:
                    self._connect()
                return action()
            except TransferError:
                self._drop()
                raise
            except (_Retry, OSError, http.client.HTTPException) as error:
                self._drop()
                failures += 1
                self.retries += 1
                said = str(error) if isinstance(error, _Retry) else _describe(error)
                waited = time.monotonic() - last_progress
                if failures >= self.policy.attempts or waited >= self.policy.deadline:
                    tries = f"{failures} attempt" + ("s" if failures > 1 else "")
                    raise TransferError(self.url, f"{said} ({tries})") from error
                time.sleep(self.policy.delay(failures))

    def _read_into(self, buffer) -> int:
        import http.client

        assert self._response is not None
        count = self._response.readinto(buffer)
        if count:
            self._hash.update(memoryview(buffer)[:count])
            self.position += count
            return count
        if self._response_end is not None and self.position < self._response_end:
            # http.client's readinto says a connection closed early as an end: the length says otherwise
            raise http.client.IncompleteRead(b"", self._response_end - self.position)
        self._drop()
        self.complete = self._first is None
        return 0

    def _connect(self) -> None:
        import http.client
        import urllib.error
        import urllib.request

        headers = {"User-Agent": f"rankstore/{__version__}", "Accept-Encoding": "identity"}
        if self.position or self._first is not None:
            last = "" if self._first is None else self._first - 1
            headers["Range"] = f"bytes={self.position}-{last}"
        try:
            response = urllib.request.urlopen(
                urllib.request.Request(self.url, headers=headers), timeout=self.policy.timeout
            )
        except urllib.error.HTTPError as error:
            error.close()
            said = f"HTTP {error.code} {error.reason}"
            if error.code >= 500 or error.code in _RETRIED_STATUSES:
                raise _Retry(said) from error
            raise TransferError(self.url, said, error.code) from error
        except ValueError as error:  # not a URL urllib can open
            raise TransferError(self.url, str(error)) from error
        self._response = response
        length = response.headers.get("Content-Length")
        count = int(length) if length and length.isdigit() else None
        if response.status == 206:
            start, size = _content_range(response.headers.get("Content-Range", ""))
            if start != self.position:
                raise _Retry("the server resumed at another place than asked")
            self._response_end = None if count is None else start + count
            if self._first is None:
                self.length = size if size is not None else self.length
            return
        # the whole file again: what was given already is read past, unseen by the reader
        self.length = self._response_end = count
        skip = self.position
        while skip:
            dropped = response.read(min(skip, 1 << 20))
            if not dropped:
                raise http.client.IncompleteRead(b"", skip)
            skip -= len(dropped)

    def _drop(self) -> None:
        import http.client

        if self._response is not None:
            with contextlib.suppress(OSError, http.client.HTTPException):
                self._response.close()
            self._response = None

    def close(self) -> None:
        self._drop()
        if not self.closed and self._closed is not None:
            self._closed(self)
        super().close()


def _content_range(value: str) -> tuple[int | None, int | None]:
    """(first byte, whole size or None) of a ``Content-Range: bytes first-last/size`` header."""
    try:
        unit, _, spec = value.strip().partition(" ")
        span, _, size = spec.partition("/")
        return int(span.split("-")[0]), int(size) if size.isdigit() else None
    except ValueError:
        return None, None


def read_head(url: str, policy: RetryPolicy | None = None, size: int = HEAD_BYTES) -> bytes:
    """The first ``size`` bytes of a URL (fewer for a smaller file); TransferError if it cannot be read."""
    stream = RemoteFile(url, policy, first=size)
    try:
        stream.open()
        return _read_all(stream, size)
    finally:
        stream.close()


def gunzipped_head(head: bytes) -> bytes:
    """The first decompressed bytes of a file's head, gzipped or not (b"" where the gzip is not readable)."""
    if head[:2] != b"\x1f\x8b":
        return head
    try:
        return zlib.decompressobj(31).decompress(head, 4096)
    except zlib.error:
        return b""


def _read_all(stream: io.RawIOBase, most: int | None = None) -> bytes:
    parts, count = [], 0
    while most is None or count < most:
        data = stream.read(1 << 20 if most is None else min(1 << 20, most - count))
        if not data:
            break
        parts.append(data)
        count += len(data)
    return b"".join(parts)


@dataclass(frozen=True)
class Listing:
    """What a ``*.paths.gz`` listing names: ``files``, URLs in the listing's order (at most ``limit``)."""

    name: str
    files: list[str]


def read_listing(
    name: str, paths_base: str = DEFAULT_PATHS_BASE, limit: int | None = None, policy: RetryPolicy | None = None
) -> Listing:
    """The files a listing (a URL or a local file) names, as URLs resolved against ``paths_base``."""
    if is_url(name):
        try:
            stream = RemoteFile(name, policy)
            stream.open()
            data = _read_all(stream)
        except TransferError as error:
            raise SourceError(f"cannot read the listing {error}") from error
    else:
        try:
            with open(name, "rb") as handle:
                data = handle.read()
        except OSError as error:
            raise SourceError(f"{name}: cannot open: {error.strerror}") from error
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as error:
            raise SourceError(f"{name}: cannot decompress the listing: {error}") from error
    try:
        lines = [line.strip() for line in data.decode("utf-8").splitlines() if line.strip()]
    except UnicodeDecodeError as error:
        raise SourceError(f"{name}: not a listing of paths (not UTF-8 text)") from error
    if not lines:
        raise SourceError(f"{name}: the listing names no files")
    base = paths_base if paths_base.endswith("/") else paths_base + "/"
    files = [line if is_url(line) else urllib.parse.urljoin(base, line.lstrip("/")) for line in lines]
    return Listing(name, files[:limit] if limit else files)


@dataclass
class Fetcher:
    """Opens a build's files, a local path as a file and a URL as a :class:`RemoteFile`, all under one policy;
    ``transfers`` keeps each URL's stream, to tell afterwards which came whole.  ``closed`` is told of
    each stream closed."""

    policy: RetryPolicy = field(default_factory=RetryPolicy.from_env)
    closed: Callable[[RemoteFile], None] | None = None
    transfers: dict[str, RemoteFile] = field(default_factory=dict)

    def stream(self, url: str) -> RemoteFile:
        stream = RemoteFile(url, self.policy, closed=self.closed)
        self.transfers[url] = stream
        return stream

    def open(self, name: str):
        """A binary stream with ``read`` and ``peek``; a URL is connected to at its first read."""
        if is_url(name):
            return io.BufferedReader(self.stream(name), 1 << 20)
        return open(name, "rb")

    @contextlib.contextmanager
    def active(self) -> Iterator[Fetcher]:
        """Within: :func:`~rankstore.sources.open_part` opens through this fetcher (the readers of part files
        open their parts themselves, by name)."""
        token = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(token)


_ACTIVE: contextvars.ContextVar[Fetcher | None] = contextvars.ContextVar("rankstore_fetcher", default=None)


def active_fetcher() -> Fetcher:
    """The fetcher of the build under way, or a new one (a reader used on its own)."""
    return _ACTIVE.get() or Fetcher()
