#!/usr/bin/env python3
"""Regenerate the golden crawl files in tests/data from tests/data/site.

    python tools/make_test_data.py

small.warc.gz         wget's real crawl of the small site (per-record gzip)
small.warc            the same, uncompressed
truncated.warc.gz     small.warc.gz cut in the middle of a record
garbage.warc.gz       small.warc.gz with 4 KiB of garbage between two records
garbage.warc          small.warc with a garbage "record" between two records
"""

from __future__ import annotations

import gzip
import os
import random
import sys

sys.path.insert(0, os.path.dirname(__file__))
from sitecrawl import crawl, serve  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "..", "tests", "data")


def _member_starts(data: bytes) -> list[int]:
    starts, offset = [], 0
    while (offset := data.find(b"\x1f\x8b\x08", offset)) >= 0:
        starts.append(offset)
        offset += 1
    return starts


def main() -> None:
    warc = os.path.join(DATA, "small.warc.gz")
    with serve(os.path.join(DATA, "site")) as url:
        crawl(url, warc)
    data = open(warc, "rb").read()
    raw = gzip.decompress(data)
    open(os.path.join(DATA, "small.warc"), "wb").write(raw)
    starts = _member_starts(data)
    middle = starts[len(starts) // 2]
    open(os.path.join(DATA, "truncated.warc.gz"), "wb").write(
        data[: middle + (starts[len(starts) // 2 + 1] - middle) // 2]
    )
    garbage = bytes(random.Random(7).randrange(256) for _ in range(4096))
    open(os.path.join(DATA, "garbage.warc.gz"), "wb").write(data[:middle] + garbage + data[middle:])
    records = [i for i in range(len(raw)) if raw.startswith(b"WARC/1.", i) and (i == 0 or raw[i - 1 : i] == b"\n")]
    cut = records[len(records) // 2]
    bad_record = (
        b"WARC/1.0\r\nWARC-Type: response\r\nContent-Length: nonsense\r\n\r\n" + b"\xff\xfe garbage " * 50 + b"\r\n\r\n"
    )
    open(os.path.join(DATA, "garbage.warc"), "wb").write(raw[:cut] + bad_record + raw[cut:])


if __name__ == "__main__":
    main()
