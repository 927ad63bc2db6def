"""The held keys' search (:func:`rankstore.store.levels.radix_search`), against its reference, numpy's binary
search of the whole array, and a dict.

A reader finds a page's thousand hosts (sites) among the level's held keys:
each key's slot by its top bits, then a binary search of the slot.  Found or
not, each answer is what ``np.searchsorted`` and a dict of the same keys say,
at every size from none to a few slots a key; and at the slots' edges: the
lowest and highest 63-bit keys, keys on a slot's first value, slots empty and
crowded.
"""

from __future__ import annotations

import numpy as np
import pytest

from rankstore.store.levels import RADIX_SPAN, LevelKeys, radix_search, radix_slots
from rankstore.store.pages import url_keys

TOP = 2**63 - 1  # the highest key: url_keys are the 64-bit hash shifted right once


def reference(hashes: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The index of each key in sorted ``hashes`` by one binary search of the whole array, -1 where absent."""
    if not len(hashes):
        return np.full(len(keys), -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(hashes, keys), len(hashes) - 1)
    return np.where(hashes[at] == keys, at, -1)


def sorted_keys(rng: np.random.Generator, count: int) -> np.ndarray:
    return np.unique(rng.integers(0, TOP, size=count, dtype=np.int64, endpoint=True))


@pytest.mark.parametrize("count", [0, 1, 2, 15, 16, 17, 100, 4_096, 100_003])
def test_every_key_held_is_found_where_it_is_and_no_other(count):
    rng = np.random.default_rng(count)
    hashes = sorted_keys(rng, count)
    slots = radix_slots(hashes)
    absent = rng.integers(0, TOP, size=2_000, dtype=np.int64, endpoint=True)
    keys = np.concatenate([hashes, absent, hashes[::-1][:50]])
    rng.shuffle(keys)
    found = radix_search(hashes, slots, keys)
    assert np.array_equal(found, reference(hashes, keys))
    if len(hashes):
        assert np.array_equal(hashes[found[found >= 0]], keys[found >= 0])
        assert (found >= 0).sum() >= len(hashes)


def test_the_slots_cover_the_keys_in_order_a_few_keys_each():
    hashes = sorted_keys(np.random.default_rng(7), 200_000)
    slots = radix_slots(hashes)
    starts = slots.starts
    assert starts[0] == 0 and starts[-1] == len(hashes) and np.all(np.diff(starts) >= 0)
    # every key lies in the slot of its top bits
    slot = hashes >> slots.shift
    assert np.all(starts[slot] <= np.arange(len(hashes))) and np.all(np.arange(len(hashes)) < starts[slot + 1])
    assert len(hashes) / (len(starts) - 1) <= RADIX_SPAN
    assert starts.dtype == np.int32  # a quarter to half a byte a key on top of its twelve


def test_keys_at_the_edges_of_the_range_and_of_the_slots():
    slots_of = radix_slots(sorted_keys(np.random.default_rng(1), 1_000))
    first_of_slot = [(s << slots_of.shift) for s in range(0, 8)]
    hashes = np.unique(np.array([0, 1, TOP - 1, TOP, *first_of_slot, *(v - 1 for v in first_of_slot[1:])], np.int64))
    # as many keys as the thousand, so the slots are as narrow: most empty, a few crowded
    hashes = np.unique(np.concatenate([hashes, np.arange(2**40, 2**40 + 900, dtype=np.int64)]))
    slots = radix_slots(hashes)
    keys = np.concatenate([hashes, hashes + 1, hashes - 1, np.array([TOP, 0, 2**62], np.int64)])
    keys = keys[(keys >= 0)]
    assert np.array_equal(radix_search(hashes, slots, keys), reference(hashes, keys))


def test_level_keys_find_equals_a_dict_of_the_names():
    names = [f"h{i}.site{i % 997}.example" for i in range(30_000)]
    hashes = url_keys(names)
    order = np.argsort(hashes)
    keys = LevelKeys("host", len(names), hashes[order], np.arange(1, len(names) + 1, dtype=np.int32)[order])
    ids = {name: number for number, name in enumerate(names, start=1)}
    asked = names[::7] + [f"other{i}.example" for i in range(500)] + names[:3]
    assert keys.find(asked) == {name: ids[name] for name in asked if name in ids}
    assert keys.find([]) == {} and LevelKeys("site", 0, hashes[:0], order[:0].astype(np.int32)).find(asked) == {}
