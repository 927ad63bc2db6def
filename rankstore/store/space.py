"""The space each part of the store takes on disk (``rankstore info --space``).

Every table and index the schema creates belongs to one part, declared once in :data:`PARTS` (an index
belongs to its table's part unless named itself); ``tests/test_space.py`` checks that none is left out.
SQLite's ``dbstat`` table counts each b-tree's pages, reading every page of the file: on a store of tens
of GB that takes from seconds (cached) to a minute (from disk), so plain ``info`` does not ask for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from . import Store

__all__ = ["PARTS", "OTHER", "PartSpace", "btrees", "part_of", "space"]

OTHER = "other"  # the store's bookkeeping, free pages and what no b-tree holds (the lock-byte page)

PARTS: dict[str, tuple[str, ...]] = {
    "pages": ("pages", "pages_by_url", "pages_by_host", "page_keys"),
    "links": ("out_links", "link_notes", "link_notes_by_dst", "link_births", "lost_links"),
    "in-link CSR": ("in_links",),
    "hosts": ("hosts", "page_hosts", "host_key_buckets"),
    "sites": ("sites", "host_sites", "site_key_buckets"),
    "site links": ("site_links",),
    "titles": ("titles", "titles_data", "titles_idx", "titles_config"),
    "rankings": ("rankings", "ranking_blocks", "ranking_names", "sqlite_sequence"),
    "sources": ("source_files",),
    "visits": ("visits", "visits_by_page"),
    OTHER: ("meta", "counter", "builds"),
}
_PART_OF = {name: part for part, names in PARTS.items() for name in names}


@dataclass(frozen=True)
class PartSpace:
    """One part's bytes on disk, its share of the file, and its bytes per link where the store has links."""

    part: str
    bytes: int
    share: float
    bytes_per_link: float | None


def part_of(name: str, table: str) -> str | None:
    """The part b-tree ``name`` (of table ``table``: itself, for a table) belongs to; None if undeclared."""
    return _PART_OF.get(name) or _PART_OF.get(table)


def btrees(store: Store) -> list[tuple[str, str]]:
    """Every table and index of the store that has pages of its own, as (name, its table's name)."""
    return store.db.execute("SELECT name, tbl_name FROM sqlite_master WHERE rootpage > 0").fetchall()


def space(store: Store, links: int) -> list[PartSpace]:
    """Each part's space, in :data:`PARTS`' order; ``links``: the store's links (page and site links), for the
    bytes a link.  A b-tree no part declares is counted in :data:`OTHER`."""
    db = store.db
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    total = db.execute("PRAGMA page_count").fetchone()[0] * page_size
    found = dict.fromkeys(PARTS, 0)
    for name, table in btrees(store):
        # dbstat's aggregate row counts the b-tree's pages in ``pageno`` (its ``pgsize`` is a 32-bit sum that
        # wraps past 2 GiB in SQLite 3.40)
        row = db.execute("SELECT pageno FROM dbstat('main', 1) WHERE name = ?", (name,)).fetchone()
        found[part_of(name, table) or OTHER] += (row[0] or 0) * page_size if row else 0
    found[OTHER] += total - sum(found.values())
    return [
        PartSpace(part, size, size / total if total else 0.0, size / links if links else None)
        for part, size in found.items()
    ]
