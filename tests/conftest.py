"""Shared fixtures: real crawls of real sites, made by wget in the test session."""

from __future__ import annotations

import faulthandler
import fcntl
import json
import os
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
sys.path.insert(0, os.path.join(ROOT, "tools"))

from sitecrawl import crawl, serve_process  # noqa: E402

PYTHON_DOC = "/usr/share/doc/python3.11/html"
POSTGRES_DOC = "/usr/share/doc/postgresql-doc-15/html"


def data(name: str) -> str:
    return os.path.join(DATA, name)


def invoke(*args: str):
    """``rankstore ARGS`` through click's CliRunner, its exceptions raised."""
    from click.testing import CliRunner

    from rankstore.cli import cli

    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def run(*args: str) -> str:
    """``rankstore ARGS``, which must succeed; its standard output."""
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return result.stdout


def edge_store(folder, edges, *ranks: tuple[str, ...]) -> str:
    """A store built from an edge list of ``edges`` (SRC DST pairs) in ``folder``, ranked once by default and then
    by each of ``ranks`` (``rankstore rank`` arguments, say ``("--level", "site")``)."""
    path = os.path.join(str(folder), "edges.txt")
    with open(path, "w", encoding="utf-8") as out:
        out.write("".join(f"{src} {dst}\n" for src, dst in edges))
    store = os.path.join(str(folder), "s.db")
    run("build", path, "--store", store, "-q")
    for extra in ((), *ranks):
        run("rank", "--store", store, "-q", *extra)
    return store


def ranked_copy(source: str, folder) -> str:
    """A copy of the store ``source`` in ``folder``, ranked (its own, for a module whose tests may write to it)."""
    from click.testing import CliRunner

    from rankstore.cli import cli

    path = os.path.join(str(folder), os.path.basename(source))
    shutil.copy(source, path)
    result = CliRunner().invoke(cli, ["rank", "--store", path, "-q"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return path


def _need(path: str) -> None:
    if not os.path.isdir(path):
        pytest.fail(f"{path} is missing: run tools/setup.sh (apt-get install python3.11-doc postgresql-doc-15)")


class Crawl:
    def __init__(self, warc: str, mirror: str, base_url: str):
        self.warc = warc
        self.mirror = mirror
        self.base_url = base_url


SPARK = "spark"  # the scope of every test file that starts Spark (tests/test_spark*.py)


def _scope(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    return SPARK if os.path.basename(path).startswith("test_spark") else path


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The Spark files first: the longest unit of work starts at once, beside the others (stable otherwise)."""
    items.sort(key=lambda item: _scope(item.nodeid) != SPARK)


def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's ``loadfile``, but with every Spark file in one unit: each JVM wants both cores, and two
    at once took twice as long each."""
    from xdist.scheduler import LoadScopeScheduling

    class FilesSparkTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _scope(nodeid)

        def remove_node(self, node):
            """As ``LoadScopeScheduling``'s, but the test a crashed worker was running is not sent again with the
            rest of its unit: a hang ended by the guard (``pytest_runtest_protocol``) would hang once for each
            worker xdist restarts."""
            workload = self.assigned_work.pop(node)
            pending = [nodeid for unit in workload.values() for nodeid, done in unit.items() if not done]
            if not pending:
                return None
            for unit in workload.values():
                if pending[0] in unit:
                    unit[pending[0]] = True
            self.workqueue.update((scope, unit) for scope, unit in workload.items() if not all(unit.values()))
            for other in self.assigned_work:
                self._reschedule(other)
            return pending[0]

    config.option.loadscopereorder = False  # the order collected, Spark's unit first
    return FilesSparkTogether(config, log)


def _shared_root(tmp_path_factory) -> Path:
    """The folder every xdist worker of this run shares: the parent of the workers' own base temps."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once(tmp_path_factory, name: str, make: Callable[[Path], Any]) -> Any:
    """``make(folder)``'s result (JSON), made by the first worker of the run that asks, under a lock, and
    read back by every other: a crawl or a store built and ranked costs seconds to minutes, and each
    worker (and each module that imports the fixture) would otherwise make its own.  What ``make``
    writes in ``folder`` is shared: tests copy it before they change it."""
    root = _shared_root(tmp_path_factory)
    done = root / f"{name}.json"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            folder = root / name
            shutil.rmtree(folder, ignore_errors=True)  # a worker's attempt that failed
            folder.mkdir()
            done.write_text(json.dumps(make(folder)))
    return json.loads(done.read_text())


ORIGINS = "origins.pids"  # the origin servers started for the run, stopped when the run ends


def pytest_sessionfinish(session) -> None:
    """The run's origins stop with its controller (or its only process): a worker that started one may
    finish while the other still browses it."""
    if hasattr(session.config, "workerinput"):
        return
    pids = Path(str(session.config._tmp_path_factory.getbasetemp())) / ORIGINS
    if pids.exists():
        for pid in pids.read_text().split():
            try:
                os.kill(int(pid), signal.SIGTERM)
            except ProcessLookupError:
                pass


HANGS = "hangs"  # each process's stacks, written there if one of its tests hangs past its timeout and a grace
HANG_GRACE = float(os.environ.get("PAGERANK_TEST_HANG_GRACE", 60))  # seconds past pytest-timeout's own limit
_HANG_FILE: list = []  # this process's file for them, opened at its first test


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """A last resort against a test that hangs.  pytest-timeout's alarm raises in whatever the main thread
    runs: inside an event loop's callback the loop catches and logs it, and the test goes on waiting (a
    clean-clone CI spent its 90 minutes so).  Past the timeout and a grace, faulthandler (a C thread, which
    needs no interpreter lock) writes every thread's stack to the run's folder and ends the process: xdist
    names the test as crashed and starts another worker, and the run's summary prints the stacks."""
    marker = item.get_closest_marker("timeout")
    limit = float(marker.args[0]) if marker is not None and marker.args else 0.0
    limit = limit or float(item.config.getoption("timeout", None) or item.config.getini("timeout") or 300)
    if not _HANG_FILE:
        folder = _shared_root(item.config._tmp_path_factory) / HANGS
        folder.mkdir(exist_ok=True)
        _HANG_FILE.append(open(folder / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{os.getpid()}.txt", "w"))
    out = _HANG_FILE[0]
    out.write(f"{item.nodeid} hung past {limit + HANG_GRACE:.0f} s:\n")
    out.flush()
    faulthandler.dump_traceback_later(limit + HANG_GRACE, exit=True, file=out)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        out.seek(0)
        out.truncate()


def pytest_terminal_summary(terminalreporter) -> None:
    """The stacks of a process ended by the hang guard (:func:`pytest_runtest_protocol`)."""
    config = terminalreporter.config
    if hasattr(config, "workerinput"):
        return
    for path in sorted((Path(str(config._tmp_path_factory.getbasetemp())) / HANGS).glob("*.txt")):
        text = path.read_text(errors="replace").strip()
        if text:
            terminalreporter.write_sep("=", f"hung: {path.name}")
            terminalreporter.write_line(text)


_SPARK: list = []  # the Spark files' one session, while they run


@pytest.fixture(scope="session")
def spark():
    """One local[2] SparkSession for every Spark file (starting a JVM costs seconds on 2 cores); closed
    after the last of them (``pytest_runtest_teardown``): they run together, first."""
    from rankstore.spark import engine

    # the JIT's first tier alone: the session lives for the Spark files' few minutes of short jobs, and the
    # optimising compiler's threads took the cores those jobs need (alternated runs: it starts and warms faster)
    options = f"{engine._DEFAULTS['spark.driver.extraJavaOptions']} -XX:TieredStopAtLevel=1"
    solver = engine.SparkSolver("local[2]", conf={"spark.driver.extraJavaOptions": options}).start()
    _SPARK.append(solver)
    yield solver
    solver.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    """The Spark session stops with the Spark files' unit: no JVM idles beside the rest of the run, and no
    later test in this process joins it (``SparkSolver.start`` joins a session the process started)."""
    yield
    if _SPARK and _scope(item.nodeid) == SPARK and (nextitem is None or _scope(nextitem.nodeid) != SPARK):
        _SPARK.pop().close()


@pytest.fixture(scope="session")
def python_doc_crawl(tmp_path_factory) -> Crawl:
    """python3.11-doc served on 127.0.0.1 and crawled by wget --mirror --warc-file, once for the run."""
    _need(PYTHON_DOC)
    if shutil.which("wget") is None:
        pytest.fail("wget is missing: run tools/setup.sh")

    def make(work: Path) -> dict[str, str]:
        # the origin stays up for the run (its own process, stopped by pytest_sessionfinish): the proxy
        # tests, on either worker, browse the site that was crawled
        server, port = serve_process(PYTHON_DOC)
        with open(_shared_root(tmp_path_factory) / ORIGINS, "a") as pids:
            pids.write(f"{server.pid}\n")
        url = f"http://127.0.0.1:{port}/"
        warc, mirror = str(work / "python-doc.warc.gz"), str(work / "mirror")
        crawl(url, warc, mirror)
        return {"warc": warc, "mirror": mirror, "base_url": url}

    return Crawl(**once(tmp_path_factory, "python-doc-crawl", make))


def _built_store(path: str, *sources: str, base_url: str | None = None) -> str:
    from rankstore.build import build
    from rankstore.store import Store

    with Store(path) as store:
        build(store, list(sources), base_url=base_url, jobs=2)
    return path


@pytest.fixture(scope="session")
def python_doc_store(python_doc_crawl, tmp_path_factory) -> str:
    """A store built from the wget crawl of python3.11-doc (not yet ranked), once for the run."""
    return once(tmp_path_factory, "py-store", lambda folder: _built_store(str(folder / "py.db"), python_doc_crawl.warc))


@pytest.fixture(scope="session")
def postgres_doc_store(tmp_path_factory) -> str:
    """A store built from postgresql-doc-15's HTML directory, once for the run."""
    _need(POSTGRES_DOC)
    return once(
        tmp_path_factory,
        "pg-store",
        lambda folder: _built_store(str(folder / "pg.db"), POSTGRES_DOC, base_url="http://postgres.local/docs/"),
    )


@pytest.fixture(params=["c", "python"])
def wat_reader(request, monkeypatch) -> str:
    """The WAT reader's twins a test runs on: "c" (``rankstore.sources._fastwat``, which reads an envelope's
    fields and lists its links, and ``rankstore._fastlisted``, which reads them into a page's links) or
    "python" (the envelope parsed whole, ``wat.unique_links``, ``extract.listed_targets``).  Forked processes
    (``extract -j``) read as their parent; Spark's executors always run the C twins."""
    from rankstore import extract
    from rankstore.sources import wat

    if request.param == "c":
        assert wat._fastwat is not None, "rankstore.sources._fastwat did not build (is a C compiler installed?)"
        assert extract._fastlisted is not None, "rankstore._fastlisted did not build (is a C compiler installed?)"
    else:
        monkeypatch.setattr(wat, "_fastwat", None)
        monkeypatch.setattr(extract, "_fastlisted", None)
    return request.param


@pytest.fixture(params=["tokens", "tree"])
def extractor(request, monkeypatch) -> str:
    """How ``extract`` reads a page a test runs on: "tokens" (``rankstore._fastextract`` where it can tell the
    tree would agree, lexbor's tree elsewhere) or "tree" (lexbor's tree alone).  Forked processes read as
    their parent."""
    from rankstore import extract

    if request.param == "tokens":
        assert extract._fastextract is not None, "rankstore._fastextract did not build (is a C compiler installed?)"
    else:
        monkeypatch.setattr(extract, "_fastextract", None)
    return request.param


@pytest.fixture(params=["c", "python"])
def scanner(request, monkeypatch) -> str:
    """The rewriter's scanner twin a test runs on, "c" (``proxy_addon._fastscan``) or "python"
    (``proxy_addon._scan_python``), set where the rewriter chooses it: ``rewrite.scanner``.
    ``@pytest.mark.parametrize("scanner", ["c"], indirect=True)`` runs a test on one."""
    from proxy_addon import _scan_python, rewrite

    if request.param == "c":
        assert rewrite.fast is not None, "proxy_addon._fastscan did not build (is a C compiler installed?)"
        monkeypatch.setattr(rewrite, "scanner", rewrite.fast)
    else:
        monkeypatch.setattr(rewrite, "scanner", _scan_python)
    return request.param
