"""An edge list's block of plain ``SRC DST`` lines taken apart: the hot loop of reading a large graph.

:func:`split_pairs` is the reference, in Python; ``rankstore.sources._fastpairs``
is its twin in C, used when it was built (``pip install`` with a compiler),
and held to the same answers by the tests, which run on both.
"""

from __future__ import annotations

import numpy as np

__all__ = ["split_pairs", "split_pairs_python", "MAX_TOKEN"]

MAX_TOKEN = 32 * 1024  # a longer token is left to the line-by-line path (which reports over-long lines)


def split_pairs_python(block: bytes) -> tuple[list[bytes], np.ndarray] | None:
    """The distinct tokens of ``block`` in order of first appearance, and each token's index among them.

    Only for a block whose every line is exactly ``A<sep>B``: one tab or one
    space between two non-empty tokens of at most MAX_TOKEN bytes, no ``#``
    anywhere, lines split by ``\\n`` (a ``\\r`` before it is dropped).
    Returns None for any other block, which the caller reads line by line.
    Indices come two per line (source, target), as int32.
    """
    count = block.count(b"\n") + 1
    tokens = block.split()
    if not (len(tokens) == 2 * count and block.count(b"\t") + block.count(b" ") == count and b"#" not in block
            and max(map(len, tokens), default=0) <= MAX_TOKEN):
        return None
    distinct = dict.fromkeys(tokens)
    index = dict(zip(distinct, range(len(distinct))))
    return list(distinct), np.fromiter(map(index.__getitem__, tokens), dtype=np.int32, count=len(tokens))


try:
    from ._fastpairs import split_pairs  # type: ignore[import-not-found]
except ImportError:  # no compiler at install time: the Python twin
    split_pairs = split_pairs_python
