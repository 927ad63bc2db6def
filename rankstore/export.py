"""The whole store as tables for pandas, DuckDB and Spark: links, pages, hosts and sites, in Arrow batches.

Each table comes as a stream of :class:`pyarrow.RecordBatch` with a fixed
schema, so that a graph of any size is written to Parquet (or CSV) a block at
a time.  Pages, hosts and sites are named by id (``pages.id``, ``hosts.id``,
``sites.id``); a link row names its two pages.  ``first_build`` is the build that first saw a link
(null where the store does not know: links loaded before schema 6).  A host's
score in the newest ``hostrank`` is ``host_pagerank``, its position + 1
``host_rank``, as in every view; a site's in the newest ``siterank``,
``site_pagerank`` and ``site_rank``.  CSV is written in the dialect of every
command (:mod:`rankstore.output`).  A file named is written beside its target and renamed over it once whole
(:func:`output_file`): a failure leaves the target as it was.
"""

from __future__ import annotations

import contextlib
import io
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

import numpy as np
import pyarrow as pa

from . import output
from .choices import EXPORT_TABLES
from .columns import TABLE_COLUMNS
from .store import Store, analysis

__all__ = ["TABLES", "ARROW_TYPES", "SCHEMAS", "batches", "write", "Scores", "scores", "write_scores", "output_file"]

TABLES = EXPORT_TABLES

ARROW_TYPES = {
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "string": pa.string(),
}
SCHEMAS = {  # each table's columns as rankstore.columns declares them (and `rankstore export --help` lists them)
    table: pa.schema([(column.name, ARROW_TYPES[column.kind]) for column in columns])
    for table, columns in TABLE_COLUMNS.items()
}

_ROWS = 1 << 16


def batches(store: Store, table: str) -> Iterator[pa.RecordBatch]:
    """The rows of ``table`` (one of :data:`TABLES`) in batches with the schema :data:`SCHEMAS` gives."""
    if table == "links":
        yield from _links(store)
    elif table == "pages":
        yield from _pages(store)
    elif table == "hosts":
        yield from _nodes(analysis.host_ranking(store), store.hosts.host_batches(_ROWS), "pages", SCHEMAS["hosts"])
    elif table == "sites":
        yield from _nodes(analysis.site_ranking(store), store.sites.site_batches(_ROWS), "hosts", SCHEMAS["sites"])
    else:
        raise ValueError(f"table must be one of {', '.join(TABLES)}, not {table!r}")


def _links(store: Store) -> Iterator[pa.RecordBatch]:
    """Every link in in-link order (by target, then source), one in_links block at a time."""
    uniform = analysis.graph_born(store) or None
    schema = SCHEMAS["links"]
    for block in store.graph.in_link_blocks():
        src = block.sources + 1
        if not len(src):
            continue
        dst = np.repeat(np.arange(block.first + 1, block.first + 1 + len(block.counts), dtype=np.int32), block.counts)
        columns = [
            pa.array(src, pa.int32()),
            pa.array(dst, pa.int32()),
            pa.array(block.weights if block.weights is not None else np.ones(len(src))),
            pa.array(block.nofollow if block.nofollow is not None else np.zeros(len(src), dtype=bool)),
            pa.array(block.born, pa.int32())
            if block.born is not None
            else pa.nulls(len(src), pa.int32())
            if uniform is None
            else pa.array(np.full(len(src), uniform, dtype=np.int32)),
        ]
        yield pa.RecordBatch.from_arrays(columns, schema=schema)


def _pages(store: Store) -> Iterator[pa.RecordBatch]:
    hosts = store.hosts.page_hosts()
    for batch in store.pages.page_batches(_ROWS):
        index = np.asarray(batch.ids, dtype=np.int64) - 1
        host_ids = np.zeros(len(index), dtype=np.int32)
        known = index < len(hosts)
        host_ids[known] = hosts[index[known]]
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(batch.ids, pa.int32()),
                pa.array(batch.urls, pa.string()),
                pa.array(batch.hosts, pa.string()),
                pa.array(host_ids, pa.int32(), mask=host_ids == 0),
                pa.array(batch.titles, pa.string()),
                pa.array([bool(c) for c in batch.crawled], pa.bool_()),
                pa.array(batch.status, pa.int32()),
                pa.array(batch.first_build, pa.int32()),
                pa.array(batch.last_build, pa.int32()),
            ],
            schema=SCHEMAS["pages"],
        )


def _nodes(ranked, found: Iterator, members: str, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Hosts (or sites) in batches of id, name, their ``members`` (a host's pages, a site's hosts), and their
    score and rank + 1 in ``ranked``, the newest ``hostrank`` (``siterank``): (id, arrays), or None."""
    for batch in found:
        ids = np.asarray(batch.ids, dtype=np.int64)
        scores = positions = None
        if ranked is not None:
            arrays = ranked[1]
            inside = ids <= arrays.pages
            at = np.minimum(ids, arrays.pages) - 1
            scores = pa.array(arrays.scores[at], pa.float64(), mask=~inside)
            positions = pa.array(arrays.places(at) + 1, pa.int64(), mask=~inside)
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(ids, pa.int32()),
                pa.array(batch.names, pa.string()),
                pa.array(getattr(batch, members), pa.int64()),
                scores if scores is not None else pa.nulls(len(ids), pa.float64()),
                positions if positions is not None else pa.nulls(len(ids), pa.int64()),
            ],
            schema=schema,
        )


def write(source: Iterator[pa.RecordBatch], schema: pa.Schema, sink, fmt: str) -> int:
    """Write the batches to ``sink`` (a path, or a binary file) as Parquet or CSV; returns rows written."""
    if isinstance(sink, str):
        with output_file(sink) as handle:
            return write(source, schema, handle, fmt)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        rows = 0
        writer = pq.ParquetWriter(sink, schema)
        try:
            for batch in source:
                writer.write_batch(batch)
                rows += batch.num_rows
        finally:
            writer.close()
        return rows
    text = _text(sink)
    try:
        return output.write_csv_columns(text, schema.names, ([c.to_pylist() for c in b.columns] for b in source))
    finally:
        text.flush()
        text.detach()  # the caller's binary file stays open


@contextlib.contextmanager
def output_file(path: str) -> Iterator[IO[bytes]]:
    """A binary file to write ``path`` through, that a failure leaves as it was.

    A regular file (or one not there yet) is written beside it, in its folder, and renamed over it once
    whole, with the old file's permissions (a new one's are the umask's); a failure removes only what was
    written beside.  Anything else (a device, a FIFO) is written straight to and never removed.  An
    :class:`OSError` names ``path``.
    """
    try:
        mode: int | None = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    beside = None
    try:
        if mode is not None and not stat.S_ISREG(mode):
            with open(path, "wb") as handle:
                yield handle
            return
        folder, name = os.path.split(os.path.realpath(path))  # a symbolic link stays one: its target is replaced
        while True:
            beside = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")
            try:
                descriptor = os.open(beside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                break
            except FileExistsError:
                continue
        try:
            with open(descriptor, "wb") as handle:
                if mode is not None:
                    os.fchmod(descriptor, stat.S_IMODE(mode))
                yield handle
                handle.flush()
                os.fsync(descriptor)
            os.replace(beside, os.path.join(folder, name))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(beside)  # only what this wrote
            raise
    except OSError as error:
        if (error.filename is not None and error.filename != beside) or not error.errno:
            raise
        raise OSError(error.errno, error.strerror or os.strerror(error.errno), path) from error


def _text(binary) -> io.TextIOWrapper:
    return io.TextIOWrapper(binary, encoding="utf-8", newline="")


# ------------------------------------------------------------------ a ranking's scores


@dataclass(frozen=True)
class Scores:
    """A ranking's every node, best first, as columns (:func:`rankstore.views.export_columns`), and what is
    said beside them (a stale ranking)."""

    columns: dict[str, list]
    notes: list[str]

    @property
    def rows(self) -> int:
        return len(next(iter(self.columns.values())))


def scores(store: Store, name: str) -> Scores:
    """The newest ranking ``name``'s scores: a page ranking's pages, a host (site) ranking's hosts (sites)."""
    from . import views

    ranking = store.rankings.ranking(name)
    return Scores(views.export_columns(store, ranking), views.stale_notes(store, ranking))


def write_scores(found: Scores, sink: str | IO[str], fmt: str) -> int:
    """The scores to ``sink`` (a path; a text file for CSV) as Parquet or CSV; returns the rows written."""
    if isinstance(sink, str):
        with output_file(sink) as binary:
            if fmt == "parquet":
                import pyarrow.parquet as pq

                pq.write_table(pa.table(found.columns), binary)
                return found.rows
            handle = _text(binary)
            try:
                return write_scores(found, handle, fmt)
            finally:
                handle.flush()
                handle.detach()
    if fmt == "parquet":
        raise ValueError("Parquet is written to a path")
    return output.write_csv(sink, list(found.columns), zip(*found.columns.values()))
