"""An edge list's vertices numbered as its blocks are read: the hot loop of reading a large graph.

:class:`VerticesPython` is the reference; ``rankstore.sources._fastpairs.Vertices``
is its twin in C (wrapped as :class:`VerticesFast`), used when it was built
(``pip install`` with a compiler), and held to the same answers by the tests,
which run on both.  The C twin takes a block apart without holding the GIL,
so a reading thread numbers the next block while the caller stores this one.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Vertices", "VerticesPython", "VerticesFast", "MAX_TOKEN"]

MAX_TOKEN = 32 * 1024  # a longer token is left to the line-by-line path (which reports over-long lines)


_NOT_SEPARATORS = bytes(c for c in range(256) if c not in b"\t \n")


class VerticesPython:
    """Vertex names (byte strings) numbered 0, 1, 2... in order of first appearance, across calls."""

    def __init__(self) -> None:
        self._number: dict[bytes, int] = {}

    def __len__(self) -> int:
        return len(self._number)

    def split(self, block: bytes) -> tuple[list[bytes], np.ndarray] | None:
        """A block of plain pairs: (the names new to the table, in order; each token's number as int32).

        Only for a block whose every line is exactly ``A<sep>B``: one tab or one
        space between two tokens (as ``bytes.split()`` finds them) of at most
        MAX_TOKEN bytes, no ``#`` anywhere, lines split by ``\\n`` (a ``\\r``
        before it is dropped).  Returns None for any other block, which the
        caller reads line by line, and leaves the table as it was.  Numbers
        come two per line (source, target).
        """
        block = bytes(block)
        count = block.count(b"\n") + 1
        # one separator a line: the block's tabs, blanks and newlines alone read "\t\n\t\n...\t"
        if block.translate(None, _NOT_SEPARATORS).replace(b" ", b"\t") != b"\t\n" * (count - 1) + b"\t":
            return None
        tokens = block.split()
        if len(tokens) != 2 * count or b"#" in block or max(map(len, tokens)) > MAX_TOKEN:
            return None
        return self.add(tokens)

    def add(self, tokens: list[bytes]) -> tuple[list[bytes], np.ndarray]:
        """(the names among ``tokens`` new to the table, in order; each token's number as int32)."""
        number = self._number
        new = [token for token in dict.fromkeys(tokens) if token not in number]
        number.update(zip(new, range(len(number), len(number) + len(new))))
        return new, np.fromiter(map(number.__getitem__, tokens), dtype=np.int32, count=len(tokens))


try:
    from . import _fastpairs  # type: ignore[attr-defined]
except ImportError:  # no compiler at install time: the Python twin
    _fastpairs = None


class VerticesFast:
    """:class:`VerticesPython`, in C."""

    def __init__(self) -> None:
        self._table = _fastpairs.Vertices()

    def __len__(self) -> int:
        return len(self._table)

    def split(self, block) -> tuple[list[bytes], np.ndarray] | None:
        found = self._table.split(block)
        return None if found is None else (found[0], np.frombuffer(found[1], dtype=np.int32))

    def add(self, tokens: list[bytes]) -> tuple[list[bytes], np.ndarray]:
        new, numbers = self._table.add(tokens)
        return new, np.frombuffer(numbers, dtype=np.int32)


Vertices = VerticesPython if _fastpairs is None else VerticesFast
