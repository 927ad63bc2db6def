"""Every CLI failure is one line: every command walked with bad stores and bad options.

No traceback reaches the user; the exit status is 1 (2 for a usage error);
the message names the real cause; a store that was there is left as it was,
byte for byte.  The command table must name every command: a new command
without an entry fails ``test_every_command_is_walked``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading

import pytest

from rankstore.cli import cli, main
from rankstore.solver import ConvergenceError, pagerank
from rankstore.solver.graph import Graph

from conftest import data

URL = "http://127.0.0.1:1/nowhere.html"
# the arguments each command needs besides --store, and whether it writes
COMMANDS = {
    "build": ([data("small.warc")], True),
    "rank": (["-q", "--force"], True),  # --force: a store ranked already would be "unchanged", and not written
    "upgrade": ([], True),
    "info": ([], False),
    "top": ([], False),
    "show": ([URL], False),
    "backlinks": ([URL], False),
    "stats": ([], False),
    "export": ([], False),
    "builds": ([], False),
    "intersect": ([URL, "http://127.0.0.1:1/other.html"], False),
    "search": (["python"], False),
    "anchors": ([URL], False),
    "compare": (["pagerank", "pagerank"], False),
    "forget": (["--host", "127.0.0.1:1"], True),
    "usage": ([], False),
    "history": ([URL], False),
}
# per command, option values that are wrong (each must be a usage error, status 2)
BAD_OPTIONS = {
    "build": [["--format", "pdf"], ["--jobs", "0"], ["--commit-every", "-1"], ["--scheme", "ftp"]],
    "rank": [
        ["--damping", "1.5"],
        ["--tol", "0"],
        ["--max-iter", "0"],
        ["--dangling", "up"],
        ["--name", ""],
        ["--name", " "],
        ["--topic", "noequals"],
        ["--trusted", "/no/such/file"],
        ["--method", "lu"],
        ["--engine", "flink"],
        ["--engine", "spark", "--spark-conf", "nokeyvalue"],
        ["--engine", "spark", "--method", "bicgstab"],
        ["--spark-conf", "spark.driver.memory=2g"],  # Spark settings without --engine spark
        ["--master", "local[2]"],
        ["--since", "2026-11-01"],  # without --source-visits
        ["--source-visits", "--since", "yesterday"],
    ],
    "upgrade": [["--nope"]],
    "info": [["--nope"], ["--format", "csv"]],
    "top": [["--limit", "-1"], ["--format", "xml"]],
    "show": [["--format", "xml"]],
    "backlinks": [["--limit", "-1"], ["--offset", "-3"], ["--sort", "name"], ["--host", "--site"]],
    "stats": [["--nope"]],
    "export": [["--format", "xml"]],
    "builds": [["--format", "xml"]],
    "intersect": [["--group-by", "domain"], ["--limit", "-1"], ["--host", "--site"]],
    "search": [["--limit", "-1"]],
    "anchors": [["--limit", "-1"]],
    "compare": [["--format", "xml"], ["pagerank"]],  # a third ranking
    "forget": [["--before", "tomorrow"], ["--nope"]],
    "usage": [["--level", "domain"], ["--since", "yesterday"], ["--format", "xml"], ["--limit", "-1"]],
    "history": [["--format", "xml"], ["--plot", "history.txt"], ["--host", "--site"]],
}


def invoke(capsys, *args: str) -> tuple[int, str]:
    """Run the command line in this process as a user would (through ``main``): (status, all output)."""
    with pytest.raises(SystemExit) as stopped:
        main(list(args))
    captured = capsys.readouterr()
    code = stopped.value.code
    return (code if isinstance(code, int) else 1 if code else 0), captured.out + captured.err


def fingerprint(path: str) -> str | None:
    """The bytes of a store and its log, or None when there is no file."""
    if not os.path.isfile(path):
        return None
    digest = hashlib.sha256()
    for name in (path, path + "-wal"):
        if os.path.exists(name):
            with open(name, "rb") as handle:
                digest.update(handle.read())
    return digest.hexdigest()


def assert_one_line_error(status: int, output: str, expected: int = 1, says: str | None = None) -> None:
    assert "Traceback" not in output, output
    assert status == expected, output
    errors = [line for line in output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, output
    if says is not None:
        assert says in errors[0], output


@pytest.fixture(scope="module")
def ranked_once(python_doc_store, tmp_path_factory) -> str:
    """The python docs ranked, once for the module: ``ranked`` hands each test a copy of its own."""
    path = str(tmp_path_factory.mktemp("ranked") / "ranked.db")
    shutil.copy(python_doc_store, path)
    main_ok(["rank", "--store", path, "-q"])
    assert not os.path.exists(path + "-wal")  # the whole store is in the one file copied
    return path


@pytest.fixture
def ranked(ranked_once, tmp_path) -> str:
    path = str(tmp_path / "ranked.db")
    shutil.copy(ranked_once, path)
    return path


def main_ok(args: list[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(args)
    assert stopped.value.code in (0, None)


# commands whose failures are walked in their own test file
WALKED_ELSEWHERE = {
    "crawl": "tests/test_crawl.py (Scrapy's reactor runs once a process: its crawls run apart)",
    "watch": "tests/test_watch.py (a failure exits 2 there: its 1 says that a target changed)",
    "extract": "tests/test_extraction.py (it takes crawl files and a folder, no store)",
}


def test_every_command_is_walked():
    assert set(cli.commands) - set(WALKED_ELSEWHERE) == set(COMMANDS) == set(BAD_OPTIONS)


def _bad_stores(tmp_path) -> dict[str, tuple[str, str]]:
    """name -> (store path, what the error must say)."""
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not SQLite\n" * 100)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE notes (body TEXT)")
        db.execute("INSERT INTO notes VALUES ('someone else''s data')")
    newer = tmp_path / "newer.db"
    shutil.copy(data("schema4.db"), newer)
    with sqlite3.connect(newer) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    (tmp_path / "folder.db").mkdir()
    return {
        "missing folder": (str(tmp_path / "no" / "such" / "s.db"), "no such folder"),
        "a folder": (str(tmp_path / "folder.db"), "folder"),
        "garbage": (str(garbage), "not a SQLite database"),
        "another program's SQLite": (str(other), "without rankstore's tables"),
        "a newer schema": (str(newer), "newer than this rankstore"),
    }


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_bad_stores_give_one_line_and_stay_untouched(command, tmp_path, capsys):
    args, _ = COMMANDS[command]
    for name, (path, says) in _bad_stores(tmp_path).items():
        before = fingerprint(path)
        status, output = invoke(capsys, command, *args, "--store", path)
        if name == "a folder":  # click.Path refuses it as a bad option value
            assert "Traceback" not in output and status == 2 and "directory" in output, output
        elif name == "missing folder" and command != "build":
            assert_one_line_error(status, output, says="no such store")
        else:
            assert_one_line_error(status, output, says=says)
        assert fingerprint(path) == before, f"{command} changed the store at {name}"
        assert not os.path.exists(os.path.dirname(path)) or name != "missing folder"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_missing_store_is_not_created(command, tmp_path, capsys):
    args, _ = COMMANDS[command]
    path = str(tmp_path / "absent.db")
    if command == "build":
        args = [str(tmp_path / "no-such-crawl.warc")]
    status, output = invoke(capsys, command, *args, "--store", path)
    assert_one_line_error(status, output, says="no such")
    assert not os.path.exists(path)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_bad_options_are_usage_errors(command, ranked, capsys):
    args, _ = COMMANDS[command]
    before = fingerprint(ranked)
    for bad in BAD_OPTIONS[command]:
        status, output = invoke(capsys, command, *args, *bad, "--store", ranked)
        assert "Traceback" not in output, (bad, output)
        assert status == 2, (bad, output)
        assert "Error:" in output, (bad, output)
    assert fingerprint(ranked) == before


@pytest.mark.parametrize("command", ["build", "rank"])  # upgrade of a current store writes nothing
def test_a_busy_store_is_named_as_busy(command, ranked, capsys, monkeypatch):
    args, _ = COMMANDS[command]
    monkeypatch.setenv("RANKSTORE_BUSY_TIMEOUT", "0.2")
    holder = sqlite3.connect(ranked, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        status, output = invoke(capsys, command, *args, "--store", ranked)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert_one_line_error(status, output, says="busy")


def test_readers_go_on_while_a_writer_holds_the_lock(ranked, capsys, monkeypatch):
    monkeypatch.setenv("RANKSTORE_BUSY_TIMEOUT", "0.2")
    holder = sqlite3.connect(ranked, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    try:
        status, output = invoke(capsys, "top", "-n", "3", "--store", ranked)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert status == 0 and "Traceback" not in output


# Runs each command line through ``main``, as the console script does, in one process: its status and output
_MAINS = """
import contextlib, io, json, sys
from rankstore.cli import main
done = []
for args in json.loads(sys.argv[1]):
    out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(args)
            status = 0
        except SystemExit as stopped:
            status = stopped.code if isinstance(stopped.code, int) else 1 if stopped.code else 0
    out.flush()
    err.flush()
    done.append([status, out.buffer.getvalue().decode(), err.buffer.getvalue().decode()])
print(json.dumps(done))
"""


def _as_nobody(*commands: list[str]) -> list[subprocess.CompletedProcess]:
    """Each command line run by user nobody, all in one process of theirs (a start per command cost most
    of the test): the permissions are the kernel's, as for a user's shell."""
    done = subprocess.run(
        ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", sys.executable, "-c", _MAINS]
        + [json.dumps(commands)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return [
        subprocess.CompletedProcess(args, *result)
        for args, result in zip(commands, json.loads(done.stdout), strict=True)
    ]


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root to run a command as another user (setpriv)"
)
def test_a_read_only_store_reads_and_refuses_writes_in_one_line(ranked):
    import tempfile

    top = tempfile.mkdtemp(prefix="rankstore-readonly-")  # pytest's own folders are root's alone
    os.chmod(top, 0o755)
    folder = os.path.join(top, "readonly")
    os.mkdir(folder)
    path = os.path.join(folder, "s.db")
    shutil.copy(ranked, path)
    os.chmod(path, 0o444)
    os.chmod(folder, 0o555)
    before = fingerprint(path)
    reads = [[command, "--store", path] for command in ("top", "info", "stats", "export")]
    writes = [
        [command, *args, "--store", path]
        for command, (args, writes_it) in COMMANDS.items()
        if writes_it and command != "upgrade"
    ]
    new = ["build", data("small.warc"), "--store", os.path.join(folder, "new.db")]
    unreachable, *done = _as_nobody(["top", "--store", ranked], *reads, *writes, new)
    # under pytest's folder, which nobody may enter
    assert_one_line_error(
        unreachable.returncode, unreachable.stdout + unreachable.stderr, says="no permission to reach"
    )
    for read in done[: len(reads)]:
        assert read.returncode == 0 and "Traceback" not in read.stderr, (read.args, read.stderr)
    for write in done[len(reads) : -1]:
        assert_one_line_error(write.returncode, write.stdout + write.stderr, says="read-only")
    assert_one_line_error(done[-1].returncode, done[-1].stdout + done[-1].stderr, says="no permission to write")
    assert fingerprint(path) == before
    os.chmod(folder, 0o755)
    shutil.rmtree(top)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("chattr") is None, reason="needs root and chattr")
def test_an_immutable_store_refuses_writes_in_one_line(ranked, capsys):
    made = subprocess.run(["chattr", "+i", ranked], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"this file system has no immutable flag: {made.stderr.decode().strip()}")
    try:
        before = fingerprint(ranked)
        status, output = invoke(capsys, "rank", "-q", "--force", "--store", ranked)
        assert_one_line_error(status, output, says="read-only")
        assert fingerprint(ranked) == before
    finally:
        subprocess.run(["chattr", "-i", ranked], check=True)


@pytest.fixture
def small_disk(tmp_path):
    """A 3 MiB file system, mounted for the test (root only)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {made.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_is_named_and_the_store_keeps_its_last_commit(small_disk, tmp_path):
    edges = tmp_path / "edges.tsv"
    with open(edges, "w") as handle:
        for i in range(120_000):
            handle.write(f"http://a.example/page/{i}\thttp://b.example/some/longer/path/{i % 9000}\n")
    path = str(small_disk / "s.db")
    done = subprocess.run(
        [sys.executable, "-m", "rankstore", "build", str(edges), "--store", path, "-q"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert_one_line_error(done.returncode, done.stdout + done.stderr, says="disk is full")
    if os.path.exists(path):
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_library_errors_are_named():
    graph = Graph.from_edges([0, 1, 2, 2], [1, 2, 0, 1], 3)
    for method in ("power", "bicgstab"):
        with pytest.raises(ConvergenceError):
            pagerank(graph, max_iter=0, method=method)


def test_damping_zero_is_quiet_and_uniform(ranked, capsys):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        status, output = invoke(capsys, "rank", "--damping", "0", "--cold", "--store", ranked)
    assert status == 0 and "Warning" not in output, output


def test_a_warm_start_never_claims_negative_savings(ranked, capsys):
    # a warm start from a ranking far from this one (damping 0.5 then 0.99) can take longer than a cold start
    main_ok(["rank", "-q", "--damping", "0.5", "--store", ranked])
    status, output = invoke(capsys, "rank", "-q", "--damping", "0.99", "--method", "power", "--store", ranked)
    assert status == 0, output
    assert "-" not in output.split("warm start", 1)[-1].split("iterations saved")[0], output


def test_an_interrupt_is_one_line(ranked, capsys, monkeypatch):
    from rankstore import ranking

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ranking, "load_graph", interrupted)
    before = fingerprint(ranked)
    status, output = invoke(capsys, "rank", "-q", "--store", ranked)
    assert "Traceback" not in output and status in (1, 130), output
    assert fingerprint(ranked) == before


def test_an_unexpected_error_is_one_line_and_the_traceback_is_on_request(ranked, capsys, monkeypatch):
    from rankstore import ranking

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(ranking, "load_graph", broken)
    status, output = invoke(capsys, "rank", "-q", "--store", ranked)
    assert_one_line_error(status, output, says="internal error: ZeroDivisionError: a bug")
    monkeypatch.setenv("RANKSTORE_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        main(["rank", "-q", "--store", ranked])


def test_concurrent_rank_and_read_leave_no_traceback(ranked, capsys):
    errors: list[BaseException] = []

    def reader():
        try:
            for _ in range(5):
                with pytest.raises(SystemExit):
                    main(["top", "-n", "2", "--store", ranked])
        except BaseException as error:  # handed to the test
            errors.append(error)

    thread = threading.Thread(target=reader)
    thread.start()
    status, output = invoke(capsys, "rank", "-q", "--cold", "--store", ranked)
    thread.join()
    assert not errors and status == 0 and "Traceback" not in output
