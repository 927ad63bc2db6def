"""Named moments of a build and a ranking at which a test stops the process, to kill it there.

``RANKSTORE_TEST_STOP_AT`` names moments, comma-separated (``pages-parsed,graph-links``): at the first
pass of each, the process writes ``stopped at NAME`` to its standard error and stops itself (SIGSTOP),
for the test to copy its files and then let it go on (SIGCONT) or kill it (tests/test_kill_build.py).
Unset, a moment costs one look in an empty set.  The moments, in the order a run meets them:

* ``pages-parsed``: a batch of parsed pages handed to the writer, before the build's first commit
* ``pages-written``: a batch of pages committed, the next being parsed
* ``graph-vertices``: a graph's block of URLs numbered and committed, its links not yet written
* ``graph-links``: a graph's links written and committed, the build's other sources still to come
* ``finish-indexed``, ``finish-derived``, ``finish-numbered``: inside the build's last transaction, the pages
  indexed; the in-links derived; the hosts and sites numbered (the build not yet marked complete)
* ``finish-committed``: the build's last transaction committed, its log not yet copied into the store
* ``rank-solved``: a ranking solved, nothing of it written
* ``rank-written``: a ranking's blocks written, its transaction not yet committed
"""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["STOP_AT", "stop_at"]

STOP_AT = "RANKSTORE_TEST_STOP_AT"
_asked = {name for name in os.environ.get(STOP_AT, "").split(",") if name}


def stop_at(name: str) -> None:
    """Stop this process here if ``RANKSTORE_TEST_STOP_AT`` names ``name`` (the first time only)."""
    if name in _asked:
        _asked.discard(name)
        sys.stderr.write(f"stopped at {name}\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGSTOP)
