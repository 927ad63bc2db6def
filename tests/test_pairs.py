"""The edge-list block splitter: the Python reference and its C twin give the same answers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankstore.sources import pairs
from rankstore.sources.pairs import MAX_TOKEN, split_pairs_python

assert pairs._fastpairs is not None, "rankstore.sources._fastpairs did not build (is a C compiler installed?)"
TWINS = [pytest.param(split_pairs_python, id="python"), pytest.param(pairs.split_pairs_fast, id="c")]


def answer(split, block):
    found = split(block)
    return None if found is None else (found[0], found[1].tolist())


@pytest.mark.parametrize("split", TWINS)
@pytest.mark.parametrize("block, expected", [
    (b"a\tb\nb\tc\na\tc", ([b"a", b"b", b"c"], [0, 1, 1, 2, 0, 2])),
    (b"a b\nb a", ([b"a", b"b"], [0, 1, 1, 0])),
    (b"a\tb\r\nc\td\r", ([b"a", b"b", b"c", b"d"], [0, 1, 2, 3])),  # CRLF endings
    (b"x\tx", ([b"x"], [0, 0])),
    ("é\tü\nü\té".encode(), (["é".encode(), "ü".encode()], [0, 1, 1, 0])),
    (b"a\x00b\tc", ([b"a\x00b", b"c"], [0, 1])),  # NUL inside a token is part of it
    (b"x" * MAX_TOKEN + b"\ty", ([b"x" * MAX_TOKEN, b"y"], [0, 1])),
    (b"x" * (MAX_TOKEN + 1) + b"\ty", None),  # a token too long: line by line
    (b"a\tb\n# comment", None),
    (b"a\tb#c", None),
    (b"a\tb\n\nc\td", None),  # a blank line
    (b"a\tb\tc\nd", None),  # 3 fields then 1: as many tokens as pairs, but not pairs
    (b"a  b", None),  # a run of blanks
    (b" a\tb", None),  # leading blank: two separators
    (b"a\tb\n", None),  # a trailing newline makes an empty last line
    (b"", None),
    (b"a\x0bb\tc", None),  # \x0b splits a token but is not a counted separator
])
def test_exact_answers(split, block, expected):
    assert answer(split, block) == expected


TOKENS = st.sampled_from([b"a", b"b", b"http://x/", b"\xc3\xa9", b"#", b"1"])
SEPARATORS = st.sampled_from([b"\t", b" ", b"\n", b"\r", b"\x0b", b"\r\n", b"  "])


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.one_of(TOKENS, SEPARATORS), max_size=30))
def test_twins_agree_on_any_block(parts):
    block = b"".join(parts)
    assert answer(pairs.split_pairs_fast, block) == answer(split_pairs_python, block)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(TOKENS.filter(lambda t: t != b"#"), TOKENS.filter(lambda t: t != b"#"),
                          st.sampled_from([b"\t", b" "])), min_size=1, max_size=40))
def test_twins_agree_on_plain_pairs(lines):
    block = b"\n".join(a + sep + b for a, b, sep in lines)
    python, fast = answer(split_pairs_python, block), answer(pairs.split_pairs_fast, block)
    assert fast == python and fast is not None
    distinct, indices = fast
    assert [distinct[i] for i in indices] == block.split()


def test_the_c_twin_keeps_memory_flat():
    import tracemalloc

    block = b"".join(b"http://a.example/%d\thttp://b.example/%d\n" % (i, i % 7) for i in range(2000)) + b"x\ty"
    pairs.split_pairs_fast(block)
    tracemalloc.start()
    for _ in range(2000):
        distinct, indices = pairs.split_pairs_fast(block)
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert current < 2_000_000  # what one answer holds, not two thousand
    assert isinstance(indices, np.ndarray) and indices.dtype == np.int32 and len(distinct) == 2009
