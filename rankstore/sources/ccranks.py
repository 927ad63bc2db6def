"""Common Crawl's ranks files: each host's (or domain's) harmonic centrality and PageRank, as published.

Common Crawl publishes beside each host and domain graph a ``*-ranks.txt.gz``
(written by cc-webgraph's ``process_webgraph.sh``: ``join_ranks_in_memory``
with ``JoinSortRanks``, or the older ``join_harmonicc_pagerank``):

* one header line, tab-separated:
  ``#harmonicc_pos #harmonicc_val #pr_pos #pr_val #host_rev``; a domain
  file adds ``#n_hosts`` (the domain's number of hosts, not used here);
* then a line per vertex: its position by harmonic centrality (1 for the
  best), the value (a Java ``float`` as Java writes it: ``2.7391288E7``,
  ``0.0``), its position by PageRank and the value (a Java ``double``:
  ``1.4245053181045628E-4``), the reversed name (``com.example.www``; a
  domain file's names are domains, ``com.example``), and for a domain file
  the count of hosts;
* sorted by harmonic centrality position; one gzipped file.

Names are put back the right way round as they are written (the graphs'
reader does the same, :mod:`.ccgraph`): ``com.example.www`` is the host
``www.example.com``, nothing added or dropped.  A block of lines is taken
apart by pyarrow in C and its names reversed by pyarrow too; only a block
holding a line that is not the format is read again line by line, to find
that line.  Bad lines are reported and skipped as the graphs' reader reports
them (its :class:`~.ccgraph._Reporter`: the first
:data:`~.ccgraph.REPORTED` of a kind one by one, then a count): not a ranks
line (another number of fields, a value that is not a number, ``---`` where
the older join found no value, a position below 1, a value below 0 or not
finite), an implausible name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from . import Skipped, SourceError
from .ccgraph import _csv, _head, _part_blocks, _plausible_host, _plausible_hosts

if TYPE_CHECKING:
    import pyarrow as pa

# pyarrow is imported by the functions that parse a graph or ranks file: telling a file's format (every
# build asks) imports none of it

__all__ = ["HEADER", "RankBatch", "looks_like_cc_ranks", "ranks_level", "read_cc_ranks"]

HEADER = ("#harmonicc_pos", "#harmonicc_val", "#pr_pos", "#pr_val", "#host_rev")
DOMAIN_HEADER = (*HEADER, "#n_hosts")
_NUMBER = rb"[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?"  # what Java's Float/Double.toString write of a finite value >= 0
_HOST_LINE = re.compile(rb"([0-9]+)\t(" + _NUMBER + rb")\t([0-9]+)\t(" + _NUMBER + rb")\t([^\t\r]*)\r?")
_DOMAIN_LINE = re.compile(rb"([0-9]+)\t(" + _NUMBER + rb")\t([0-9]+)\t(" + _NUMBER + rb")\t([^\t\r]*)\t[0-9]+\r?")
_CLEAN_BYTES = b"0123456789abcdefghijklmnopqrstuvwxyzE+._-\t\n"  # all a block of good lines holds
_NOT_RANKS = "not a ranks line (expected POSITION<TAB>VALUE<TAB>POSITION<TAB>VALUE<TAB>reversed.name{})"


@dataclass(slots=True)
class RankBatch:
    """Scores of a block of a ranks file: names the right way round, and their values as published."""

    names: list[str]  # hosts (a host file) or domains (a domain file), e.g. ``www.example.com``
    harmonic: np.ndarray  # float64: harmonic centrality
    pagerank: np.ndarray  # float64
    lines: np.ndarray  # int64: each name's line in the file (to report a name given twice)
    where: str  # ``path:first-last``


def looks_like_cc_ranks(head: bytes) -> bool:
    """Whether decompressed content starts like a ranks file: its header line."""
    return head.lstrip().startswith(HEADER[0].encode() + b"\t")


def ranks_level(path: str) -> str:
    """'host' for a host ranks file, 'site' for a domain one (its names are registered domains), by the header;
    SourceError for a header that is neither."""
    first = _first_bytes(path).split(b"\n", 1)[0].rstrip(b"\r")
    fields = tuple(first.decode("ascii", errors="replace").split("\t"))
    if fields == HEADER:
        return "host"
    if fields == DOMAIN_HEADER:
        return "site"
    expected = "\\t".join(HEADER)
    raise SourceError(f"{path}: not a Common Crawl ranks header (expected {expected}[\\t#n_hosts]): {first[:200]!r}")


def _first_bytes(path: str) -> bytes:
    """The file's first decompressed bytes, by path or by URL (a ranks file may be read where it is published)."""
    from .remote import TransferError, gunzipped_head, is_url, read_head

    if not is_url(path):
        return _head(path)
    try:
        head = read_head(path)
    except TransferError as error:
        raise SourceError(str(error)) from error
    return gunzipped_head(head)


def read_cc_ranks(
    path: str, progress: Callable[[int], None] | None = None, chunk_lines: int = 4_000_000
) -> Iterator[RankBatch | Skipped]:
    """The file's scores in batches of at most ``chunk_lines`` lines, its bad lines as Skipped; ``progress`` is
    called with the number of bytes read from disk as they are."""
    domains = ranks_level(path) == "site"
    for item in _part_blocks([path], progress, chunk_lines):
        if isinstance(item, Skipped):
            yield item
            continue
        _, report, block, first, last = item
        if first == 1:  # the header, checked by ranks_level
            end = block.find(b"\n")
            if end < 0:
                continue
            block, first = block[end + 1 :], 2
        names, harmonic, pagerank, lines, bad = _ranks_block(block, first, last, domains)
        for line, reason in bad:
            yield from report.bad(line, reason)
        if len(lines):
            yield RankBatch(_forward(names), harmonic, pagerank, lines, f"{path}:{first}-{last}")


def _ranks_block(
    block: bytes, first: int, last: int, domains: bool
) -> tuple[pa.Array, np.ndarray, np.ndarray, np.ndarray, list[tuple[int, str]]]:
    """(reversed names, harmonic centrality, PageRank, line numbers, bad lines as (line, reason)) of a block."""
    import pyarrow as pa

    types = [pa.int64(), pa.float64(), pa.int64(), pa.float64(), pa.binary()] + ([pa.int64()] if domains else [])
    if block and not block.translate(None, _CLEAN_BYTES):
        parsed = _csv(block, last - first + 1, types)
        if parsed is not None:
            positions = np.concatenate([parsed[0].to_numpy(), parsed[2].to_numpy()])
            values = np.concatenate([parsed[1].to_numpy(), parsed[3].to_numpy()])
            # 'E', '+' and '-' may make pyarrow read what this format never holds (a value of 'E', a position -1)
            if positions.min() >= 1 and np.isfinite(values).all() and values.min() >= 0 and _plausible_hosts(parsed[4]):
                return parsed[4], parsed[1].to_numpy(), parsed[3].to_numpy(), np.arange(first, last + 1), []
    pattern = _DOMAIN_LINE if domains else _HOST_LINE
    names: list[bytes] = []
    harmonic: list[float] = []
    pagerank: list[float] = []
    lines: list[int] = []
    bad: list[tuple[int, str]] = []
    not_ranks = _NOT_RANKS.format("<TAB>N_HOSTS" if domains else "")
    for number, line in enumerate(block.split(b"\n"), first):
        fields = pattern.fullmatch(line)
        if fields is None or int(fields.group(1)) < 1 or int(fields.group(3)) < 1:
            if line.strip():
                bad.append((number, not_ranks))
        elif not _plausible_host(fields.group(5)):
            shown = fields.group(5)[:100].decode("utf-8", errors="replace")
            bad.append((number, f"not a plausible host name ({shown!r})"))
        elif not (np.isfinite(float(fields.group(2))) and np.isfinite(float(fields.group(4)))):
            bad.append((number, f"{not_ranks} (a value out of range)"))
        else:
            names.append(fields.group(5))
            harmonic.append(float(fields.group(2)))
            pagerank.append(float(fields.group(4)))
            lines.append(number)
    return (
        pa.array(names, pa.binary()),
        np.array(harmonic, dtype=np.float64),
        np.array(pagerank, dtype=np.float64),
        np.array(lines, dtype=np.int64),
        bad,
    )


def _forward(reversed_names: pa.Array) -> list[str]:
    """Reversed names the right way round (``com.example.www`` -> ``www.example.com``), in C: each name's
    labels taken in the reverse order and joined again."""
    import pyarrow as pa
    import pyarrow.compute as pc

    labels = pc.split_pattern(reversed_names.cast(pa.string()), ".")
    offsets = labels.offsets.to_numpy().astype(np.int64)
    counts = np.diff(offsets)
    starts = np.repeat(offsets[:-1], counts)
    ends = np.repeat(offsets[1:], counts)
    turned = starts + ends - 1 - np.arange(offsets[0], offsets[-1], dtype=np.int64)
    flipped = pa.ListArray.from_arrays(pa.array(offsets - offsets[0], pa.int32()), labels.values.take(turned))
    return pc.binary_join(flipped, ".").to_pylist()
