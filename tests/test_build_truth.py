"""Issue 47, points 5 and 6: a build's history tells the truth (an interrupted build is marked so, with what
it committed; the bar counts work done) and inputs are read as what they are (one saved HTML page or other
text is refused in one line, writing nothing; two folders of Common Crawl graph parts are a graph)."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest
from click.testing import CliRunner

import rankstore.build as build_module
from rankstore.build import BuildProgress, check_sources
from rankstore.cli import cli
from rankstore.progress import Meter
from rankstore.store import Store

from conftest import ROOT, data, run

_real_prepare_chunk = build_module._prepare_chunk


def _build(*args):
    return CliRunner().invoke(cli, ["build", *args], catch_exceptions=False)


# ------------------------------------------------------------ point 6: inputs read as what they are


@pytest.mark.parametrize(
    "name, text, said",
    [
        (
            "page.html",
            "<!doctype html>\n<html><head><title>T</title></head>\n<body><a href='a.html'>a</a></body></html>\n",
            "a saved HTML page",
        ),
        ("page.htm", "<html>\n<body>hello</body>\n</html>\n", "a saved HTML page"),
        ("notes.txt", "hello\nworld foo\nthe end\n", "not an edge list"),
    ],
)
def test_a_single_html_file_or_other_text_is_refused_in_one_line_and_nothing_is_written(tmp_path, name, text, said):
    source = tmp_path / name
    source.write_text(text)
    store = tmp_path / "s.db"
    result = _build(str(source), "--store", str(store))
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert str(source) in lines[0] and said in lines[0]
    assert "--base-url" in lines[0] and "WARC" in lines[0]  # what to give instead
    assert not os.path.exists(store)  # no store made, no empty build recorded


def test_an_edge_list_with_comments_and_a_bad_line_is_still_an_edge_list(tmp_path):
    source = tmp_path / "edges.txt"
    source.write_text("# a comment\n\nbroken\nhttp://a.example/ http://b.example/\n")
    result = _build(str(source), "--store", str(tmp_path / "s.db"), "-q")
    assert result.exit_code == 3, result.output  # the bad line skipped, the rest loaded
    assert ", 1 links" in result.output


@pytest.mark.parametrize("order", [("vertices", "edges"), ("edges", "vertices")])
def test_two_folders_of_common_crawl_graph_parts_are_a_graph(tmp_path, order):
    folders = [data(f"ccgraph/host/{kind}") for kind in order]
    result = _build(*folders, "--store", str(tmp_path / "s.db"), "-q")
    assert result.exit_code == 0, result.output
    assert "8 pages, 13 links" in result.output


# ------------------------------------------------------------ point 5: the bar shows the work done


_PARSED = multiprocessing.get_context("fork").Value("i", 0)  # records parsed, counted in the parsers


def _slow_chunk(records, weights=None):
    time.sleep(0.05)  # a busy machine: the parsers well behind the reader
    done = _real_prepare_chunk(records, weights) if weights is not None else _real_prepare_chunk(records)
    with _PARSED.get_lock():
        _PARSED.value += len(records)
    return done


def test_the_meter_counts_bytes_of_the_records_parsed_not_read_ahead():
    meter = Meter(by_files=False, total=1000)
    # the moment: 99% of the bytes read, 51 of the 527 pages read counted
    step = meter.step(BuildProgress(bytes_read=990, read=527, pages=51))
    assert step.advance == 990 * 51 // 527  # ~10%, not 99%
    assert meter.step(BuildProgress(bytes_read=1000, read=600, pages=51)).advance == 0  # reading on is no work done
    assert meter.step(BuildProgress(bytes_read=1000, read=600, pages=600)).advance == 1000 - 990 * 51 // 527


def test_a_build_with_slow_parsers_draws_no_more_than_the_pages_done(tmp_path, monkeypatch):
    folder = tmp_path / "site"
    folder.mkdir()
    pages = 400
    for i in range(pages):
        (folder / f"p{i}.html").write_text(
            f"<html><head><title>page {i}</title></head><body>"
            + "".join(f"<a href='p{(i * 7 + k) % pages}.html'>x</a>" for k in range(5))
            + "<p>"
            + "words " * 200
            + "</p></body></html>"
        )
    monkeypatch.setattr(build_module, "_prepare_chunk", _slow_chunk)
    monkeypatch.setattr(build_module, "_CHUNK", 8)
    sources = [str(folder)]
    planned = check_sources(sources, None, "http://site.example/")
    meter = Meter.plan(sources, planned, quiet=False)
    drawn: list[tuple[float, int]] = []
    _PARSED.value = 0

    def progress(state: BuildProgress) -> None:
        meter.step(state)
        drawn.append((meter.done / meter.total, _PARSED.value))

    with Store(str(tmp_path / "s.db")) as store:
        build_module.build(store, sources, None, "http://site.example/", progress, jobs=2, planned=planned)
    assert drawn[-1] == (1.0, pages)
    # each drawing's share of the bar is at most the share of the pages parsed (the pages are alike in size)
    ahead = [(round(share, 3), done) for share, done in drawn if share > done / pages + 0.02]
    assert not ahead, ahead[:5]


# ------------------------------------------------------------ point 5: an interrupted build is marked so


def _edge_list(path, pages: int = 40_000, links: int = 1_000_000) -> str:
    rng = np.random.default_rng(2)
    src = np.sort(rng.integers(0, pages, links))
    dst = (src // 100 * 100 + rng.zipf(1.4, links)) % pages
    with open(path, "w") as out:
        out.write("".join(f"http://h{s // 100}.ex/{s}\thttp://h{d // 100}.ex/{d}\n" for s, d in zip(src, dst)))
    return str(path)


def _builds(store) -> list[dict]:
    return json.loads(run("builds", "--store", str(store), "--format", "json"))


def _cut(store, source, how: signal.Signals) -> subprocess.CompletedProcess:
    """`rankstore build` in a process of its own, sent ``how`` once it has committed some links."""
    process = subprocess.Popen(
        [sys.executable, "-m", "rankstore", "build", source, "--store", str(store), "-q", "--commit-every", "2000"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # SIGINT at its default, as a shell gives a foreground command: a pytest-xdist worker ignores it, and a
        # process that inherits that never turns Ctrl-C into KeyboardInterrupt
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while True:
        assert process.poll() is None and time.monotonic() < deadline, "the build ended before its cut"
        try:
            with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
                if db.execute("SELECT count(*) FROM out_links").fetchone()[0]:
                    break
        except sqlite3.OperationalError:  # not made yet, or locked a moment
            pass
        time.sleep(0.002)
    process.send_signal(how)
    out, err = process.communicate(timeout=120)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def _committed(store) -> tuple[int, int]:
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        links = db.execute("SELECT coalesce(sum(length(targets)), 0) / 4 FROM out_links").fetchone()[0]
        pages = db.execute("SELECT count(DISTINCT src) FROM out_links").fetchone()[0]
    return pages, links


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM])
def test_a_build_cut_by_a_signal_is_marked_interrupted_with_what_it_committed(tmp_path, how):
    source = _edge_list(tmp_path / "edges.tsv")
    store = tmp_path / "s.db"
    cut = _cut(store, source, how)
    assert cut.returncode == 130, cut.stderr
    said = cut.stderr.strip().splitlines()
    assert len(said) == 1 and "build #1 is marked interrupted" in said[0], cut.stderr  # one line, no traceback
    pages, links = _committed(store)
    assert links > 0
    [row] = _builds(store)
    assert (row["status"], row["pages"], row["links"]) == ("interrupted", pages, links)
    assert row["new_links"] <= links and row["finished_at"]  # new once the graph is derived with them
    with sqlite3.connect(store) as db:  # written in the store, not only shown
        assert db.execute("SELECT status, pages, links FROM builds").fetchall() == [("interrupted", pages, links)]
    # the build run again completes; the interrupted one keeps its record, and --since 1 names the links after it
    again = subprocess.run([sys.executable, "-m", "rankstore", "build", source, "--store", str(store), "-q"], cwd=ROOT)
    assert again.returncode == 0
    rows = _builds(store)
    assert [row["status"] for row in rows] == ["interrupted", "complete"]
    assert rows[1]["new_links"] + rows[0]["new_links"] == rows[1]["links"]


def test_a_killed_build_found_running_by_a_later_command_is_interrupted(tmp_path):
    source = _edge_list(tmp_path / "edges.tsv")
    store = tmp_path / "s.db"
    cut = _cut(store, source, signal.SIGKILL)
    assert cut.returncode == -signal.SIGKILL
    pages, links = _committed(store)
    [row] = _builds(store)  # a reader says so, without writing
    assert (row["status"], row["pages"], row["links"]) == ("interrupted", pages, links)
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT status FROM builds").fetchall() == [("running",)]
    done = subprocess.run([sys.executable, "-m", "rankstore", "build", source, "--store", str(store), "-q"], cwd=ROOT)
    assert done.returncode == 0
    with sqlite3.connect(store) as db:  # the next build wrote it
        assert db.execute("SELECT status, pages, links FROM builds ORDER BY id").fetchall()[0] == (
            "interrupted",
            pages,
            links,
        )
    assert [row["status"] for row in _builds(store)] == ["interrupted", "complete"]
