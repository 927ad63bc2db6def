#!/usr/bin/env python3
"""The Spark engine against the scipy engine on a generated graph: per-iteration time and agreement.

    .venv/bin/python tools/bench_spark.py --pages 1000000 --links 5000000            # agreement, L1 <= 1e-8
    .venv/bin/python tools/bench_spark.py --pages 10000000 --links 60000000 --max-iter 8 --driver-memory 12g

The graph is tools/bench_solver.py's generated host graph (cached in
~/.cache/pagerank-proxy/).  Both engines run the power method from uniform E at
the same ``--tol``; Spark runs in ``--master`` (local[2] by default), the
graph going to it as Parquet as ``rankstore rank --engine spark`` sends it.
With ``--max-iter`` below what convergence needs, only the iteration times
are compared (the first Spark iteration, which also reads and caches the
links, is reported apart).  The per-link cost is a core's time per link and
iteration: the median iteration time x cores / links.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tools"))

from bench_solver import generated_graph  # noqa: E402

from rankstore.ranking import Problem  # noqa: E402
from rankstore.solver import ConvergenceError, Graph, pagerank  # noqa: E402
from rankstore.spark import engine, job  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=1_000_000)
    parser.add_argument("--links", type=int, default=5_000_000)
    parser.add_argument("--tol", type=float, default=1e-10)
    parser.add_argument("--max-iter", type=int, default=1000)
    parser.add_argument("--dangling", default="uniform", choices=job.DANGLING)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="6g")
    parser.add_argument("--partitions", type=int)
    args = parser.parse_args()

    started = time.perf_counter()
    data = np.load(generated_graph(args.pages, args.links))
    graph = Graph.from_sorted(int(data["n"]), data["dst"], data["src"])
    print(f"graph: {graph.n:,} pages, {graph.links:,} links ({time.perf_counter() - started:.1f} s to load)")

    times: list[float] = []
    last = [time.perf_counter()]

    def tick(iteration: int, residual: float) -> None:
        now = time.perf_counter()
        times.append(now - last[0])
        last[0] = now

    last[0] = time.perf_counter()
    converged = True
    try:
        reference = pagerank(graph, 0.85, None, args.dangling, args.tol, args.max_iter, callback=tick, method="power")
        scipy_scores = reference.scores
    except ConvergenceError as error:  # at a short --max-iter: the times are what is wanted
        scipy_scores, converged = error.result.scores, False
    scipy_iter = statistics.median(times)
    print(f"scipy power: {len(times)} iterations, median {scipy_iter:.3f} s an iteration (2 threads)", flush=True)

    solver = engine.SparkSolver(args.master, {"spark.driver.memory": args.driver_memory}).start()
    cores = solver.spark.sparkContext.defaultParallelism
    folder = tempfile.mkdtemp(prefix="bench-spark-")
    started = time.perf_counter()
    links, nodes = engine.write_problem(Problem(graph, 0.85, None, args.dangling, args.tol, 0, None, True), folder)
    print(f"parquet written in {time.perf_counter() - started:.1f} s", flush=True)

    cached: list[int] = []

    def show(_vector: int, iteration: int, residual: float) -> None:
        if iteration == 1:  # what Spark's cache holds now: the links (their shares) and the first vectors
            infos = solver.spark.sparkContext._jsc.sc().getRDDStorageInfo()
            cached.extend([info.memSize() + info.diskSize() for info in infos])
        if iteration <= 3 or iteration % 20 == 0:
            print(f"  spark iteration {iteration:>4}  L1 residual {residual:.3e}", flush=True)

    options = job.JobOptions(tol=args.tol, max_iter=args.max_iter, partitions=args.partitions)
    started = time.perf_counter()
    result = job.pagerank(
        solver.spark, links, nodes, os.path.join(folder, "out"), [job.Vector(dangling=args.dangling)], options, show
    )
    total = time.perf_counter() - started
    scores = engine.read_ranks(os.path.join(folder, "out", "ranks"), graph.n)
    solver.close()
    seconds = result.seconds
    steady = statistics.median(seconds[1:]) if len(seconds) > 1 else seconds[0]
    print(
        f"spark {args.master} ({cores} cores, {options.partitions or cores} partitions): "
        f"{result.iterations[0]} iterations in {total:.1f} s end to end (read, cache, iterate, write); "
        f"first iteration {seconds[0]:.2f} s, "
        f"then median {steady:.2f} s (min {min(seconds[1:] or seconds):.2f}, max {max(seconds[1:] or seconds):.2f})"
    )
    print(
        f"per link and iteration: spark {steady * cores / graph.links * 1e9:.0f} ns a core, "
        f"scipy {scipy_iter * 2 / graph.links * 1e9:.1f} ns a core; spark / scipy = {steady / scipy_iter:.0f}x"
    )
    print(
        f"cached after the first iteration: {sum(cached) / 2**20:,.0f} MiB in {len(cached)} RDDs, largest "
        f"{max(cached or [0]) / 2**20:,.0f} MiB = {max(cached or [0]) / graph.links:.1f} B a link"
    )
    if converged and all(result.converged):
        print(f"agreement: L1(spark - scipy) = {np.abs(scores - scipy_scores).sum():.2e} at tol {args.tol:g}")
    else:
        print("agreement: not measured (stopped at --max-iter)")


if __name__ == "__main__":
    main()
