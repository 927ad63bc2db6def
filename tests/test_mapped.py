"""Mapped arrays (rankstore.store.mapped): one copy of a version's arrays for every process, never a wrong score.

Each reader maps the files ``rank`` wrote beside the store; a file missing is made again from the store, a file
of another version, cut short or overwritten is refused and made again, and ``forget`` leaves none of what it
dropped."""

from __future__ import annotations

import json
import mmap
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from rankstore.cli import cli
from rankstore.store import Store
from rankstore.store.mapped import mapped_folder

from conftest import edge_store

EDGES = [(f"http://s{i % 7}.example/p{i}", f"http://s{(i * 3) % 7}.example/p{(i * 5) % 40}") for i in range(200)]


def run(*args: str) -> str:
    done = CliRunner().invoke(cli, list(args))
    assert done.exit_code == 0, done.output
    return done.stdout


@pytest.fixture
def store(tmp_path) -> str:
    return edge_store(tmp_path, EDGES)


def _from_blocks(path: str, name: str = "pagerank") -> tuple[int, np.ndarray, np.ndarray]:
    """(version id, scores, in-links) as the store's blocks hold them, read here without the library's arrays."""
    with Store(path, readonly=True) as opened:
        ranking = opened.rankings.ranking(name)
        rows = opened.db.execute(
            "SELECT scores, inlinks FROM ranking_blocks WHERE ranking_id = ? ORDER BY first", (ranking.id,)
        ).fetchall()
    scores = np.concatenate([np.frombuffer(s, dtype=">f8") for s, _ in rows])
    inlinks = np.concatenate([np.frombuffer(i, dtype=">i4") for _, i in rows])
    return ranking.id, scores, inlinks


def _read(path: str, name: str = "pagerank"):
    with Store(path, readonly=True) as opened:
        ranking = opened.rankings.ranking(name)
        arrays = opened.rankings.ranking_arrays(ranking.id, votes=False)
        return arrays, np.array(arrays.scores), np.array(arrays.inlinks)


def _is_mapped(values: np.ndarray) -> bool:
    while values is not None and not isinstance(values, mmap.mmap):
        values = values.base
    return isinstance(values, mmap.mmap)


def test_rank_writes_the_versions_files_and_a_reader_maps_them(store):
    ranking_id, scores, inlinks = _from_blocks(store)
    folder = mapped_folder(store)
    assert sorted(p.name for p in folder.iterdir()) == [
        f"ranking-{ranking_id}.{column}"
        for column in ("best.npy", "inlinks.npy", "json", "linked.npy", "position.npy", "scores.npy", "votes.npy")
    ]
    assert folder.stat().st_mode & 0o777 == 0o700
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in folder.iterdir())
    arrays, mapped_scores, mapped_inlinks = _read(store)
    assert _is_mapped(arrays.scores) and _is_mapped(arrays.position) and _is_mapped(arrays.votes)
    assert not arrays.votes_left  # a backlink report's contributions come from the files too
    assert np.array_equal(mapped_scores, scores) and np.array_equal(mapped_inlinks, inlinks)
    assert np.array_equal(arrays.position[arrays.best], np.arange(len(scores)))


def test_a_version_ranked_again_gets_its_own_files_and_the_dropped_ones_go(store):
    first, _, _ = _from_blocks(store)
    run("rank", "--store", store, "-q", "--damping", "0.5")
    second, scores, _ = _from_blocks(store)
    run("rank", "--store", store, "-q", "--damping", "0.6")
    third, scores, _ = _from_blocks(store)
    assert len({first, second, third}) == 3
    names = {p.name.split(".")[0] for p in mapped_folder(store).iterdir()}
    assert names == {f"ranking-{second}", f"ranking-{third}"}  # two versions kept, as the store keeps them
    _, read, _ = _read(store)
    assert np.array_equal(read, scores)


def test_a_file_removed_is_made_again_from_the_store(store):
    ranking_id, scores, _ = _from_blocks(store)
    (mapped_folder(store) / f"ranking-{ranking_id}.scores.npy").unlink()
    arrays, read, _ = _read(store)
    assert np.array_equal(read, scores) and _is_mapped(arrays.scores)
    assert (mapped_folder(store) / f"ranking-{ranking_id}.scores.npy").exists()


@pytest.mark.parametrize("damage", ["cut short", "zeroed", "another version's", "stamp edited", "not an array"])
def test_a_damaged_file_is_refused_and_made_again_never_read(store, damage):
    ranking_id, scores, _ = _from_blocks(store)
    folder = mapped_folder(store)
    target = folder / f"ranking-{ranking_id}.scores.npy"
    if damage == "cut short":
        with target.open("r+b") as out:
            out.truncate(target.stat().st_size - 8)
    elif damage == "zeroed":
        values = np.load(target, mmap_mode="r+")
        values[:] = 0.0
        values.flush()
        del values
    elif damage == "another version's":
        run("rank", "--store", store, "-q", "--damping", "0.5")
        newer, scores, _ = _from_blocks(store)
        # the newer version's files given the newer scores of the older one: the stamp says the older's
        shutil.copy(folder / f"ranking-{ranking_id}.scores.npy", folder / f"ranking-{newer}.scores.npy")
        target = folder / f"ranking-{newer}.scores.npy"
    elif damage == "stamp edited":
        stamp = folder / f"ranking-{ranking_id}.json"
        said = json.loads(stamp.read_text())
        stamp.write_text(json.dumps({**said, "pages": said["pages"] + 1}))
    else:
        target.write_bytes(b"not a numpy file")
    arrays, read, _ = _read(store)
    assert np.array_equal(read, scores)  # the store's scores, never the damaged file's
    assert np.array_equal(np.load(target), scores)  # made again


def test_top_reads_the_same_with_and_without_the_files(store):
    with_files = run("top", "--store", store, "--format", "json", "-n", "0")
    shutil.rmtree(mapped_folder(store))
    mapped_folder(store).touch()  # a folder that cannot be made: each reader keeps its own copy, as before
    assert run("top", "--store", store, "--format", "json", "-n", "0") == with_files


def test_forget_wipes_the_files_of_the_versions_it_drops(store):
    ranking_id, _, _ = _from_blocks(store)
    scores_file = mapped_folder(store) / f"ranking-{ranking_id}.scores.npy"
    held = scores_file.open("rb")  # the file's bytes, as a process that had it open still sees them
    try:
        run("forget", "--host", "s1.example", "--store", store)
        assert not scores_file.exists()
        assert set(held.read()[128:]) == {0}  # overwritten before it went
    finally:
        held.close()


def _keys(path: str, level: str):
    with Store(path, readonly=True) as opened:
        keys = opened.levels.level_keys(level)
        names = opened.hosts.host_names(range(1, keys.count + 1)) if level == "host" else None
        return keys, names


def test_a_levels_name_keys_are_mapped_and_made_again_when_the_level_grows(store, tmp_path):
    keys, names = _keys(store, "host")
    assert _is_mapped(keys.hashes) and _is_mapped(keys.slots.starts)
    assert keys.find(list(names.values())) == {name: number for number, name in names.items()}
    more = tmp_path / "more.txt"
    more.write_text("http://new.example/ http://s1.example/p1\n")
    run("build", str(more), "--store", store, "-q")
    grown, names = _keys(store, "host")
    assert grown.count == keys.count + 1 and grown.find(["new.example"]) == {"new.example": grown.count}
    assert json.loads((mapped_folder(store) / "keys-host.json").read_text())["count"] == grown.count


def test_damaged_name_keys_are_refused_never_read(store):
    keys, names = _keys(store, "host")
    hashes = np.load(mapped_folder(store) / "keys-host.hashes.npy", mmap_mode="r+")
    hashes[:] = np.sort(np.arange(len(hashes), dtype=np.int64) * 1000 + 7)  # sorted, plausible, wrong
    hashes.flush()
    del hashes
    again, _ = _keys(store, "host")
    assert again.find(list(names.values())) == {name: number for number, name in names.items()}


def test_a_page_waits_for_no_level_keys_the_store_has_not_mapped_yet(store, monkeypatch):
    """Keys missing (a build numbered more hosts since): the page's hosts are probed in the store's key buckets
    and the keys are made beside it, in a thread of their own (at 24 million hosts, twelve seconds)."""
    import threading
    import time

    from proxy_addon.ranks import Ranks
    from rankstore.store.levels import Levels

    run("rank", "--store", store, "--level", "host", "-q")
    assert (mapped_folder(store) / "keys-host.json").exists()  # rank made them with the ranking
    for path in mapped_folder(store).glob("keys-host.*"):
        path.unlink()
    made: list[str] = []
    real = Levels._level_keys

    def level_keys(self, level, count):
        made.append(threading.current_thread().name)
        return real(self, level, count)

    monkeypatch.setattr(Levels, "_level_keys", level_keys)
    ranks = Ranks(store)
    try:
        url = "http://s3.example/not-a-page-of-the-store"
        info = ranks.lookup([url])[url]
        assert info.pagerank is None and info.estimate is not None and info.estimate.name == "s3.example"
        deadline = time.monotonic() + 30
        while not (mapped_folder(store) / "keys-host.json").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert made == ["pagerank-preload"]
    finally:
        ranks.close()


def test_each_pages_host_is_mapped_and_made_again_when_a_build_numbers_more(store, tmp_path):
    with Store(store, readonly=True) as opened:
        hosts = opened.hosts.page_hosts()
        assert _is_mapped(hosts) and len(hosts) == opened.pages.last_page_id()
        first = np.array(hosts)
    more = tmp_path / "more.txt"
    more.write_text("http://new.example/a http://s1.example/p1\n")
    run("build", str(more), "--store", store, "-q")
    with Store(store, readonly=True) as opened:
        grown = np.array(opened.hosts.page_hosts())
        assert len(grown) == len(first) + 1 and np.array_equal(grown[: len(first)], first)
        assert grown[-1] == opened.hosts.host_id("new.example")
    values = np.load(mapped_folder(store) / "page-hosts.npy", mmap_mode="r+")
    values[:] = 0  # damaged: refused, read from the store again
    values.flush()
    del values
    with Store(store, readonly=True) as opened:
        assert np.array_equal(opened.hosts.page_hosts(), grown)


def _resident_kib(folder) -> int:
    """What this process has resident of its mappings of the files in ``folder`` (their ``Rss``).  Not the
    process's whole file-backed PSS: the shared libraries' part of it moves as other processes (xdist's other
    worker) map and unmap them, by more than a test's margin (a clean-clone CI read 444 KiB less)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5:  # a mapping's head: range, perms, offset, dev, inode[, path]
                inside = len(fields) >= 6 and fields[5].startswith(str(folder))
            elif inside and fields[0] == "Rss:":
                total += int(fields[1])
    return total


@pytest.fixture
def large(monkeypatch):
    """Files of a megabyte and more count as large (a domain graph's are gigabytes)."""
    from rankstore.store import mapped

    monkeypatch.setattr(mapped, "LARGE", 1 << 20)
    return mapped


def test_a_large_file_is_mapped_a_page_a_look_up_not_a_large_folio_at_a_time(large, tmp_path):
    """A proxy's look-ups touch a large array at random: each must make a few pages resident in the process (its
    mapping's RSS; the kernel maps up to 64 KiB around a fault from the cache), not the large folio a write (or a read
    ahead) leaves in the page cache: most of a 24 MB array for 128 look-ups before."""
    path = tmp_path / "scores.npy"
    large._write_array(path, np.random.default_rng(1).random(3_000_000))  # 24 MB
    values = large._mapped(path)
    before = _resident_kib(tmp_path)
    picked = np.random.default_rng(2).choice(len(values), 128, replace=False)
    total = sum(float(values[index]) for index in picked.tolist())
    grown = _resident_kib(tmp_path) - before
    assert total > 0
    assert grown <= 128 * 64 + 1024, f"128 look-ups made {grown} KiB of the file resident"


def test_trim_lets_go_of_a_processs_large_mapped_files_past_the_bound_and_they_read_the_same(large, tmp_path):
    """What look-ups left mapped of the large files is let go of once the process's file-backed memory passes the
    bound (the pages stay in the page cache: read again, the same values); within the bound, it is kept."""
    values = np.random.default_rng(3).random(4_000_000)  # 32 MB
    large._write_array(tmp_path / "big.npy", values)
    mapped = large._mapped(tmp_path / "big.npy")
    picked = np.random.default_rng(4).choice(len(values), 2_000, replace=False)
    first = mapped[picked].copy()
    touched = _resident_kib(tmp_path)
    assert not large.trim(most=64 << 20)  # 32 MB mapped: within the bound, kept
    assert not large.trim(most=large._file_resident() + (4 << 20))  # within the bound resident: kept
    assert _resident_kib(tmp_path) == touched
    assert large.trim(most=1 << 20)  # past it: let go of
    assert _resident_kib(tmp_path) < touched - 4 * 1024
    assert np.array_equal(mapped[picked], first) and np.array_equal(first, values[picked])


def _cached_mib(path) -> float:
    """How much of a file the page cache holds (mincore over a fresh mapping of it), in MiB."""
    import ctypes
    import os

    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        view = mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ)
        try:
            vector = np.zeros((size + mmap.PAGESIZE - 1) // mmap.PAGESIZE, dtype=np.uint8)
            address = np.frombuffer(view, dtype=np.uint8).ctypes.data
            libc = ctypes.CDLL(None, use_errno=True)
            assert (
                libc.mincore(ctypes.c_void_p(address), ctypes.c_size_t(size), vector.ctypes.data_as(ctypes.c_void_p))
                == 0
            )
            return int((vector & 1).sum()) * mmap.PAGESIZE / (1 << 20)
        finally:
            view.close()


def _uncached(path) -> None:
    """The file's pages let go of by the page cache (written back first), as a cold disk has them."""
    import os

    with open(path, "rb") as handle:
        os.fsync(handle.fileno())
        os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def test_read_ahead_brings_in_the_parts_a_large_gather_touches_once_and_reads_the_same(large, tmp_path):
    """A view's gather of many entries from a large file the page cache has lost reads it ahead in large requests
    (mapped MADV_RANDOM, each page would be a wait of its own): the parts with the entries asked for, not the rest
    of the file; nothing again once they are cached; the same values; a small gather, a scan and other arrays as
    the docstring says."""
    values = np.random.default_rng(5).random(4_000_000)  # 32 MB: 32 chunks of a MiB
    path = tmp_path / "votes.npy"
    large._write_array(path, values)
    mapped = large._mapped(path)
    _uncached(path)
    assert _cached_mib(path) < 1
    wanted = np.random.default_rng(6).integers(0, len(values) // 4, 20_000)  # within its first quarter
    read = large.read_ahead(mapped, wanted)
    assert 7 << 20 <= read <= 9 << 20  # the quarter that holds them, a request per 8 MiB
    assert 7 <= _cached_mib(path) <= 9.5
    assert large.read_ahead(mapped, wanted) == 0  # cached now: nothing read again
    assert np.array_equal(large.gathered(mapped, wanted), values[wanted])
    assert large.read_ahead(mapped, wanted[: large.READ_AHEAD_FROM - 1]) == 0  # a few: a fault each
    assert large.read_ahead(values, wanted) == 0  # not a mapped file: as it is
    read = large.read_ahead(mapped)  # a scan: the rest of it
    assert 22 << 20 <= read <= 25 << 20 and _cached_mib(path) >= 30
    assert np.array_equal(mapped, values)


def test_read_ahead_passes_over_entries_past_the_array_as_positions_of_asks_for_them(large, tmp_path):
    """positions_of asks for pages newer than the version (past its arrays' end): read ahead for the rest, no
    error, and the positions as before."""
    from rankstore.store.rankings import RankingArrays

    values = np.arange(4_000_000, dtype=np.int32)
    large._write_array(tmp_path / "position.npy", values)
    mapped = large._mapped(tmp_path / "position.npy")
    _uncached(tmp_path / "position.npy")
    asked = np.arange(0, 40_000_000, 9_000)  # 4,445 entries, nine in ten past the end
    assert large.read_ahead(mapped, asked) > 0
    arrays = RankingArrays(values.astype(np.float64), values, values, mapped, None)
    found = arrays.positions_of(asked)
    inside = asked < len(values)
    assert np.array_equal(found[inside], asked[inside]) and (found[~inside] == len(values)).all()
