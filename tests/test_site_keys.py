"""Sites found by the hash of their name (``site_key_buckets``), not by the text index of 135 million names
(issue 34, 4).

A domain graph (numbered in bulk) and a crawl (numbered as its hosts come)
write each site's key as they number it; a probe of the keys gives the
answers the name index gives, and so do the reader's keys read from them; two
names of one hash are both told by name; a schema-10 or schema-11 store gets
its key buckets at the upgrade, all or nothing (killed, it is as it was).
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest
from make_domain_graph import GraphSize, make_domain_graph

from rankstore.store import SCHEMA_VERSION, Store, key_buckets
from rankstore.store import hosts as store_hosts
from rankstore.store import levels as store_levels
from rankstore.store import sites as store_sites
from rankstore.store.mapped import mapped_folder
from rankstore.store.pages import url_key, url_keys
from rankstore.store.space import part_of

from conftest import ROOT, run


@pytest.fixture(scope="module")
def domain_store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("keys")
    make_domain_graph(GraphSize(3000, 20_000), str(folder / "graph"), parts=2, seed=7)
    path = str(folder / "domain.db")
    run("build", str(folder / "graph"), "--store", path, "-q")
    run("rank", "--level", "site", "--store", path, "-q")
    return path


def keys_of(path: str, table: key_buckets.KeyTable = key_buckets.SITES) -> dict[int, int]:
    """{hash: id} as the store's buckets of ``table`` hold them, each bucket checked to hold only its own keys,
    sorted, and the count held as meta says."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        bits = int(db.execute("SELECT value FROM meta WHERE key = ?", (table.bits_key,)).fetchone()[0])
        held: dict[int, int] = {}
        for bucket, hashes, ids in db.execute(f"SELECT bucket, hashes, ids FROM {table.table}"):
            keys = np.frombuffer(hashes, dtype="<i8")
            assert np.all(np.diff(keys) > 0) and np.all(keys >> (63 - bits) == bucket)
            held.update(zip(keys.tolist(), np.frombuffer(ids, dtype="<i4").tolist()))
        held_count = db.execute("SELECT value FROM meta WHERE key = ?", (table.held_key,)).fetchone()
        assert int(held_count[0]) == len(held)
        return held
    finally:
        db.close()


def wanted_keys(path: str) -> dict[int, int]:
    """Each site's key from its name, as the build should have written them."""
    with Store(path, readonly=True) as store:
        return {
            url_key(name): number
            for batch in store.sites.site_batches()
            for number, name in zip(batch.ids, batch.names)
        }


@pytest.mark.parametrize("source", ["domain graph", "crawl"])
def test_a_build_writes_every_sites_key_as_it_numbers_it(source, domain_store, python_doc_store):
    path = domain_store if source == "domain graph" else python_doc_store
    want = wanted_keys(path)
    assert len(want) > 10 and keys_of(path) == want
    with Store(path, readonly=True) as store:
        assert store.sites.keyed()


def test_sites_numbered_in_bulk_into_a_store_too_big_to_drop_its_index_get_their_keys(tmp_path, monkeypatch):
    monkeypatch.setattr(store_sites, "BULK", 2)
    monkeypatch.setattr(store_sites, "BULK_KNOWN", 0)  # the index kept: each new name's key written at once
    path = str(tmp_path / "s.db")
    with Store(path) as store, store.transaction():
        store.sites.ensure_sites(["example.com"])  # one at a time (fewer than BULK)
        store.sites.ensure_sites(["other.org"])
        assert store.sites.ensure_sites(["new.com", "example.com", "third.net"]).tolist() == [3, 1, 4]
    assert keys_of(path) == wanted_keys(path) and len(keys_of(path)) == 4


def probe_statements(store: Store, names: list[str], head, keys=None) -> tuple[dict, list[str]]:
    said: list[str] = []
    store.db.set_trace_callback(said.append)
    try:
        found = store.levels.level_scores(head, names, keys)
    finally:
        store.db.set_trace_callback(None)
    return dict(zip(found.names, zip(found.scores.tolist(), found.places.tolist()))), said


@pytest.mark.parametrize("path", ["key buckets", "name index", "level keys"])
def test_a_probe_gives_the_name_indexs_answers(domain_store, monkeypatch, path):
    with Store(domain_store, readonly=True) as store:
        head = store.levels.level_head("site")
        arrays = store.rankings.ranking_arrays(head.ranking_id)
        names = list(store.sites.site_names(range(1, 3001, 7)).values())
        asked = names + ["not-a-site.example", "nor-this.org"]
        want = {
            name: (float(arrays.scores[number - 1]), int(np.count_nonzero(arrays.scores > arrays.scores[number - 1])))
            for name, number in ((name, store.sites.site_id(name)) for name in names)
            if arrays.scores[number - 1] > 0
        }
        keys = None
        if path == "name index":
            monkeypatch.setattr(store.sites, "keyed", lambda: False)
        elif path == "level keys":
            shutil.rmtree(mapped_folder(domain_store), ignore_errors=True)  # made here, not mapped
            said: list[str] = []
            store.db.set_trace_callback(said.append)
            keys = store.levels.level_keys("site")
            store.db.set_trace_callback(None)
            # read from the buckets, in their order: no name read but the few, by id, that check the mapped
            # keys against the store, nothing sorted
            assert any("FROM site_key_buckets" in line for line in said)
            read = [line for line in said if "SELECT name FROM sites" in line]
            assert read and all("WHERE id" in line for line in read) and len(read) <= 20
            assert keys.count == store.sites.site_count() and np.all(np.diff(keys.hashes) > 0)
        found, statements = probe_statements(store, asked, head, keys)
        assert found == want and len(want) > 300
        by_name = [line for line in statements if "FROM sites WHERE name IN" in line]
        if path == "key buckets":
            assert by_name == [] and any("FROM site_key_buckets WHERE bucket IN" in line for line in statements)
        elif path == "name index":
            assert by_name


def colliding(real):
    """url_keys with "twin.org" (and "ghost.io", a name no store here has) given "example.com"'s key."""

    def keys(names):
        out = real(list(names))
        twin = [i for i, name in enumerate(names) if name in ("twin.org", "ghost.io")]
        out[twin] = real(["example.com"])[0]
        return out

    return keys


@pytest.mark.parametrize("numbering", ["one by one", "in bulk"])
def test_two_names_of_one_hash_are_each_told_by_name(tmp_path, monkeypatch, numbering):
    forced = colliding(url_keys)
    for module in (store_sites, store_hosts, store_levels, key_buckets):
        monkeypatch.setattr(module, "url_keys", forced, raising=False)
    if numbering == "in bulk":
        monkeypatch.setattr(store_sites, "BULK", 2)
    path = str(tmp_path / "s.db")
    names = ["example.com", "bbc.co.uk", "twin.org", "lonely.net"]
    with Store(path) as store:
        with store.transaction():
            store.sites.ensure_sites(names[:2])
            store.sites.ensure_sites(names[2:])
            store.sites.reindex()
        scores = np.array([0.4, 0.3, 0.2, 0.1])
        store.rankings.write_ranking(
            "siterank", {"kind": "test"}, 0, [], np.arange(1, 5), scores, np.ones(4), level="site"
        )
    with Store(path, readonly=True) as store:
        head = store.levels.level_head("site")
        want = {"example.com": 0.4, "twin.org": 0.2, "bbc.co.uk": 0.3}
        for keys in (None, store.levels.level_keys("site")):
            found = store.levels.level_scores(head, ["example.com", "twin.org", "bbc.co.uk"], keys)
            assert dict(zip(found.names, found.scores.tolist())) == want
            # a name the store has not, of the shared key, is taken for neither
            assert len(store.levels.level_scores(head, ["ghost.io"], keys)) == 0
    shared = int(url_keys(["example.com"])[0])
    assert keys_of(path)[shared] == 0  # neither name told by the key


def schema_10_copy(source: str, path: str) -> None:
    shutil.copy(source, path)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("DROP TABLE site_key_buckets")
    db.execute("DELETE FROM meta WHERE key IN ('sites_keyed', 'site_key_bits', 'site_keys_held')")
    db.execute("UPDATE meta SET value = '10' WHERE key = 'schema_version'")
    db.close()


def schema_11_copy(source: str, path: str) -> None:
    """The store as schema 11 wrote it: a row a key in ``site_keys``, in key order, a shared key's id 0."""
    held = keys_of(source)
    schema_10_copy(source, path)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("CREATE TABLE site_keys (name_hash INTEGER PRIMARY KEY, site_id INTEGER NOT NULL)")
    db.executemany("INSERT INTO site_keys VALUES (?, ?)", sorted(held.items()))
    db.execute("INSERT INTO meta (key, value) VALUES ('sites_keyed', '1')")
    db.execute("UPDATE meta SET value = '11' WHERE key = 'schema_version'")
    db.close()


@pytest.mark.parametrize("schema", [10, 11])
def test_an_upgrade_writes_every_sites_key_into_buckets(domain_store, tmp_path, schema):
    path = str(tmp_path / "old.db")
    (schema_10_copy if schema == 10 else schema_11_copy)(domain_store, path)
    assert run("upgrade", "--store", path) == f"{path}: schema {SCHEMA_VERSION}\n"
    assert SCHEMA_VERSION >= 12 and keys_of(path) == wanted_keys(path)
    db = sqlite3.connect(path)
    assert db.execute("SELECT 1 FROM sqlite_master WHERE name = 'site_keys'").fetchone() is None
    db.close()
    with Store(path, readonly=True) as store:
        head = store.levels.level_head("site")
        names = list(store.sites.site_names(range(1, 200)).values())
        assert len(store.levels.level_scores(head, names)) > 100
    output = run("info", "--space", "--store", path)
    assert part_of("site_key_buckets", "site_key_buckets") == "sites" and "sites:" in output


# `rankstore upgrade` held after the keys are written, before the transaction commits: the kill comes there
HELD = """
import sys, time
from rankstore.store import sites
real = sites.Sites.key_sites
def held(self):
    real(self)
    open(sys.argv[1], "w").close()
    time.sleep(120)
sites.Sites.key_sites = held
from rankstore.cli import cli
cli(sys.argv[2:], prog_name="rankstore")
"""


def test_an_upgrade_killed_leaves_the_schema_10_store_as_it_was(domain_store, tmp_path):
    path = str(tmp_path / "old.db")
    schema_10_copy(domain_store, path)
    marker = str(tmp_path / "written")
    env = {**os.environ, "PYTHONPATH": ROOT}
    process = subprocess.Popen([sys.executable, "-c", HELD, marker, "upgrade", "--store", path], env=env, cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(marker) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert os.path.exists(marker)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("10",)
    assert db.execute("SELECT 1 FROM sqlite_master WHERE name = 'site_key_buckets'").fetchone() is None
    db.close()
    run("upgrade", "--store", path)
    assert keys_of(path) == wanted_keys(path)


def test_a_bulk_numbering_adds_its_keys_without_reading_a_name_back(tmp_path, monkeypatch):
    """The names are hashed as they are numbered: reindex() adds their keys to those held before (here, a
    crawl's), and a name given again in a later call keeps its first id's key, not a shared key's 0."""
    monkeypatch.setattr(store_sites, "BULK", 3)
    path = str(tmp_path / "s.db")
    with Store(path) as store:
        with store.transaction():
            store.sites.ensure_sites(["held.org"])  # one at a time: its key added at once
        said: list[str] = []
        with store.transaction():
            store.sites.ensure_sites(["a.com", "b.com", "c.com", "a.com"])
            store.sites.ensure_sites(["d.com", "b.com", "e.com"])  # b.com again: numbered twice, then merged
            store.db.set_trace_callback(said.append)
            again = store.sites.reindex()
            store.db.set_trace_callback(None)
        assert again == {6: 3}
        assert not any("name FROM sites" in line for line in said)
    assert keys_of(path) == wanted_keys(path) and len(keys_of(path)) == 6 and 0 not in keys_of(path).values()
