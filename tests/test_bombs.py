"""Compression bombs in every Content-Encoding the proxy undoes, beside gzip's (tests/test_hostile.py).

A bomb is a small body that inflates far past ``pagerank_max_body``: it must
be refused (``TooLarge``) without ever being inflated whole, and pass on to
the client untouched, its original bytes.  A small page in the same encoding
is undone and rewritten, so a bomb is refused for its size, not its encoding.
"""

from __future__ import annotations

import functools
import tracemalloc
import zlib

import brotli
import pytest
import zstandard
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


BROTLI_UNBOUNDED = pytest.mark.xfail(
    strict=True,
    reason="brotli 1.1.0's Decompressor.process has no output limit: a bomb of a few hundred bytes inflates whole "
    "in one call "
    "(bodies._brotli checks the limit only after it); bounded once brotli >= 1.2's output_buffer_limit is used",
)


@pytest.mark.parametrize("kind", ["gzip", "deflate", "raw deflate", "zstd", pytest.param("br", marks=BROTLI_UNBOUNDED)])
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
    and a small page in the same encoding gets its bars, encoded again as it came."""
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
        assert page.response.headers["content-encoding"] == _header(kind)
        rewritten = bodies.decode(page.response.raw_content, _header(kind), LIMIT).decode()
        assert outside_panel(rewritten).count("<pagerank-bar") == 1
