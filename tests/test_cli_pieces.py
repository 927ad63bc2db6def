"""The pieces `rankstore/cli.py` calls (issue 33, 4): build's meter and report, rank's jobs, info's text."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from rankstore import output
from rankstore.build import BuildProgress, BuildReport, PlannedSource
from rankstore.progress import Meter, skipped_lines, summary_lines
from rankstore.rank_job import JobError, RankRequest, plan_jobs
from rankstore.ranking import RankOptions
from rankstore.sources import Skipped


def test_meter_counts_files_at_urls_and_bytes_on_disk():
    remote = Meter.plan(["x.paths.gz"], [PlannedSource("x.paths.gz", "warc", files=["a", "b", "c"])], quiet=False)
    assert (remote.by_files, remote.total, remote.shown) == (True, 3, True)
    first = remote.step(BuildProgress(files=1, files_total=4))
    assert (first.length, first.advance) == (4, 1)
    assert remote.step(BuildProgress(files=1, files_total=4)).advance == 0  # a redraw
    assert not Meter.plan(["x.paths.gz"], [PlannedSource("x.paths.gz", "warc", files=["a"])], quiet=True).shown


def test_summary_and_skipped_lines():
    report = BuildReport(7, pages=10, links=20, gone=2, seconds=2.0, continued=True)
    lines = summary_lines(report, "s.db", 1)
    assert lines[0] == "build #7 was cut short: continued"
    assert lines[1] == "built s.db: 10 pages, 20 links from 1 source(s) in 2.0 s (5 pages/s)"
    assert lines[2].startswith("2 page(s) found gone")
    assert skipped_lines(report) == []
    report.skipped = Counter({"bad record": 3})
    report.examples = [Skipped("f.warc:10", "bad record")]
    assert skipped_lines(report) == ["skipped 3 record(s):", "         3  bad record", "  at f.warc:10: bad record"]


def test_plan_jobs_names_and_refuses(tmp_path):
    common = RankOptions()
    assert [job.name for job in plan_jobs(RankRequest(common))] == ["pagerank"]
    assert [job.name for job in plan_jobs(RankRequest(common, sources=("https://a.example/",)))] == ["personalized"]
    host = RankOptions(level="host")
    assert [job.name for job in plan_jobs(RankRequest(host))] == ["hostrank"]
    seeds = tmp_path / "s.txt"
    seeds.write_text("https://a.example/\n")
    topics = plan_jobs(RankRequest(common, topics=(f"a={seeds}", f"b={seeds}")))
    assert [job.name for job in topics] == ["topic:a", "topic:b"]
    trust = plan_jobs(RankRequest(common, trusted=str(seeds), good_fraction=0.5))[0]
    assert (trust.name, trust.good_fraction, trust.trusted.option) == ("trust", 0.5, "--trusted")
    for request, option in [
        (RankRequest(common, topics=(f"a={seeds}",), trusted=str(seeds)), None),
        (RankRequest(common, good_fraction=0.5), None),
        (RankRequest(host, sources=("https://a.example/",)), None),
        (RankRequest(common, topics=("a",)), "--topic"),
        (RankRequest(common, topics=(f"a={seeds}", f"a={seeds}")), "--topic"),
        (RankRequest(common, flagged=str(tmp_path / "none.txt")), "--flagged"),
    ]:
        with pytest.raises(JobError) as raised:
            plan_jobs(request)
        assert raised.value.option == option, request


def test_store_text_in_both_formats():
    details = {
        "path": "s.db", "size_bytes": 2048, "schema_version": 6, "pages": 3, "crawled_pages": 2, "hosts": 1,
        "links": 4, "nofollow_links": 1, "sites": 1, "site_links": 0, "rankings": [],
        "hosts_numbered": 1, "hosts_ranked": None, "sites_ranked": None,
        "builds": [{"id": 1, "started_at": "t", "status": "done", "pages": 2, "links": 4, "skipped": 0,
                    "sources": ["a.warc"], "files": [{"name": f"f{i}", "size": 1, "checksum": "c", "unreadable": 0}
                                                     for i in range(12)]}],
    }  # fmt: skip
    assert json.loads(output.store_text(details, "json")) == details
    text = output.store_text(details, "table").splitlines()
    assert text[0] == "store:    s.db (2.0 KiB, schema 6)"
    assert "12 file(s) at URLs taken whole (12 B):" in text[7]
    assert text[-2] == "      ... and 2 more (--format json lists them all)"
    with pytest.raises(ValueError):
        output.store_text(details, "csv")
