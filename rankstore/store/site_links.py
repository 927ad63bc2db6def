"""Site links loaded as such: the edges of a Common Crawl domain graph, whose vertices are sites.

A domain graph names no page and no host, so its edges have no place in the
page graph; they are kept at their own level, in ``site_links``, as the
in-link CSR of the sites (row ``s``, site id ``s + 1``, lists the sites
linking to it), in blocks of at most ``BLOCK_LINKS`` links and
``BLOCK_MAX_PAGES`` sites like ``in_links``: ``offsets`` int32 per site of the
block, ``sources`` int32 site indices, both native-endian as ``in_links``'s.
A site's links to itself are left out and each pair is kept once: a
domain-graph edge is one link (:meth:`SiteLinks.replace_site_links`).
The table is replaced whole by each load (one transaction, with the build's
others), so a reader sees one graph's edges or the other's.  ``meta`` keeps
how many sites the edges were numbered against (``site_links_sites``): sites
numbered later have no row and no loaded link.
"""

from __future__ import annotations

import numpy as np

from .base import Part
from .graph import InLinks, _blocks

__all__ = ["SiteLinks"]


class SiteLinks(Part):
    """The site links a domain graph brings; part of :class:`~rankstore.store.Store`."""

    def replace(self, src: np.ndarray, dst: np.ndarray, sites: int) -> int:
        """Replace the store's loaded site links with ``src`` -> ``dst`` (site ids, 1..``sites``): a site's
        links to itself left out, each pair kept once.  Returns the links kept.  Call inside a write
        transaction: the table is empty between the delete and the inserts."""
        keep = src != dst
        key = (dst[keep].astype(np.int64) - 1) * max(sites, 1) + (src[keep].astype(np.int64) - 1)
        del keep
        key.sort()
        if len(key):
            key = key[np.concatenate([[True], key[1:] != key[:-1]])]
        indptr = np.searchsorted(key, np.arange(sites + 1, dtype=np.int64) * max(sites, 1))
        indices = (key % max(sites, 1)).astype(np.int32)
        del key
        self.db.execute("DELETE FROM site_links")
        self.db.executemany(
            "INSERT INTO site_links (first, sites, offsets, sources) VALUES (?, ?, ?, ?)",
            (row[:4] for row in _blocks(indptr, indices, None, None)),
        )
        self.db.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            [("site_links_sites", str(sites)), ("site_links", str(len(indices)))],
        )
        return len(indices)

    def links(self, sites: int) -> InLinks:
        """The loaded site links as the in-link CSR of ``sites`` sites (those numbered since have none)."""
        rows = self.db.execute("SELECT offsets, sources FROM site_links ORDER BY first").fetchall()
        counts = [np.diff(np.frombuffer(offsets, dtype=np.int32)) for offsets, _ in rows]
        indptr = np.zeros(sites + 1, dtype=np.int64)
        if counts:
            filled = np.concatenate(counts)[:sites]
            np.cumsum(filled, out=indptr[1 : len(filled) + 1])
            indptr[len(filled) + 1 :] = indptr[len(filled)]
        sources = [np.frombuffer(blob, dtype=np.int32) for _, blob in rows]
        indices = np.concatenate(sources) if sources else np.zeros(0, dtype=np.int32)
        return InLinks(sites, indptr, indices[: indptr[-1]], None, None)

    def in_links(self, site: int) -> np.ndarray:
        """The site indices of the loaded links into site id ``site`` (one block read, as a page's backlinks
        are one slice of ``in_links``); empty for a site the loaded graph has no link into."""
        row = self.db.execute(
            "SELECT first, offsets, sources FROM site_links WHERE first <= ? ORDER BY first DESC LIMIT 1", (site - 1,)
        ).fetchone()
        if row is None:
            return np.zeros(0, dtype=np.int32)
        first, offsets, sources = row
        bounds = np.frombuffer(offsets, dtype=np.int32)
        at = site - 1 - first
        if at >= len(bounds) - 1:
            return np.zeros(0, dtype=np.int32)
        return np.frombuffer(sources, dtype=np.int32)[bounds[at] : bounds[at + 1]]

    def count(self) -> int:
        """How many site links the last domain graph loaded (0 without one)."""
        row = self.db.execute("SELECT value FROM meta WHERE key = 'site_links'").fetchone()
        return int(row[0]) if row else 0
