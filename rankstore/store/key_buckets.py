"""The hosts' and the sites' name keys (``host_key_buckets``, ``site_key_buckets``): each name's 63-bit
hash and id, in sorted buckets.

A name is found by the hash :func:`.pages.url_keys` gives it, not by the
text index of the names.  The keys are split by their top ``bits`` bits
(``meta.site_key_bits``, ``meta.host_key_bits``) into buckets of about :data:`BUCKET_KEYS` keys, one
row each: the bucket's keys sorted (int64) and their site ids (int32), 0
for a hash two names share (neither is told by it; the name index is).  So:

* a probe of a thousand names reads the thousand buckets the names fall in,
  a row each, found by its number (no search of a key index first);
* a reader holding every key (the proxy) reads them in bulk, two blobs a
  bucket, already in key order (buckets in bucket order are the keys in
  order): seconds for 135 million sites, where a row a key took a minute and
  hashing every name again most of one;
* the store spends 12 bytes a name and a few a bucket, where a row a key in a
  B-tree took 19.

``bits`` grows with the keys held (:func:`bits_for`): when they outgrow it
by :data:`GROWTH`, :func:`add` writes every bucket again at the new size.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from .pages import url_keys

__all__ = [
    "BUCKET_KEYS",
    "GROWTH",
    "HOSTS",
    "SITES",
    "HeldKeys",
    "KeyTable",
    "add",
    "bits_for",
    "clear",
    "find",
    "ids_by_key",
    "read",
    "write",
    "write_from_names",
    "zeroed",
]

BUCKET_KEYS = 128  # keys a bucket holds on average: a row of 1.5 KB, two to a database page
GROWTH = 4  # keys held past BUCKET_KEYS * GROWTH a bucket on average: every bucket written again, smaller
_IN_LIST = 2000  # buckets in one IN list of find
_WRITE_ROWS = 1 << 14  # buckets inserted by one executemany
_NAME_ROWS = 1 << 20  # names read, and hashed, at once by write_from_names


@dataclass(frozen=True)
class KeyTable:
    """Where one level's keys are held: the table of buckets and the two ``meta`` keys that size it."""

    table: str  # of rows (bucket, hashes, ids)
    bits_key: str  # meta: the bucket bits
    held_key: str  # meta: the keys held


SITES = KeyTable("site_key_buckets", "site_key_bits", "site_keys_held")
HOSTS = KeyTable("host_key_buckets", "host_key_bits", "host_keys_held")


@dataclass(frozen=True)
class HeldKeys:
    """Keys in order with their ids: every name's (:func:`read`), or those a probe found (:func:`find`)."""

    hashes: np.ndarray  # int64, ascending, each once
    ids: np.ndarray  # int32, in the order of ``hashes``; 0 for a hash two names share


def bits_for(count: int) -> int:
    """The bucket bits for ``count`` keys: about :data:`BUCKET_KEYS` keys a bucket (none for a few keys)."""
    return max(0, math.ceil(math.log2(count / BUCKET_KEYS))) if count > BUCKET_KEYS else 0


def _meta(db: sqlite3.Connection, key: str) -> int:
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return int(row[0]) if row else 0


def _set_meta(db: sqlite3.Connection, keys: KeyTable, bits: int, held: int) -> None:
    pairs = ((keys.bits_key, str(bits)), (keys.held_key, str(held)))
    db.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", pairs)


def _bucket_of(hashes: np.ndarray, bits: int) -> np.ndarray:
    return hashes >> (63 - bits)


def _rows(hashes: np.ndarray, ids: np.ndarray, bits: int) -> Iterator[tuple[int, bytes, bytes]]:
    """(bucket, hashes, ids) of each bucket that holds a key, of keys in order."""
    buckets = _bucket_of(hashes, bits)
    starts = np.flatnonzero(np.concatenate([[True], buckets[1:] != buckets[:-1]])) if len(buckets) else buckets
    ends = np.append(starts[1:], len(buckets))
    for lo, hi in zip(starts.tolist(), ends.tolist()):
        yield int(buckets[lo]), hashes[lo:hi].astype("<i8").tobytes(), ids[lo:hi].astype("<i4").tobytes()


def _insert(db: sqlite3.Connection, keys: KeyTable, rows: Iterator[tuple[int, bytes, bytes]]) -> None:
    while chunk := [row for _, row in zip(range(_WRITE_ROWS), rows)]:
        db.executemany(f"INSERT OR REPLACE INTO {keys.table} (bucket, hashes, ids) VALUES (?, ?, ?)", chunk)


def clear(db: sqlite3.Connection, keys: KeyTable) -> None:
    """No key held (a bulk numbering writes them all once it is done)."""
    db.execute(f"DELETE FROM {keys.table}")
    _set_meta(db, keys, 0, 0)


def write(db: sqlite3.Connection, keys: KeyTable, hashes: np.ndarray, ids: np.ndarray) -> None:
    """Every key, in place of those held: ``hashes`` ascending, each once (a shared one's id 0)."""
    db.execute(f"DELETE FROM {keys.table}")
    bits = bits_for(len(hashes))
    _insert(db, keys, _rows(hashes, ids, bits))
    _set_meta(db, keys, bits, len(hashes))


def add(db: sqlite3.Connection, keys: KeyTable, hashes: np.ndarray, ids: np.ndarray) -> None:
    """Keys of names new to the store: each merged into its bucket; a key already held (another name's, or
    another of these) becomes 0, which sends a probe of either name to the name index."""
    if not len(hashes):
        return
    order = np.argsort(hashes)  # equal keys' order does not matter: they are made one, of id 0
    hashes, ids = hashes[order].astype(np.int64), ids[order].astype(np.int32)
    del order
    bits, held = _meta(db, keys.bits_key), _meta(db, keys.held_key)
    if held + len(hashes) > BUCKET_KEYS * GROWTH << bits:  # outgrown: every bucket again, at the new size
        whole = read(db, keys)
        if len(whole.hashes):
            # two sorted runs: a stable sort (a merge sort) finds them and merges them in one pass
            merged_hashes = np.concatenate([whole.hashes, hashes])
            order = np.argsort(merged_hashes, kind="stable")
            hashes, ids = merged_hashes[order], np.concatenate([whole.ids, ids])[order]
            del whole, merged_hashes, order
        merged = zeroed(hashes, ids)
        del hashes, ids
        write(db, keys, merged.hashes, merged.ids)
        return
    old = _fetch(db, keys, np.unique(_bucket_of(hashes, bits)))
    merged_hashes = np.concatenate([old.hashes, hashes])
    order = np.argsort(merged_hashes, kind="stable")
    merged = zeroed(merged_hashes[order], np.concatenate([old.ids, ids])[order])
    _insert(db, keys, _rows(merged.hashes, merged.ids, bits))
    _set_meta(db, keys, bits, held - len(old.hashes) + len(merged.hashes))


def zeroed(hashes: np.ndarray, ids: np.ndarray) -> HeldKeys:
    """Sorted keys with their ids, each key once: a key two names share keeps id 0 (neither name is told by
    it: the name index is)."""
    if not len(hashes):
        return HeldKeys(hashes, ids)
    first = np.concatenate([[True], hashes[1:] != hashes[:-1]])
    if first.all():
        return HeldKeys(hashes, ids)
    starts = np.flatnonzero(first)
    shared = np.diff(np.append(starts, len(hashes))) > 1
    ids = ids[first].copy()
    ids[shared] = 0
    return HeldKeys(hashes[first], ids)


def _fetch(db: sqlite3.Connection, keys: KeyTable, buckets: np.ndarray) -> HeldKeys:
    """The keys of ``buckets`` (ascending), in key order."""
    hashes: list[bytes] = []
    ids: list[bytes] = []
    for lo in range(0, len(buckets), _IN_LIST):
        chunk = buckets[lo : lo + _IN_LIST].tolist()
        for held_hashes, held_ids in db.execute(
            f"SELECT hashes, ids FROM {keys.table} WHERE bucket IN ({','.join('?' * len(chunk))}) ORDER BY bucket",
            chunk,
        ):
            hashes.append(held_hashes)
            ids.append(held_ids)
    return HeldKeys(np.frombuffer(b"".join(hashes), dtype="<i8"), np.frombuffer(b"".join(ids), dtype="<i4"))


def find(db: sqlite3.Connection, keys: KeyTable, hashes: np.ndarray) -> HeldKeys:
    """Those of ``hashes`` (ascending, each once) that are held, with their ids: a row read per bucket they
    fall in, by its number."""
    if not len(hashes):
        return HeldKeys(np.zeros(0, np.int64), np.zeros(0, np.int32))
    held = _fetch(db, keys, np.unique(_bucket_of(hashes, _meta(db, keys.bits_key))))
    if not len(held.hashes):
        return held
    at = np.minimum(np.searchsorted(held.hashes, hashes), len(held.hashes) - 1)
    hit = held.hashes[at] == hashes
    return HeldKeys(hashes[hit], held.ids[at[hit]])


def read(db: sqlite3.Connection, keys: KeyTable, last: int | None = None) -> HeldKeys:
    """Every key held, in order, those of ids past ``last`` left out: each bucket's blobs copied into two
    buffers sized once (no list of a row a key, no array a bucket)."""
    count = _meta(db, keys.held_key)
    hashes = bytearray(8 * count)
    ids = bytearray(4 * count)
    done = 0
    for held_hashes, held_ids in db.execute(f"SELECT hashes, ids FROM {keys.table} ORDER BY bucket"):
        size = len(held_ids)
        if done + size > len(ids):
            raise sqlite3.DatabaseError(f"{keys.table} holds more keys than meta.{keys.held_key} says")
        hashes[2 * done : 2 * (done + size)] = held_hashes
        ids[done : done + size] = held_ids
        done += size
    held = HeldKeys(
        np.frombuffer(hashes, dtype="<i8")[: done // 4].astype(np.int64, copy=False),
        np.frombuffer(ids, dtype="<i4")[: done // 4].astype(np.int32, copy=False),
    )
    if last is None:
        return held
    inside = held.ids <= last
    return held if inside.all() else HeldKeys(held.hashes[inside], held.ids[inside])


def write_from_names(db: sqlite3.Connection, keys: KeyTable, names_table: str) -> None:
    """Every key written again from the names of ``names_table`` (``hosts`` or ``sites``: rows of id and
    name), after a bulk numbering, a migration or a renaming: hashed in bulk, sorted, a bucket a row."""
    last = db.execute(f"SELECT coalesce(max(id), 0) FROM {names_table}").fetchone()[0]
    ids = np.zeros(last, dtype=np.int32)
    hashes = np.zeros(last, dtype=np.int64)
    done = 0
    cursor = db.execute(f"SELECT id, name FROM {names_table} ORDER BY id")
    while rows := cursor.fetchmany(_NAME_ROWS):
        ids[done : done + len(rows)] = [row[0] for row in rows]
        hashes[done : done + len(rows)] = url_keys([row[1] for row in rows])
        done += len(rows)
    del rows
    ids, hashes = ids[:done], hashes[:done]  # fewer rows than the last id where a repeated name's row was deleted
    order = np.argsort(hashes, kind="stable")
    hashes = hashes[order]
    ids = ids[order]
    del order
    held = zeroed(hashes, ids)
    del hashes, ids
    write(db, keys, held.hashes, held.ids)


def ids_by_key(db: sqlite3.Connection, keys: KeyTable, names: Iterable[str]) -> dict[str, int]:
    """{name: id} of the names whose hash is held (0: a hash two held names share, or two of the names asked:
    to ask by name), each name's bucket read once."""
    unique = list(dict.fromkeys(names))
    hashes = url_keys(unique)
    order = np.argsort(hashes, kind="stable")
    hashes = hashes[order]
    if len(hashes) > 1 and not (hashes[1:] != hashes[:-1]).all():  # two names asked of one hash: each by name
        return dict.fromkeys(unique, 0)
    found = find(db, keys, hashes)
    if not len(found.hashes):
        return {}
    at = order[np.searchsorted(hashes, found.hashes)]
    return dict(zip([unique[i] for i in at.tolist()], found.ids.tolist()))
