"""The solver against the seeds' worked examples (exact), networkx and igraph."""

from __future__ import annotations

import igraph
import networkx as nx
import numpy as np
import pytest

import rankstore.solver as solvers
from rankstore.ranking import load_graph
from rankstore.solver import ConvergenceError, Graph, pagerank, pagerank_dense
from rankstore.solver import product as solver_product
from rankstore.store import Store

assert solver_product._fastproduct is not None, "rankstore.solver._fastproduct did not build (no C compiler?)"


@pytest.fixture(autouse=True, params=sorted(solver_product.ROW_SUMS))
def kernel(request, monkeypatch):
    """Every test here on each twin of the product's kernel (the C one and its Python reference)."""
    monkeypatch.setattr(solver_product, "row_sums", solver_product.ROW_SUMS[request.param])
    return request.param


A, B, C, D = range(4)


def graph(edges, n, weights=None):
    return Graph.from_edges([s for s, _ in edges], [t for _, t in edges], n, weights)


def dense(edges, n, weights=None):
    matrix = np.zeros((n, n))
    for (s, t), w in zip(edges, weights or [1.0] * len(edges)):
        matrix[s, t] = w
    return matrix


def solve(method, edges, n, damping, dangling="uniform", weights=None):
    if method in ("power", "bicgstab"):
        return pagerank(
            graph(edges, n, weights), damping, dangling=dangling, tol=1e-15, max_iter=10_000, method=method
        ).scores
    return pagerank_dense(dense(edges, n, weights), damping, dangling=dangling)


# (edges, weights, damping, dangling, exact answer in the notes' "algorithm 1" scale: sum to N)
SEED_EXAMPLES = {
    "000 three pages, d=0.5": ([(A, B), (A, C), (B, C), (C, A)], None, 0.5, "uniform", [14 / 13, 10 / 13, 15 / 13]),
    "000 two closed sites + A->C, d=0.75": (
        [(A, B), (B, A), (C, D), (D, C), (A, C)],
        None,
        0.75,
        "uniform",
        [14 / 23, 11 / 23, 35 / 23, 32 / 23],
    ),
    "000 dangling page C leaks rank, d=0.75": (
        [(A, B), (A, C), (B, A)],
        None,
        0.75,
        "leak",
        [14 / 23, 11 / 23, 11 / 23],
    ),
    "000 weighted links (visibility x position), d=0.5": (
        [(A, B), (A, C), (B, A), (B, C), (C, A), (C, B)],
        [3, 1, 6, 2, 6, 2],
        0.5,
        "uniform",
        [819 / 693, 721 / 693, 539 / 693],
    ),
    "002 four pages, no teleport": (
        [(A, B), (A, C), (A, D), (B, A), (B, C), (C, D), (D, A), (D, B)],
        None,
        1.0,
        "uniform",
        [4 * 9 / 34, 4 * 8 / 34, 4 * 7 / 34, 4 * 10 / 34],
    ),
}


# (I - M) is singular without teleport: the dense reference only takes d < 1.
CASES = [
    (method, name)
    for name in SEED_EXAMPLES
    for method in ("power", "bicgstab", "dense")
    if method != "dense" or SEED_EXAMPLES[name][2] < 1
]


@pytest.mark.parametrize("method, example", CASES)
def test_seed_examples_exact_in_both_scales(method, example):
    edges, weights, damping, dangling, algorithm1 = SEED_EXAMPLES[example]
    n = len(algorithm1)
    scores = solve(method, edges, n, damping, dangling, weights)
    np.testing.assert_allclose(scores * n, algorithm1, rtol=0, atol=1e-12)  # algorithm 1: sum to N
    np.testing.assert_allclose(scores, np.array(algorithm1) / n, rtol=0, atol=1e-12)  # algorithm 2
    if dangling != "leak":
        assert abs(scores.sum() - 1) < 1e-12
    else:
        assert scores.sum() * n == pytest.approx(36 / 23, abs=1e-12)  # rank lost through the sink


def test_seed_000_iteration_table_converges_in_about_a_dozen_steps():
    edges = [(A, B), (A, C), (B, C), (C, A)]
    result = pagerank(graph(edges, 3), 0.5, tol=1e-5 / 3, start=np.ones(3))
    assert 10 <= result.iterations <= 16
    assert all(a > b for a, b in zip(result.residuals, result.residuals[1:]))


@pytest.mark.parametrize("method", ["power", "bicgstab"])
def test_seed_002_dead_ends_removed_then_restored(method):
    # A->{B,C,D}, B->{A,C}, C->{D}, D none: remove D, then C; A, B get 1/2; C = 5/12, D = 7/12
    edges = [(A, B), (A, C), (A, D), (B, A), (B, C), (C, D)]
    result = pagerank(graph(edges, 4), 1.0, dangling="remove", tol=1e-15, method=method)
    expected = np.array([1 / 2, 1 / 2, 5 / 12, 7 / 12])
    np.testing.assert_allclose(result.scores, expected / expected.sum(), rtol=0, atol=1e-12)
    assert result.removed_rounds == 2


def test_seed_002_spam_farm_amplification():
    # target t=0 with m supporting pages 1..m (t -> each, each -> t); outside: a ring 11..20 of which 11 -> t
    d, m = 0.8, 10
    edges = [(0, i) for i in range(1, m + 1)] + [(i, 0) for i in range(1, m + 1)]
    ring = list(range(m + 1, m + 11))
    edges += [(a, b) for a, b in zip(ring, ring[1:] + ring[:1])] + [(ring[0], 0)]
    n = m + 1 + len(ring)
    scores = pagerank(graph(edges, n), d, tol=1e-15).scores
    x = d * scores[ring[0]] / 2  # what the outside contributes to the target
    y = x / (1 - d * d) + (d * m + 1) / (n * (1 + d))
    assert scores[0] == pytest.approx(y, abs=1e-12)
    assert 1 / (1 - d * d) == pytest.approx(1 / (2 * 0.2 - 0.2**2)) and round(1 / (1 - d * d), 2) == 2.78


@pytest.mark.parametrize("method", ["power", "bicgstab"])
@pytest.mark.parametrize("dangling", ["uniform", "source", "leak"])
def test_solvers_match_dense_reference_with_personalisation(dangling, method):
    rng = np.random.default_rng(3)
    n = 60
    edges = list({(int(s), int(t)) for s, t in rng.integers(0, n, size=(240, 2))})
    edges = [e for e in edges if e[0] % 7]  # pages 0, 7, 14, ... are sinks
    weights = list(rng.uniform(0.5, 3, len(edges)))
    personalization = rng.uniform(0, 1, n) * (rng.uniform(size=n) < 0.3)
    ours = pagerank(graph(edges, n, weights), 0.85, personalization, dangling, tol=1e-14, method=method).scores
    reference = pagerank_dense(dense(edges, n, weights), 0.85, personalization, dangling)
    assert np.abs(ours - reference).sum() < 1e-12


@pytest.mark.parametrize("method", ["power", "bicgstab"])
@pytest.mark.parametrize("dangling", ["uniform", "source", "leak", "remove"])
@pytest.mark.parametrize("weighted", [False, True])
def test_a_graph_past_the_copy_bound_is_multiplied_as_given_and_left_as_it_was(monkeypatch, dangling, method, weighted):
    """Past COPY_LINKS the product keeps no copy of the links in its own order, its sinks where they are: the
    same scores as the dense reference, on two threads, and the graph's arrays untouched."""
    rng = np.random.default_rng(5)
    n = 300
    edges = list({(int(s), int(t)) for s, t in rng.integers(0, n, size=(3000, 2))})
    edges = [e for e in edges if e[0] % 5]  # sinks
    weights = list(rng.uniform(0.5, 3, len(edges))) if weighted else None
    personalization = rng.uniform(0, 1, n) * (rng.uniform(size=n) < 0.3)
    given = graph(edges, n, weights)
    before = given.indices.copy(), given.indptr.copy()
    if dangling == "remove":  # no dense reference: the product that keeps its copy
        reference = pagerank(graph(edges, n, weights), 0.85, personalization, dangling, tol=1e-14, method=method)
    else:
        reference = pagerank_dense(dense(edges, n, weights), 0.85, personalization, dangling)
    monkeypatch.setattr(solver_product, "COPY_LINKS", 0)
    monkeypatch.setattr(solver_product, "_THREAD_MIN_LINKS", 0)
    ours = pagerank(given, 0.85, personalization, dangling, tol=1e-14, method=method, threads=2).scores
    assert np.abs(ours - getattr(reference, "scores", reference)).sum() < 1e-12
    assert np.array_equal(given.indices, before[0]) and np.array_equal(given.indptr, before[1])


@pytest.mark.parametrize("method", ["power", "bicgstab"])
def test_a_graph_laid_out_in_the_inner_order_by_its_loader_is_multiplied_as_it_is(method):
    """A loader that reads a graph straight into the product's inner order (inner_order, the out-degrees it
    counted on the Graph) saves the product its copy: the same scores as the graph as given, page for page."""
    rng = np.random.default_rng(11)
    n = 400
    src = np.minimum(rng.pareto(0.8, 6000) * 3, n - 1).astype(np.int64)  # out-degrees from 0 to hundreds
    dst = rng.integers(0, n, 6000)
    given = Graph.from_edges(src, dst, n)
    degree = np.bincount(given.indices, minlength=n)
    keep = rng.random(n) < 0.9
    keep |= degree > 0
    keep |= np.diff(given.indptr) > 0  # the members: every page with a link, some without
    order = solvers.inner_order(degree, keep)
    assert np.all(np.diff(solver_product._page_groups(degree)[order]) >= 0) and len(order) == keep.sum()
    new_of = np.full(n, -1)
    new_of[order] = np.arange(len(order))
    laid = Graph.from_edges(new_of[src], new_of[dst], len(order))
    laid.out_degree = degree[order].astype(np.int32)
    product = solver_product._Product(laid, False, threads=1)
    try:
        assert not product.ordered and product.sinks is not None  # no copy: the sinks marked where they are
        assert laid.out_degree is None  # kept as the out-weight: not held twice beside the solve
    finally:
        product.close()
    expected = pagerank(given.subgraph(keep)[0], tol=1e-13, method=method).scores
    laid.out_degree = degree[order].astype(np.int32)
    ours = pagerank(laid, tol=1e-13, method=method).scores
    # subgraph keeps the pages in their order: ours, in the inner order, back to it
    assert np.abs(ours[np.argsort(order)] - expected).sum() < 1e-11


def test_duplicate_links_count_once_and_self_links_count():
    with_duplicates = graph([(A, B), (A, B), (A, C), (B, B), (C, A)], 3)
    assert with_duplicates.links == 4
    reference = pagerank_dense(dense([(A, B), (A, C), (B, B), (C, A)], 3), 0.85)
    assert np.abs(pagerank(with_duplicates, tol=1e-14).scores - reference).sum() < 1e-12


def test_non_convergence_raises_a_named_error_with_the_partial_result():
    edges = [(A, B), (B, A)]  # periodic without teleport: never settles from a lopsided start
    with pytest.raises(ConvergenceError) as caught:
        pagerank(graph(edges, 2), 1.0, start=np.array([1.0, 0.0]), max_iter=20)
    assert caught.value.result.iterations == 20 and len(caught.value.result.residuals) == 20


def test_bicgstab_that_runs_out_of_steps_raises_too():
    rng = np.random.default_rng(9)
    g = Graph.from_edges(rng.integers(0, 500, 3000), rng.integers(0, 500, 3000), 500)
    with pytest.raises(ConvergenceError) as caught:
        pagerank(g, 0.85, tol=1e-14, max_iter=2, method="bicgstab")
    assert caught.value.result.iterations == 2 and len(caught.value.result.residuals) == 2


@pytest.mark.parametrize(
    "bad",
    [dict(dangling="nope"), dict(damping=1.5), dict(personalization=np.zeros(3)), dict(personalization=np.ones(2))],
)
def test_bad_arguments(bad):
    with pytest.raises(ValueError):
        pagerank(graph([(A, B)], 3), **bad)


@pytest.mark.parametrize("method", ["power", "bicgstab"])
def test_threaded_product_equals_single_thread(method):
    rng = np.random.default_rng(5)
    n, m = 300_000, 2_500_000
    g = Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), n)
    one = pagerank(g, tol=1e-10, threads=1, method=method)
    two = pagerank(g, tol=1e-10, threads=2, method=method)
    assert one.iterations == two.iterations
    assert np.abs(one.scores - two.scores).sum() < 1e-14


# ------------------------------------------------------- against networkx and igraph on real crawls


def _peers(loaded, personalization, dangling):
    n = loaded.graph.n
    edges = list(zip(loaded.graph.indices.tolist(), loaded.graph.targets().tolist()))
    nxg = nx.DiGraph()
    nxg.add_nodes_from(range(n))
    nxg.add_edges_from(edges)
    nx_kwargs = {}
    if personalization is not None:
        nx_kwargs["personalization"] = dict(enumerate(personalization))
        nx_kwargs["dangling"] = dict(enumerate(personalization if dangling == "source" else np.ones(n)))
    networkx_scores = nx.pagerank(nxg, 0.85, tol=1e-10 / n, max_iter=10_000, **nx_kwargs)
    networkx_vector = np.array([networkx_scores[i] for i in range(n)])
    ig = igraph.Graph(n=n, edges=edges, directed=True)
    if personalization is None:
        igraph_vector = np.array(ig.pagerank(damping=0.85, implementation="prpack"))
    else:
        igraph_vector = np.array(
            ig.personalized_pagerank(damping=0.85, reset=list(personalization), implementation="prpack")
        )
    return networkx_vector, igraph_vector


@pytest.mark.parametrize("method", ["power", "bicgstab"])
@pytest.mark.parametrize("store_fixture", ["python_doc_store", "postgres_doc_store"])
@pytest.mark.parametrize("personalised", [False, True])
def test_real_graphs_match_networkx_and_igraph(request, store_fixture, personalised, method):
    with Store(request.getfixturevalue(store_fixture), readonly=True) as store:
        loaded = load_graph(store)
    g = loaded.graph
    assert g.n > 1000
    assert (g.out_weight() == 0).sum() > 1000  # dangling: pages linked to but not crawled
    assert (g.targets() == g.indices).sum() >= 2  # pages that link to themselves
    # duplicate links in the input count once (links are a set); the peers get the set
    doubled = Graph.from_edges(
        np.concatenate([g.indices, g.indices[::3]]), np.concatenate([g.targets(), g.targets()[::3]]), g.n
    )
    assert doubled.links == g.links
    personalization, dangling = None, "uniform"
    if personalised:
        personalization = np.zeros(g.n)
        personalization[np.argsort(-g.in_degree())[:25]] = 1.0
        dangling = "source"
    ours = pagerank(doubled, 0.85, personalization, dangling, tol=1e-10, method=method).scores
    networkx_vector, igraph_vector = _peers(loaded, personalization, dangling)
    assert np.abs(ours - networkx_vector).sum() <= 1e-8
    assert np.abs(ours - igraph_vector).sum() <= 1e-8


@pytest.mark.parametrize("method", ["power", "bicgstab"])
def test_many_pieces_and_threads_give_the_one_piece_answer(method, monkeypatch):
    # the vector passes work a cache-sized piece at a time, each piece with its
    # own share of the sinks: cut a graph with many sinks into 13 pieces on 2 threads.
    # E is not uniform: with a uniform E, the rank the sinks spread uniformly is a
    # multiple of E, and a wrong share of it would not show in the normalised scores
    from rankstore.solver import product as solver

    rng = np.random.default_rng(11)
    n, m = 50_000, 300_000
    g = Graph.from_edges(rng.integers(0, n // 2, m), rng.integers(0, n, m), n)  # half the pages are sinks
    source = rng.random(n)
    whole = pagerank(g, personalization=source, tol=1e-12, method=method)
    monkeypatch.setattr(solver, "_PIECE", 4096)
    monkeypatch.setattr(solver, "_THREAD_MIN_LINKS", 0)
    cut = pagerank(g, personalization=source, tol=1e-12, threads=2, method=method)
    assert np.abs(whole.scores - cut.scores).sum() < 1e-10


@pytest.mark.parametrize("weighted", [False, True])
def test_the_product_in_its_inner_order_is_the_plain_product(weighted, monkeypatch):
    # pages renumbered (most-read first, sinks last), set up over several chunks,
    # long rows cut between kernel calls, two threads: still M x, page for page
    from rankstore.solver import product as solver
    from rankstore.solver.dangling import _transition

    monkeypatch.setattr(solver, "_CALL_LINKS", 7)
    monkeypatch.setattr(solver, "_CHUNK", 500)
    monkeypatch.setattr(solver, "_THREAD_MIN_LINKS", 0)
    rng = np.random.default_rng(3)
    n, m = 400, 5000
    src = np.minimum(rng.pareto(0.8, m) * 3, n // 2 - 1).astype(np.int64)  # out-degrees from 1 to hundreds
    dst = np.where(rng.random(m) < 0.1, 7, rng.integers(0, n, m))  # page 7 has hundreds of in-links
    g = Graph.from_edges(src, dst, n, rng.random(m) + 0.1 if weighted else None)
    product = solver._Product(g, weighted, threads=2, scale=0.85, single=True)
    try:
        degree = np.bincount(g.indices, minlength=n)
        group = solver._page_groups(degree)
        assert set(np.unique(group)) == {0, 1, 2, 3}  # every group present
        assert sorted(product.order.tolist()) == list(range(n))
        assert np.all(np.diff(group[product.order]) >= 0)  # groups in order, sinks last
        assert np.array_equal(product.order, np.argsort(group, kind="stable"))  # each group in page order
        assert product.live == np.count_nonzero(degree) and np.all(degree[product.order[product.live :]] == 0)
        assert len(product.blocks) == 2 and np.diff(g.indptr).max() > 3 * solver._CALL_LINKS
        x = rng.random(n)
        expected = 0.5 + _transition(g, weighted, scale=0.85) @ x
        for kind, tolerance in ((np.float64, 1e-13), (np.float32, 1e-5)):
            z = (product.inner(x) * product.inverse[np.dtype(kind)]).astype(kind)
            out = np.empty(n, dtype=kind)
            product(z, out, kind(0.5))
            assert np.abs(product.outer(out) - expected).max() < tolerance * expected.max()
    finally:
        product.close()


@pytest.mark.parametrize("method", ["power", "bicgstab"])
def test_a_graph_without_links_ranks_every_page_alike(method):
    assert np.allclose(pagerank(Graph.from_edges([], [], 5), method=method).scores, 0.2)


@pytest.mark.parametrize("weighted", [False, True])
def test_in_sums_in_row_ranges_on_threads_is_the_plain_sum_over_in_links(monkeypatch, weighted):
    from rankstore.solver import in_sums, product

    rng = np.random.default_rng(3)
    n, m = 3000, 40_000
    src, dst = rng.integers(0, n, m), rng.zipf(1.5, m) % n  # a few pages with most in-links
    graph = Graph.from_edges(src, dst, n, rng.random(m) if weighted else None)
    values = rng.random(n)
    expected = np.zeros(n)
    np.add.at(expected, graph.targets(), values[graph.indices] * (graph.weights if weighted else 1.0))
    monkeypatch.setattr(product, "_SUM_LINKS", 1000)  # many row ranges
    monkeypatch.setattr(product, "_CALL_LINKS", 300)  # many calls, rows longer than a call
    monkeypatch.setattr(product, "_THREAD_MIN_LINKS", 0)
    np.testing.assert_allclose(in_sums(graph, values, weighted, threads=3), expected, rtol=1e-12)
    np.testing.assert_allclose(in_sums(graph, values, weighted, threads=1), expected, rtol=1e-12)


def test_auto_is_bicgstab_unless_its_vectors_would_pass_two_thirds_of_the_memory():
    g = graph([(A, B), (B, C), (C, A)], 3)
    held = 2 * (g.indptr.nbytes + g.indices.nbytes)  # the graph and the product's copy in its own order
    assert solvers.solve_bytes(g, "bicgstab") == held + 9.5 * 8 * 3
    assert solvers.solve_bytes(g, "power") == held + 8 * 8 * 3
    for memory, chosen in [
        (10**9, "bicgstab"),  # plenty
        (int(1.5 * solvers.solve_bytes(g, "bicgstab")) + 2, "bicgstab"),  # just fits two thirds
        (int(1.5 * solvers.solve_bytes(g, "power")) + 2, "power"),  # only the power method fits
        (1, "bicgstab"),  # neither fits: the faster one (it fails as it would have)
    ]:
        assert solvers.choose_method(g, memory) == chosen, memory
    reference = pagerank_dense(dense([(A, B), (B, C), (C, A)], 3), 0.85)
    assert np.abs(pagerank(g, tol=1e-14, method="auto").scores - reference).sum() < 1e-12
