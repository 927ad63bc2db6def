"""The rewriter's scanner in C (``_fastscan.c``): the types of its functions, each answering as its namesake in
the pure-Python twin ``_scan_python`` does; the C one also reads bytes in an ASCII-compatible encoding."""

from collections.abc import Sequence
from typing import AnyStr, overload

from ._scan_python import Edit, Link, Marks, Placed, ScanAnswer

@overload
def scan(text: str, /) -> ScanAnswer: ...
@overload
def scan(text: bytes, encoding: str, /) -> ScanAnswer: ...
def splice(data: AnyStr, edits: Sequence[Edit], /) -> AnyStr: ...
def place(links: Sequence[Link], table: Marks, own: Marks, nofollow_all: bool, /) -> Placed: ...
