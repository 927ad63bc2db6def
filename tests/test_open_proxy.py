"""No open proxy by accident (issue 46, 7): listening beyond loopback needs --proxyauth or an explicit --no-auth.

``pagerank-proxy`` told to listen where other machines reach it, in any of the
ways mitmdump takes (our ``--listen-host``, or after ``--``: ``--listen-host``,
``--set listen_host=``, a ``--mode`` spec with a host, mitmproxy's own
config.yaml), refuses in one line on standard error, exit status 2, before it
listens, unless clients must give a password (``--proxyauth``, ours or
mitmdump's) or ``--no-auth`` says an open proxy is meant.  Most cases run the
console script's ``main`` in this process, its start of mitmdump replaced;
the ones only mitmdump's own reading of its options can show, and one real
start with a password on 127.0.0.1, run the proxy.
"""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
from test_hostile import small_store  # noqa: F401 - a fixture
from test_proxy_e2e import Proxy, free_port

from proxy_addon import cli
from proxy_addon.cli import _flag_values, _set_values
from proxy_addon.exposure import beyond_loopback, exposed_hosts, open_proxy_problem

from conftest import ROOT

SAYS = "pagerank-proxy: error: listening on "


def _main(capsys, monkeypatch, argv: list[str]) -> tuple[object, str, str, list[str] | None]:
    """``pagerank-proxy ARGV`` through its ``main`` in this process, mitmdump's start replaced by a note of its
    arguments: (exit status, standard output, standard error, mitmdump's arguments or None if not started)."""
    started: list[list[str]] = []

    def run(arguments, announce=False, **kwargs):
        started.append(arguments)

    monkeypatch.setattr(cli, "run", run)
    monkeypatch.setattr(asyncio, "set_event_loop_policy", lambda policy: None)  # this process's loops stay as they are
    status: object = 0
    try:
        cli.main(argv)
    except SystemExit as stopped:
        status = stopped.code
    said = capsys.readouterr()
    return status, said.out, said.err, started[0] if started else None


@pytest.mark.parametrize(
    "arguments, where",
    [
        (["--listen-host", "0.0.0.0"], "0.0.0.0"),
        (["--listen-host", ""], "every address"),
        (["--listen-host", "::"], "::"),
        (["--listen-host", "192.0.2.7"], "192.0.2.7"),  # an address of this machine's LAN, say
        (["--listen-host", "::ffff:10.0.0.1"], "::ffff:10.0.0.1"),
        (["--", "--listen-host", "0.0.0.0"], "0.0.0.0"),
        (["--", "--listen-host=0.0.0.0"], "0.0.0.0"),
        (["--", "--set", "listen_host="], "every address"),
        (["--", "--set=listen_host=0.0.0.0"], "0.0.0.0"),
        (["--listen-host", "0.0.0.0", "--", "--set", "listen_host=127.0.0.1", "--listen-host", "::"], "::"),
        (["--", "--mode", "regular@0.0.0.0:8081"], "0.0.0.0"),
        (["--", "--mode=socks5@[::]:1080"], "[::]"),
        (["--", "-m", "regular", "-m", "reverse:http://127.0.0.1:1@0.0.0.0:8082"], "0.0.0.0"),
        (["--", "--set", "mode=regular@0.0.0.0:8081"], "0.0.0.0"),
        (["--listen-host", "0.0.0.0", "--proxyauth", "any"], "0.0.0.0"),  # any password at all: none
        (["--listen-host", "0.0.0.0", "--", "--set", "proxyauth=any"], "0.0.0.0"),
        (["--listen-host", "0.0.0.0", "--", "--set", "proxyauth="], "0.0.0.0"),
    ],
)
def test_beyond_loopback_without_a_password_is_refused(arguments, where, small_store, capsys, monkeypatch):  # noqa: F811
    status, stdout, stderr, started = _main(capsys, monkeypatch, ["--store", small_store, *arguments])
    assert started is None and status == 2 and stdout == ""
    assert stderr.count("\n") == 1 and stderr.startswith(f"{SAYS}{where} (beyond loopback)"), stderr
    assert "--proxyauth USER:PASS" in stderr and "--no-auth" in stderr and "Traceback" not in stderr


@pytest.mark.parametrize(
    "arguments, passed",
    [
        (["--listen-host", "0.0.0.0", "--proxyauth", "me:secret"], ["--set", "proxyauth=me:secret"]),
        (["--listen-host", "0.0.0.0", "--", "--proxyauth", "me:secret"], ["--proxyauth", "me:secret"]),
        (["--listen-host", "0.0.0.0", "--", "--proxyauth=@{htpasswd}"], ["--proxyauth=@{htpasswd}"]),
        (["--listen-host", "::", "--", "--set", "proxyauth=me:secret"], ["--set", "proxyauth=me:secret"]),
        (["--", "--mode", "socks5@0.0.0.0:1080", "--set=proxyauth=me:secret"], ["--set=proxyauth=me:secret"]),
        (["--listen-host", "0.0.0.0", "--no-auth"], ["--set", "listen_host=0.0.0.0"]),
        (["--listen-host", "", "--no-auth"], ["--set", "listen_host="]),
        ([], ["--set", "listen_host=127.0.0.1"]),
        (["--listen-host", "127.0.0.2"], ["--set", "listen_host=127.0.0.2"]),
        (["--listen-host", "::1"], ["--set", "listen_host=::1"]),
        (["--listen-host", "localhost"], ["--set", "listen_host=localhost"]),
        (["--", "--mode", "regular@127.0.0.1:8081", "--mode", "regular@8082"], ["--mode", "regular@127.0.0.1:8081"]),
        (["--", "--mode", "wireguard@0.0.0.0:51820"], ["--mode", "wireguard@0.0.0.0:51820"]),  # keys of its own
    ],
)
def test_a_password_no_auth_or_loopback_starts(arguments, passed, small_store, capsys, monkeypatch, tmp_path):  # noqa: F811
    htpasswd = tmp_path / "proxy.htpasswd"
    htpasswd.write_text("me:$apr1$lZL6V/ci$eIMz/iKDkbtys/uU7LEK00\n")  # an Apache password file
    arguments, passed = ([word.format(htpasswd=htpasswd) for word in words] for words in (arguments, passed))
    status, stdout, stderr, started = _main(capsys, monkeypatch, ["--store", small_store, *arguments])
    assert (status, stderr) == (0, "") and started is not None
    assert any(started[i : i + len(passed)] == passed for i in range(len(started))), started


def test_no_auth_beside_a_password_is_a_contradiction(small_store, capsys, monkeypatch):  # noqa: F811
    argv = ["--store", small_store, "--listen-host", "0.0.0.0", "--proxyauth", "me:secret", "--no-auth"]
    status, stdout, stderr, started = _main(capsys, monkeypatch, argv)
    assert started is None and status == 2 and stdout == ""
    assert stderr == "pagerank-proxy: error: --no-auth and --proxyauth contradict each other: give one\n"


@pytest.mark.parametrize(
    "arguments, says",
    [
        (["--proxyauth", "nocolon"], "--proxyauth must be USER:PASS (one colon), @HTPASSWD_FILE, any, or ldap[s]:..."),
        (["--", "--proxyauth", "me:se:cret"], "--proxyauth must be USER:PASS (one colon)"),
        (
            ["--", "--set", "proxyauth=@/no/such.htpasswd"],
            "--proxyauth: Could not open htpasswd file: /no/such.htpasswd",
        ),
    ],
)
def test_a_bad_proxyauth_is_one_line(arguments, says, small_store, capsys, monkeypatch):  # noqa: F811
    """mitmproxy refuses these once it listens, in a line of its own under its script's name, after our addon's
    own line about a store it has not been given yet."""
    status, stdout, stderr, started = _main(capsys, monkeypatch, ["--store", small_store, *arguments])
    assert started is None and status == 2 and stdout == ""
    assert stderr.startswith(f"pagerank-proxy: error: {says}") and stderr.count("\n") == 1, stderr
    assert "cret" not in stderr  # a password is not repeated


def test_help_says_when_it_listens_beyond_loopback_with_an_example():
    text = cli.parser().format_help()
    flat = " ".join(text.split())
    assert "--proxyauth SPEC" in text and "--no-auth" in text
    assert "beyond loopback" in flat and "only with --proxyauth or --no-auth" in flat
    example = [line.strip() for line in text.splitlines() if "--listen-host 0.0.0.0" in line]
    assert example and example[0].startswith("pagerank-proxy ") and "--proxyauth" in example[0]


@pytest.mark.parametrize(
    "host, beyond",
    [
        ("", True),
        ("0.0.0.0", True),
        ("::", True),
        ("[::]", True),
        ("10.1.2.3", True),
        ("127.0.0.1", False),
        ("127.8.9.10", False),
        ("::1", False),
        ("[::1]", False),
        ("::ffff:127.0.0.1", False),
        ("localhost", False),
        ("LocalHost.", False),
        ("127.1", False),  # a name to the resolver, for 127.0.0.1
        ("no-such-host.invalid", False),  # no address: mitmproxy cannot listen there and says so
    ],
)
def test_beyond_loopback(host, beyond):
    assert beyond_loopback(host) is beyond


def test_the_modes_that_bind_nothing_or_need_keys_are_left_aside():
    assert exposed_hosts("0.0.0.0", ["local", "wireguard", "tun"]) == []
    assert exposed_hosts("127.0.0.1", ["regular", "socks5@0.0.0.0:1080", "dns@[::]:53"]) == ["0.0.0.0", "[::]"]
    assert exposed_hosts("", []) == [""]  # mitmproxy's own default: a regular proxy on every address
    assert exposed_hosts("127.0.0.1", ["nosuchmode@0.0.0.0:1"]) == []  # mitmproxy refuses it itself
    assert open_proxy_problem(["0.0.0.0"], "me:secret", False) is None
    assert open_proxy_problem(["0.0.0.0"], None, True) is None
    assert "--proxyauth any lets any password in" in (open_proxy_problem(["0.0.0.0"], "any", False) or "")


def test_mitmproxys_own_config_file_is_read_before_it_listens(small_store, tmp_path):  # noqa: F811
    """A listen_host from mitmproxy's config.yaml (read by mitmdump, over the proxy's own --set) is refused
    too, in the same line, before mitmdump listens."""
    (tmp_path / "config.yaml").write_text("listen_host: 0.0.0.0\n")
    command = [sys.executable, "-m", "proxy_addon.cli", "--store", small_store, "--port", str(free_port())]
    done = subprocess.run(
        [*command, "--", "--set", f"confdir={tmp_path}"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(f"{SAYS}0.0.0.0 (beyond loopback)") and done.stderr.count("\n") == 1, done.stderr


def test_a_proxy_on_loopback_with_a_password_asks_for_it(small_store):  # noqa: F811
    """A real start on 127.0.0.1 with our --proxyauth, passed on to mitmproxy: a client without the password
    gets 407, with it the page (annotated)."""
    import http.server
    import threading

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the base class's name
            body = b"<!doctype html><title>t</title><a href='/x'>x</a>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    proxy = Proxy(small_store, "--listen-host", "127.0.0.1", "--proxyauth", "me:secret")
    try:
        assert f"listening on http://127.0.0.1:{proxy.port}/" in proxy.said()
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{proxy.port}"}))
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        with pytest.raises(urllib.error.HTTPError) as refused:
            opener.open(url, timeout=30)
        assert refused.value.code == 407
        token = base64.b64encode(b"me:secret").decode()
        with opener.open(urllib.request.Request(url, headers={"Proxy-Authorization": f"Basic {token}"})) as answer:
            assert b"pagerank" in answer.read()  # annotated (the page's own bytes say nothing of it)
    finally:
        proxy.stop()
        server.shutdown()


@pytest.mark.parametrize("doc", ["README.md", "docs/ARCHITECTURE.md", "docs/OPTIONS.md"])
def test_every_command_line_of_the_docs_listens_on_loopback(doc):
    """mitmdump listens on every address unless told: each of its lines names a loopback --listen-host; each
    pagerank-proxy line, whose default is 127.0.0.1, names none beyond it without a password."""
    from test_docs import _invocations, _read

    text = _read(os.path.join(ROOT, doc))
    for program in ("mitmdump", "pagerank-proxy"):
        for words in _invocations(text, program):
            hosts = _flag_values(words, "--listen-host") + _set_values(words, "listen_host")
            if program == "mitmdump":
                assert hosts, f"{doc}: `mitmdump {' '.join(words)}` listens on every address"
            exposed = [host for host in hosts if beyond_loopback(host)]
            assert not exposed or "--proxyauth" in words, f"{doc}: `{program} {' '.join(words)}`"


MITMDUMP = os.path.join(os.path.dirname(sys.executable), "mitmdump")


@pytest.mark.parametrize(
    "listen, stops",
    [
        ([], True),  # mitmdump's own default: every address
        (["--listen-host", "0.0.0.0"], True),
        (["--listen-host", "0.0.0.0", "--set", "pagerank_no_auth=true"], False),
        (["--listen-host", "0.0.0.0", "--set", "proxyauth=me:secret"], False),
        (["--listen-host", "127.0.0.1"], False),
    ],
    ids=["every-address", "0.0.0.0", "no-auth", "password", "loopback"],
)
def test_the_addon_in_mitmdump_stops_an_open_proxy_in_one_line(small_store, listen, stops):  # noqa: F811
    """mitmdump -s proxy_addon/addon.py binds before any addon can refuse: the addon stops the proxy at once
    (its running hook), in one line that says what to do, unless a password or pagerank_no_auth says it is
    meant; on loopback it serves."""
    command = [MITMDUMP, "-q", "-s", "proxy_addon/addon.py", "-p", str(free_port()), *listen]
    command += ["--set", f"rankstore={small_store}", "--set", "pagerank_workers=0"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        said, _ = process.communicate(timeout=8)  # the small store is read, and the hook run, well within it
        exited = True
    except subprocess.TimeoutExpired:  # still serving
        process.terminate()
        said, _ = process.communicate(timeout=20)
        exited = False
    assert exited is stops, said
    if stops:
        lines = [line for line in said.splitlines() if "pagerank:" in line]
        assert len(lines) == 1 and "(beyond loopback)" in lines[0] and "--listen-host 127.0.0.1" in lines[0], said
        assert "Traceback" not in said
