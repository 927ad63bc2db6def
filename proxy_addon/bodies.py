"""A response body's Content-Encoding undone within a bound, and done again: in the rewriting process.

mitmproxy decodes a body whole when ``response.content`` is read, in its event
loop: a few megabytes of gzip that inflate to gigabytes would hold every other
client up and take that memory.  Here a body is inflated only up to a limit
(``pagerank_max_body``), a piece at a time; past it, the page passes on
untouched, its original bytes unchanged.  This runs in the worker processes,
never in mitmproxy's loop.

Brotli is undone with ``brotlicffi``, whose decoder (1.2 on) stops at an
output limit and goes on from there: mitmproxy 11 pins Google's ``brotli`` to
1.1.0, whose decoder has none (a bomb of 2 KB inflates to its full gigabyte in
one call, whatever input it is fed at a time).  Without a ``brotlicffi`` that
bounds its output, a brotli page passes untouched.
"""

from __future__ import annotations

import io
import zlib

from mitmproxy.net import encoding as _encoding

__all__ = ["TooLarge", "UnknownEncoding", "decode", "encode", "ENCODINGS"]

ENCODINGS = ("identity", "gzip", "x-gzip", "deflate", "br", "zstd")
# decoded bytes asked of the brotli decoder at once: its first buffer (a small page takes one call), doubled
# each call up to the last (a call's buffer is allocated whole)
_BROTLI_FIRST = 64 * 1024
_BROTLI_MOST = 1024 * 1024


class TooLarge(ValueError):
    """The body inflates past the limit."""


class UnknownEncoding(ValueError):
    """A Content-Encoding this proxy does not undo (or a chain of several)."""


def decode(raw: bytes, content_encoding: str | None, limit: int) -> bytes:
    """``raw`` with its Content-Encoding undone; TooLarge past ``limit`` bytes, ValueError if it is corrupt."""
    name = (content_encoding or "identity").strip().lower()
    if name in ("", "identity", "none"):
        body = raw
    elif name in ("gzip", "x-gzip"):
        body = _zlib(raw, zlib.MAX_WBITS | 16, limit, members=True)
    elif name == "deflate":
        try:
            body = _zlib(raw, zlib.MAX_WBITS, limit)
        except zlib.error:  # many servers send raw deflate, without the zlib header
            body = _zlib(raw, -zlib.MAX_WBITS, limit)
    elif name == "br":
        body = _brotli(raw, limit)
    elif name == "zstd":
        body = _zstd(raw, limit)
    else:
        raise UnknownEncoding(f"content-encoding {name!r}")
    if len(body) > limit:
        raise TooLarge(f"over {limit:,} bytes once decoded")
    return body


def encode(body: bytes, content_encoding: str | None) -> bytes:
    """``body`` encoded again as it came."""
    name = (content_encoding or "identity").strip().lower()
    if name in ("", "identity", "none"):
        return body
    return _encoding.encode(body, "gzip" if name == "x-gzip" else name)


def _zlib(raw: bytes, wbits: int, limit: int, members: bool = False) -> bytes:
    out = bytearray()
    data = raw
    while data:
        inflater = zlib.decompressobj(wbits)
        out += inflater.decompress(data, limit + 1 - len(out))
        if len(out) > limit or inflater.unconsumed_tail:
            raise TooLarge(f"over {limit:,} bytes once decoded")
        if not inflater.eof:
            raise zlib.error("the compressed body is cut short")
        data = inflater.unused_data if members else b""
        if data.strip(b"\0") == b"":  # padding after the last member
            break
    return bytes(out)


def _brotli(raw: bytes, limit: int) -> bytes:
    """``raw`` decoded, asking the decoder for at most the bytes still under ``limit`` (and one more) a call:
    memory held is the output so far, one call's buffer and the decoder's window (16 MiB at most)."""
    try:
        import brotlicffi
    except ImportError:
        brotlicffi = None
    if brotlicffi is None or not hasattr(brotlicffi.Decompressor, "can_accept_more_data"):  # before 1.2
        raise UnknownEncoding("content-encoding 'br' needs brotlicffi >= 1.2 (a decoder with an output limit)")
    decompressor = brotlicffi.Decompressor()
    out = bytearray()
    data, ask = raw, _BROTLI_FIRST
    while True:
        try:
            piece = decompressor.process(data, output_buffer_limit=min(ask, limit + 1 - len(out)))
        except brotlicffi.error as error:
            said = error.args[0] if error.args else ""
            said = said.decode(errors="replace") if isinstance(said, bytes) else str(said)  # brotlicffi's are bytes
            raise ValueError(f"the brotli body is corrupt ({said.rstrip('.')})") from None
        data, ask = b"", min(2 * ask, _BROTLI_MOST)  # the input is held by the decoder from the first call
        out += piece
        if len(out) > limit:
            raise TooLarge(f"over {limit:,} bytes once decoded")
        if decompressor.is_finished():
            return bytes(out)
        if decompressor.can_accept_more_data():  # every byte read and its output given, and the stream goes on
            raise ValueError("the brotli body is cut short")
        if not piece:  # neither more output nor the end: never so with a decoder that keeps its contract
            raise ValueError("the brotli decoder made no progress")


def _zstd(raw: bytes, limit: int) -> bytes:
    import zstandard

    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw), read_across_frames=True)
    body = reader.read(limit + 1)
    if len(body) > limit:
        raise TooLarge(f"over {limit:,} bytes once decoded")
    return body
