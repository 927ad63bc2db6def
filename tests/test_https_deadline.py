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


@pytest.mark.parametrize("version", ["--http1.1", "--http2"])
@pytest.mark.parametrize(
    "path, says",
    [("/silent", "sent no response within 2 s"), ("/trickle.html", "had not sent the whole page within 2 s")],
)
def test_a_stalled_https_origin_gets_a_504_over_tls(https_slow_origin_and_proxy, version, path, says):
    origin, port, ca, folder = https_slow_origin_and_proxy
    started = time.perf_counter()
    done = subprocess.run(
        ["curl", "-sS", version, "--proxy", f"http://127.0.0.1:{port}", "--cacert", str(ca), "--max-time", "25"]
        + ["-w", "\n%{http_code}", origin + path],
        capture_output=True,
        text=True,
        timeout=30,
    )
    elapsed = time.perf_counter() - started
    body, _, code = done.stdout.rpartition("\n")
    assert code == "504", (done.stdout[-300:], done.stderr, (folder / "proxy.log").read_text()[-2000:])
    assert says in body and "504" in body
    assert 1.9 < elapsed < 6
    assert "Traceback" not in (folder / "proxy.log").read_text()


def test_an_http2_connection_outlives_the_504_of_one_of_its_requests(https_slow_origin_and_proxy):
    origin, port, ca, folder = https_slow_origin_and_proxy
    done = subprocess.run(
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
    # the second request reuses the proxy connection (no new connect) and is answered in its turn
    assert done.stdout.split("\n")[:2] == ["504 1", "504 0"], (done.stdout, done.stderr)
    assert "Traceback" not in (folder / "proxy.log").read_text()
