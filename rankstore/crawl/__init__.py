"""A crawler that fetches the most important pages first (the paper's section 7.2), on Scrapy.

:mod:`.frontier` orders the URLs known (PageRank of the graph known so far, backlink count, or breadth
first) and simulates a crawl of a graph known ahead; :mod:`.run` fetches with Scrapy and writes WARC
segments (:mod:`.warcout`) that the store loads as it goes, by the build's own code.
"""

from .frontier import Frontier, Order, Scope, simulate, top_share
from .run import USER_AGENT, CrawlError, CrawlOptions, CrawlProgress, CrawlReport, StopReason, crawl
from .text import crawl_failure, crawl_lines, crawl_progress_line

__all__ = [
    "USER_AGENT",
    "CrawlError",
    "CrawlOptions",
    "CrawlProgress",
    "CrawlReport",
    "Frontier",
    "Order",
    "Scope",
    "StopReason",
    "crawl",
    "crawl_failure",
    "crawl_lines",
    "crawl_progress_line",
    "simulate",
    "top_share",
]
