"""Page rewriting in worker processes, so it runs beside mitmproxy rather than under its GIL.

The addon starts ``python -m proxy_addon.worker STORE RANKING PANEL [FD SIZE]`` processes
and talks to them over their standard input and output, which mitmproxy's own
event loop reads and writes: no helper threads in the proxy (a
``concurrent.futures`` process pool adds two, and their hand-offs under the
GIL cost more than the rewrite itself).  A job is one length-prefixed pickle:

* ``("page", raw body, content_type, url, content_encoding, limit, max_links)``,
  answered ``(True, (new_body, links, ranked, panel kept))``, ``(True, reason)`` for a page
  left untouched, or ``(False, message)``.  A body that sits in the shared
  region (below) is sent as its length instead of its bytes.
* ``("prepare", url)``, not answered: the worker makes the page's panel while
  its request is still on its way to the origin (:meth:`Workers.prepare`).

A worker keeps the panels it made, each with the store's version: a page's job
uses its panel while nothing has been committed to the store since
(:meth:`~proxy_addon.ranks.PageView.keep`), whether it was made ahead or on an
earlier visit.

Bodies travel through a region of shared memory of each worker's own (a
``memfd`` of SIZE bytes the worker inherits as file descriptor FD), and the
pipes carry only the small messages that say how long they are (a ~40 KB page
and its ~70 KB answer through pipes of 64 KB take several system calls and
wake-ups each way).  A body or answer
larger than the region, or a system without ``memfd_create``, goes through the
pipe inside the pickle instead.

Each worker keeps one read-only store connection, opened before its first job.
"""

from __future__ import annotations

import asyncio
import functools
import mmap
import os
import pickle
import struct
import sys
import zlib

from rankstore.urls import canonical

from .bodies import TooLarge, UnknownEncoding, decode, encode
from .ranks import _CACHE_KEPT, PageView, Ranks
from .rewrite import annotate_bytes
from .rewrite import panel as render_panel

__all__ = ["rewrite_page", "prepare_panel", "Workers", "WorkerError", "serve"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_HEADER = struct.Struct("!I")
# Per worker; only the pages ever touched take memory.  Any body under the default pagerank_max_body (8 MiB)
# fits: a big page pickled through the pipe instead costs mitmproxy's event loop a copy and a write per 64 KB.
SHARED_BYTES = 16 * 1024 * 1024  # 0: pipes only
_ranks: dict[tuple[str, str, int], Ranks] = {}


class WorkerError(RuntimeError):
    """A worker could not rewrite a page (the message says why); the page passes untouched."""


def _ranks_for(store: str, ranking: str, panel: int) -> Ranks:
    key = (store, ranking, panel)
    if key not in _ranks:
        _ranks[key] = Ranks(store, ranking, panel)
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
) -> tuple[bytes, int, int, bool] | str:
    """The rewritten body (encoded as ``body`` was) and its bar counts, or why the page passes untouched.

    ``body`` is the response's raw bytes: decoded here within ``limit`` bytes
    (:mod:`.bodies`); a page big enough to hold more than ``max_links`` links
    (8 bytes each) and with more link tags than that (0: no budget) is left as
    it is, so that one huge page never costs seconds.
    The last of the four answers says whether the page's panel was one kept
    (:func:`prepare_panel`, or an earlier visit), the store unchanged since.
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
    ranks = _ranks_for(store, ranking, panel)
    kept = False
    with ranks.page() as view:  # bars and panel from one version of the ranking

        def panel_markup(page: str) -> str:
            nonlocal kept
            markup, kept = view.keep(("panel", page), functools.partial(_panel_markup, view, page))
            return markup

        done = annotate_bytes(decoded, content_type, url, view.lookup, panel_markup if panel else None, view.marks)
    if done is None:
        return "charset does not round-trip"
    new_body, rewrite = done
    return encode(new_body, content_encoding), rewrite.links, rewrite.ranked, kept


def prepare_panel(store: str, ranking: str, panel: int, url: str) -> bool:
    """Make and keep the panel of the page at ``url`` for its job (:func:`rewrite_page`), unless one is
    kept already; False if there is none to make (no panel wanted, or not a URL).  A panel shows the
    ranking, the host ranking and the graph's builds: a commit of any of them, and it is made again."""
    page = canonical(url)
    if not panel or not page:
        return False
    ranks = _ranks_for(store, ranking, panel)
    with ranks.page() as view:
        view.keep(("panel", page), functools.partial(_panel_markup, view, page))
    return True


def _panel_markup(view: PageView, page: str) -> str:
    return render_panel(view.panel(page))


def _link_tags(body: bytes) -> int:
    """An upper bound on the page's links, cheaply: the tags that start ``<a`` (``<a``, ``<area``, ``<abbr``...)."""
    return body.count(b"<a") + body.count(b"<A")


# ------------------------------------------------------------------ the worker process


def _read(stream, size: int) -> bytes:
    data = stream.read(size)
    return data if data is not None else b""


def serve(store: str, ranking: str, panel: int, shared_fd: int | None = None, shared_size: int = 0) -> None:
    """Answer jobs from standard input until it closes (bodies in the shared region, if given)."""
    jobs, answers = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must never corrupt the answers
    shared = mmap.mmap(shared_fd, shared_size) if shared_fd is not None else None
    try:
        _ranks_for(store, ranking, panel)
    except Exception as error:  # reported with each job instead
        print(f"pagerank worker: {error}", file=sys.stderr)
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
                    prepare_panel(store, ranking, panel, sent)
                except Exception:  # a guess: the page's job makes the panel itself (and says why, if it fails)
                    pass
                continue
            if isinstance(sent, int):  # its length: the bytes are in the shared region
                assert shared is not None
                sent = shared[:sent]
            done = rewrite_page(store, ranking, panel, sent, *job)
            answer: tuple[bool, object] = (True, done)
            if not isinstance(done, str) and shared is not None and len(done[0]) <= shared_size:
                shared[: len(done[0])] = done[0]
                answer = (True, (len(done[0]), *done[1:]))
        except Exception as error:  # the page passes untouched; the worker lives on
            answer = (False, f"{type(error).__name__}: {error}")
        data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        answers.write(_HEADER.pack(len(data)) + data)
        answers.flush()


# ------------------------------------------------------------------ the proxy's side


class Workers:
    """``count`` worker processes, each doing one page at a time, driven by the event loop."""

    def __init__(self, count: int, store: str, ranking: str, panel: int):
        self.count = count
        self.args = (store, ranking, str(panel))
        self._idle: asyncio.Queue | None = None
        self._processes: list[asyncio.subprocess.Process] = []
        self._shared: dict[asyncio.subprocess.Process, mmap.mmap] = {}
        self._preparing: set[asyncio.subprocess.Process] = set()  # asked to prepare a panel since their last job
        self._answer_fds: dict[asyncio.subprocess.Process, int] = {}  # the pipe of each one's answers
        # the pages whose panel each process has made (asked ahead, or in the page's job) and keeps
        self._panels: dict[asyncio.subprocess.Process, dict[str, None]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None

    async def _spawn(self) -> asyncio.subprocess.Process:
        env = dict(os.environ)
        env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        size, fd, shared = SHARED_BYTES, None, None
        if hasattr(os, "memfd_create") and size > 0:
            fd = os.memfd_create("pagerank-worker")
            os.ftruncate(fd, size)
            shared = mmap.mmap(fd, size)
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "proxy_addon.worker",
                *self.args,
                *((str(fd), str(size)) if shared else ()),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                env=env,
                pass_fds=(fd,) if shared is not None and fd is not None else (),
            )
        finally:
            if fd is not None:
                os.close(fd)  # the mappings keep the memory
        self._processes.append(process)
        if shared is not None:
            self._shared[process] = shared
        pipe = process._transport.get_pipe_transport(1).get_extra_info("pipe")  # type: ignore[attr-defined]
        self._answer_fds[process] = pipe.fileno()
        return process

    async def start(self) -> None:
        """Start the processes (once per event loop); they open the store before their first job."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self.close()
            self._loop, self._lock, self._idle = loop, asyncio.Lock(), None
        assert self._lock is not None
        async with self._lock:
            if self._idle is None:
                idle: asyncio.Queue = asyncio.LifoQueue()  # the most recently busy worker first: warm caches
                for _ in range(self.count):
                    idle.put_nowait(await self._spawn())
                self._idle = idle

    def all_idle(self) -> bool:
        """Is every worker free right now (started, in this event loop): is the proxy quiet?"""
        return (
            self._idle is not None
            and self._idle.qsize() == len(self._processes)
            and self._loop is asyncio.get_running_loop()
        )

    def prepare(self, url: str) -> None:
        """Have the idle worker that the next job goes to make the panel of the page at ``url`` now.

        Sent when a page's request leaves for the origin: the worker makes the
        panel meanwhile (unless it has it already) and keeps it, and the page's
        job (the next one it gets, the idle workers being a stack) skips that
        part.  Nothing is answered, so it costs the event loop one write; a
        commit to the store meanwhile, and the panel is made again with the page.
        One at a time: a worker asked already gets no other until its next job.
        A worker that has made the page's panel already (ahead, or in an earlier
        job) is not asked again: a wake-up then takes the core from the proxy
        while the request is on its way, for nothing.
        """
        idle = self._idle
        if idle is None or idle.empty() or self._loop is not asyncio.get_running_loop():
            return
        process = idle.get_nowait()
        idle.put_nowait(process)  # back on top: still the next one a job gets
        if process in self._preparing:  # one at a time: a burst of requests must not queue guesses on it
            return
        made = self._panels.setdefault(process, {})
        if url in made:  # it keeps that panel: a revisit wakes no process before its job
            return
        self._made(made, url)
        self._preparing.add(process)
        payload = pickle.dumps(("prepare", url), protocol=pickle.HIGHEST_PROTOCOL)
        assert process.stdin is not None
        process.stdin.write(_HEADER.pack(len(payload)) + payload)

    async def rewrite(self, body: bytes, *job) -> tuple[bytes, int, int, bool] | str:
        """:func:`rewrite_page` of ``(body, *job)`` in a worker process (with the page's panel if that worker
        keeps it: :meth:`prepare`)."""
        if self._idle is None or self._loop is not asyncio.get_running_loop():
            await self.start()
        idle = self._idle
        assert idle is not None
        process = await idle.get()
        self._preparing.discard(process)  # its job follows whatever it was asked to prepare
        healthy = False
        try:
            shared = self._shared.get(process)
            sent: bytes | int = body
            if shared is not None and len(body) <= len(shared):
                shared[: len(body)] = body
                sent = len(body)  # the bytes travel in the shared region
            payload = pickle.dumps(("page", sent, *job), protocol=pickle.HIGHEST_PROTOCOL)
            process.stdin.write(_HEADER.pack(len(payload)) + payload)
            await process.stdin.drain()
            self._answered_already(process)
            (size,) = _HEADER.unpack(await process.stdout.readexactly(_HEADER.size))
            ok, value = pickle.loads(await process.stdout.readexactly(size))
            if ok and not isinstance(value, str):
                if isinstance(value[0], int):
                    assert shared is not None
                    value = (shared[: value[0]],) + value[1:]
                self._made(self._panels.setdefault(process, {}), job[1])  # its panel too, if it has one
            healthy = True
        except (asyncio.IncompleteReadError, ConnectionError) as error:
            raise WorkerError(f"a rewriting process exited (status {process.returncode})") from error
        finally:
            if healthy:
                idle.put_nowait(process)
            else:  # died, or the flow was cancelled mid-answer: a fresh process takes its place
                self._discard(process)
                if idle is self._idle:
                    idle.put_nowait(await asyncio.shield(self._spawn()))
        if not ok:
            raise WorkerError(value)
        return value

    def _answered_already(self, process: asyncio.subprocess.Process) -> None:
        """Give the process's reader what it has answered already, before the event loop's next turn.

        A worker woken by its job often runs on the proxy's own core (the
        scheduler places it beside its waker) and has answered by the time the
        proxy runs again: read at once, the answer costs no turn of the loop (a
        poll, a read callback, then the task's step).  The bytes stay in order:
        the transport's reads and this one feed one reader, on the loop's thread.
        """
        fd = self._answer_fds.get(process)
        if fd is None or process.stdout is None:
            return
        try:
            data = os.read(fd, 1 << 16)
        except OSError:  # nothing yet (EAGAIN): the loop waits for it; an error: the transport reports it
            return
        if data:  # b"": the end of the pipe, which the transport sees and reports itself
            process.stdout.feed_data(data)

    @staticmethod
    def _made(made: dict[str, None], url: str) -> None:
        """Note that a process keeps the panel of ``url``, as many as it keeps (then they start over, as
        its own table does).  A commit to the store since, and the page's job makes it again."""
        if len(made) >= _CACHE_KEPT:
            made.clear()
        made[url] = None

    def _discard(self, process: asyncio.subprocess.Process) -> None:
        self._preparing.discard(process)
        self._panels.pop(process, None)
        if process in self._processes:
            self._processes.remove(process)
        if process.returncode is None:
            process.kill()
        self._release(process)

    def _release(self, process: asyncio.subprocess.Process) -> None:
        """Close a worker's pipes now rather than at garbage collection (perhaps after its loop has
        ended), and its shared memory."""
        self._answer_fds.pop(process, None)  # its number may soon name another file
        transport = getattr(process, "_transport", None)
        if transport is not None:
            try:
                transport.close()
            except RuntimeError:  # that event loop has already closed
                pass
        shared = self._shared.pop(process, None)
        if shared is not None:
            shared.close()

    def close(self) -> None:
        """Stop every process (they would also exit on their own once the proxy's end of the pipe closes)."""
        for process in list(self._processes):
            self._discard(process)
        self._idle = None

    async def aclose(self, timeout: float = 2.0) -> None:
        """End every process and wait for it, from the event loop that started it.

        Closing a worker's input ends it (it finishes the page in hand first);
        one that is still there after ``timeout`` seconds is killed.  Its pipes
        are closed here, not left for the garbage collector after the loop ends.
        """
        processes, self._processes, self._idle = list(self._processes), [], None
        for process in processes:
            if process.stdin is not None:
                process.stdin.close()
        for process in processes:
            try:
                await asyncio.wait_for(process.wait(), timeout)
            except TimeoutError:
                process.kill()
                await process.wait()
            self._release(process)


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2], int(sys.argv[3]), *(int(arg) for arg in sys.argv[4:6]))
