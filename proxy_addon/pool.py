"""The proxy's pool of worker processes, driven by mitmproxy's event loop: a page's job goes to a worker,
its answer comes back to the page (:class:`Workers`).

The pool starts ``count`` workers (``python -m proxy_addon.worker ...``: :mod:`.worker`) and talks to each
over two pipes, its standard input and output, whose other ends mitmproxy's own event loop writes and reads
without blocking: no helper threads in the proxy (a ``concurrent.futures`` process pool adds two, and their
hand-offs under the GIL cost more than the rewrite itself), and no asyncio streams (a reader callback gives
each answer to its page in the turn it arrives).  The messages are :mod:`.jobs`'s: a page's job, answered;
a panel to make ahead (:meth:`Workers.prepare`), not answered; a recorded page's record to make
(:meth:`Workers.record`), answered with its line and WARC member.

A worker answers its jobs in the order they came, and holds up to ``JOBS_IN_FLIGHT`` of them: it takes its
next job while the proxy has yet to read its last answer.

Bodies travel through a region of shared memory of each worker's own (a ``memfd``, a slot of
``SHARED_BYTES`` for each job it may hold), and the pipes carry only the small messages that say where they
are (a ~40 KB page and its ~70 KB answer through pipes of 64 KB take several system calls and wake-ups each
way).  The answer goes back in the job's slot.  A body or answer larger than a slot, or a system without
``memfd_create``, goes through the pipe inside the message instead.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import mmap
import os
import signal
import sys
from typing import NamedTuple

from .jobs import (
    HEADER,
    Failed,
    InSlot,
    PageJob,
    Recorded,
    RecordInSlot,
    RecordJob,
    Rewritten,
    Slot,
    Untouched,
    WorkerError,
    page_message,
    panel_message,
    read_answer,
    record_message,
)
from .ranks import _CACHE_KEPT, AUTOMATIC, LevelChoice

__all__ = ["Workers", "WorkerError", "JOBS_IN_FLIGHT"]

log = logging.getLogger(__name__)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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
        self.started = False  # it has said it takes pages (:data:`~.jobs.STARTED`)


class _Queued(NamedTuple):
    """A page's job (or its record's) waiting for a worker with room."""

    future: asyncio.Future
    body: bytes
    job: PageJob | RecordJob


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
        self._waiting: collections.deque[_Queued] = collections.deque()
        self._spawning: set[asyncio.Task] = set()
        self.ended = False  # aclose() has ended the processes
        self._exiting: set[asyncio.Task] = set()  # a discarded worker's transport, closed once it has exited
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self._started = False
        self._starting = False  # in start(): spawning its processes

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
                # a process group of its own: a terminal's Ctrl-C (SIGINT to its foreground group) reaches the
                # proxy alone, which stops its workers itself; they would each print a KeyboardInterrupt
                process_group=0,
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
        if self.ended:  # aclose() came while it started: it ends with the others, and never takes a page
            self._discard(worker)
            raise WorkerError("the rewriting processes were stopped")
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
        self.ended = False
        async with self._lock:
            if not self._started:
                self._starting = True  # a worker lost before the last has started is replaced too
                try:
                    for _ in range(self.count):
                        try:
                            await self._spawn()
                        except WorkerError:  # closed meanwhile
                            return
                finally:
                    self._starting = False
                self._started = True

    async def wait_started(self, seconds: float = 60.0) -> bool:
        """Wait (at most ``seconds``) until every worker has started: True if they all have."""
        await self.start()
        ends = asyncio.get_running_loop().time() + seconds
        while not all(worker.started for worker in self._workers):
            if asyncio.get_running_loop().time() > ends:
                return False
            await asyncio.sleep(0.01)
        return True

    def any_started(self) -> bool:
        """Has a worker started (imported, its store open) in this event loop: does a page sent now find one?"""
        return self._loop is asyncio.get_running_loop() and any(worker.started for worker in self._workers)

    def all_idle(self) -> bool:
        """Is every worker free right now (started, in this event loop): is the proxy quiet?"""
        return (
            self._started
            and self._loop is asyncio.get_running_loop()
            and not self._waiting
            and all(not worker.pending for worker in self._workers)
        )

    def _next(self, size: int = 0, last: bool = False) -> _Worker | None:
        """The worker that a job of a ``size``-byte body goes to: the first of those with the least in hand
        (``last``: the last of them), among those with room for it."""
        best = None
        for worker in reversed(self._workers) if last else self._workers:
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
        self._write(worker, panel_message(url))

    async def rewrite(self, body: bytes, job: PageJob, poll: bool = False) -> Rewritten | Untouched:
        """:func:`~.worker.rewrite_page` of ``body`` and ``job`` in a worker process (with the page's panel
        if that worker keeps it: :meth:`prepare`).  ``poll``: the page is alone in the proxy, and if its job
        is the only one out, the event loop keeps turning until the answer comes (``POLL_SECONDS``)
        rather than sleep."""
        if not self._started or self._loop is not asyncio.get_running_loop():
            await self.start()
        future = asyncio.get_running_loop().create_future()
        worker = self._next(len(body))
        if worker is None or self._waiting:
            self._waiting.append(_Queued(future, body, job))  # no worker has room, or jobs wait already: in turn
        else:
            quiet = poll and not any(other.pending for other in self._workers)  # the only job out
            self._send(worker, future, body, job)
            if quiet and POLL_SECONDS:
                loop = asyncio.get_running_loop()
                self._poll(loop, future, loop.time() + POLL_SECONDS)
        return await future

    def record(self, body: bytes, job: RecordJob, poll: bool = False) -> asyncio.Future[Recorded | None]:
        """Have a worker make a page's record (:func:`~.record.make_record`): sent now, answered in the
        future returned.  It goes to the last of the workers with the least in hand, so that a page's rewrite,
        sent to a worker just after or made in the event loop meanwhile, goes on beside it, and the first
        worker, which makes the panels ahead, is left to the page's job.  ``poll``: the page is alone in the
        proxy, and once the loop is free the loop keeps turning until the answer comes (:meth:`rewrite`).
        The workers must be started in this event loop (:meth:`any_started`)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Recorded | None] = loop.create_future()
        worker = self._next(len(body), last=True)
        if worker is None or self._waiting:
            self._waiting.append(_Queued(future, body, job))
        else:
            self._send(worker, future, body, job)
            if poll and POLL_SECONDS:
                # from the loop's next turn: a page rewritten in the loop meanwhile is not counted
                loop.call_soon(lambda: self._poll(loop, future, loop.time() + POLL_SECONDS))
        return future

    def _poll(self, loop: asyncio.AbstractEventLoop, future: asyncio.Future, until: float) -> None:
        """Keep the event loop turning until ``future`` has its answer, or ``until``: a callback that is
        always ready makes each turn poll the sockets without sleeping (``POLL_SECONDS``)."""
        if not future.done() and loop.time() < until:
            os.sched_yield()  # a process waiting for this core (the worker with the job, perhaps) runs first
            loop.call_soon(self._poll, loop, future, until)

    def _send(self, worker: _Worker, future: asyncio.Future, body: bytes, job: PageJob | RecordJob) -> None:
        if isinstance(job, PageJob):
            worker.preparing = False  # its job follows whatever it was asked to prepare
        sent: bytes | Slot = body
        slot = None
        if worker.shared is not None and len(body) <= SHARED_BYTES and worker.free:
            slot = worker.free.pop()
            offset = slot * SHARED_BYTES
            worker.shared[offset : offset + len(body)] = body
            sent = Slot(offset, len(body), SHARED_BYTES)  # the bytes travel in its slot of the shared region
        worker.pending.append(_Job(future, slot, job.url, len(body)))
        worker.load += len(body)
        self._write(worker, page_message(job, sent) if isinstance(job, PageJob) else record_message(job, sent))

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
            while len(inbox) >= HEADER.size:
                (size,) = HEADER.unpack_from(inbox)
                if not size and not worker.started:  # STARTED: no job's answer
                    del inbox[: HEADER.size]
                    worker.started = True
                    continue
                if len(inbox) < HEADER.size + size:
                    break
                payload = bytes(inbox[HEADER.size : HEADER.size + size])
                del inbox[: HEADER.size + size]
                done = worker.pending.popleft()
                worker.load -= done.size
                self._answered(worker, done, payload)
        except Exception:  # not an answer to a job sent: whatever it says next cannot be trusted either
            log.exception("pagerank: a rewriting process answered out of turn; it is replaced")
            self._lost(worker)
        self._dispatch()

    def _answered(self, worker: _Worker, job: _Job, payload: bytes) -> None:
        answer = read_answer(payload)
        if isinstance(answer, InSlot):  # the bytes are in the job's slot
            assert worker.shared is not None and job.slot is not None
            offset = job.slot * SHARED_BYTES
            answer = answer.with_body(worker.shared[offset : offset + answer.length])
        elif isinstance(answer, RecordInSlot):  # the record's bytes are in the job's slot
            assert worker.shared is not None and job.slot is not None
            offset = job.slot * SHARED_BYTES
            answer = answer.with_bytes(worker.shared[offset : offset + answer.line_length + (answer.warc_length or 0)])
        if isinstance(answer, Rewritten):
            self._made(worker.panels, job.url)  # its panel too, if it has one
        if job.slot is not None:
            worker.free.append(job.slot)
        if job.future.done():  # cancelled: its flow has gone meanwhile
            return
        if isinstance(answer, Failed):
            job.future.set_exception(WorkerError(answer.message))
        else:
            job.future.set_result(answer)

    def _dispatch(self) -> None:
        """Give the jobs that wait to the workers with room, in the order they came."""
        while self._waiting:
            queued = self._waiting[0]
            if queued.future.done():  # its flow has gone
                self._waiting.popleft()
                continue
            worker = self._next(len(queued.body), last=isinstance(queued.job, RecordJob))
            if worker is None:
                return
            self._waiting.popleft()
            self._send(worker, queued.future, queued.body, queued.job)

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
        if (self._started or self._starting) and self._loop is not None and not self._loop.is_closed():
            task = self._loop.create_task(self._replace())
            self._spawning.add(task)
            task.add_done_callback(self._spawning.discard)

    async def _replace(self) -> None:
        try:
            await self._spawn()
        except Exception as error:  # no process to be had: the jobs that wait pass untouched
            while self._waiting:
                future = self._waiting.popleft().future
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
        _kill(worker.process)
        transport = getattr(worker.process, "_transport", None)
        if transport is not None:
            if worker.process.returncode is None and loop is not None and loop.is_running():
                # closed once the event loop's child watcher has collected it: the transport's close() would
                # collect an exited process first (its poll()), and the watcher would then warn of an "Unknown
                # child process pid"
                task = loop.create_task(self._close_when_exited(worker.process, transport))
                self._exiting.add(task)
                task.add_done_callback(self._exiting.discard)
            else:
                try:
                    transport.close()
                except RuntimeError:  # that event loop has already closed
                    pass
        if worker.shared is not None:
            worker.shared.close()
            worker.shared = None

    @staticmethod
    async def _close_when_exited(process: asyncio.subprocess.Process, transport) -> None:
        try:
            await process.wait()
        finally:
            transport.close()

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
        one that is still there after ``timeout`` seconds is killed.  A worker
        with no page in hand is killed at once: it has nothing to finish, and
        one that never had a job may still be importing its modules, which it
        would finish before it read the end of its input.  Its pipes are closed
        here, not left for the garbage collector after the loop ends.
        """
        workers, self._workers, self._started = list(self._workers), [], False
        self.ended = True  # until start() is asked again: a start still waiting (the addon's) lets it be
        for task in list(self._spawning):
            task.cancel()
        loop = asyncio.get_running_loop()
        for worker in workers:
            loop.remove_writer(worker.jobs)
            os.close(worker.jobs)
            worker.jobs = -1
            if not worker.pending:
                _kill(worker.process)
        for worker in workers:
            try:
                await asyncio.wait_for(worker.process.wait(), timeout)
            except TimeoutError:
                _kill(worker.process)
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
        if self._exiting:  # workers lost meanwhile, killed: collected by now, or about to be
            await asyncio.wait(list(self._exiting), timeout=timeout)


def _kill(process: asyncio.subprocess.Process) -> None:
    """SIGKILL to a worker not known to have exited.  Not ``process.kill()``: it polls the process first, which
    collects one that has just exited before the event loop's child watcher does, and the watcher then warns of
    an "Unknown child process pid" (so does the transport's ``close()``)."""
    if process.returncode is None:
        try:
            os.kill(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
