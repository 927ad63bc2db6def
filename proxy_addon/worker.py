"""A page's job, wherever it runs, and the worker process's program.

:func:`rewrite_page` rewrites a page against the store (:mod:`.jobs` names its answers); mitmproxy's event
loop calls it for a small page alone in the proxy (bounded: ``most_links``...), a thread for a page off the
loop without workers, and each worker process for the pages the proxy sends it.  :func:`prepare_panel`
makes a page's panel ahead, while its request travels.  A worker also makes a recorded page's record
(:func:`~.record.make_record`), beside the page's rewrite elsewhere, and sends it back to be written.

The worker process is ``python -m proxy_addon.worker STORE RANKING PANEL HOST_RANKING SITE_RANKING [FD SIZE]``
(a level's ranking "" for the store's own choice), started and fed by the proxy's pool (:mod:`.pool`): it
reads framed jobs on its standard input and writes their answers, in order, on its standard output
(:mod:`.jobs` holds the wire format); a body may sit in a region of shared memory it inherits as file
descriptor FD, of SIZE bytes, and its answer then goes back to the same place.

A worker keeps the panels it made, each with the store's version: a page's job uses its panel while nothing
has been committed to the store since (:meth:`~proxy_addon.ranks.PageView.keep`), whether it was made ahead or
on an earlier visit.  Each worker keeps one read-only store connection, opened before its first job.
"""

from __future__ import annotations

import functools
import gc
import mmap
import sys
import threading
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import cast

from rankstore.urls import canonical

from .bodies import TooLarge, UnknownEncoding, decode
from .jobs import (
    HEADER,
    STARTED,
    Answer,
    Failed,
    InSlot,
    PageJob,
    PanelJob,
    Recorded,
    RecordInSlot,
    RecordJob,
    RecordOrder,
    Rewritten,
    Slot,
    Untouched,
    answer_message,
    read_order,
)
from .markup import LinkInfo
from .markup import panel as render_panel
from .ranks import AUTOMATIC, PRELOAD_PAGES, LevelChoice, PageView, Ranks
from .record import make_record
from .rewrite import TooManyLinks, annotate_bytes

__all__ = ["rewrite_page", "prepare_panel", "preload", "ready", "serve"]

# A page with no score of its own shows its host's (site's) best referrers, read from the in-links of each of
# its pages: a caller that must not spend long (``most_backlinks``) leaves a host (site) of more pages than this
# to a worker.
INLINE_LEVEL_PAGES = 100
_ranks: dict[tuple[str, str, int, LevelChoice], Ranks] = {}
_ranks_made = threading.Lock()


def _ranks_for(store: str, ranking: str, panel: int, levels: LevelChoice = AUTOMATIC) -> Ranks:
    """The one :class:`Ranks` of this process for a store and its settings, whichever thread asks first (the
    worker's preload thread and its jobs start together: a second one would replace the first and start with
    nothing kept, and a panel made ahead for a page would be made again in its job)."""
    key = (store, ranking, panel, levels)
    ranks = _ranks.get(key)
    if ranks is None:
        with _ranks_made:
            ranks = _ranks.get(key)
            if ranks is None:
                ranks = _ranks[key] = Ranks(store, ranking, panel, preload=PRELOAD_PAGES, levels=levels)
    return ranks


def rewrite_job(
    store: str,
    ranking: str,
    panel: int,
    body: bytes,
    job: PageJob,
    levels: LevelChoice = AUTOMATIC,
    *,
    most_links: int | None = None,
    most_backlinks: int | None = None,
    most_lookups: int | None = None,
) -> Rewritten | Untouched:
    """:func:`rewrite_page` of a :class:`~.jobs.PageJob`, its fields read by name."""
    return rewrite_page(
        store,
        ranking,
        panel,
        body,
        job.content_type,
        job.url,
        job.content_encoding,
        job.limit,
        job.max_links,
        top_level=job.top_level,
        most_links=most_links,
        most_backlinks=most_backlinks,
        most_lookups=most_lookups,
        levels=levels,
    )


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
    top_level: bool = True,
    most_links: int | None = None,
    most_backlinks: int | None = None,
    most_lookups: int | None = None,
    levels: LevelChoice = AUTOMATIC,
) -> Rewritten | Untouched:
    """The rewritten body (decoded: it goes without a Content-Encoding) and its bar counts, or why the page passes
    untouched.

    The arguments after ``body`` are a :class:`~.jobs.PageJob`'s fields.

    ``body`` is the response's raw bytes: decoded here within ``limit`` bytes
    (:mod:`.bodies`); a page big enough to hold more than ``max_links`` links
    (8 bytes each) and with more link tags than that (0: no budget) is left as
    it is, so that one huge page never costs seconds.
    :attr:`~.jobs.Rewritten.panel_kept` says whether the page's panel was one kept
    (:func:`prepare_panel`, or an earlier visit), the store unchanged since.
    A caller that must not spend long on a page bounds it: past ``most_links``
    links, :class:`~.rewrite.TooManyLinks` once the page is scanned, before its
    links are resolved; so too past ``most_lookups`` links not yet looked up in
    this process (or any, if the ranking's newest version is not read yet:
    :func:`ready`), and past ``most_backlinks`` backlinks if its panel is to be
    made.  ``levels``: the host and site rankings that answer for links whose page has no score.
    A revisit with the same body (byte for byte), nothing committed to the store since, is given the rewrite
    this thread made of it (:meth:`~.ranks.PageView.again`): a byte compare, no parse; only for a
    ``top_level`` page (a frame's rewrite is neither kept nor taken: :class:`~.jobs.PageJob`).
    """
    job = PageJob(content_type, url, content_encoding, limit, max_links, top_level)
    with _ranks_for(store, ranking, panel, levels).page() as view:  # bars and panel from one version of the ranking
        # a revisit of a page with the same body, the store unchanged since: the same rewrite, at once
        done_before = view.again(job, body) if top_level else None
        if done_before is not None:
            return cast(Rewritten, done_before)
        return _rewritten(view, body, job, panel, most_links, most_backlinks, most_lookups)


def _rewritten(
    view: PageView,
    body: bytes,
    job: PageJob,
    panel: int,
    most_links: int | None,
    most_backlinks: int | None,
    most_lookups: int | None,
) -> Rewritten | Untouched:
    """:func:`rewrite_page`'s work, from one version of the ranking (``view``), kept for a revisit of the page
    with the same body if it is ``top_level`` (:meth:`~.ranks.PageView.again`)."""
    content_type, url, content_encoding, limit, max_links, _ = job
    try:
        decoded = decode(body, content_encoding, limit)
    except TooLarge as error:
        return Untouched(f"too large ({error})")
    except (UnknownEncoding, ValueError, zlib.error) as error:
        return Untouched(f"not decoded ({error})")
    # A link with a target takes 8 bytes at least (<a href=x>), so a body of fewer than 8 bytes a link cannot
    # cost more than the budget; nor one of fewer '<' than the budget: most pages skip the count.
    if (
        max_links
        and len(decoded) > 8 * max_links
        and decoded.count(b"<") > max_links
        and _link_tags(decoded) > max_links
    ):
        return Untouched(f"over {max_links:,} link tags")
    kept = shown = False
    lookup = view.lookup if most_lookups is None else functools.partial(_bounded_lookup, view, most_lookups)

    def panel_markup(page: str) -> str:
        nonlocal kept, shown
        shown = True
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
        return Untouched("charset does not round-trip")
    new_body, rewrite = done
    rewritten = Rewritten(new_body, rewrite.links, rewrite.ranked, kept)
    if job.top_level:  # a revisit's panel is the one kept with its rewrite
        view.keep_again(job, body, rewritten._replace(panel_kept=shown), len(new_body))
    # sent as it is, never compressed again: a compressed size would vary with what the bars and the panel
    # show, and the page reads its own (Resource Timing's encodedBodySize); the proxy is the client's neighbour
    return rewritten


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
        if info is not None and (info.inlinks or 0) > most_backlinks:
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
    gc.collect()
    gc.freeze()  # what is loaded now lives as long as the worker: full collections need not walk it
    # the best pages' look-ups, read beside the jobs: a page that comes first is looked up in the store
    # (its mapped arrays need no reading), and the worker takes pages as soon as it has started
    threading.Thread(target=_preload, args=(store, ranking, panel, levels), daemon=True).start()
    answers.write(STARTED)
    answers.flush()
    while True:
        header = _read(jobs, HEADER.size)
        if len(header) < HEADER.size:
            return  # the proxy has gone
        (size,) = HEADER.unpack(header)
        payload = _read(jobs, size)
        if len(payload) < size:
            return
        try:
            order = read_order(payload)
            if isinstance(order, PanelJob):  # the page's panel, kept for its job; not answered
                _prepare(store, ranking, panel, order.url, levels)
                continue
            answer: Answer
            if isinstance(order, RecordOrder):
                answer = _record(order.job, order.body, shared)
            else:
                answer = _do(store, ranking, panel, order.job, order.body, shared, levels)
        except Exception as error:  # the page passes untouched; the worker lives on
            answer = Failed(f"{type(error).__name__}: {error}")
        answers.write(answer_message(answer))
        answers.flush()


def _preload(store: str, ranking: str, panel: int, levels: LevelChoice) -> None:
    try:
        preload(store, ranking, panel, levels)
    except Exception as error:  # reported with each job instead
        print(f"pagerank worker: {error}", file=sys.stderr)


def _prepare(store: str, ranking: str, panel: int, url: str, levels: LevelChoice) -> None:
    try:
        prepare_panel(store, ranking, panel, url, levels=levels)
    except Exception:  # a guess: the page's job makes the panel itself (and says why, if it fails)
        pass


def _do(
    store: str,
    ranking: str,
    panel: int,
    job: PageJob,
    sent: bytes | Slot,
    shared: mmap.mmap | None,
    levels: LevelChoice,
) -> Rewritten | InSlot | Untouched:
    """A page's job in this worker: its body read from the shared region if it sits there, and its new body
    written back to the same place if it fits."""
    body = _body(sent, shared)
    done = rewrite_job(store, ranking, panel, body, job, levels)
    if isinstance(done, Rewritten) and isinstance(sent, Slot) and len(done.body) <= sent.room:
        assert shared is not None
        shared[sent.offset : sent.offset + len(done.body)] = done.body
        return InSlot(len(done.body), done.links, done.ranked, done.panel_kept)
    return done


def _record(job: RecordJob, sent: bytes | Slot, shared: mmap.mmap | None) -> Recorded | RecordInSlot | None:
    """A page's record made in this worker: its body read from the shared region if it sits there, and the
    record written back to the same place if it fits."""
    body = _body(sent, shared)
    made = make_record(body, job)
    if made is None or not isinstance(sent, Slot):
        return made
    warc = made.warc or b""
    if len(made.line) + len(warc) > sent.room:
        return made
    assert shared is not None
    shared[sent.offset : sent.offset + len(made.line)] = made.line
    shared[sent.offset + len(made.line) : sent.offset + len(made.line) + len(warc)] = warc
    return RecordInSlot(len(made.line), None if made.warc is None else len(warc))


def _body(sent: bytes | Slot, shared: mmap.mmap | None) -> bytes:
    if isinstance(sent, Slot):
        assert shared is not None
        return shared[sent.offset : sent.offset + sent.length]
    return sent


if __name__ == "__main__":
    import signal

    # the proxy stops its workers (they run in a process group of their own: a terminal's Ctrl-C reaches the
    # proxy alone); a SIGINT sent here all the same must not end a job half done with a traceback
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    region = [int(arg) for arg in sys.argv[6:8]]  # the shared region's descriptor and size, if any
    serve(
        sys.argv[1],
        sys.argv[2],
        int(sys.argv[3]),
        region[0] if region else None,
        region[1] if len(region) > 1 else 0,
        levels=LevelChoice(sys.argv[4], sys.argv[5]),
    )
