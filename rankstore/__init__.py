"""rankstore: a PageRank store in SQLite, filled from crawls and ranked offline."""

__version__ = "0.1.0"
