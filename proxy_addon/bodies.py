"""A response body's Content-Encoding undone within a bound, and done again: in the rewriting process.

mitmproxy decodes a body whole when ``response.content`` is read, in its event
loop: a few megabytes of gzip that inflate to gigabytes would hold every other
client up and take that memory.  Here a body is inflated only up to a limit
(``pagerank_max_body``), a piece at a time; past it, the page passes on
untouched, its original bytes unchanged.  This runs in the worker processes,
never in mitmproxy's loop.
"""

from __future__ import annotations

import io
import zlib

from mitmproxy.net import encoding as _encoding

__all__ = ["TooLarge", "UnknownEncoding", "decode", "encode", "ENCODINGS"]

ENCODINGS = ("identity", "gzip", "x-gzip", "deflate", "br", "zstd")
_PIECE = 256  # compressed bytes fed at once where the decoder cannot bound its output itself (brotli)


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
    import brotli

    decompressor = brotli.Decompressor()
    out = bytearray()
    for start in range(0, len(raw), _PIECE):
        out += decompressor.process(raw[start : start + _PIECE])
        if len(out) > limit:
            raise TooLarge(f"over {limit:,} bytes once decoded")
    if not decompressor.is_finished():
        raise ValueError("the brotli body is cut short")
    return bytes(out)


def _zstd(raw: bytes, limit: int) -> bytes:
    import zstandard

    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw), read_across_frames=True)
    body = reader.read(limit + 1)
    if len(body) > limit:
        raise TooLarge(f"over {limit:,} bytes once decoded")
    return body
