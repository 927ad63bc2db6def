"""The hosts' name keys (``host_key_buckets``, schema 14): written as hosts are numbered, probed in place of
the hosts' name index, read whole by the proxy, written again by an upgrade and after ``forget``.

Each test holds the buckets to the keys worked out here from every host's
name (:func:`wanted_keys`): a host a crawl, a Common Crawl host graph or a
ranks file numbers, a store upgraded from schema 13, a host renamed by
``forget`` (its old name's key goes with it).
"""

from __future__ import annotations

import shutil
import sqlite3

import pytest
from test_forget import _browsed
from test_site_keys import keys_of as site_keys_of

from rankstore.store import SCHEMA_VERSION, Store, key_buckets
from rankstore.store.mapped import mapped_folder
from rankstore.store.pages import url_key

from conftest import data, invoke, run


@pytest.fixture(scope="module")
def host_graph_store(tmp_path_factory) -> str:
    """Common Crawl's host graph sample (hosts with no page of their own), ranked at the host level."""
    path = str(tmp_path_factory.mktemp("host-keys") / "hosts.db")
    run("build", data("ccgraph/host"), "--store", path, "-q")
    run("rank", "--level", "host", "--store", path, "-q")
    return path


def keys_of(path: str) -> dict[int, int]:
    """{hash: host id} as the store's buckets hold them (checked as the sites' are)."""
    return site_keys_of(path, key_buckets.HOSTS)


def wanted_keys(path: str) -> dict[int, int]:
    """Each host's key from its name, as the store should hold them."""
    with Store(path, readonly=True) as store:
        batches = store.hosts.host_batches()
        return {url_key(name): number for batch in batches for number, name in zip(batch.ids, batch.names)}


@pytest.mark.parametrize("source", ["host graph", "crawl"])
def test_a_build_writes_every_hosts_key_as_it_numbers_it(source, host_graph_store, python_doc_store):
    path = host_graph_store if source == "host graph" else python_doc_store
    want = wanted_keys(path)
    assert len(want) >= (1 if source == "crawl" else 8) and keys_of(path) == want


def test_a_second_build_and_a_ranks_file_add_their_hosts_keys(tmp_path, python_doc_store):
    path = str(tmp_path / "s.db")
    shutil.copy(python_doc_store, path)
    edges = tmp_path / "edges.txt"
    edges.write_text("http://python.local/ http://new.example/a\nhttp://new.example/a http://other.example/\n")
    run("build", str(edges), "--store", path, "-q")
    with Store(path) as store, store.transaction():
        store.hosts.ensure_hosts(["ranked-only.example", "new.example"])  # as a ranks file of hosts names them
    want = wanted_keys(path)
    assert {url_key("new.example"), url_key("other.example"), url_key("ranked-only.example")} <= set(want)
    assert keys_of(path) == want


def probe(store: Store, names: list[str], keys=None) -> tuple[dict, list[str]]:
    said: list[str] = []
    store.db.set_trace_callback(said.append)
    try:
        found = store.levels.level_scores(store.levels.level_head("host"), names, keys)
    finally:
        store.db.set_trace_callback(None)
    return dict(zip(found.names, found.scores.tolist())), said


@pytest.mark.parametrize("path", ["key buckets", "level keys"])
def test_a_probe_gives_each_hosts_own_score_without_the_name_index(host_graph_store, path):
    with Store(host_graph_store, readonly=True) as store:
        head = store.levels.level_head("host")
        scores = store.rankings.ranking_arrays(head.ranking_id).scores
        names = list(store.hosts.host_names(range(1, store.hosts.host_count() + 1)).values())
        want = {name: float(scores[store.hosts.host_id(name) - 1]) for name in names}
        want = {name: score for name, score in want.items() if score > 0}
        keys = None
        if path == "level keys":
            shutil.rmtree(mapped_folder(host_graph_store), ignore_errors=True)  # made here, not mapped
            said: list[str] = []
            store.db.set_trace_callback(said.append)
            keys = store.levels.level_keys("host")
            store.db.set_trace_callback(None)
            assert any("FROM host_key_buckets" in line for line in said)
            # no name read or hashed but the few, by id, that check the mapped keys against the store
            read = [line for line in said if "SELECT name FROM hosts" in line]
            assert read and all("WHERE id" in line for line in read) and len(read) <= 20
            assert keys.count == store.hosts.host_count()
        found, statements = probe(store, names + ["not-a-host.example"], keys)
        assert found == want and len(want) >= 5
        assert not any("FROM hosts WHERE name IN" in line for line in statements)
        if path == "key buckets":
            assert any("FROM host_key_buckets WHERE bucket IN" in line for line in statements)


def schema_13_copy(source: str, path: str) -> None:
    """The store as schema 13 wrote it: no host keys."""
    shutil.copy(source, path)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("DROP TABLE host_key_buckets")
    db.execute("DELETE FROM meta WHERE key IN ('host_key_bits', 'host_keys_held')")
    db.execute("UPDATE meta SET value = '13' WHERE key = 'schema_version'")
    db.close()


def test_an_upgrade_from_13_writes_every_hosts_key(host_graph_store, tmp_path):
    path = str(tmp_path / "old.db")
    schema_13_copy(host_graph_store, path)
    assert run("upgrade", "--store", path) == f"{path}: schema {SCHEMA_VERSION}\n"
    assert SCHEMA_VERSION >= 14 and keys_of(path) == wanted_keys(path)
    with Store(path, readonly=True) as store:
        names = list(store.hosts.host_names(range(1, 40)).values())
        assert len(probe(store, names)[0]) >= 5
    assert "hosts:" in run("info", "--space", "--store", path)


def test_a_forgotten_hosts_name_is_found_by_no_key(tmp_path):
    record, store = _browsed(tmp_path)
    with Store(store, readonly=True) as opened:
        assert opened.hosts.ids_by_key(["secret.example"]) == {"secret.example": opened.hosts.host_id("secret.example")}
    result = invoke("forget", "--host", "secret.example", "--record", record, "--store", store)
    assert result.exit_code == 0, result.output
    assert url_key("secret.example") not in keys_of(store) and keys_of(store) == wanted_keys(store)
    run("rank", "--level", "host", "--store", store, "-q")
    with Store(store, readonly=True) as opened:
        assert opened.hosts.ids_by_key(["secret.example"]) == {}
        assert probe(opened, ["secret.example"])[0] == {}
        assert set(probe(opened, ["news.example"])[0]) == {"news.example"}
