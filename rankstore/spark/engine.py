"""The Spark engine of ``rankstore rank``: the ranking's problem to Parquet, Spark's answer back, the store untouched.

:func:`rankstore.ranking.rank` builds the problem (E, the dangling rule,
weights, nofollow, the warm start) and writes the version whatever the engine;
:class:`SparkSolver` only iterates: it writes the graph and the per-page
vectors as Parquet to a temporary folder, runs :mod:`rankstore.spark.job` on
them, and reads the ranks back with pyarrow.

Spark starts in a JVM of its own, whose output (log4j's lines, the JVM's
errors) goes to a log file, not the terminal: the user sees the residual
lines.  What stops Spark from starting (no Java, a Java older than 17, a
master that cannot be reached, a JVM that exits) is found before the store is
written and told as one :class:`SparkUnavailable` line.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..ranking import Problem, RankingError
from ..solver import ConvergenceError, Result

__all__ = ["SparkUnavailable", "SparkSolver", "parse_conf", "check_java", "check_master", "DEFAULT_MASTER"]

DEFAULT_MASTER = "local[*]"
JAVA_MINIMUM = 17  # pyspark 4 runs on Java 17 and later
_LOG4J = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")

# what the engine sets unless --spark-conf says otherwise
_DEFAULTS = {
    "spark.ui.showConsoleProgress": "false",  # its progress bar would write over the residual lines
    "spark.ui.enabled": "false",  # a port of its own for a run from the command line: off unless asked for
    "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{_LOG4J}",
    "spark.sql.shuffle.partitions": "2",  # reset by the job to its partitions
}


class SparkUnavailable(RankingError):
    """Spark cannot run here as asked; the message says what to do."""


def parse_conf(items: Sequence[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings as a dict; ValueError names the first that is not one."""
    conf = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value:
            raise ValueError(f"{item!r}: expected KEY=VALUE, e.g. spark.executor.memory=8g")
        conf[key.strip()] = value
    return conf


def check_java(env: Mapping[str, str] | None = None) -> str:
    """The java Spark will run (``$JAVA_HOME/bin/java``, else the one on the PATH); SparkUnavailable if unusable."""
    env = os.environ if env is None else env
    home = env.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java", path=env.get("PATH", ""))
    install = "install Java 17 or later (apt-get install default-jre-headless, or bash tools/setup.sh)"
    if not java or not os.access(java, os.X_OK):
        where = f"JAVA_HOME={home} has no bin/java" if home else "no java on the PATH"
        raise SparkUnavailable(f"Spark needs Java: {where}; {install}")
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SparkUnavailable(f"Spark needs Java: {java} does not run ({error}); {install}") from error
    found = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr + done.stdout)
    if done.returncode != 0 or found is None:
        raise SparkUnavailable(f"Spark needs Java: {java} -version failed; {install}")
    major = int(found.group(1)) if found.group(1) != "1" else int(found.group(2) or 0)  # "1.8.0" is Java 8
    if major < JAVA_MINIMUM:
        raise SparkUnavailable(f"Spark needs Java {JAVA_MINIMUM} or later, {java} is Java {major}; {install}")
    return java


def check_master(master: str, timeout: float = 5.0) -> None:
    """A standalone master (``spark://host:port[,host:port]``) must answer a connection.

    Spark itself would retry for about a minute and then stop the context
    from a thread of its own; a connection tried first says it at once.
    Other masters (local, yarn, k8s) are left to Spark.
    """
    if not master.startswith("spark://"):
        return
    errors = []
    for address in master[len("spark://") :].split(","):
        host, sep, port = address.rpartition(":")
        if not sep or not port.isdigit():
            raise SparkUnavailable(f"--master {master}: expected spark://HOST:PORT")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
            return
        except OSError as error:
            errors.append(f"{address}: {error.strerror or error}")
    raise SparkUnavailable(
        f"cannot reach the Spark master {master} ({'; '.join(errors)}): start it, or give --master local[*]"
    )


def _last_error(log: str) -> str | None:
    """The first line of the JVM's log that says what went wrong (the lines after it tend to be its echoes)."""
    try:
        with open(log, encoding="utf-8", errors="replace") as handle:
            lines = [line.strip() for line in handle if line.strip()]
    except OSError:
        return None
    for line in lines:
        if re.search(r"Error|Exception|Invalid|Could not|[Uu]nrecognized", line) and not line.startswith("at "):
            return line[:300]
    return lines[-1][:300] if lines else None


class SparkSolver:
    """Solves a :class:`rankstore.ranking.Problem` on Spark (a :data:`rankstore.ranking.Solver`).

    ``start()`` starts Spark (or joins the SparkSession this process already
    has), ``close()`` stops what it started.  With a master other than
    ``local``, the temporary folder (``$TMPDIR``) must be one every executor
    sees; on a real cluster run :mod:`rankstore.spark.job` with spark-submit.
    """

    def __init__(
        self,
        master: str = DEFAULT_MASTER,
        conf: Mapping[str, str] | None = None,
        partitions: int | None = None,
        checkpoint_every: int = 10,
        checkpoint_dir: str | None = None,
        app: str = "rankstore rank",
    ):
        self.app = app
        self.master = master
        self.conf = dict(conf or {})
        self.partitions = partitions
        self.checkpoint_every = checkpoint_every
        self.checkpoint_dir = checkpoint_dir
        self.spark: Any = None
        self.log: str | None = None
        self._own = False

    def start(self) -> SparkSolver:
        if self.spark is not None:
            return self
        check_java()
        check_master(self.master)
        try:
            from pyspark import SparkConf, SparkContext
            from pyspark.java_gateway import launch_gateway
            from pyspark.sql import SparkSession
        except ImportError as error:
            raise SparkUnavailable("Spark is not installed: pip install 'pagerank-proxy[spark]'") from error
        active = SparkContext._active_spark_context
        if active is not None:  # a session this process started (tests, a notebook): join it
            self.spark = SparkSession(active)
            return self
        conf = SparkConf().setMaster(self.master).setAppName(self.app)
        for key, value in {**_DEFAULTS, **self.conf}.items():
            conf.set(key, value)
        if self.master.startswith("local") and "spark.pyspark.python" not in self.conf:
            # Python run on the executors (rankstore extract's tasks) runs in this interpreter, with its packages,
            # not the first python3 on the PATH (pyspark reads the variable as the context starts)
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        handle, self.log = tempfile.mkstemp(prefix="rankstore-spark-", suffix=".log")
        try:
            gateway = None
            if SparkContext._gateway is None:  # the JVM's own output to the log file, not over the residual lines
                with os.fdopen(handle, "wb") as log:
                    gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})
            else:
                os.close(handle)
            context = SparkContext(conf=conf, gateway=gateway)
            context.setLogLevel("WARN")
        except Exception as error:
            reason = _last_error(self.log) or str(error).strip().splitlines()[0]
            raise SparkUnavailable(
                f"Spark did not start with --master {self.master}: {reason} (its log: {self.log})"
            ) from error
        self._own = True
        self.spark = SparkSession(context)
        return self

    def close(self) -> None:
        if self.spark is not None and self._own:
            self.spark.stop()
            if self.log:
                with contextlib.suppress(OSError):
                    os.unlink(self.log)
        self.spark = None

    def __enter__(self) -> SparkSolver:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __call__(self, problem: Problem, callback: Callable[[int, float], None] | None = None) -> Result:
        from . import job

        self.start()
        if problem.dangling not in job.DANGLING:
            raise ValueError(f"dangling must be one of {', '.join(job.DANGLING)}, not {problem.dangling!r}")
        folder = tempfile.mkdtemp(prefix="rankstore-spark-")
        try:
            links, nodes = write_problem(problem, folder)
            vector = job.Vector(
                "source" if problem.personalization is not None else None,
                "start" if problem.start is not None else None,
                problem.dangling,
            )
            options = job.JobOptions(
                damping=problem.damping,
                tol=problem.tol,
                max_iter=problem.max_iter,
                weighted=problem.weighted,
                include_nofollow=True,  # the problem's graph has the links that vote, no others
                partitions=self.partitions,
                checkpoint_every=self.checkpoint_every,
                checkpoint_dir=self.checkpoint_dir,
            )

            def show(_vector: int, iteration: int, residual: float) -> None:
                if callback is not None:
                    callback(iteration, residual)

            try:
                done = job.pagerank(self.spark, links, nodes, os.path.join(folder, "out"), [vector], options, show)
            except job.JobError as error:
                raise ValueError(str(error)) from error
            scores = read_ranks(os.path.join(folder, "out", "ranks"), problem.graph.n)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        result = Result(scores, done.iterations[0], done.residuals[0], done.converged[0], done.removed_rounds)
        if not result.converged:
            raise ConvergenceError(
                f"PageRank did not converge to tol={problem.tol:g} in {problem.max_iter} iterations "
                f"(last L1 residual {result.residuals[-1] if result.residuals else float('nan'):.3g})",
                result,
            )
        return result


def write_problem(problem: Problem, folder: str) -> tuple[str, str]:
    """The problem as the job reads it: ``links.parquet`` (src, dst[, weight]) and ``nodes.parquet``.

    Node ids are the graph's indices (0 .. n-1); the nodes carry E
    (``source``) and the warm start (``start``) where the problem has them.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    graph = problem.graph
    columns = {"src": pa.array(graph.indices, pa.int32()), "dst": pa.array(graph.targets(), pa.int32())}
    if problem.weighted and graph.weights is not None:
        columns["weight"] = pa.array(graph.weights, pa.float64())
    links = os.path.join(folder, "links.parquet")
    pq.write_table(pa.table(columns), links, row_group_size=1 << 20)
    node_columns = {"id": pa.array(np.arange(graph.n, dtype=np.int32))}
    if problem.personalization is not None:
        node_columns["source"] = pa.array(np.asarray(problem.personalization, dtype=np.float64))
    if problem.start is not None:
        node_columns["start"] = pa.array(np.asarray(problem.start, dtype=np.float64))
    nodes = os.path.join(folder, "nodes.parquet")
    pq.write_table(pa.table(node_columns), nodes)
    return links, nodes


def read_ranks(path: str, n: int, column: str = "score") -> np.ndarray:
    """The job's ``ranks`` folder as a score array by node index."""
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["id", column])
    ids = table.column("id").to_numpy()
    scores = np.zeros(n)
    scores[ids] = table.column(column).to_numpy()
    if len(ids) != n:
        raise RuntimeError(f"Spark returned {len(ids):,} ranks for {n:,} pages")
    return scores
