"""The command line starts light (issue 34, 5: the small end, a build and a rank as two whole processes).

`rankstore --help` and a command's `--help` load neither the store nor the
array and solver libraries nor the HTTP client; `rank` loads no views, no
HTTP client and no Spark; `build` no views.  Each is checked in a fresh
interpreter, whose ``sys.modules`` says what the process loaded.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from rankstore import choices, sources
from rankstore.sources import remote
from rankstore.store import analysis

ROOT = pathlib.Path(__file__).resolve().parent.parent
HEAVY = ("numpy", "pyarrow", "scipy", "http.client", "rankstore.store")

LOADED = """
import json, sys
from rankstore.cli import main
try:
    main(sys.argv[1:])
except SystemExit as stop:
    assert not stop.code, stop.code
finally:
    print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def loaded_by(*args: str) -> set[str]:
    """The modules a fresh `rankstore ARGS` process has loaded when it ends (it must succeed)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", LOADED, *args], capture_output=True, text=True, env=env, cwd=ROOT, check=True
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("args", [["--help"], ["build", "--help"], ["rank", "--help"], ["backlinks", "--help"]])
def test_help_loads_nothing_heavy(args):
    loaded = loaded_by(*args)
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


def test_build_and_rank_load_only_their_own(tmp_path):
    edges = tmp_path / "edges.tsv"
    edges.write_text("http://a.test/\thttp://b.test/\nhttp://b.test/\thttp://a.test/\nhttp://b.test/\thttp://c.test/\n")
    store = str(tmp_path / "s.db")
    built = loaded_by("build", str(edges), "--store", store, "-q")
    assert "rankstore.build" in built  # the check sees what a command loads
    assert built.isdisjoint({"rankstore.views", "rankstore.compare", "scipy"}), sorted(built)
    ranked = loaded_by("rank", "--store", store, "-q")
    assert "rankstore.ranking" in ranked
    assert ranked.isdisjoint({"rankstore.views", "rankstore.compare", "http.client", "rankstore.spark.engine"})


def test_an_edge_list_is_built_and_ranked_without_arrow_or_http(tmp_path):
    """The small end, two whole processes: pyarrow (Common Crawl's graphs and ranks files, a bulk numbering of
    sites) and the HTTP client (sources at URLs) are loaded by what reads those, not by every build and rank;
    a rank loads no scipy."""
    edges = tmp_path / "edges.tsv"
    edges.write_text("http://a.test/\thttp://b.test/\nhttp://b.test/\thttp://a.test/\nhttp://b.test/\thttp://c.test/\n")
    store = str(tmp_path / "s.db")
    built = loaded_by("build", str(edges), "--store", store, "-q")
    assert {"rankstore.build", "rankstore.sources.ccgraph", "rankstore.store.sites"} <= built  # format told, sites
    heavy = {"pyarrow", "http.client", "ssl", "urllib.request"}
    assert built.isdisjoint(heavy), sorted(built & heavy)
    ranked = loaded_by("rank", "--store", store, "-q")
    assert {"rankstore.store.sites", "rankstore.solver.product"} <= ranked
    heavy.add("scipy")  # the solver's C twin gathers and multiplies the rows
    assert ranked.isdisjoint(heavy), sorted(ranked & heavy)


def test_the_options_choices_are_the_librarys():
    # the CLI takes them from rankstore.choices without loading the modules that act on them
    assert sources.FORMATS is choices.FORMATS
    assert analysis.SORTS == choices.SORTS
    assert remote.DEFAULT_PATHS_BASE is sources.DEFAULT_PATHS_BASE
