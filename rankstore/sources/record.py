"""The proxy's record (``pagerank-proxy --record DIR``): the pages its user browsed, as a build's pages.

A record is a directory holding ``RECORD`` (a small JSON file naming the
format) and ``pages-<UTCSTAMP>-<PID>.jsonl`` files, one JSON object a line,
one line a page the proxy annotated: its URL, status, title, fetch time and
out-links (with nofollow and anchor text), as the contract between the proxy
and this reader says (``docs/ARCHITECTURE.md``, "The proxy's record").

Each line is also a visit: the URL viewed at its fetch time.  A page viewed
more than once is one page, its latest line's links and title; every view is
a :class:`Visit`, named by the line's identity (its file, page and time, and
which of the file's lines of that page and time it is), so that a build of a
grown record (or of one :func:`forget_lines` rewrote) adds only new views.
A line the writer was cut off in (no newline at the end of the file), a line
that is not JSON, or one whose fields are not as the contract says, is
reported as a :class:`~rankstore.sources.Skipped` with its file and line
number, and the rest loads.

:func:`forget_lines` rewrites a record without the lines of a host or of
before a date, and :func:`forget_warcs` its WARC files (``--record-warc``)
without their responses (each file written anew, synced, and renamed over the
old one).
"""

from __future__ import annotations

import contextlib
import glob
import gzip
import json
import mmap
import os
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

import xxhash

from . import GONE_STATUSES, ListedLink, ListedPage, Progress, Record, Skipped, SourceError

__all__ = [
    "RECORD_FILE",
    "RECORD_FORMAT",
    "RECORD_VERSION",
    "PAGES_PREFIX",
    "PAGES_SUFFIX",
    "WARC_PREFIX",
    "WARC_SUFFIX",
    "Visit",
    "RecordLine",
    "Forgotten",
    "ForgottenWarc",
    "is_record",
    "check_record",
    "record_files",
    "record_size",
    "read_lines",
    "read_record",
    "forget_lines",
    "forget_warcs",
    "record_warcs",
    "parse_moment",
]

# the record's format, which the proxy's writer (proxy_addon.record) writes by these same names
RECORD_FILE = "RECORD"
RECORD_FORMAT = "pagerank-proxy record"
RECORD_VERSION = 1
PAGES_PREFIX, PAGES_SUFFIX = "pages-", ".jsonl"
WARC_PREFIX, WARC_SUFFIX = "responses-", ".warc.gz"  # --record-warc's files, one gzip member a response
_FORGET_PREFIX = ".forget-"  # a file being written anew: what a forget cut short leaves
_MAX_LINE = 32 * 1024 * 1024  # a page's line; one longer is not read whole into memory


@dataclass(frozen=True, slots=True)
class Visit:
    """One view of a page: its canonical URL, when (seconds since 1970, UTC), and the identity of the line
    that says so (a 63-bit hash: a record built again adds no view twice)."""

    url: str
    at: int
    line: int


@dataclass(slots=True)
class RecordLine:
    """A line of a record, read and checked: the page as the proxy saw it, and where it stands."""

    url: str  # canonical
    status: int
    title: str | None
    fetched: str  # as written, the capture's time for the store
    at: int  # the same, in seconds since 1970, UTC
    links: list[ListedLink] = field(default_factory=list)
    where: str = ""
    identity: int = 0
    private: bool = False  # a private response: a view, its title and links not recorded


@dataclass
class Forgotten:
    """What :func:`forget_lines` took out of a record: lines, and links to the forgotten host left in others."""

    lines: int = 0
    links: int = 0
    files: int = 0  # files rewritten


@dataclass
class ForgottenWarc:
    """What :func:`forget_warcs` took out of a record's WARC files."""

    records: int = 0  # responses and revisits (gzip members) taken out
    naming: int = 0  # of them, other pages', taken out because they name the forgotten host (or their body does)
    remade: int = 0  # revisits kept whose response was taken out, each made a response with its body again
    files: int = 0  # files rewritten
    held: int = 0  # the record's WARC files


def is_record(path: str) -> bool:
    """Whether ``path`` is a record: a directory holding ``RECORD``."""
    return os.path.isfile(os.path.join(path, RECORD_FILE))


def check_record(root: str) -> None:
    """SourceError (one line) unless ``root`` is a record of a version this reader knows."""
    try:
        with open(os.path.join(root, RECORD_FILE), "rb") as handle:
            head = json.loads(handle.read(65536))
    except OSError as error:
        raise SourceError(f"{root}: cannot read its {RECORD_FILE}: {error.strerror}") from error
    except ValueError as error:
        raise SourceError(f"{root}: its {RECORD_FILE} is not JSON ({error})") from error
    if not isinstance(head, dict) or head.get("format") != RECORD_FORMAT:
        raise SourceError(f"{root}: its {RECORD_FILE} does not name the {RECORD_FORMAT!r} format")
    if head.get("version") != RECORD_VERSION:
        raise SourceError(
            f"{root}: a record of version {head.get('version')!r}; this rankstore reads version {RECORD_VERSION}"
        )


def record_files(root: str) -> list[str]:
    """The record's page files, by name: a writer's start time leads it, so older files come first."""
    names = sorted(name for name in os.listdir(root) if name.startswith(PAGES_PREFIX) and name.endswith(PAGES_SUFFIX))
    return [os.path.join(root, name) for name in names]


def live_writers(root: str) -> list[int]:
    """The processes still writing the record's page files: the writer's process id ends each file's name,
    and a process of that id that is still a proxy (its command line names ours or mitmproxy) may append."""
    alive = []
    for path in record_files(root):
        writer = os.path.basename(path)[len(PAGES_PREFIX) : -len(PAGES_SUFFIX)].rpartition("-")[2]
        if not writer.isdigit():
            continue
        try:
            with open(f"/proc/{writer}/cmdline", "rb") as handle:
                command = handle.read()
        except OSError:  # gone (or no /proc: then nothing is said)
            continue
        if any(name in command for name in (b"pagerank", b"proxy_addon", b"mitm")):
            alive.append(int(writer))
    return sorted(set(alive))


def record_warcs(root: str) -> list[str]:
    """The record's WARC files (``--record-warc``), by name."""
    names = sorted(name for name in os.listdir(root) if name.startswith(WARC_PREFIX) and name.endswith(WARC_SUFFIX))
    return [os.path.join(root, name) for name in names]


def record_size(root: str) -> int:
    """Bytes a reader of the record reports through ``progress``."""
    return sum(os.path.getsize(path) for path in record_files(root))


def parse_moment(text: str) -> datetime:
    """A UTC date or date-time as the CLI takes it (``2026-11-27``, ``2026-11-27T10:00:00Z``); ValueError
    otherwise.  A day is its first moment."""
    value = text.strip()
    moment = datetime.fromisoformat(value.replace(" ", "T"))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _identity(name: str, line: RecordLine, nth: int) -> int:
    """A line's identity: its file's name, the page and time it tells of, and how many lines of the file
    told of the same page at the same time before it (two views in one second are two visits).  Forgetting
    keeps it: it rewrites no page or time, and the lines of one page and time are forgotten together."""
    told = f"{name}\n{nth}\n{line.url}\n{line.fetched}".encode()
    return xxhash.xxh3_64_intdigest(told) >> 1


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _checked(raw: bytes, where: str) -> RecordLine | Skipped:
    """A line as the contract has it, or why it is not."""
    from ..urls import canonical

    try:
        item = json.loads(raw)
    except ValueError:
        return Skipped(where, "record line that is not JSON")
    if not isinstance(item, dict):
        return Skipped(where, "record line that is not a JSON object")
    url, status, title, fetched, links = (item.get(key) for key in ("url", "status", "title", "fetched", "links"))
    if not isinstance(url, str) or not isinstance(fetched, str) or not isinstance(links, list):
        return Skipped(where, "record line without url, fetched or links")
    if type(status) is not int or (title is not None and not isinstance(title, str)):
        return Skipped(where, "record line whose status or title is of the wrong type")
    page = canonical(url)
    if page is None:
        return Skipped(where, f"not an http(s) URL ({url[:100]!r})")
    try:
        at = int(parse_moment(fetched).timestamp())
    except ValueError:
        return Skipped(where, f"record line whose time cannot be read ({fetched[:40]!r})")
    listed = []
    for link in links:
        if not isinstance(link, dict) or not isinstance(link.get("url"), str):
            return Skipped(where, "record line with a link that is not an object with a url")
        anchor = link.get("anchor")
        listed.append(ListedLink(link["url"], "nofollow" if link.get("nofollow") is True else "", _text(anchor) or ""))
    return RecordLine(page, status, title, fetched, at, listed, where, private=item.get("private") is True)


def _lines(path: str) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, bytes without the newline, whether it ended with one) of a file."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            yield number, raw.rstrip(b"\n"), raw.endswith(b"\n")


def read_lines(root: str, progress: Progress | None = None) -> Iterator[RecordLine | Skipped]:
    """Every line of every page file of a record, checked, in file order."""
    check_record(root)
    for path in record_files(root):
        name = os.path.basename(path)
        seen: dict[tuple[str, str], int] = {}
        try:
            for number, raw, whole in _lines(path):
                where = f"{path}:{number}"
                if progress is not None:
                    progress(len(raw) + whole)
                if not whole:
                    yield Skipped(where, "record line cut short (the writer stopped inside it)")
                    continue
                if len(raw) > _MAX_LINE:
                    yield Skipped(where, f"record line over {_MAX_LINE // (1024 * 1024)} MiB")
                    continue
                if not raw.strip():
                    continue
                line = _checked(raw, where)
                if isinstance(line, RecordLine):
                    told = (line.url, line.fetched)
                    line.identity = _identity(name, line, seen.get(told, 0))
                    seen[told] = seen.get(told, 0) + 1
                yield line
        except OSError as error:
            yield Skipped(path, f"cannot read: {error.strerror}")


def read_record(
    root: str, progress: Progress | None = None, visits: Callable[[Visit], None] | None = None
) -> Iterator[Record | Skipped]:
    """A record's pages (each page once: its latest line, the later of two lines of the same second),
    told to ``visits`` a view a line as they are read.  Pages come once the whole record is read: a
    record is what one person browsed, its pages held at once."""
    latest: dict[str, RecordLine] = {}
    for line in read_lines(root, progress):
        if isinstance(line, Skipped):
            yield line
            continue
        if visits is not None:
            visits(Visit(line.url, line.at, line.identity))
        if line.private:  # a view alone: no title or links recorded is not "no links", so not a crawl
            continue
        held = latest.get(line.url)
        if held is None or line.at >= held.at:
            latest[line.url] = line
    for line in latest.values():
        if line.status in GONE_STATUSES:
            yield Record(line.url, line.where, line.status, fetched_at=line.fetched)
        elif 200 <= line.status < 300:
            listed = ListedPage(title=line.title, links=line.links)
            yield Record(
                line.url, line.where, line.status, content_type="text/html", fetched_at=line.fetched, listed=listed
            )
        # another status (an error page the proxy annotated) says nothing of the page's links: a view only


def _matches(line: RecordLine, host: str | None, before: int | None) -> bool:
    from ..urls import host_of

    return (host is None or host_of(line.url) == host) and (before is None or line.at < before)


def _without_host(raw: bytes, host: str) -> tuple[bytes, int]:
    """A kept line without its links to ``host`` (the record keeps no URL of a forgotten host)."""
    from ..urls import canonical, host_of

    item = json.loads(raw)
    links = item["links"]
    kept = [link for link in links if (target := canonical(link["url"])) is None or host_of(target) != host]
    if len(kept) == len(links):
        return raw, 0
    item["links"] = kept
    return json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode(), len(links) - len(kept)


def forget_lines(root: str, host: str | None = None, before: datetime | None = None) -> Forgotten:
    """Take out of a record the lines of pages on ``host`` viewed before ``before`` (either alone: all of
    that host, or everything before); with ``host``, also the links to it that other lines hold.  Each file
    changed is written anew beside the old one, synced, and renamed over it: a crash leaves either file
    whole.  A line that cannot be read is kept as it is, unless it names ``host``.  The proxy must not be
    writing to the record meanwhile: its file would be replaced under it."""
    check_record(root)
    _sweep(root)
    cutoff = int(before.timestamp()) if before is not None else None
    done = Forgotten()
    for path in record_files(root):
        kept: list[bytes] = []
        changed = False
        for number, raw, whole in _lines(path):
            line = _checked(raw, f"{path}:{number}") if whole and raw.strip() else None
            unreadable_naming_host = not isinstance(line, RecordLine) and host is not None and host.encode() in raw
            if unreadable_naming_host or (isinstance(line, RecordLine) and _matches(line, host, cutoff)):
                done.lines += 1
                changed = True
                continue
            if isinstance(line, RecordLine) and host is not None and before is None:
                raw, removed = _without_host(raw, host)
                done.links += removed
                changed = changed or bool(removed)
            kept.append(raw + b"\n" if whole else raw)
        if changed:
            _replace(path, kept)
            done.files += 1
    return done


def forget_warcs(root: str, host: str | None = None, before: datetime | None = None) -> ForgottenWarc:
    """Take out of a record's WARC files (``responses-*.warc.gz``: a gzip member a response, or a revisit
    naming one of its file) the records :func:`forget_lines` takes the lines of: those of pages on ``host``
    fetched before ``before`` (either alone); with ``host`` alone, also the records of other pages that name
    the host (a link to it, its name in the text: a response is kept whole or not at all; a revisit goes with
    the response it names).  A revisit that stays while the response it names goes is made a response again,
    with that body.  A member that cannot be read (cut by a killed writer, damaged) goes if what can be read
    of it is such a record or names the host, and is kept as it is otherwise.  The members kept are copied
    byte for byte; each file changed is written anew, synced and renamed over the old one, its mode kept."""
    check_record(root)
    _sweep(root)
    cutoff = int(before.timestamp()) if before is not None else None
    names = _names_of(host) if host is not None and before is None else ()
    done = ForgottenWarc()
    for path in record_warcs(root):
        done.held += 1
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size == 0:
                continue
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
                kept: list[tuple[int, int] | bytes] = []
                gone: dict[str, tuple[int, str]] = {}  # responses taken, by record id: where, and why
                taken = 0
                for start, end, content, whole in _members(view):
                    verdict = _verdict(content, None if whole else view[start:end], host, cutoff, names)
                    fields = next(_warc_heads(content), {}) if whole else {}
                    named = gone.get(fields.get("warc-refers-to", "")) if fields.get("warc-type") == "revisit" else None
                    if verdict is None and named is not None:
                        # the response read again from the file: a file of many taken is never held whole
                        remade = _made_whole(content, _inflate(view, named[0])[1]) if named[1] == "own" else None
                        if remade is not None:  # a visit kept: its body, in the response taken, with it
                            kept.append(remade)
                            done.remade += 1
                            continue
                        verdict = named[1]  # its body names the host, as its response's did
                    if verdict is None:
                        kept.append((start, end))
                        continue
                    if fields.get("warc-type") == "response" and fields.get("warc-record-id"):
                        gone[fields["warc-record-id"]] = (start, verdict)
                    taken += 1
                    done.naming += verdict == "names"
                if taken:
                    _replace(path, (piece if isinstance(piece, bytes) else view[piece[0] : piece[1]] for piece in kept))
                    done.records += taken
                    done.files += 1
    return done


def _made_whole(revisit: bytes, response: bytes) -> bytes | None:
    """A revisit record made the response it stands for, as a gzip member: its own WARC head (a response's,
    without the fields that name the response it referred to) and status line and headers, and the body of
    ``response`` (the record it named).  None if either cannot be read as one whole record."""
    visit, found = _record_parts(revisit), _record_parts(response)
    if visit is None or found is None:
        return None
    body_at = found[1].find(b"\r\n\r\n")
    if body_at < 0:
        return None
    http_head, body = visit[1], found[1][body_at + 4 :]
    lines = [b"WARC/1.1"]
    for line in visit[0].split(b"\r\n")[1:]:
        name = line.partition(b":")[0].strip().lower()
        if name == b"warc-type":
            line = b"WARC-Type: response"
        elif name == b"content-length":
            line = b"Content-Length: %d" % (len(http_head) + len(body))
        elif name.startswith(b"warc-refers-to") or name == b"warc-profile":
            continue
        lines.append(line)
    return gzip.compress(b"\r\n".join(lines) + b"\r\n\r\n" + http_head + body + b"\r\n\r\n", 3, mtime=0)


def _record_parts(content: bytes) -> tuple[bytes, bytes] | None:
    """A member's one WARC record: its head (without the blank line) and its block, None if it is not one
    whole record."""
    end = content.find(b"\r\n\r\n")
    if not content.startswith(b"WARC/") or end < 0:
        return None
    head = content[:end]
    fields = next(_warc_heads(content), {})
    try:
        length = int(fields.get("content-length", ""))
    except ValueError:
        return None
    block = content[end + 4 : end + 4 + length]
    return (head, block) if len(block) == length else None


def _names_of(host: str) -> tuple[bytes, ...]:
    """How a response may name ``host``, lower case: as in URLs (punycode), and in Unicode if it is an IDN."""
    names = [host.lower().encode()]
    try:
        unicode = host.encode("ascii").decode("idna").lower().encode()
    except (UnicodeError, ValueError):
        unicode = names[0]
    if unicode not in names:
        names.append(unicode)
    return tuple(names)


_GZIP_MAGIC = b"\x1f\x8b\x08"
_CHUNK = 1 << 20


def _inflate(view: mmap.mmap, start: int) -> tuple[int, bytes, bool]:
    """The gzip member at ``start``: (where it ends, its content, whether it is whole).  A member cut short
    ends at the end of the file; one that is damaged at the next member that reads whole (what lies between
    is one piece, read as far as it goes)."""
    inflater = zlib.decompressobj(31)
    out: list[bytes] = []
    fed = start
    try:
        while not inflater.eof and fed < len(view):
            chunk = view[fed : fed + _CHUNK]
            out.append(inflater.decompress(chunk))
            fed += len(chunk)
    except zlib.error:
        return _next_member(view, start + 1), _inflate_damaged(view, start), False
    if not inflater.eof:
        return len(view), b"".join(out), False
    return fed - len(inflater.unused_data), b"".join(out), True


def _inflate_damaged(view: mmap.mmap, start: int) -> bytes:
    """What a damaged gzip member at ``start`` reads as, up to the damage (fed a little at a time: what a piece
    fed at once held before its error would be lost with it)."""
    inflater = zlib.decompressobj(31)
    out: list[bytes] = []
    fed = start
    with contextlib.suppress(zlib.error):
        while not inflater.eof and fed < len(view):
            out.append(inflater.decompress(view[fed : fed + 16]))
            fed += 16
    return b"".join(out)


def _next_member(view: mmap.mmap, start: int) -> int:
    """Where the first gzip member that reads whole starts at or after ``start`` (the end of the file if none)."""
    at = view.find(_GZIP_MAGIC, start)
    while at >= 0:
        inflater = zlib.decompressobj(31)
        try:
            fed = at
            while not inflater.eof and fed < len(view):
                inflater.decompress(view[fed : fed + _CHUNK], _CHUNK)
                while inflater.unconsumed_tail and not inflater.eof:
                    inflater.decompress(inflater.unconsumed_tail, _CHUNK)
                fed += _CHUNK
            if inflater.eof:
                return at
        except zlib.error:
            pass
        at = view.find(_GZIP_MAGIC, at + 1)
    return len(view)


def _members(view: mmap.mmap) -> Iterator[tuple[int, int, bytes, bool]]:
    """(start, end, content, whether it read whole) of each gzip member of a file, in order: a piece that
    cannot be read whole comes as one, its content as far as it reads."""
    at = 0
    while at < len(view):
        end, content, whole = _inflate(view, at)
        yield at, end, content, whole
        at = end


def _warc_heads(content: bytes) -> Iterator[dict[str, str]]:
    """The header fields (names in lower case) of each WARC record of ``content``, as far as it goes."""
    at = 0
    while at < len(content):
        while content.startswith(b"\r\n", at):
            at += 2
        if not content.startswith(b"WARC/", at):
            return
        end = content.find(b"\r\n\r\n", at)
        fields: dict[str, str] = {}
        for line in content[at : end if end >= 0 else len(content)].split(b"\r\n")[1:]:
            name, colon, value = line.partition(b":")
            if colon:
                fields.setdefault(name.strip().lower().decode("latin-1"), value.strip().decode("utf-8", "replace"))
        yield fields
        try:
            length = int(fields.get("content-length", ""))
        except ValueError:
            return
        if end < 0 or length < 0:
            return
        at = end + 4 + length


def _verdict(
    content: bytes, raw: bytes | None, host: str | None, cutoff: int | None, names: tuple[bytes, ...]
) -> str | None:
    """Why a member of a WARC goes: "own" (a response of the pages forgotten), "names" (another page's that
    names the forgotten host), or None (it stays).  ``raw``: the member's bytes, when it cannot be read whole."""
    from ..urls import canonical, host_of

    for fields in _warc_heads(content if content or raw is None else raw):
        target = canonical(fields.get("warc-target-uri", "")) if fields.get("warc-target-uri") else None
        if host is not None and (target is None or host_of(target) != host):
            continue
        if cutoff is not None:
            try:
                if int(parse_moment(fields.get("warc-date", "")).timestamp()) >= cutoff:
                    continue
            except ValueError:
                continue  # no time to judge by: kept, as a line whose time cannot be read
        elif target is None:
            continue
        return "own"
    if names:
        seen = content.lower()
        if any(name in seen for name in names) or (raw is not None and any(name in raw.lower() for name in names)):
            return "names"
    return None


def _sweep(root: str) -> None:
    """What a forget cut short left beside the files it was writing anew: gone."""
    for left in glob.glob(os.path.join(glob.escape(root), _FORGET_PREFIX + "*")):
        with contextlib.suppress(OSError):
            os.unlink(left)


def _replace(path: str, pieces: Iterable[bytes]) -> None:
    """``path``'s content replaced atomically by ``pieces``: a new file in the same folder (its owner's alone
    while written), synced, given the old one's mode, renamed over it, and the folder synced (the rename
    itself made durable)."""
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=_FORGET_PREFIX, dir=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            for piece in pieces:
                out.write(piece)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, os.stat(path).st_mode & 0o7777)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    directory = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
