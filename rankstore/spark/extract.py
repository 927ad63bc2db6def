"""``rankstore extract --engine spark``: each crawl file a Spark task, read on an executor.

The executor runs :func:`rankstore.extraction.run_task`, the function a
process of the local pool runs: the same reader, parser and Parquet parts,
wherever the file is read.  It writes the file's two parts into the output
folder itself and hands back only the file's ledger line (its counts and
checksum), which the driver appends as each file ends: so the folder must be
one the driver and every executor see (a shared filesystem; on
``local[N]``, any folder), and each executor must reach the files (URLs, or
paths on that shared filesystem).

Each file is a job of one task, and the driver keeps as many in flight as the
cluster has cores (``defaultParallelism``) and twice that queued, from a pool
of threads (Spark runs jobs of several threads at once): results come as
files end, for the ledger and the progress line, and a file that takes long
holds one core, not the rest.  A job's overhead is milliseconds against a WAT
file's minutes.  Executors need pagerank-proxy installed (the same Python
packages as the driver).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from ..extraction import FileDone, FileFailed, FileTask, SparkOptions, run_task

__all__ = ["extract_on_spark", "run_on_spark"]


@contextlib.contextmanager
def extract_on_spark(tasks: list[FileTask], options: SparkOptions) -> Iterator[Iterator[FileDone | FileFailed]]:
    """Each task's result as it ends, on the session of ``options`` (or one started for the run, and stopped
    after it)."""
    if options.session is not None:
        yield run_on_spark(options.session, tasks)
        return
    from ..extraction import ExtractError
    from .engine import SparkSolver, SparkUnavailable

    solver = SparkSolver(options.master, options.conf, app="rankstore extract")
    try:
        solver.start()
    except SparkUnavailable as error:
        raise ExtractError(str(error)) from None
    try:
        yield run_on_spark(solver.spark, tasks)
    finally:
        solver.close()


def run_on_spark(session: Any, tasks: list[FileTask]) -> Iterator[FileDone | FileFailed]:
    """Run the tasks on ``session``'s executors, a job each, and give each result as its job ends."""
    context = session.sparkContext
    in_flight = max(1, int(context.defaultParallelism)) * 2

    def one(task: FileTask) -> FileDone | FileFailed:
        context.setJobDescription(f"rankstore extract {task.file}")
        return context.parallelize([task], 1).map(run_task).collect()[0]

    pending = iter(tasks)
    running: dict[Future, FileTask] = {}

    def submit(task: FileTask | None) -> None:
        if task is not None:
            running[pool.submit(one, task)] = task

    with ThreadPoolExecutor(in_flight, thread_name_prefix="rankstore-extract") as pool:
        try:
            for _ in range(in_flight):
                submit(next(pending, None))
            while running:
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    yield _result(future, running.pop(future))
                    submit(next(pending, None))
        finally:
            if running:  # stopped early (Ctrl-C, a failure of the driver's): the jobs still out are cancelled
                for future in running:
                    future.cancel()
                context.cancelAllJobs()


def _result(future: Future, task: FileTask) -> FileDone | FileFailed:
    """A job's result; a job that failed in Spark itself (an executor lost for good) is its file's failure."""
    error = future.exception()
    if error is None:
        return future.result()
    lines = [line.strip() for line in str(error).splitlines() if line.strip()] or [repr(error)]
    # an executor's Python error comes wrapped in the JVM's: its own last line says what it was
    raised = [line for line in lines if re.match(r"[\w.]+(Error|Exception)\b", line)]
    return FileFailed(task.file, f"the Spark job failed: {raised[-1] if raised else lines[0]}")
