"""The benchmarks' and tests' origin (tools/sitecrawl.py): HTTP/1.0 by default, HTTP/1.1 kept open on request."""

from __future__ import annotations

import http.client

import pytest
from sitecrawl import serve_process


@pytest.mark.parametrize("keep_alive", [False, True])
def test_the_origin_speaks_the_http_version_asked_for(tmp_path, keep_alive):
    for name in ("a.html", "b.html"):
        (tmp_path / name).write_text(f"<!doctype html><title>{name}</title><a href=a.html>a</a>")
    server, port = serve_process(str(tmp_path), keep_alive=keep_alive)
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        answers = []
        for name in ("a.html", "b.html"):
            connection.request("GET", "/" + name)
            response = connection.getresponse()
            answers.append((response.status, response.version, response.will_close, response.read()))
            if not keep_alive:  # HTTP/1.0: a connection a request
                connection.close()
        connection.close()
    finally:
        server.terminate()
        server.wait(timeout=15)
    assert [status for status, *_ in answers] == [200, 200]
    assert all(body.startswith(b"<!doctype html><title>") for *_, body in answers)
    assert {version for _, version, _, _ in answers} == {11 if keep_alive else 10}
    assert {will_close for _, _, will_close, _ in answers} == {not keep_alive}
