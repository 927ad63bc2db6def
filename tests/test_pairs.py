"""An edge list's vertex table: the Python reference and its C twin give the same answers."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankstore.sources import pairs
from rankstore.sources.pairs import MAX_TOKEN, VerticesFast, VerticesPython

assert pairs._fastpairs is not None, "rankstore.sources._fastpairs did not build (is a C compiler installed?)"
TWINS = [pytest.param(VerticesPython, id="python"), pytest.param(VerticesFast, id="c")]


def answer(found):
    return None if found is None else (found[0], found[1].tolist())


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize(
    "block, expected",
    [
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
    ],
)
def test_exact_answers(twin, block, expected):
    assert answer(twin().split(block)) == expected


@pytest.mark.parametrize("twin", TWINS)
def test_numbers_carry_across_blocks_and_a_refused_block_changes_nothing(twin):
    vertices = twin()
    assert answer(vertices.split(b"a\tb\nb\tc")) == ([b"a", b"b", b"c"], [0, 1, 1, 2])
    assert vertices.split(b"d\te\nf\tg h") is None  # names d..g seen, then refused: forgotten
    assert len(vertices) == 3
    assert answer(vertices.split(b"c\td\nd\ta")) == ([b"d"], [2, 3, 3, 0])
    assert answer(vertices.add([b"e", b"a", b"e", b"f"])) == ([b"e", b"f"], [4, 0, 4, 5])
    assert answer(vertices.split(memoryview(b"f\tg"))) == ([b"g"], [5, 6])  # any buffer
    assert len(vertices) == 7


TOKENS = st.sampled_from([b"a", b"b", b"http://x/", b"\xc3\xa9", b"#", b"1"])
SEPARATORS = st.sampled_from([b"\t", b" ", b"\n", b"\r", b"\x0b", b"\r\n", b"  "])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.one_of(TOKENS, SEPARATORS), max_size=30), max_size=5))
def test_twins_agree_on_any_blocks(blocks):
    python, fast = VerticesPython(), VerticesFast()
    for parts in blocks:
        block = b"".join(parts)
        assert answer(fast.split(block)) == answer(python.split(block))
        assert len(fast) == len(python)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            TOKENS.filter(lambda t: t != b"#"), TOKENS.filter(lambda t: t != b"#"), st.sampled_from([b"\t", b" "])
        ),
        min_size=1,
        max_size=40,
    )
)
def test_twins_agree_on_plain_pairs(lines):
    block = b"\n".join(a + sep + b for a, b, sep in lines)
    python, fast = answer(VerticesPython().split(block)), answer(VerticesFast().split(block))
    assert fast == python and fast is not None
    names, numbers = fast
    assert [names[i] for i in numbers] == block.split()


def test_the_c_twin_grows_past_many_names_and_keeps_memory_flat():
    import tracemalloc

    vertices = VerticesFast()
    block = b"\n".join(b"http://a.example/%d\thttp://b.example/%d" % (i, i % 7) for i in range(100_000))
    names, numbers = vertices.split(block)
    assert len(names) == 100_007 and numbers.dtype == np.int32
    assert [names[i] for i in numbers[:6]] == block.split()[:6]
    tracemalloc.start()
    for _ in range(50):
        new, again = vertices.split(block)
        assert new == [] and np.array_equal(again, numbers)
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert current < 2_000_000  # what one answer holds, not fifty


def test_the_c_twin_refuses_a_second_thread_while_it_splits():
    vertices = VerticesFast()
    block = b"\n".join(b"http://a.example/%d\thttp://b.example/%d" % (i, i) for i in range(300_000))
    errors: list[BaseException] = []
    thread = threading.Thread(target=lambda: vertices.split(block))
    thread.start()
    for _ in range(10_000):
        try:
            vertices.add([b"x"])
        except RuntimeError as error:
            errors.append(error)
            break
    thread.join()
    # the second thread either ran before or after the split, or was told plainly that it could not
    assert all("in use" in str(error) for error in errors)
    assert len(vertices) in (600_000, 600_001)
