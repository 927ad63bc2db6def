#!/usr/bin/env python3
"""PageRank solvers on the same graphs, to the same accuracy, in one run.

    bash tools/setup.sh --bench && .venv/bin/python tools/bench_solver.py [--pages 10000000 --links 60000000]

Graphs:
  * rust-doc: Debian's rust-doc HTML directory loaded by `rankstore build`
    (cached in ~/.cache/pagerank-proxy/rust-doc-dir.db); end to end = store -> scores;
  * generated: a host-structured graph (power-law host sizes, page ids grouped
    by host, 80% of links inside a host, targets chosen by Zipf popularity or
    uniformly, ~10% dangling pages) saved to a .npz file;
    end to end = file -> scores.

Every solver must get within L1 <= 1e-9 of a float64 reference (ours at
tol 1e-13); each is run at the loosest of a few tolerances that achieves it.

End to end from the store (what a user runs): `rankstore rank --cold` on a
store, process start to committed ranking, against igraph reading the same
graph as a text edge list (integer ids, its fastest reader) and solving it,
also a whole process; on rust-doc and on a generated 1M-page / 5M-link store
(built from the generated graph's URL edge list by `rankstore build`).
Peers: igraph (PRPACK), NetworKit (2 threads), fast-pagerank, networkx (small
graph only).  Peak memory is each run's growth in resident memory over the
process before it (ru_maxrss cannot go down, so every run is a fresh process).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
CACHE = os.path.expanduser("~/.cache/pagerank-proxy")
DAMPING = 0.85
TARGET = 1e-9


# ------------------------------------------------------------------ graphs


def generated_graph(pages: int, links: int, seed: int = 7) -> str:
    path = os.path.join(CACHE, f"hosts-{pages}-{links}.npz")
    if os.path.exists(path):
        return path
    os.makedirs(CACHE, exist_ok=True)
    rng = np.random.default_rng(seed)
    sizes = np.minimum(rng.pareto(1.2, pages // 50) * 20 + 1, 200_000).astype(np.int64)
    sizes = sizes[np.cumsum(sizes) <= pages]
    sizes = np.append(sizes, pages - sizes.sum())
    host_start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    host_of = np.repeat(np.arange(len(sizes)), sizes)
    # out-degree: ~10% dangling, the rest heavy-tailed, scaled to the wanted number of links
    degree = np.where(rng.random(pages) < 0.1, 0, rng.zipf(2.1, pages)).astype(np.float64)
    degree = np.minimum(np.round(degree * links * 2.2 / degree.sum()), 5000).astype(np.int64)
    src = np.repeat(np.arange(pages, dtype=np.int64), degree)
    m = len(src)
    inside = rng.random(m) < 0.8
    size = sizes[host_of[src]]
    # inside a host: half to its popular pages (Zipf from its root), half anywhere in it;
    # outside: mostly a Zipf-popular page of the whole graph (85%), else any page
    zipf_local = np.minimum(rng.zipf(1.6, m) - 1, size - 1)
    uniform_local = (rng.random(m) * size).astype(np.int64)
    local = np.where(rng.random(m) < 0.5, zipf_local, uniform_local)
    popular = rng.permutation(pages)
    remote = np.where(
        rng.random(m) < 0.85, popular[np.minimum(rng.zipf(1.3, m) - 1, pages - 1)], rng.integers(0, pages, m)
    )
    dst = np.where(inside, host_start[host_of[src]] + local, remote)
    del zipf_local, uniform_local, local, remote, size
    key = np.unique(dst * pages + src)
    dst_sorted = (key // pages).astype(np.int32)
    src_sorted = (key % pages).astype(np.int32)
    np.savez(path, n=pages, dst=dst_sorted, src=src_sorted)
    return path


def rust_doc_store() -> str:
    from rankstore.store import Store

    path = os.path.join(CACHE, "rust-doc-dir.db")
    if os.path.exists(path):
        Store(path).close()  # brings a cached store from an older schema up to date
    if not os.path.exists(path):
        os.makedirs(CACHE, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "rankstore",
                "build",
                "/usr/share/doc/rust-doc/html",
                "--base-url",
                "http://rust.local/",
                "--store",
                path,
                "-q",
            ],
            check=True,
        )
    return path


def load(source: str):
    """(graph, seconds to load) from a store or a .npz file."""
    from rankstore.solver import Graph

    started = time.perf_counter()
    if source.endswith(".db"):
        from rankstore.ranking import load_graph
        from rankstore.store import Store

        with Store(source, readonly=True) as store:
            graph = load_graph(store).graph
    else:
        data = np.load(source)
        graph = Graph.from_sorted(int(data["n"]), data["dst"], data["src"])
    return graph, time.perf_counter() - started


# ------------------------------------------------------------------ one solver, in its own process


def status_mib(field: str) -> float:
    """A memory figure of this process from /proc/self/status: VmRSS (now) or VmHWM (peak)."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def run_one(solver: str, source: str, tol: float, reference: str | None) -> dict:
    before = status_mib("VmRSS")
    graph, load_s = load(source)
    n = graph.n
    started = time.perf_counter()
    iterations = steady = None
    if solver in ("ours", "ours-power", "reference"):
        from rankstore.solver import pagerank

        method = "bicgstab" if solver == "ours" else "power"
        stamps: list[float] = []
        result = pagerank(
            graph,
            DAMPING,
            tol=tol,
            max_iter=10_000,
            method=method,
            callback=lambda iteration, residual: stamps.append(time.perf_counter()),
        )
        scores, iterations = result.scores, result.iterations
        setup_s = 0.0
        if len(stamps) > 2:
            # a sweep over every link: one product a power step, two a BiCGSTAB step
            sweep_s = float(np.median(np.diff(stamps))) / (2 if method == "bicgstab" else 1)
            steady = graph.links / sweep_s / 1e6
    elif solver == "igraph":
        import igraph

        g = igraph.Graph(n=n, edges=np.column_stack([graph.indices, graph.targets()]), directed=True)
        setup_s = time.perf_counter() - started
        scores = np.array(g.pagerank(damping=DAMPING, implementation="prpack"))
    elif solver == "networkit":
        import networkit as nk

        nk.setNumberOfThreads(2)
        g = nk.Graph(n, directed=True)
        g.addEdges((graph.indices.astype(np.uint64), graph.targets().astype(np.uint64)))
        setup_s = time.perf_counter() - started
        pr = nk.centrality.PageRank(g, damp=DAMPING, tol=tol)
        pr.norm = nk.centrality.Norm.L1_NORM
        pr.run()
        scores = np.array(pr.scores())
        scores /= scores.sum()
        iterations = pr.numberOfIterations()
    elif solver == "fast-pagerank":
        import scipy.sparse as sp
        from fast_pagerank import pagerank_power

        adjacency = sp.csr_matrix((np.ones(graph.links), (graph.indices, graph.targets())), shape=(n, n))
        setup_s = time.perf_counter() - started
        scores = pagerank_power(adjacency, p=DAMPING, tol=tol, max_iter=10_000)
    elif solver == "networkx":
        import networkx as nx

        g = nx.DiGraph()
        g.add_nodes_from(range(n))
        g.add_edges_from(zip(graph.indices.tolist(), graph.targets().tolist()))
        setup_s = time.perf_counter() - started
        found = nx.pagerank(g, DAMPING, tol=tol / n, max_iter=10_000)
        scores = np.array([found[i] for i in range(n)])
    else:
        raise SystemExit(f"unknown solver {solver}")
    total_s = time.perf_counter() - started
    out = {
        "solver": solver,
        "tol": tol,
        "load_s": load_s,
        "setup_s": setup_s,
        "solve_s": total_s - setup_s,
        "end_to_end_s": load_s + total_s,
        "iterations": iterations,
        "peak_mib": status_mib("VmHWM") - before,
        "links": graph.links,
        "pages": n,
        "steady_m_links_per_s": steady,
    }
    if reference:
        out["l1_error"] = float(np.abs(scores - np.load(reference)).sum())
    else:
        np.save(source + ".reference.npy", scores)
    return out


def subprocess_run(solver: str, source: str, tol: float, reference: str | None) -> dict:
    command = [sys.executable, __file__, "--one", solver, "--source", source, "--tol", str(tol)]
    if reference:
        command += ["--reference", reference]
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "no message"
        return {"solver": solver, "error": f"exit status {done.returncode}: {tail}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(label: str, source: str, solvers: list[str]) -> None:
    print(f"\n== {label}", flush=True)
    reference_result = subprocess_run("reference", source, 1e-13, None)  # power method, float64
    reference = source + ".reference.npy"
    print(
        f"reference: ours at tol 1e-13, {reference_result['iterations']} iterations; "
        f"{reference_result['pages']:,} pages, {reference_result['links']:,} links",
        flush=True,
    )
    rows = []
    for solver in solvers:
        result = None
        for tol in (1e-8, 1e-9, 1e-10, 1e-11, 1e-12):
            result = subprocess_run(solver, source, tol, reference)
            if "error" in result or result["l1_error"] <= TARGET:
                break
        rows.append(result)
        if "error" in result:
            print(f"{solver:>14}: failed: {result['error']}", flush=True)
            continue
        steady = result.get("steady_m_links_per_s")
        rate = result["links"] * (result["iterations"] or 0) / result["solve_s"] / 1e6 if result["iterations"] else None
        print(
            f"{solver:>14}: solve {result['solve_s']:7.2f} s, end to end {result['end_to_end_s']:7.2f} s, "
            f"L1 error {result['l1_error']:.1e} (tol {result['tol']:g}), iterations {result['iterations'] or '-'}, "
            f"{(f'{rate:.0f} M links/s/iter, ' if rate else '')}"
            f"{(f'median sweep {steady:.0f} M links/s, ' if steady else '')}peak +{result['peak_mib']:.0f} MiB "
            f"({result['peak_mib'] * 2**20 / result['links']:.1f} B/link)",
            flush=True,
        )
    ours = next(r for r in rows if r["solver"] == "ours")
    for row in rows:
        if row is not ours and "error" not in row:
            print(
                f"  ours vs {row['solver']}: solve {row['solve_s'] / ours['solve_s']:.2f}x faster, "
                f"end to end {row['end_to_end_s'] / ours['end_to_end_s']:.2f}x faster"
            )


# ------------------------------------------------------------------ end to end from the store


def store_from_graph(npz: str) -> str:
    """A store built by `rankstore build` from a URL edge list of a generated graph (cached)."""
    path = npz.replace(".npz", ".db")
    if os.path.exists(path):
        return path
    data = np.load(npz)
    edges = npz.replace(".npz", ".urls.tsv")
    src, dst = data["src"], data["dst"]
    order = np.argsort(src, kind="stable")
    with open(edges, "w") as out:
        for start in range(0, len(order), 1_000_000):
            chosen = order[start : start + 1_000_000]
            out.write(
                "".join(
                    f"http://site{s // 100}.example/p{s}\thttp://site{d // 100}.example/p{d}\n"
                    for s, d in zip(src[chosen].tolist(), dst[chosen].tolist())
                )
            )
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rankstore", "build", edges, "--store", path + ".part", "-q"], check=True)
    print(f"(built {path} in {time.perf_counter() - started:.1f} s)", flush=True)
    os.replace(path + ".part", path)
    return path


def integer_edge_list(store_path: str) -> str:
    """The store's graph as `src dst` page indices, one link a line: igraph's fastest input."""
    from rankstore.store import Store

    path = store_path + ".edges.txt"
    if not os.path.exists(path):
        with Store(store_path) as store:
            _, src, dst, _ = store.graph.graph_arrays()
        np.savetxt(path, np.column_stack([src, dst]), fmt="%d")
    return path


def timed_process(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - started


def end_to_end_from_store(label: str, store_path: str, repeat: int = 3) -> None:
    """`rankstore rank` at the loosest tolerance whose scores are within L1 1e-9 of the reference, vs igraph."""
    from rankstore.ranking import load_graph
    from rankstore.solver import pagerank
    from rankstore.store import Store

    edges = integer_edge_list(store_path)
    with Store(store_path) as store:
        reference = pagerank(load_graph(store).graph, DAMPING, tol=1e-13, max_iter=10_000, method="power").scores
        info = store.info()

    def ours_error() -> float:
        with Store(store_path, readonly=True) as store:
            return float(np.abs(store.rankings.scores_of(store.rankings.ranking().id)[1] - reference).sum())

    command = [sys.executable, "-m", "rankstore", "rank", "--store", store_path, "-q", "--cold", "--force"]
    for tol in (1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11):
        timed_process(command + ["--tol", str(tol)])
        if ours_error() <= TARGET:
            break
    igraph_script = (
        "import sys, igraph, numpy as np; g = igraph.Graph.Read_Edgelist(sys.argv[1], directed=True);"
        " np.save(sys.argv[2], np.array(g.pagerank(damping=0.85, implementation='prpack')))"
    )
    ours, theirs = [], []
    for _ in range(repeat):  # alternated, so both see the same machine
        ours.append(timed_process(command + ["--tol", str(tol)]))
        theirs.append(timed_process([sys.executable, "-c", igraph_script, edges, store_path + ".igraph.npy"]))
    other = np.load(store_path + ".igraph.npy")
    other_error = float(np.abs(other - reference[: len(other)]).sum() + reference[len(other) :].sum())
    print(f"\n== end to end from the store: {label} ({info['pages']:,} pages, {info['links']:,} links)")
    print(
        f"  rankstore rank --cold --tol {tol:g}: {' / '.join(f'{t:.2f}' for t in ours)} s, L1 error {ours_error():.1e}"
    )
    print(f"  igraph read edge list + PRPACK: {' / '.join(f'{t:.2f}' for t in theirs)} s, L1 error {other_error:.1e}")
    print(f"  ours vs igraph: {np.median(theirs) / np.median(ours):.2f}x faster (medians)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=10_000_000)
    parser.add_argument("--links", type=int, default=60_000_000)
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--store-only", action="store_true", help="only the end-to-end-from-the-store rows")
    parser.add_argument("--solvers-only", action="store_true", help="only the solvers' rows (no store rows)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--source", help=argparse.SUPPRESS)
    parser.add_argument("--tol", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--reference", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.source, args.tol, args.reference)))
        return
    if not args.solvers_only:
        end_to_end_from_store("rust-doc", rust_doc_store())
        end_to_end_from_store("generated 1M pages / 5M links", store_from_graph(generated_graph(1_000_000, 5_000_000)))
    if args.store_only:
        return
    compare(
        "rust-doc (store -> scores)",
        rust_doc_store(),
        ["ours", "ours-power", "igraph", "networkit", "fast-pagerank", "networkx"],
    )
    if not args.skip_large:
        started = time.perf_counter()
        path = generated_graph(args.pages, args.links)
        print(f"\n(generated graph ready in {time.perf_counter() - started:.0f} s: {path})")
        compare(
            f"generated host graph, {args.pages:,} pages (file -> scores)",
            path,
            ["ours", "ours-power", "igraph", "networkit", "fast-pagerank"],
        )


if __name__ == "__main__":
    main()
