"""Shared fixtures: real crawls of real sites, made by wget in the test session."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
sys.path.insert(0, os.path.join(ROOT, "tools"))

from sitecrawl import crawl, serve  # noqa: E402

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

    config.option.loadscopereorder = False  # the order collected, Spark's unit first
    return FilesSparkTogether(config, log)


@pytest.fixture(scope="session")
def python_doc_crawl(tmp_path_factory):
    """python3.11-doc served on 127.0.0.1 and crawled by wget --mirror --warc-file."""
    _need(PYTHON_DOC)
    if shutil.which("wget") is None:
        pytest.fail("wget is missing: run tools/setup.sh")
    work = tmp_path_factory.mktemp("python-doc-crawl")
    warc = str(work / "python-doc.warc.gz")
    mirror = str(work / "mirror")
    # the origin stays up for the session: the proxy tests browse the site that was crawled
    with serve(PYTHON_DOC) as url:
        crawl(url, warc, mirror)
        yield Crawl(warc, mirror, url)


def _built_store(path: str, *sources: str, base_url: str | None = None) -> str:
    from rankstore.build import build
    from rankstore.store import Store

    with Store(path) as store:
        build(store, list(sources), base_url=base_url, jobs=2)
    return path


@pytest.fixture(scope="session")
def python_doc_store(python_doc_crawl, tmp_path_factory) -> str:
    """A store built from the wget crawl of python3.11-doc (not yet ranked)."""
    return _built_store(str(tmp_path_factory.mktemp("py-store") / "py.db"), python_doc_crawl.warc)


@pytest.fixture(scope="session")
def postgres_doc_store(tmp_path_factory) -> str:
    """A store built from postgresql-doc-15's HTML directory."""
    _need(POSTGRES_DOC)
    return _built_store(
        str(tmp_path_factory.mktemp("pg-store") / "pg.db"), POSTGRES_DOC, base_url="http://postgres.local/docs/"
    )


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
