"""Export's columns are declared once (issue 33, 4): ``rankstore export --help`` lists exactly them, and every
export's CSV header and Parquet schema is them.

A small edge list is ranked at every level (page, host, site) and by
TrustRank, so that each kind of ``--what scores`` is exported beside the
whole store's four tables.
"""

from __future__ import annotations

import csv
import io
import os
import stat
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from rankstore import columns
from rankstore.choices import EXPORT_TABLES
from rankstore.export import ARROW_TYPES

from conftest import run

LINKS = [
    ("https://a.example.com/", "https://b.example.com/x"),
    ("https://b.example.com/x", "https://a.example.com/"),
    ("https://b.example.com/x", "https://c.example.org/"),
    ("https://c.example.org/", "https://a.example.com/"),
    ("https://c.example.org/", "https://www.example.org/y"),
    ("https://www.example.org/y", "https://b.example.com/x"),
]

# Which ranking's scores `export` writes, and the declaration they answer to: (level, with Spam Mass)
RANKINGS = {
    "pagerank": ("page", False),
    "hostrank": ("host", False),
    "siterank": ("site", False),
    "trust": ("page", True),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    work = tmp_path_factory.mktemp("export-columns")
    edges = work / "links.tsv"
    edges.write_text("".join(f"{src}\t{dst}\n" for src, dst in LINKS))
    seeds = work / "seeds.txt"
    seeds.write_text("https://a.example.com/\n")
    path = str(work / "s.db")
    run("build", str(edges), "--store", path, "-q")
    run("rank", "--store", path, "-q")
    run("rank", "--level", "host", "--store", path, "-q")
    run("rank", "--level", "site", "--store", path, "-q")
    run("rank", "--trusted", str(seeds), "--store", path, "-q")
    return path


def _listed(help_text: str) -> dict[tuple[str, str | None], list[str]]:
    """What `export --help` lists under Columns: {(what, level of a scores line or None): names}."""
    block = help_text.split("Columns:\n", 1)[1].split("\n\n", 1)[0]
    listed: dict[tuple[str, str | None], list[str]] = {}
    what = None
    for line in block.splitlines():
        words = line.split(None, 1)
        if words[0] in ("scores", *EXPORT_TABLES):
            what, rest = words[0], words[1]
        elif words[0] == "+":  # the page ranking's added column
            listed[("scores", "page+")] = listed[("scores", "page")] + [words[1].split()[0]]
            continue
        else:
            rest = line.strip()
        level = None
        if what == "scores":
            level, rest = rest.split(" ranking: ", 1)
        assert what is not None
        listed[(what, level)] = [name.strip() for name in rest.split(",")]
    return listed


def test_help_lists_exactly_the_declared_columns():
    listed = _listed(run("export", "--help"))
    expected = {(what, None): columns.declared(what) for what in EXPORT_TABLES}
    for level in columns.SCORE_COLUMNS:
        expected[("scores", level)] = columns.declared("scores", level)
    expected[("scores", "page+")] = columns.declared("scores", "page", spam_mass=True)
    assert listed == expected


@pytest.mark.parametrize("what", EXPORT_TABLES)
def test_each_table_has_the_declared_header_and_schema(store, tmp_path, what):
    text = run("export", "--what", what, "--store", store)
    assert next(csv.reader(io.StringIO(text))) == columns.declared(what)
    assert len(text.splitlines()) > 1
    parquet = tmp_path / f"{what}.parquet"
    run("export", "--what", what, "--format", "parquet", "-o", str(parquet), "--store", store)
    assert pq.read_schema(parquet).names == columns.declared(what)


@pytest.mark.parametrize("ranking", sorted(RANKINGS))
def test_scores_have_the_declared_header(store, tmp_path, ranking):
    level, spam_mass = RANKINGS[ranking]
    text = run("export", "--ranking", ranking, "--store", store)
    assert next(csv.reader(io.StringIO(text))) == columns.declared("scores", level, spam_mass)
    parquet = tmp_path / f"{ranking}.parquet"
    run("export", "--ranking", ranking, "--format", "parquet", "-o", str(parquet), "--store", store)
    assert pq.read_schema(parquet).names == columns.declared("scores", level, spam_mass)


def test_every_column_is_typed_and_said():
    every = [columns.SPAM_MASS]
    every += [column for table in columns.TABLE_COLUMNS.values() for column in table]
    every += [column for level in columns.SCORE_COLUMNS.values() for column in level]
    for column in every:
        assert column.kind in ARROW_TYPES, column
        assert column.meaning.strip(), column


@pytest.mark.parametrize("what", ["scores", "pages"])
def test_output_dash_is_stdout(store, tmp_path, monkeypatch, what):
    monkeypatch.chdir(tmp_path)
    assert run("export", "--what", what, "-o", "-", "--store", store) == run("export", "--what", what, "--store", store)
    assert not (tmp_path / "-").exists()


# ------------------------------------------------------------------ a failed export destroys nothing (issue 47, 7)


def _rankstore(*args: str) -> subprocess.CompletedProcess:
    """``rankstore ARGS`` in its own process, as a user runs it: its failures told by ``main`` in one line."""
    return subprocess.run(
        [sys.executable, "-m", "rankstore", *args], capture_output=True, text=True, timeout=120, check=False
    )


def _one_line_error(done: subprocess.CompletedProcess, says: str) -> None:
    said = (done.stdout + done.stderr).strip()
    assert done.returncode == 1, said
    assert len(said.splitlines()) == 1 and said.startswith("Error: ") and says in said, said


EXPORTS = [(what, fmt) for what in ("scores", "links") for fmt in ("parquet", "csv")]


@pytest.mark.parametrize(("what", "fmt"), EXPORTS)
def test_a_failed_export_to_a_device_leaves_the_device(store, tmp_path, what, fmt):
    """`-o /dev/full` once removed the device node (as root): a target that is no regular file is written
    straight to, never removed, and the failure told in one line.  Our own /dev/full, made here."""
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    full = tmp_path / "full"
    os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    done = _rankstore("export", "--what", what, "--format", fmt, "-o", str(full), "--store", store)
    _one_line_error(done, f"{full}: No space left on device")
    assert stat.S_ISCHR(os.stat(full).st_mode) and os.stat(full).st_rdev == os.makedev(1, 7)
    assert os.listdir(tmp_path) == ["full"]


@pytest.fixture
def full_disk(tmp_path):
    """A small file system mounted for the test (root only), holding ``old.out``; then filled up."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {made.stderr.decode().strip()}")
    try:
        (mount / "old.out").write_bytes(b"what was there before\n")
        free = os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize
        with open(mount / "filler", "wb") as handle:
            handle.write(b"\0" * free)
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture(scope="module")
def larger_store(tmp_path_factory) -> str:
    """2,000 pages in a ring with chords: an export of tens of KB, more than the full disk's old file frees."""
    work = tmp_path_factory.mktemp("export-larger")
    edges = work / "links.tsv"
    n = 2000
    edges.write_text("".join(f"https://h{i % 7}.example/{i}\thttps://h{j % 7}.example/{j}\n"
                             for i in range(n) for j in ((i + 1) % n, (i * 7 + 3) % n)))  # fmt: skip
    path = str(work / "s.db")
    run("build", str(edges), "--store", path, "-q")
    run("rank", "--store", path, "-q")
    return path


@pytest.mark.parametrize(("what", "fmt"), EXPORTS)
def test_a_failed_export_leaves_the_file_as_it_was(larger_store, full_disk, what, fmt):
    """The export is written beside its target and renamed over it once whole: a disk that fills keeps the old
    file as it was, and nothing of the attempt is left."""
    target = full_disk / "old.out"
    done = _rankstore("export", "--what", what, "--format", fmt, "-o", str(target), "--store", larger_store)
    _one_line_error(done, "No space left on device")
    assert target.read_bytes() == b"what was there before\n"
    assert sorted(os.listdir(full_disk)) == ["filler", "old.out"]


@pytest.mark.parametrize(("what", "fmt"), EXPORTS)
def test_an_export_replaces_its_file_whole_and_keeps_its_mode(store, tmp_path, what, fmt):
    target = tmp_path / "old.out"
    target.write_bytes(b"what was there before\n" * 1000)
    target.chmod(0o640)
    run("export", "--what", what, "--format", fmt, "-o", str(target), "--store", store)
    if fmt == "parquet":
        assert pq.read_schema(target).names[0] == columns.declared(what, "page")[0]
    else:
        assert target.read_text().splitlines()[0].split(",") == columns.declared(what, "page")
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert os.listdir(tmp_path) == ["old.out"]
    new = tmp_path / "new.out"
    run("export", "--what", what, "--format", fmt, "-o", str(new), "--store", store)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(new).st_mode) == 0o666 & ~umask
