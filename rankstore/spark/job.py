"""PageRank on Apache Spark: the scipy engine's power iteration on DataFrames, for graphs past one machine.

Input, Parquet (a path Spark reads: a file, a folder, ``s3a://``, ``hdfs://``):

* links: ``src``, ``dst`` (node ids), optional ``weight`` (1.0 without it) and
  ``nofollow`` (such links are dropped unless ``include_nofollow``): what
  ``rankstore export --what links --format parquet`` writes.  Links are a set:
  a repeated (src, dst) pair counts twice here (the store never has one).
* nodes (optional): ``id`` of every node, with optional columns holding the
  rank source E and a start vector (any non-negative values; normalised
  here).  Without it the nodes are the links' ends, and a page without any
  link is left out.  ``rankstore export --what pages`` writes one.

The maths is :func:`rankstore.solver.pagerank`'s power method, step for step:
x' = d·M x + d·(x at sinks)·D + (1-d)·E with M x = Σ over in-links of
x[src]·w/W[src] (W: the source's out-weight), D where the sinks' rank goes
(``uniform``: every page alike; ``source``: by E; ``leak``: nowhere), the L1
change between iterates as the residual, and ``remove`` (the paper's section
2.7) as dangling pages removed round by round, the core solved, and the
removed pages restored in reverse order.  It runs in float64 throughout (the
scipy engine's float32 steps are a cache trick of one machine).

Why it is fast as Spark allows: nothing in the loop runs Python on rows.  The
links, with each link's share w/W computed once, are partitioned by ``src``
and cached once; the rank vector is partitioned by ``id`` into as many
partitions, so the join of links with ranks needs no shuffle of the links
(a hash join built on the rank side, streaming the links: no sort); the only
shuffle an iteration makes is of the per-target sums (combined map-side).
Each iteration is one Spark job whose one result row is every vector's
residual and rank at sinks.  The plan of iterate k nests all k before it, so
every ``checkpoint_every`` iterations the vector is checkpointed, which cuts
the lineage (``localCheckpoint`` unless a checkpoint folder is given, which a
cluster that loses executors needs).

Several rank vectors (topics, or the same E with other dangling rules) can be
iterated in one pass over the links: each is a column, each stops at its own
tolerance, frozen from then on.

Run on a cluster (see the README, "rank --engine spark")::

    spark-submit --master yarn rankstore/spark/job.py --links s3a://b/links.parquet \\
        --nodes s3a://b/pages.parquet --out s3a://b/ranks --partitions 4000

Output under ``--out``: ``ranks`` (``id`` and one score column a vector) and
``residuals`` (``vector``, ``iteration``, ``residual``), both Parquet.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

__all__ = ["DANGLING", "JobOptions", "JobResult", "Vector", "pagerank", "run", "main"]

# rankstore.choices.DANGLING (a test holds them equal): this file runs under spark-submit without the package
DANGLING = ("uniform", "source", "remove", "leak")

_LEVEL = StorageLevel.MEMORY_AND_DISK
# links a partition of the iteration takes by default: below it, each further task of the many every
# iteration runs costs more in scheduling than it saves in work
LINKS_PER_PARTITION = 1_000_000


@dataclass
class Vector:
    """One rank vector of a pass: where its E and its start come from, how its sinks behave.

    ``source`` and ``start`` name columns of the nodes table (None: E
    uniform, start at E); ``column`` names its scores in the output.
    """

    source: str | None = None
    start: str | None = None
    dangling: str = "uniform"
    column: str = "score"


@dataclass
class JobOptions:
    damping: float = 0.85
    tol: float = 1e-10
    max_iter: int = 1000
    weighted: bool = True
    include_nofollow: bool = False
    partitions: int | None = None  # None: spark.default.parallelism, fewer for a small graph
    checkpoint_every: int = 10
    checkpoint_dir: str | None = None  # None: localCheckpoint (executor storage)


@dataclass
class JobResult:
    """What a pass gives, one entry a vector; ``ranks`` has ``id`` and the vectors' score columns."""

    ranks: DataFrame
    iterations: list[int]
    residuals: list[list[float]]
    converged: list[bool]
    removed_rounds: int = 0
    nodes: int = 0
    links: int = 0
    seconds: list[float] = field(default_factory=list)  # wall time of each iteration of the pass


Callback = Callable[[int, int, float], None]  # (vector, iteration, L1 residual)


class JobError(ValueError):
    """Input the job cannot rank (no nodes, a bad E, every page removed)."""


def _key_type(*frames_and_columns: tuple[DataFrame, str]) -> str:
    """``int`` while every id column is 32-bit (half the memory a link), else ``long``."""
    types = {frame.schema[name].dataType.simpleString() for frame, name in frames_and_columns}
    return "int" if types <= {"int", "smallint", "tinyint"} else "long"


def _checkpoint(frame: DataFrame, options: JobOptions) -> DataFrame:
    if options.checkpoint_dir:
        return frame.checkpoint(eager=True)
    return frame.localCheckpoint(eager=True)


def _persist(frame: DataFrame) -> DataFrame:
    frame = frame.persist(_LEVEL)
    frame.count()
    return frame


def _partitions(spark: SparkSession, links: DataFrame) -> int:
    """The default partitions: ``spark.default.parallelism``, fewer for a graph too small to fill them."""
    wanted = -(-links.count() // LINKS_PER_PARTITION)
    return max(1, min(spark.sparkContext.defaultParallelism, wanted))


def _prepare_links(links: DataFrame, key: str, options: JobOptions) -> DataFrame:
    if "nofollow" in links.columns and not options.include_nofollow:
        links = links.where(~F.coalesce(F.col("nofollow"), F.lit(False)))
    weight = F.col("weight").cast("double") if options.weighted and "weight" in links.columns else F.lit(1.0)
    ends = [F.col("src").cast(key).alias("src"), F.col("dst").cast(key).alias("dst")]
    return links.select(*ends, weight.alias("weight"))


def _shares(links: DataFrame, partitions: int, scale: float) -> tuple[DataFrame, DataFrame]:
    """Each link's share ``w = scale·weight/W[src]``, partitioned by ``src`` and cached; and each source's W.

    A source whose out-weight is 0 passes nothing on (the scipy engine's 0 inverse).
    """
    out = links.groupBy("src").agg(F.sum("weight").alias("W"), F.count(F.lit(1)).alias("degree"))
    share = F.when(F.col("W") > 0, F.lit(scale) * F.col("weight") / F.col("W")).otherwise(F.lit(0.0))
    shared = (
        links.join(out, "src")
        .select("src", "dst", share.alias("w"))
        .repartition(partitions, "src")  # the rank vector is partitioned the same way: the join shuffles no link
    )
    return _persist(shared), out


def _normalised(frame: DataFrame, column: str, what: str) -> Column:
    """``column`` / its sum, checked as the scipy engine checks E and the start."""
    row = frame.agg(F.sum(column).alias("total"), F.min(column).alias("lowest")).first()
    assert row is not None
    total, lowest = row["total"], row["lowest"]
    if total is None or total <= 0 or lowest < 0 or total != total or total == float("inf"):
        raise JobError(f"{what} column {column!r} must be non-negative with a positive sum")
    return F.col(column).cast("double") / F.lit(float(total))


def _iterate(
    links: DataFrame,
    state: DataFrame,
    n: int,
    vectors: Sequence[tuple[Column | None, Column | None]],
    options: JobOptions,
    callback: Callback | None,
    seconds: list[float],
) -> tuple[DataFrame, list[list[float]], list[bool]]:
    """The power iteration on ``state`` (``id``, ``sink``, ``x{i}``, the E columns), partitioned by ``id``.

    ``vectors[i]`` is (E_i as a column over state, or None for uniform;
    where vector i's sinks send their rank, as a column, or None: lost).
    Returns the final state and, per vector, the residuals and whether it
    reached ``tol``.
    """
    damping, tol = options.damping, options.tol
    k = len(vectors)
    uniform = F.lit(1.0 / n)
    spread = [0.0] * k  # d·(rank at sinks) of the current x, per vector
    row = state.agg(*[F.sum(F.when(F.col("sink"), F.col(f"x{i}")).otherwise(0.0)) for i in range(k)]).first()
    assert row is not None
    mass = [float(row[i] or 0.0) for i in range(k)]
    residuals: list[list[float]] = [[] for _ in range(k)]
    done = [False] * k
    keep = [name for name in state.columns if not name.startswith("x") and not name.startswith("p")]
    for iteration in range(1, options.max_iter + 1):
        started = time.perf_counter()
        spread = [damping * mass[i] for i in range(k)]
        live = [i for i in range(k) if not done[i]]
        # shuffle_hash: a hash table of the rank vector's partition, the links streamed past it (no sort)
        sums = (
            links.join(state.hint("shuffle_hash"), links.src == state.id)
            .groupBy("dst")
            .agg(*[F.sum(F.col(f"x{i}") * F.col("w")).alias(f"s{i}") for i in live])
        )
        joined = state.join(sums.hint("shuffle_hash"), state.id == sums.dst, "left")
        columns: list[Column] = [F.col(name) for name in keep]
        for i in range(k):
            if done[i]:
                columns.append(F.col(f"x{i}"))
                continue
            source, dangling_to = vectors[i]
            value = F.lit(1.0 - damping) * (source if source is not None else uniform) + F.coalesce(
                F.col(f"s{i}"), F.lit(0.0)
            )
            if dangling_to is not None and spread[i] != 0.0:
                value = value + F.lit(spread[i]) * dangling_to
            columns += [value.alias(f"x{i}"), F.col(f"x{i}").alias(f"p{i}")]
        following = joined.select(*columns)
        # the next vector as a plan of one leaf: an iterate refers to the last one twice (its join and its
        # update), so without the cut its plan would double every iteration.  A reliable checkpoint every
        # checkpoint_every iterations, when a folder is given, is what survives a lost executor.
        reliable = options.checkpoint_dir is not None and iteration % options.checkpoint_every == 0
        following = following.checkpoint(eager=True) if reliable else following.localCheckpoint(eager=True)
        measures = []
        for i in live:
            measures += [
                F.sum(F.abs(F.col(f"x{i}") - F.col(f"p{i}"))),
                F.sum(F.when(F.col("sink"), F.col(f"x{i}")).otherwise(0.0)),
            ]
        found = following.agg(*measures).first()
        assert found is not None
        state.unpersist()
        state = following.select(*keep, *[f"x{i}" for i in range(k)])
        for position, i in enumerate(live):
            residual = float(found[2 * position] or 0.0)
            mass[i] = float(found[2 * position + 1] or 0.0)
            residuals[i].append(residual)
            if callback is not None:
                callback(i, iteration, residual)
            if residual < tol:
                done[i] = True
        seconds.append(time.perf_counter() - started)
        if all(done):
            break
    return state, residuals, done


def _dangling_layers(links: DataFrame, nodes: DataFrame, options: JobOptions) -> DataFrame:
    """``id``, ``layer``: pages removed round by round, each round every page left without out-links.

    The scipy engine's ``_dangling_layers``: a page counts its links, not
    their weight; round k takes the pages whose targets were all removed in
    rounds before k.
    """
    sources = links.select("src").distinct()
    frontier = nodes.join(sources, nodes.id == sources.src, "left_anti").select("id")
    removed = _persist(frontier.withColumn("layer", F.lit(1)))
    layer = 1
    while True:
        kept = links.join(removed, links.dst == removed.id, "left_anti").select("src").distinct()
        frontier = nodes.join(removed, "id", "left_anti").join(kept, F.col("id") == kept.src, "left_anti").select("id")
        frontier = _persist(frontier)
        if frontier.isEmpty():
            frontier.unpersist()
            return removed
        layer += 1
        grown = _checkpoint(removed.unionByName(frontier.withColumn("layer", F.lit(layer))), options)
        removed.unpersist()
        frontier.unpersist()
        removed = grown


def run(
    spark: SparkSession,
    links: DataFrame,
    nodes: DataFrame | None,
    vectors: Sequence[Vector],
    options: JobOptions,
    callback: Callback | None = None,
) -> JobResult:
    """PageRank of each vector over the graph ``links`` (see the module docstring for the columns)."""
    for vector in vectors:
        if vector.dangling not in DANGLING:
            raise JobError(f"dangling must be one of {', '.join(DANGLING)}, not {vector.dangling!r}")
    removing = {vector.dangling == "remove" for vector in vectors}
    if len(removing) > 1:
        raise JobError("dangling 'remove' ranks another graph (the core): run it in a pass of its own")
    if not 0 <= options.damping <= 1:
        raise JobError(f"damping must be in [0, 1], got {options.damping}")
    partitions = options.partitions or _partitions(spark, links)
    # the per-target sums come back in as many partitions as the vector: their join shuffles nothing either
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    # the iteration's partitioning is chosen here, once; adaptive execution would re-cut it every query
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    if options.checkpoint_dir:
        spark.sparkContext.setCheckpointDir(options.checkpoint_dir)

    if nodes is None:
        ends = links.select(F.col("src").alias("id")).union(links.select(F.col("dst").alias("id")))
        nodes = ends.distinct()
    key = _key_type((links, "src"), (links, "dst"), (nodes, "id"))
    links = _prepare_links(links, key, options)
    wanted = {name for vector in vectors for name in (vector.source, vector.start) if name}
    missing = wanted - set(nodes.columns)
    if missing:
        raise JobError(f"the nodes table has no column {', '.join(sorted(missing))}")
    nodes = _persist(
        nodes.select(F.col("id").cast(key).alias("id"), *[F.col(name) for name in sorted(wanted)]).repartition(
            partitions, "id"
        )
    )
    n = nodes.count()
    if n == 0:
        raise JobError("the graph has no nodes")
    e_columns = {name: _normalised(nodes, name, "E") for vector in vectors if (name := vector.source)}
    start_columns = {name: _normalised(nodes, name, "start") for vector in vectors if (name := vector.start)}
    if removing == {True}:
        return _run_removing(spark, links, nodes, n, vectors, options, partitions, callback)

    shared, out = _shares(links, partitions, options.damping)
    link_count = shared.count()
    sinks = nodes.join(out, nodes.id == out.src, "left").select(
        *[F.col(name) for name in nodes.columns], F.col("degree").isNull().alias("sink")
    )
    # E as a column (None: 1/n, a literal); where each vector's sinks send their rank
    plan: list[tuple[Column | None, Column | None]] = []
    columns = []
    for i, vector in enumerate(vectors):
        source = F.col(f"e{i}") if vector.source else None
        if vector.source:
            columns.append(e_columns[vector.source].alias(f"e{i}"))
        dangling_to = {"uniform": F.lit(1.0 / n), "source": source if source is not None else F.lit(1.0 / n)}.get(
            vector.dangling
        )
        plan.append((source, dangling_to))
        start = start_columns[vector.start] if vector.start else e_columns[vector.source] if vector.source else None
        columns.append((start if start is not None else F.lit(1.0 / n)).alias(f"x{i}"))
    state = _persist(sinks.select("id", "sink", *columns))
    nodes.unpersist()
    seconds: list[float] = []
    state, residuals, done = _iterate(shared, state, n, plan, options, callback, seconds)
    shared.unpersist()  # the ranks are a checkpoint of their own
    ranks = state.select("id", *[F.col(f"x{i}").alias(vector.column) for i, vector in enumerate(vectors)])
    return JobResult(ranks, [len(r) for r in residuals], residuals, done, 0, n, link_count, seconds)


def _run_removing(
    spark: SparkSession,
    links: DataFrame,
    nodes: DataFrame,
    n: int,
    vectors: Sequence[Vector],
    options: JobOptions,
    partitions: int,
    callback: Callback | None,
) -> JobResult:
    """The paper's section 2.7, as the scipy engine's ``_remove_and_restore`` does it."""
    damping = options.damping
    links = _persist(links)
    removed = _dangling_layers(links, nodes, options)
    rounds_row = removed.agg(F.max("layer").alias("rounds"), F.count(F.lit(1)).alias("pages")).first()
    assert rounds_row is not None
    rounds, removed_pages = int(rounds_row["rounds"] or 0), int(rounds_row["pages"])
    if removed_pages == 0:  # no sinks: the whole graph is the core, its sinks' rule moot
        plain = [Vector(v.source, v.start, "source", v.column) for v in vectors]
        removed.unpersist()
        return run(spark, links, nodes, plain, options, callback)
    if removed_pages == n:
        raise JobError("dangling='remove': every page is removed (the graph has no cycle)")
    weights = {name: _normalised(nodes, name, "E") for v in vectors if (name := v.source)}
    starts = {name: F.col(name).cast("double") for v in vectors if (name := v.start)}
    # E and start over all pages, normalised as given; the core's own are these restricted and normalised again
    full = nodes.select(
        "id",
        *[weights[v.source].alias(f"t{i}") for i, v in enumerate(vectors) if v.source],
        *[starts[v.start].alias(f"a{i}") for i, v in enumerate(vectors) if v.start],
    )
    full = _persist(full.join(removed, "id", "left").repartition(partitions, "id"))
    core = full.where(F.col("layer").isNull())
    core_n = core.count()
    sums = core.agg(
        F.count(F.lit(1)).alias("n"),
        *[F.sum(f"t{i}").alias(f"t{i}") for i, v in enumerate(vectors) if v.source],
        *[F.sum(f"a{i}").alias(f"a{i}") for i, v in enumerate(vectors) if v.start],
    ).first()
    scale: list[float] = []  # E's share of the core, per vector
    plan: list[tuple[Column | None, Column | None]] = []
    columns: list[Column] = []
    for i, v in enumerate(vectors):
        share = float(sums[f"t{i}"]) if v.source and sums is not None else core_n / n
        scale.append(share)
        source = None
        if v.source and share > 0:
            source = F.col(f"e{i}")
            columns.append((F.col(f"t{i}") / F.lit(share)).alias(f"e{i}"))
        plan.append((source, None))
        start: Column | None = source if source is not None else None
        if v.start and sums is not None and float(sums[f"a{i}"] or 0.0) > 0:
            start = F.col(f"a{i}") / F.lit(float(sums[f"a{i}"]))
        columns.append((start if start is not None else F.lit(1.0 / core_n)).alias(f"x{i}"))
    core_links = links.join(removed, links.src == removed.id, "left_anti")
    core_links = core_links.join(removed, core_links.dst == removed.id, "left_anti")
    shared, _ = _shares(core_links, partitions, damping)
    state = _persist(core.select("id", F.lit(False).alias("sink"), *columns))
    seconds: list[float] = []
    state, residuals, done = _iterate(shared, state, core_n, plan, options, callback, seconds)
    shared.unpersist()

    # restore the removed pages, the last round first, from the original out-weights (seed 002's back-substitution)
    original, _ = _shares(links, partitions, 1.0)
    k = len(vectors)
    scores = _persist(
        full.join(state.select("id", *[f"x{i}" for i in range(k)]), "id", "left").select(
            "id",
            "layer",
            *[F.col(f"t{i}") for i, v in enumerate(vectors) if v.source],
            *[F.coalesce(F.col(f"x{i}"), F.lit(0.0)).alias(f"x{i}") for i in range(k)],
        )
    )
    state.unpersist()
    for layer in range(rounds, 0, -1):
        into = original.join(scores.where(F.col("layer") == layer).select(F.col("id").alias("dst")), "dst", "left_semi")
        sums_in = (
            into.join(scores.hint("shuffle_hash"), into.src == scores.id)
            .groupBy("dst")
            .agg(*[F.sum(F.col(f"x{i}") * F.col("w")).alias(f"s{i}") for i in range(k)])
        )
        joined = scores.join(sums_in.hint("shuffle_hash"), scores.id == sums_in.dst, "left")
        columns = [F.col("id"), F.col("layer"), *[F.col(f"t{i}") for i, v in enumerate(vectors) if v.source]]
        for i, v in enumerate(vectors):
            per_unit = 1.0 / scale[i] if scale[i] > 0 else 0.0
            source = F.col(f"t{i}") if v.source else F.lit(1.0 / n)
            restored = F.lit((1.0 - damping) * per_unit) * source + F.lit(damping) * F.coalesce(
                F.col(f"s{i}"), F.lit(0.0)
            )
            columns.append(F.when(F.col("layer") == layer, restored).otherwise(F.col(f"x{i}")).alias(f"x{i}"))
        following = _checkpoint(joined.select(*columns), options)
        scores.unpersist()
        scores = following
    totals = scores.agg(*[F.sum(f"x{i}").alias(f"x{i}") for i in range(k)]).first()
    assert totals is not None
    ranks = scores.select(
        "id", *[(F.col(f"x{i}") / F.lit(float(totals[f"x{i}"]))).alias(v.column) for i, v in enumerate(vectors)]
    )
    full.unpersist()
    removed.unpersist()
    links_count = original.count()
    original.unpersist()
    links.unpersist()
    return JobResult(
        ranks,
        [len(r) + rounds for r in residuals],
        residuals,
        done,
        rounds,
        n,
        links_count,
        seconds,
    )


def pagerank(
    spark: SparkSession,
    links_path: str,
    nodes_path: str | None,
    out_path: str,
    vectors: Sequence[Vector],
    options: JobOptions,
    callback: Callback | None = None,
) -> JobResult:
    """Read the graph from Parquet, rank it, and write ``ranks`` and ``residuals`` under ``out_path``."""
    links = spark.read.parquet(links_path)
    nodes = spark.read.parquet(nodes_path) if nodes_path else None
    result = run(spark, links, nodes, vectors, options, callback)
    result.ranks.write.mode("overwrite").parquet(f"{out_path}/ranks")
    history = [
        (i, iteration, residual)
        for i, residuals in enumerate(result.residuals)
        for iteration, residual in enumerate(residuals, 1)
    ]
    schema = "vector int, iteration int, residual double"
    spark.createDataFrame(history, schema).coalesce(1).write.mode("overwrite").parquet(f"{out_path}/residuals")
    return result


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="rankstore.spark.job",
        description="PageRank of a Parquet link table on Spark (the scipy engine's maths); writes OUT/ranks.",
    )
    parser.add_argument("--links", required=True, help="Parquet: src, dst[, weight, nofollow]")
    parser.add_argument("--nodes", help="Parquet: id[, E column, start column] (default: the links' ends)")
    parser.add_argument("--out", required=True, help="folder for ranks/ and residuals/ (Parquet)")
    parser.add_argument("--damping", type=float, default=0.85)
    parser.add_argument("--tol", type=float, default=1e-10, help="stop when the L1 change is below this")
    parser.add_argument("--max-iter", type=int, default=1000)
    parser.add_argument("--dangling", choices=DANGLING, default=None, help="default: uniform, source with --source")
    parser.add_argument("--source", metavar="COLUMN", help="the nodes' column holding E (default: uniform)")
    parser.add_argument("--start", metavar="COLUMN", help="the nodes' column holding the start vector")
    parser.add_argument("--unweighted", action="store_true")
    parser.add_argument("--include-nofollow", action="store_true")
    parser.add_argument(
        "--partitions", type=int, help="default: spark.default.parallelism, or one a million links if fewer"
    )
    parser.add_argument("--checkpoint-every", type=int, default=10)
    parser.add_argument("--checkpoint-dir", help="reliable checkpoints there (default: localCheckpoint)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """``spark-submit rankstore/spark/job.py ...`` or ``python -m rankstore.spark.job ...``."""
    args = _arguments(argv)
    dangling = args.dangling or ("source" if args.source else "uniform")
    options = JobOptions(
        damping=args.damping,
        tol=args.tol,
        max_iter=args.max_iter,
        weighted=not args.unweighted,
        include_nofollow=args.include_nofollow,
        partitions=args.partitions,
        checkpoint_every=args.checkpoint_every,
        checkpoint_dir=args.checkpoint_dir,
    )
    from pyspark import SparkContext

    owned = SparkContext._active_spark_context is None  # spark-submit's, or one this process already runs
    spark = SparkSession.builder.appName("rankstore pagerank").getOrCreate()

    def show(vector: int, iteration: int, residual: float) -> None:
        print(f"iteration {iteration:>4}  L1 residual {residual:.3e}", file=sys.stderr, flush=True)

    try:
        result = pagerank(
            spark, args.links, args.nodes, args.out, [Vector(args.source, args.start, dangling)], options, show
        )
    except JobError as error:
        print(f"Error: {error}", file=sys.stderr)
        return 1
    finally:
        if owned:
            spark.stop()
    if not result.converged[0]:
        print(f"Error: did not converge to tol={args.tol:g} in {args.max_iter} iterations", file=sys.stderr)
        return 1
    print(f"ranked {result.nodes:,} nodes, {result.links:,} links in {result.iterations[0]} iterations: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
