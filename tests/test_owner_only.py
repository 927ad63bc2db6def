"""Issue 46, point 6: what the store and the record hold is its owner's alone.

The store (with its -wal and -shm), the record's folder and its files are made readable by their owner only
(0600, 0700), whatever the umask; a file or folder that was there keeps its mode.
"""

from __future__ import annotations

import os
import sqlite3
import stat

import numpy as np
import pytest
from click.testing import CliRunner
from recordkit import Origin, small_ranked_store
from test_record_proxy import Proxy

from rankstore.cli import cli
from rankstore.store import Store

from conftest import data


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture(params=[0o000, 0o022], ids=["umask-000", "umask-022"])
def umask(request):
    """The process's umask for the test (the proxy it starts inherits it)."""
    before = os.umask(request.param)
    yield request.param
    os.umask(before)


def test_a_new_store_and_its_log_are_the_owners_alone_and_an_old_one_keeps_its_mode(tmp_path, umask):
    path = str(tmp_path / "mine.db")
    result = CliRunner().invoke(cli, ["build", data("small.warc.gz"), "--store", path, "-q"])
    assert result.exit_code == 0, result.output
    assert mode(path) == 0o600
    # the log and its index, while a writer holds them open (SQLite gives them the store's mode)
    store = Store(path)
    try:
        with store.transaction():
            store.db.execute("INSERT OR REPLACE INTO meta VALUES ('owner-test', '1')")
        assert os.path.exists(path + "-wal") and os.path.exists(path + "-shm")
        assert mode(path + "-wal") == mode(path + "-shm") == 0o600
    finally:
        store.close()
    # a store that was there keeps its mode: its owner's choice
    path = str(tmp_path / "shared.db")
    assert CliRunner().invoke(cli, ["build", data("small.warc.gz"), "--store", path, "-q"]).exit_code == 0
    os.chmod(path, 0o640)  # the owner shares it with a group, on purpose
    assert CliRunner().invoke(cli, ["rank", "--store", path, "-q"]).exit_code == 0
    assert mode(path) == 0o640
    # an empty file made beforehand (by `touch`) is filled, its mode kept
    empty = tmp_path / "touched.db"
    empty.touch()
    os.chmod(empty, 0o644)
    assert CliRunner().invoke(cli, ["build", data("small.warc.gz"), "--store", str(empty), "-q"]).exit_code == 0
    assert mode(empty) == 0o644
    assert sqlite3.connect(empty).execute("SELECT count(*) FROM pages").fetchone()[0] > 0


def test_a_builds_spill_folder_is_the_owners_alone(tmp_path, umask):
    from rankstore.linksort import LinkSorter, spill_folder

    folder = spill_folder(str(tmp_path / "mine.db"))
    with LinkSorter(10, folder, memory=1) as sorter:
        sorter.add(np.arange(9, dtype=np.int64), np.arange(1, 10, dtype=np.int64))
        assert os.path.isdir(folder)  # spilled: held over its memory
        assert mode(folder) == 0o700


@pytest.fixture(scope="module")
def proxy_store(tmp_path_factory) -> str:
    return small_ranked_store(tmp_path_factory.mktemp("owner"))


@pytest.mark.parametrize("umask_value", [0o000, 0o022], ids=["umask-000", "umask-022"])
def test_a_record_the_proxy_makes_is_its_owners_alone(proxy_store, tmp_path, umask_value):
    origin = Origin()
    origin.serve("/a.html", "<title>A</title><a href='b.html'>b</a>")
    record = tmp_path / "new" / "record"
    before = os.umask(umask_value)
    try:
        proxy = Proxy(proxy_store, "--record", str(record), "--record-warc")
    finally:
        os.umask(before)
    try:
        assert proxy.get(origin.base() + "a.html")[0] == 200
    finally:
        proxy.stop()
        origin.close()
    names = sorted(os.listdir(record))
    assert [name.split("-")[0] for name in names] == ["RECORD", "pages", "responses"]
    assert mode(record) == 0o700
    assert {name: mode(record / name) for name in names} == {name: 0o600 for name in names}


def test_an_existing_record_folder_keeps_its_mode(tmp_path, umask):
    from proxy_addon.record import RecordFiles

    folder = tmp_path / "shared"
    folder.mkdir()
    os.chmod(folder, 0o750)
    files = RecordFiles(str(folder))
    try:
        files.write_page(b"{}\n")
    finally:
        files.close()
    assert mode(folder) == 0o750
    assert mode(folder / "RECORD") == 0o600 and mode(files.pages_path) == 0o600
