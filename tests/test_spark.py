"""The Spark engine against the scipy engine on the documentation graphs, and its failures, in local[2].

One SparkSession for the Spark files (conftest's ``spark``: starting one costs seconds).  The
agreement runs several rank vectors in one pass over the links (the job's own
feature for topics), so that every E and dangling rule costs one iteration
loop per graph, not one each: uniform E with the ``uniform`` and ``leak``
rules (``source`` is ``uniform`` when E is), a personalised E with
``uniform``, ``source`` and ``leak``, and (on postgres-docs) both E with
``remove`` in a pass of their own (it ranks the core graph).  The reference is the scipy engine's
power method at the same tolerance, and its default, BiCGSTAB.  python-docs at
the paper's damping, 0.85; postgres-docs at 0.5.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")

from test_cli_errors import assert_one_line_error, fingerprint, invoke

from rankstore.cli import main
from rankstore.ranking import ENGINES, Problem, load_graph, scipy_solver
from rankstore.spark import engine, job
from rankstore.store import Store

TOL = 1e-10
AGREE = 1e-8


def _personalised(n: int) -> np.ndarray:
    """E on a few dozen pages with unequal weights (a topic's seed set), none where the graph has no pages."""
    rng = np.random.default_rng(14)
    e = np.zeros(n)
    chosen = rng.choice(n, size=min(40, n), replace=False)
    e[chosen] = rng.random(len(chosen)) + 0.1
    return e


def _agreement(spark, store_path: str, tmp_path, damping: float, remove: bool, partitions: int | None) -> None:
    with Store(store_path, readonly=True) as store:
        graph = load_graph(store).graph
    n, e = graph.n, _personalised(graph.n)
    links, _ = engine.write_problem(Problem(graph, damping, None, "uniform", TOL, 1000, None, True), str(tmp_path))
    nodes = str(tmp_path / "nodes-e.parquet")
    pq.write_table(pa.table({"id": pa.array(np.arange(n, dtype=np.int32)), "e": pa.array(e)}), nodes)
    cases = {  # output column -> (E, dangling)
        "u_uniform": (None, "uniform"),
        "u_leak": (None, "leak"),
        "e_uniform": ("e", "uniform"),
        "e_source": ("e", "source"),
        "e_leak": ("e", "leak"),
    }
    removing = {"u_remove": (None, "remove"), "e_remove": ("e", "remove")}
    # postgres-docs in two partitions: the graphs here are small enough for the job's default of one, and the
    # links' and the vector's partitioning by id, which lets their joins shuffle no link, needs more than one
    options = job.JobOptions(damping=damping, tol=TOL, partitions=partitions)
    for batch in (cases, removing) if remove else (cases,):
        vectors = [job.Vector(source, None, dangling, column) for column, (source, dangling) in batch.items()]
        out = str(tmp_path / f"out-{len(vectors)}")
        result = job.pagerank(spark.spark, links, nodes, out, vectors, options)
        assert all(result.converged), result.iterations
        for i, (column, (source, dangling)) in enumerate(batch.items()):
            scores = engine.read_ranks(f"{out}/ranks", n, column)
            problem = Problem(graph, damping, e if source else None, dangling, TOL, 1000, None, True)
            power = scipy_solver("power")(problem)
            default = scipy_solver("bicgstab")(problem)
            assert np.abs(scores - power.scores).sum() <= AGREE, (column, np.abs(scores - power.scores).sum())
            assert np.abs(scores - default.scores).sum() <= AGREE, (column, np.abs(scores - default.scores).sum())
            # the float64 iteration: no more steps than the scipy engine's, whose float32 runs add a few near noise
            assert result.iterations[i] <= power.iterations + 3, (column, result.iterations[i], power.iterations)
            if dangling == "leak":
                assert scores.sum() < 1
            else:
                assert abs(scores.sum() - 1) < 1e-9


def test_agreement_on_python_doc(spark, python_doc_store, tmp_path):
    _agreement(spark, python_doc_store, tmp_path, 0.85, remove=False, partitions=None)


def test_agreement_on_postgres_doc(spark, postgres_doc_store, tmp_path):
    # another damping than the default, honoured by both engines; and fewer iterations (each a
    # Spark job of a few tenths of a second here)
    # the ``remove`` rule's pass (the core graph ranked, then the pages removed restored) here alone: its
    # loop is as long as the others'
    _agreement(spark, postgres_doc_store, tmp_path, 0.5, remove=True, partitions=2)


def test_rank_engine_spark_writes_a_version_as_scipy_does(spark, python_doc_store, tmp_path, capsys):
    path = str(tmp_path / "s.db")
    shutil.copy(python_doc_store, path)
    # a low damping, few iterations to the tolerance: each of Spark's is a job of its own
    fast = ["--damping", "0.2", "--tol", "1e-12", "--store", path]
    status, output = invoke(capsys, "rank", "--engine", "spark", "--master", "local[2]", "--name", "s", *fast)
    assert status == 0, output
    assert "s iteration    1  L1 residual" in output and "ranked s v1" in output, output
    assert "WARN" not in output and "log4j" not in output, output  # the JVM's log is not the user's
    status, output = invoke(capsys, "rank", "-q", "--method", "power", "--name", "p", *fast)
    assert status == 0, output
    with Store(path, readonly=True) as store:
        ours, theirs = store.rankings.ranking("s"), store.rankings.ranking("p")
        assert ours.params["engine"] == "spark" and ours.params["method"] == "power"
        assert theirs.params["engine"] == "scipy"
        assert len(ours.residuals) == ours.iterations and ours.residuals[-1] < 1e-12
        _, a = store.rankings.scores_of(ours.id)
        _, b = store.rankings.scores_of(theirs.id)
        assert np.abs(a - b).sum() <= AGREE
        assert (
            store.rankings.scores_of(ours.id)[0].tolist() == store.rankings.scores_of(theirs.id)[0].tolist()
        )  # the same pages
    # a second version warm-starts from the first, as the scipy engine's do
    status, output = invoke(capsys, "rank", "-q", "--force", "--engine", "spark", "--name", "s", *fast)
    assert status == 0 and "warm start from v1" in output, output


def test_unreachable_master_is_one_line_and_the_store_untouched(spark, python_doc_store, tmp_path, capsys):
    path = str(tmp_path / "s.db")
    shutil.copy(python_doc_store, path)
    with Store(path) as store:
        store.ensure_derived()
    before = fingerprint(path)
    status, output = invoke(capsys, "rank", "--engine", "spark", "--master", "spark://127.0.0.1:1", "--store", path)
    assert_one_line_error(status, output, says="cannot reach the Spark master spark://127.0.0.1:1")
    assert fingerprint(path) == before


def _rank_in_a_process(path: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rankstore", "rank", "--engine", "spark", "--store", path, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.fixture
def ranked_copy(python_doc_store, tmp_path) -> str:
    path = str(tmp_path / "s.db")
    shutil.copy(python_doc_store, path)
    with pytest.raises(SystemExit):
        main(["rank", "-q", "--store", path])
    return path


def test_no_java_is_one_line_and_the_store_untouched(ranked_copy, tmp_path):
    before = fingerprint(ranked_copy)
    with Store(ranked_copy, readonly=True) as store:
        versions = [(r.name, r.version) for r in store.rankings.all()]
    env = {**os.environ, "PATH": str(tmp_path / "nowhere"), "JAVA_HOME": str(tmp_path / "no-jdk")}
    done = _rank_in_a_process(ranked_copy, env=env)
    assert_one_line_error(done.returncode, done.stdout + done.stderr, says="Spark needs Java")
    assert "default-jre-headless" in done.stderr
    env.pop("JAVA_HOME")
    done = _rank_in_a_process(ranked_copy, env=env)
    assert_one_line_error(done.returncode, done.stdout + done.stderr, says="no java on the PATH")
    assert fingerprint(ranked_copy) == before
    with Store(ranked_copy, readonly=True) as store:
        assert [(r.name, r.version) for r in store.rankings.all()] == versions


def test_a_spark_that_fails_to_start_is_one_line(ranked_copy):
    before = fingerprint(ranked_copy)
    done = _rank_in_a_process(ranked_copy, "--spark-conf", "spark.driver.memory=lots", env=dict(os.environ))
    assert_one_line_error(done.returncode, done.stdout + done.stderr, says="Spark did not start")
    assert "Invalid maximum heap size" in done.stderr  # the JVM's own reason, from its log
    assert fingerprint(ranked_copy) == before
    log = done.stderr.rsplit("(its log: ", 1)[1].split(")")[0]
    os.unlink(log)  # kept for the user; the test's to remove


def test_java_versions_and_conf_are_read():
    from rankstore import choices
    from rankstore.spark import job

    assert ENGINES == choices.ENGINES == ("scipy", "spark")
    assert job.DANGLING == choices.DANGLING  # the job keeps its own copy: spark-submit runs it without the package
    assert engine.parse_conf(["spark.executor.memory=8g", "a.b=c=d"]) == {"spark.executor.memory": "8g", "a.b": "c=d"}
    for bad in ("nokeyvalue", "=x", "k="):
        with pytest.raises(ValueError):
            engine.parse_conf([bad])
    with pytest.raises(engine.SparkUnavailable, match="expected spark://HOST:PORT"):
        engine.check_master("spark://nohostport")
    engine.check_master("local[2]")  # not a standalone master: left to Spark


def test_the_job_runs_from_parquet_without_the_store(spark, python_doc_store, tmp_path):
    """What spark-submit runs on a cluster: the store's own export, read by the job's command line."""
    links, pages = str(tmp_path / "links.parquet"), str(tmp_path / "pages.parquet")
    for what, path in (("links", links), ("pages", pages)):
        with pytest.raises(SystemExit) as stopped:
            main(["export", "--what", what, "--format", "parquet", "-o", path, "--store", python_doc_store])
        assert stopped.value.code in (0, None)
    out = str(tmp_path / "out")
    argv = ["--links", links, "--nodes", pages, "--out", out, "--damping", "0.2", "--tol", "1e-12"]
    assert job.main(argv) == 0
    ranks = pq.read_table(f"{out}/ranks").sort_by("id")
    with Store(python_doc_store, readonly=True) as store:
        graph = load_graph(store).graph
    reference = scipy_solver("power")(Problem(graph, 0.2, None, "uniform", 1e-12, 1000, None, True))
    assert ranks["id"].to_pylist() == list(range(1, graph.n + 1))  # page ids, as exported
    assert np.abs(ranks["score"].to_numpy() - reference.scores).sum() <= AGREE
    history = pq.read_table(f"{out}/residuals").sort_by("iteration")["residual"].to_pylist()
    assert len(history) > 5 and history[-1] < 1e-12
