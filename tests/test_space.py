"""``rankstore info --space``: the bytes each part of the store takes, every table and index counted once."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from rankstore.store import Store
from rankstore.store.space import OTHER, PARTS, btrees, part_of

from conftest import ranked_copy, run


@pytest.fixture(scope="module")
def ranked(python_doc_store, tmp_path_factory) -> str:
    path = ranked_copy(python_doc_store, tmp_path_factory.mktemp("space"))
    with sqlite3.connect(path) as db:  # the file alone holds the store: its size is the parts' sum
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


def test_every_table_and_index_the_schema_creates_belongs_to_a_part(tmp_path):
    with Store(str(tmp_path / "s.db")) as store:
        created = btrees(store)
    assert len(created) > 20
    assert [name for name, table in created if part_of(name, table) is None] == []
    # the FTS index and SQLite's own indexes of UNIQUE and PRIMARY KEY columns go with their tables
    assert part_of("titles_data", "titles_data") == "titles"
    assert part_of("sqlite_autoindex_ranking_blocks_1", "ranking_blocks") == "rankings"


def test_info_space_gives_each_parts_bytes_share_and_bytes_a_link(ranked):
    details = json.loads(run("info", "--space", "--format", "json", "--store", ranked))
    parts = {part["part"]: part for part in details["space"]}
    assert list(parts) == list(PARTS)
    with sqlite3.connect(ranked) as db:
        page_size, pages = (db.execute(f"PRAGMA {name}").fetchone()[0] for name in ("page_size", "page_count"))
    assert sum(part["bytes"] for part in parts.values()) == page_size * pages == os.path.getsize(ranked)
    assert sum(part["share"] for part in parts.values()) == pytest.approx(1.0)
    for name in ("pages", "links", "in-link CSR", "hosts", "titles", "rankings", OTHER):
        assert parts[name]["bytes"] > 0, name
    assert parts["site links"]["bytes"] <= 2 * page_size  # a crawl has none: an empty table's root page
    links = details["links"]
    assert links > 10_000
    for part in parts.values():
        assert part["share"] == pytest.approx(part["bytes"] / (page_size * pages))
        assert part["bytes_per_link"] == pytest.approx(part["bytes"] / links)
    text = run("info", "--space", "--store", ranked)
    assert "space:" in text and f"{parts['links']['bytes_per_link']:,.2f} B a link" in text
    assert [line.split(":")[0].strip() for line in text.split("space:\n")[1].splitlines()] == list(PARTS)


def test_plain_info_does_not_read_the_whole_file(ranked):
    assert "space" not in json.loads(run("info", "--format", "json", "--store", ranked))
    assert "space:" not in run("info", "--store", ranked)
