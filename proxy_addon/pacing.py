"""Large pages take turns: a token bucket over the bytes of the large HTML bodies that the proxy holds.

mitmproxy reads, joins and writes a body it buffers in its event loop, at a
cost per byte that every other client waits behind.  Clients that fetch
multi-megabyte pages back to back would keep the loop busy with them, and
every other client's pages slow down, through plain mitmdump as through this
proxy (BENCHMARKS.md, "Large pages take turns").  So the bodies of
``LARGE_PAGE`` bytes or more (as they came, before any decoding) draw on one
bucket: it refills at ``pagerank_large_page_rate`` megabytes a second and holds
``burst`` bytes (``pagerank_max_body``).  A large page alone never waits; a run
of them waits its turn in the ``response`` hook, before its job.  A client that
waits makes its next request later, so the share of the loop that large pages
take stays bounded, and pages under ``LARGE_PAGE`` never wait.

This bounds clients that wait for each page before they ask for the next (a
browser, a crawler).  Many connections that each fetch one large page at once
are read by mitmproxy before any hook of ours: they still wait here, but their
bytes have crossed the loop already.
"""

from __future__ import annotations

__all__ = ["LARGE_PAGE", "Pacer"]

LARGE_PAGE = 1024 * 1024


class Pacer:
    """When a large page may go on: ``rate`` bytes a second on average, ``burst`` bytes at once.

    A token bucket kept as the moment it would be full again (``_full_at``):
    taking ``size`` bytes moves that moment ``size / rate`` later, and a page
    waits for as long as the bucket, after taking it, is more than ``burst``
    bytes short.  Pages wait in the order they asked.
    """

    def __init__(self, rate: float, burst: float):
        if rate <= 0 or burst < 0:
            raise ValueError("the rate must be positive and the burst not negative")
        self.rate = rate
        self.burst = burst
        self._full_at = float("-inf")

    def delay(self, size: int, now: float) -> float:
        """Take ``size`` bytes at ``now`` (seconds, any monotonic clock): how long to wait before going on."""
        if size < LARGE_PAGE:
            return 0.0
        self._full_at = max(self._full_at, now) + size / self.rate
        return max(0.0, self._full_at - now - self.burst / self.rate)
