"""A small writer of the proxy's record, byte for byte as the contract says (until the proxy's own is merged):
``RECORD``, then ``pages-<UTCSTAMP>-<PID>.jsonl`` files of one JSON object a line, each written whole by one
``os.write`` on a file opened ``O_APPEND``."""

from __future__ import annotations

import json
import os
import shutil

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "record")


def make_record(folder: str) -> str:
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "RECORD"), "w") as handle:
        json.dump({"format": "pagerank-proxy record", "version": 1, "created": "2026-11-27T00:00:00Z"}, handle)
    return folder


def golden(name: str, folder) -> str:
    """A copy of the golden record ``tests/data/record/NAME`` in ``folder`` (a test may write to it)."""
    target = os.path.join(str(folder), name)
    shutil.copytree(os.path.join(DATA, name), target)
    return target


def link(url: str, nofollow: bool = False, anchor: str | None = None) -> dict:
    return {"url": url, "nofollow": nofollow, "anchor": anchor}


def page(url: str, fetched: str, links: list[dict] = (), title: str | None = None, status: int = 200) -> dict:
    return {"url": url, "status": status, "title": title, "fetched": fetched, "links": list(links)}


def append(folder: str, stamp: str, pid: int, *lines: dict) -> str:
    """Lines appended to the page file of the writer that started at ``stamp`` with ``pid``."""
    path = os.path.join(folder, f"pages-{stamp}-{pid}.jsonl")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for line in lines:
            os.write(fd, json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
    finally:
        os.close(fd)
    return path


class Origin:
    """Pages served by python's http.server on loopback, in threads of the test's process, on ``count`` ports at
    once (each port another host for the proxy and the record: ``127.0.0.1:PORT``).  Every port serves the same
    pages, each with the response headers it is given (a ``Cache-Control`` the test chooses)."""

    def __init__(self, count: int = 1) -> None:
        import http.server
        import threading

        self.pages: dict[str, tuple[bytes, list[tuple[str, str]]]] = {}
        pages = self.pages

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                body, headers = pages.get(self.path.partition("?")[0], (b"", []))
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler) for _ in range(count)]
        for server in self.servers:
            threading.Thread(target=server.serve_forever, daemon=True).start()
        self.ports = [server.server_address[1] for server in self.servers]

    def base(self, which: int = 0) -> str:
        return f"http://127.0.0.1:{self.ports[which]}/"

    def serve(self, path: str, html: str, *headers: tuple[str, str]) -> None:
        self.pages[path] = (html.encode(), list(headers))

    def close(self) -> None:
        for server in self.servers:
            server.shutdown()
            server.server_close()


def small_ranked_store(folder) -> str:
    """tests/data/small.warc.gz built and ranked into ``folder``: a store whose proxy annotates every HTML page,
    in the store or not (the record's tests browse pages of their own origins through it)."""
    from click.testing import CliRunner

    from rankstore.cli import cli

    from conftest import data

    path = os.path.join(str(folder), "small.db")
    runner = CliRunner()
    assert runner.invoke(cli, ["build", data("small.warc.gz"), "--store", path, "-q"]).exit_code == 0
    assert runner.invoke(cli, ["rank", "--store", path, "-q"]).exit_code == 0
    return path
