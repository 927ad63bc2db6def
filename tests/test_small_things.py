"""Issue 47's smaller things, each as a new user met it: what the CLI and the own pages say (point 11).

Each test failed on what had landed (87ca4aa) and passes since."""

from __future__ import annotations

import csv
import io

from click.testing import CliRunner
from recordkit import append, link, make_record, page

from proxy_addon.pages import respond
from proxy_addon.ranks import Ranks
from rankstore.cli import cli


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def run(*args: str) -> None:
    done = invoke(*args)
    assert done.exit_code == 0, done.output


def _browsed(folder) -> str:
    """A record of four views of three pages, built and ranked at page level only."""
    record = make_record(str(folder / "record"))
    a, b, c = "http://a.example/", "http://a.example/b", "http://c.example/"
    for n, url in enumerate((a, b, b, c)):
        append(record, "20261120T100000Z", 1, page(url, f"2026-11-20T10:0{n}:00Z", [link(a), link(c)], title=f"T{n}"))
    store = str(folder / "s.db")
    run("build", record, "--store", store, "-q")
    run("rank", "--store", store, "-q")
    return store


def test_show_of_a_missing_url_says_so_once_and_prints_no_empty_table(tmp_path):
    store = _browsed(tmp_path)
    runner = CliRunner()
    done = runner.invoke(cli, ["show", "http://nowhere.example/x", "--store", store])
    assert done.exit_code == 1
    assert done.stdout == ""  # no "(nothing)" beside the error
    assert done.stderr == "not in the store: http://nowhere.example/x\n"
    # CSV and JSON keep their header and their empty list: a script reads them as they are
    assert invoke("show", "http://nowhere.example/x", "--store", store, "--format", "json").stdout == "[]\n"


def test_usage_at_a_level_not_ranked_says_how_to_rank_it(tmp_path):
    store = _browsed(tmp_path)
    done = invoke("usage", "--store", store, "--level", "host")
    assert done.exit_code == 1
    assert done.output.startswith("Error: no ranking 'hostrank'") and "`rankstore rank --level host`" in done.output
    assert done.output.count("\n") == 1


def test_usage_csv_writes_whole_places_as_integers(tmp_path):
    store = _browsed(tmp_path)
    rows = list(csv.DictReader(io.StringIO(invoke("usage", "--store", store, "--format", "csv").stdout)))
    # a whole place is an integer (it was written 1.0); a tie keeps its mean place: a and c, one view each
    # and the same PageRank, tie in both
    assert sorted(row["visit_rank"] for row in rows) == ["1", "2.5", "2.5"]
    assert sorted(row["pagerank_rank"] for row in rows) == ["1.5", "1.5", "3"]
    # the place in the whole ranking is as `top` gives it: the tied pages share the better one
    assert sorted(row["rank"] for row in rows) == ["1", "1", "3"]


def test_the_own_pages_show_a_commands_quotes_not_its_backticks(tmp_path):
    edges = tmp_path / "edges.tsv"
    edges.write_text("http://p.example/\thttp://q.example/\n")
    store = str(tmp_path / "e.db")
    run("build", str(edges), "--store", store, "-q")
    run("rank", "--store", store, "-q")
    ranks = Ranks(store)
    try:
        status, _, body = respond("GET", "/usage", {}, ranks)
    finally:
        ranks.close()
    text = body.decode()
    assert status == 400 and "`" not in text
    assert "&#8220;pagerank-proxy --record DIR&#8221;" in text


def test_a_hosts_or_sites_tooltip_says_its_score_is_on_another_scale():
    """A bar drawn from a host's (site's) rank sits among bars of pages' PageRank: its tooltip says whose rank it
    is and among what its percentile stands, not a bare number beside the pages' ones."""
    from barkit import bars as drawn

    from proxy_addon.markup import Estimate, LinkInfo, bars

    estimate = Estimate("host", "docs.example", 0.25, 50.0, 5, 12, 3, 10)
    tooltip = drawn(bars(LinkInfo(None, estimate=estimate))[0])[0].tooltip
    assert tooltip == "host docs.example: host rank 0.25 · 50.00 percentile of hosts · toolbar 5/10"


def test_not_ranked_yet_does_not_advise_a_command_that_remakes_another_ranking():
    """The tooltip of a page come since the ranking served everything from plain pagerank to a TrustRank: it
    says what happened and leaves the cure to the stale ranking's note, which names the right command."""
    from barkit import bars as drawn

    from proxy_addon.markup import LinkInfo, bars

    tooltip = drawn(bars(LinkInfo(None, later=True))[0])[0].tooltip
    assert "not ranked yet" in tooltip and "`rankstore rank`" not in tooltip and "rankstore rank" not in tooltip


def test_the_crawl_experiment_names_the_site_it_crawled():
    """tools/crawl_experiment.py called every site "rust-doc", whatever --docs or --edges named."""
    import importlib.util
    import os

    from conftest import ROOT

    path = os.path.join(ROOT, "tools", "crawl_experiment.py")
    spec = importlib.util.spec_from_file_location("crawl_experiment", path)
    assert spec is not None and spec.loader is not None
    experiment = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(experiment)
    assert experiment.site_label("/usr/share/doc/rust-doc/html") == "rust-doc"
    assert experiment.site_label("/usr/share/doc/python3.11/html/") == "python3.11"
    assert experiment.site_label("/srv/mirror") == "mirror"
    assert experiment.site_label("/usr/share/doc/rust-doc/html", "/tmp/paper.tsv") == "paper.tsv"
