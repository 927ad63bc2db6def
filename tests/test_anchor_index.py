"""`rankstore anchors` reads a page's anchored in-links through an index by target, in a new store and in one
upgraded from schema 8; never a scan of ``link_notes``."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest
from click.testing import CliRunner

from rankstore.cli import cli
from rankstore.store import SCHEMA_VERSION, Store, analysis

from conftest import ranked_copy

INDEX = "link_notes_by_dst"


@pytest.fixture(scope="module")
def ranked(python_doc_store, tmp_path_factory) -> str:
    return ranked_copy(python_doc_store, tmp_path_factory.mktemp("anchor-index"))


def busiest(path: str) -> str:
    """The URL with the most anchored in-links."""
    with Store(path, readonly=True) as store:
        return store.db.execute(
            "SELECT p.url FROM link_notes n JOIN pages p ON p.id = n.dst WHERE n.anchor IS NOT NULL"
            " GROUP BY n.dst ORDER BY count(*) DESC LIMIT 1"
        ).fetchone()[0]


def anchor_plans(path: str, url: str) -> list[str]:
    """The query plan of each statement on ``link_notes`` that ``analysis.anchors`` runs, as it runs it."""
    with Store(path, readonly=True) as store:
        statements: list[str] = []
        store.db.set_trace_callback(statements.append)
        rows = analysis.anchors(store, url)
        store.db.set_trace_callback(None)
        assert rows, "the page has anchored in-links"
        touching = [sql for sql in statements if "link_notes" in sql and not sql.startswith("EXPLAIN")]
        assert touching
        return [
            " | ".join(row[3] for row in store.db.execute("EXPLAIN QUERY PLAN " + sql).fetchall()) for sql in touching
        ]


def test_anchors_search_link_notes_by_target(ranked):
    for plan in anchor_plans(ranked, busiest(ranked)):
        assert f"USING INDEX {INDEX}" in plan, plan
        assert "SCAN link_notes" not in plan, plan


def test_schema_8_store_gets_the_index_on_upgrade(ranked, tmp_path):
    path = str(tmp_path / "eight.db")
    shutil.copy(ranked, path)
    url = busiest(path)
    before = CliRunner().invoke(cli, ["anchors", url, "--store", path, "--format", "json"], catch_exceptions=False)
    db = sqlite3.connect(path)
    db.execute(f"DROP INDEX IF EXISTS {INDEX}")
    db.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    upgraded = CliRunner().invoke(cli, ["upgrade", "--store", path], catch_exceptions=False)
    assert upgraded.output == f"{path}: schema {SCHEMA_VERSION}\n"
    assert SCHEMA_VERSION >= 9
    db = sqlite3.connect(path)
    assert db.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", (INDEX,)).fetchone()
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    db.close()
    for plan in anchor_plans(path, url):
        assert f"USING INDEX {INDEX}" in plan, plan
    after = CliRunner().invoke(cli, ["anchors", url, "--store", path, "--format", "json"], catch_exceptions=False)
    assert json.loads(after.output) == json.loads(before.output) and json.loads(after.output)
