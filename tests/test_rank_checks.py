"""`rankstore rank`'s checks before it writes: seed files, Spam Mass on its published scale, "unchanged",
and `stats --plot`'s convergence history (issue 36, points 5, 6 and 8)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from rankstore.cli import cli
from rankstore.store import Store

from conftest import data


def run(*args, ok=True):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def ranked_store(python_doc_store, tmp_path_factory) -> str:
    """The python3.11-doc store, ranked once (copy it before writing)."""
    path = str(tmp_path_factory.mktemp("ranked") / "py.db")
    shutil.copy(python_doc_store, path)
    run("rank", "--store", path, "-q")
    return path


@pytest.fixture
def store(ranked_store, tmp_path) -> str:
    path = str(tmp_path / "py.db")
    shutil.copy(ranked_store, path)
    return path


@pytest.fixture(scope="module")
def site(ranked_store) -> str:
    with Store(ranked_store, readonly=True) as reader:
        url = reader.db.execute("SELECT url FROM pages WHERE url LIKE '%/library/functions.html'").fetchone()[0]
    return url[: -len("library/functions.html")]


def versions(path: str, name: str) -> list[int]:
    with Store(path, readonly=True) as reader:
        return [r[0] for r in reader.db.execute("SELECT version FROM rankings WHERE name = ? ORDER BY 1", (name,))]


# ------------------------------------------------------------ point 5: seed files checked before anything is written


def test_a_seed_url_not_in_the_store_is_named_by_option_file_and_line_and_skipped(store, site, tmp_path):
    seeds = tmp_path / "lib.txt"
    seeds.write_text(f"# the library\n{site}library/functions.html\nhttp://nowhere.example/\n\nftp://files.example/x\n")
    result = run("rank", "--store", store, "-q", "--topic", f"lib={seeds}")
    assert f"Warning: --topic {seeds}:3: http://nowhere.example/ is not in the store; skipped" in result.output
    assert f"Warning: --topic {seeds}:5: ftp://files.example/x is not an http(s) URL; skipped" in result.output
    assert "--source" not in result.output
    assert versions(store, "topic:lib") == [1]
    with Store(store, readonly=True) as reader:
        assert reader.rankings.ranking("topic:lib").params["sources"] == [site + "library/functions.html"]
    for option, name in (("--trusted", "trust"), ("--flagged", "badrank")):
        result = run("rank", "--store", store, "-q", option, str(seeds))
        assert f"Warning: {option} {seeds}:3: http://nowhere.example/ is not in the store; skipped" in result.output
        assert versions(store, name) == [1]


def test_strict_refuses_a_seed_url_not_in_the_store_and_writes_nothing(store, site, tmp_path):
    seeds = tmp_path / "good.txt"
    seeds.write_text(f"{site}library/functions.html\nhttp://nowhere.example/\n")
    result = run("rank", "--store", store, "-q", "--trusted", str(seeds), "--strict", ok=False)
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: --trusted {seeds}:2: http://nowhere.example/ is not in the store")
    assert len(result.output.strip().splitlines()) == 1
    assert versions(store, "trust") == []


def test_a_run_whose_second_topic_fails_writes_no_ranking(store, site, tmp_path):
    good = tmp_path / "a.txt"
    good.write_text(f"{site}library/functions.html\n")
    bad = tmp_path / "b.txt"
    bad.write_text("# nothing of the store\nhttp://nowhere.example/b\n")
    result = run("rank", "--store", store, "-q", "--topic", f"a={good}", "--topic", f"b={bad}", ok=False)
    assert result.exit_code == 1
    assert f"--topic {bad}:2: http://nowhere.example/b is not in the store" in result.output
    assert "no URL of" in result.output and "left to rank from" in result.output
    assert versions(store, "topic:a") == [] and versions(store, "topic:b") == []


def test_a_seed_file_with_no_url_and_source_urls_not_in_the_store(store, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("# only a comment\n\n")
    result = run("rank", "--store", store, "-q", "--flagged", str(empty), ok=False)
    assert result.exit_code == 1 and f"Error: --flagged {empty}: no URL" in result.output
    result = run("rank", "--store", store, "-q", "--source", "http://nowhere.example/", ok=False)
    assert result.exit_code == 1
    assert "Error: --source: http://nowhere.example/ is not in the store" in result.output
    assert versions(store, "badrank") == [] and versions(store, "personalized") == []


# ------------------------------------------------------------ point 6: Spam Mass on its published scale

DAMPING = 0.85
GOOD = [f"http://good.example/g{i}" for i in range(6)]
CORE = GOOD[0::2]  # the trusted pages: half of the good ones
TARGET = "http://farm.example/"
SUPPORT = [f"http://farm.example/s{i}" for i in range(20)]
SINK = "http://good.example/end"  # a good page without out-links, in the second graph only


def pages(sink: bool) -> list[str]:
    return GOOD + [TARGET] + SUPPORT + ([SINK] if sink else [])


def farm_edges(sink: bool) -> list[tuple[str, str]]:
    """Seed 002's spam farm (a target linked both ways with its supporting pages, each linking only to it,
    and one link to it from a page the spammer can post on) beside a cycle of good pages; with ``sink``, one
    of them also links to a page without out-links."""
    cycle = [(GOOD[i], GOOD[(i + 1) % len(GOOD)]) for i in range(len(GOOD))]
    farm = [(TARGET, page) for page in SUPPORT] + [(page, TARGET) for page in SUPPORT]
    return cycle + farm + [(GOOD[3], TARGET)] + ([(GOOD[5], SINK)] if sink else [])


def expected_spam_mass(good_fraction: float, sink: bool = False) -> dict[str, float]:
    """Gyöngyi et al. 2006 by hand: p = (1-c)(I - cM)^-1 v, v = 1/n each; p' the same with the jump vector
    w = good_fraction/|core| on the core (gamma/n with gamma = good_fraction·n/|core|); m = (p - p')/p.
    The sink's rank goes to every page alike, in p and in p' (the jump at sinks must not follow w, or p'
    would not be linear in w)."""
    index = {url: i for i, url in enumerate(pages(sink))}
    n = len(index)
    edges = farm_edges(sink)
    out = {src: sum(1 for s, _ in edges if s == src) for src, _ in edges}
    transition = np.zeros((n, n))
    if sink:
        transition[:, index[SINK]] = 1 / n
    for src, dst in edges:
        transition[index[dst], index[src]] = 1 / out[src]
    system = np.eye(n) - DAMPING * transition
    p = np.linalg.solve(system, (1 - DAMPING) * np.full(n, 1 / n))
    jump = np.zeros(n)
    jump[[index[url] for url in CORE]] = good_fraction / len(CORE)
    core_based = np.linalg.solve(system, (1 - DAMPING) * jump)
    return {url: float((p[i] - core_based[i]) / p[i]) for url, i in index.items()}


@pytest.fixture(scope="module")
def farm_stores(tmp_path_factory) -> dict[bool, str]:
    """The farm's store without the sink (False) and with it (True)."""
    work = tmp_path_factory.mktemp("farm")
    made = {}
    for sink in (False, True):
        edges = work / f"farm-{sink}.tsv"
        edges.write_text("".join(f"{src}\t{dst}\n" for src, dst in farm_edges(sink)))
        made[sink] = str(work / f"farm-{sink}.db")
        run("build", str(edges), "--store", made[sink], "-q")
    return made


def test_spam_mass_is_on_the_published_scale(farm_stores, tmp_path):
    path = str(tmp_path / "farm.db")
    shutil.copy(farm_stores[False], path)
    urls = pages(False)
    core = tmp_path / "core.txt"
    core.write_text("\n".join(CORE) + "\n")
    # a PageRank of other parameters in the store: Spam Mass must not take its p from it
    run("rank", "--store", path, "-q", "--damping", "0.5")
    good_fraction = len(GOOD) / len(urls)  # the graph's own share of good pages
    run("rank", "--store", path, "-q", "--trusted", str(core), "--good-fraction", repr(good_fraction))
    rows = json.loads(run("show", *urls, "--store", path, "--ranking", "trust", "--format", "json").output)
    mass = {row["url"]: row["spam_mass"] for row in rows}
    expected = expected_spam_mass(good_fraction)
    for url in urls:
        assert mass[url] == pytest.approx(expected[url], abs=1e-8), url
    for url in GOOD:  # outside the farm: about 0, trusted pages a little below
        assert abs(mass[url]) < 0.3, (url, mass[url])
    assert mass[GOOD[1]] == pytest.approx((1 - DAMPING) / (1 + DAMPING), abs=1e-8)
    for url in CORE:
        assert -0.3 < mass[url] < 0, (url, mass[url])
    assert mass[TARGET] > 0.9 and all(mass[url] > 0.9 for url in SUPPORT)
    with Store(path, readonly=True) as reader:
        assert reader.rankings.ranking("trust").params["good_fraction"] == good_fraction


def test_spam_mass_with_the_default_good_fraction_and_the_source_dangling_rule(farm_stores, tmp_path):
    """The default (the paper's 0.85) scales p' to 0.85 of p's scale; under the trust ranking's own dangling
    default (``source``: a sink's rank goes to the trusted pages) p and p' still jump uniformly at sinks."""
    path = str(tmp_path / "farm.db")
    shutil.copy(farm_stores[True], path)
    core = tmp_path / "core.txt"
    core.write_text("\n".join(CORE) + "\n")
    run("rank", "--store", path, "-q", "--trusted", str(core))
    with Store(path, readonly=True) as reader:
        assert reader.rankings.ranking("trust").params["dangling"] == "source"
    rows = json.loads(run("show", *pages(True), "--store", path, "--ranking", "trust", "--format", "json").output)
    assert len(rows) == len(pages(True))
    expected = expected_spam_mass(0.85, sink=True)
    for row in rows:
        assert row["spam_mass"] == pytest.approx(expected[row["url"]], abs=1e-8), row["url"]
    result = run("rank", "--store", path, "-q", "--good-fraction", "0.5", ok=False)
    assert result.exit_code == 2 and "--good-fraction is for --trusted" in result.output


# ------------------------------------------------------------ point 8: "unchanged"; stats --plot's history


def test_ranking_again_with_nothing_changed_writes_nothing(store, site, tmp_path):
    result = run("rank", "--store", store, "-q")
    assert result.output == (
        "pagerank v1 unchanged: the graph and parameters are those it ranked (--force ranks again)\n"
    )
    assert versions(store, "pagerank") == [1]
    assert "ranked pagerank v2" in run("rank", "--store", store, "-q", "--force").output
    assert "ranked pagerank v3" in run("rank", "--store", store, "-q", "--damping", "0.8").output
    assert "pagerank v3 unchanged" in run("rank", "--store", store, "-q", "--damping", "0.8").output
    # a variant's parameters are its seeds too
    first = tmp_path / "one.txt"
    first.write_text(f"{site}library/functions.html\n")
    second = tmp_path / "two.txt"
    second.write_text(f"{site}library/functions.html\n{site}library/os.html\n")
    assert "ranked trust v1" in run("rank", "--store", store, "-q", "--trusted", str(first)).output
    assert "trust v1 unchanged" in run("rank", "--store", store, "-q", "--trusted", str(first)).output
    assert "ranked trust v2" in run("rank", "--store", store, "-q", "--trusted", str(second)).output
    assert (
        "ranked trust v3"
        in run("rank", "--store", store, "-q", "--trusted", str(second), "--good-fraction", "0.9").output
    )
    assert "ranked personalized v1" in run("rank", "--store", store, "-q", "--source", f"{site}index.html").output
    assert "personalized v1 unchanged" in run("rank", "--store", store, "-q", "--source", f"{site}index.html").output
    assert versions(store, "trust") == [1, 2, 3] and versions(store, "pagerank") == [1, 2, 3]


def test_a_new_build_is_ranked_again(tmp_path):
    path = str(tmp_path / "s.db")
    run("build", data("small.warc.gz"), "--store", path, "-q")
    run("rank", "--store", path, "-q")
    assert "unchanged" in run("rank", "--store", path, "-q").output
    run("build", data("small.warc.gz"), "--store", path, "-q")  # the same graph, from a newer build
    assert "ranked pagerank v2" in run("rank", "--store", path, "-q").output
    with Store(path, readonly=True) as reader:
        assert reader.rankings.ranking("pagerank").build == reader.rankings.newest_build() == 2


def test_stats_plot_draws_the_newest_version_with_a_history(store, tmp_path):
    from matplotlib.image import imread

    # a second version warm-started from an answer already within its tol: one residual, 0
    run("rank", "--store", store, "-q", "--tol", "1e-9")
    with Store(store, readonly=True) as reader:
        warm = reader.rankings.ranking("pagerank")
        assert warm.version == 2 and len([r for r in warm.residuals if r > 0]) < 2
    png = tmp_path / "stats.png"
    result = run("stats", "--store", store, "--plot", str(png))
    assert "convergence: plotted pagerank v1 (" in result.output
    assert "pagerank v2 has no history to plot" in result.output
    image = imread(str(png))[..., :3]
    left = image[:, : image.shape[1] // 2]
    line = np.all(np.abs(left - np.array([0x1F, 0x77, 0xB4]) / 255) < 0.08, axis=-1)  # matplotlib's first colour
    assert line.sum() > 200, line.sum()  # the residuals are drawn, not an empty axis


# ------------------------------------------------------------ what a review of the above found


def test_a_ranking_keeps_its_level(store):
    """A name that ranks pages never gets a version of hosts, nor the reverse: its readers (the proxy among them,
    which reads each new version as it comes) would look one level's ids up as the other's."""
    refused = run("rank", "--store", store, "-q", "--level", "host", "--name", "pagerank", ok=False)
    assert refused.exit_code == 1
    assert refused.output == "Error: pagerank ranks pages: give another --name for a ranking of hosts\n"
    run("rank", "--store", store, "-q", "--level", "host")
    refused = run("rank", "--store", store, "-q", "--name", "hostrank", ok=False)
    assert refused.output == "Error: hostrank ranks hosts: give another --name for a ranking of pages\n"
    assert versions(store, "pagerank") == [1] and versions(store, "hostrank") == [1]


def test_a_new_rank_source_starts_cold_and_leaves_no_rounding_error_as_a_score(store, site):
    """Ranked again under another E, a name's previous scores are no start: the pages the new E never reaches
    would keep rounding errors of either sign (bars drawn for them, and a negative start the next time)."""
    run("rank", "--store", store, "-q", "--source-roots")
    run("rank", "--store", store, "-q", "--source", f"{site}library/functions.html")
    with Store(store, readonly=True) as reader:
        ranking = reader.rankings.ranking("personalized")
        _, scores = reader.rankings.scores_of(ranking.id)
    assert ranking.params["warm_from"] is None
    assert scores.min() == 0.0 and np.count_nonzero(scores == 0) > 100  # unreached pages: exactly 0
    assert scores[scores > 0].min() > 1e-9  # nothing that is only rounding
    run("rank", "--store", store, "-q", "--source-roots")  # from those scores again: no negative start


def test_several_topics_are_written_all_or_none(store, site, tmp_path):
    """A topic that fails after another was ranked (here: it does not converge) leaves that one unwritten."""
    easy, hard = tmp_path / "easy.txt", tmp_path / "hard.txt"
    easy.write_text(f"{site}library/functions.html\n")
    hard.write_text(f"{site}index.html\n")
    args = ("rank", "--store", store, "-q", "--method", "power", "--topic", f"a={easy}", "--topic", f"b={hard}")
    failed = run(*args, "--max-iter", "3", ok=False)
    assert failed.exit_code == 1 and "no ranking of this run was written" in failed.output
    assert "ranked topic:a" not in failed.output
    assert versions(store, "topic:a") == [] and versions(store, "topic:b") == []
    done = run(*args)
    assert done.output.startswith("ranked topic:a v1") and "ranked topic:b v1" in done.output


def test_a_stale_variant_is_told_how_it_was_made(store, site, tmp_path):
    """`rankstore rank` ranks pagerank alone: the note on a stale variant points to what made it."""
    run("rank", "--store", store, "-q", "--source", f"{site}index.html")
    edges = tmp_path / "edges.tsv"
    edges.write_text(f"http://elsewhere.example/\t{site}index.html\n")
    run("build", str(edges), "--store", store, "-q")
    with Store(store, readonly=True) as reader:
        build = reader.rankings.newest_build()
        assert (
            reader.rankings.stale_note(reader.rankings.ranking())
            == f"ranking pagerank v1 predates build {build}: run `rankstore rank`"
        )
        assert reader.rankings.stale_note(reader.rankings.ranking("personalized")) == (
            f"ranking personalized v1 predates build {build}: rank it again as it was made"
            " (`rankstore stats --ranking personalized` shows how)"
        )


def test_a_build_cut_short_makes_the_ranking_stale_and_is_ranked_again(store, site, tmp_path):
    """A build that was killed has changed pages as much as one that finished: the ranking is stale, and ranking
    again is not "unchanged" (the graph is derived again from what it left)."""
    import sqlite3

    edges = tmp_path / "edges.tsv"
    edges.write_text(f"http://elsewhere.example/\t{site}index.html\n")
    run("build", str(edges), "--store", store, "-q")
    run("rank", "--store", store, "-q")
    with sqlite3.connect(store) as db:  # as a killed build leaves it: begun, pages written, never finished
        db.execute("UPDATE builds SET status = 'running', finished_at = NULL WHERE id = (SELECT max(id) FROM builds)")
        db.execute("INSERT INTO builds (started_at, status, sources) VALUES ('2026-11-26T12:00:00Z', 'running', '[]')")
    with Store(store, readonly=True) as reader:
        build = reader.rankings.newest_build()
        assert (
            reader.rankings.stale_note(reader.rankings.ranking())
            == f"ranking pagerank v2 predates build {build}: run `rankstore rank`"
        )
    assert "ranked pagerank v3" in run("rank", "--store", store, "-q").output
