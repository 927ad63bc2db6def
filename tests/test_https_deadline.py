"""A stalled or trickling HTTPS origin gets the 504 page over the client's TLS connection (HTTP/1.1 and
HTTP/2), as a plain HTTP one does, after the proxy's idle timeout."""

from __future__ import annotations

import http.server
import shutil
import ssl
import subprocess
import sys
import threading
import time

import pytest
from click.testing import CliRunner
from test_hostile import _Slow
from test_proxy_e2e import free_port, wait_for_port

from rankstore.cli import cli

from conftest import ROOT


@pytest.fixture(scope="module")
def https_slow_origin_and_proxy(python_doc_store, tmp_path_factory):
    """A slow HTTPS origin (self-signed), and a proxy with a 2 s deadline that trusts it, in its own process."""
    for tool in ("openssl", "curl"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is missing")
    folder = tmp_path_factory.mktemp("https-slow")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
        + ["-keyout", str(folder / "key.pem"), "-out", str(folder / "cert.pem")],
        check=True,
        capture_output=True,
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    server.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    store = str(folder / "s.db")
    shutil.copy(python_doc_store, store)
    assert CliRunner().invoke(cli, ["rank", "--store", store, "-q"]).exit_code == 0
    port = free_port()
    confdir = folder / "mitmproxy"
    log = open(folder / "proxy.log", "w")
    process = subprocess.Popen(
        [sys.executable, "-m", "proxy_addon.cli", "--store", store, "--port", str(port), "--idle-timeout", "2"]
        + ["--", "--set", f"confdir={confdir}", "--set", "ssl_insecure=true"],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port(port, process)
        yield f"https://127.0.0.1:{server.server_address[1]}", port, confdir / "mitmproxy-ca-cert.pem", folder
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()
        server.shutdown()
        server.server_close()


VERSIONS = ["--http1.1", "--http2"]
STALLS = [("/silent", "sent no response within 2 s"), ("/trickle.html", "had not sent the whole page within 2 s")]


def _stalled_request(origin: str, port: int, ca, version: str, path: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.perf_counter()
    done = subprocess.run(
        ["curl", "-sS", version, "--proxy", f"http://127.0.0.1:{port}", "--cacert", str(ca), "--max-time", "25"]
        + ["-w", "\n%{http_code}", origin + path],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return done, time.perf_counter() - started


def _two_on_one_connection(origin: str, port: int, ca) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["curl", "-sS", "--http2", "--proxy", f"http://127.0.0.1:{port}", "--cacert", str(ca), "--max-time", "25"]
        + [
            "-w",
            "%{http_code} %{num_connects}\n",
            "-o",
            "/dev/null",
            origin + "/silent",
            "-o",
            "/dev/null",
            origin + "/silent",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.fixture(scope="module")
def stalled(https_slow_origin_and_proxy):
    """The tests' curl runs, made at once, each timed by itself: each waits out the proxy's deadline, and
    one after another they waited out as many.  {(version, path): (curl's run, its seconds), "reuse": curl's
    run of two requests on one HTTP/2 connection}."""
    from concurrent.futures import ThreadPoolExecutor

    origin, port, ca, _ = https_slow_origin_and_proxy
    with ThreadPoolExecutor(max_workers=len(VERSIONS) * len(STALLS) + 1) as pool:
        runs = {
            (version, path): pool.submit(_stalled_request, origin, port, ca, version, path)
            for version in VERSIONS
            for path, _ in STALLS
        }
        reuse = pool.submit(_two_on_one_connection, origin, port, ca)
        return {**{key: run.result() for key, run in runs.items()}, "reuse": reuse.result()}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("path, says", STALLS)
def test_a_stalled_https_origin_gets_a_504_over_tls(https_slow_origin_and_proxy, stalled, version, path, says):
    _, _, _, folder = https_slow_origin_and_proxy
    done, elapsed = stalled[version, path]
    body, _, code = done.stdout.rpartition("\n")
    assert code == "504", (done.stdout[-300:], done.stderr, (folder / "proxy.log").read_text()[-2000:])
    assert says in body and "504" in body
    assert 1.9 < elapsed < 6
    assert "Traceback" not in (folder / "proxy.log").read_text()


def test_an_http2_connection_outlives_the_504_of_one_of_its_requests(https_slow_origin_and_proxy, stalled):
    _, _, _, folder = https_slow_origin_and_proxy
    done = stalled["reuse"]
    # the second request reuses the proxy connection (no new connect) and is answered in its turn
    assert done.stdout.split("\n")[:2] == ["504 1", "504 0"], (done.stdout, done.stderr)
    assert "Traceback" not in (folder / "proxy.log").read_text()
