"""The page path as data: a page's job, its outcomes, the messages between the proxy and a worker, and a
flow's state.

A page's rewrite is asked for with a :class:`PageJob` (what the page needs beside its body) and ends as
:class:`Rewritten` or :class:`Untouched` (why not), wherever it ran: mitmproxy's event loop, a thread, or a
worker process (:mod:`.worker`, driven by :mod:`.pool`).  A worker that fails on a page says so
(:class:`WorkerError` in the proxy).

Between the proxy and a worker these travel as length-prefixed pickles of plain tuples, written and read
only here: a pickled named tuple or dataclass costs several times a plain tuple's (its class is looked up
by name and called, each way), on every page.  The layouts:

* a page: ``("page", body, content_type, url, content_encoding, limit, max_links, top_level)``, ``body`` its bytes or,
  when they sit in the worker's shared region, a :class:`Slot` ``(offset, length, room)``;
* a panel to make ahead: ``("prepare", url)``, not answered;
* a page's record to make (:mod:`.record`): ``("record", body, *record_job)``, ``body`` as a page's;
* a worker's first message: :data:`STARTED`, an empty one, once it takes pages;
* an answer: ``(True, (body, links, ranked, panel_kept))`` (``body`` its length when it went back in the
  job's slot), ``(True, reason)`` for a page left untouched, or ``(False, message)`` for a failure;
* a record's answer: ``("record", line, warc)`` (``warc`` None when none is kept), ``("record", line_length,
  warc_length)`` when they went back in the job's slot, one after the other, or ``("record", None, None)``
  for a page with nothing to record.
"""

from __future__ import annotations

import enum
import pickle
import struct
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from .record import WarcOriginal

HEADER = struct.Struct("!I")  # each message's length, before it
# a worker's first message, before any answer: it has started and takes pages (no answer is empty)
STARTED = HEADER.pack(0)


class PageJob(NamedTuple):
    """A page to rewrite, but for its body: how to read it, and the limits it must keep."""

    content_type: str | None
    url: str
    content_encoding: str | None = None
    limit: int = 8 * 1024 * 1024  # the decoded body's bytes at most (:mod:`.bodies`)
    max_links: int = 0  # link tags at most (0: no budget)
    # a top-level navigation (or no Fetch Metadata said): its rewrite is kept for a revisit of the same body; a
    # frame's never is, so that a site framing another's page cannot time whether the user saw it lately
    top_level: bool = True


class Rewritten(NamedTuple):
    """A page rewritten: its new body (encoded as it came), its bars, those of them ranked, and whether its
    panel was one kept (made ahead, or on an earlier visit, the store unchanged since)."""

    body: bytes
    links: int
    ranked: int
    panel_kept: bool


class Untouched(NamedTuple):
    """A page left as it came, and why (for the log and the flow's note)."""

    reason: str


class WorkerError(RuntimeError):
    """A worker could not rewrite a page (the message says why); the page passes untouched."""


class Slot(NamedTuple):
    """Where a body sits in a worker's shared region, and the room there for its answer."""

    offset: int
    length: int
    room: int


class PanelJob(NamedTuple):
    """Make and keep the panel of the page at ``url``, while its request travels (not answered)."""

    url: str


class PageOrder(NamedTuple):
    """A page's job as a worker reads it: the job, and its body's bytes or where they are."""

    job: PageJob
    body: bytes | Slot


class InSlot(NamedTuple):
    """A worker's :class:`Rewritten` whose body went back in the job's slot: only its length travels."""

    length: int
    links: int
    ranked: int
    panel_kept: bool

    def with_body(self, body: bytes) -> Rewritten:
        return Rewritten(body, self.links, self.ranked, self.panel_kept)


class RecordJob(NamedTuple):
    """A page's record to make (:func:`~.record.make_record`), but for its body: how to read the body, the
    response's status line and headers as they came, when it was fetched, and what the record keeps of it."""

    url: str  # the URL as requested
    status: int
    reason: str
    headers: tuple[tuple[bytes, bytes], ...]
    fetched: float  # the response's end, seconds since the epoch
    content_encoding: str | None = None
    limit: int = 8 * 1024 * 1024  # the decoded body's bytes at most (:mod:`.bodies`)
    queries: bool = False  # the page URL's query kept (its secret parameters never are)
    withheld: bool = False  # a private response: the visit alone, without title, links or body
    warc: bool = False  # a WARC member made too


class RecordOrder(NamedTuple):
    """A page's record as a worker is asked for it: the job, and its body's bytes or where they are."""

    job: RecordJob
    body: bytes | Slot


class Recorded(NamedTuple):
    """A page's record made: its line (with its newline) and its WARC member (None when none is kept), each
    written whole as it is; ``original``, for a member made in the proxy's process that holds a body its
    revisits may name once it is written (:class:`~.record.WarcOriginal`; never sent by a worker)."""

    line: bytes
    warc: bytes | None
    original: WarcOriginal | None = None


class RecordInSlot(NamedTuple):
    """A worker's :class:`Recorded` that went back in the job's slot: the line, then the WARC member."""

    line_length: int
    warc_length: int | None

    def with_bytes(self, data: bytes) -> Recorded:
        """The record from the slot's bytes (at least its two lengths of them)."""
        line = data[: self.line_length]
        warc = None if self.warc_length is None else data[self.line_length : self.line_length + self.warc_length]
        return Recorded(line, warc)


class Failed(NamedTuple):
    """A worker's failure on a page (an exception of its own): the page passes untouched."""

    message: str


Answer = Rewritten | InSlot | Untouched | Failed | Recorded | RecordInSlot | None  # None: nothing to record


def _framed(message: tuple) -> bytes:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(data)) + data


def page_message(job: PageJob, body: bytes | Slot) -> bytes:
    """A page's job, framed for a worker's input."""
    return _framed(("page", tuple(body) if isinstance(body, Slot) else body, *job))


def panel_message(url: str) -> bytes:
    """A panel to make ahead, framed for a worker's input."""
    return _framed(("prepare", url))


def record_message(job: RecordJob, body: bytes | Slot) -> bytes:
    """A page's record to make, framed for a worker's input."""
    return _framed(("record", tuple(body) if isinstance(body, Slot) else body, *job))


def read_order(payload: bytes) -> PageOrder | PanelJob | RecordOrder:
    """What a worker is asked (a payload without its header)."""
    kind, sent, *job = pickle.loads(payload)
    if kind == "prepare":
        return PanelJob(sent)
    if kind == "record":
        return RecordOrder(RecordJob(*job), Slot(*sent) if isinstance(sent, tuple) else sent)
    return PageOrder(PageJob(*job), Slot(*sent) if isinstance(sent, tuple) else sent)


def answer_message(answer: Answer) -> bytes:
    """A worker's answer, framed for its output."""
    if answer is None:
        return _framed(("record", None, None))
    if isinstance(answer, Recorded | RecordInSlot):
        return _framed(("record", *answer[:2]))  # a worker's record names no response
    if isinstance(answer, Failed):
        return _framed((False, answer.message))
    if isinstance(answer, Untouched):
        return _framed((True, answer.reason))
    return _framed((True, tuple(answer)))


def read_answer(payload: bytes) -> Answer:
    """A worker's answer (a payload without its header)."""
    message = pickle.loads(payload)
    if message[0] == "record":
        _, line, warc = message
        if line is None:
            return None
        return RecordInSlot(line, warc) if isinstance(line, int) else Recorded(line, warc)
    ok, value = message
    if not ok:
        return Failed(value)
    if isinstance(value, str):
        return Untouched(value)
    if isinstance(value[0], int):
        return InSlot(*value)
    return Rewritten(*value)


class FlowState(enum.Enum):
    """Where a flow is on the page path (``flow.metadata[STATE]``); what happened, in words, is its note
    (``flow.metadata[NOTE]``), for the log and whoever reads the flow (tests, mitmproxy's views)."""

    OWN_PAGE = "own-page"  # one of the proxy's own pages, answered by the addon
    PASSED = "passed"  # streamed through byte for byte, never buffered
    CANDIDATE = "candidate"  # its body held back, to be rewritten once whole
    REWRITTEN = "rewritten"  # bars (and a panel) added
    UNTOUCHED = "untouched"  # held back, but let go as it came (the note says why)
    CUT_OFF = "cut off"  # the origin missed its deadline: the client got a 504 (:mod:`.deadlines`)


STATE = "pagerank_state"
NOTE = "pagerank"  # the key the flow's note has always had: readers of the text keep working


def mark(flow, state: FlowState, note: str | None = None) -> None:
    """Set a flow's state, and its note (by default the state's name).  The metadata holds the state's
    value, a string: mitmproxy saves a flow's metadata (``-w``, mitmweb) only if it holds plain data."""
    flow.metadata[STATE] = state.value
    flow.metadata[NOTE] = state.value if note is None else note


def state_of(flow) -> FlowState | None:
    """A flow's state, None if the addon has not seen it (a response no server sent: a replay, another
    addon's) or it holds no state of this version's (a flow read from a file)."""
    value = flow.metadata.get(STATE)
    try:
        return None if value is None else FlowState(value)
    except ValueError:
        return None
