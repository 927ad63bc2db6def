"""The run's guard against a hanging test (``conftest.pytest_runtest_protocol``), on a test that hangs where
pytest-timeout's alarm cannot end it: inside an event loop's callback, which catches the alarm's exception."""

import os
import subprocess
import sys
import time

from conftest import ROOT

HANGING = """
import asyncio
import time

import pytest


@pytest.mark.timeout(1)
async def test_hangs_where_the_alarm_is_caught():
    loop = asyncio.get_running_loop()

    def spin():  # the loop is always in a callback: the alarm's exception lands there, and is logged
        started = time.monotonic()
        while time.monotonic() - started < 0.2:
            pass
        loop.call_soon(spin)

    loop.call_soon(spin)
    await asyncio.sleep(3600)


def test_after_it():
    pass
"""


GUARD = """
import importlib.util

spec = importlib.util.spec_from_file_location("suite_conftest", {path!r})
suite = importlib.util.module_from_spec(spec)
spec.loader.exec_module(suite)
pytest_runtest_protocol = suite.pytest_runtest_protocol
pytest_terminal_summary = suite.pytest_terminal_summary
pytest_xdist_make_scheduler = suite.pytest_xdist_make_scheduler
"""


def test_a_hanging_test_is_ended_named_and_not_run_again_and_the_run_goes_on(tmp_path):
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "conftest.py").write_text(GUARD.format(path=os.path.join(ROOT, "tests", "conftest.py")))
    (tests / "test_hanging.py").write_text(HANGING)
    env = dict(os.environ, PAGERANK_TEST_HANG_GRACE="2")
    started = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "2",
            "-p",
            "no:cacheprovider",
            "-c",
            os.devnull,
            "--rootdir",
            str(tmp_path),
            "-o",
            "asyncio_mode=auto",
            "--timeout",
            "1",
            str(tests),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "crashed while running 'tests/test_hanging.py::test_hangs_where_the_alarm_is_caught'" in output
    assert "1 failed, 1 passed" in output  # ended once, not again on each worker xdist starts in its place
    assert "hung: gw" in output and ("in spin" in output or "in _run_once" in output)  # its stacks, printed
    assert time.monotonic() - started < 60
