"""Page rewriting in worker processes, so it runs beside mitmproxy rather than under its GIL.

The addon starts ``python -m proxy_addon.worker STORE RANKING PANEL HOST_RANKING SITE_RANKING [FD SIZE]``
processes (a level's ranking "" for the store's own choice)
and talks to each over two pipes, its standard input and output, whose other
ends mitmproxy's own event loop writes and reads without blocking: no
helper threads in the proxy (a ``concurrent.futures`` process pool adds two,
and their hand-offs under the GIL cost more than the rewrite itself), and no
asyncio streams (a reader callback gives each answer to its page in the turn
it arrives).  A job is one length-prefixed pickle:

* ``("page", raw body, content_type, url, content_encoding, limit, max_links)``,
  answered ``(True, (new_body, links, ranked, panel kept))``, ``(True, reason)`` for a page
  left untouched, or ``(False, message)``.  A body that sits in the shared
  region (below) is sent as ``(offset, length, room)`` instead of its bytes.
* ``("prepare", url)``, not answered: the worker makes the page's panel while
  its request is still on its way to the origin (:meth:`Workers.prepare`).

A worker answers its jobs in the order they came, and holds up to
``JOBS_IN_FLIGHT`` of them: it takes its next job while the proxy has yet to
read its last answer (:class:`Workers`).

A worker keeps the panels it made, each with the store's version: a page's job
uses its panel while nothing has been committed to the store since
(:meth:`~proxy_addon.ranks.PageView.keep`), whether it was made ahead or on an
earlier visit.

Bodies travel through a region of shared memory of each worker's own (a
``memfd`` of SIZE bytes the worker inherits as file descriptor FD, a slot of
``SHARED_BYTES`` for each job it may hold), and the pipes carry only the small
messages that say where they are (a ~40 KB page and its ~70 KB answer through
pipes of 64 KB take several system calls and wake-ups each way).  The answer
goes back in the job's slot.  A body or answer larger than a slot, or a system
without ``memfd_create``, goes through the pipe inside the pickle instead.

Each worker keeps one read-only store connection, opened before its first job.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import gc
import logging
import mmap
import os
import pickle
import struct
import sys
import zlib
from collections.abc import Callable, Mapping, Sequence

from rankstore.urls import canonical

from .bodies import TooLarge, UnknownEncoding, decode, encode
from .markup import LinkInfo
from .markup import panel as render_panel
from .ranks import _CACHE_KEPT, AUTOMATIC, PRELOAD_PAGES, LevelChoice, PageView, Ranks
from .rewrite import TooManyLinks, annotate_bytes

__all__ = ["rewrite_page", "prepare_panel", "preload", "ready", "Workers", "WorkerError", "serve"]

log = logging.getLogger(__name__)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_HEADER = struct.Struct("!I")
# A job's slot of its worker's shared region; only the pages ever touched take memory.  Any body under the
# default pagerank_max_body (8 MiB) fits: a big page pickled through the pipe instead costs mitmproxy's event
# loop a copy and a write per 64 KB.
SHARED_BYTES = 16 * 1024 * 1024  # 0: pipes only
# Jobs a worker holds at once (each with its slot): it takes the next before the proxy has read the last answer.
JOBS_IN_FLIGHT = 4
# ... while the bodies it holds come to no more than this: no page waits behind a big one (a job's time grows
# with its body), and a big one is sent only to a worker with nothing else in hand.
PIPELINE_BYTES = 512 * 1024
# While a page is alone in the proxy (no other flow, no other job), mitmproxy's event loop keeps turning for
# this long rather than sleep until its answer comes: a core left idle is slow to wake (on a VM, a halt and an
# interrupt), and most answers come within this (BENCHMARKS.md).  Each turn still polls every socket, so
# nothing waits on it; with other flows about, the loop has their work to do and the core is not given away.
POLL_SECONDS = 0.0005
# A page with no score of its own shows its host's (site's) best referrers, read from the in-links of each of
# its pages: a caller that must not spend long (``most_backlinks``) leaves a host (site) of more pages than this
# to a worker.
INLINE_LEVEL_PAGES = 100
_ranks: dict[tuple[str, str, int, LevelChoice], Ranks] = {}


class WorkerError(RuntimeError):
    """A worker could not rewrite a page (the message says why); the page passes untouched."""


def _ranks_for(store: str, ranking: str, panel: int, levels: LevelChoice = AUTOMATIC) -> Ranks:
    key = (store, ranking, panel, levels)
    if key not in _ranks:
        _ranks[key] = Ranks(store, ranking, panel, preload=PRELOAD_PAGES, levels=levels)
    return _ranks[key]


def rewrite_page(
    store: str,
    ranking: str,
    panel: int,
    body: bytes,
    content_type: str | None,
    url: str,
    content_encoding: str | None = None,
    limit: int = 8 * 1024 * 1024,
    max_links: int = 0,
    *,
    most_links: int | None = None,
    most_backlinks: int | None = None,
    most_lookups: int | None = None,
    levels: LevelChoice = AUTOMATIC,
) -> tuple[bytes, int, int, bool] | str:
    """The rewritten body (encoded as ``body`` was) and its bar counts, or why the page passes untouched.

    ``body`` is the response's raw bytes: decoded here within ``limit`` bytes
    (:mod:`.bodies`); a page big enough to hold more than ``max_links`` links
    (8 bytes each) and with more link tags than that (0: no budget) is left as
    it is, so that one huge page never costs seconds.
    The last of the four answers says whether the page's panel was one kept
    (:func:`prepare_panel`, or an earlier visit), the store unchanged since.
    A caller that must not spend long on a page bounds it: past ``most_links``
    links, :class:`~.rewrite.TooManyLinks` once the page is scanned, before its
    links are resolved; so too past ``most_lookups`` links not yet looked up in
    this process (or any, if the ranking's newest version is not read yet:
    :func:`ready`), and past ``most_backlinks`` backlinks if its panel is to be
    made.  ``levels``: the host and site rankings that answer for links whose page has no score.
    """
    try:
        decoded = decode(body, content_encoding, limit)
    except TooLarge as error:
        return f"too large ({error})"
    except (UnknownEncoding, ValueError, zlib.error) as error:
        return f"not decoded ({error})"
    # A link with a target takes 8 bytes at least (<a href=x>), so a body of fewer than 8 bytes a link cannot
    # cost more than the budget; nor one of fewer '<' than the budget: most pages skip the count.
    if (
        max_links
        and len(decoded) > 8 * max_links
        and decoded.count(b"<") > max_links
        and _link_tags(decoded) > max_links
    ):
        return f"over {max_links:,} link tags"
    ranks = _ranks_for(store, ranking, panel, levels)
    kept = False
    with ranks.page() as view:  # bars and panel from one version of the ranking
        lookup = view.lookup if most_lookups is None else functools.partial(_bounded_lookup, view, most_lookups)

        def panel_markup(page: str) -> str:
            nonlocal kept
            make = functools.partial(_panel_markup, view, page, lookup, most_backlinks)
            markup, kept = view.keep(("panel", page), make)
            return markup

        done = annotate_bytes(
            decoded,
            content_type,
            url,
            lookup,
            panel_markup if panel else None,
            view.marks,
            most_links=most_links,
        )
    if done is None:
        return "charset does not round-trip"
    new_body, rewrite = done
    return encode(new_body, content_encoding), rewrite.links, rewrite.ranked, kept


def prepare_panel(
    store: str,
    ranking: str,
    panel: int,
    url: str,
    *,
    most_backlinks: int | None = None,
    levels: LevelChoice = AUTOMATIC,
) -> bool:
    """Make and keep the panel of the page at ``url`` for its job (:func:`rewrite_page`), unless one is
    kept under the store's version this thread saw last (told without a query); False if there is none
    to make (no panel wanted, or not a URL).  A panel shows the ranking, the host ranking and the graph's
    builds: a commit of any of them, and it is made again, here or by the page's job.
    ``most_backlinks``: a caller that must not spend long bounds it as :func:`rewrite_page` does
    (:class:`~.rewrite.TooManyLinks`, also while the ranking's newest version is not read)."""
    page = canonical(url)
    if not panel or not page:
        return False
    ranks = _ranks_for(store, ranking, panel, levels)
    if ranks.kept_lately(("panel", page)):
        return True  # a revisit: its job reads the version, and makes it again if the store has changed
    with ranks.page() as view:
        lookup = view.lookup if most_backlinks is None else functools.partial(_bounded_lookup, view, 1)
        view.keep(("panel", page), functools.partial(_panel_markup, view, page, lookup, most_backlinks))
    return True


def preload(store: str, ranking: str, panel: int, levels: LevelChoice = AUTOMATIC) -> None:
    """Read the newest ranking version's arrays and best pages' look-ups now (and the host and site
    rankings' arrays), for the pages :func:`rewrite_page` rewrites in this process, in any thread (as each
    worker does before its first job)."""
    _ranks_for(store, ranking, panel, levels).preload()


def ready(store: str, ranking: str, panel: int, levels: LevelChoice = AUTOMATIC) -> bool:
    """Has this process read what :func:`preload` reads, for the newest version of the ranking?  A cheap
    check, for a caller that must not spend long on a page (:meth:`~.ranks.Ranks.ready`)."""
    return _ranks_for(store, ranking, panel, levels).ready()


def _bounded_lookup(view: PageView, most: int, urls: Sequence[str]) -> Mapping[str, LinkInfo]:
    """:meth:`PageView.lookup`, or :class:`~.rewrite.TooManyLinks` if it would ask the store for more than
    ``most`` of ``urls`` (or read a new version's preloaded look-ups first)."""
    needed = view.lookups_needed(urls)
    if needed is None:
        raise TooManyLinks("the ranking's newest version is not read yet")
    if needed > most:
        raise TooManyLinks(f"{needed:,} links not looked up yet")
    return view.lookup(urls)


def _panel_markup(
    view: PageView,
    page: str,
    lookup: Callable[[Sequence[str]], Mapping[str, LinkInfo]] | None = None,
    most_backlinks: int | None = None,
) -> str:
    if most_backlinks is not None:
        info = (lookup or view.lookup)([page]).get(page)
        if info is not None and info.inlinks > most_backlinks:
            raise TooManyLinks(f"{info.inlinks:,} backlinks")
    return render_panel(view.panel(page, None if most_backlinks is None else INLINE_LEVEL_PAGES))


def _link_tags(body: bytes) -> int:
    """An upper bound on the page's links, cheaply: the tags that start ``<a`` (``<a``, ``<area``, ``<abbr``...)."""
    return body.count(b"<a") + body.count(b"<A")


# ------------------------------------------------------------------ the worker process


def _read(stream, size: int) -> bytes:
    data = stream.read(size)
    return data if data is not None else b""


def serve(
    store: str,
    ranking: str,
    panel: int,
    shared_fd: int | None = None,
    shared_size: int = 0,
    levels: LevelChoice = AUTOMATIC,
) -> None:
    """Answer jobs from standard input until it closes (bodies in the shared region, if given)."""
    jobs, answers = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must never corrupt the answers
    shared = mmap.mmap(shared_fd, shared_size) if shared_fd is not None else None
    try:
        preload(store, ranking, panel, levels)  # the best pages' look-ups before the first page
    except Exception as error:  # reported with each job instead
        print(f"pagerank worker: {error}", file=sys.stderr)
    gc.collect()
    gc.freeze()  # what is loaded now lives as long as the worker: full collections need not walk it
    while True:
        header = _read(jobs, _HEADER.size)
        if len(header) < _HEADER.size:
            return  # the proxy has gone
        (size,) = _HEADER.unpack(header)
        payload = _read(jobs, size)
        if len(payload) < size:
            return
        try:
            kind, sent, *job = pickle.loads(payload)
            if kind == "prepare":  # the page's panel, kept for its job
                try:
                    prepare_panel(store, ranking, panel, sent, levels=levels)
                except Exception:  # a guess: the page's job makes the panel itself (and says why, if it fails)
                    pass
                continue
            room = 0
            if isinstance(sent, tuple):  # where the bytes are in the shared region, and the room there
                assert shared is not None
                offset, length, room = sent
                sent = shared[offset : offset + length]
            done = rewrite_page(store, ranking, panel, sent, *job, levels=levels)
            answer: tuple[bool, object] = (True, done)
            if not isinstance(done, str) and len(done[0]) <= room:  # the answer goes where the page came
                assert shared is not None
                shared[offset : offset + len(done[0])] = done[0]
                answer = (True, (len(done[0]), *done[1:]))
        except Exception as error:  # the page passes untouched; the worker lives on
            answer = (False, f"{type(error).__name__}: {error}")
        data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        answers.write(_HEADER.pack(len(data)) + data)
        answers.flush()


# ------------------------------------------------------------------ the proxy's side


class _Worker:
    """One worker process and the proxy's ends of its two pipes (both non-blocking)."""

    def __init__(self, process: asyncio.subprocess.Process, jobs: int, answers: int, shared: mmap.mmap | None):
        self.process, self.jobs, self.answers, self.shared = process, jobs, answers, shared
        self.free = list(range(JOBS_IN_FLIGHT - 1, -1, -1)) if shared is not None else []  # its slots, 0 on top
        self.pending: collections.deque[_Job] = collections.deque()  # sent, their answers due in this order
        self.load = 0  # the bytes of the bodies it holds
        self.inbox = bytearray()  # answers read, not yet whole
        self.outbox = bytearray()  # jobs not yet written (its pipe was full)
        self.panels: dict[str, None] = {}  # the pages whose panel it keeps (asked ahead, or made in a job)
        self.preparing = False  # asked to prepare a panel since its last job


class _Job:
    """A job sent to a worker: its page's future, its slot (None: the body went through the pipe), its
    page's URL (whose panel the worker then keeps) and its body's size."""

    __slots__ = ("future", "slot", "url", "size")

    def __init__(self, future: asyncio.Future, slot: int | None, url: str, size: int):
        self.future, self.slot, self.url, self.size = future, slot, url, size


class Workers:
    """``count`` worker processes driven by the event loop, each with up to ``JOBS_IN_FLIGHT`` jobs at once.

    A job goes to the worker with the least in hand (bytes of bodies; the first
    one of those: with one client, always the same warm worker), and waits only
    when no worker has room: ``JOBS_IN_FLIGHT`` jobs, and bodies of
    ``PIPELINE_BYTES`` with it (a worker with nothing in hand has room for any
    body).  A worker answers its jobs in the order they came; the event loop
    reads its answers in a reader callback, which gives each job's result to
    its page at once.  So a worker takes its next job without waiting for the
    event loop to collect its last answer: under load the loop turns at its own
    pace, and the workers never idle on it.
    """

    def __init__(self, count: int, store: str, ranking: str, panel: int, levels: LevelChoice = AUTOMATIC):
        self.count = count
        self.args = (store, ranking, str(panel), levels.host, levels.site)
        self._workers: list[_Worker] = []  # in the order they started: the first ones are preferred
        self._waiting: collections.deque[tuple[asyncio.Future, bytes, tuple]] = collections.deque()
        self._spawning: set[asyncio.Task] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self._started = False

    async def _spawn(self) -> _Worker:
        env = dict(os.environ)
        env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        size, fd, shared = SHARED_BYTES * JOBS_IN_FLIGHT, None, None
        if hasattr(os, "memfd_create") and size > 0:
            fd = os.memfd_create("pagerank-worker")
            os.ftruncate(fd, size)
            shared = mmap.mmap(fd, size)
        jobs_read, jobs = os.pipe()
        answers, answers_write = os.pipe()
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "proxy_addon.worker",
                *self.args,
                *((str(fd), str(size)) if shared else ()),
                stdin=jobs_read,
                stdout=answers_write,
                env=env,
                pass_fds=(fd,) if shared is not None and fd is not None else (),
            )
        except BaseException:
            for end in (jobs, answers):
                os.close(end)
            if shared is not None:
                shared.close()
            raise
        finally:
            for end in (jobs_read, answers_write) + ((fd,) if fd is not None else ()):
                os.close(end)  # the worker's ends are its own now; the mappings keep the memory
        os.set_blocking(jobs, False)
        os.set_blocking(answers, False)
        worker = _Worker(process, jobs, answers, shared)
        asyncio.get_running_loop().add_reader(answers, self._readable, worker)
        self._workers.append(worker)
        return worker

    async def start(self) -> None:
        """Start the processes (once per event loop); they open the store before their first job."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self.close()
            self._loop, self._lock, self._started = loop, asyncio.Lock(), False
        assert self._lock is not None
        async with self._lock:
            if not self._started:
                for _ in range(self.count):
                    await self._spawn()
                self._started = True

    def all_idle(self) -> bool:
        """Is every worker free right now (started, in this event loop): is the proxy quiet?"""
        return (
            self._started
            and self._loop is asyncio.get_running_loop()
            and not self._waiting
            and all(not worker.pending for worker in self._workers)
        )

    def _next(self, size: int = 0) -> _Worker | None:
        """The worker that a job of a ``size``-byte body goes to: the first of those with the least in hand,
        among those with room for it."""
        best = None
        for worker in self._workers:
            if worker.pending and (len(worker.pending) >= JOBS_IN_FLIGHT or worker.load + size > PIPELINE_BYTES):
                continue
            if best is None or worker.load < best.load:
                best = worker
        return best

    def prepare(self, url: str) -> None:
        """Have the worker that the next job goes to make the panel of the page at ``url`` now.

        Sent when a page's request leaves for the origin: the worker makes the
        panel meanwhile (unless it has it already) and keeps it, and the page's
        job (the next one it gets) skips that part.  Nothing is answered, so it
        costs the event loop one write; a commit to the store meanwhile, and the
        panel is made again with the page.  One at a time: a worker asked already
        gets no other until its next job.  A worker that has made the page's
        panel already (ahead, or in an earlier job) is not asked again: a wake-up
        then takes the core from the proxy while the request is on its way, for
        nothing.
        """
        if not self._started or self._loop is not asyncio.get_running_loop():
            return
        worker = self._next()
        if worker is None or worker.preparing:  # one at a time: a burst of requests must not queue guesses
            return
        if url in worker.panels:  # it keeps that panel: a revisit wakes no process before its job
            return
        self._made(worker.panels, url)
        worker.preparing = True
        payload = pickle.dumps(("prepare", url), protocol=pickle.HIGHEST_PROTOCOL)
        self._write(worker, _HEADER.pack(len(payload)) + payload)

    async def rewrite(self, body: bytes, *job, poll: bool = False) -> tuple[bytes, int, int, bool] | str:
        """:func:`rewrite_page` of ``(body, *job)`` in a worker process (with the page's panel if that worker
        keeps it: :meth:`prepare`).  ``poll``: the page is alone in the proxy, and if its job is the only one
        out, the event loop keeps turning until the answer comes (``POLL_SECONDS``) rather than sleep."""
        if not self._started or self._loop is not asyncio.get_running_loop():
            await self.start()
        future = asyncio.get_running_loop().create_future()
        worker = self._next(len(body))
        if worker is None or self._waiting:
            self._waiting.append((future, body, job))  # no worker has room, or jobs wait already: in turn
        else:
            quiet = poll and not any(other.pending for other in self._workers)  # the only job out
            self._send(worker, future, body, job)
            if quiet and POLL_SECONDS:
                loop = asyncio.get_running_loop()
                self._poll(loop, future, loop.time() + POLL_SECONDS)
        return await future

    def _poll(self, loop: asyncio.AbstractEventLoop, future: asyncio.Future, until: float) -> None:
        """Keep the event loop turning until ``future`` has its answer, or ``until``: a callback that is
        always ready makes each turn poll the sockets without sleeping (``POLL_SECONDS``)."""
        if not future.done() and loop.time() < until:
            os.sched_yield()  # a process waiting for this core (the worker with the job, perhaps) runs first
            loop.call_soon(self._poll, loop, future, until)

    def _send(self, worker: _Worker, future: asyncio.Future, body: bytes, job: tuple) -> None:
        worker.preparing = False  # its job follows whatever it was asked to prepare
        sent: bytes | tuple[int, int, int] = body
        slot = None
        if worker.shared is not None and len(body) <= SHARED_BYTES and worker.free:
            slot = worker.free.pop()
            offset = slot * SHARED_BYTES
            worker.shared[offset : offset + len(body)] = body
            sent = (offset, len(body), SHARED_BYTES)  # the bytes travel in its slot of the shared region
        worker.pending.append(_Job(future, slot, job[1], len(body)))
        worker.load += len(body)
        payload = pickle.dumps(("page", sent, *job), protocol=pickle.HIGHEST_PROTOCOL)
        self._write(worker, _HEADER.pack(len(payload)) + payload)

    def _write(self, worker: _Worker, data: bytes) -> None:
        """Write to a worker's input now, or as soon as its pipe has room (the rest, in order)."""
        if worker.outbox:
            worker.outbox += data
            return
        try:
            written = os.write(worker.jobs, data)
        except BlockingIOError:
            written = 0
        except OSError:  # its end is closed: it has exited (its answers' pipe tells the rest)
            self._lost(worker)
            return
        if written < len(data):
            worker.outbox += data[written:]
            asyncio.get_running_loop().add_writer(worker.jobs, self._writable, worker)

    def _writable(self, worker: _Worker) -> None:
        try:
            written = os.write(worker.jobs, worker.outbox)
        except BlockingIOError:
            return
        except OSError:
            self._lost(worker)
            return
        del worker.outbox[:written]
        if not worker.outbox:
            asyncio.get_running_loop().remove_writer(worker.jobs)

    def _readable(self, worker: _Worker) -> None:
        """Read a worker's answers and give each to its job, in the order the jobs were sent."""
        try:
            data = os.read(worker.answers, 1 << 18)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the end of its pipe: it has exited
            asyncio.get_running_loop().remove_reader(worker.answers)
            self._lost(worker)
            return
        inbox = worker.inbox
        inbox += data
        try:
            while len(inbox) >= _HEADER.size:
                (size,) = _HEADER.unpack_from(inbox)
                if len(inbox) < _HEADER.size + size:
                    break
                payload = bytes(inbox[_HEADER.size : _HEADER.size + size])
                del inbox[: _HEADER.size + size]
                done = worker.pending.popleft()
                worker.load -= done.size
                self._answered(worker, done, payload)
        except Exception:  # not an answer to a job sent: whatever it says next cannot be trusted either
            log.exception("pagerank: a rewriting process answered out of turn; it is replaced")
            self._lost(worker)
        self._dispatch()

    def _answered(self, worker: _Worker, job: _Job, payload: bytes) -> None:
        ok, value = pickle.loads(payload)
        if ok and not isinstance(value, str):
            if isinstance(value[0], int):  # its length: the bytes are in the job's slot
                assert worker.shared is not None and job.slot is not None
                offset = job.slot * SHARED_BYTES
                value = (worker.shared[offset : offset + value[0]],) + tuple(value[1:])
            self._made(worker.panels, job.url)  # its panel too, if it has one
        if job.slot is not None:
            worker.free.append(job.slot)
        if job.future.done():  # cancelled: its flow has gone meanwhile
            return
        if ok:
            job.future.set_result(value)
        else:
            job.future.set_exception(WorkerError(value))

    def _dispatch(self) -> None:
        """Give the jobs that wait to the workers with room, in the order they came."""
        while self._waiting:
            future, body, job = self._waiting[0]
            if future.done():  # its flow has gone
                self._waiting.popleft()
                continue
            worker = self._next(len(body))
            if worker is None:
                return
            self._waiting.popleft()
            self._send(worker, future, body, job)

    def _lost(self, worker: _Worker) -> None:
        """A worker has exited (or its pipes broke): its jobs fail, their pages pass untouched, and a fresh
        process takes its place."""
        if worker not in self._workers:
            return
        self._discard(worker)
        status = worker.process.returncode
        error = WorkerError("a rewriting process exited" + (f" (status {status})" if status is not None else ""))
        for job in worker.pending:
            if not job.future.done():
                job.future.set_exception(error)
        worker.pending.clear()
        worker.load = 0
        if self._started and self._loop is not None and not self._loop.is_closed():
            task = self._loop.create_task(self._replace())
            self._spawning.add(task)
            task.add_done_callback(self._spawning.discard)

    async def _replace(self) -> None:
        try:
            await self._spawn()
        except Exception as error:  # no process to be had: the jobs that wait pass untouched
            while self._waiting:
                future, _, _ = self._waiting.popleft()
                if not future.done():
                    future.set_exception(WorkerError(f"no rewriting process could start: {error}"))
            return
        self._dispatch()

    @staticmethod
    def _made(made: dict[str, None], url: str) -> None:
        """Note that a process keeps the panel of ``url``, as many as it keeps (then they start over, as
        its own table does).  A commit to the store since, and the page's job makes it again."""
        if len(made) >= _CACHE_KEPT:
            made.clear()
        made[url] = None

    def _discard(self, worker: _Worker) -> None:
        """Stop reading and writing a worker, end it if it still runs, and free its pipes and memory."""
        if worker in self._workers:
            self._workers.remove(worker)
        loop = self._loop
        if loop is not None and not loop.is_closed() and worker.answers >= 0:
            loop.remove_reader(worker.answers)
            loop.remove_writer(worker.jobs)
        for end in (worker.jobs, worker.answers):
            if end >= 0:
                os.close(end)
        worker.jobs = worker.answers = -1
        if worker.process.returncode is None:
            try:
                worker.process.kill()
            except ProcessLookupError:
                pass
        transport = getattr(worker.process, "_transport", None)
        if transport is not None:
            try:
                transport.close()
            except RuntimeError:  # that event loop has already closed
                pass
        if worker.shared is not None:
            worker.shared.close()
            worker.shared = None

    def close(self) -> None:
        """Stop every process (they would also exit on their own once the proxy's end of the pipe closes);
        the jobs in hand pass their pages untouched."""
        workers, self._workers, self._started = list(self._workers), [], False
        for worker in workers:
            self._discard(worker)
            for job in worker.pending:
                if not job.future.done() and not job.future.get_loop().is_closed():
                    job.future.set_exception(WorkerError("the rewriting processes were stopped"))
        for task in list(self._spawning):
            task.cancel()

    async def aclose(self, timeout: float = 2.0) -> None:
        """End every process and wait for it, from the event loop that started it.

        Closing a worker's input ends it (it finishes the page in hand first);
        one that is still there after ``timeout`` seconds is killed.  Its pipes
        are closed here, not left for the garbage collector after the loop ends.
        """
        workers, self._workers, self._started = list(self._workers), [], False
        for task in list(self._spawning):
            task.cancel()
        loop = asyncio.get_running_loop()
        for worker in workers:
            loop.remove_writer(worker.jobs)
            os.close(worker.jobs)
            worker.jobs = -1
        for worker in workers:
            try:
                await asyncio.wait_for(worker.process.wait(), timeout)
            except TimeoutError:
                worker.process.kill()
                await worker.process.wait()
            loop.remove_reader(worker.answers)
            os.close(worker.answers)
            worker.answers = -1
            transport = getattr(worker.process, "_transport", None)
            if transport is not None:
                transport.close()
            if worker.shared is not None:
                worker.shared.close()
                worker.shared = None
            for job in worker.pending:
                if not job.future.done():
                    job.future.set_exception(WorkerError("the rewriting processes were stopped"))


if __name__ == "__main__":
    region = [int(arg) for arg in sys.argv[6:8]]  # the shared region's descriptor and size, if any
    serve(
        sys.argv[1],
        sys.argv[2],
        int(sys.argv[3]),
        region[0] if region else None,
        region[1] if len(region) > 1 else 0,
        levels=LevelChoice(sys.argv[4], sys.argv[5]),
    )
