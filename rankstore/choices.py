"""The choices the library offers, each named once, in a module light enough for the CLI to import.

The modules that act on a choice import its tuple from here (the solver its
dangling strategies and methods, ranking its levels and engines, the views
their formats and groupings, export its tables), and ``rankstore``'s options
take their ``click.Choice`` from the same tuples: nothing to keep equal by
hand, and no numpy, scipy or pyarrow to load before ``--help`` answers.
"""

from __future__ import annotations

__all__ = [
    "DANGLING",
    "METHODS",
    "LEVELS",
    "ENGINES",
    "EXTRACT_ENGINES",
    "OUTPUT_FORMATS",
    "INFO_FORMATS",
    "GROUPS",
    "EXPORT_WHAT",
    "EXPORT_TABLES",
    "EXPORT_FORMATS",
    "SCHEMES",
    "FORMATS",
    "SORTS",
    "LINK_WEIGHTS",
    "CRAWL_ORDERS",
]

DANGLING = ("uniform", "source", "remove", "leak")  # what a page without out-links does with its rank
# the scipy engine's solvers, the default first: auto is BiCGSTAB unless memory binds, then the power method
METHODS = ("auto", "bicgstab", "power")
LEVELS = ("page", "host", "site")  # rank pages, the host graph, or the site (registered domain) graph
ENGINES = ("scipy", "spark")  # the scipy engine on this machine; Apache Spark past it
EXTRACT_ENGINES = ("local", "spark")  # where `rankstore extract` reads crawl files: processes here, or Spark
OUTPUT_FORMATS = ("table", "csv", "json")  # how the CLI writes a view's rows
INFO_FORMATS = ("table", "json")  # how `rankstore info` writes the store's description (not rows: no CSV)
GROUPS = ("page", "host", "site")  # a view's rows: one per linking page, per linking host or per linking site
EXPORT_TABLES = ("links", "pages", "hosts", "sites")  # the whole store's tables
EXPORT_WHAT = ("scores", *EXPORT_TABLES)  # ...and a ranking's scores
EXPORT_FORMATS = ("csv", "parquet")
SCHEMES = ("https", "http")  # the scheme of a Common Crawl host's root page
FORMATS = ("warc", "wat", "html", "edges", "ccgraph", "ccranks", "record", "extracted")  # what `rankstore build` reads
LINK_WEIGHTS = ("uniform", "position")  # an HTML page's links: each weighs 1, or by where it stands on the page
SORTS = ("pagerank", "contribution")  # the order of a page's backlinks: by their PageRank, or what they pass
CRAWL_ORDERS = ("pagerank", "backlinks", "breadth")  # what `rankstore crawl` fetches first (rankstore.crawl.Order)
