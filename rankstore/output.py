"""One dialect for every view's rows: CSV, JSON and the aligned table, for the CLI and the proxy's own pages.

``rankstore``'s commands and the downloads of the own pages write rows
through these functions only, so that a view reads the same wherever it
comes from:

* **columns**: the view's column names (:mod:`rankstore.views`), the same in
  CSV, JSON and the table's header; a JSON row holds exactly those keys, in
  that order.
* **CSV**: Python's ``csv`` dialect (a field is quoted only where it holds a
  comma, quote or line break), ``\\n`` line ends, ``true``/``false`` for
  booleans, an empty field for a value that is not known, numbers as Python
  writes them (``repr``: every digit of a float).
* **JSON**: a list of objects, two-space indent, UTF-8 text (nothing
  escaped), ``null`` for a value that is not known (a NaN too), booleans and
  numbers as JSON has them.
* **a backlink report** (rows with :class:`ShareLine` s, the shares of the
  target's PageRank that come from no listed page): JSON is an object,
  ``{"rows": [...], "shares": {"other_backlinks": ..., ...}}``; CSV holds the
  link rows only, unless the share lines are asked for (``--with-shares``),
  then as rows with an empty URL after them; the table always shows them.
* **numbers**: shares and contributions are fractions (of 1) in CSV and JSON;
  only the table shows a share as a percentage.  A percentile is on its own
  0-100 scale everywhere (it is one, as the paper shows it).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from . import display

if TYPE_CHECKING:
    from .store import Ranking

__all__ = [
    "csv_text",
    "json_text",
    "render",
    "ShareLine",
    "share_rows",
    "write_csv",
    "write_csv_columns",
    "table_lines",
    "TEXT_COLUMNS",
    "human_bytes",
    "store_text",
    "best_first",
    "ranking_lines",
]


@dataclass(frozen=True)
class ShareLine:
    """A backlink report's line that is no page: a share of the target's PageRank from elsewhere."""

    key: str  # its name in JSON's "shares": other_backlinks, links_to_itself, random_jump, ...
    kind: str  # its words: the table's text and, with --with-shares, CSV's kind column
    share: float | None

    def row(self) -> dict:
        """As the table (and CSV with --with-shares) shows it: a row with no URL, its words as its kind."""
        return {"url": None, "kind": self.kind, "share": self.share, "bar": None}


def share_rows(shares: Sequence[ShareLine] | None) -> list[dict]:
    return [line.row() for line in shares or ()]


def _plain(value: Any) -> Any:
    """A value as both writers take it: NaN is not known (None); numpy scalars as Python's."""
    if isinstance(value, float) and math.isnan(value):
        return None
    item = getattr(value, "item", None)  # a numpy scalar
    return item() if callable(item) and not isinstance(value, (str, bytes)) else value


def _csv_field(value: Any) -> Any:
    value = _plain(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def write_csv(handle: IO[str], columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    """Rows (sequences in the order of ``columns``) as CSV under a header; returns the rows written."""
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(columns)
    count = 0
    for row in rows:
        writer.writerow([_csv_field(value) for value in row])
        count += 1
    return count


def write_csv_columns(handle: IO[str], columns: Sequence[str], batches: Iterable[Sequence[list]]) -> int:
    """Batches of columns (one list of Python values a column) as :func:`write_csv` writes their rows.

    The whole store's tables go this way: a column of booleans or of floats
    (NaN) is put in the dialect's form once, and every other value goes to
    the csv module's own loop, which writes None as empty as the dialect does.
    """
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(columns)
    count = 0
    for batch in batches:
        cells = [_csv_column(values) for values in batch]
        writer.writerows(zip(*cells))
        count += len(cells[0]) if cells else 0
    return count


def _csv_column(values: list) -> list:
    kinds = {type(value) for value in values}
    if bool in kinds or (float in kinds and any(value != value for value in values if type(value) is float)):
        return [_csv_field(value) for value in values]
    return values


def csv_text(rows: Sequence[dict], columns: Sequence[str]) -> str:
    out = io.StringIO()
    write_csv(out, columns, ([row.get(c) for c in columns] for row in rows))
    return out.getvalue()


def json_text(rows: Sequence[dict], columns: Sequence[str]) -> str:
    return json.dumps([{c: _plain(row.get(c)) for c in columns} for row in rows], indent=2, ensure_ascii=False) + "\n"


def render(
    rows: Sequence[dict],
    columns: Sequence[str],
    fmt: str,
    shares: Sequence[ShareLine] | None = None,
    with_shares: bool = False,
) -> str:
    """The rows as ``fmt`` (``csv`` or ``json``) writes them.

    ``shares`` (not None) makes the rows a backlink report: JSON an object of
    the rows and the shares by name (empty where the report gives none, as
    with ``--since``), CSV the rows alone unless ``with_shares``."""
    if fmt == "json":
        if shares is None:
            return json_text(rows, columns)
        listed = [{c: _plain(row.get(c)) for c in columns} for row in rows]
        named = {line.key: _plain(line.share) for line in shares}
        return json.dumps({"rows": listed, "shares": named}, indent=2, ensure_ascii=False) + "\n"
    if fmt == "csv":
        return csv_text([*rows, *share_rows(shares)] if with_shares else rows, columns)
    raise ValueError(f"format must be csv or json, not {fmt!r}")


# ------------------------------------------------------------------ the table

# Columns said after the numbers, as text: the row's subject (the first of these in the view), then the others.
TEXT_COLUMNS = (
    "url",
    "host",
    "site",
    "best_url",
    "title",
    "anchor",
    "target",
    "kind",
    "nofollow",
    "answered_by",
)
_SCORES = {"pagerank", "host_pagerank", "site_pagerank", "contribution", "best_pagerank", "estimate"}
_BUILDS = {"build", "first_seen", "last_seen", "lost_in"}  # numbers that name a build: no thousands separator
_MEAN_PLACES = {"visit_rank", "pagerank_rank"}  # places shared by ties: a whole or a half
_AGREEMENTS = {"spearman", "kendall", "top_10", "top_100", "top_1000"}  # correlations and overlaps, within -1..1
_BAR_CHAR = "█"
_WIDEST = 60  # characters of a cell before it is cut


def _cell(column: str, row: dict) -> str:
    value = _plain(row.get(column))
    if column == "bar":
        return _bar_text(row)
    if value is None:
        return "" if _is_share_line(row) else "-"
    if column == "share":
        return f"{value:.2%}"
    if column == "percentile":
        return display.percentile_text(value)
    if column in _SCORES:
        return f"{value:.4e}"
    if column == "spam_mass" or column in _AGREEMENTS:
        return f"{value:.4f}"
    if column in ("host_rank", "site_rank"):
        return f"#{value:,}"
    if column in _MEAN_PLACES:
        return f"{value:,.1f}".removesuffix(".0")
    if column == "log2_over":
        return f"{value:+.2f}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and column not in _BUILDS:
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.4e}"
    return str(value)


def _is_share_line(row: dict) -> bool:
    """A backlink report's line that is no page: a share of the PageRank from elsewhere."""
    return "kind" in row and row.get("url") is None


def _bar_text(row: dict) -> str:
    """The bar in characters; a row scored 0 or not ranked says so in words, as its empty bar cannot."""
    level = next((key for key in ("pagerank", "host_pagerank", "site_pagerank") if key in row), "pagerank")
    score = row.get(level)
    if score is None and row.get("estimate") is not None:  # a host's or site's rank answers for the page
        score = row["estimate"]
    if _is_share_line(row):
        return ""
    if score is None:
        return "not ranked yet"
    if not score > 0:
        return "0 (unreached by the rank source)"
    return _BAR_CHAR * max(int(row.get("bar") or 0), 1)


def _text(columns: Sequence[str], row: dict) -> tuple[str, str | None]:
    """The row's text after its numbers: its subject with what else is said of it, and its title (or None)."""
    subject = next((c for c in columns if c in ("url", "host", "site", "best_url")), None)
    parts = []
    if subject is not None and row.get(subject) is not None:
        parts.append(str(row[subject]))
    elif row.get("kind") is not None:
        parts.append(f"({row['kind']})")
    kind = row.get("kind")
    if kind == "nofollow" or ("kind" not in columns and "nofollow" in columns and row.get("nofollow")):
        parts.append("(nofollow)")
    for column in columns:
        if column in (subject, "title", "kind", "nofollow") or column not in TEXT_COLUMNS:
            continue
        value = row.get(column)
        if value is None:
            continue
        parts.append(f"“{value}”" if column == "anchor" else f"{column} {value}")
    title = row.get("title") if "title" in columns else None
    return "  ".join(parts), (str(title)[:100] if title else None)


def table_lines(rows: Sequence[dict], columns: Sequence[str]) -> list[str]:
    """The rows as an aligned table: the view's columns as its header, the numbers first, then each row's
    subject (URL, host or site) with its other text, and a page's title on a line of its own."""
    if not rows:
        return ["(nothing)"]
    numeric = [c for c in columns if c not in TEXT_COLUMNS and c != "bar"] + (["bar"] if "bar" in columns else [])
    cells = [[_cell(c, row) for c in numeric] for row in rows]
    widths = [min(max(len(c), *(len(line[i]) for line in cells)), _WIDEST) for i, c in enumerate(numeric)]
    right = [c != "bar" for c in numeric]
    texts = [c for c in columns if c in TEXT_COLUMNS]  # every column is named, the flags' too

    def line(values: Sequence[str], text: str) -> str:
        shown = [(v[:w].rjust(w) if r else v[:w].ljust(w)) for v, w, r in zip(values, widths, right)]
        return "  ".join([*shown, text]).rstrip()

    out = [line(numeric, " / ".join(texts))]
    blank = [""] * len(numeric)
    for row, values in zip(rows, cells):
        text, title = _text(columns, row)
        out.append(line(values, text))
        if title:
            out.append(line(blank, title))
    return out


# ------------------------------------------------------------------ the store's description (`rankstore info`)

FILES_SHOWN = 10  # files at URLs listed for a build in the text (all of them in JSON)


def human_bytes(count: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} TiB"


def store_text(details: dict, fmt: str) -> str:
    """``Store.info()`` as ``rankstore info --format FMT`` writes it: JSON (every file at a URL), or lines to
    read (``table``: counts, then each build and ranking on a line, a build's first files under it)."""
    if fmt == "json":
        return json.dumps(details, indent=2, ensure_ascii=False) + "\n"
    if fmt != "table":
        raise ValueError(f"format must be table or json, not {fmt!r}")
    lines = [
        f"store:    {details['path']} ({human_bytes(details['size_bytes'])}, schema {details['schema_version']})",
        f"pages:    {details['pages']:,} ({details['crawled_pages']:,} crawled, "
        f"{details['pages'] - details['crawled_pages']:,} only linked to) on {details['hosts']:,} host(s)",
        f"links:    {details['links']:,} ({details['nofollow_links']:,} nofollow)",
    ]
    for level in ("host", "site"):  # what the store numbers, and what the newest ranking of the level scores
        count = details["hosts_numbered"] if level == "host" else details["sites"]
        ranked = details[f"{level}s_ranked"]
        said = f"{count:,} numbered" + (
            f", {ranked['nodes']:,} ranked by {ranked['ranking']} v{ranked['version']}" if ranked else ""
        )
        if level == "site" and details["site_links"]:
            said += f" ({details['site_links']:,} site links from a domain graph)"
        lines.append(f"{level}s:    {said}")
    lines.append(f"builds:   {len(details['builds'])}")
    for item in details["builds"]:
        skipped = f", {item['skipped']:,} skipped" if item["skipped"] else ""
        lines.append(
            f"  #{item['id']} {item['started_at']} {item['status']}: {item['pages']:,} pages, "
            f"{item['links']:,} links{skipped} from {', '.join(item['sources'])}"
        )
        lines += _file_lines(item["files"])
    lines.append(f"rankings: {len(details['rankings'])}")
    for item in details["rankings"]:
        built = f" of build {item['build']}" if item["build"] is not None else ""
        scored = f"{item['scored']:,} of " if item["scored"] is not None and item["scored"] != item["pages"] else ""
        lines.append(
            f"  {item['name']} v{item['version']} {item['created_at']}: {scored}{item['pages']:,} {item['level']}s"
            f"{' scored' if scored else ''}{built}, {item['iterations']} iterations"
        )
        if item["stale"]:
            lines.append(f"    stale: {item['stale']}")
    if "space" in details:
        lines.append("space:")
        for part in details["space"]:
            per_link = f", {part['bytes_per_link']:,.2f} B a link" if part["bytes_per_link"] is not None else ""
            lines.append(
                f"  {part['part'] + ':':<13} {human_bytes(part['bytes']):>10} {100 * part['share']:5.1f}%{per_link}"
            )
    return "\n".join(lines) + "\n"


def _file_lines(files: list[dict]) -> list[str]:
    """The files at URLs a build took whole, under it."""
    if not files:
        return []
    size = sum(item["size"] for item in files)
    unreadable = sum(1 for item in files if item["unreadable"])
    damaged = f", {unreadable:,} with records that could not be read" if unreadable else ""
    lines = [f"    {len(files):,} file(s) at URLs taken whole ({human_bytes(size)}{damaged}):"]
    for item in files[:FILES_SHOWN]:
        note = f", {item['unreadable']:,} unreadable" if item["unreadable"] else ""
        lines.append(f"      {item['name']} ({item['size']:,} bytes, {item['checksum']}{note})")
    if len(files) > FILES_SHOWN:
        lines.append(f"      ... and {len(files) - FILES_SHOWN:,} more (--format json lists them all)")
    return lines


# ------------------------------------------------------------------ a ranking's summary (`rankstore stats`)


def best_first(scores: np.ndarray) -> np.ndarray:
    """A ranking's scores sorted best first, as its summary and its distribution plot take them."""
    return np.sort(scores)[::-1]


def ranking_lines(ranking: Ranking, scores: np.ndarray) -> list[str]:
    """What ``rankstore stats`` says of a version: its size and convergence, its parameters, and its scores'
    spread (``scores`` best first, :func:`best_first`)."""
    final = f"final L1 residual {ranking.residuals[-1]:.2e}" if ranking.residuals else "no residual recorded"
    return [
        f"{ranking.name} v{ranking.version} ({ranking.created_at}): {ranking.pages:,} pages, "
        f"{ranking.iterations} iterations, {final}",
        f"params: {json.dumps(ranking.params, sort_keys=True)}",
        f"scores: max {scores[0]:.4e}, median {np.median(scores):.4e}, min {scores[-1]:.4e}, "
        f"sum {scores.sum():.6f}; top 1% hold {scores[: max(1, len(scores) // 100)].sum():.1%}",
    ]
