"""Rankings computed elsewhere, stored as versions without solving: Common Crawl's ranks files.

A host ranks file (``*-host-ranks.txt.gz``) becomes two host rankings,
:data:`CC_HARMONIC` (harmonic centrality) and :data:`CC_PAGERANK`; a domain
ranks file, the same two at site level (its domains are sites by name).
The file's names are numbered as hosts or sites where the store has them not
(``Store.hosts.ensure_hosts``, ``ensure_sites``: a node with no page).  Every
node of the level the file does not name scores 0, as a node a personalised
ranking cannot reach does: no bar, and :mod:`rankstore.compare` leaves it
out.  Both versions are written in one transaction, after the file is read
whole: a reload is a new version of each, and readers see both old or both
new.

Scores: each measure divided by its sum over the file, so that both sum to 1
as the store's PageRank does (Common Crawl's PageRank sums to 1 already, but
for its rounding and the lines skipped).  That is what the toolbar's 0-10
reads (:mod:`rankstore.display`: steps of 6.5 above the average node);
harmonic centrality, a sum of 1/distance and no probability, would otherwise
read 10 everywhere.  Order, percentiles and bars (a log scale between the
lowest and highest score) do not change; the divisor is kept in the
version's ``params`` (``sum``), so the published value is score x sum.  A
version's positions are the store's: by score, ties by node id (the file's
own positions break ties by Common Crawl's vertex id).  In-links are not in
the file: unknown (:data:`~rankstore.store.schema.UNKNOWN_INLINKS`), shown empty, never 0.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .sources import Skipped
from .sources.ccranks import RankBatch, ranks_level, read_cc_ranks
from .store import Ranking, Store
from .store.schema import UNKNOWN_INLINKS

__all__ = ["CC_HARMONIC", "CC_PAGERANK", "ImportedScores", "read_cc_ranks_into", "write_imported"]

CC_HARMONIC = "cc-harmonic"
CC_PAGERANK = "cc-pagerank"


@dataclass
class ImportedScores:
    """One ranks file read into the store's numbering: each measure by node index of its level."""

    source: str
    level: str  # 'host' or 'site'
    harmonic: np.ndarray  # float64 by node index (node id - 1), 0 where the file names none
    pagerank: np.ndarray
    named: np.ndarray  # bool by node index: the file gave the node its scores
    seconds: float = 0.0

    @property
    def nodes(self) -> int:
        """How many nodes the file scored."""
        return int(np.count_nonzero(self.named))


def read_cc_ranks_into(
    store: Store,
    path: str,
    skipped: Callable[[Skipped], None],
    progress: Callable[[int], None] | None = None,
    chunk_lines: int = 4_000_000,
) -> ImportedScores:
    """Read a Common Crawl ranks file, numbering its hosts or sites in the store as it goes (a transaction a
    batch); its bad lines, and a name given twice (the first line counts), go to ``skipped``."""
    started = time.perf_counter()
    level = ranks_level(path)
    ensure = store.hosts.ensure_hosts if level == "host" else store.sites.ensure_sites
    harmonic = np.zeros(0)
    pagerank = np.zeros(0)
    named = np.zeros(0, dtype=bool)
    for item in read_cc_ranks(path, progress, chunk_lines):
        if isinstance(item, Skipped):
            skipped(item)
            continue
        with store.transaction():
            index = ensure(item.names) - 1
        if len(index) and int(index.max()) >= len(named):
            size = max(int(index.max()) + 1, 2 * len(named))
            harmonic, pagerank, named = (_grown(array, size) for array in (harmonic, pagerank, named))
        index, batch = _first_naming(index, item, named, skipped)
        harmonic[index], pagerank[index], named[index] = batch.harmonic, batch.pagerank, True
    size = int(np.flatnonzero(named).max()) + 1 if named.any() else 0
    harmonic, pagerank, named = harmonic[:size], pagerank[:size], named[:size]
    return ImportedScores(path, level, harmonic, pagerank, named, time.perf_counter() - started)


def _grown(array: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros(size, dtype=array.dtype)
    out[: len(array)] = array
    return out


def _first_naming(
    index: np.ndarray, batch: RankBatch, named: np.ndarray, skipped: Callable[[Skipped], None]
) -> tuple[np.ndarray, RankBatch]:
    """The batch less the lines that name a node named before (in it or in an earlier batch), each reported."""
    again = named[index]
    _, first = np.unique(index, return_index=True)
    within = np.ones(len(index), dtype=bool)
    within[first] = False
    repeated = again | within
    if not repeated.any():
        return index, batch
    path = batch.where.rsplit(":", 1)[0]
    for at in np.flatnonzero(repeated).tolist():
        skipped(
            Skipped(f"{path}:{batch.lines[at]}", f"a name given twice ({batch.names[at]!r}; its first line counts)")
        )
    kept = ~repeated
    return index[kept], RankBatch(
        [name for name, keep in zip(batch.names, kept.tolist()) if keep],
        batch.harmonic[kept],
        batch.pagerank[kept],
        batch.lines[kept],
        batch.where,
    )


def write_imported(store: Store, scores: ImportedScores) -> list[Ranking]:
    """A new version of :data:`CC_HARMONIC` and of :data:`CC_PAGERANK` from ``scores``, in one transaction.

    Each covers every node of the level when written (nodes numbered since the file was read score 0).
    """
    started = time.perf_counter()
    written = []
    with store.transaction():
        count = store.hosts.host_count() if scores.level == "host" else store.sites.site_count()
        for name, measure, values in (
            (CC_HARMONIC, "harmonic centrality", scores.harmonic),
            (CC_PAGERANK, "PageRank", scores.pagerank),
        ):
            full = np.zeros(count)
            full[: len(values)] = values
            total = float(full.sum())
            if total > 0:
                full /= total
            params = {
                "kind": "imported",
                "measure": measure,
                "published_by": "Common Crawl",
                "source": os.path.abspath(scores.source),
                "nodes": scores.nodes,
                "sum": total,
            }
            written.append(
                store.rankings.write_ranking(
                    name,
                    params,
                    0,
                    [],
                    np.arange(1, count + 1, dtype=np.int64),
                    full,
                    np.full(count, UNKNOWN_INLINKS, dtype=np.int32),
                    seconds=scores.seconds + time.perf_counter() - started,
                    level=scores.level,
                )
            )
    return written
