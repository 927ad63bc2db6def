"""``rank --engine spark`` with every variant of the seeds, and weighted links, against the scipy engine.

Each variant is run twice through the command line, the same arguments on
two copies of a store: once with ``--engine spark --master local[2]`` and
once with the scipy engine's default; the versions written must agree within
L1 1e-8, and each must differ from plain PageRank by far more than that (so
a variant the Spark engine silently dropped, ranking plain PageRank instead,
fails here).  The graphs: the python-docs crawl, and the same links read as a
weighted edge list (weights from 1 to 5).

One SparkSession for the Spark files (conftest's ``spark``; the CLI joins it).  Each of Spark's
iterations is a job of its own, slow next to scipy's, so the damping is low:
few iterations to a tolerance far under the agreement asked.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pytest

pytest.importorskip("pyspark")

from rankstore.store import Store

AGREE = 1e-8
DIFFERS = 1e-3  # L1 from plain PageRank: far above the agreement, far below what the variants move
DAMPING = 0.2
FAST = ("--damping", str(DAMPING), "--tol", "1e-10")  # the error left is under the last L1 change


@dataclass(frozen=True)
class Pair:
    """Two copies of one store: one the Spark engine ranks, one the scipy engine ranks with the same arguments."""

    spark: str
    scipy: str
    urls: tuple[str, ...]  # every page's URL, by page id - 1


def _pair(source: str, folder) -> Pair:
    folder.mkdir()
    paths = [str(folder / "spark.db"), str(folder / "scipy.db")]
    for path in paths:
        shutil.copy(source, path)
    with Store(source, readonly=True) as store:
        rows = store.pages.page_urls(store.pages.last_page_id())
    return Pair(paths[0], paths[1], tuple(url for _, url in sorted(rows)))


@pytest.fixture(scope="module")
def docs(python_doc_store, tmp_path_factory) -> Pair:
    return _pair(python_doc_store, tmp_path_factory.mktemp("variants") / "docs")


@pytest.fixture(scope="module")
def weighted(python_doc_store, tmp_path_factory) -> Pair:
    """The python-docs links as an edge list ``SRC DST WEIGHT``, each weight 1 to 5 by the link's ends."""
    folder = tmp_path_factory.mktemp("weighted")
    with Store(python_doc_store, readonly=True) as store:
        _, links = store.pages.dump()
    lines = [f"{src} {dst} {1 + (len(src) * 7 + len(dst) * 3) % 5}" for src, dst, *_ in links if src != dst]
    edges = folder / "edges.txt"
    edges.write_text("\n".join(lines) + "\n")
    built = str(folder / "built.db")
    status, output = _cli(["build", str(edges), "--store", built])
    assert status == 0, output
    with Store(built, readonly=True) as store:
        assert store.graph.in_links().weights is not None and len(set(store.graph.in_links().weights.tolist())) == 5
    return _pair(built, folder / "pair")


def _cli(args: Sequence[str]) -> tuple[int, str]:
    """``rankstore ARGS`` through click's CliRunner: (exit status, all output)."""
    from click.testing import CliRunner

    from rankstore.cli import cli

    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def _rank_both(pair: Pair, *args: str) -> None:
    status, output = _cli(["rank", "--engine", "spark", "--master", "local[2]", *FAST, *args, "--store", pair.spark])
    assert status == 0, output
    assert "iteration" in output and "L1 residual" in output, output  # the Spark engine's own lines
    status, output = _cli(["rank", "-q", *FAST, *args, "--store", pair.scipy])
    assert status == 0, output


def _scores(path: str, name: str) -> tuple[np.ndarray, np.ndarray | None, dict]:
    with Store(path, readonly=True) as store:
        ranking = store.rankings.ranking(name)
        arrays = store.rankings.ranking_arrays(ranking.id)
        return arrays.scores.copy(), None if arrays.extra is None else arrays.extra.copy(), dict(ranking.params)


@pytest.fixture(scope="module")
def plain(spark, docs) -> np.ndarray:
    """Plain PageRank of the docs, by the scipy engine (what a variant the Spark engine ignored would equal)."""
    status, output = _cli(["rank", "-q", *FAST, "--name", "plain", "--store", docs.scipy])
    assert status == 0, output
    return _scores(docs.scipy, "plain")[0]


def _agree(pair: Pair, name: str, kind: str, plain: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ours, our_extra, params = _scores(pair.spark, name)
    theirs, their_extra, their_params = _scores(pair.scipy, name)
    assert params["engine"] == "spark" and their_params["engine"] == "scipy"
    assert params["kind"] == their_params["kind"] == kind, (params, their_params)
    assert ours.shape == theirs.shape == plain.shape
    assert np.abs(ours - theirs).sum() <= AGREE, (name, np.abs(ours - theirs).sum())
    assert np.abs(ours - plain).sum() > DIFFERS, (name, np.abs(ours - plain).sum())
    assert (our_extra is None) == (their_extra is None)
    return ours, theirs


def _seed_file(folder, name: str, urls: Sequence[str]) -> str:
    path = folder / name
    path.write_text("".join(f"{url}\n" for url in urls))
    return str(path)


def _pick(urls: Sequence[str], *endings: str) -> list[str]:
    chosen = [url for url in urls if url.endswith(endings)]
    assert len(chosen) >= len(endings), (endings, chosen)
    return chosen


def test_source(docs, plain):
    seeds = _pick(docs.urls, "/library/functions.html", "/reference/datamodel.html")
    _rank_both(docs, *(x for url in seeds for x in ("--source", url)), "--name", "mine")
    ours, _ = _agree(docs, "mine", "personalized", plain)
    # E on the two seeds: each of them holds at least its own share of the jump
    assert ours[[docs.urls.index(url) for url in seeds]].min() > (1 - DAMPING) / len(seeds)


def test_source_roots(docs, plain):
    _rank_both(docs, "--source-roots")
    _agree(docs, "personalized", "personalized", plain)


def test_topics(docs, plain, tmp_path):
    library = _seed_file(tmp_path, "library.txt", [url for url in docs.urls if "/library/" in url][:30])
    tutorial = _seed_file(tmp_path, "tutorial.txt", [url for url in docs.urls if "/tutorial/" in url])
    _rank_both(docs, "--topic", f"library={library}", "--topic", f"tutorial={tutorial}")
    a, _ = _agree(docs, "topic:library", "personalized", plain)
    b, _ = _agree(docs, "topic:tutorial", "personalized", plain)
    assert np.abs(a - b).sum() > DIFFERS  # each topic its own E


def test_trusted_and_its_spam_mass(docs, plain, tmp_path):
    trusted = _seed_file(tmp_path, "trusted.txt", _pick(docs.urls, "/index.html", "/tutorial/index.html"))
    _rank_both(docs, "--trusted", trusted)
    _agree(docs, "trust", "trust", plain)
    ours, theirs = _scores(docs.spark, "trust")[1], _scores(docs.scipy, "trust")[1]
    assert ours is not None and theirs is not None
    # the relative mass (p - p')/p: p is at least (1 - d)/n, so an L1 error within AGREE moves it by far less
    assert np.array_equal(np.isnan(ours), np.isnan(theirs))
    assert np.nanmax(np.abs(ours - theirs)) < 1e-4, np.nanmax(np.abs(ours - theirs))
    assert np.nanmax(ours) - np.nanmin(ours) > 0.5  # pages the core reaches and pages it does not


def test_flagged(docs, plain, tmp_path):
    flagged = _seed_file(tmp_path, "flagged.txt", _pick(docs.urls, "/glossary.html", "/library/stdtypes.html"))
    _rank_both(docs, "--flagged", flagged)
    _agree(docs, "badrank", "badrank", plain)


def test_weighted_links(spark, weighted):
    _rank_both(weighted, "--name", "w")
    status, output = _cli(["rank", "-q", *FAST, "--unweighted", "--name", "u", "--store", weighted.scipy])
    assert status == 0, output
    unweighted = _scores(weighted.scipy, "u")[0]
    _agree(weighted, "w", "pagerank", unweighted)  # the weights, dropped, would give this
    assert _scores(weighted.spark, "w")[2]["weighted"] is True


def test_weighted_links_reversed(spark, weighted, tmp_path):
    """BadRank over weighted links: the reversed graph keeps each link's weight."""
    flagged = _seed_file(tmp_path, "flagged.txt", _pick(weighted.urls, "/glossary.html"))
    _rank_both(weighted, "--flagged", flagged, "--name", "wb")
    status, output = _cli(
        ["rank", "-q", *FAST, "--unweighted", "--flagged", flagged, "--name", "ub", "--store", weighted.scipy]
    )
    assert status == 0, output
    _agree(weighted, "wb", "badrank", _scores(weighted.scipy, "ub")[0])
