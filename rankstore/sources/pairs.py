"""An edge list's block of plain ``SRC DST`` lines taken apart: the hot loop of reading a large graph.

:func:`split_pairs` is the reference, in Python; ``rankstore.sources._fastpairs``
is its twin in C, used when it was built (``pip install`` with a compiler),
and held to the same answers by the tests, which run on both.
"""

from __future__ import annotations

import numpy as np

__all__ = ["split_pairs", "split_pairs_python", "split_pairs_fast", "MAX_TOKEN"]

MAX_TOKEN = 32 * 1024  # a longer token is left to the line-by-line path (which reports over-long lines)


_NOT_SEPARATORS = bytes(c for c in range(256) if c not in b"\t \n")


def split_pairs_python(block: bytes) -> tuple[list[bytes], np.ndarray] | None:
    """The distinct tokens of ``block`` in order of first appearance, and each token's index among them.

    Only for a block whose every line is exactly ``A<sep>B``: one tab or one
    space between two tokens (as ``bytes.split()`` finds them) of at most
    MAX_TOKEN bytes, no ``#`` anywhere, lines split by ``\n`` (a ``\r``
    before it is dropped).  Returns None for any other block, which the
    caller reads line by line.  Indices come two per line (source, target),
    as int32.
    """
    count = block.count(b"\n") + 1
    # one separator a line: the block's tabs, blanks and newlines alone read "\t\n\t\n...\t"
    if block.translate(None, _NOT_SEPARATORS).replace(b" ", b"\t") != b"\t\n" * (count - 1) + b"\t":
        return None
    tokens = block.split()
    if len(tokens) != 2 * count or b"#" in block or max(map(len, tokens)) > MAX_TOKEN:
        return None
    distinct = dict.fromkeys(tokens)
    index = dict(zip(distinct, range(len(distinct))))
    return list(distinct), np.fromiter(map(index.__getitem__, tokens), dtype=np.int32, count=len(tokens))


try:
    from . import _fastpairs  # type: ignore[attr-defined]
except ImportError:  # no compiler at install time: the Python twin
    _fastpairs = None


def split_pairs_fast(block: bytes) -> tuple[list[bytes], np.ndarray] | None:
    """:func:`split_pairs_python`, in C."""
    found = _fastpairs.split_pairs(block)
    return None if found is None else (found[0], np.frombuffer(found[1], dtype=np.int32))


split_pairs = split_pairs_python if _fastpairs is None else split_pairs_fast
