"""The ``rankstore`` command line: thin, it parses options and calls the library."""

from __future__ import annotations

import json
import os
import sys
import time

import click

from . import __version__
from .build import build as run_build
from .build import total_size
from .sources import FORMATS, SourceError
from .store import Store, StoreError

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


def open_store(path: str, readonly: bool = False) -> Store:
    try:
        return Store(path, readonly=readonly)
    except StoreError as error:
        raise click.ClickException(str(error)) from error


def _human_bytes(count: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} TiB"


@click.group(context_settings=CONTEXT)
@click.version_option(__version__, prog_name="rankstore")
def cli():
    """A PageRank store: load crawls, rank them, look at what links where.

    \b
    Example:
        rankstore build crawl.warc.gz && rankstore info
    """


@cli.command(context_settings=CONTEXT)
@click.argument("sources", nargs=-1, required=True, type=click.Path())
@store_option
@click.option("--format", "fmt", type=click.Choice(FORMATS), help="Source format (default: detected from content).")
@click.option("--base-url", help="For a directory of saved HTML: the URL its root was saved from.")
@click.option("-j", "--jobs", type=click.IntRange(1, 64), help="Parser processes (default: up to 2 cores).")
@click.option("--commit-every", type=click.IntRange(1), default=2000, show_default=True,
              help="Pages per transaction: what an interrupted build can lose at most.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def build(sources, store_path, fmt, base_url, jobs, commit_every, quiet):
    """Load crawls (WARC/WARC.gz, a directory of saved HTML, edge lists) into the store.

    Formats are detected from content; a recrawled page's out-links replace its
    old ones, new pages are added.  Records that cannot be read are reported
    with their location and skipped; the rest still loads.  Exit status: 0 when
    everything loaded, 3 when some records were skipped, 1 on an error.

    \b
    Examples:
        wget --mirror --warc-file=site http://127.0.0.1:8000/
        rankstore build site.warc.gz
        rankstore build mirror/ --base-url http://127.0.0.1:8000/
        rankstore build edges.tsv.gz --store graph.db
    """
    store = open_store(store_path)
    try:
        total = total_size(sources) if not quiet else 0
    except OSError:
        total = 0
    started = time.perf_counter()
    show = not quiet and total > 0
    bar = click.progressbar(
        length=max(total, 1),
        label="building",
        file=sys.stderr,
        show_eta=True,
        item_show_func=lambda pages: None if pages is None else f"{pages:,} pages, "
        f"{pages / max(time.perf_counter() - started, 1e-9):,.0f} pages/s",
    )
    done = 0

    def progress(bytes_read: int, pages: int) -> None:
        nonlocal done
        if show:
            bar.update(bytes_read - done, pages)
            done = bytes_read

    try:
        if show:
            bar.__enter__()
        report = run_build(store, sources, fmt, base_url, progress, jobs, commit_every)
    except SourceError as error:
        raise click.ClickException(str(error)) from error
    finally:
        if show:
            bar.__exit__(None, None, None)
        store.close()
    rate = report.pages / report.seconds if report.seconds else 0
    click.echo(
        f"built {store_path}: {report.pages:,} pages, {report.links:,} links from {len(sources)} "
        f"source(s) in {report.seconds:.1f} s ({rate:,.0f} pages/s)"
    )
    if report.skipped:
        click.echo(f"skipped {report.skipped_total:,} record(s):", err=True)
        for reason, count in report.skipped.most_common():
            click.echo(f"  {count:>8,}  {reason}", err=True)
        for example in report.examples[:10]:
            click.echo(f"  at {example.where}: {example.reason}", err=True)
        sys.exit(EXIT_SKIPPED)


@cli.command(context_settings=CONTEXT)
@store_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def info(store_path, as_json):
    """Counts, builds, rankings and size on disk of the store.

    \b
    Example:
        rankstore info --store site.db
    """
    if not os.path.exists(store_path):
        raise click.ClickException(f"{store_path}: no such store (run `rankstore build` first)")
    store = open_store(store_path, readonly=True)
    try:
        details = store.info()
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps(details, indent=2))
        return
    click.echo(f"store:    {details['path']} ({_human_bytes(details['size_bytes'])}, schema {details['schema_version']})")
    click.echo(f"pages:    {details['pages']:,} ({details['crawled_pages']:,} crawled, "
               f"{details['pages'] - details['crawled_pages']:,} only linked to) on {details['hosts']:,} host(s)")
    click.echo(f"links:    {details['links']:,} ({details['nofollow_links']:,} nofollow)")
    click.echo(f"builds:   {len(details['builds'])}")
    for item in details["builds"]:
        skipped = f", {item['skipped']:,} skipped" if item["skipped"] else ""
        click.echo(f"  #{item['id']} {item['started_at']} {item['status']}: {item['pages']:,} pages, "
                   f"{item['links']:,} links{skipped} from {', '.join(item['sources'])}")
    click.echo(f"rankings: {len(details['rankings'])}")
    for item in details["rankings"]:
        click.echo(f"  {item['name']} v{item['version']} {item['created_at']}: {item['pages']:,} pages, "
                   f"{item['iterations']} iterations")


def main() -> None:
    cli()
