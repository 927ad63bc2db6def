"""A running proxy never serves a ranking that no longer exists (issue 47, point 1).

``forget --host`` drops the ranking versions that ranked the forgotten pages; the next ``rank`` makes a new
version.  Its keys (the row's id, its number under its name) are never those of a version the store had before,
so that a reader held open across the two, which keeps arrays, look-ups and marks by version, reads the new one.
"""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest
from barkit import bar_for

from proxy_addon.ranks import Ranks
from proxy_addon.worker import preload, rewrite_page
from rankstore.store import Store

from conftest import data, run

NEW = "http://new.example/"


@pytest.fixture(scope="module")
def ranked(tmp_path_factory) -> tuple[str, str]:
    """small.warc.gz built and ranked (pagerank v1); then new.example's pages, which link to the site's
    index.html, built and ranked (v2): the version that ranked them, as the proxy reads it."""
    folder = tmp_path_factory.mktemp("reused")
    path = str(folder / "small.db")
    run("build", data("small.warc.gz"), "--store", path, "-q")
    run("rank", "--store", path, "-q")
    with Store(path, readonly=True) as opened:
        index = opened.db.execute("SELECT url FROM pages WHERE url LIKE '%/index.html'").fetchone()[0]
    edges = folder / "new.txt"
    edges.write_text("".join(f"{NEW}{n} {index}\n{NEW}{n} {NEW}{n + 1}\n" for n in range(20)))
    run("build", str(edges), "--store", path, "-q")
    run("rank", "--store", path, "-q")
    return path, index


@pytest.fixture
def store(ranked, tmp_path) -> str:
    path = str(tmp_path / "small.db")
    shutil.copy(ranked[0], path)
    return path


def _cli_score(store: str, url: str) -> float:
    top = json.loads(run("top", "--store", store, "--format", "json", "-n", "0"))
    return next(row["pagerank"] for row in top if row["url"] == url)


def _ids(store: str) -> dict[str, int]:
    db = sqlite3.connect(store)
    try:
        rows = db.execute("SELECT id, name, version FROM rankings").fetchall()
        return {f"{name} v{version}": id_ for id_, name, version in rows}
    finally:
        db.close()


def _forget_and_rank(store: str) -> None:
    said = run("forget", "--host", "new.example", "--store", store)
    assert "dropped ranking versions that ranked forgotten pages: pagerank v2" in said
    run("rank", "--store", store, "-q")


@pytest.mark.parametrize("preload_pages", [0, 10**6])  # look-ups asked of the store, or the whole version known
def test_a_reader_open_across_forget_and_rank_shows_the_new_versions_score(ranked, store, preload_pages):
    index = ranked[1]
    ranks = Ranks(store, preload=preload_pages)
    ranks.preload()
    before = ranks.lookup([index])[index].pagerank
    assert before == pytest.approx(_cli_score(store, index), rel=1e-12)
    dropped = _ids(store)["pagerank v2"]
    _forget_and_rank(store)
    now = _cli_score(store, index)
    assert now != pytest.approx(before, rel=1e-6)  # the links of new.example's pages are forgotten
    assert ranks.lookup([index])[index].pagerank == pytest.approx(now, rel=1e-12)
    panel = ranks.panel(index)
    assert panel.info.pagerank == pytest.approx(now, rel=1e-12) and panel.stale is None
    ranks.close()
    ids = _ids(store)
    assert set(ids) == {"pagerank v1", "pagerank v3"}  # no number given twice under a name
    assert ids["pagerank v3"] > dropped  # nor an id


def test_a_proxy_page_open_across_forget_and_rank_bars_the_new_versions_score(ranked, store, tmp_path):
    index = ranked[1]
    site = index[: -len("index.html")]
    body = f'<!doctype html><title>t</title><body><a href="{index}">home</a>'.encode()

    def title() -> str:
        done = rewrite_page(store, "pagerank", 10, body, "text/html", site + "other.html")
        return bar_for(done[0], index).title

    preload(store, "pagerank", 10)  # as the addon does for its loop before the first page
    before = title()
    _forget_and_rank(store)
    preload(store, "pagerank", 10)  # the addon reads the new version for its loop first
    after = title()
    # what a proxy started now shows: the same store under another path, read afresh
    fresh = str(tmp_path / "fresh.db")
    with sqlite3.connect(store) as source, sqlite3.connect(fresh) as copy:
        source.backup(copy)  # with what the WAL holds
    shown = rewrite_page(fresh, "pagerank", 10, body, "text/html", site + "other.html")
    assert after == bar_for(shown[0], index).title != before  # not the dropped version's score


def _schema_14_copy(source: str, path: str) -> None:
    """The store as schema 14 wrote it: ``rankings`` without AUTOINCREMENT, no ``ranking_names``."""
    from rankstore.store.schema import RANKINGS

    shutil.copy(source, path)
    db = sqlite3.connect(path, isolation_level=None)
    for (view,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'view'").fetchall():
        db.execute(f"DROP VIEW {view}")
    db.execute("ALTER TABLE rankings RENAME TO new_rankings")
    db.execute(RANKINGS.replace(" AUTOINCREMENT", ""))
    db.execute("INSERT INTO rankings SELECT * FROM new_rankings")
    db.execute("DROP TABLE new_rankings")
    db.execute("DELETE FROM sqlite_sequence")
    db.execute("DROP TABLE ranking_names")
    db.execute("UPDATE meta SET value = '14' WHERE key = 'schema_version'")
    db.close()


def test_an_upgrade_from_14_keeps_the_ids_and_gives_none_again(ranked, tmp_path):
    from rankstore.store import SCHEMA_VERSION

    path = str(tmp_path / "old.db")
    _schema_14_copy(ranked[0], path)
    before = _ids(path)
    db = sqlite3.connect(path)
    assert "AUTOINCREMENT" not in db.execute("SELECT sql FROM sqlite_master WHERE name = 'rankings'").fetchone()[0]
    db.close()
    with pytest.raises(Exception, match="schema version 14"):
        Store(path, readonly=True)
    assert run("upgrade", "--store", path) == f"{path}: schema {SCHEMA_VERSION}\n"
    assert SCHEMA_VERSION >= 15 and _ids(path) == before
    db = sqlite3.connect(path)
    assert "AUTOINCREMENT" in db.execute("SELECT sql FROM sqlite_master WHERE name = 'rankings'").fetchone()[0]
    assert db.execute("SELECT name, last FROM ranking_names").fetchall() == [("pagerank", 2)]
    assert db.execute("SELECT count(*) FROM current_scores").fetchone()[0] > 0  # the views made again
    db.close()
    _forget_and_rank(path)  # drops v2, the highest id: the new version takes neither its id nor its number
    after = _ids(path)
    assert set(after) == {"pagerank v1", "pagerank v3"} and after["pagerank v3"] > before["pagerank v2"]
    assert "rankings:" in run("info", "--space", "--store", path)


def test_a_running_pagerank_proxy_shows_the_new_versions_score_after_forget_and_rank(ranked, store):
    import re
    import urllib.request

    from test_proxy_e2e import Proxy

    index = ranked[1]
    proxy = Proxy(store)
    try:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{proxy.port}"}))

        def shown() -> float:  # the page's own bar on its page of the proxy
            body = opener.open("http://pagerank.proxy/page?url=" + index, timeout=30).read().decode()
            return float(re.search(r'data-pagerank="([^"]+)"', body).group(1))

        assert shown() == pytest.approx(_cli_score(store, index), rel=1e-12)
        _forget_and_rank(store)
        assert shown() == pytest.approx(_cli_score(store, index), rel=1e-12)
    finally:
        said = proxy.stop()
    assert "Traceback" not in said
