"""Common Crawl's ranks files as published: read, and loaded as the rankings cc-harmonic and cc-pagerank."""

from __future__ import annotations

import gzip
import json
import os

import numpy as np
import pytest

from rankstore.imported import CC_HARMONIC, CC_PAGERANK
from rankstore.sources import Skipped, detect_format
from rankstore.sources.ccranks import RankBatch, ranks_level, read_cc_ranks
from rankstore.store import Store

from conftest import data, invoke, run

HOST_HEADER = "#harmonicc_pos\t#harmonicc_val\t#pr_pos\t#pr_val\t#host_rev\n"
DOMAIN_HEADER = "#harmonicc_pos\t#harmonicc_val\t#pr_pos\t#pr_val\t#host_rev\t#n_hosts\n"

# (reversed host, harmonic centrality as Java's Float.toString writes it, PageRank position, PageRank as Java's
# Double.toString writes it), in harmonic centrality order as the file is sorted.  Harmonic centrality is
# 12e6, 11e6, ... 1e6 (Java writes E notation from 1e7 up); PageRank's order swaps the first two hosts and the
# tenth and eleventh.
HOSTS = [
    ("com.example", "1.2E7", 2, "0.0011"),
    ("com.example.blog", "1.1E7", 1, "0.0012"),
    ("com.example.shop", "1.0E7", 3, "0.001"),
    ("org.wikipedia.en", "9000000.0", 4, "9.0E-4"),
    ("org.wikipedia.fr", "8000000.0", 5, "8.0E-4"),
    ("uk.co.bbc", "7000000.0", 6, "7.0E-4"),
    ("uk.co.bbc.news", "6000000.0", 7, "6.0E-4"),
    ("net.xn--bcher-kva", "5000000.0", 8, "5.0E-4"),
    ("com.example.www", "4000000.0", 9, "4.0E-4"),
    ("io.github.user", "3000000.0", 11, "2.0E-4"),
    ("org.python.docs", "2000000.0", 10, "3.0E-4"),
    ("com.elsewhere", "1000000.0", 12, "1.0E-4"),
]
FORWARD = [".".join(reversed(name.split("."))) for name, *_ in HOSTS]
HARMONIC = np.array([float(value) for _, value, _, _ in HOSTS])
PAGERANK = np.array([float(value) for *_, value in HOSTS])


def host_lines() -> list[str]:
    return [f"{at}\t{hc}\t{pr_pos}\t{pr}\t{name}\n" for at, (name, hc, pr_pos, pr) in enumerate(HOSTS, 1)]


def host_file_text() -> str:
    """The host file, with bad lines among the good ones (lines 4, 8, 10, 12, 15, 17 of the file)."""
    lines = host_lines()
    lines.insert(2, "3\t1.05E7\t---\t---\tcom.missing\n")  # the older join's mark where a value was missing
    lines.insert(6, "5\t8500000.0\t5\t8.5E-4\n")  # a field short
    lines.insert(8, "6\t7500000.0\t6\t7.5E-4\tcom..bad\n")  # an empty label: no host name
    lines.insert(10, "7\tNaN\t7\t6.5E-4\tcom.nan\n")  # not a value
    lines.insert(13, "9\t4500000.0\t9\t4.5E-4\tcom.example\n")  # a name given twice: the first line counts
    lines.insert(15, "0\t3500000.0\t0\t3.5E-4\tcom.zero\n")  # positions start at 1
    return HOST_HEADER + "".join(lines)


BAD_LINES = {4, 8, 10, 12, 15, 17}


def gz(path, text: str) -> str:
    path.write_bytes(gzip.compress(text.encode(), mtime=0))
    return str(path)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ranks")
    domain = DOMAIN_HEADER + (
        "1\t1.4833064E7\t2\t0.0045\tcom.example\t3\n"
        "2\t1.1E7\t1\t0.005\tuk.co.bbc\t2\n"
        "3\t9500000.0\t3\t0.0005\tio.github\t1\n"  # Common Crawl folds to ICANN domains: github.io is one
        "4\t8000000.0\t4\t2.5E-5\tcom.short\n"  # a field short: no n_hosts on a domain line
    )
    return {
        "host": gz(folder / "cc-main-host-ranks.txt.gz", host_file_text()),
        "clean": gz(folder / "clean-host-ranks.txt.gz", HOST_HEADER + "".join(host_lines())),
        "domain": gz(folder / "cc-main-domain-ranks.txt.gz", domain),
    }


def read_all(path, **options) -> tuple[list[RankBatch], list[Skipped]]:
    batches, skipped = [], []
    for item in read_cc_ranks(path, **options):
        (skipped if isinstance(item, Skipped) else batches).append(item)
    return batches, skipped


# ------------------------------------------------------------------ the reader


def test_a_ranks_file_is_told_by_its_header_and_its_level_by_the_last_column(files):
    assert detect_format(files["host"]) == detect_format(files["domain"]) == "ccranks"
    assert ranks_level(files["host"]) == "host"
    assert ranks_level(files["domain"]) == "site"
    assert detect_format(os.path.join(data("ccgraph/domain"), "vertices.txt.gz")) == "ccgraph"


@pytest.mark.parametrize("chunk_lines", [4_000_000, 3])  # a block at once, or pieces of three lines
def test_the_reader_gives_names_the_right_way_round_and_values_as_published(files, chunk_lines):
    batches, skipped = read_all(files["clean"], chunk_lines=chunk_lines)
    assert skipped == []
    assert [name for batch in batches for name in batch.names] == FORWARD
    assert np.concatenate([batch.harmonic for batch in batches]).tolist() == HARMONIC.tolist()
    assert np.concatenate([batch.pagerank for batch in batches]).tolist() == PAGERANK.tolist()
    assert np.concatenate([batch.lines for batch in batches]).tolist() == list(range(2, 14))


def test_bad_lines_are_reported_with_their_line_and_skipped(files):
    batches, skipped = read_all(files["host"])
    named = [name for batch in batches for name in batch.names]
    assert named == [*FORWARD[:9], "example.com", *FORWARD[9:]]  # the repeat is the loader's to drop
    where = {int(item.where.rsplit(":", 1)[1]): item.reason for item in skipped}
    assert set(where) == BAD_LINES - {15}
    assert all(reason.startswith("not a ranks line") for line, reason in where.items() if line != 10)
    assert where[10] == "not a plausible host name ('com..bad')"


def test_a_truncated_gzip_loses_only_the_rest_of_the_file(files, tmp_path):
    whole = gzip.compress((HOST_HEADER + "".join(host_lines()) * 2000).encode())
    cut = tmp_path / "cut-ranks.txt.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    batches, skipped = read_all(str(cut))
    assert sum(len(batch.names) for batch in batches) > 12
    assert len(skipped) == 1 and "unreadable data" in skipped[0].reason


# ------------------------------------------------------------------ loaded by `rankstore build`


@pytest.fixture(scope="module")
def host_store(files, tmp_path_factory):
    """The Common Crawl host graph of tests/data (8 hosts as root pages), then the host ranks file."""
    path = str(tmp_path_factory.mktemp("cc-ranks") / "hosts.db")
    run("build", data("ccgraph/host"), "--store", path, "-q")
    loaded = invoke("build", files["host"], "--store", path, "-q")
    return path, loaded


def test_build_loads_a_host_ranks_file_as_two_host_rankings_without_solving(host_store):
    path, loaded = host_store
    assert loaded.exit_code == 3  # lines were skipped
    assert "loaded cc-harmonic v1: 12 hosts scored by" in loaded.stdout
    assert "loaded cc-pagerank v1: 12 hosts scored by" in loaded.stdout
    assert "skipped 6 record(s)" in loaded.stderr
    with Store(path, readonly=True) as store:
        harmonic, pagerank = store.rankings.ranking(CC_HARMONIC), store.rankings.ranking(CC_PAGERANK)
        assert harmonic.level == pagerank.level == "host"
        assert harmonic.iterations == 0 and harmonic.residuals == []
        assert harmonic.params["kind"] == "imported" and harmonic.params["measure"] == "harmonic centrality"
        assert harmonic.params["source"].endswith("cc-main-host-ranks.txt.gz")
        assert harmonic.params["nodes"] == pagerank.params["nodes"] == 12
        assert harmonic.params["sum"] == pytest.approx(HARMONIC.sum())
        assert pagerank.params["sum"] == pytest.approx(PAGERANK.sum())
        assert harmonic.pages == pagerank.pages == store.hosts.host_count()
        ids = [store.hosts.host_id(name) for name in FORWARD]
        assert None not in ids  # the graph's hosts kept their ids; the others were numbered
        assert store.hosts.host_count() == 8 + 5  # the graph's eight hosts, and five more only the ranks file names
        for ranking, published in ((harmonic, HARMONIC), (pagerank, PAGERANK)):
            arrays = store.rankings.ranking_arrays(ranking.id)
            index = np.array(ids) - 1
            # each measure over its sum: summing to 1, the published value = score x sum
            assert arrays.scores[index] * ranking.params["sum"] == pytest.approx(published, rel=1e-12)
            assert arrays.scores.sum() == pytest.approx(1.0)
            assert np.count_nonzero(arrays.scores) == 12
        hc = store.rankings.ranking_arrays(harmonic.id)
        assert [FORWARD[ids.index(i + 1)] for i in hc.best[:12].tolist()] == FORWARD  # the file's order
        pr = store.rankings.ranking_arrays(pagerank.id)
        by_pagerank = [FORWARD[k] for k in np.argsort([pr_pos for _, _, pr_pos, _ in HOSTS])]
        assert [FORWARD[ids.index(i + 1)] for i in pr.best[:12].tolist()] == by_pagerank


def test_a_host_the_file_does_not_name_scores_0(host_store):
    path, _ = host_store
    top = json.loads(run("top", "--ranking", "cc-pagerank", "-n", "0", "--store", path, "--format", "json"))
    assert [row["host"] for row in top[:2]] == ["blog.example.com", "example.com"]
    assert [row["host"] for row in top if row["host_pagerank"] == 0] == ["de.wikipedia.org"]  # in the graph only
    assert top[-1]["bar"] == 0


def test_an_imported_ranking_is_never_stale_and_a_reload_is_a_new_version(host_store, tmp_path, files):
    path = str(tmp_path / "again.db")
    run("build", files["clean"], "--store", path, "-q")
    run("build", data("ccgraph/host"), "--store", path, "-q")  # a newer build of our own
    shown = invoke("top", "--ranking", "cc-harmonic", "--store", path)
    assert shown.exit_code == 0 and "predates" not in shown.stderr
    again = invoke("build", files["clean"], "--store", path, "-q")
    assert "loaded cc-harmonic v2" in again.stdout and "loaded cc-pagerank v2" in again.stdout
    with Store(path, readonly=True) as store:
        first, second = store.rankings.ranking(CC_PAGERANK, 1), store.rankings.ranking(CC_PAGERANK, 2)
        assert (first.pages, second.pages, store.hosts.host_count()) == (12, 13, 13)  # de.wikipedia.org came since
        old, new = store.rankings.ranking_arrays(first.id).scores, store.rankings.ranking_arrays(second.id).scores
        assert np.array_equal(old, new[:12]) and new[12] == 0


def test_a_domain_ranks_file_loads_as_site_rankings(files, tmp_path):
    path = str(tmp_path / "sites.db")
    loaded = invoke("build", files["domain"], "--store", path, "-q")
    assert loaded.exit_code == 3 and "loaded cc-pagerank v1: 3 sites" in loaded.stdout
    with Store(path, readonly=True) as store:
        ranking = store.rankings.ranking(CC_PAGERANK)
        assert ranking.level == "site" and ranking.pages == store.sites.site_count() == 3
        ids = [store.sites.site_id(name) for name in ("example.com", "bbc.co.uk", "github.io")]
        assert None not in ids and store.hosts.host_count() == 0  # sites by name, no host or page made up
        scores = store.rankings.ranking_arrays(ranking.id).scores[np.array(ids) - 1]
        assert scores.tolist() == pytest.approx([0.0045 / 0.01, 0.005 / 0.01, 0.0005 / 0.01])


def test_a_file_with_another_header_is_refused_in_one_line(tmp_path):
    path = gz(tmp_path / "odd-ranks.txt.gz", "#harmonicc_pos\t#harmonicc_val\t#host_rev\n1\t2.0\tcom.example\n")
    result = invoke("build", path, "--store", str(tmp_path / "odd.db"), "-q")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ") and "not a Common Crawl ranks header" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
