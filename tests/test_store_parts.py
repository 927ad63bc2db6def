"""The store as parts it owns (issue 33): no tower of SQL-speaking mixins, and no SQL outside rankstore/store/."""

import inspect
import pathlib
import re

from rankstore.store import Store, analysis, base

ROOT = pathlib.Path(__file__).resolve().parent.parent
SQL = re.compile(
    r"""\.execute(many)?\(|\bSELECT\b.*\bFROM\b|\bINSERT INTO\b|\bUPDATE \w+ SET\b|(?<![\w'"])store(\(\))?\.db\b"""
)


def test_store_has_no_mixins_and_its_parts_hold_it(tmp_path):
    Part = getattr(base, "Part", None)
    assert Store.__mro__ == (Store, object)
    with Store(str(tmp_path / "s.db")) as store:
        parts = {name: part for name, part in vars(store).items() if isinstance(part, Part)}
        assert set(parts) == {
            "pages", "graph", "rankings", "hosts", "sites", "site_links", "sources", "visits", "levels", "queries",
            "mapped",
        }  # fmt: skip
        for part in parts.values():
            assert part.store is store and type(part).__mro__ == (type(part), Part, object)
        assert store.rankings.all() == [] and store.pages.last_page_id() == 0 and store.last_build() is None


def test_the_analysts_views_are_functions_over_the_parts(tmp_path):
    views = [name for name in analysis.__all__ if name[0].islower()]
    assert "backlink_report" in views and "referring_hosts" in views and "anchors" in views
    for name in views:
        view = getattr(analysis, name)
        assert inspect.isfunction(view), name
        assert list(inspect.signature(view).parameters)[0] == "store", name
    assert not [
        name for name, value in vars(analysis).items() if inspect.isclass(value) and issubclass(value, base.Part)
    ]
    with Store(str(tmp_path / "s.db")) as store:
        assert not hasattr(store, "analysis")
        assert analysis.build_history(store) == [] and analysis.graph_born(store) == 0
        assert analysis.host_ranking(store) is None and analysis.host_ranks(store, ["example.org"]) == {}


def test_no_sql_outside_the_store():
    found = []
    for top in ("rankstore", "proxy_addon", "tools"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if (ROOT / "rankstore" / "store") in path.parents:
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                code = line.split("#")[0]
                if SQL.search(code) and "duckdb" not in code:
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []
