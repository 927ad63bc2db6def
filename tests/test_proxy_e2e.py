"""End to end: a real mitmdump process (pagerank-proxy) on 127.0.0.1, a real origin, headless Chromium."""

from __future__ import annotations

import functools
import http.server
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest
from barkit import bar_count, outside_panel, panel_of, panel_root, shown_bars
from click.testing import CliRunner
from selenium import webdriver  # the test extra; tools/setup.sh installs it
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service

from rankstore.cli import cli

from conftest import ROOT

ARTIFACTS = os.path.join(ROOT, "artifacts")
OURS = "document.querySelectorAll('span[data-pagerank-bar], aside[data-pagerank-panel], #pagerank-proxy-style')"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the proxy exited before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the proxy did not start listening")


class Proxy:
    """pagerank-proxy on a free port; its output goes to a file (a pipe nobody reads would fill up after a few
    hundred flows' log lines, and mitmdump's event loop would then wait on it)."""

    def __init__(self, store: str, *extra: str, port: int | None = None):
        import tempfile

        self.port = port or free_port()  # a port of its own: one given again serves a browser already pointed there
        self.output = tempfile.TemporaryFile("w+")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "proxy_addon.cli", "--store", store, "--port", str(self.port), *extra],
            cwd=ROOT,
            stdout=self.output,
            stderr=subprocess.STDOUT,
            text=True,
        )
        wait_for_port(self.port, self.process)
        # the port is bound before the addons' running hooks end (the ranking read, the workers up): the
        # banner says when the proxy serves pages as it means to
        deadline = time.monotonic() + 30
        while "(ranking " not in self.said() and self.process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)

    def said(self) -> str:
        """What it has written so far, read without moving the file offset it shares with the process."""
        self.output.flush()
        fd = self.output.fileno()
        return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")

    def stop(self) -> str:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.output.seek(0)
        return self.output.read()


def browser(proxy_port: int | None):
    if not (os.path.exists("/usr/bin/chromium") and os.path.exists("/usr/bin/chromedriver")):
        pytest.fail("chromium and chromium-driver are missing: run tools/setup.sh")
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
    ):
        options.add_argument(flag)
    if proxy_port:
        options.add_argument(f"--proxy-server=http://127.0.0.1:{proxy_port}")
        options.add_argument("--proxy-bypass-list=<-loopback>")  # loopback is bypassed unless told
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(30)
    return driver


@pytest.fixture(scope="module")
def ranked_store(python_doc_store, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("e2e") / "py.db")
    shutil.copy(python_doc_store, path)
    assert CliRunner().invoke(cli, ["rank", "--store", path, "-q"]).exit_code == 0
    return path


@pytest.fixture(scope="module")
def proxy(ranked_store):
    running = Proxy(ranked_store)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def proxied(proxy):
    driver = browser(proxy.port)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def direct():
    driver = browser(None)
    yield driver
    driver.quit()


def severe(driver) -> list[str]:
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def test_bars_and_panel_in_the_rendered_page(proxied, python_doc_crawl):
    url = python_doc_crawl.base_url + "library/functions.html"
    proxied.get(url)
    # each bar as the screen shows it, read from its closed shadow root (the panel's bars are not among them):
    # [score, the host's width, the fill's width (0 for none), the tooltip, whether its link is shown, data-w]
    bars = [
        [
            bar["attributes"] and bar["attributes"].get("data-pagerank"),
            bar["host"]["width"],
            bar["fill"]["width"] if bar["fill"] else 0,
            bar["title"],
            bar["shown"],
            int(bar["attributes"]["data-w"]) if bar["attributes"] else None,
        ]
        for bar in shown_bars(proxied)
    ]
    in_page = [bar for bar in bars if bar[0] is not None]
    assert len(in_page) > 200
    ranked = [bar for bar in in_page if bar[0] != "unranked"]
    assert len(ranked) > 100
    shown = [bar for bar in in_page if bar[4]]  # links in hidden menus (the mobile nav) are not drawn
    assert len(shown) > 200
    assert all(bar[1] > 10 for bar in shown)  # our style applies: every bar of a visible link is drawn
    # every ranked bar shown draws a fill; the widest is the full MAX_BAR_PX (a drawing's units, not pixels)
    assert all(bar[2] >= 1 for bar in shown if bar[0] != "unranked") and max(bar[5] for bar in shown) == 40
    assert all("PageRank" in bar[3] and "percentile" in bar[3] for bar in ranked)
    root = panel_root(proxied)
    assert root is not None
    box_js = (
        "const p = arguments[0].querySelector('#pagerank-panel.box'); const r = p.getBoundingClientRect();"
        "return [p.dataset.pagerank, r.width, r.height, "
        "[...arguments[0].querySelectorAll('span.li[data-pagerank]')].map(li => parseFloat(li.dataset.pagerank))]"
    )
    closed = proxied.execute_script(box_js, root)  # the host is of no size: the box in its shadow root is drawn
    assert closed[0] != "unranked" and closed[1] > 10 and closed[2] > 10  # closed: a tab at the window's edge
    root.find_element("css selector", "label.tab").click()  # the tab opens the panel
    panel = proxied.execute_script(box_js, root)
    assert panel[0] != "unranked" and panel[1] > 100 and panel[2] > 10
    assert panel[3] and panel[3] == sorted(panel[3], reverse=True)
    os.makedirs(ARTIFACTS, exist_ok=True)
    proxied.save_screenshot(os.path.join(ARTIFACTS, "functions-through-proxy.png"))
    assert os.path.getsize(os.path.join(ARTIFACTS, "functions-through-proxy.png")) > 50_000


@pytest.mark.parametrize("page", ["library/functions.html", "index.html", "tutorial/classes.html"])
def test_page_dom_otherwise_unchanged_and_no_console_errors_from_us(proxied, direct, python_doc_crawl, page):
    url = python_doc_crawl.base_url + page
    strip = f"{OURS}.forEach(e => e.remove()); return document.documentElement.outerHTML"
    direct.get(url)
    expected = direct.execute_script(strip)
    direct_errors = severe(direct)
    proxied.get_log("browser")
    proxied.get(url)
    assert proxied.execute_script(f"return {OURS}.length") > 2
    assert proxied.execute_script(strip) == expected
    ours = [error for error in severe(proxied) if error not in direct_errors]
    assert ours == []


def test_own_pages(proxied, python_doc_crawl):
    target = python_doc_crawl.base_url + "library/functions.html"
    proxied.get("http://pagerank.proxy/top?n=20")
    assert proxied.execute_script("return document.querySelectorAll('tr[data-pagerank]').length") == 20
    proxied.get("http://pagerank.proxy/search?q=built-in+functions")
    titles = proxied.execute_script(
        "return [...document.querySelectorAll('tr[data-pagerank] td a')].map(a => a.textContent)"
    )
    assert any("Built-in Functions" in title for title in titles)
    proxied.get("http://pagerank.proxy/backlinks?url=" + target)
    scores = proxied.execute_script(
        "return [...document.querySelectorAll('tr[data-pagerank]')].map(r => parseFloat(r.dataset.pagerank))"
    )
    assert len(scores) == 50 and scores == sorted(scores, reverse=True)
    proxied.get("http://pagerank.proxy/page?url=" + target)
    assert "in-links" in proxied.page_source
    assert severe(proxied) == []


class _CSPHandler(http.server.SimpleHTTPRequestHandler):
    policy = ""

    def end_headers(self):
        if self.policy and self.path.endswith(".html"):
            self.send_header("Content-Security-Policy", self.policy)
        super().end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def csp_origin(tmp_path):
    (tmp_path / "header.html").write_text(
        "<!DOCTYPE html><html><head><title>CSP header</title></head><body><p><a href='meta.html'>meta</a> "
        "<a href='header.html'>self</a></p></body></html>"
    )
    (tmp_path / "meta.html").write_text(
        '<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="style-src \'self\'">'
        "<title>CSP meta</title></head><body><p><a href='header.html'>header</a></p></body></html>"
    )
    handler = type("Handler", (_CSPHandler,), {"policy": "default-src 'self'; script-src 'none'"})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("page", ["header.html", "meta.html"])
def test_strict_csp_pages_still_show_bars(proxied, csp_origin, page):
    proxied.get_log("browser")
    proxied.get(csp_origin + page)
    widths = [bar["host"]["width"] for bar in shown_bars(proxied)]
    assert widths and all(width > 10 for width in widths)  # our hashed style block was allowed
    assert not [e for e in severe(proxied) if "Content Security Policy" in e]


XSS = [
    "<script>window.__xss=1</script>",
    '"><img src=x onerror="window.__xss=1">',
    "'><svg onload='window.__xss=1'>",
    "</title><script>window.__xss=1</script>",
    "javascript:window.__xss=1",
]


@pytest.fixture(scope="module")
def hostile_store(tmp_path_factory, python_doc_crawl):
    from rankstore.store import PageData, Store

    path = str(tmp_path_factory.mktemp("xss") / "xss.db")
    site = python_doc_crawl.base_url
    with Store(path) as store:
        build = store.begin_build(["hostile"])
        pages = [
            PageData(
                f"http://evil{i}.example/x?q=%22%3E%3Cscript%3Ewindow.__xss=1%3C/script%3E",
                200,
                title=payload,
                links=[(site + "library/functions.html", False, 1.0, payload)],
            )
            for i, payload in enumerate(XSS)
        ]
        store.pages.write_pages(pages, build)
        store.finish_build(build, len(pages), len(pages), {})
    assert CliRunner().invoke(cli, ["rank", "--store", path, "-q"]).exit_code == 0
    return path


def test_hostile_titles_and_urls_execute_nothing(hostile_store, python_doc_crawl):
    running = Proxy(hostile_store)
    driver = browser(running.port)
    try:
        target = python_doc_crawl.base_url + "library/functions.html"
        for url in (
            target,
            "http://pagerank.proxy/top",
            "http://pagerank.proxy/search?q=script",
            "http://pagerank.proxy/search?q=%3Cscript%3Ewindow.__xss%3D1%3C%2Fscript%3E",
            "http://pagerank.proxy/backlinks?url=" + target,
            "http://pagerank.proxy/page?url=" + target,
            "http://pagerank.proxy/page?url=http://evil0.example/x?q=%2522%253E",
        ):
            driver.get(url)
            root = panel_root(driver)
            if root is not None:
                root.find_element("css selector", "label.tab").click()  # the panel opened: its backlinks shown
            with pytest.raises(NoAlertPresentException):
                _ = driver.switch_to.alert.text  # raises: no alert was opened
            assert driver.execute_script("return window.__xss === undefined")
        driver.get("http://pagerank.proxy/top")
        text = driver.execute_script("return document.body.innerText")
        assert "<script>window.__xss=1</script>" in text  # shown as text, not run
    finally:
        driver.quit()
        running.stop()


def test_proxy_listens_on_loopback_only(proxy):
    out = subprocess.run(["ss", "-ltnp"], capture_output=True, text=True).stdout
    lines = [line for line in out.splitlines() if f":{proxy.port} " in line]
    assert lines and all("127.0.0.1:" in line for line in lines)


@pytest.fixture
def https_origin(tmp_path):
    """An HTTPS origin with a self-signed certificate, serving one HTML page."""
    import ssl

    if shutil.which("openssl") is None:
        pytest.fail("openssl is missing")
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            str(tmp_path / "key.pem"),
            "-out",
            str(tmp_path / "cert.pem"),
        ],
        check=True,
        capture_output=True,
    )
    (tmp_path / "page.html").write_text(
        "<!DOCTYPE html><html><head><title>h2</title></head><body>"
        "<a href='page.html'>self</a> <a href='https://x.example/'>x</a></body></html>"
    )
    handler = functools.partial(_CSPHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"https://127.0.0.1:{server.server_address[1]}/page.html"
    server.shutdown()
    server.server_close()


def test_http2_client_through_the_proxy(ranked_store, https_origin, tmp_path):
    if shutil.which("curl") is None:
        pytest.fail("curl is missing")
    port = free_port()
    confdir = tmp_path / "mitmproxy"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "proxy_addon.cli",
            "--store",
            ranked_store,
            "--port",
            str(port),
            "--",
            "--set",
            f"confdir={confdir}",
            "--set",
            "ssl_insecure=true",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for_port(port, process)
        result = subprocess.run(
            [
                "curl",
                "-sS",
                "--http2",
                "--proxy",
                f"http://127.0.0.1:{port}",
                "--cacert",
                str(confdir / "mitmproxy-ca-cert.pem"),
                "-w",
                "\n%{http_version}",
                https_origin,
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        body, _, version = result.stdout.rpartition("\n")
        assert version == "2", result.stderr
        assert bar_count(outside_panel(body)) == 2 and "pagerank-proxy-style" in body
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_proxy_stops_cleanly_and_takes_its_workers_along(ranked_store, python_doc_crawl, tmp_path):
    import urllib.request

    store = str(tmp_path / "own.db")  # a path of its own: the workers are found by it
    shutil.copy(ranked_store, store)
    running = Proxy(store)
    try:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{running.port}"}))
        body = opener.open(python_doc_crawl.base_url + "index.html", timeout=30).read()
        assert bar_count(outside_panel(body)) > 0
        # the workers start once the first page is through: both are there within a bounded wait
        for _ in range(100):
            workers = subprocess.run(["pgrep", "-f", f"proxy_addon.worker {store}"], capture_output=True, text=True)
            if len(workers.stdout.split()) == 2:
                break
            time.sleep(0.1)
        assert len(workers.stdout.split()) == 2
    finally:
        output = running.stop()
    assert "Traceback" not in output and "Error" not in output, output
    for _ in range(50):  # they end as their input closes
        left = subprocess.run(["pgrep", "-f", f"proxy_addon.worker {store}"], capture_output=True, text=True)
        if not left.stdout.split():
            break
        time.sleep(0.1)
    assert left.stdout.split() == []


def test_an_option_set_after_the_double_dash_wins_over_the_proxys_own(ranked_store, python_doc_crawl):
    """mitmproxy refuses an option set twice (and then sets none of the addon's): ours give way."""
    import urllib.request

    running = Proxy(
        "/missing/x.db",  # the store given after -- is the one checked and used
        "--",
        "--set",
        f"rankstore={ranked_store}",
        "--set",
        "pagerank_panel=0",
        "--set=pagerank_ranking=pagerank",
    )
    try:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{running.port}"}))
        body = opener.open(python_doc_crawl.base_url + "library/abc.html", timeout=30).read().decode()
    finally:
        output = running.stop()
    assert bar_count(outside_panel(body)) > 10, output
    assert panel_of(body) is None and "<aside data-pagerank-panel" not in body
    assert f"with {ranked_store} (ranking pagerank)" in output


@pytest.mark.parametrize("quiet", [False, True])
def test_connection_lines_are_made_only_when_the_terminal_would_show_them(
    ranked_store, python_doc_crawl, tmp_path, quiet
):
    """Under ``-q`` mitmproxy's per-connection lines are not made at all (a script's handler on the root
    logger sees none of them); at the default verbosity they are made and shown as mitmdump shows them."""
    import urllib.request

    seen = tmp_path / "seen.txt"
    script = tmp_path / "count.py"
    script.write_text(
        "import logging\n"
        "class Count(logging.Handler):\n"
        "    def emit(self, record):\n"
        "        if record.name == 'mitmproxy.proxy.server':\n"
        f"            with open({str(seen)!r}, 'a') as out:\n"
        "                out.write(record.getMessage() + '\\n')\n"
        "logging.getLogger().addHandler(Count())\n"
    )
    running = Proxy(ranked_store, "--", "-s", str(script), *(["-q"] if quiet else []))
    try:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{running.port}"}))
        for _ in range(2):
            body = opener.open(python_doc_crawl.base_url + "library/abc.html", timeout=30).read().decode()
            assert bar_count(outside_panel(body)) > 10
    finally:
        output = running.stop()
    lines = seen.read_text().splitlines() if seen.exists() else []
    if quiet:
        assert lines == [] and "client connect" not in output
    else:
        assert lines.count("client connect") >= 2, lines
        assert any(line.startswith("server connect") for line in lines), lines
        assert "client connect" in output


@pytest.mark.parametrize(
    "verbosity, level",
    [("error", logging.ERROR), ("warn", logging.WARNING), ("alert", logging.INFO + 1), ("info", 0), ("debug", 0)],
)
def test_the_connection_logger_takes_the_terminals_level_only_above_info(verbosity, level):
    from mitmproxy import log  # noqa: F401  (names the ALERT level)

    from proxy_addon.cli import connection_log_level

    assert connection_log_level(verbosity) == level


def test_the_proxys_own_options_give_way_to_those_after_the_double_dash():
    from proxy_addon.cli import extra_settings, mitmdump_args

    extra = ["--set", "listen_port=9", "--set=pagerank_panel=0", "-q", "--set"]
    assert extra_settings(extra) == {"listen_port": "9", "pagerank_panel": "0"}
    args = mitmdump_args("s.db", "127.0.0.1", 8080, "pagerank", 10, extra)
    settings = [value.split("=")[0] for flag, value in zip(args, args[1:]) if flag == "--set"]
    assert sorted(settings) == sorted(
        [
            "rankstore",
            "pagerank_ranking",
            "pagerank_idle_timeout",
            "connection_strategy",
            "listen_host",
            "listen_port",
            # the switches, passed false unless their flags (--insecure-pages, --no-auth) are given
            "pagerank_insecure_pages",
            "pagerank_no_auth",
        ]
    )  # listen_port once: the user's
    assert args[-len(extra) :] == extra and "-s" not in args  # the addon joins mitmdump's chain directly


def test_the_demo_stopped_by_sigterm_takes_its_proxy_and_its_site_server_with_it(tmp_path):
    # README's first command: `timeout`, `kill` or a closed terminal must not leave the proxy and the
    # site's server running without it
    import re
    import signal

    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text('<title>Home</title><a href="a.html">a</a> <a href="b.html">b</a>')
    (site / "a.html").write_text('<title>A</title><a href="index.html">home</a> <a href="b.html">b</a>')
    (site / "b.html").write_text('<title>B</title><a href="index.html">home</a>')
    port = free_port()
    output = tmp_path / "demo.log"
    with open(output, "w") as log:
        work = str(tmp_path / "work")
        demo = subprocess.Popen(
            [sys.executable, "tools/demo.py", "--site", str(site), "--work", work, "--port", str(port)],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_for_port(port, demo, timeout=120)
            served = re.search(r"serving .* at http://127\.0\.0\.1:(\d+)/", output.read_text())
            assert served, output.read_text()
            site_port = int(served.group(1))
            socket.create_connection(("127.0.0.1", site_port), timeout=1).close()
            demo.send_signal(signal.SIGTERM)
            assert demo.wait(timeout=30) == 128 + signal.SIGTERM
        finally:
            if demo.poll() is None:
                demo.kill()
    for gone in (port, site_port):
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", gone), timeout=1).close()


def _small_site(folder) -> str:
    folder.mkdir()
    (folder / "index.html").write_text('<title>Home</title><a href="a.html">a</a>')
    (folder / "a.html").write_text('<title>A</title><a href="index.html">home</a>')
    return str(folder)


def test_the_demo_checks_its_site_and_its_port_before_it_crawls(tmp_path):
    """`--site /nonexistent` once ended in a traceback, and a port another program held was found only after
    the crawl, the build (the earlier demo's store removed) and "starting on", with exit 0: said first, in one
    line, exit 1, the earlier store kept."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "rankstore.db").write_bytes(b"an earlier demo's store")
    site = _small_site(tmp_path / "site")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for where, says in (
            (["--site", str(tmp_path / "nonexistent"), "--port", str(free_port())], "no such folder"),
            (["--site", site, "--port", str(port)], f"port {port} on 127.0.0.1 is taken"),
        ):
            done = subprocess.run(
                [sys.executable, "tools/demo.py", "--work", str(work), *where],
                cwd=ROOT, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert done.returncode == 1, done.stdout + done.stderr
            assert done.stdout == "" and len(done.stderr.splitlines()) == 1, done.stdout + done.stderr
            assert done.stderr.startswith("demo: ") and says in done.stderr, done.stderr
            assert (work / "rankstore.db").read_bytes() == b"an earlier demo's store"


def test_the_demo_fails_when_its_proxy_cannot_start(tmp_path):
    """A port taken while the demo crawls and builds: the proxy cannot listen, and the demo says so and exits
    non-zero, without the address to browse (it used to exit 0, the user then browsing what held the port)."""
    port = free_port()
    demo = subprocess.Popen(
        [sys.executable, "tools/demo.py", "--site", _small_site(tmp_path / "site"), "--work", str(tmp_path / "work"),
         "--port", str(port), "--seconds", "60"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    with socket.socket() as taken:
        try:
            assert demo.stdout is not None
            for line in demo.stdout:
                if line.startswith("demo: crawled into"):
                    taken.bind(("127.0.0.1", port))  # after the demo looked, before its proxy starts
                    taken.listen()
                    break
            stdout, stderr = demo.communicate(timeout=120)
        finally:
            if demo.poll() is None:
                demo.kill()
    assert demo.returncode == 1, stdout + stderr
    assert "listens on" not in stdout and "Browse through it" not in stdout, stdout
    assert stderr.splitlines()[-1].startswith("demo: the proxy did not start"), stderr


def test_mitmdump_loads_the_same_addon_as_a_script_and_a_users_script_runs_after_ours(
    ranked_store, python_doc_crawl, tmp_path
):
    """README's other way (`mitmdump -s proxy_addon/addon.py`); and pagerank-proxy puts the addon in mitmdump's
    chain before the scripts given after --, so theirs see the page as rewritten."""
    import urllib.request

    probe = tmp_path / "probe.py"
    probe.write_text(
        "class Probe:\n"
        "    def response(self, flow):\n"
        "        seen = b'<span data-pagerank-bar' in (flow.response.content or b'')\n"
        "        flow.response.headers['x-probe'] = 'bars' if seen else 'none'\n"
        "addons = [Probe()]\n"
    )
    port = free_port()
    output = tempfile.TemporaryFile("w+")
    mitmdump = os.path.join(os.path.dirname(sys.executable), "mitmdump")
    script = subprocess.Popen(
        [mitmdump, "-q", "-s", os.path.join(ROOT, "proxy_addon", "addon.py"), "--listen-host", "127.0.0.1"]
        + ["-p", str(port), "--set", f"rankstore={ranked_store}"],
        stdout=output,
        stderr=subprocess.STDOUT,
    )
    ours = None
    try:
        wait_for_port(port, script)
        ours = Proxy(ranked_store, "--", "-s", str(probe))
        for proxy_port, probed in ((port, False), (ours.port, True)):
            handler = urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{proxy_port}"})
            with urllib.request.build_opener(handler).open(python_doc_crawl.base_url + "library/abc.html") as answer:
                body = answer.read()
                assert bar_count(outside_panel(body)) > 10 and panel_of(body) is not None
                if probed:
                    assert answer.headers["x-probe"] == "bars"
    finally:
        script.terminate()
        script.wait(timeout=10)
        if ours is not None:
            ours.stop()
    output.seek(0)
    assert "Traceback" not in output.read()
