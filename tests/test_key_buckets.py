"""The hosts' and the sites' name keys in sorted buckets (:mod:`rankstore.store.key_buckets`), against a dict of
the same keys.

Keys added a few at a time (as a crawl numbers its sites) or written at once
(a bulk numbering) are the same keys, in either level's table: each bucket holds only its own, sorted;
the bucket bits grow with the keys held, so that a bucket stays small; a key
two names share keeps id 0; a probe finds what a dict finds.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from rankstore.store import key_buckets
from rankstore.store.schema import HOST_KEY_BUCKETS, SITE_KEY_BUCKETS


@pytest.fixture(params=[key_buckets.SITES, key_buckets.HOSTS], ids=["sites", "hosts"])
def table(request) -> key_buckets.KeyTable:
    """Each level's keys, in a store that has both tables (the other one stays empty)."""
    return request.param


@pytest.fixture
def db(table):
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    connection.execute(SITE_KEY_BUCKETS)
    connection.execute(HOST_KEY_BUCKETS)
    yield connection
    other = key_buckets.HOSTS if table == key_buckets.SITES else key_buckets.SITES
    assert connection.execute(f"SELECT count(*) FROM {other.table}").fetchone() == (0,)
    connection.close()


def held_by_row(db, table: key_buckets.KeyTable) -> tuple[dict[int, int], int]:
    """{hash: id} of every bucket, each checked to hold its own keys only, in order; and the bucket bits."""
    bits = int(db.execute("SELECT value FROM meta WHERE key = ?", (table.bits_key,)).fetchone()[0])
    held: dict[int, int] = {}
    for bucket, hashes, ids in db.execute(f"SELECT bucket, hashes, ids FROM {table.table}"):
        keys = np.frombuffer(hashes, dtype="<i8")
        assert len(keys) == len(ids) // 4 and np.all(np.diff(keys) > 0)
        assert np.all(keys >> (63 - bits) == bucket)
        held.update(zip(keys.tolist(), np.frombuffer(ids, dtype="<i4").tolist()))
    return held, bits


def random_keys(rng, count: int) -> np.ndarray:
    return rng.integers(0, 1 << 63, size=count, dtype=np.int64)


@pytest.mark.parametrize("bucket_keys", [2, 16, 128])
def test_keys_added_a_few_at_a_time_are_the_keys_written_at_once(db, table, monkeypatch, bucket_keys):
    monkeypatch.setattr(key_buckets, "BUCKET_KEYS", bucket_keys)
    rng = np.random.default_rng(5)
    keys = random_keys(rng, 3000)
    want: dict[int, int] = {}
    for lo in range(0, len(keys), 137):  # as ensure_named numbers a chunk of names at a time
        chunk = keys[lo : lo + 137]
        ids = np.arange(lo + 1, lo + 1 + len(chunk))
        key_buckets.add(db, table, chunk, ids)
        want.update(zip(chunk.tolist(), ids.tolist()))
    held, bits = held_by_row(db, table)
    assert held == want
    # the buckets grew with the keys (at most GROWTH times their size at once): never one bucket of every key
    assert bits > 0 and key_buckets.bits_for(len(keys)) - 2 <= bits <= key_buckets.bits_for(len(keys))
    whole = key_buckets.read(db, table)
    assert np.all(np.diff(whole.hashes) > 0) and dict(zip(whole.hashes.tolist(), whole.ids.tolist())) == want

    other = sqlite3.connect(":memory:")
    other.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    other.execute(SITE_KEY_BUCKETS)
    other.execute(HOST_KEY_BUCKETS)
    order = np.argsort(whole.hashes)
    key_buckets.write(other, table, whole.hashes[order], whole.ids[order])
    assert held_by_row(other, table)[0] == want and held_by_row(other, table)[1] == key_buckets.bits_for(len(keys))


def test_a_probe_finds_what_a_dict_finds(db, table, monkeypatch):
    monkeypatch.setattr(key_buckets, "BUCKET_KEYS", 8)
    rng = np.random.default_rng(9)
    keys = np.unique(random_keys(rng, 2000))
    ids = rng.integers(1, 1 << 30, size=len(keys)).astype(np.int32)
    key_buckets.write(db, table, keys, ids)
    want = dict(zip(keys.tolist(), ids.tolist()))
    asked = np.unique(np.concatenate([keys[::3], random_keys(rng, 500), [0, (1 << 63) - 1]]))
    found = key_buckets.find(db, table, asked)
    assert dict(zip(found.hashes.tolist(), found.ids.tolist())) == {k: want[k] for k in asked.tolist() if k in want}
    assert len(key_buckets.find(db, table, np.zeros(0, np.int64)).hashes) == 0


def test_a_key_already_held_or_given_twice_keeps_id_0(db, table):
    key_buckets.add(db, table, np.array([10, 20, 30], np.int64), np.array([1, 2, 3]))
    key_buckets.add(db, table, np.array([20, 40, 40], np.int64), np.array([4, 5, 6]))  # 20 is another name's; 40 twice
    assert held_by_row(db, table)[0] == {10: 1, 20: 0, 30: 3, 40: 0}
    found = key_buckets.find(db, table, np.array([10, 20, 40, 50], np.int64))
    assert found.hashes.tolist() == [10, 20, 40] and found.ids.tolist() == [1, 0, 0]


def test_cleared_keys_are_none(db, table):
    key_buckets.add(db, table, np.array([10, 20], np.int64), np.array([1, 2]))
    key_buckets.clear(db, table)
    assert held_by_row(db, table) == ({}, 0) and len(key_buckets.read(db, table).hashes) == 0
    assert len(key_buckets.find(db, table, np.array([10], np.int64)).hashes) == 0
