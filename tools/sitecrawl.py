#!/usr/bin/env python3
"""Serve a directory on 127.0.0.1 and crawl it with ``wget --mirror --warc-file``.

Used by the tests, the benchmarks and the demo to make real crawl files with a
real crawler.  Static assets (images, CSS, JS, fonts) are not fetched.

    python tools/sitecrawl.py /usr/share/doc/python3.11/html /tmp/py.warc.gz --mirror /tmp/py-mirror
    python tools/sitecrawl.py /usr/share/doc/python3.11/html --serve 8000      (only serve it)
    python tools/sitecrawl.py /usr/share/doc/python3.11/html --serve 8000 --keep-alive   (HTTP/1.1)
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator

REJECT = r"\.(png|gif|jpe?g|ico|css|js|svg|woff2?|ttf|txt|gz|zip|bz2|xz|pdf|epub|map|json)(\?.*)?$"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


class _KeepAliveHandler(_QuietHandler):
    """HTTP/1.1: the connection stays open for the client's next request, as most real origins keep it.
    The headers and the body are two writes: with Nagle's algorithm on, the body's would wait for the
    client's delayed acknowledgement of the headers (BENCHMARKS.md)."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True


class Server(http.server.ThreadingHTTPServer):
    """http.server with a listen queue for many clients.  Its default queue of 5 overflows when fifty
    clients go through a proxy, which opens a connection to the origin for each request (the server
    speaks HTTP/1.0): each dropped SYN then costs its request a second (the kernel's first retransmission),
    and a benchmark would time the origin's queue, not the proxy."""

    request_queue_size = 1024
    daemon_threads = True


@contextlib.contextmanager
def serve(directory: str) -> Iterator[str]:
    """Serve ``directory`` on 127.0.0.1 on a free port; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=directory)
    server = Server(("127.0.0.1", 0), handler)

    def run() -> None:
        # Ctrl-C, SIGTERM and SIGHUP go to the main thread: the kernel hands a signal to any thread
        # that takes it, and one handed to this thread would only set a flag that a main thread
        # blocked in waitpid never reads (a demo that ignored SIGTERM).  Its request threads inherit this.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
        server.serve_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def serve_apart(directory: str) -> Iterator[str]:
    """Serve ``directory`` as :func:`serve` does, from a process of its own (this script's ``--serve``):
    the clients of a benchmark then share no GIL with the origin.  Yields the base URL."""
    server, port = serve_process(directory)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.terminate()
        server.wait(timeout=15)


def serve_process(directory: str, keep_alive: bool = False) -> tuple[subprocess.Popen, int]:
    """Start ``sitecrawl.py DIRECTORY --serve PORT`` on a free port and wait until it listens
    (``keep_alive``: speaking HTTP/1.1, ``--keep-alive``)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, os.path.abspath(__file__), directory, "--serve", str(port)]
    command += ["--keep-alive"] if keep_alive else []
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        if server.poll() is not None:
            raise RuntimeError(f"the origin exited ({server.returncode}) before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return server, port
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise RuntimeError(f"the origin did not listen on {port} in 30 s")


def crawl(url: str, warc_path: str, mirror_dir: str | None = None, timeout: float = 1800) -> float:
    """Mirror ``url`` with wget into a WARC.gz (and optionally keep the files); returns seconds."""
    if shutil.which("wget") is None:
        raise RuntimeError("wget is not installed (apt-get install -y wget)")
    warc_base = warc_path[: -len(".warc.gz")] if warc_path.endswith(".warc.gz") else warc_path
    work = mirror_dir or tempfile.mkdtemp(prefix="sitecrawl-")
    os.makedirs(work, exist_ok=True)
    started = time.perf_counter()
    command = [
        "wget",
        "--mirror",
        "--no-parent",
        "--quiet",
        "--no-verbose",
        "-e",
        "robots=off",
        "--reject-regex",
        REJECT,
        f"--warc-file={os.path.abspath(warc_base)}",
        "--no-warc-keep-log",
        "--directory-prefix",
        work,
        url,
    ]
    result = subprocess.run(command, timeout=timeout, capture_output=True, text=True)
    # A real site has broken links (8), links to unreachable ports (4) and URLs
    # that cannot both be files on disk, like "docs" and "docs/" (3); the WARC
    # still records every response, and it is what we keep.
    if result.returncode not in (0, 3, 4, 8) or not os.path.exists(warc_path):
        raise RuntimeError(f"wget failed ({result.returncode}): {result.stderr[-2000:]}")
    if mirror_dir is None:
        shutil.rmtree(work, ignore_errors=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("docroot", help="directory to serve")
    parser.add_argument("warc", nargs="?", help="output .warc.gz")
    parser.add_argument("--mirror", help="keep wget's mirrored files here")
    parser.add_argument("--serve", type=int, metavar="PORT", help="only serve docroot on 127.0.0.1:PORT, until killed")
    parser.add_argument(
        "--keep-alive",
        action="store_true",
        help="with --serve: speak HTTP/1.1 and keep connections open (default: HTTP/1.0, a connection a request)",
    )
    args = parser.parse_args()
    if args.serve is not None:
        handler = functools.partial(_KeepAliveHandler if args.keep_alive else _QuietHandler, directory=args.docroot)
        with Server(("127.0.0.1", args.serve), handler) as server:
            server.serve_forever()
        return
    if args.warc is None:
        parser.error("the output .warc.gz is needed, unless --serve")
    with serve(args.docroot) as url:
        seconds = crawl(url, args.warc, args.mirror)
    print(f"crawled {url} into {args.warc} in {seconds:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
