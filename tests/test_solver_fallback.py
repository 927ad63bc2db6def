"""BiCGSTAB can break down where the power method cannot: the ranking then comes from the power method."""

from __future__ import annotations

import json

import pytest

from rankstore.store import Store

from conftest import invoke, run


@pytest.fixture(scope="module")
def chain(tmp_path_factory) -> str:
    """A long chain of pages (i -> i + 1) and a hub deep in it: BiCGSTAB's residual grows to overflow here."""
    folder = tmp_path_factory.mktemp("chain")
    edges = folder / "edges.tsv"
    n = 44_000
    lines = [f"http://s.test/{i}\thttp://s.test/{i + 1}\n" for i in range(1, n)]
    lines += [f"http://s.test/{i}\thttp://s.test/23000\n" for i in range(1, 3_000)]
    edges.write_text("".join(lines))
    store = str(folder / "s.db")
    run("build", str(edges), "--store", store, "-q")
    return store


def test_a_bicgstab_breakdown_is_ranked_by_the_power_method(chain):
    result = invoke("rank", "--store", chain)
    assert result.exit_code == 0, result.output
    assert "BiCGSTAB broke down after" in result.stderr
    run("rank", "--method", "power", "--name", "power", "--store", chain, "-q")
    with Store(chain, readonly=True) as store:
        default, power = store.rankings.ranking("pagerank"), store.rankings.ranking("power")
        assert default.params["method"] == "power" and default.params["bicgstab_broke_down_after"] > 0
        a = store.rankings.ranking_arrays(default.id).scores
        b = store.rankings.ranking_arrays(power.id).scores
    assert float(abs(a - b).sum()) < 1e-8
    top = json.loads(run("top", "-n", "1", "--format", "json", "--store", chain))
    assert top[0]["url"] == "http://s.test/23000"
