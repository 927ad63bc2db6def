"""Mapped arrays: read-only files derived from the store, which every process maps rather than copies.

A ranking version's arrays (scores, in-links, the order by score and each
node's position in it) are what the proxy consults for every link, in its
main process and in each rewriting worker.  Read from ``ranking_blocks``,
each process held its own copy (a domain graph's 135 million sites: gigabytes
a process, and seconds to read before the first page).  Written once, as
``.npy`` files in a folder beside the store (``STORE.mapped/``), they are
mapped by each reader (``numpy.load(mmap_mode="r")``): the kernel keeps one
copy in its page cache for all, opening one costs a few reads, and only the
parts a reader touches come in.

They are never the source of truth.  ``rank`` writes a version's files once
the version is committed; a reader that finds them missing writes them from
what it read (:meth:`Mapped.keep_ranking`).  Each version's files come with a
stamp (``ranking-ID.json``): the version's id (never given twice in a store),
name, number, time, node count, and a checksum of its first block as stored.
A reader maps the files only when the stamp matches the store's row and every
file has the shape the stamp says, and then compares a sample of entries
(:data:`SAMPLES` blocks spread over the version) with the store's blocks: a
file of another store, of a dropped version, cut short or overwritten by
other data is refused (and made again), never read as scores.  Like the
store's own pages, which SQLite does not checksum, a file's bytes are not
summed whole: that would read every page of it into each process.

A process maps only what it touches, but this kernel maps a page-cache folio whole, and a large file read
in order (or just written) sits in the cache in large folios: a thousand look-ups in a domain graph's
arrays would map hundreds of megabytes of each into the process (its PSS).  So a large file
(:data:`LARGE`) is read back into the cache page by page once written (:func:`_cached_afresh`), and mapped
``MADV_RANDOM``: a page the cache has lost since is read in alone, at its first touch, never ahead.  And
what a process has touched stays mapped until it lets go: :func:`trim` (after each page's look-ups) lets
go of the large files' pages once the process's file-backed memory passes :data:`RESIDENT_MOST`; they stay
in the page cache, and the next touch maps them again from it, with no read.  A view that gathers
thousands of entries at once (a site's millions of in-links) would wait on each page alone from a cold
disk: it reads ahead what it will touch (:func:`read_ahead`), in large requests.

Files are written beside and renamed into place, so a reader never maps half
a file; the folder and its files are the owner's alone (0700, 0600), as the
store is.  Files of versions no longer in the store are removed by the
writers that drop them (:meth:`Mapped.prune`).
"""

from __future__ import annotations

import ctypes
import functools
import json
import mmap
import os
import tempfile
import threading
import weakref
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .base import Part

__all__ = [
    "Mapped", "MappedKeys", "MappedStamp", "SUFFIX", "SAMPLES", "LARGE", "RESIDENT_MOST", "READ_AHEAD_FROM",
    "gathered", "mapped_folder", "read_ahead", "trim",
]  # fmt: skip

SUFFIX = ".mapped"  # the folder beside the store: STORE.mapped/
SAMPLES = 16  # blocks compared with the store's when a version's files are mapped
# the columns mapped, as (name, dtype): every version's, then those a version may lack (stored NULL): a variant's
# values (spam mass), and each page's vote and link mass (what backlinks' contributions are read from)
COLUMNS = (("scores", "<f8"), ("inlinks", "<i4"), ("best", "<i4"), ("position", "<i4"))
OPTIONAL = (("extra", "<f8"), ("votes", "<f8"), ("linked", "<f8"))


LARGE = 64 << 20  # a file this large is read a page at a time, never ahead, and let go of by trim()
RESIDENT_MOST = 384 << 20  # a process's file-backed resident memory past which trim() lets go of the large files


class _Trim:
    """Every large file's mapping made here (weakly: a version let go of unmaps)."""

    def __init__(self) -> None:
        self.mappings: weakref.WeakSet[mmap.mmap] = weakref.WeakSet()
        self.lock = threading.Lock()


_TRIM = _Trim()


def trim(most: int = RESIDENT_MOST) -> bool:
    """Let go of this process's pages of the large mapped files, if its file-backed resident memory has passed
    ``most`` (looked at only when more than ``most`` of them is mapped at all: a small store's never is):
    unmapped here, kept in the page cache.  True if it let go."""
    if not _TRIM.lock.acquire(blocking=False):
        return False  # another thread is at it
    try:
        mappings = list(_TRIM.mappings)
        if sum(len(mapping) for mapping in mappings) <= most or _file_resident() <= most:
            return False
        for mapping in mappings:
            try:
                mapping.madvise(mmap.MADV_DONTNEED)
            except ValueError:  # closed meanwhile
                pass
        return True
    finally:
        _TRIM.lock.release()


def _file_resident() -> int:
    """This process's resident memory that is not anonymous (mapped files, its code), in bytes."""
    try:
        with open("/proc/self/smaps_rollup") as rollup:
            lines = rollup.read().splitlines()
    except OSError:  # no /proc: let go, as if past the bound
        return 1 << 62
    fields = {}
    for line in lines:
        name, _, rest = line.partition(":")
        value = rest.split()
        if len(value) == 2 and value[1] == "kB" and value[0].isdigit():
            fields[name] = int(value[0])
    return (fields.get("Rss", 0) - fields.get("Anonymous", 0)) * 1024


def mapped_folder(store_path: str) -> Path:
    """The folder of a store's mapped files."""
    return Path(store_path + SUFFIX)


@dataclass(frozen=True)
class MappedStamp:
    """What a version's files were made from: read back and compared with the store before they are mapped."""

    ranking_id: int
    name: str
    version: int
    created_at: str
    pages: int
    first_block: int  # crc32 of the first block's scores as stored (0 for a version of no block)
    optional: list[str]  # the columns of :data:`OPTIONAL` the version has


@dataclass(frozen=True)
class MappedKeys:
    """A level's name keys (:class:`~rankstore.store.levels.LevelKeys`' arrays), mapped."""

    hashes: np.ndarray  # int64, sorted
    ids: np.ndarray  # int32
    starts: np.ndarray  # the radix slots' starts
    shift: int


_LEVEL_TABLES = {"host": "hosts", "site": "sites"}


class Mapped(Part):
    """A store's mapped files; part of :class:`~rankstore.store.Store`."""

    @property
    def folder(self) -> Path:
        return mapped_folder(self.store.path)

    def _stamp(self, ranking_id: int) -> MappedStamp | None:
        """The stamp the store's row of ``ranking_id`` gives (None: no such version)."""
        row = self.db.execute(
            "SELECT r.name, r.version, r.created_at, r.pages,"
            " (SELECT scores FROM ranking_blocks WHERE ranking_id = r.id AND first = 0),"
            " (SELECT extra IS NOT NULL FROM ranking_blocks WHERE ranking_id = r.id AND first = 0),"
            " (SELECT votes IS NOT NULL FROM ranking_blocks WHERE ranking_id = r.id AND first = 0),"
            " (SELECT linked IS NOT NULL FROM ranking_blocks WHERE ranking_id = r.id AND first = 0)"
            " FROM rankings r WHERE r.id = ?",
            (ranking_id,),
        ).fetchone()
        if row is None:
            return None
        name, version, created_at, pages, first, *present = row
        optional = [column for (column, _), held in zip(OPTIONAL, present) if held]
        return MappedStamp(ranking_id, name, version, created_at, pages, zlib.crc32(first) if first else 0, optional)

    def _path(self, ranking_id: int, column: str) -> Path:
        return self.folder / f"ranking-{ranking_id}.{column}.npy"

    def _stamp_path(self, ranking_id: int) -> Path:
        return self.folder / f"ranking-{ranking_id}.json"

    def ranking_columns(self, ranking_id: int) -> dict[str, np.ndarray] | None:
        """The version's columns (:data:`COLUMNS`), mapped read-only; None when its files are missing, made of
        something else than the store holds now, or damaged (call inside the snapshot that found the version)."""
        try:
            said = json.loads(self._stamp_path(ranking_id).read_text())
        except (OSError, ValueError):
            return None
        wanted = self._stamp(ranking_id)
        if wanted is None or said != asdict(wanted):
            return None
        columns: dict[str, np.ndarray] = {}
        for column, dtype in COLUMNS + tuple(pair for pair in OPTIONAL if pair[0] in wanted.optional):
            try:
                found = _mapped(self._path(ranking_id, column))
            except (OSError, ValueError):
                return None
            if found.dtype != np.dtype(dtype) or found.shape != (wanted.pages,):
                return None
            columns[column] = found
        return columns if self._samples_agree(ranking_id, wanted.pages, columns) else None

    def _samples_agree(self, ranking_id: int, pages: int, columns: dict[str, np.ndarray]) -> bool:
        """Do :data:`SAMPLES` blocks spread over the version read the same in the files as in the store?"""
        from .schema import BLOCK_PAGES

        blocks = -(-pages // BLOCK_PAGES)
        for number in sorted({round(k * (blocks - 1) / max(SAMPLES - 1, 1)) for k in range(SAMPLES)} if blocks else ()):
            row = self.db.execute(
                "SELECT scores, inlinks, best FROM ranking_blocks WHERE ranking_id = ? AND first = ?",
                (ranking_id, number * BLOCK_PAGES),
            ).fetchone()
            if row is None:
                return False
            first = number * BLOCK_PAGES
            for blob, column, stored in zip(row, ("scores", "inlinks", "best"), (">f8", ">i4", ">i4")):
                values = np.frombuffer(blob, dtype=stored)
                if not np.array_equal(columns[column][first : first + len(values)], values):
                    return False
            best = np.frombuffer(row[2], dtype=">i4")
            if not np.array_equal(columns["position"][best], np.arange(first, first + len(best))):
                return False
        return True

    def writable(self) -> bool:
        """Can files be written beside the store (its folder made, or there and writable)?"""
        folder = self.folder
        if folder.is_dir():
            return os.access(folder, os.W_OK | os.X_OK)
        return not folder.exists() and os.access(folder.parent, os.W_OK | os.X_OK)

    def keep_ranking(self, ranking_id: int, columns: dict[str, np.ndarray | None]) -> bool:
        """Write version ``ranking_id``'s columns (as :data:`COLUMNS` names them, in memory) as its mapped
        files, beside and renamed into place; False when the folder cannot be written (a store on read-only
        media: each reader then keeps its own copy, as before)."""
        stamp = self._stamp(ranking_id)
        if stamp is None:
            return False
        try:
            self.folder.mkdir(mode=0o700, exist_ok=True)
            for column, dtype in COLUMNS + tuple(pair for pair in OPTIONAL if pair[0] in stamp.optional):
                values = columns[column]
                assert values is not None
                _write_array(self._path(ranking_id, column), np.asarray(values, dtype=dtype))
            _write_bytes(self._stamp_path(ranking_id), json.dumps(asdict(stamp)).encode())
        except OSError:
            return False
        return True

    def _keys_stamp(self, level: str, count: int, shift: int) -> dict:
        """What a level's keys were made from: its name count, and a checksum of a few of its names."""
        table = _LEVEL_TABLES[level]
        ids = sorted({1, 2, count // 2, count - 1, count} - {0})
        marks = ",".join("?" * len(ids))
        names = [row[0] for row in self.db.execute(f"SELECT name FROM {table} WHERE id IN ({marks}) ORDER BY id", ids)]
        return {"level": level, "count": count, "shift": shift, "names": zlib.crc32("\n".join(names).encode())}

    def _keys_path(self, level: str, column: str) -> Path:
        return self.folder / f"keys-{level}.{column}"

    def level_keys(self, level: str, count: int) -> MappedKeys | None:
        """The level's name keys as held for ``count`` names, mapped; None when missing, stale or damaged."""
        try:
            said = json.loads(self._keys_path(level, "json").read_text())
            shift = int(said["shift"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if said != self._keys_stamp(level, count, shift):
            return None
        try:
            hashes, ids, starts = (
                _mapped(self._keys_path(level, f"{column}.npy")) for column in ("hashes", "ids", "starts")
            )
        except (OSError, ValueError):
            return None
        slots = 1 << (63 - shift)
        if (
            hashes.dtype != np.int64
            or ids.dtype != np.int32
            or hashes.shape != ids.shape
            or starts.shape != (slots + 1,)
            or int(starts[-1]) != len(hashes)
        ):
            return None
        from .pages import url_keys

        table = _LEVEL_TABLES[level]
        sample = np.unique(np.linspace(0, max(len(hashes) - 1, 0), SAMPLES).astype(np.int64)) if len(hashes) else ()
        for at in sample:
            number = int(ids[at])
            if number == 0:  # a hash two names share: no name to check it by
                continue
            row = self.db.execute(f"SELECT name FROM {table} WHERE id = ?", (number,)).fetchone()
            if row is None or int(url_keys([row[0]])[0]) != int(hashes[at]):
                return None
        return MappedKeys(hashes, ids, starts, shift)

    def keep_level_keys(self, level: str, count: int, keys: MappedKeys) -> bool:
        """Write a level's keys for ``count`` names as its mapped files; False when the folder cannot be written."""
        try:
            self.folder.mkdir(mode=0o700, exist_ok=True)
            _write_array(self._keys_path(level, "hashes.npy"), np.asarray(keys.hashes, dtype=np.int64))
            _write_array(self._keys_path(level, "ids.npy"), np.asarray(keys.ids, dtype=np.int32))
            _write_array(self._keys_path(level, "starts.npy"), np.asarray(keys.starts))
            stamp = self._keys_stamp(level, count, keys.shift)
            _write_bytes(self._keys_path(level, "json"), json.dumps(stamp).encode())
        except OSError:
            return False
        return True

    def blocks_array(self, name: str, table: str, column: str, key: object) -> np.ndarray:
        """A table of int32 blocks (``first``, ``column``: page_hosts, host_sites) as one array, mapped: from its
        file when that was made of the blocks the store holds now (``key``: the meta value that changes with
        them; the first block's checksum, the size, and :data:`SAMPLES` blocks compared), else read, written
        and mapped (or, where nothing can be written, held as read)."""
        found = self._blocks_file(name, table, column, key)
        if found is not None:
            return found
        blobs = [row[0] for row in self.db.execute(f"SELECT {column} FROM {table} ORDER BY first")]
        values = np.frombuffer(b"".join(blobs), dtype=">i4").astype(np.int32)
        try:
            self.folder.mkdir(mode=0o700, exist_ok=True)
            _write_array(self.folder / f"{name}.npy", values)
            stamp = self._blocks_stamp(table, column, key, len(values))
            _write_bytes(self.folder / f"{name}.json", json.dumps(stamp).encode())
        except OSError:
            return values
        found = self._blocks_file(name, table, column, key)
        return found if found is not None else values

    def _blocks_stamp(self, table: str, column: str, key: object, size: int) -> dict:
        first = self.db.execute(f"SELECT {column} FROM {table} ORDER BY first LIMIT 1").fetchone()
        return {"key": key, "size": size, "first_block": zlib.crc32(first[0]) if first else 0}

    def _blocks_file(self, name: str, table: str, column: str, key: object) -> np.ndarray | None:
        try:
            said = json.loads((self.folder / f"{name}.json").read_text())
            values = _mapped(self.folder / f"{name}.npy")
        except (OSError, ValueError):
            return None
        if values.dtype != np.int32 or said != self._blocks_stamp(table, column, key, len(values)):
            return None
        firsts = [row[0] for row in self.db.execute(f"SELECT first FROM {table} ORDER BY first")]
        spread = {round(k * (len(firsts) - 1) / max(SAMPLES - 1, 1)) for k in range(SAMPLES)} if firsts else set()
        for first in sorted(firsts[at] for at in spread):
            row = self.db.execute(f"SELECT {column} FROM {table} WHERE first = ?", (first,)).fetchone()
            stored = np.frombuffer(row[0], dtype=">i4")
            if not np.array_equal(values[first : first + len(stored)], stored):
                return None
        return values

    def prune(self, wipe: bool = False) -> None:
        """Remove the files of versions the store no longer holds (and files left half-written); ``wipe``:
        overwritten with zeros first, as ``forget`` leaves no byte of what it forgets."""
        if not self.folder.is_dir():
            return
        live = {
            row[0]
            for row in self.db.execute(
                "SELECT id FROM rankings r WHERE EXISTS (SELECT 1 FROM ranking_blocks WHERE ranking_id = r.id)"
            )
        }
        for path in self.folder.iterdir():
            name = path.name
            number = name.split(".")[0].removeprefix("ranking-")
            # the levels' keys and the page's hosts go too where ``wipe`` asks (``forget`` may have dropped names
            # and pages): made again when read
            stale = (
                name.endswith(".part")
                or (number.isdigit() and int(number) not in live)
                or (wipe and not name.startswith("ranking-"))
            )
            if stale:
                try:
                    if wipe:
                        _zero(path)
                    path.unlink()
                except FileNotFoundError:
                    pass


# np.load reads a file's header with ast.literal_eval, and CPython 3.11's AST validator counts its recursion
# in the interpreter's state, not the thread's: two threads reading headers at once (a proxy's preload thread
# beside a page) can raise "SystemError: AST constructor recursion depth mismatch".  One reader at a time.
_HEADERS_READ = threading.Lock()


def _mapped(path: Path) -> np.ndarray:
    """The array in ``path``, mapped read-only.  A small file is read ahead into the page cache (which is no
    process's memory): a view's first touch of it is then no wait on the disk.  A large one (:data:`LARGE`) is
    read a page at a time, as it is touched, and mapped so (see the module's docstring)."""
    with _HEADERS_READ:
        values = np.load(path, mmap_mode="r", allow_pickle=False)
    held = getattr(values, "_mmap", None)  # none for an empty array
    if held is not None:
        if len(held) >= LARGE:
            held.madvise(mmap.MADV_RANDOM)
            _TRIM.mappings.add(held)
            _FILES[held] = str(path)
        elif hasattr(mmap, "MADV_WILLNEED"):
            held.madvise(mmap.MADV_WILLNEED)
    # a plain array over the same mapping: numpy's memmap subclass wraps every index in Python, a page's
    # thousand look-ups each paying for it
    return values.view(np.ndarray)


def _write_array(path: Path, values: np.ndarray) -> None:
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            np.lib.format.write_array(out, np.ascontiguousarray(values), allow_pickle=False)
            out.flush()
            os.fsync(out.fileno())
            _cached_afresh(out.fileno())
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


_FILES: weakref.WeakKeyDictionary[mmap.mmap, str] = weakref.WeakKeyDictionary()  # a large mapping's file
READ_AHEAD_FROM = 4096  # entries a gather asks for from which read_ahead reads ahead (fewer: a fault each)
_CHUNK = 1 << 20  # read_ahead's reads
_RUN = 8  # chunks read in one request at most
_WORTH = 4  # pages of a chunk a gather touches from which the chunk is read whole (fewer: a fault each)


def read_ahead(values: np.ndarray, indices: np.ndarray | None = None) -> int:
    """Bring into the page cache the parts of a large mapped array that a gather of ``indices`` (or a scan of
    it all: None) will touch and the cache has lost, in requests of up to :data:`_RUN` MiB; the bytes read.
    Indices past the array are passed over (:meth:`~.rankings.RankingArrays.positions_of` asks for pages
    newer than a version).

    A large file is mapped ``MADV_RANDOM`` (the module's docstring says why), so a view's gather of millions
    of entries from a cold disk would read each of its pages alone, a wait each: seconds an array.  Here each
    MiB of the file that holds enough of the pages touched (:data:`_WORTH`) and is not all in the cache
    (``mincore``) is read in one request, as :func:`_cached_afresh` reads (small folios: a later look-up maps
    a page alone).  Fewer than :data:`READ_AHEAD_FROM` entries, or an array not mapped from a large file, are
    left to their faults."""
    if indices is not None and len(indices) < READ_AHEAD_FROM:
        return 0
    found = _file_of(values)
    if found is None:
        return 0
    path, held, start = found
    end = start + values.nbytes
    pages = np.zeros((len(held) + mmap.PAGESIZE - 1) // mmap.PAGESIZE, dtype=bool)
    if indices is None or len(indices) >= len(values) // 8:  # a scan, or so many that most pages are touched
        pages[start // mmap.PAGESIZE : (end + mmap.PAGESIZE - 1) // mmap.PAGESIZE] = True
    else:
        shift = mmap.PAGESIZE.bit_length() - 1  # a power of two
        asked = np.asarray(indices, dtype=np.int64)
        asked = asked[(asked >= 0) & (asked < len(values))]  # past the array (a page newer than it): none
        pages[(asked * values.itemsize + start) >> shift] = True
    per_chunk = _CHUNK // mmap.PAGESIZE
    padded = np.zeros(-(-len(pages) // per_chunk) * per_chunk, dtype=bool)
    padded[: len(pages)] = pages
    touched = padded.reshape(-1, per_chunk).sum(axis=1)
    wanted = touched >= min(_WORTH, per_chunk)
    wanted &= ~_cached_chunks(held, per_chunk, len(wanted))
    chunks = np.flatnonzero(wanted)
    if not len(chunks):
        return 0
    # runs of neighbouring chunks read together, up to _RUN chunks a request: a disk's best pace
    breaks = np.flatnonzero(np.diff(chunks) != 1) + 1
    done = 0
    with open(path, "rb", buffering=0) as file:
        os.posix_fadvise(file.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
        buffer = bytearray(_CHUNK)  # read into again and again: what matters is the page cache
        for run in np.split(chunks, breaks):
            for first in range(0, len(run), _RUN):
                count = min(_RUN, len(run) - first)
                done += os.preadv(file.fileno(), [buffer] * count, int(run[first]) * _CHUNK)
    return done


def gathered(values: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """``values[indices]``, read ahead first (:func:`read_ahead`)."""
    read_ahead(values, indices)
    return values[indices]


def _file_of(values: np.ndarray) -> tuple[str, mmap.mmap, int] | None:
    """The large file an array is mapped from, its mapping, and where the array starts in it (the mapping
    starts at the file's start: numpy maps an .npy file from 0, its header being shorter than a page)."""
    base = values.base
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "base", None)
    if base is None or base not in _FILES or not values.flags.c_contiguous:
        return None
    try:
        address = np.frombuffer(base, dtype=np.uint8).ctypes.data
    except ValueError:  # closed meanwhile
        return None
    return _FILES[base], base, values.ctypes.data - address


def _cached_chunks(held: mmap.mmap, per_chunk: int, chunks: int) -> np.ndarray:
    """Which chunks of a mapping are in the page cache whole (``mincore``; none are said to be where it
    cannot be asked)."""
    whole = np.zeros(chunks, dtype=bool)
    libc = _libc()
    if libc is None:
        return whole
    count = (len(held) + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    vector = np.zeros(chunks * per_chunk, dtype=np.uint8)
    address = np.frombuffer(held, dtype=np.uint8).ctypes.data
    if libc.mincore(ctypes.c_void_p(address), ctypes.c_size_t(len(held)), vector.ctypes.data_as(ctypes.c_void_p)):
        return whole
    vector[count:] = 1  # past the file's end: nothing to read
    return np.asarray((vector.reshape(chunks, per_chunk) & 1).all(axis=1), dtype=bool)


@functools.cache
def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _cached_afresh(fd: int) -> None:
    """A large file's pages dropped from the page cache once written, and read back in small folios.

    A write leaves them in large folios (and so does readahead), each mapped whole into a process that touches
    one of its pages.  Read with ``POSIX_FADV_RANDOM``, a megabyte at a time, the kernel reads each chunk in
    one request but caches it page by page: look-ups then find every page in the cache, and map each alone
    (with the few neighbours the kernel maps around a fault)."""
    if not hasattr(os, "posix_fadvise") or os.fstat(fd).st_size < LARGE:
        return
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    with open(os.dup(fd), "rb", buffering=0) as again:
        os.posix_fadvise(again.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
        chunk = bytearray(1 << 20)
        offset = 0
        while read := os.preadv(again.fileno(), [chunk], offset):
            offset += read


def _zero(path: Path) -> None:
    with path.open("r+b") as out:
        size = out.seek(0, os.SEEK_END)
        out.seek(0)
        chunk = bytes(1 << 20)
        while size > 0:
            size -= out.write(chunk[: min(size, len(chunk))])
        out.flush()
        os.fsync(out.fileno())


def _write_bytes(path: Path, data: bytes) -> None:
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
