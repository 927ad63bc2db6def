"""`rankstore compare`: Spearman's rho, Kendall's tau-b and the top-k overlap of two rankings of one level."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest
from scipy import stats
from test_cc_ranks import HOST_HEADER, HOSTS, gz, host_lines

from rankstore.compare import RankingRef, agreement

from conftest import data, invoke, run


@pytest.mark.parametrize(
    "a, b, spearman, kendall",
    [
        ([4, 3, 2, 1], [40, 30, 20, 10], 1.0, 1.0),
        ([4, 3, 2, 1], [1, 2, 3, 4], -1.0, -1.0),
        # one swap among four: sum of d^2 = 2, rho = 1 - 6*2/(4*15); 1 discordant pair of 6
        ([4, 3, 2, 1], [4, 3, 1, 2], 0.8, (5 - 1) / 6),
        # a tie in b: ranks (1.5, 1.5, 3) against (1, 2, 3), rho = 1.5/sqrt(2*1.5); tau-b = 2/sqrt(3*2)
        ([1, 2, 3], [1, 1, 2], math.sqrt(3) / 2, 2 / math.sqrt(6)),
        # a score alike for every node orders nothing
        ([1, 2, 3], [5, 5, 5], None, None),
        ([7], [3], None, None),
    ],
)
def test_correlations_against_answers_by_hand(a, b, spearman, kendall):
    found = agreement(np.array(a, float), np.array(b, float), ks=())
    assert found.nodes == len(a)
    assert found.spearman == (pytest.approx(spearman, abs=1e-12) if spearman is not None else None)
    assert found.kendall == (pytest.approx(kendall, abs=1e-12) if kendall is not None else None)


@pytest.mark.parametrize(
    "a, b, ks, overlaps",
    [
        # top 2 of a {0, 1}, of b {1, 2}; top 3 {0, 1, 2} and {1, 2, 3}; top 5 of five nodes: all; top 6: too few
        ([5, 4, 3, 2, 1], [1, 5, 4, 3, 2], (2, 3, 5, 6), [0.5, 2 / 3, 1.0, None]),
        # equal scores are taken by node index, as the store orders them: a's top 2 is {0, 1}
        ([1, 1, 1, 1], [0, 0, 2, 1], (1, 2), [0.0, 0.0]),
        ([1, 1, 1, 1], [2, 1, 0, 0], (1, 2), [1.0, 1.0]),
    ],
)
def test_top_k_overlap_against_answers_by_hand(a, b, ks, overlaps):
    found = agreement(np.array(a, float), np.array(b, float), ks=ks)
    assert [top.k for top in found.tops] == list(ks)
    assert [top.overlap for top in found.tops] == [pytest.approx(v) if v is not None else None for v in overlaps]


def test_a_large_random_case_matches_scipy_and_a_set_intersection():
    rng = np.random.default_rng(7)
    a = rng.random(20_000)
    b = a + rng.normal(0, 0.3, len(a))
    b[:3000] = 0.5  # ties
    found = agreement(a, b)
    assert found.spearman == pytest.approx(stats.spearmanr(a, b).statistic, abs=1e-12)
    assert found.kendall == pytest.approx(stats.kendalltau(a, b).statistic, abs=1e-12)
    best_a = set(np.argsort(-a, kind="stable")[:1000].tolist())
    best_b = set(np.argsort(-b, kind="stable")[:1000].tolist())
    assert found.tops[-1].overlap == len(best_a & best_b) / 1000


@pytest.mark.parametrize("text, ref", [("pagerank", RankingRef("pagerank")), ("pagerank@3", RankingRef("pagerank", 3))])
def test_a_ranking_is_named_alone_or_with_a_version(text, ref):
    assert RankingRef.parse(text) == ref and str(ref) == text


# ------------------------------------------------------------------ the command

# The host ranks file of test_cc_ranks: twelve hosts, harmonic centrality 12e6 ... 1e6 in file order; PageRank's
# order swaps the first two and the tenth and eleventh.  Two swaps of neighbours: sum of d^2 = 4, so
# rho = 1 - 6*4/(12*143) = 141/143; 2 discordant pairs of 66: tau = 62/66; the top 10 share 9 hosts.
SPEARMAN, KENDALL, TOP_10 = 141 / 143, 62 / 66, 0.9


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Common Crawl's host graph of tests/data, ranked (hostrank twice), and the host ranks file loaded."""
    folder = tmp_path_factory.mktemp("compare")
    path = str(folder / "compare.db")
    ranks = gz(folder / "host-ranks.txt.gz", HOST_HEADER + "".join(host_lines()))
    run("build", data("ccgraph/host"), "--store", path, "-q")
    run("rank", "--level", "host", "--store", path, "-q")
    run("rank", "--level", "host", "--store", path, "-q", "--damping", "0.5")
    run("rank", "--store", path, "-q")
    run("build", ranks, "--store", path, "-q")
    return path


def test_compare_in_a_table(store):
    result = invoke("compare", "cc-harmonic", "cc-pagerank", "--store", store)
    assert result.exit_code == 0, result.output
    header, row = result.stdout.splitlines()
    assert header.split() == [
        "ranking_a",
        "ranking_b",
        "level",
        "scored_a",
        "scored_b",
        "common",
        "spearman",
        "kendall",
        "top_10",
        "top_100",
        "top_1000",
    ]
    assert row.split() == [
        "cc-harmonic",
        "v1",
        "cc-pagerank",
        "v1",
        "host",
        "12",
        "12",
        "12",
        f"{SPEARMAN:.4f}",
        f"{KENDALL:.4f}",
        "0.9000",
        "-",
        "-",
    ]
    assert "over the 12 hosts both score above 0" in result.stderr


def test_compare_as_csv_and_json_with_the_same_numbers(store):
    rows = list(
        csv.DictReader(io.StringIO(run("compare", "cc-harmonic", "cc-pagerank", "--store", store, "--format", "csv")))
    )
    (found,) = json.loads(run("compare", "cc-harmonic", "cc-pagerank", "--store", store, "--format", "json"))
    assert len(rows) == 1 and list(rows[0]) == list(found)
    row = rows[0]
    assert (row["ranking_a"], row["ranking_b"], row["level"], row["common"]) == (
        "cc-harmonic v1",
        "cc-pagerank v1",
        "host",
        "12",
    )
    assert float(row["spearman"]) == pytest.approx(SPEARMAN) and float(row["kendall"]) == pytest.approx(KENDALL)
    assert float(row["top_10"]) == TOP_10 and row["top_100"] == row["top_1000"] == ""
    assert found["spearman"] == pytest.approx(SPEARMAN) and found["kendall"] == pytest.approx(KENDALL)
    assert found["top_10"] == TOP_10 and found["top_100"] is None and found["top_1000"] is None
    assert found["common"] == found["scored_a"] == found["scored_b"] == 12


def test_ours_against_common_crawls_over_the_hosts_both_rank(store):
    (found,) = json.loads(run("compare", "hostrank", "cc-pagerank", "--store", store, "--format", "json"))
    ours = {
        row["host"]: row["host_pagerank"]
        for row in json.loads(run("top", "--ranking", "hostrank", "-n", "0", "--store", store, "--format", "json"))
    }
    theirs = {".".join(reversed(name.split("."))): float(pr) for name, _, _, pr in HOSTS}
    both = [host for host in ours if host in theirs]  # the graph's hosts the ranks file names: de.wikipedia.org not
    assert (found["ranking_a"], found["ranking_b"]) == ("hostrank v2", "cc-pagerank v1")
    assert found["scored_a"] == 8 and found["scored_b"] == 12 and found["common"] == len(both) == 7
    x, y = [ours[host] for host in both], [theirs[host] for host in both]
    assert found["spearman"] == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    assert found["kendall"] == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)
    assert found["top_10"] is None  # seven hosts in common


def test_one_version_against_the_last(store):
    bare = json.loads(run("compare", "hostrank", "--store", store, "--format", "json"))
    named = json.loads(run("compare", "hostrank@1", "hostrank@2", "--store", store, "--format", "json"))
    assert bare == named
    assert (bare[0]["ranking_a"], bare[0]["ranking_b"]) == ("hostrank v1", "hostrank v2")
    assert bare[0]["common"] == 8 and -1 <= bare[0]["spearman"] <= 1


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["pagerank", "cc-pagerank"],
            "pagerank v1 ranks pages and cc-pagerank v1 hosts: compare rankings of one level",
        ),
        (
            ["nothing", "cc-pagerank"],
            "no ranking 'nothing' (the store has: cc-harmonic, cc-pagerank, hostrank, pagerank)",
        ),
        (["hostrank@7", "cc-pagerank"], "no ranking 'hostrank' version 7"),
        (["cc-pagerank"], "cc-pagerank v1 is the first version of cc-pagerank: nothing before it"),
        (["hostrank@0", "hostrank"], "hostrank@0: versions are numbered from 1"),
    ],
)
def test_errors_in_one_line(store, args, message):
    result = invoke("compare", *args, "--store", store)
    assert result.exit_code == 1 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"Error: {message}")


def test_no_common_node_is_an_error_in_one_line(tmp_path):
    path = str(tmp_path / "apart.db")
    first = gz(tmp_path / "a-ranks.txt.gz", HOST_HEADER + "1\t2.0\t1\t0.6\tcom.a\n2\t1.0\t2\t0.4\tcom.b\n")
    second = gz(tmp_path / "c-ranks.txt.gz", HOST_HEADER + "1\t2.0\t1\t0.6\tcom.c\n2\t1.0\t2\t0.4\tcom.d\n")
    run("build", first, "--store", path, "-q")
    run("build", second, "--store", path, "-q")  # v2 scores c.com and d.com, and a.com and b.com 0
    result = invoke("compare", "cc-pagerank@1", "cc-pagerank@2", "--store", path)
    assert result.exit_code == 1
    assert result.stderr == "Error: cc-pagerank v1 and cc-pagerank v2 score no host above 0 in common\n"
    run("build", second, "--store", path, "-q")  # v3: a ranking keeps its newest two versions' scores
    result = invoke("compare", "cc-pagerank@1", "cc-pagerank", "--store", path)
    assert result.stderr == (
        "Error: cc-pagerank v1's scores are no longer kept (a ranking keeps its newest two versions)\n"
    )
