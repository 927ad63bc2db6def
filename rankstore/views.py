"""The views' rows as users read them: display columns beside the store's rows, and stable column names.

The library computes each view once as rows (:mod:`rankstore.store.queries`,
:mod:`rankstore.store.analysis`); this module adds what both renderers show
(rank, percentile, toolbar, bar width, a link's kind, the shares that are not
pages) and names the columns of each view.  ``rankstore``'s table/CSV/JSON
and the proxy's own pages (``format=csv|json`` too) render these same rows:
``tests/test_analyst_pages.py`` compares the two downloads byte for byte.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import display

__all__ = [
    "PAGE_COLUMNS",
    "BACKLINK_EXTRA",
    "PAGE_EXTRA",
    "LOST_EXTRA",
    "HOST_COLUMNS",
    "INTERSECT_HOST_COLUMNS",
    "BUILD_COLUMNS",
    "decorate",
    "link_columns",
    "share_rows",
    "page_columns",
]

PAGE_COLUMNS = ["rank", "pagerank", "percentile", "toolbar", "inlinks", "url", "title"]
BACKLINK_EXTRA = ("kind", "contribution", "share", "first_seen", "nofollow", "anchor", "target")
LOST_EXTRA = ("first_seen", "last_seen", "lost_in")
PAGE_EXTRA = ("spam_mass", "nofollow", "anchor")
HOST_COLUMNS = [
    "host",
    "pages",
    "links",
    "hostrank",
    "host_position",
    "contribution",
    "share",
    "best_url",
    "best_pagerank",
]
INTERSECT_HOST_COLUMNS = ["host", "hostrank", "host_position"]
BUILD_COLUMNS = ["build", "started_at", "finished_at", "status", "pages", "links", "new_links", "lost_links"]
_CSV_BAR_PX = 20  # the CLI's bar column


def decorate(rows: Sequence[dict], lowest: float, highest: float) -> list[dict]:
    """Store rows -> rank, percentile, toolbar and bar columns beside the row's own."""
    if not rows:
        return []
    scores = [row["pagerank"] or 0.0 for row in rows]
    pages = rows[0]["pages"]
    positions = [row["position"] if row["position"] is not None else pages for row in rows]
    percentiles = display.percentile(positions, pages)
    toolbars = display.toolbar(scores, pages)
    widths = display.bar_width(scores, lowest, highest, _CSV_BAR_PX)
    out = []
    for row, pct, tb, width in zip(rows, percentiles, toolbars, widths):
        item = {
            "url": row["url"],
            "title": row["title"],
            "pagerank": row["pagerank"],
            "percentile": round(float(pct), 3) if row["pagerank"] is not None else None,
            "toolbar": int(tb),
            "rank": (row["position"] + 1) if row["position"] is not None else None,
            "inlinks": row["inlinks"],
            "bar": int(width),
        }
        if row.get("extra") is not None:
            item["spam_mass"] = row["extra"]
        for key in ("nofollow", "anchor"):
            if key in row:
                item[key] = row[key]
        out.append(item)
    return out


def link_columns(rows: Sequence[dict], lowest: float, highest: float) -> list[dict]:
    """Backlink rows (a report's, or lost links'): kind, contribution, share and builds beside the page's."""
    decorated = decorate(rows, lowest, highest)
    for item, row in zip(decorated, rows):
        item["kind"] = "nofollow" if row.get("nofollow") else "link"
        for key in ("contribution", "share", "first_seen", "last_seen", "lost_in"):
            if key in row:
                item[key] = row[key]
    return decorated


def _share_row(kind: str, value: float | None) -> dict:
    return {
        "rank": None,
        "pagerank": None,
        "percentile": None,
        "toolbar": None,
        "inlinks": None,
        "url": None,
        "title": None,
        "bar": 0,
        "kind": kind,
        "contribution": None,
        "share": value,
        "first_seen": None,
        "nofollow": None,
        "anchor": None,
    }


def share_rows(report, listed: Sequence[dict], whole_host: bool) -> list[dict]:
    """The lines that are not pages: the shares of the backlinks not listed, of the random jump and of pages
    without out-links (with a whole host's internal links); with ``listed`` they add up to 1."""
    if report.links_share is None:
        return []
    rest = report.links_share - sum(row["share"] for row in listed if row.get("share"))
    sinks = "internal links and pages without out-links" if whole_host else "pages without out-links"
    return [
        _share_row("other backlinks", 0.0 if abs(rest) < 1e-12 else rest),
        _share_row("random jump", report.jump_share),
        _share_row(sinks, report.sinks_share),
    ]


def page_columns(rows: Sequence[dict], extra: Sequence[str]) -> list[str]:
    """The CSV header of decorated rows: the page columns, then those of ``extra`` the first row has."""
    return PAGE_COLUMNS + [key for key in extra if rows and key in rows[0]]
