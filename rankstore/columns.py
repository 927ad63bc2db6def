"""Export's columns, each declared once with its type and meaning, for every ``rankstore export --what``.

:mod:`rankstore.export` builds its Arrow schemas from these declarations,
:mod:`rankstore.views` names a ranking's score columns by them, and
``rankstore export --help`` lists them (:func:`help_text`): what the help
says is what the file holds.  Light enough for the CLI to import before
``--help`` answers (no pyarrow).
"""

from __future__ import annotations

from dataclasses import dataclass

from .choices import EXPORT_TABLES, LEVELS

__all__ = [
    "Column",
    "TABLE_COLUMNS",
    "SCORE_COLUMNS",
    "SPAM_MASS",
    "names",
    "declared",
    "help_text",
]


@dataclass(frozen=True)
class Column:
    """One column of an export: its name (CSV's header, Parquet's field), its Arrow type's name and what it
    holds."""

    name: str
    kind: str  # int32, int64, float64, bool or string: the Arrow type (export.ARROW_TYPES)
    meaning: str


def _scores(subject: Column, score: str, rank: str, members: tuple[Column, ...]) -> tuple[Column, ...]:
    """A ranking's columns, best first: the node, its score and the scales shown beside it."""
    return (
        subject,
        Column(score, "float64", "its score in the ranking (they sum to 1)"),
        Column("algorithm1", "float64", "the score times the ranking's nodes (the average node is 1)"),
        Column("percentile", "float64", "the share of nodes scoring at most as much, 0-100 (ties alike)"),
        Column("toolbar", "int64", "Google's toolbar scale, 0-10"),
        Column(rank, "int64", "1 + the nodes scoring more (ties share it)"),
        *members,
    )


SCORE_COLUMNS: dict[str, tuple[Column, ...]] = {  # --what scores, by the ranking's level
    "page": _scores(
        Column("url", "string", "the page"),
        "pagerank",
        "rank",
        (
            Column("inlinks", "int64", "other pages linking to it, followed or not"),
            Column("title", "string", "its title, empty where not crawled"),
        ),
    ),
    "host": _scores(
        Column("host", "string", "the host"),
        "host_pagerank",
        "host_rank",
        (
            Column("pages", "int64", "its pages in the store"),
            Column("inlinks", "int64", "links to it from other hosts"),
        ),
    ),
    "site": _scores(
        Column("site", "string", "the site (registered domain)"),
        "site_pagerank",
        "site_rank",
        (
            Column("hosts", "int64", "its hosts: the store's, or a domain graph's larger count; empty: not known"),
            Column("inlinks", "int64", "links to it from other sites"),
        ),
    ),
}
SPAM_MASS = Column("spam_mass", "float64", "TrustRank's Spam Mass, (p - p')/p: after a page ranking's columns")

TABLE_COLUMNS: dict[str, tuple[Column, ...]] = {  # --what links, pages, hosts, sites: the whole store's tables
    "links": (
        Column("src", "int32", "the linking page's id"),
        Column("dst", "int32", "the linked page's id"),
        Column("weight", "float64", "the link's weight (1 but for a weighted edge list or --link-weights position)"),
        Column("nofollow", "bool", "nofollow, ugc or sponsored: it gives no PageRank"),
        Column("first_build", "int32", "the build that first saw it, empty where not known"),
    ),
    "pages": (
        Column("id", "int32", "the page's id, as links name it"),
        Column("url", "string", "its URL"),
        Column("host", "string", "its host"),
        Column("host_id", "int32", "its host's id, as hosts name it"),
        Column("title", "string", "its title, empty where not crawled"),
        Column("crawled", "bool", "whether a crawl fetched it (else only linked to)"),
        Column("status", "int32", "the HTTP status of its newest capture"),
        Column("first_build", "int32", "the build that first saw it"),
        Column("last_build", "int32", "the build that last crawled it"),
    ),
    "hosts": (
        Column("id", "int32", "the host's id"),
        Column("name", "string", "the host"),
        Column("pages", "int64", "its pages"),
        Column("host_pagerank", "float64", "its score in the newest hostrank"),
        Column("host_rank", "int64", "1 + the hosts scoring more there"),
    ),
    "sites": (
        Column("id", "int32", "the site's id"),
        Column("name", "string", "the site (registered domain)"),
        Column("hosts", "int64", "its hosts: the store's, or a domain graph's larger count; empty: not known"),
        Column("site_pagerank", "float64", "its score in the newest siterank"),
        Column("site_rank", "int64", "1 + the sites scoring more there"),
    ),
}
assert set(TABLE_COLUMNS) == set(EXPORT_TABLES) and set(SCORE_COLUMNS) == set(LEVELS)


def names(columns: tuple[Column, ...]) -> list[str]:
    return [column.name for column in columns]


def declared(what: str, level: str = "page", spam_mass: bool = False) -> list[str]:
    """The header of ``rankstore export --what WHAT`` (for scores: of a ranking of ``level``, with Spam Mass
    for a TrustRank)."""
    if what != "scores":
        return names(TABLE_COLUMNS[what])
    return names(SCORE_COLUMNS[level]) + ([SPAM_MASS.name] if spam_mass and level == "page" else [])


def help_text() -> str:
    """The columns as ``rankstore export --help`` lists them: each --what's names, then what each name holds."""
    lines = ["\b", "Columns:"]
    for level, columns in SCORE_COLUMNS.items():
        head = "scores" if level == "page" else ""
        lines.append(f"  {head:<7} {level} ranking: {', '.join(names(columns))}")
        if level == "page":
            lines.append(f"  {'':<7} {'':<12}  + {SPAM_MASS.name} of a TrustRank")
    for what, columns in TABLE_COLUMNS.items():
        lines.append(f"  {what:<7} {', '.join(names(columns))}")
    return "\n".join(lines)
