"""The product's kernel: the C twin (``_fastproduct.row_sums``) against its Python reference, bit for bit.

The solver's own tests (test_solver.py) run on each twin; these hold the two to the same sums
on every kind of input, and the C one to refusing what would read past its arrays.
"""

from __future__ import annotations

import numpy as np
import pytest

from rankstore.solver import Graph, in_sums
from rankstore.solver import product as solver_product

assert solver_product._fastproduct is not None, "rankstore.solver._fastproduct did not build (no C compiler?)"
row_sums = solver_product._fastproduct.row_sums


def random_csr(rng, n: int, m: int, pointers) -> tuple[np.ndarray, np.ndarray]:
    rows = np.sort(rng.integers(0, n, m))
    indptr = np.zeros(n + 1, dtype=pointers)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return indptr, rng.integers(0, n, m).astype(np.int32)


def both(indptr, sources, values, z, start, stop, fill):
    python, c = np.full(len(z), np.nan, dtype=z.dtype), np.full(len(z), np.nan, dtype=z.dtype)
    solver_product.python_row_sums(indptr, sources, values, z, python, start, stop, fill)
    solver_product.c_row_sums(indptr, sources, values, z, c, start, stop, fill)
    return python, c


@pytest.mark.parametrize("real", [np.float64, np.float32])
@pytest.mark.parametrize("pointers", [np.int32, np.int64])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("fill", ["scalar", "array", "numpy scalar", "0-d array"])
def test_the_c_kernel_gives_the_python_kernels_sums_bit_for_bit(real, pointers, weighted, fill):
    rng = np.random.default_rng(7)
    for _ in range(60):
        n, m = int(rng.integers(1, 300)), int(rng.integers(0, 3000))
        indptr, sources = random_csr(rng, n, m, pointers)
        z = rng.random(n).astype(real)
        values = rng.random(m).astype(real) if weighted else None
        filled = {
            "scalar": 0.1,
            "array": rng.random(n),  # float64: each twin casts it to z's type
            "numpy scalar": np.float32(0.1),
            "0-d array": np.array(0.1),
        }[fill]
        start = int(rng.integers(0, n))
        stop = int(rng.integers(start, n + 1))
        python, c = both(indptr, sources, values, z, start, stop, filled)
        assert np.array_equal(python, c, equal_nan=True)  # rows outside [start, stop) untouched by both


@pytest.mark.parametrize("real", [np.float64, np.float32])
@pytest.mark.parametrize("pointers", [np.int32, np.int64])
@pytest.mark.parametrize("weighted", [False, True])
def test_the_c_kernel_prefetching_a_z_past_the_cache_gives_the_same_sums(real, pointers, weighted):
    # past 8 MiB of z the C kernel asks for sources ahead of their use: rows short and long, and the
    # last links of a range (no prefetch past its end)
    rng = np.random.default_rng(9)
    n = (9 << 20) // np.dtype(real).itemsize
    m = 2 * n
    rows = np.sort(np.concatenate([rng.integers(0, n, m - 5000), np.full(5000, n // 2)]))
    indptr = np.zeros(n + 1, dtype=pointers)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    sources = rng.integers(0, n, m).astype(np.int32)
    z = rng.random(n).astype(real)
    values = rng.random(m).astype(real) if weighted else None
    for start, stop in ((0, n), (n // 2, n // 2 + 1), (n - 3, n)):
        python, c = both(indptr, sources, values, z, start, stop, 0.5)
        assert np.array_equal(python, c, equal_nan=True)


def test_rows_of_nothing_are_the_fill_and_no_rows_write_nothing():
    indptr, sources, z = np.zeros(4, dtype=np.int32), np.zeros(0, dtype=np.int32), np.ones(3)
    python, c = both(indptr, sources, None, z, 0, 3, 0.25)
    assert python.tolist() == c.tolist() == [0.25] * 3
    python, c = both(indptr, sources, None, z, 2, 2, 0.25)
    assert np.isnan(python).all() and np.isnan(c).all()


@pytest.mark.parametrize(
    "indptr, sources, z, out, rows, fill, values, message",
    [
        ([0, 2], [0, 5], 3, 1, (0, 1), 0.0, None, "a row pointer or a source is out of range"),  # source past z
        ([0, 2], [0, -1], 3, 1, (0, 1), 0.0, None, "a row pointer or a source is out of range"),
        ([0, 3, 2], [0, 1, 2], 3, 2, (0, 2), 0.0, None, "a row pointer or a source is out of range"),  # past last
        ([0, 3, 1, 3], [0, 1, 2], 3, 3, (0, 3), 0.0, None, "a row pointer or a source is out of range"),  # goes back
        ([0, 2], [0, 1], 3, 1, (0, 2), 0.0, None, "rows out of range"),
        ([0, 2], [0, 1], 3, 1, (-1, 1), 0.0, None, "rows out of range"),
        ([0, 1, 2], [0, 1], 3, 2, (1, 0), 0.0, None, "rows out of range"),
        ([0, 2], [0, 1], 3, 0, (0, 1), 0.0, None, "rows out of range"),  # out too short
        ([0, 1, 2], [0, 1], 3, 2, (0, 2), np.zeros(1), None, "rows out of range"),  # fill too short
        ([0, 4], [0, 1], 3, 1, (0, 1), 0.0, None, "links out of range"),
        ([0, 2], [0, 1], 3, 1, (0, 1), 0.0, np.ones(1), "links out of range"),  # values too short
        ([-1, 2], [0, 1], 3, 1, (0, 1), 0.0, None, "links out of range"),
    ],
)
def test_the_c_kernel_refuses_what_would_read_past_its_arrays(indptr, sources, z, out, rows, fill, values, message):
    with pytest.raises(IndexError, match=message):
        row_sums(
            np.array(indptr, np.int32), np.array(sources, np.int32), values, np.ones(z), np.zeros(out), *rows, fill
        )


@pytest.mark.parametrize(
    "change",
    [
        dict(out=np.zeros(2, np.float32)),  # another float type than z
        dict(values=np.ones(1, np.float32)),
        dict(indices=np.array([0], np.int64)),
        dict(indptr=np.array([0, 1], np.int16)),
        dict(z=np.ones(2, ">f8")),  # not the machine's byte order
        dict(z=np.frombuffer(b"\0" + np.ones(2).tobytes(), dtype=np.float64, offset=1)),  # misaligned
    ],
)
def test_the_c_kernel_refuses_arrays_of_another_kind(change):
    arrays = dict(indptr=np.array([0, 1], np.int32), indices=np.array([0], np.int32), values=None, z=np.ones(2))
    arrays["out"] = np.zeros(2)
    arrays.update(change)
    with pytest.raises(TypeError, match="one float type"):
        row_sums(arrays["indptr"], arrays["indices"], arrays["values"], arrays["z"], arrays["out"], 0, 1, 0.0)


def test_in_sums_takes_a_graph_of_any_integer_arrays():
    # Graph is a plain dataclass: int64 or strided sources reach the kernel as int32, contiguous
    rng = np.random.default_rng(4)
    n, m = 50, 400
    graph = Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), n)
    values = rng.random(n)
    expected = in_sums(graph, values)
    wide = Graph(graph.n, graph.indptr.astype(np.int64), graph.indices.astype(np.int64), None)
    strided = Graph(graph.n, graph.indptr, np.repeat(graph.indices, 2)[::2], None)
    assert not strided.indices.flags.c_contiguous
    assert np.array_equal(in_sums(wide, values), expected)
    assert np.array_equal(in_sums(strided, values), expected)


@pytest.mark.parametrize("pointers", [np.int32, np.int64])
@pytest.mark.parametrize("weighted", [False, True])
def test_the_c_row_gather_gives_scipys_rows(pointers, weighted):
    """``gather_rows`` (the product's setup, so that a rank imports no scipy) copies each row's links and values
    as scipy's csr_row_index does, rows in any order, any repeated or left out."""
    from scipy.sparse._sparsetools import csr_row_index

    rng = np.random.default_rng(11)
    for _ in range(40):
        n, m = int(rng.integers(1, 300)), int(rng.integers(0, 3000))
        indptr, sources = random_csr(rng, n, m, pointers)
        values = rng.random(m) if weighted else None
        rows = rng.integers(0, n, int(rng.integers(0, 2 * n))).astype(pointers)
        size = int(np.diff(indptr)[rows].sum())
        got, got_values = np.full(size, -1, dtype=np.int32), None if values is None else np.full(size, np.nan)
        solver_product._fastproduct.gather_rows(rows, indptr, sources, values, got, got_values)
        # scipy's kernel takes one index type, and copies a value beside each index
        wanted, wanted_values = np.empty(size, dtype=pointers), np.empty(size)
        given = sources.astype(pointers) if values is None else values
        csr_row_index(
            len(rows), rows, indptr, sources.astype(pointers), given.astype(np.float64), wanted, wanted_values
        )
        assert np.array_equal(got, wanted)
        if values is not None:
            assert np.array_equal(got_values, wanted_values)


def test_the_c_row_gather_refuses_what_would_read_or_write_past_its_arrays():
    indptr, sources = np.array([0, 2, 3], dtype=np.int64), np.array([1, 0, 1], dtype=np.int32)
    out = np.empty(3, dtype=np.int32)
    solver_product._fastproduct.gather_rows(np.array([1, 0], dtype=np.int64), indptr, sources, None, out, None)
    assert out.tolist() == [1, 1, 0]
    for rows, room in (([2], 3), ([-1], 3), ([0, 1], 2)):
        with pytest.raises(IndexError):
            solver_product._fastproduct.gather_rows(
                np.array(rows, dtype=np.int64), indptr, sources, None, np.empty(room, dtype=np.int32), None
            )
    with pytest.raises(IndexError):  # a row pointer past the links
        solver_product._fastproduct.gather_rows(
            np.array([1]), np.array([0, 2, 9]), sources, None, np.empty(9, dtype=np.int32), None
        )
    with pytest.raises(TypeError):  # values without a place for them
        solver_product._fastproduct.gather_rows(np.array([0]), indptr, sources, np.ones(3), out, None)
