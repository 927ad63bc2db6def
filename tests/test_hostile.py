"""Hostile origins through a real proxy on loopback: a compression bomb, a page of too many links, a broken body.

Fast versions of the soak's cases (tools/soak.py runs them at full size beside
a normal client): the bomb passes on untouched without inflating in the
proxy's own process, and other clients keep being served meanwhile.
"""

from __future__ import annotations

import gzip
import http.server
import threading
import time
import urllib.request
import zlib

import pytest
from barkit import bar_count, outside_panel, strip_insertions
from test_proxy_e2e import Proxy

BOMB_INFLATED = 200 * 1024 * 1024  # far over pagerank_max_body (8 MiB)


def _bomb() -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = b"<p>" + b"a" * (1 << 20)
    parts = [compressor.compress(b"<!doctype html><title>bomb</title>")]
    parts += [compressor.compress(block) for _ in range(BOMB_INFLATED >> 20)]
    return b"".join(parts) + compressor.flush()


def _brotli_bomb() -> bytes:
    """1 GiB of page in under 2 KB of brotli."""
    import brotli

    compressor = brotli.Compressor(quality=5)
    block = b"<p>" + b"a" * (1 << 20)
    parts = [compressor.process(b"<!doctype html><title>bomb</title>")]
    parts += [compressor.process(block) for _ in range(1024)]
    return b"".join(parts) + compressor.finish()


PAGES: dict[str, tuple[bytes, dict[str, str]]] = {}


class _Origin(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the base class's name
        body, headers = PAGES[self.path]
        self.send_response(200)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def origin():
    html = "text/html; charset=utf-8"
    PAGES["/bomb"] = (_bomb(), {"Content-Type": html, "Content-Encoding": "gzip"})
    PAGES["/brotli-bomb"] = (_brotli_bomb(), {"Content-Type": html, "Content-Encoding": "br"})
    normal = b"<!doctype html><title>t</title><body>" + b"".join(b'<a href="/p%d">p</a>' % i for i in range(20))
    PAGES["/normal"] = (normal, {"Content-Type": html})
    PAGES["/gzipped"] = (gzip.compress(normal), {"Content-Type": html, "Content-Encoding": "gzip"})
    PAGES["/many"] = (b"<!doctype html><body>" + b'<a href="/x">x</a>' * 30_000, {"Content-Type": html})
    PAGES["/cut"] = (gzip.compress(normal)[:-20], {"Content-Type": html, "Content-Encoding": "gzip"})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Origin)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def small_store(tmp_path_factory) -> str:
    """A small crawl built and ranked (its pages, and its hosts as ``hostrank``): a good store for the tests of
    the proxy's start and its arguments."""
    from click.testing import CliRunner

    from rankstore.cli import cli

    from conftest import data

    store = str(tmp_path_factory.mktemp("small") / "s.db")
    for command in (["build", data("small.warc.gz")], ["rank"], ["rank", "--level", "host"]):
        assert CliRunner().invoke(cli, [*command, "--store", store, "-q"]).exit_code == 0
    return store


@pytest.fixture(scope="module")
def proxy(python_doc_store, tmp_path_factory):
    import shutil

    from click.testing import CliRunner

    from rankstore.cli import cli

    path = str(tmp_path_factory.mktemp("hostile") / "s.db")
    shutil.copy(python_doc_store, path)
    assert CliRunner().invoke(cli, ["rank", "--store", path, "-q"]).exit_code == 0
    running = Proxy(path)
    yield running
    running.stop()


def fetch(proxy: Proxy, url: str, timeout: float = 60) -> tuple[bytes, dict]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{proxy.port}"}))
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    with opener.open(request, timeout=timeout) as response:
        return response.read(), dict(response.headers)


def peak_rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


def test_a_bomb_passes_untouched_without_inflating_in_the_proxy(proxy, origin):
    fetch(proxy, origin + "/normal")  # warm up
    before = peak_rss(proxy.process.pid)
    timings: list[float] = []
    stop = threading.Event()

    def other_client():
        while not stop.is_set():
            started = time.perf_counter()
            body, _ = fetch(proxy, origin + "/normal")
            timings.append(time.perf_counter() - started)
            assert bar_count(outside_panel(body)) == 20  # annotated meanwhile: a bar for each of its links

    thread = threading.Thread(target=other_client)
    thread.start()
    try:
        body, headers = fetch(proxy, origin + "/bomb")
    finally:
        stop.set()
        thread.join()
    assert body == PAGES["/bomb"][0] and headers.get("Content-Encoding") == "gzip"  # the original bytes
    assert peak_rss(proxy.process.pid) - before < 100 * 1024 * 1024
    assert timings and max(timings) < 5  # nobody waited for the bomb


def _family(pid: int) -> list[int]:
    """A process and its children (the proxy and its rewriting workers)."""
    with open(f"/proc/{pid}/task/{pid}/children") as handle:
        return [pid, *(int(child) for child in handle.read().split())]


def test_a_brotli_bomb_passes_untouched_in_bounded_memory_in_every_process_of_the_proxy(proxy, origin):
    """1 GiB of brotli in under 2 KB: it passes on as its own bytes, fast, and no process of the proxy (mitmproxy's,
    or a worker's, where bodies are decoded) holds more than a few times pagerank_max_body to refuse it."""
    fetch(proxy, origin + "/normal")  # warm up: the workers have started
    family = _family(proxy.process.pid)
    assert len(family) > 1, "no worker processes"
    for pid in family:
        with open(f"/proc/{pid}/clear_refs", "w") as handle:
            handle.write("5")  # VmHWM from here
    before = {pid: resident(pid) for pid in family}
    started = time.perf_counter()
    body, headers = fetch(proxy, origin + "/brotli-bomb")
    took = time.perf_counter() - started
    assert body == PAGES["/brotli-bomb"][0] and headers.get("Content-Encoding") == "br"  # the original bytes
    rose = {pid: peak_rss(pid) - before[pid] for pid in family}
    assert max(rose.values()) < 64 * 1024 * 1024, {pid: f"{grown >> 20} MiB" for pid, grown in rose.items()}
    assert took < 5


def resident(pid: int) -> int:
    with open(f"/proc/{pid}/status") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith("VmRSS:"))


def test_gzip_pages_are_annotated_and_sent_decoded(proxy, origin):
    """A gzip page is undone, annotated and sent without a Content-Encoding (compressed, its size would vary with
    what the bars and the panel show), its Content-Length that of the decoded page as sent."""
    body, headers = fetch(proxy, origin + "/gzipped")
    assert "Content-Encoding" not in headers and int(headers["Content-Length"]) == len(body)
    assert body[:2] != b"\x1f\x8b"  # not gzip
    assert bar_count(outside_panel(body)) == 20
    assert strip_insertions(body) == PAGES["/normal"][0]  # the origin's page, decoded, and only our insertions


def test_a_page_over_the_link_budget_passes_untouched(proxy, origin):
    started = time.perf_counter()
    body, _ = fetch(proxy, origin + "/many")
    assert body == PAGES["/many"][0]
    assert time.perf_counter() - started < 5


def test_a_cut_gzip_body_passes_untouched(proxy, origin):
    body, _ = fetch(proxy, origin + "/cut")
    assert body == PAGES["/cut"][0]


def test_the_reserved_host_never_goes_upstream(proxy):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{proxy.port}"}))
    with pytest.raises(urllib.error.HTTPError) as answer:
        opener.open("http://pagerank.proxy/no-such-page", timeout=30)
    assert answer.value.code == 404
    assert b"Traceback" not in answer.value.read()


class _Slow(http.server.BaseHTTPRequestHandler):
    """/silent: accepts and says nothing; /trickle.html, /trickle.bin: headers, then a byte every 0.3 s."""

    def do_GET(self):  # noqa: N802 - the base class's name
        if self.path == "/silent":
            time.sleep(30)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html" if self.path.endswith(".html") else "application/octet-stream")
        self.send_header("Content-Length", "100")
        self.end_headers()
        try:
            for _ in range(100):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.3)
        except OSError:  # the proxy gave up on us
            pass

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def slow_origin_and_proxy(python_doc_store, tmp_path_factory):
    """A slow origin, and a proxy with a 2 s deadline (its own process, as pagerank-proxy runs)."""
    import shutil
    import subprocess
    import sys

    from click.testing import CliRunner
    from test_proxy_e2e import free_port, wait_for_port

    from rankstore.cli import cli

    from conftest import ROOT

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    store = str(tmp_path_factory.mktemp("slow") / "s.db")
    shutil.copy(python_doc_store, store)
    assert CliRunner().invoke(cli, ["rank", "--store", store, "-q"]).exit_code == 0
    port = free_port()
    log = open(tmp_path_factory.mktemp("slow-log") / "proxy.log", "w")
    process = subprocess.Popen(
        [sys.executable, "-m", "proxy_addon.cli", "--store", store, "--port", str(port), "--idle-timeout", "2"],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port(port, process)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{port}"}))
        yield f"http://127.0.0.1:{server.server_address[1]}", opener
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()
        server.shutdown()


STALLS = [("/silent", b"sent no response within 2 s"), ("/trickle.html", b"had not sent the whole page within 2 s")]


def _stalled(opener, url: str) -> tuple[int, bytes, float]:
    """(status, body, seconds) of a request the proxy must answer with its 504."""
    started = time.perf_counter()
    with pytest.raises(urllib.error.HTTPError) as answer:
        opener.open(url, timeout=25)
    return answer.value.code, answer.value.read(), time.perf_counter() - started


def _trickled(opener, url: str) -> tuple[bytes, float, bytes, float]:
    """(first byte, its seconds, the next eleven, the seconds of all) of a download that trickles."""
    started = time.perf_counter()
    with opener.open(url, timeout=25) as response:
        first = response.read(1)  # the client sees the bytes as they come, not after the deadline
        first_seconds = time.perf_counter() - started
        rest = response.read(11)  # enough bytes, a byte every 0.3 s, to go on past the 2 s deadline
    return first, first_seconds, rest, time.perf_counter() - started


@pytest.fixture(scope="module")
def slow_answers(slow_origin_and_proxy):
    """The slow origin's requests of the tests below, made at once, each timed by itself: each waits out
    the proxy's deadline, and one after another they waited out as many.  {path: what its helper returns}."""
    from concurrent.futures import ThreadPoolExecutor

    origin, opener = slow_origin_and_proxy
    with ThreadPoolExecutor(max_workers=len(STALLS) + 1) as pool:
        runs = {path: pool.submit(_stalled, opener, origin + path) for path, _ in STALLS}
        runs["/trickle.bin"] = pool.submit(_trickled, opener, origin + "/trickle.bin")
        return {path: run.result() for path, run in runs.items()}


@pytest.mark.parametrize("path, says", STALLS)
def test_a_stalled_or_trickling_origin_gets_a_504_after_the_idle_timeout(slow_answers, path, says):
    code, body, seconds = slow_answers[path]
    assert code == 504
    assert says in body
    assert 1.9 < seconds < 6


def test_a_trickling_download_streams_on_untimed(slow_answers):
    first, first_seconds, rest, seconds = slow_answers["/trickle.bin"]
    assert first == b"x" and first_seconds < 1.5
    assert rest == b"x" * 11 and seconds > 2.5  # past the deadline, still flowing


def test_a_bad_store_is_one_line_before_listening(tmp_path):
    import subprocess
    import sys

    from conftest import ROOT

    bad = tmp_path / "bad.db"
    bad.write_bytes(b"not sqlite" * 100)
    done = subprocess.run(
        [sys.executable, "-m", "proxy_addon.cli", "--store", str(bad), "--port", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "listening" not in done.stdout
    assert done.stderr.strip().count("\n") == 0 and "not a rankstore store" in done.stderr


def _refused(capsys, monkeypatch, argv: list[str]) -> tuple[object, str, str]:
    """``pagerank-proxy ARGV`` through its ``main`` in this process (the console script's function), which must
    refuse before it starts mitmdump: (exit status, standard output, standard error).  The processes of the
    console script are the other tests'; a start each cost most of these."""
    from proxy_addon import cli

    def starts(*args, **kwargs):
        raise AssertionError("the proxy went on to start mitmdump")

    monkeypatch.setattr(cli, "run", starts)
    with pytest.raises(SystemExit) as stopped:
        cli.main(argv)
    said = capsys.readouterr()
    return stopped.value.code, said.out, said.err


@pytest.mark.parametrize(
    "arguments, says",
    [
        (["--panel", "1000"], "pagerank_panel must be between 0 and 100"),
        (["--idle-timeout", "-1"], "pagerank_idle_timeout must be 0"),
        (["--", "--set", "pagerank_large_page_rate=-1"], "pagerank_large_page_rate must be 0"),
        (["--", "--set=pagerank_max_links=many"], "pagerank_max_links must be a whole number, not 'many'"),
        (["--", "--set", "pagerank_max_body=10"], "pagerank_max_body must be at least 1024 bytes"),
        (["--", "--set", "pagerank_inline_bytes=-5"], "pagerank_inline_bytes must be between 0"),
    ],
)
def test_a_bad_option_is_one_line_before_listening(arguments, says, small_store, capsys, monkeypatch):
    status, stdout, stderr = _refused(capsys, monkeypatch, ["--store", small_store, "--port", "1", *arguments])
    assert status == 2 and "listening" not in stdout
    assert stderr.strip().count("\n") == 0 and stderr.startswith(f"pagerank-proxy: error: {says}")


def test_an_argument_mitmdump_does_not_know_is_named_without_hints_about_ours(small_store):
    import subprocess
    import sys

    from conftest import ROOT

    store = small_store
    done = subprocess.run(
        [sys.executable, "-m", "proxy_addon.cli", "--store", store, "--port", "1", "--", "--bogus"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "unrecognized arguments: --bogus" in done.stderr
    assert "deprecated" not in done.stdout + done.stderr  # our own --port is not mitmdump's
    assert "listening" not in done.stdout  # mitmdump's arguments are parsed before the banner


def test_listening_is_said_once_listening_and_never_on_a_port_taken(small_store):
    """The banner comes once the port is bound and the addon has started; a second proxy on the same port
    exits 1 with mitmdump's reason, and never says it listens."""
    import subprocess
    import sys

    from conftest import ROOT

    store = small_store
    running = Proxy(store)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            running.output.seek(0)
            if "pagerank-proxy: listening on" in running.output.read():
                break
            time.sleep(0.1)
        else:
            pytest.fail("the proxy listens but never said so")
        done = subprocess.run(
            [sys.executable, "-m", "proxy_addon.cli", "--store", store, "--port", str(running.port)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        said = running.stop()
    assert said.count("pagerank-proxy: listening on") == 1
    assert done.returncode == 1 and "is taken (another program listens there)" in done.stderr
    assert "pagerank-proxy: listening" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    "arguments, says",
    [
        (["--ranking", "hostrank"], "hostrank ranks hosts, not pages: choose a page ranking (pagerank)"),
        (["--", "--set", "pagerank_ranking=hostrank"], "hostrank ranks hosts, not pages: choose a page ranking"),
        (["--ranking", "nosuch"], "no ranking 'nosuch' (the store's page rankings: pagerank)"),
    ],
)
def test_a_host_ranking_or_none_is_refused_as_the_page_ranking_in_one_line_before_listening(
    arguments, says, small_store, capsys, monkeypatch
):
    """Host scores are by host number: read by page id they would be another page's score.  An unknown name
    lists the page rankings there are to choose from (hostrank is not among them)."""
    status, stdout, stderr = _refused(capsys, monkeypatch, ["--store", small_store, "--port", "1", *arguments])
    assert status == 1 and stdout == ""
    assert stderr.strip().count("\n") == 0 and stderr.startswith(f"pagerank-proxy: error: {says}")


def test_mitmdump_with_the_addon_script_refuses_a_host_ranking(small_store):
    import os
    import subprocess
    import sys

    from test_proxy_e2e import free_port

    from conftest import ROOT

    mitmdump = os.path.join(os.path.dirname(sys.executable), "mitmdump")
    done = subprocess.run(
        [mitmdump, "-q", "-s", os.path.join(ROOT, "proxy_addon", "addon.py"), "-p", str(free_port())]
        + ["--set", f"rankstore={small_store}", "--set", "pagerank_ranking=hostrank"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "rankstore: hostrank ranks hosts, not pages: choose a page ranking (pagerank)" in done.stdout + done.stderr


@pytest.mark.parametrize("how", ["--port", "-p", "--listen-host"])
def test_a_taken_port_is_one_line_of_ours(small_store, how):
    """A real socket listens on the port: the proxy says so in one line that names our own option, rather than
    mitmproxy's two that suggest one of its own (``--mode regular@...``)."""
    import socket
    import subprocess
    import sys

    from conftest import ROOT

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        arguments = {
            "--port": ["--port", str(port)],
            "-p": ["--port", "1", "--", "-p", str(port)],  # the port mitmdump is told last
            "--listen-host": ["--port", str(port), "--listen-host", "0.0.0.0", "--no-auth"],  # every address too
        }[how]
        done = subprocess.run(
            [sys.executable, "-m", "proxy_addon.cli", "--store", small_store, *arguments],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    host = "0.0.0.0" if how == "--listen-host" else "127.0.0.1"
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        f"pagerank-proxy: error: port {port} on {host} is taken (another program listens there): "
        "choose another with --port\n"
    )


def test_listening_names_the_port_mitmdump_took_and_is_not_said_when_an_addon_fails_at_start(small_store, tmp_path):
    """``-p`` after ``--`` is the port the banner names; an addon whose running hook fails (a user's script)
    makes mitmdump exit 1, and the proxy never says it listens."""
    import subprocess
    import sys

    from test_proxy_e2e import free_port

    from conftest import ROOT

    store = small_store
    taken = free_port()
    proxy = subprocess.Popen(
        [sys.executable, "-m", "proxy_addon.cli", "--store", store, "--port", "1", "--", "-p", str(taken)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proxy.stdout is not None
        line = ""
        for line in proxy.stdout:  # mitmproxy's own line first, then ours (pytest's timeout bounds the wait)
            if line.startswith("pagerank-proxy: listening on"):
                break
        assert line.startswith(f"pagerank-proxy: listening on http://127.0.0.1:{taken}/ with {store}"), line
    finally:
        proxy.terminate()
        proxy.wait(timeout=10)
    script = tmp_path / "fails.py"
    script.write_text(
        "class Fails:\n"
        "    def running(self):\n"
        "        raise RuntimeError('this addon fails at start')\n"
        "\n"
        "addons = [Fails()]\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "proxy_addon.cli", "--store", store, "--port", str(free_port()), "--", "-s", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "this addon fails at start" in done.stdout + done.stderr
    assert "pagerank-proxy: listening" not in done.stdout + done.stderr


def test_sigterm_under_load_stops_within_5_s_quietly(python_doc_store, origin, slow_origin_and_proxy, tmp_path):
    """Clients fetching pages and own pages, a page held by a silent origin: SIGTERM, and the proxy is gone
    within 5 s, exit status 0, with no traceback in its output."""
    import shutil
    import signal

    store = str(tmp_path / "s.db")
    shutil.copy(python_doc_store, store)
    from click.testing import CliRunner

    from rankstore.cli import cli

    assert CliRunner().invoke(cli, ["rank", "--store", store, "-q"]).exit_code == 0
    running = Proxy(store)
    slow, _ = slow_origin_and_proxy
    stop = threading.Event()
    served = [0]

    def client(url: str) -> None:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{running.port}"}))
        while not stop.is_set():
            try:
                with opener.open(url, timeout=30) as response:
                    response.read()
                served[0] += 1
            except OSError:
                pass

    urls = [origin + "/normal", origin + "/gzipped", "http://pagerank.proxy/search?q=the", slow + "/silent"]
    threads = [threading.Thread(target=client, args=(url,), daemon=True) for url in urls * 2]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 20
    while served[0] < 50 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert served[0] >= 50
    started = time.monotonic()
    running.process.send_signal(signal.SIGTERM)
    try:
        status = running.process.wait(timeout=5)
    finally:
        stop.set()
        output = running.stop()
    assert time.monotonic() - started < 5
    assert status == 0
    assert "Traceback" not in output and "Task was destroyed" not in output
