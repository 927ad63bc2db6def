"""``rankstore watch``: what changed for a list of targets since the previous build, its exit status (0 no
change, 1 a change, 2 an error) and its JSON, on real recrawls (``historykit``) read independently."""

from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner
from historykit import GAINS, LOSES, NEW_PAGE, TARGET, links_by_build, recrawls, several_hosts_store, site

from rankstore.cli import cli
from rankstore.store import Store

FIELDS = [
    "target", "level", "known", "build", "previous_build", "backlinks", "referring_sites", "new_backlinks",
    "lost_backlinks", "new_sites", "lost_sites", "new_links", "lost_links", "new_site_rows", "lost_site_rows",
    "rank", "changed",
]  # fmt: skip


@pytest.fixture(scope="module")
def crawls(tmp_path_factory):
    return recrawls(tmp_path_factory)


@pytest.fixture(scope="module")
def several_hosts(tmp_path_factory):
    return several_hosts_store(tmp_path_factory.mktemp("watch-several-hosts"))


def watch(tmp_path, store: str, lines: list[str], *args: str):
    targets = tmp_path / "targets.txt"
    targets.write_text("\n".join(lines) + "\n")
    return CliRunner().invoke(cli, ["watch", str(targets), "--store", store, *args])


def _scores(store_path: str) -> dict[str, float]:
    """Each page's score in the newest version of pagerank, by URL."""
    with Store(store_path, readonly=True) as store:
        ranking = store.rankings.ranking("pagerank")
        ids, scores = store.rankings.scores_of(ranking.id)
        urls = store.pages.urls_of(ids.tolist())
        return {urls[int(i)]: float(s) for i, s in zip(ids, scores)}


def test_a_recrawl_that_moved_links_exits_1_with_them_best_first(crawls, tmp_path):
    target = crawls.url + TARGET
    result = watch(tmp_path, crawls.two, ["# the competitor", "", target], "--format", "json", "-n", "0")
    assert result.exit_code == 1, result.output
    [report] = json.loads(result.stdout)
    assert list(report) == FIELDS
    first, second = links_by_build(crawls.warcs[:2])
    new = {s for s, t in second - first if t == target and s != target}
    lost = {s for s, t in first - second if t == target and s != target}
    assert new == {crawls.url + page for page in (*GAINS, NEW_PAGE)} and lost == {crawls.url + p for p in LOSES}
    assert {row["url"] for row in report["new_links"]} == new and {row["url"] for row in report["lost_links"]} == lost
    assert (report["new_backlinks"], report["lost_backlinks"]) == (3, 2)
    assert (report["build"], report["previous_build"], report["known"], report["changed"]) == (2, 1, True, True)
    assert report["backlinks"] == len({s for s, t in second if t == target and s != target})
    scores = _scores(crawls.two)
    for rows in (report["new_links"], report["lost_links"]):
        assert [row["pagerank"] for row in rows] == [scores[row["url"]] for row in rows]
        assert [row["pagerank"] for row in rows] == sorted((row["pagerank"] for row in rows), reverse=True)
    assert report["rank"]["version"] == 2 and report["rank"]["previous_version"] == 1
    # -n keeps the best few
    [short] = json.loads(watch(tmp_path, crawls.two, [target], "--format", "json", "-n", "1").stdout)
    assert short["new_links"] == report["new_links"][:1] and short["new_backlinks"] == 3
    table = watch(tmp_path, crawls.two, [target])
    assert table.exit_code == 1 and "3 new backlinks" in table.stdout and "2 lost backlinks" in table.stdout


def test_a_build_that_changed_nothing_for_the_target_exits_0(crawls, tmp_path):
    target = crawls.url + TARGET
    result = watch(tmp_path, crawls.three, [target], "--format", "json")
    [report] = json.loads(result.stdout)
    assert result.exit_code == 0, result.output
    assert (report["build"], report["previous_build"], report["changed"]) == (3, 2, False)
    assert (
        report["new_links"] == report["lost_links"] == []
        and report["rank"]["place"] == report["rank"]["previous_place"]
    )
    table = watch(tmp_path, crawls.three, [target])
    assert table.exit_code == 0 and "no change since build 2" in table.stdout


def test_an_unknown_target_is_reported_and_is_no_change(crawls, tmp_path):
    result = watch(tmp_path, crawls.three, [crawls.url + "nowhere.html", "site:nowhere.test"], "--format", "json")
    assert result.exit_code == 0, result.output
    reports = json.loads(result.stdout)
    assert [(r["known"], r["changed"], r["level"]) for r in reports] == [(False, False, "page"), (False, False, "site")]
    table = watch(tmp_path, crawls.three, [crawls.url + "nowhere.html"])
    assert "not in the store" in table.stdout
    # beside a target that changed, the run still says so
    assert watch(tmp_path, crawls.two, [crawls.url + "nowhere.html", crawls.url + TARGET]).exit_code == 1


def test_hosts_and_a_site_of_several_hosts(several_hosts, tmp_path):
    store, held = several_hosts
    result = watch(tmp_path, store, ["site:target.test", "host:www.target.test"], "--format", "json", "-n", "0")
    assert result.exit_code == 1, result.output
    whole, www = json.loads(result.stdout)
    before, after = held[1], held[2]

    def of_site(links):
        return {(s, t) for s, t in links if site(t) == "target.test" and site(s) != "target.test"}

    new, lost = of_site(after) - of_site(before), of_site(before) - of_site(after)
    assert {(r["url"], r["target"]) for r in whole["new_links"]} == new
    assert {(r["url"], r["target"]) for r in whole["lost_links"]} == lost
    sites_new = {site(s) for s, _ in of_site(after)} - {site(s) for s, _ in of_site(before)}
    assert {r["site"] for r in whole["new_site_rows"]} == sites_new == {"five.test", "six.test"}
    assert whole["rank"]["ranking"] == "siterank" and www["rank"]["ranking"] == "hostrank"
    assert www["level"] == "host" and www["target"] == "host:www.target.test"
    places = [r["site_rank"] for r in whole["new_site_rows"] + whole["lost_site_rows"]]
    assert all(isinstance(p, int) for p in places)


@pytest.mark.parametrize(
    "lines, words",
    [
        (["not a target"], "line 1"),
        (["# fine", "ftp://example.com/"], "line 2"),
        (["host:"], "line 1"),
    ],
)
def test_a_bad_file_is_a_usage_error(crawls, tmp_path, lines, words):
    result = watch(tmp_path, crawls.three, lines)
    assert result.exit_code == 2 and words in result.output
    assert result.output.startswith("Error: ") and len(result.output.strip().splitlines()) == 1


def test_store_and_file_errors_exit_2(crawls, tmp_path):
    missing = CliRunner().invoke(cli, ["watch", str(tmp_path / "none.txt"), "--store", crawls.three])
    assert missing.exit_code == 2
    no_store = watch(tmp_path, str(tmp_path / "none.db"), [crawls.url + TARGET])
    assert no_store.exit_code == 2 and no_store.output.startswith("Error: ")
    assert "Traceback" not in no_store.output and len(no_store.output.strip().splitlines()) == 1


def test_bad_stores_and_options_exit_2_in_one_line(crawls, tmp_path):
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not SQLite\n" * 100)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE notes (body TEXT)")
    (tmp_path / "folder.db").mkdir()
    for store, says in (
        (garbage, "not a SQLite database"),
        (other, "without rankstore's tables"),
        (tmp_path / "absent.db", "no such store"),
        (tmp_path / "folder.db", "directory"),
    ):
        before = store.read_bytes() if store.is_file() else None
        result = watch(tmp_path, str(store), [crawls.url + TARGET])
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output
        assert says in result.output and result.output.count("Error:") == 1, result.output
        assert (store.read_bytes() if store.is_file() else None) == before
    assert not (tmp_path / "absent.db").exists()
    for bad in (["--format", "csv"], ["-n", "-1"], ["--nope"]):
        result = watch(tmp_path, crawls.three, [crawls.url + TARGET], *bad)
        assert result.exit_code == 2 and "Error:" in result.output, (bad, result.output)


def test_help_tells_the_exit_status_with_a_cron_example():
    text = " ".join(CliRunner().invoke(cli, ["watch", "--help"]).output.split())
    assert "0 when nothing changed" in text and "1 when something" in text and "2 for a usage" in text
    assert "crontab" in text
