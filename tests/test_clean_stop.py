"""A clean stop and honest options (issue 47, 9).

Ctrl-C in a terminal sends SIGINT to the whole foreground process group: the
proxy and its rewriting workers alike.  The proxy stops them itself; nothing
of theirs reaches the terminal.  A misspelled option of ours given with
``--set`` and a port out of range are refused in one line of ours, before the
proxy listens.
"""

from __future__ import annotations

import http.server
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import pytest
from test_hostile import _refused
from test_proxy_e2e import free_port

from conftest import ROOT, data

SCRIPT = os.path.join(os.path.dirname(sys.executable), "pagerank-proxy")  # the console script a user runs
NOISE = ("Traceback", "KeyboardInterrupt", "Unknown child process", "Task was destroyed", "Exception ignored")


def _as_a_terminal_starts_it() -> None:
    """SIGINT at its default, as a shell gives a foreground command: a process started with SIGINT ignored (a
    pytest-xdist worker ignores it, and its children inherit that) never turns Ctrl-C into KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture(scope="module")
def small_store(tmp_path_factory) -> str:
    store = str(tmp_path_factory.mktemp("clean") / "s.db")
    rankstore = os.path.join(os.path.dirname(sys.executable), "rankstore")  # as the proxy's processes read it
    for command in (["build", data("small.warc.gz")], ["rank"]):
        subprocess.run([rankstore, *command, "--store", store, "-q"], cwd=ROOT, check=True, timeout=120)
    return store


@pytest.fixture(scope="module")
def origin():
    page = b"<!doctype html><title>t</title><body>" + b"".join(b'<a href="/p%d">p</a>' % i for i in range(3000))

    class Origin(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the base class's name
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Origin)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/page.html"
    server.shutdown()


def _spawn(store: str, *arguments: str) -> subprocess.Popen:
    """The console script in a process group of its own, as a shell starts a command in a terminal."""
    return subprocess.Popen(
        [SCRIPT, "--store", store, *arguments],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_as_a_terminal_starts_it,
    )


def _start(store: str, *arguments: str) -> tuple[subprocess.Popen, str]:
    """:func:`_spawn`, and its banner's line once it listens."""
    process = _spawn(store, *arguments)
    assert process.stdout is not None
    for line in process.stdout:  # pytest's timeout bounds the wait
        if line.startswith("pagerank-proxy: listening on"):
            return process, line
    process.kill()
    pytest.fail(f"the proxy never listened: {process.communicate()[1]}")


def _workers(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.parametrize("load", ["idle", "under load"])
def test_ctrl_c_stops_the_proxy_and_its_workers_without_a_word(small_store, origin, load):
    """SIGINT to the process group, as a terminal's Ctrl-C: exit status 0, nothing on standard error, every
    worker gone."""
    process, banner = _start(small_store, "--port", str(free_port()), "--", "--set", "pagerank_inline_bytes=0")
    port = int(re.search(r":(\d+)/ with", banner).group(1))
    deadline = time.monotonic() + 20
    while len(_workers(process.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = _workers(process.pid)
    assert workers
    stop = threading.Event()
    served = [0]

    def client() -> None:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{port}"}))
        while not stop.is_set():
            try:
                with opener.open(origin, timeout=10) as response:
                    response.read()
                served[0] += 1
            except OSError:
                pass

    threads = [threading.Thread(target=client, daemon=True) for _ in range(4 if load == "under load" else 0)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 20
    while threads and served[0] < 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # the workers have read their modules: blocked on their next job, as a proxy left waiting is
    os.killpg(process.pid, signal.SIGINT)
    try:
        stdout, stderr = process.communicate(timeout=15)
    finally:
        stop.set()
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert not [noise for noise in NOISE if noise in stdout + stderr], stderr
    assert stderr == ""
    assert process.returncode == 0
    assert all(_gone(worker) for worker in workers)


def test_a_lost_worker_is_replaced_without_a_warning(small_store):
    """A worker killed from outside: the proxy starts another, and says nothing of a child it does not know."""
    process, _ = _start(small_store, "--port", str(free_port()))
    # the workers start beside the proxy's banner: until their list holds still
    deadline = time.monotonic() + 20
    before: list[int] = []
    while (not before or before != _workers(process.pid)) and time.monotonic() < deadline:
        before = _workers(process.pid)
        time.sleep(0.3)
    os.kill(before[0], signal.SIGKILL)
    deadline = time.monotonic() + 20
    while (before[0] in _workers(process.pid) or len(_workers(process.pid)) < len(before)) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.05)
    assert before[0] not in _workers(process.pid) and len(_workers(process.pid)) == len(before)
    time.sleep(0.5)
    os.killpg(process.pid, signal.SIGINT)
    try:
        stdout, stderr = process.communicate(timeout=15)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert "Unknown child process" not in stdout + stderr
    assert stderr == "" and process.returncode == 0


@pytest.mark.parametrize(
    "arguments, says",
    [
        (
            ["--", "--set", "pagerank_max_link=5"],
            "--set pagerank_max_link: no such option; did you mean pagerank_max_links?",
        ),
        (["--", "--set=pagerank_panels=3"], "--set pagerank_panels: no such option; did you mean pagerank_panel?"),
        (["--", "--set", "rankstor=x.db"], "--set rankstor: no such option; did you mean rankstore?"),
        (["--", "--set", "pagerank_zzz=1"], "--set pagerank_zzz: no such option (`mitmdump --options` lists them"),
    ],
)
def test_an_unknown_option_of_ours_is_one_line_before_listening(arguments, says, small_store, capsys, monkeypatch):
    status, stdout, stderr = _refused(capsys, monkeypatch, ["--store", small_store, *arguments])
    assert status == 2 and stdout == ""
    assert stderr.strip().count("\n") == 0 and stderr.startswith(f"pagerank-proxy: error: {says}"), stderr


def test_mitmdump_with_the_addon_refuses_an_unknown_option_of_ours(small_store):
    mitmdump = os.path.join(os.path.dirname(sys.executable), "mitmdump")
    done = subprocess.run(
        [mitmdump, "-q", "-s", os.path.join(ROOT, "proxy_addon", "addon.py"), "-p", str(free_port())]
        + ["--set", f"rankstore={small_store}", "--set", "pagerank_max_link=5"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "pagerank_max_link: no such option; did you mean pagerank_max_links?" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.parametrize("port", ["99999", "65536", "-1"])
def test_a_port_out_of_range_is_one_line_of_ours(port, small_store, capsys, monkeypatch):
    status, stdout, stderr = _refused(capsys, monkeypatch, ["--store", small_store, "--port", port])
    assert status == 2 and stdout == ""
    assert stderr == f"pagerank-proxy: error: --port must be between 0 (any free port) and 65535, not {port}\n"


@pytest.mark.parametrize("given", [["-p", "99999"], ["--set", "listen_port=70000"]])
def test_a_port_out_of_range_given_to_mitmdump_is_one_line_of_ours(given, small_store):
    done = subprocess.run(
        [SCRIPT, "--store", small_store, "--", *given],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "listening" not in done.stdout
    assert done.stderr == (
        f"pagerank-proxy: error: --port must be between 0 (any free port) and 65535, not {given[1].split('=')[-1]}\n"
    )


def test_port_0_listens_on_a_free_port_and_says_which(small_store):
    process, banner = _start(small_store, "--port", "0")
    try:
        port = int(re.search(r":(\d+)/ with", banner).group(1))
        assert port != 0
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{port}"}))
        with opener.open("http://pagerank.proxy/", timeout=30) as response:
            assert response.status == 200
    finally:
        os.killpg(process.pid, signal.SIGINT)
        process.communicate(timeout=15)


@pytest.mark.parametrize("after", [0.3, 0.8])
def test_ctrl_c_while_the_proxy_starts_is_quiet(small_store, after):
    """Ctrl-C before mitmdump's event loop takes SIGINT (the store checked, the modules loading): no traceback,
    exit status 130, as a shell reports a command that SIGINT ended (0 if the proxy was serving by then)."""
    process = _spawn(small_store, "--port", str(free_port()))
    time.sleep(after)
    os.killpg(process.pid, signal.SIGINT)
    try:
        stdout, stderr = process.communicate(timeout=60)  # a loaded machine starts it slowly
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert not [noise for noise in NOISE if noise in stdout + stderr], stderr
    assert process.returncode == (0 if "listening on" in stdout else 130)
