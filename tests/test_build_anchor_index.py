"""A first build makes the anchors index (``link_notes_by_dst``) once, at its end, as it does the URL
indexes: entries by target added row by row, in random order, were what the schema-9 index cost a build.
A first build cut short gets the index back at the next writing open; a later build keeps it throughout."""

from __future__ import annotations

from rankstore.store import PageData, Store

INDEX = "link_notes_by_dst"
BY_TARGET = "SELECT src, anchor FROM link_notes WHERE dst = ? AND anchor IS NOT NULL"


def pages(round_: int) -> list[PageData]:
    """Ten pages linking to each other with anchor text, and a link with a note but no anchor."""
    urls = [f"https://a.example/{n}" for n in range(10)]
    return [
        PageData(
            url,
            links=[(other, False, 1.0, f"to {other} {round_}") for other in urls if other != url]
            + [("https://b.example/", True, 1.0, None)],
        )
        for url in urls
    ]


def has_index(store: Store) -> bool:
    found = store.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", (INDEX,))
    return found.fetchone() is not None


def plan(store: Store) -> str:
    dst = store.db.execute("SELECT id FROM pages WHERE url = 'https://a.example/3'").fetchone()[0]
    return " ".join(row[-1] for row in store.db.execute("EXPLAIN QUERY PLAN " + BY_TARGET, (dst,)))


def anchored_in_links(store: Store) -> list[tuple[int, str]]:
    dst = store.db.execute("SELECT id FROM pages WHERE url = 'https://a.example/3'").fetchone()[0]
    return sorted(store.db.execute(BY_TARGET, (dst,)).fetchall())


def test_first_build_makes_the_index_at_its_end(tmp_path) -> None:
    with Store(str(tmp_path / "s.db")) as store:
        build = store.begin_build(["pages"])
        store.pages.write_pages(pages(1), build)
        assert not has_index(store), "a first build maintains the anchors index row by row"
        store.finish_build(build, 10, 91, {})
        assert has_index(store)
        assert f"USING INDEX {INDEX}" in plan(store)
        assert len(anchored_in_links(store)) == 9


def test_later_build_keeps_the_index_throughout(tmp_path) -> None:
    with Store(str(tmp_path / "s.db")) as store:
        first = store.begin_build(["pages"])
        store.pages.write_pages(pages(1), first)
        store.finish_build(first, 10, 91, {})
        second = store.begin_build(["pages"])
        store.pages.write_pages(pages(2), second)
        assert has_index(store), "a build into a store with pages must keep the index its readers use"
        assert all(anchor.endswith(" 2") for _, anchor in anchored_in_links(store))
        store.finish_build(second, 10, 91, {})
        assert f"USING INDEX {INDEX}" in plan(store)


def test_first_build_cut_short_gets_the_index_at_the_next_writing_open(tmp_path) -> None:
    path = str(tmp_path / "s.db")
    with Store(path) as store:
        store.pages.write_pages(pages(1), store.begin_build(["pages"]))  # committed, then no finish: as if killed
    with Store(path, readonly=True) as store:
        assert not has_index(store)
        assert len(anchored_in_links(store)) == 9  # read all the same, by a scan
    with Store(path) as store:
        assert has_index(store)
        assert f"USING INDEX {INDEX}" in plan(store)
        assert len(anchored_in_links(store)) == 9
