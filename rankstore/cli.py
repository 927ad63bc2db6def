"""The ``rankstore`` command line: thin, it parses options and calls the library."""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

# Only what the options and help are made of is imported here: the store, the views and the solver are
# imported by the commands that use them, so that `--help` answers, and `build` or `rank` starts, without
# loading what another command needs.
from . import __version__, columns
from .choices import (
    CRAWL_ORDERS,
    DANGLING,
    ENGINES,
    EXPORT_FORMATS,
    EXPORT_WHAT,
    EXTRACT_ENGINES,
    FORMATS,
    GROUPS,
    INFO_FORMATS,
    LEVELS,
    LINK_WEIGHTS,
    METHODS,
    OUTPUT_FORMATS,
    SCHEMES,
    SORTS,
)
from .sources import DEFAULT_PATHS_BASE, SourceError

if TYPE_CHECKING:
    from . import views
    from .store import Store

EXIT_SKIPPED = 3
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def store_option(function):
    return click.option(
        "--store",
        "store_path",
        envvar="RANKSTORE",
        default="rankstore.db",
        show_default=True,
        type=click.Path(dir_okay=False),
        help="The SQLite store (or set $RANKSTORE).",
    )(function)


_opened: list[str] = []  # the store a command works on, to name it if SQLite fails later (see main)


def open_store(path: str, readonly: bool = False, create: bool = False) -> Store:
    """The store, opened for the command; only ``build`` creates one."""
    from .store import Store, StoreError

    _opened.append(path)
    try:
        return Store(path, readonly=readonly, create=create)
    except StoreError as error:
        raise click.ClickException(str(error)) from error


def _help_with(**parts: str):
    """A command's help with ``parts`` put in (text the library declares, as export's columns), before click
    reads it."""

    def decorate(function):
        function.__doc__ = inspect.cleandoc(function.__doc__).format(**parts)
        return function

    return decorate


@click.group(context_settings=CONTEXT)
@click.version_option(__version__, prog_name="rankstore")
def cli():
    """A PageRank store: load crawls, rank them, look at what links where.

    \b
    Example:
        rankstore build crawl.warc.gz && rankstore info
    """


def lines_or_json(said: str):
    """The ``--format`` of a command that prints lines to read (or JSON), not a table's rows."""
    return click.option(
        "--format", "fmt", type=click.Choice(INFO_FORMATS), default="table", show_default=True, help=said
    )


def listing_options(function):
    """``--paths-base`` and ``--limit``, for the commands that read ``*.paths.gz`` listings of files at URLs."""
    function = click.option(
        "--limit",
        type=click.IntRange(1),
        metavar="N",
        help="Read only the first N files of each listing of files at URLs.",
    )(function)
    return click.option(
        "--paths-base",
        default=DEFAULT_PATHS_BASE,
        show_default=True,
        metavar="URL",
        help="For a *.paths.gz listing of files at URLs: the URL its paths are resolved against.",
    )(function)


def spark_options(example: str):
    """``--master`` and ``--spark-conf``, for a command's ``--engine spark`` (``example``: a setting to show)."""

    def decorate(function):
        function = click.option(
            "--spark-conf",
            multiple=True,
            metavar="KEY=VALUE",
            callback=lambda ctx, param, value: _spark_conf(value),
            help=f"--engine spark: a Spark setting, e.g. {example} (repeatable).",
        )(function)
        return click.option(
            "--master", default="local[*]", show_default=True, help="--engine spark: the Spark master URL."
        )(function)

    return decorate


@cli.command(context_settings=CONTEXT)
@click.argument("sources", nargs=-1, required=True, type=click.Path())
@store_option
@click.option("--format", "fmt", type=click.Choice(FORMATS), help="Source format (default: detected from content).")
@click.option("--base-url", help="For a directory of saved HTML: the URL its root was saved from.")
@listing_options
@click.option(
    "--reread", is_flag=True, help="Read again the files at URLs that an earlier build took whole (else passed over)."
)
@click.option("-j", "--jobs", type=click.IntRange(1, 64), help="Parser processes (default: up to 2 cores).")
@click.option(
    "--commit-every",
    type=click.IntRange(1),
    default=20000,
    show_default=True,
    help="Pages per transaction (a transaction also ends at 200,000 links): "
    "what an interrupted build can lose at most.",
)
@click.option(
    "--scheme",
    type=click.Choice(SCHEMES),
    default="https",
    show_default=True,
    help="Common Crawl graphs: the scheme of each host's root page.",
)
@click.option(
    "--link-weights",
    type=click.Choice(LINK_WEIGHTS),
    default="uniform",
    show_default=True,
    help="How an HTML page's links are weighed: each 1, or by where it stands (V x E x R x P: build --help).",
)
@click.option(
    "--rank",
    "then_rank",
    is_flag=True,
    help="Then rank the store, as `rankstore rank` with no options (a domain graph alone: --level site).",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.pass_context
def build(
    ctx,
    sources,
    store_path,
    fmt,
    base_url,
    paths_base,
    limit,
    reread,
    jobs,
    commit_every,
    scheme,
    link_weights,
    then_rank,
    quiet,
):
    """Load crawls (WARC/WARC.gz, a directory of saved HTML, edge lists, Common Crawl web graphs) into the store.

    Formats are detected from content; a recrawled page's out-links replace its
    old ones, new pages are added.  A recrawl that finds a page gone (404,
    410) drops its links (`backlinks --lost` lists them); of two captures of a
    page the newer one (WARC-Date) holds its links, whatever the order they
    are loaded in, and an older one is kept as history.  A Common Crawl host
    or domain graph is given as its vertices and edges (files, folders of
    parts or *.paths.gz lists) or one folder holding both; each host becomes its root page, https://host/
    (--scheme http for http://).  A Common Crawl ranks file (*-ranks.txt.gz, told
    by its header) becomes two rankings, cc-harmonic and cc-pagerank, of hosts
    (a host file) or sites (a domain file), without solving; loaded again, a new
    version of each.  Records that cannot be read are reported
    with their location and skipped; the rest still loads.  Exit status: 0 when
    everything loaded, 3 when some records were skipped, 1 on an error.

    A source may be an http(s) URL, or a *.paths.gz listing of files at URLs
    (Common Crawl's warc.paths.gz, a graph's vertices.paths.gz and
    edges.paths.gz), its paths resolved against --paths-base: each file is
    streamed, never saved, and retried with back-off when the connection
    fails (resumed where it broke off, if the server allows).  A file that
    is missing (404) is reported and passed over.  The store notes each file
    at a URL it took whole (name, size, checksum; `rankstore info` lists
    them): building the same sources again reads only the files it lacks,
    and goes on with a build that was cut short.

    --link-weights position weighs each link of an HTML page by where it
    stands (the seed notes' visibility and position weighting, with the
    page's regions): an occurrence weighs V x E x R x P, a link the sum of
    its occurrences' (its following ones, when any follows), and PageRank
    gives each link its weight's share of the page's total.

    \b
      V visible    0 if hidden (hidden attribute, aria-hidden="true", inline
                   display:none or visibility:hidden, <noscript>, closed
                   <dialog>, <template>), else 1; a link only hidden is
                   not stored
      E emphasis   2 in or around b, strong, i, em, h1-h6, else 1
      R region     1 in nav, aside, the page's header or footer (ARIA
                   navigation, banner, contentinfo, complementary), or
                   outside <main> (role=main) when there is one, else 3
      P position   3 in the first half of the page's visible links, else 1

    Redirects, WAT metadata and graphs keep their weights (1, or an edge
    list's).

    \b
    Examples:
        wget --mirror --warc-file=site http://127.0.0.1:8000/
        rankstore build site.warc.gz
        rankstore build recrawl.warc.gz --rank
        rankstore build mirror/ --base-url http://127.0.0.1:8000/
        rankstore build site.warc.gz --link-weights position --rank
        rankstore build edges.tsv.gz --store graph.db
        rankstore build cc-host-vertices.paths.gz cc-host-edges.paths.gz --store hosts.db
        rankstore build cc-main-2024-25-dec-jan-feb-host-ranks.txt.gz --store hosts.db
        rankstore build https://data.commoncrawl.org/crawl-data/CC-MAIN-2024-51/warc.paths.gz --limit 2
    """
    import signal
    import threading

    from .build import BuildInterrupted, BuildProgress, check_sources, is_remote_source
    from .build import build as run_build
    from .extract import LinkWeights
    from .progress import Meter, progress_words, skipped_lines, summary_lines

    for source in sources:
        if not is_remote_source(source) and not os.path.exists(source):
            raise click.ClickException(f"{source}: no such file or directory")
    try:
        planned = check_sources(sources, fmt, base_url, paths_base, limit)
    except SourceError as error:
        raise click.ClickException(str(error)) from error
    store = open_store(store_path, create=True)
    meter = Meter.plan(sources, planned, quiet)
    started = time.perf_counter()
    bar = click.progressbar(
        length=max(meter.total, 1),
        label="building",
        file=sys.stderr,
        show_eta=True,
        item_show_func=lambda state: None if state is None else progress_words(state, time.perf_counter() - started),
    )

    def progress(state: BuildProgress) -> None:
        if meter.shown:
            step = meter.step(state)
            bar.length = step.length
            bar.update(step.advance, state)
            if not step.advance:
                bar.render_progress()  # the counts moved without the input (the last pages parsed)

    owner = os.getpid()

    def terminated(signum, frame) -> None:
        if os.getpid() != owner:
            # a parser forked while this handler was the build's, before its own: it ends as SIGTERM ends a
            # process (raised there, the pool's terminate would wait for it for ever)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise KeyboardInterrupt  # SIGTERM ends the build as Ctrl-C does: marked interrupted, with what it committed

    main = threading.current_thread() is threading.main_thread()  # signals are the main thread's to handle
    was = signal.signal(signal.SIGTERM, terminated) if main else None
    stopped: BuildInterrupted | None = None
    try:
        if meter.shown:
            bar.__enter__()
        report = run_build(
            store,
            sources,
            fmt,
            base_url,
            progress,
            jobs,
            commit_every,
            scheme,
            paths_base=paths_base,
            limit=limit,
            reread=reread,
            planned=planned,
            link_weights=LinkWeights(link_weights),
        )
    except SourceError as error:
        raise click.ClickException(str(error)) from error
    except BuildInterrupted as cut:
        stopped = cut
    finally:
        if main:
            signal.signal(signal.SIGTERM, was)
        if meter.shown:
            bar.__exit__(None, None, None)
        store.close()
    if stopped is not None and stopped.kept:
        _fail(
            f"interrupted: build #{stopped.build_id} is marked interrupted with what it committed "
            f"({stopped.pages:,} pages, {stopped.links:,} links); run it again to finish it",
            130,
        )
    if stopped is not None:
        _fail("interrupted before the build committed anything: the store is as it was", 130)
    click.echo("\n".join(summary_lines(report, store_path, len(sources))))
    if then_rank:  # what the store can rank: its pages, or a domain graph's sites
        from .ranking import rankable_level

        with reading(store_path) as built:
            level = rankable_level(built)
        ctx.invoke(rank, store_path=store_path, quiet=quiet, level=level)
    if report.skipped:
        click.echo("\n".join(skipped_lines(report)), err=True)
        sys.exit(EXIT_SKIPPED)


@cli.command(context_settings=CONTEXT)
@click.argument("seeds", nargs=-1, required=True, metavar="URL...")
@store_option
@click.option(
    "--out",
    "folder",
    default="crawl",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Folder of the crawl's WARC segments; a re-run over it resumes.",
)
@click.option(
    "--max-pages",
    type=click.IntRange(1),
    default=1000,
    show_default=True,
    metavar="N",
    help="Pages to fetch, over all runs in --out.",
)
@click.option(
    "--order", type=click.Choice(CRAWL_ORDERS), default="pagerank", show_default=True, help="What to fetch first."
)
@click.option(
    "--rerank-every",
    type=click.IntRange(1),
    default=100,
    show_default=True,
    metavar="K",
    help="--order pagerank: rank the graph known so far every K pages.",
)
@click.option(
    "--scope",
    multiple=True,
    metavar="GLOB",
    help="Fetch only URLs matching GLOB (repeatable; default: the seeds' sites).",
)
@click.option(
    "--time-limit", type=click.FloatRange(0), default=0, metavar="SECONDS", help="Stop after SECONDS (0: none)."
)
@click.option(
    "--delay",
    type=click.FloatRange(0),
    default=0.5,
    show_default=True,
    metavar="SECONDS",
    help="Least time between two requests to a host.",
)
@click.option(
    "--per-host", type=click.IntRange(1), default=2, show_default=True, metavar="N", help="Requests at once to a host."
)
@click.option(
    "--concurrency", type=click.IntRange(1), default=16, show_default=True, metavar="N", help="Requests at once in all."
)
@click.option(
    "--load-every",
    type=click.IntRange(1),
    default=500,
    show_default=True,
    metavar="N",
    help="Close the WARC segment and load it into the store every N pages.",
)
@click.option("--no-store", is_flag=True, help="Write the WARC only.")
@click.option("--rank", "then_rank", is_flag=True, help="Then rank the store, as `rankstore rank` with no options.")
@click.option("-q", "--quiet", is_flag=True, help="No progress line.")
@click.pass_context
def crawl(
    ctx,
    seeds,
    store_path,
    folder,
    max_pages,
    order,
    rerank_every,
    scope,
    time_limit,
    delay,
    per_host,
    concurrency,
    load_every,
    no_store,
    then_rank,
    quiet,
):
    """Crawl from URL... politely, the most important pages first, into WARC files and the store as it goes.

    --order pagerank fetches next the URL with the highest PageRank in the
    graph fetched so far (ranked again every K pages), backlinks the one
    with the most links found to it, breadth the first found.  robots.txt
    is honoured and the user agent is rankstore-crawl/VERSION.  Pages go
    to WARC segments in --out, each loaded into the store (as `rankstore
    build` loads a WARC) once closed.  Ctrl-C stops with every page
    fetched kept; the same command again resumes, fetching nothing twice
    (an --out holding a crawl from other URLs is refused).  A run that
    fetched nothing it tried says why and exits 1.  One crawl runs per
    process (Scrapy's reactor runs once).

    \b
    Examples:
        rankstore crawl http://127.0.0.1:8000/ --max-pages 500 --out crawl/ --rank
        rankstore crawl http://127.0.0.1:8000/ --order breadth --delay 0 --time-limit 60
    """
    from .crawl import CrawlError, CrawlOptions, Order, crawl_failure, crawl_lines, crawl_progress_line
    from .crawl import crawl as run_crawl

    try:
        options = CrawlOptions(
            tuple(seeds),
            folder,
            None if no_store else store_path,
            max_pages,
            Order(order),
            rerank_every,
            tuple(scope),
            time_limit,
            delay,
            per_host,
            concurrency,
            load_every,
        ).checked()
    except CrawlError as error:
        raise click.ClickException(str(error)) from error
    if options.store_path is not None:
        open_store(options.store_path, create=True).close()  # a store that cannot be written is said before fetching

    def progress(state) -> None:
        click.echo("\r" + crawl_progress_line(state), nl=False, err=True)

    report = run_crawl(options, None if quiet else progress)
    if not quiet:
        click.echo(err=True)
    click.echo("\n".join(crawl_lines(report, options)))
    failure = crawl_failure(report)
    if failure is not None:
        raise click.ClickException(failure)
    if then_rank and not no_store:
        ctx.invoke(rank, store_path=store_path, quiet=quiet)


@cli.command(context_settings=CONTEXT)
@store_option
@lines_or_json("Lines to read, or JSON (--json says the same).")
@click.option("--json", "as_json", is_flag=True, hidden=True)
@click.option(
    "--space",
    is_flag=True,
    help="Also the bytes each part of the store takes (pages, links, rankings...), and per link: "
    "reads the whole file, so it takes longer on a big store.",
)
def info(store_path, fmt, as_json, space):
    """Counts, builds, rankings (with their level, and whether a newer build makes them stale) and size on disk.

    \b
    Example:
        rankstore info --store site.db --space --format json
    """
    from . import output

    store = open_store(store_path, readonly=True)
    try:
        details = store.info(space=space)
    finally:
        store.close()
    click.echo(output.store_text(details, "json" if as_json else fmt), nl=False)


@cli.command(context_settings=CONTEXT)
@store_option
def upgrade(store_path):
    """Bring a store written by an older rankstore up to this one's layout, in one transaction.

    Any writing command (build, rank) does the same first; readers (the proxy,
    show, top) ask for it.  An interrupted upgrade leaves the store as it was.

    \b
    Example:
        rankstore upgrade --store site.db
    """
    from .store import SCHEMA_VERSION

    open_store(store_path).close()
    click.echo(f"{store_path}: schema {SCHEMA_VERSION}")


def main(argv: list[str] | None = None) -> None:
    """The command line, with every failure told in one line: exit status 1 (2 for a usage error).

    Click reports bad options itself; what goes wrong later (SQLite, the
    disk, an interrupt) is caught here and told by its cause.  With
    $RANKSTORE_DEBUG set, an unexpected error shows its traceback too.
    """
    import sqlite3

    try:
        _opened.clear()
        cli.main(args=argv, prog_name="rankstore")
    except KeyboardInterrupt:
        _fail("interrupted; the store keeps its last committed state", 130)
    except BrokenPipeError:  # `rankstore export | head`: the reader has gone, nothing to say
        sys.stderr.close()
        os._exit(0)
    except Exception as error:
        if isinstance(error, sqlite3.Error) or _is_store_error(error):
            from .store import explain

            _fail(str(explain(_opened[-1] if _opened else "the store", error)))
        elif isinstance(error, OSError):
            where = f"{error.filename}: " if error.filename else ""
            _fail(f"{where}{error.strerror or error}")
        elif isinstance(error, MemoryError):
            _fail("out of memory: the graph does not fit; see BENCHMARKS.md for what a machine holds")
        elif os.environ.get("RANKSTORE_DEBUG"):  # a bug: say so in one line; the traceback on request
            raise
        else:
            _fail(
                f"internal error: {type(error).__name__}: {error} (set RANKSTORE_DEBUG=1 for the traceback, "
                "and please report it)"
            )


def _is_store_error(error: Exception) -> bool:
    """Whether ``error`` is the store's: only a command that loaded the store can raise one, so the store's
    modules are looked for among those loaded, not loaded to ask."""
    errors = sys.modules.get(f"{__package__}.store.errors")
    return errors is not None and isinstance(error, errors.StoreError)


def _fail(message: str, status: int = 1) -> None:
    click.echo(f"Error: {message}", err=True)
    sys.exit(status)


# ------------------------------------------------------------------ ranking


@cli.command(context_settings=CONTEXT)
@store_option
@click.option(
    "--name",
    default=None,
    callback=lambda ctx, param, value: _ranking_name(value),
    help="Ranking name [default: pagerank, personalized, visits, trust, badrank or topic:NAME].",
)
@click.option(
    "--damping",
    "-d",
    type=click.FloatRange(0, 1),
    default=0.85,
    show_default=True,
    help="Probability of following a link.",
)
@click.option(
    "--tol",
    type=click.FloatRange(0, min_open=True),
    default=1e-10,
    show_default=True,
    help="power: stop when the L1 change of an iteration is below this; bicgstab: when the L1 residual is"
    " (relative to 1-d; the scores are then within 2x this of the exact ones, in L1).",
)
@click.option(
    "--max-iter", type=click.IntRange(1), default=1000, show_default=True, help="Steps at most before giving up."
)
@click.option(
    "--dangling",
    type=click.Choice(DANGLING),
    help="Pages without out-links: uniform jump, jump by E, the paper's removal, or leak "
    "[default: uniform; source when E is given].",
)
@click.option(
    "--method",
    type=click.Choice(METHODS),
    default="auto",
    show_default=True,
    help="Krylov solve of the PageRank system (bicgstab: fast), the paper's power iteration (fewer vectors), "
    "or auto: bicgstab unless it would hold more than two thirds of this machine's memory.",
)
@click.option("--source", "sources", multiple=True, metavar="URL", help="Personalised: E on this page (repeatable).")
@click.option("--source-roots", is_flag=True, help="Personalised: E on the root page of every server (paper §6).")
@click.option(
    "--source-visits",
    is_flag=True,
    help="Personalised by your browsing: E on the pages (--level host, site: hosts, sites) the proxy's record saw "
    "you view, weighted by views [default name: visits, hostvisits, sitevisits].",
)
@click.option(
    "--since",
    metavar="DATE",
    help="--source-visits: only the views from this UTC date on (YYYY-MM-DD[THH:MM:SSZ]).",
)
@click.option(
    "--topic",
    "topics",
    multiple=True,
    metavar="NAME=FILE",
    help="Topic-sensitive: one ranking topic:NAME with E on the URLs in FILE (repeatable).",
)
@click.option("--trusted", type=click.Path(dir_okay=False), help="TrustRank from the URLs in FILE; stores Spam Mass.")
@click.option(
    "--good-fraction",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.85,
    show_default=True,
    help="--trusted: the share of the pages taken to be good, to which Spam Mass scales the trusted pages' jump "
    "(Gyöngyi et al. 2006).",
)
@click.option("--flagged", type=click.Path(dir_okay=False), help="BadRank from the URLs in FILE (reverse graph).")
@click.option(
    "--strict", is_flag=True, help="Refuse a seed URL that is not in the store, rather than skip it with a warning."
)
@click.option(
    "--force", is_flag=True, help="Rank even when the graph and parameters are those the newest version ranked."
)
@click.option("--include-nofollow", is_flag=True, help="Let nofollow/ugc/sponsored links vote too.")
@click.option("--unweighted", is_flag=True, help="Ignore link weights (an edge list's, or --link-weights position's).")
@click.option("--cold", is_flag=True, help="Do not warm-start from the previous version.")
@click.option(
    "--keep",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Versions of the ranking whose scores the store keeps, this one among them (0: every one); "
    "`rankstore history` shows each kept version's place.",
)
@click.option(
    "--level",
    type=click.Choice(LEVELS),
    default="page",
    show_default=True,
    help="Rank pages; hosts: one node per host, edges weighted by the page links between them; or sites "
    "(registered domains): hosts folded into their sites, with a Common Crawl domain graph's edges.",
)
@click.option(
    "--engine",
    type=click.Choice(ENGINES),
    default="scipy",
    show_default=True,
    help="scipy on this machine, or Apache Spark (pip install 'pagerank-proxy[spark]', Java 17+): the power method.",
)
@spark_options("spark.driver.memory=8g")
@click.option("-q", "--quiet", is_flag=True, help="No per-iteration output.")
@click.pass_context
def rank(
    ctx,
    store_path,
    name,
    damping,
    tol,
    max_iter,
    dangling,
    method,
    sources,
    source_roots,
    source_visits,
    since,
    topics,
    trusted,
    good_fraction,
    flagged,
    strict,
    force,
    include_nofollow,
    unweighted,
    cold,
    keep,
    level,
    engine,
    master,
    spark_conf,
    quiet,
):
    """Compute PageRank (or a variant) and store it as a new version of a named ranking.

    Prints the L1 residual of every iteration as it goes.  Readers (the proxy)
    keep seeing the previous version until the new one is written whole.
    Seed URLs (--source, --topic, --trusted, --flagged) are checked first: one
    not in the store is skipped with a warning (refused with --strict), and a
    run that fails writes nothing.  With the graph and parameters that the
    newest version ranked, nothing is written (--force ranks again).

    \b
    Examples:
        rankstore rank
        rankstore rank --damping 0.85 --tol 1e-10 --dangling remove --name paper
        rankstore rank --source https://example.com/ --name mine
        rankstore build ~/browsing --store my.db && rankstore rank --source-visits --since 2026-11-01 --store my.db
        rankstore rank --topic python=python-urls.txt --topic sql=sql-urls.txt
        rankstore rank --trusted seeds.txt --strict && rankstore top --ranking trust
        rankstore rank --level host            # the ranking 'hostrank'
        rankstore rank --level site            # the ranking 'siterank'
        rankstore rank --keep 12               # twelve versions' scores, for rankstore history
        rankstore rank --engine spark --master local[2] --spark-conf spark.driver.memory=8g
    """
    from .rank_job import JobError, RankRequest, graph_line, plan_jobs, run_jobs
    from .ranking import RankingError, RankOptions, VisitSource, check_seeds, load_level_graph

    given = click.core.ParameterSource.COMMANDLINE
    if engine == "spark" and ctx.get_parameter_source("method") == given:
        raise click.UsageError("--engine spark runs the power method: leave out --method")
    if engine != "spark" and (spark_conf or ctx.get_parameter_source("master") == given):
        raise click.UsageError("--master and --spark-conf are for --engine spark")
    common = RankOptions(
        damping=damping,
        tol=tol,
        max_iter=max_iter,
        dangling=dangling,
        method=method,
        include_nofollow=include_nofollow,
        weighted=not unweighted,
        warm_start=not cold,
        level=level,
        engine=engine,
        strict=strict,
        force=force,
        keep=keep,
    )
    if since is not None and not source_visits:
        raise click.UsageError("--since is for --source-visits")
    visits = VisitSource(_moment(since, "--since")) if source_visits else None
    fraction = good_fraction if ctx.get_parameter_source("good_fraction") == given else None
    request = RankRequest(common, name, tuple(sources), source_roots, tuple(topics), trusted, flagged, fraction, visits)
    try:
        jobs = plan_jobs(request)
    except JobError as error:
        if error.option is None:
            raise click.UsageError(str(error)) from error
        raise click.BadParameter(str(error), param_hint=error.option) from error

    def show(name: str, iteration: int, residual: float) -> None:
        click.echo(f"  {name} iteration {iteration:>4}  L1 residual {residual:.3e}", err=True)

    store = open_store(store_path)
    solver = None
    try:
        checked = check_seeds(store, jobs, strict)  # every seed list, before anything is ranked or written
        for problem in checked.skipped:
            click.echo(f"Warning: {problem}; skipped (--strict refuses it)", err=True)
        if engine == "spark":  # started before the graph is read: what stops Spark is told at once
            from .spark.engine import SparkSolver

            solver = SparkSolver(master, spark_conf).start()
        loaded = load_level_graph(store, level, include_nofollow)
        if not quiet:
            click.echo(graph_line(loaded, level), err=True)
        said = run_jobs(store, checked.jobs, loaded, solver, None if quiet else show, None if quiet else _say)
        click.echo("\n".join(said))
    except (RankingError, ValueError) as error:
        raise click.ClickException(str(error)) from error
    finally:
        if solver is not None:
            solver.close()
        store.close()


def _moment(value: str | None, option: str):
    """A UTC date (or date-time) option as a datetime; None when not given."""
    if value is None:
        return None
    from .sources.record import parse_moment

    try:
        return parse_moment(value)
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, UTC)", param_hint=option
        ) from None


def _say(step: str) -> None:
    click.echo(f"  {step}", err=True)


def _spark_conf(values: Sequence[str]) -> dict[str, str]:
    if not values:  # the scipy engine's rank: Spark's module left unloaded
        return {}
    from .spark.engine import parse_conf

    try:
        return parse_conf(values)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--spark-conf") from error


def _ranking_name(value: str | None) -> str | None:
    if value is not None and (not value.strip() or any(ord(c) < 32 for c in value)):
        raise click.BadParameter("a ranking name is at least one printable character", param_hint="--name")
    return value


def format_option(function):
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(OUTPUT_FORMATS),
        default="table",
        show_default=True,
        help="Output format: an aligned table, or CSV or JSON with the same columns (shares as fractions).",
    )(function)


def ranking_option(function):
    return click.option(
        "--ranking", "ranking_name", default="pagerank", show_default=True, help="Which named ranking."
    )(function)


def limit_option(default: int):
    """``-n``: the rows to give, the same in every format; 0 for all of them."""

    def decorate(function):
        return click.option(
            "-n",
            "--limit",
            type=click.IntRange(0),
            default=default,
            show_default=True,
            callback=lambda ctx, param, value: _rows(value),
            help="Rows to give, in every format (table, CSV, JSON); 0 for all.",
        )(function)

    return decorate


def _rows(limit: int) -> int:
    from .views import ALL_ROWS

    return ALL_ROWS if limit == 0 else limit


def _emit(table: views.Table, fmt: str, with_shares: bool = False) -> None:
    """A view's rows on stdout in ``fmt``; what goes with them (a stale ranking, a level) on stderr, so that
    CSV and JSON stay clean."""
    from . import output

    for note in table.notes:
        click.echo(f"note: {note}", err=True)
    if fmt == "table":
        for line in output.table_lines([*table.rows, *output.share_rows(table.shares)], table.columns):
            click.echo(line)
    else:
        click.echo(output.render(table.rows, table.columns, fmt, table.shares, with_shares), nl=False)


@contextlib.contextmanager
def reading(store_path: str):
    """The store, read-only; store errors become clean CLI errors."""
    from .store import StoreError

    store = open_store(store_path, readonly=True)
    try:
        yield store
    except StoreError as error:
        raise click.ClickException(str(error)) from error
    finally:
        store.close()


@cli.command(context_settings=CONTEXT)
@store_option
@ranking_option
@limit_option(15)
@format_option
def top(store_path, ranking_name, limit, fmt):
    """The best pages by PageRank (the paper's Table 1); of a host (site) ranking, the best hosts (sites).

    A page scored 0 (one that a personalised ranking's rank source cannot
    reach) has an empty bar, said in words in the table.  A ranking older
    than the newest build is named as such on stderr.  A site's hosts are
    the store's own, or Common Crawl's count where a domain graph gave a
    larger one; "-" (JSON null) where neither is known.

    \b
    Examples:
        rankstore top -n 15
        rankstore top --ranking trust --format json
        rankstore top --ranking hostrank       # hosts, after `rankstore rank --level host`
        rankstore top --ranking siterank       # sites, after `rankstore rank --level site`
    """
    from . import views

    with reading(store_path) as store:
        table = views.top_view(store, ranking_name, limit)
    _emit(table, fmt)


@cli.command(context_settings=CONTEXT)
@click.argument("urls", nargs=-1, required=True)
@store_option
@ranking_option
@format_option
def show(urls, store_path, ranking_name, fmt):
    """PageRank, percentile, toolbar score and in-links of pages (and their host's rank, once hosts are ranked).

    Given a host ranking (--ranking hostrank), each URL is answered by its
    host's rank, in a row that names the host (a URL the store does not hold
    too, where its host is ranked, said in a note); given a site ranking
    (--ranking siterank), by its site's rank (a site the store holds, from a
    crawl or a domain graph, whether or not the page is), naming the site.  A
    page added by a build newer than the ranking is listed as not ranked yet.
    A page the store does not hold is answered by its host's rank, else its
    site's (columns level, estimate, answered_by), where those are ranked.
    With no ranking named, a store that ranks no pages (a domain graph) is
    answered by its host or site ranking, as `top` lists it.  Exit status 1
    when a URL is not in the store or not ranked yet.

    \b
    Examples:
        rankstore show http://127.0.0.1:8000/library/functions.html --format json
        rankstore show https://docs.example.co.uk/a --ranking siterank
    """
    from . import views
    from .urls import canonical

    normal = []
    for url in urls:
        if canonical(url) is None:
            raise click.BadParameter(f"{url!r} is not an http(s) URL", param_hint="URLS")
        normal.append(canonical(url))
    with reading(store_path) as store:
        table = views.show_view(store, normal, ranking_name)
    if table.rows or fmt != "table":  # an empty table says nothing the lines below do not
        _emit(table, fmt)
    else:
        for note in table.notes:
            click.echo(f"note: {note}", err=True)
    if table.unranked:
        click.echo(f"not ranked yet: {', '.join(table.unranked)}", err=True)
    answered = {row.get("url") for row in table.rows}  # by their host's or site's rank, said in a note
    unknown = [url for url in table.missing if url not in answered]
    if unknown:
        asked = dict(zip(normal, urls))
        click.echo(f"not in the store: {', '.join(asked[url] for url in unknown)}", err=True)
    if table.missing or table.unranked:
        sys.exit(1)


@cli.command(context_settings=CONTEXT)
@click.argument("url", metavar="TARGET")
@store_option
@ranking_option
@limit_option(50)
@click.option("--offset", type=click.IntRange(0), default=0, help="Rows to skip first (with -n, a page at a time).")
@click.option(
    "--sort",
    type=click.Choice(SORTS),
    default="pagerank",
    show_default=True,
    help="Best linking pages first, or the links that give URL the most PageRank first.",
)
@click.option(
    "--since",
    metavar="BUILD|DATE",
    help="Only links new since that build (a number from `rankstore builds`, or a UTC date).",
)
@click.option("--lost", is_flag=True, help="The links a recrawl of their page no longer found, instead.")
@click.option(
    "--group-by",
    "group_by",
    type=click.Choice(GROUPS),
    default="page",
    show_default=True,
    help="One row per linking page, per linking host (its pages, best page, host rank) or per linking site.",
)
@click.option(
    "--host",
    "whole_host",
    is_flag=True,
    help="TARGET is a host (as in URLs, with its port if any): the backlinks of all its pages.",
)
@click.option(
    "--site",
    "whole_site",
    is_flag=True,
    help="TARGET is a site (a registered domain: example.com): the links into any of its hosts from other sites.",
)
@click.option(
    "--with-shares",
    is_flag=True,
    help="CSV: the share lines too, after the links, as rows with an empty URL (JSON has them under shares).",
)
@format_option
def backlinks(
    url, store_path, ranking_name, limit, offset, sort, since, lost, group_by, whole_host, whole_site, with_shares, fmt
):
    """Pages linking to URL, best PageRank first: watch what backlinks the competition has won (paper §7.4).

    Each link shows its contribution, d·PR(v)·w/W(v), what it passes to URL,
    and its share of URL's PageRank, the build that first saw it, its anchor
    text and its host's rank (once hosts are ranked), in the table as in CSV
    and JSON; then the shares of the links not listed, of URL's links to
    itself (never listed as backlinks), of the random jump and of pages
    without out-links (for a whole host: and of its internal links), which
    add up to 1 with the rows: lines after the table's rows, JSON's object
    {"rows": [...], "shares": {...}}, in CSV only with --with-shares.  Nofollow links are listed apart: they
    give nothing.  --since lists the links first seen after a build; --lost
    those that a recrawl no longer found.  --group-by host folds the linking
    pages into linking hosts, ranked by host rank (`rankstore rank --level
    host`) where there is one; --group-by site into linking sites (their
    hosts and pages counted), by site rank (`rank --level site`).  --site:
    TARGET is a site (a registered domain), its backlinks the links into any
    of its hosts from other sites; in a store of a domain graph (no pages),
    the sites its site links say link to it, best site rank first.  The
    ranking must rank pages (a host ranking is refused).  A ranking older than
    the newest build is named on stderr, and links it did not rank are
    listed without contribution or share.

    \b
    Examples:
        rankstore backlinks https://competitor.example/ --format csv -n 0 > all-backlinks.csv
        rankstore backlinks https://competitor.example/ --sort contribution -n 10 --format json
        rankstore backlinks https://competitor.example/ --format csv --with-shares
        rankstore backlinks https://competitor.example/ --since 2024-05-01
        rankstore backlinks https://competitor.example/ --lost --since 3
        rankstore backlinks competitor.example --host --group-by host
        rankstore backlinks --site competitor.example --group-by site
        rankstore backlinks --site competitor.example --format csv -n 0 > site-backlinks.csv
    """
    from . import views
    from .store import analysis

    if whole_host and whole_site:
        raise click.UsageError("--host and --site: TARGET is one host or one site, not both")
    target, host, site = _target(url, whole_host, whole_site)
    if lost and (host is not None or site is not None or group_by != "page"):
        raise click.UsageError("--lost lists pages that linked to one URL: not with --host, --site or --group-by")
    with reading(store_path) as store:
        if site is not None and views.holds_no_pages(store):  # a domain graph: its site links answer
            if since is not None or sort != "pagerank":
                raise click.ClickException(
                    "the store holds no pages, only a domain graph's site links: no --since or --sort contribution"
                )
            _emit(views.site_links_view(store, site, ranking_name, limit, offset), fmt)
            return
        after = analysis.since_build(store, since) if since is not None else None
        if lost:
            assert target is not None
            table = views.lost_view(store, target, ranking_name, after, limit, offset)
        elif group_by == "host":
            table = views.referring_hosts_view(store, target, host, ranking_name, sort, after, limit, offset, site)
        elif group_by == "site":
            table = views.referring_sites_view(store, target, host, site, ranking_name, sort, after, limit, offset)
        else:
            table, _ = views.backlinks_view(store, target, host, ranking_name, sort, after, limit, offset, site)
    _emit(table, fmt, with_shares)


def _target(value: str, whole_host: bool, whole_site: bool = False) -> tuple[str | None, str | None, str | None]:
    """(URL in normal form, None, None), (None, host, None) with --host, or (None, None, site) with --site."""
    from .urls import canonical, host_of

    if whole_site:
        normal = canonical(value if "://" in value else f"http://{value}/")
        if normal is None:
            raise click.BadParameter(f"{value!r} is not a site name (a registered domain)", param_hint="TARGET")
        return None, None, host_of(normal)
    if whole_host:
        if "://" in value:
            normal = canonical(value)
            if normal is None:
                raise click.BadParameter(f"{value!r} is not an http(s) URL or a host", param_hint="TARGET")
            return None, host_of(normal), None
        normal = canonical(f"http://{value}/")
        if normal is None:
            raise click.BadParameter(f"{value!r} is not a host name", param_hint="TARGET")
        return None, host_of(normal), None
    normal = canonical(value)
    if normal is None:
        raise click.BadParameter(
            f"{value!r} is not an http(s) URL (give --host for a whole host, --site for a whole site)", param_hint="URL"
        )
    return normal, None, None


@cli.command(context_settings=CONTEXT)
@store_option
@format_option
def builds(store_path, fmt):
    """Every build: when, what it loaded, and the links it found new and lost.

    A link is new in the first build that saw it; it is lost in the build
    whose recrawl of its page no longer found it.  Give a build's number to
    `rankstore backlinks --since`.

    \b
    Example:
        rankstore builds --format json
    """
    from . import views

    with reading(store_path) as store:
        table = views.builds_view(store)
    _emit(table, fmt)


@cli.command(context_settings=CONTEXT)
@click.argument("targets", nargs=-1, required=True, metavar="TARGET...")
@click.option("--not", "mine", multiple=True, metavar="TARGET", help="Leave out who links to this (repeatable).")
@click.option("--host", "whole_host", is_flag=True, help="Every TARGET is a host: links to any of its pages.")
@click.option("--site", "whole_site", is_flag=True, help="Every TARGET is a site: links to any of its hosts.")
@click.option(
    "--group-by",
    "group_by",
    type=click.Choice(GROUPS),
    default="page",
    show_default=True,
    help="Linking pages, linking hosts or linking sites.",
)
@store_option
@ranking_option
@limit_option(50)
@click.option("--offset", type=click.IntRange(0), default=0, help="Rows to skip first (with -n, a page at a time).")
@format_option
def intersect(targets, mine, whole_host, whole_site, group_by, store_path, ranking_name, limit, offset, fmt):
    """Who links to every TARGET and not to mine, best first: link intersect.

    The pages (or hosts, or sites, with --group-by host or site) that link to
    all the given URLs (or hosts, with --host; or sites, with --site), and to
    none of --not: the backlinks your competitors have won and you have not.
    Linking pages come by a page ranking (a host ranking is refused); linking
    hosts by host rank (the ranking `hostrank`, or --ranking when it ranks
    hosts); linking sites by site rank (`siterank`, or --ranking when it
    ranks sites), a domain graph's site links counted.

    \b
    Examples:
        rankstore intersect https://a.example/ https://b.example/ --not https://mine.example/
        rankstore intersect a.example b.example --host --not mine.example --group-by host
        rankstore intersect a.example b.example --site --not mine.example --group-by site
    """
    from . import views

    if whole_host and whole_site:
        raise click.UsageError("--host and --site: every TARGET is a host or a site, not both")
    chosen = [_target(value, whole_host, whole_site) for value in targets]
    excluded = [_target(value, whole_host, whole_site) for value in mine]
    with reading(store_path) as store:
        table = views.intersect_view(
            store, chosen, excluded, ranking_name, group_by == "host", limit, offset, by_site=group_by == "site"
        )
    _emit(table, fmt)


@cli.command(context_settings=CONTEXT)
@click.argument("words", nargs=-1, required=True)
@store_option
@ranking_option
@limit_option(20)
@click.option("--offset", type=click.IntRange(0), default=0, help="Rows to skip first (with -n, a page at a time).")
@format_option
def search(words, store_path, ranking_name, limit, offset, fmt):
    """Pages whose title has every word, best PageRank first (the paper's title search, §5.1).

    The ranking must rank pages (a host ranking is refused).

    \b
    Example:
        rankstore search sqlite tutorial -n 10
    """
    from . import views

    with reading(store_path) as store:
        table = views.search_view(store, words, ranking_name, limit, offset)
    _emit(table, fmt)


@cli.command(context_settings=CONTEXT)
@click.argument("url")
@store_option
@ranking_option
@limit_option(50)
@format_option
def anchors(url, store_path, ranking_name, limit, fmt):
    """The anchor texts of the links to URL, grouped, by the PageRank their links pass on.

    The ranking must rank pages (a host ranking is refused); URL's links to
    itself are left out.

    \b
    Example:
        rankstore anchors https://competitor.example/ --format csv
    """
    from . import views

    target = _target(url, False)[0]
    assert target is not None
    with reading(store_path) as store:
        table = views.anchors_view(store, target, ranking_name, limit)
    _emit(table, fmt)


@cli.command(context_settings=CONTEXT)
@store_option
@ranking_option
@click.option(
    "--what",
    type=click.Choice(EXPORT_WHAT),
    default="scores",
    show_default=True,
    help="Which table: the ranking's scores, or the whole store's links, pages, hosts or sites.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(EXPORT_FORMATS),
    default="csv",
    show_default=True,
    help="CSV (to stdout unless -o), or Parquet (to the file -o names).",
)
@click.option(
    "-o", "--output", "path", type=click.Path(dir_okay=False), help="File to write; - or none: stdout (CSV only)."
)
@_help_with(columns=columns.help_text())
def export(store_path, ranking_name, what, fmt, path):
    """The store as a table for pandas, DuckDB or Spark: scores (default), links, pages, hosts or sites.

    Every row, in the CSV dialect of every command (true/false, an empty
    field where a value is not known).  A host (site) ranking's scores are its
    hosts (sites).

    {columns}

    \b
    Examples:
        rankstore export > ranks.csv
        rankstore export --format parquet -o ranks.parquet
        rankstore export --ranking hostrank > hosts.csv
        rankstore export --what sites --format parquet -o sites.parquet
        rankstore export --what links --format parquet -o links.parquet
        duckdb -c "SELECT count(*) FROM 'links.parquet' WHERE NOT nofollow"
    """
    if path == "-":
        path = None
    if fmt == "parquet" and not path:
        raise click.UsageError("--format parquet needs --output FILE")
    from .export import SCHEMAS, batches, scores, write, write_scores

    if what != "scores":
        with reading(store_path) as store:
            rows = write(batches(store, what), SCHEMAS[what], path or sys.stdout.buffer, fmt)
        if path:
            click.echo(f"wrote {rows:,} {what} rows to {path}", err=True)
        return
    with reading(store_path) as store:
        found = scores(store, ranking_name)
    for note in found.notes:
        click.echo(f"note: {note}", err=True)
    count = write_scores(found, path or sys.stdout, fmt)
    if fmt == "parquet":
        click.echo(f"wrote {count:,} rows to {path}", err=True)


@cli.command(context_settings=CONTEXT)
@store_option
@ranking_option
@click.option("--plot", type=click.Path(dir_okay=False), help="Write a PNG: convergence and rank distribution.")
def stats(store_path, ranking_name, plot):
    """Convergence history and score distribution of a ranking.

    The plot has the paper's Figure 4 (L1 residual per iteration, log axis)
    and the rank distribution on log-log axes.  A version warm-started from
    an answer already within --tol has no history to draw: the convergence is
    that of the newest version that has one (named on the plot and here);
    the distribution is always the ranking's newest version.

    \b
    Example:
        rankstore stats --plot pagerank.png
    """
    from . import output

    with reading(store_path) as store:
        ranking = store.rankings.ranking(ranking_name)
        _, found = store.rankings.scores_of(ranking.id)
        history = store.rankings.ranking_with_history(ranking) if plot else None
    scores = output.best_first(found)
    click.echo("\n".join(output.ranking_lines(ranking, scores)))
    if plot:
        from .plots import stats_figure

        for line in stats_figure(ranking, scores, history, plot):
            click.echo(line)


# ------------------------------------------------------------------ a target over time: history and watch


def _history_target(value: str, whole_host: bool, whole_site: bool) -> dict[str, str]:
    """``history``'s TARGET as the library takes it: {"url": URL}, {"host": HOST} or {"site": SITE}."""
    from .urls import canonical, host_of, site_of

    if whole_host and whole_site:
        raise click.UsageError("give --host or --site, not both")
    if not (whole_host or whole_site):
        normal = canonical(value)
        if normal is None:
            raise click.BadParameter(f"{value!r} is not an http(s) URL (give --host or --site)", param_hint="TARGET")
        return {"url": normal}
    normal = canonical(value if "://" in value else f"http://{value}/")
    if normal is None:
        raise click.BadParameter(f"{value!r} is not a host, site or URL", param_hint="TARGET")
    host = host_of(normal)
    return {"host": host} if whole_host else {"site": site_of(host)}


@cli.command(context_settings=CONTEXT)
@click.argument("target", metavar="TARGET")
@click.option("--host", "whole_host", is_flag=True, help="TARGET is a host (as in URLs, with its port if any).")
@click.option("--site", "whole_site", is_flag=True, help="TARGET is a site (a registered domain): all its hosts.")
@click.option(
    "--ranking",
    "ranking_name",
    help="The ranking whose versions give the rank (default: pagerank, or hostrank / siterank for --host / --site).",
)
@click.option(
    "--plot",
    type=click.Path(dir_okay=False),
    help="Also draw it to FILE (.png, or .svg): referring hosts/sites by build, place by ranking version.",
)
@store_option
@format_option
def history(target, whole_host, whole_site, ranking_name, plot, store_path, fmt):
    """How TARGET's backlinks and rank moved: a row per build, with the ranking version that ranked it.

    For each build: TARGET's backlinks (linking page, target page), referring
    hosts and referring sites as of that build, and how many of each were
    new in it and lost in it.  A link counts at a build when a build at or
    before it first saw it and no recrawl at or before it lost it; a page not
    crawled again keeps its links.  The target's own links are left out: a
    page's links to itself, a host's (--host) from its own pages, a site's
    (--site) from any of its hosts.  Beside each build, each version of the
    ranking that ranked that build's graph: TARGET's score, percentile and
    place (1 + the nodes scoring more); versions whose build is not known
    come last.

    \b
    Examples:
        rankstore history https://competitor.example/pricing
        rankstore history competitor.example --site --format csv > competitor.csv
        rankstore history www.competitor.example --host --plot competitor.png
    """
    from . import views

    if plot is not None and not plot.lower().endswith((".png", ".svg")):
        raise click.BadParameter(f"{plot!r}: name a .png or .svg file", param_hint="--plot")
    named = _history_target(target, whole_host, whole_site)
    with reading(store_path) as store:
        table, found = views.history_view(store, ranking=ranking_name, **named)
    _emit(table, fmt)
    if plot is not None:
        from .plots import history_figure

        for line in history_figure(found, plot):
            click.echo(line, err=True)


class _WatchError(click.ClickException):
    exit_code = 2  # 1 says that something changed


@cli.command(context_settings=CONTEXT)
@click.argument("sources", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "-o", "--out", required=True, type=click.Path(file_okay=False), help="The folder of the Parquet (made if new)."
)
@click.option(
    "--to-site",
    "sites",
    multiple=True,
    metavar="SITE",
    help="Keep only the links into this site (a registered domain; repeatable), and the pages they are on.",
)
@click.option("--to-sites", type=click.Path(dir_okay=False), help="The sites to keep, from FILE (one a line).")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(1),
    default=os.cpu_count() or 1,
    show_default="the cores",
    help="Files read at once, each in a process of its own.",
)
@click.option(
    "--engine",
    type=click.Choice(EXTRACT_ENGINES),
    default="local",
    show_default=True,
    help="Where the files are read: processes on this machine, or Spark's executors (a task a file).",
)
@spark_options("spark.executor.memory=4g")
@listing_options
@click.option("-q", "--quiet", is_flag=True, help="No progress line.")
@click.pass_context
def extract(ctx, sources, out, sites, to_sites, jobs, engine, master, spark_conf, paths_base, limit, quiet):
    """Read WARC and WAT files into Parquet: their links (source, target, anchor, nofollow, capture time)
    and their pages (URL, status, title, canonical, capture time), parsed as `build` parses them.

    SOURCES are files, http(s) URLs (streamed, not saved) and *.paths.gz
    listings of them (Common Crawl's wat.paths.gz; --limit takes the first N).
    With --to-site (or --to-sites), only the links into those sites are kept,
    and the pages that hold them: the backlinks of the sites you watch, from
    a whole crawl.  A file that cannot be read is named and skipped (exit
    status 3); the others go on.  The folder keeps each file done (its size
    and checksum): the same command again skips them, so a run cut short
    resumes.  `rankstore build FOLDER` loads the result like any crawl.
    With --engine spark each file is a task on an executor, which writes its
    parts into FOLDER itself: on a cluster, a folder every node sees.

    \b
    Examples:
        rankstore extract crawl/*.warc.gz -o links/ && rankstore build links/ --rank
        rankstore extract CC-MAIN-*.warc.wat.gz --to-site rival.example -o rival/ -j 2
        rankstore extract wat.paths.gz --limit 100 --to-sites watched.txt -o watched/ --engine spark
    """
    from .extraction import ExtractError, SparkOptions, read_sites
    from .extraction import extract as run_extract

    given = click.core.ParameterSource.COMMANDLINE
    if engine != "spark" and (spark_conf or ctx.get_parameter_source("master") == given):
        raise click.UsageError("--master and --spark-conf are for --engine spark")
    try:
        wanted = list(sites) + (read_sites(to_sites) if to_sites else [])
        report = run_extract(
            list(sources), out, wanted or None, jobs, engine, None if quiet else lambda line: _say(line),
            paths_base=paths_base, limit=limit, spark=SparkOptions(master, spark_conf),
        )  # fmt: skip
    except ExtractError as error:
        raise click.ClickException(str(error)) from error
    for failed in report.failed:
        click.echo(f"Warning: {failed.file}: skipped: {failed.why}", err=True)
    click.echo(
        f"extracted {len(report.done):,} file(s) into {out}: {report.records:,} records, {report.pages:,} pages kept, "
        f"{report.links:,} links"
        + (f"; {len(report.already):,} done before, skipped" if report.already else "")
        + (f"; {len(report.failed):,} could not be read" if report.failed else "")
    )
    if report.failed:
        ctx.exit(3)


@cli.command(context_settings=CONTEXT)
@click.argument("targets_file", metavar="FILE", type=click.Path(dir_okay=False))
@click.option(
    "-n",
    "--limit",
    type=click.IntRange(0),
    default=5,
    show_default=True,
    help="Backlinks and sites to list of each change, best first; 0 for all.",
)
@store_option
@lines_or_json("Lines to read, or JSON: a list with an object per target.")
@click.pass_context
def watch(ctx, targets_file, limit, store_path, fmt):
    """What changed for the targets in FILE since the store's previous build; exit 1 if anything did.

    FILE lists one target a line: a URL, host:NAME (a host, with its port if
    any) or site:NAME (a registered domain: all its hosts); blank lines and
    lines starting with # are skipped.  For each: the backlinks and referring
    sites new and lost from the next-to-last build to the last (best first:
    pages by PageRank, sites by site rank), and its move between the two
    newest versions of its level's ranking (pagerank, hostrank, siterank).  A
    target the store does not know is reported as such and counts as no
    change.

    Exit status: 0 when nothing changed for any target, 1 when something
    did, 2 for a usage or store error.

    \b
    Examples:
        rankstore watch competitors.txt --format json > changes.json
        # crontab: after the nightly build and rank, mail what changed
        30 6 * * *  rankstore watch ~/competitors.txt > /tmp/w.txt || mail -s backlinks me < /tmp/w.txt
    """
    import sqlite3

    from . import views
    from .store import StoreError, explain
    from .watch import TargetsFileError, parse_targets
    from .watch import watch as watch_targets

    try:
        with open(targets_file, encoding="utf-8", errors="replace") as handle:
            targets = parse_targets(handle.read())
        with reading(store_path) as store:
            reports = watch_targets(store, targets, limit or (1 << 40))
    except TargetsFileError as error:
        raise _WatchError(f"{targets_file}: {error}") from error
    except click.ClickException as error:
        raise _WatchError(error.message) from error
    except (StoreError, sqlite3.Error) as error:
        raise _WatchError(str(explain(store_path, error))) from error
    except OSError as error:
        raise _WatchError(f"{error.filename or targets_file}: {error.strerror or error}") from error
    if fmt == "json":
        click.echo(views.watch_json(reports), nl=False)
    else:
        click.echo("\n".join(views.watch_lines(reports)) if reports else "(no targets)")
    ctx.exit(1 if any(report.changed for report in reports) else 0)


@cli.command(context_settings=CONTEXT)
@store_option
@click.option(
    "--level",
    type=click.Choice(LEVELS),
    default="page",
    show_default=True,
    help="Count the views by page, by host or by site.",
)
@click.option("--since", metavar="DATE", help="Only the views from this UTC date on (YYYY-MM-DD[THH:MM:SSZ]).")
@click.option(
    "--ranking",
    "ranking_name",
    default=None,
    help="The ranking to set against the visits, of the same level [default: pagerank, hostrank, siterank].",
)
@limit_option(20)
@format_option
def usage(store_path, level, since, ranking_name, limit, fmt):
    """Usage against rank (paper §7.1): what you visited beside its PageRank, most over- and under-ranked first.

    Each page (host, site) viewed in the proxy's record (built into the
    store) with its visits; visit_rank, its place by visits among the
    visited ("the rank the visits alone would give"); pagerank_rank, its
    place by PageRank among the same; rank, its place in the whole ranking;
    and log2_over = log2(visit_rank / pagerank_rank): above 0 PageRank ranks
    it higher than your visits do (over), below 0 lower (under).  Ties share
    their mean place.  Rows come by |log2_over|, largest first.

    \b
    Examples:
        rankstore build ~/browsing --store my.db && rankstore rank --store my.db && rankstore usage --store my.db
        rankstore usage --level host --since 2026-11-01 --format csv --store my.db
    """
    from .store import RankingNotFound
    from .usage import UsageError, usage_columns, usage_rows
    from .usage import usage as usage_of
    from .views import Table

    moment = _moment(since, "--since")
    with reading(store_path) as store:
        try:
            found = usage_of(store, level, moment, ranking_name)
        except (UsageError, RankingNotFound) as error:
            raise click.ClickException(str(error)) from error
    rows = usage_rows(found, limit)
    _emit(Table(rows, usage_columns(level), found.notes), fmt)


# ------------------------------------------------------------------ comparing rankings


@cli.command(context_settings=CONTEXT)
@click.argument("rankings", nargs=-1, required=True, metavar="RANKING_A [RANKING_B]")
@store_option
@format_option
def compare(rankings, store_path, fmt):
    """How far two rankings of one level agree: Spearman's rho, Kendall's tau-b, and the top 10/100/1,000 overlap.

    A ranking is NAME (its newest version) or NAME@VERSION; given one alone,
    its version before the newest is compared with the newest.  Over the
    nodes (pages, hosts or sites) both score above 0: a node Common Crawl's
    ranks file does not name scores 0.  top_k is the share of A's k best of
    those nodes that are among B's k best (empty: fewer than k in common).

    \b
    Examples:
        rankstore compare hostrank cc-pagerank         # ours against Common Crawl's
        rankstore compare pagerank                     # the version before against the newest
        rankstore compare pagerank@3 pagerank --format json
    """
    from . import views
    from .compare import CompareError, RankingRef

    if len(rankings) > 2:
        raise click.UsageError("give one ranking (its two newest versions) or two: RANKING_A [RANKING_B]")
    refs = [RankingRef.parse(text) for text in rankings]
    with reading(store_path) as store:
        try:
            table = views.compare_view(store, refs[0], refs[1] if len(refs) > 1 else None)
        except CompareError as error:
            raise click.ClickException(str(error)) from error
    _emit(table, fmt)


# ------------------------------------------------------------------ forgetting what was browsed


@cli.command(context_settings=CONTEXT)
@click.option("--host", metavar="HOST", help="Forget this host's pages (as in URLs, with its port if any).")
@click.option("--before", metavar="DATE", help="Forget the views before this UTC date (YYYY-MM-DD[THH:MM:SSZ]).")
@click.option(
    "--record",
    "record_dir",
    type=click.Path(file_okay=False),
    help="The proxy's record (pagerank-proxy --record DIR) to take the same lines out of.",
)
@store_option
def forget(host, before, record_dir, store_path):
    """Forget pages you browsed: from the store, and from the proxy's record with --record.

    --host forgets a host: every view of its pages, their crawled content
    (links, anchors, titles), the links other pages had to it, and its name;
    --before forgets the views before a date, and the content of pages left
    without a view; both together, the host's views before the date.  A
    forgotten page that no kept link points to keeps only its number (its URL
    becomes http://forgotten.invalid/ID).  Ranking versions that ranked a
    forgotten page are dropped: run `rankstore rank` again.  The store's file
    is then rewritten (VACUUM: as long as copying it, with as much free disk
    beside it), and each record file that changes is written anew and renamed
    over the old one, so that neither holds what was forgotten: the JSON
    lines, and the WARC files of --record-warc without the forgotten pages'
    responses (with --host alone, also without other pages' responses that
    name the host: a response is kept whole or not at all).  Stop the proxy
    first: it appends to the record's files.  Run again after an error:
    forgetting twice changes nothing more.

    \b
    Examples:
        rankstore forget --host bank.example --record ~/browsing --store mine.db
        rankstore forget --before 2026-01-01 --record ~/browsing --store mine.db
    """
    from .sources.record import check_record, forget_lines, forget_warcs, live_writers, parse_moment

    if host is None and before is None:
        raise click.UsageError("say what to forget: --host HOST, --before DATE, or both")
    name = _target(host, whole_host=True)[1] if host is not None else None
    moment = None
    if before is not None:
        try:
            moment = parse_moment(before)
        except ValueError:
            raise click.BadParameter(
                f"{before!r} is not a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, UTC)", param_hint="--before"
            ) from None
    if record_dir is not None:
        try:
            check_record(record_dir)  # before the store changes: both are forgotten, or neither
        except SourceError as error:
            raise click.ClickException(str(error)) from error
        writers = live_writers(record_dir)
        if writers:  # its file would be replaced under it, and what it appends after lost
            pids = ", ".join(map(str, writers))
            raise click.ClickException(f"{record_dir}: the proxy (pid {pids}) still records into it; stop it first")
    store = open_store(store_path)
    try:
        done = store.visits.forget(name, moment)
    finally:
        store.close()
    click.echo(
        f"store: {done.visits:,} views forgotten, {done.pages:,} pages' content, {done.links:,} links to them, "
        f"{done.renamed:,} URLs, {done.hosts:,} hosts and {done.sites:,} sites renamed"
    )
    if done.rankings:
        click.echo(
            f"dropped ranking versions that ranked forgotten pages: {', '.join(done.rankings)} "
            "(run `rankstore rank` again)"
        )
    if record_dir is not None:
        try:
            taken = forget_lines(record_dir, name, moment)
            responses = forget_warcs(record_dir, name, moment)
        except SourceError as error:
            raise click.ClickException(str(error)) from error
        except OSError as error:  # a full disk, a file not ours: each file is whole, old or new; run again
            where = error.filename or record_dir
            raise click.ClickException(f"{where}: {error.strerror or error}; run forget again") from error
        click.echo(
            f"record: {taken.lines:,} lines and {taken.links:,} links to the host taken out of {taken.files:,} files"
        )
        if responses.held:
            click.echo(
                f"record's WARC: {responses.records:,} records ({responses.naming:,} naming the host) taken out "
                f"of {responses.files:,} files"
                + (f"; {responses.remade:,} later revisits made whole responses again" if responses.remade else "")
            )
