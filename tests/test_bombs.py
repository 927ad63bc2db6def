"""Compression bombs in every Content-Encoding the proxy undoes, beside gzip's (tests/test_hostile.py).

A bomb is a small body that inflates far past ``pagerank_max_body``: it must
be refused (``TooLarge``) without ever being inflated whole, and pass on to
the client untouched, its original bytes.  A small page in the same encoding
is undone and rewritten, so a bomb is refused for its size, not its encoding.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import tracemalloc
import zlib

import brotli
import pytest
import zstandard
from barkit import bar_count
from test_addon import make_flow, outside_panel, run_hooks, running_addon, site, store_path  # noqa: F401 - fixtures

from proxy_addon import bodies

LIMIT = 8 * 1024 * 1024  # pagerank_max_body's default
INFLATED = 128  # MiB a bomb inflates to, far over LIMIT
BLOCK = b"<p>" + b"a" * (1 << 20)
PAGE = b"<!doctype html><html><body><a href='docs/'>Docs</a></body></html>"


def _zlib(wbits: int, pieces: list[bytes]) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, wbits)
    return b"".join(compressor.compress(piece) for piece in pieces) + compressor.flush()


def _brotli(pieces: list[bytes]) -> bytes:
    compressor = brotli.Compressor(quality=5)
    return b"".join(compressor.process(piece) for piece in pieces) + compressor.finish()


def _zstd(pieces: list[bytes]) -> bytes:
    compressor = zstandard.ZstdCompressor(level=3).compressobj()
    return b"".join(compressor.compress(piece) for piece in pieces) + compressor.flush()


# Content-Encoding -> its compressor over a list of pieces; "deflate" comes with and without the zlib header
ENCODERS = {
    "gzip": lambda pieces: _zlib(zlib.MAX_WBITS | 16, pieces),
    "deflate": lambda pieces: _zlib(zlib.MAX_WBITS, pieces),
    "raw deflate": lambda pieces: _zlib(-zlib.MAX_WBITS, pieces),
    "br": _brotli,
    "zstd": _zstd,
}


@functools.cache
def _bomb(kind: str) -> bytes:
    return ENCODERS[kind]([b"<!doctype html><title>bomb</title>"] + [BLOCK] * INFLATED)


def _header(kind: str) -> str:
    return "deflate" if kind == "raw deflate" else kind


@pytest.mark.parametrize("kind", list(ENCODERS))
def test_a_bomb_is_refused_without_inflating_it_whole(kind):
    bomb = _bomb(kind)
    assert len(bomb) < LIMIT // 16  # a bomb: small on the wire
    tracemalloc.start()
    try:
        with pytest.raises(bodies.TooLarge):
            bodies.decode(bomb, _header(kind), LIMIT)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * LIMIT, f"{peak >> 20} MiB held to refuse a {INFLATED} MiB bomb"


@pytest.mark.parametrize("kind", list(ENCODERS))
def test_a_bomb_is_refused_and_a_page_in_its_encoding_is_undone(kind):
    with pytest.raises(bodies.TooLarge):
        bodies.decode(_bomb(kind), _header(kind), LIMIT)
    assert bodies.decode(ENCODERS[kind]([PAGE]), _header(kind), LIMIT) == PAGE
    exact = b"x" * 4096  # a body of exactly the limit is not over it; one byte more is
    assert bodies.decode(ENCODERS[kind]([exact]), _header(kind), 4096) == exact
    with pytest.raises(bodies.TooLarge):
        bodies.decode(ENCODERS[kind]([exact + b"x"]), _header(kind), 4096)


@pytest.mark.parametrize("kind", list(ENCODERS))
async def test_a_bomb_passes_the_addon_untouched_as_a_gzip_bomb_does(store_path, site, kind):  # noqa: F811
    """Through the addon (its rewriting processes), as the proxy runs: the bomb's bytes pass on as they came,
    and a small page in the same encoding is undone and gets its bars, sent decoded (without a Content-Encoding:
    a compressed size would vary with what the bars show) with the length of what is sent."""
    async with running_addon(store_path, pagerank_inline_bytes=0) as addon:
        bomb = _bomb(kind)
        flow = make_flow(site + "index.html", b"", headers=[("content-encoding", _header(kind))])
        flow.response.raw_content = bomb
        await run_hooks(addon, flow)
        assert flow.response.raw_content == bomb and flow.response.headers["content-encoding"] == _header(kind)
        assert flow.metadata["pagerank"].startswith("untouched") and "over" in flow.metadata["pagerank"]

        page = make_flow(site + "index.html", b"", headers=[("content-encoding", _header(kind))])
        page.response.raw_content = ENCODERS[kind]([PAGE])
        await run_hooks(addon, page)
        assert "content-encoding" not in page.response.headers
        raw = page.response.raw_content
        assert int(page.response.headers.get("content-length", len(raw))) == len(raw)
        rewritten = raw.decode()
        assert bar_count(outside_panel(rewritten)) == 1
        assert "<a href='docs/'>Docs" in rewritten  # the page itself, decoded: no compressed bytes left


# Run in a process of its own: how far the resident memory of one decode of a brotli bomb rises above what the
# process held before it (its peak, VmHWM, reset first), and what the decode said.  Under an address-space
# limit (RLIMIT_AS, the second argument: bytes beyond what the process maps already), a decode that tried to
# hold more fails instead.
_MEASURE = """
import json, resource, sys, time

def status(key):
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith(key + ":"))

from proxy_addon import bodies

raw = open(sys.argv[1], "rb").read()
limit, room = int(sys.argv[2]), int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_AS, (status("VmSize") + room,) * 2)
with open("/proc/self/clear_refs", "w") as handle:
    handle.write("5")  # VmHWM from here
before = status("VmRSS")
started = time.perf_counter()
try:
    bodies.decode(raw, "br", limit)
    said = "decoded"
except bodies.TooLarge:
    said = "too large"
except BaseException as error:
    said = repr(error)[:300]
print(json.dumps({"said": said, "rose": status("VmHWM") - before, "seconds": time.perf_counter() - started}))
"""


def _measured_decode(path: str, limit: int, room: int) -> dict:
    from conftest import ROOT

    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, path, str(limit), str(room)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_1_gib_brotli_bomb_is_refused_fast_in_bounded_memory(tmp_path):
    """A brotli bomb of 1 GiB in under 2 KB: refused in well under a second, the process's resident memory
    rising by a few times pagerank_max_body at most (the output so far, the decoder's window of up to 16 MiB),
    and the same decode finishing under an address-space limit of 128 MiB more than the process maps.  (Every
    allocation counts here, the decoder's own in C too, which tracemalloc does not see.)"""
    compressor = brotli.Compressor(quality=5)
    bomb = b"".join(compressor.process(BLOCK) for _ in range(1024)) + compressor.finish()
    assert len(bomb) < 2048
    path = tmp_path / "bomb.br"
    path.write_bytes(bomb)
    free = _measured_decode(str(path), LIMIT, 1 << 40)
    assert free["said"] == "too large", free
    assert free["rose"] < 48 * 1024 * 1024, f"{free['rose'] >> 20} MiB held to refuse a 1 GiB brotli bomb"
    assert free["seconds"] < 1, free
    capped = _measured_decode(str(path), LIMIT, 128 * 1024 * 1024)
    assert capped["said"] == "too large", capped
    page = tmp_path / "page.br"
    page.write_bytes(brotli.compress(PAGE * 10_000))  # 650 KB of page: decoded whole under the same cap
    assert _measured_decode(str(page), LIMIT, 128 * 1024 * 1024)["said"] == "decoded"


@pytest.mark.parametrize(
    "broken, says",
    [
        (brotli.compress(PAGE * 100)[:-8], "cut short"),
        (brotli.compress(PAGE) + b"more", "the brotli body is corrupt .*trailing data"),  # after the stream's end
        (b"\xff" * 64, r"the brotli body is corrupt \(Decompression error: "),
    ],
    ids=["cut", "trailing bytes", "not brotli"],
)
def test_a_broken_brotli_body_is_a_value_error(broken, says):
    """The rewrite leaves a page it cannot decode untouched on a ValueError (proxy_addon/worker.py), so a corrupt
    brotli body must be one, not the binding's own exception class."""
    with pytest.raises(ValueError, match=says):
        bodies.decode(broken, "br", LIMIT)
