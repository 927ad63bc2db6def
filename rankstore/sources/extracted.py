"""An extraction's folder (``rankstore extract``'s output) read as a crawl: its pages, each with its links.

The folder holds ``EXTRACT`` (its mark), ``done.jsonl`` (a line a crawl file
extracted: its name, size, checksum, the name of its parts and its counts) and
the parts, ``links/part-NAME.parquet`` and ``pages/part-NAME.parquet``
(:mod:`rankstore.extraction` writes them).  Each page comes back as a
:class:`~rankstore.sources.Record` whose links are listed, absolute and in
normal form already, with their anchor text and ``rel`` nofollow where the
link was nofollow, ugc or sponsored.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass

from . import ListedLink, ListedPage, Progress, Record, Skipped

__all__ = ["MARKER", "LEDGER", "FORMAT", "VERSION", "FileDone", "FileFailed", "read_ledger", "is_extracted",
           "read_extracted", "extracted_size"]  # fmt: skip

MARKER = "EXTRACT"  # the folder's mark, with its format and version
LEDGER = "done.jsonl"  # a line a file done
FORMAT, VERSION = "rankstore-extract", 1


@dataclass(frozen=True)
class FileDone:
    """A file extracted: what the ledger keeps of it."""

    file: str  # as given: a path, or a URL
    size: int
    checksum: str  # "sha256:HEX" of a file on disk; "xxh3_64:HEX" of the bytes a URL gave (hashed as they came)
    part: str  # the parts' name
    pages: int
    links: int
    skipped: int  # records that could not be read
    records: int = 0  # the pages read (with sites, more than those kept)


@dataclass(frozen=True)
class FileFailed:
    """A file that could not be extracted, and why (one line)."""

    file: str
    why: str


def read_ledger(out: str) -> dict[str, FileDone]:
    """The files done, by name (the last line of each)."""
    done: dict[str, FileDone] = {}
    try:
        with open(os.path.join(out, LEDGER), encoding="utf-8") as handle:
            for line in handle:
                try:
                    fields = json.loads(line)
                    if "sha256" in fields:  # the first ledgers' name of the checksum
                        fields["checksum"] = "sha256:" + fields.pop("sha256")
                    item = FileDone(**fields)
                except (ValueError, TypeError):  # a line cut short by a crash: its file is done again
                    continue
                done[item.file] = item
    except FileNotFoundError:
        pass
    return done


def is_extracted(path: str) -> bool:
    """Is ``path`` the folder of an extraction?"""
    return os.path.isfile(os.path.join(path, MARKER))


def read_extracted(folder: str, progress: Progress | None = None) -> Iterator[Record | Skipped]:
    """An extraction's pages, as a build reads a crawl: each page with its links as listed (absolute URLs in
    normal form already), in the order the files were done."""
    import pyarrow.parquet as pq

    for item in read_ledger(folder).values():
        try:
            pages = pq.read_table(os.path.join(folder, "pages", f"part-{item.part}.parquet")).to_pylist()
            links = pq.read_table(os.path.join(folder, "links", f"part-{item.part}.parquet")).to_pylist()
        except OSError as error:
            yield Skipped(f"{folder}: part {item.part}", f"cannot read: {error}")
            continue
        by_source: dict[str, list[ListedLink]] = {}
        for link in links:
            rel = "nofollow" if link["nofollow"] else ""
            by_source.setdefault(link["source"], []).append(ListedLink(link["target"], rel, link["anchor"] or ""))
        for page in pages:
            listed = ListedPage(page["title"], by_source.get(page["url"], []), canonical=page["canonical"])
            yield Record(
                page["url"], f"{item.file}: {page['url']}", page["status"], fetched_at=page["fetched_at"],
                listed=listed,
            )  # fmt: skip
        if progress is not None:
            progress(item.size)


def extracted_size(folder: str) -> int:
    """Bytes :func:`read_extracted` reports through ``progress``: the crawl files' sizes."""
    return sum(item.size for item in read_ledger(folder).values())
