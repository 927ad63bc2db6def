"""The spark-submit job on a standalone Spark cluster, as users run one: a master and a worker on 127.0.0.1.

Both are started from the pyspark package's own install (its ``bin/`` and
``jars/`` are a Spark distribution's) with ``spark-class``, the way
``sbin/start-master.sh`` and ``start-worker.sh`` start them: a master, and a
worker of one core and little memory that registers with it.  The job is
then submitted with ``spark-submit --master spark://...`` as the README says,
from the store's Parquet export; its executor runs in the worker (its folder
under the worker's work directory proves it), and the ranks it writes are
read back and compared with the scipy engine's.  Master and worker are
stopped in any case.  Skipped only where Java is missing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")

from test_cli_errors import invoke

from rankstore.ranking import Problem, load_graph, scipy_solver
from rankstore.spark import engine
from rankstore.store import Store

AGREE = 1e-8
DAMPING = 0.15  # few of Spark's iterations (each a job on the cluster) to a tolerance far under AGREE
ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "rankstore" / "spark" / "job.py"
START_SECONDS = 120  # a JVM's start on a busy 2-core machine
# every JVM here (master, worker, driver, executor) lives for one short job: the JIT's first tier alone compiles far
# less for such a short life, and the optimising compiler's threads would take the cores the job needs
QUICK_JVM = "-XX:TieredStopAtLevel=1"


@dataclass(frozen=True)
class Cluster:
    """A running standalone cluster: its master's URL, and the worker's folder where executors run."""

    master: str
    work: Path
    logs: Path
    env: dict[str, str]


def _spark_home() -> Path:
    import pyspark

    home = Path(pyspark.__file__).parent
    assert (home / "bin" / "spark-class").exists() and (home / "jars").is_dir(), home
    return home


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for(log: Path, text: str, process: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.5)
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
    pytest.fail(f"the {what} did not start (exit {process.poll()}): {tail}")


def _stop(process: subprocess.Popen) -> None:
    """Stop a daemon this test started (its own process group: spark-class execs the JVM)."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    try:
        java = engine.check_java()
    except engine.SparkUnavailable as error:
        pytest.skip(f"no standalone Spark cluster without Java: {error}")
    home = _spark_home()
    folder = tmp_path_factory.mktemp("standalone")
    logs, work = folder / "logs", folder / "work"
    logs.mkdir()
    work.mkdir()
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "JAVA_HOME": str(Path(os.path.realpath(java)).parent.parent),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_DAEMON_JAVA_OPTS": QUICK_JVM,
        "SPARK_LOG_DIR": str(logs),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    port = _free_port()
    master_url = f"spark://127.0.0.1:{port}"
    spark_class = str(home / "bin" / "spark-class")
    daemons: list[subprocess.Popen] = []

    def start(name: str, arguments: list[str], ready: str) -> None:
        """A daemon of spark-class, its output in logs/NAME.log, waited for until that log says ``ready``."""
        log = logs / f"{name}.log"
        with open(log, "wb") as out:
            daemon = subprocess.Popen(
                [spark_class, *arguments], stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        daemons.append(daemon)
        _wait_for(log, ready, daemon, name)

    try:
        start(
            "master",
            ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
            + ["--port", str(port), "--webui-port", str(_free_port())],
            "I have been elected leader",
        )
        start(
            "worker",
            ["org.apache.spark.deploy.worker.Worker", master_url, "--host", "127.0.0.1"]
            + ["--port", str(_free_port()), "--webui-port", str(_free_port())]
            + ["--cores", "1", "--memory", "1g", "--work-dir", str(work)],
            "Successfully registered with master",
        )
        yield Cluster(master_url, work, logs, env)
    finally:
        for daemon in reversed(daemons):
            _stop(daemon)


def test_spark_submit_on_a_standalone_cluster(cluster, python_doc_store, tmp_path, capsys):
    links, pages = str(tmp_path / "links.parquet"), str(tmp_path / "pages.parquet")
    for what, path in (("links", links), ("pages", pages)):
        status, output = invoke(
            capsys, "export", "--what", what, "--format", "parquet", "-o", path, "--store", python_doc_store
        )
        assert status == 0, output
    out = tmp_path / "out"
    submit = [
        str(_spark_home() / "bin" / "spark-submit"),
        "--master",
        cluster.master,
        "--conf",
        "spark.driver.host=127.0.0.1",
        "--driver-memory",
        "512m",
        "--executor-memory",
        "512m",
        "--driver-java-options",
        QUICK_JVM,
        "--conf",
        f"spark.executor.extraJavaOptions={QUICK_JVM}",
        "--total-executor-cores",
        "1",
        "--conf",
        "spark.ui.enabled=false",
        str(JOB),
        *("--links", links, "--nodes", pages, "--out", str(out), "--damping", str(DAMPING), "--tol", "1e-10"),
    ]
    done = subprocess.run(submit, capture_output=True, text=True, timeout=600, env=cluster.env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-5000:]
    # the job's lines (spark-submit hands the Python driver's stderr to its own stdout)
    assert "L1 residual" in done.stdout + done.stderr, done.stdout
    # the executor ran in the worker: the application's folder is in the worker's work directory
    applications = [entry.name for entry in cluster.work.iterdir() if entry.name.startswith("app-")]
    assert len(applications) == 1, applications
    assert "Registering app rankstore pagerank" in (cluster.logs / "master.log").read_text(errors="replace")
    executors = list((cluster.work / applications[0]).iterdir())
    assert executors and (executors[0] / "stderr").exists()

    ranks = pq.read_table(str(out / "ranks")).sort_by("id")
    with Store(python_doc_store, readonly=True) as store:
        graph = load_graph(store).graph
    assert ranks["id"].to_pylist() == list(range(1, graph.n + 1))  # page ids, as exported
    assert f"ranked {graph.n:,} nodes" in done.stdout, done.stdout
    problem = Problem(graph, DAMPING, None, "uniform", 1e-10, 1000, None, True)
    scores = ranks["score"].to_numpy()
    for method in ("power", "bicgstab"):
        reference = scipy_solver(method)(problem)
        assert np.abs(scores - reference.scores).sum() <= AGREE, (method, np.abs(scores - reference.scores).sum())
    history = pq.read_table(str(out / "residuals")).sort_by("iteration")["residual"].to_pylist()
    assert len(history) > 5 and history[-1] < 1e-10


def test_spark_submit_of_the_extraction_job_on_a_standalone_cluster(cluster, python_doc_crawl, tmp_path):
    """``spark-submit rankstore/spark/extract_job.py`` as the README shows it: the files read in the cluster's
    executor, the parts the local engine writes, and the ledger the driver keeps."""
    from watgen import write_wat

    from rankstore.extraction import extract
    from rankstore.sources.extracted import read_ledger

    wat = str(tmp_path / "python-doc.warc.wat.gz")
    write_wat(python_doc_crawl.warc, wat)
    out = tmp_path / "out"
    submit = [
        str(_spark_home() / "bin" / "spark-submit"),
        *("--master", cluster.master, "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.ui.enabled=false"),
        *("--driver-memory", "512m", "--executor-memory", "512m", "--total-executor-cores", "1"),
        *("--driver-java-options", QUICK_JVM, "--conf", f"spark.executor.extraJavaOptions={QUICK_JVM}"),
        str(ROOT / "rankstore" / "spark" / "extract_job.py"),
        *(wat, python_doc_crawl.warc, "--out", str(out)),
    ]
    done = subprocess.run(submit, capture_output=True, text=True, timeout=600, env=cluster.env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-5000:]
    assert "extracted 2 file(s)" in done.stdout and "44,056 links" in done.stdout, done.stdout
    assert "Registering app rankstore extract" in (cluster.logs / "master.log").read_text(errors="replace")
    applications = [entry for entry in cluster.work.iterdir() if entry.name.startswith("app-")]
    assert len(applications) >= 1  # its executor ran in the worker (the ranking job's app may be there too)
    local = tmp_path / "local"
    assert extract([wat, python_doc_crawl.warc], str(local), jobs=2).links == 44_056
    assert read_ledger(str(out)) == read_ledger(str(local))  # the same files, checksums, parts and counts
    for what in ("links", "pages"):
        for part in os.listdir(local / what):
            assert pq.read_table(str(out / what / part)).equals(pq.read_table(str(local / what / part)))
    again = subprocess.run(submit, capture_output=True, text=True, timeout=600, env=cluster.env, cwd=tmp_path)
    assert again.returncode == 0 and "2 done before" in again.stdout, again.stdout
