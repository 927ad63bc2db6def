"""`rankstore backlinks --since DATE` with the date between two builds: only the links first seen in the second."""

from __future__ import annotations

import io
import json
import time

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from conftest import run

SITE = "http://since.example/"


def _warc(path, date: str, pages: dict[str, list[str]]) -> str:
    with open(path, "wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        for name, targets in pages.items():
            body = "".join(f'<a href="{SITE}{target}">{target}</a>' for target in targets)
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            record = writer.create_warc_record(
                SITE + name,
                "response",
                payload=io.BytesIO(f"<!doctype html><body>{body}</body>".encode()),
                http_headers=http,
                warc_headers_dict={"WARC-Date": date},
            )
            writer.write_record(record)
    return str(path)


def _second_after(stamp: str) -> str:
    """Wait until the wall clock is past ``stamp`` (UTC, to the second); that moment, as a UTC date-time."""
    while True:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        if now > stamp:
            return now
        time.sleep(0.05)


def test_since_a_date_between_two_builds_lists_only_the_second_builds_new_links(tmp_path):
    store = str(tmp_path / "s.db")
    run("build", _warc(tmp_path / "1.warc.gz", "2024-01-01T00:00:00Z", {"p": ["x", "y"]}), "--store", store, "-q")
    first = json.loads(run("builds", "--store", store, "--format", "json"))[0]
    between = _second_after(first["finished_at"])
    _second_after(between)  # build 2 starts after the moment, never in its second
    second_warc = _warc(tmp_path / "2.warc.gz", "2024-02-01T00:00:00Z", {"p": ["x", "z"], "q": ["x", "y"]})
    run("build", second_warc, "--store", store, "-q")
    run("rank", "--store", store, "-q")
    builds = json.loads(run("builds", "--store", store, "--format", "json"))
    assert [b["build"] for b in builds] == [1, 2] and builds[0]["finished_at"] < between < builds[1]["started_at"]

    def linking(target: str, since: str) -> list[str]:
        report = json.loads(run("backlinks", SITE + target, "--since", since, "--format", "json", "--store", store))
        return sorted(row["url"] for row in report["rows"] if row["kind"] == "link")

    for moment in (between, between.rstrip("Z"), between.replace("T", " ").rstrip("Z")):  # each form of a date
        assert linking("x", moment) == [SITE + "q"]  # p's link to x is from build 1: not new
        assert linking("y", moment) == [SITE + "q"]
        assert linking("z", moment) == [SITE + "p"]  # p recrawled in build 2 with a new link
    # a date before build 1 lists every link; one after build 2 none; the date is build 1, as its number is
    assert linking("x", "2000-01-01") == [SITE + "p", SITE + "q"]
    assert linking("x", "2999-01-01") == []
    for target in ("x", "y", "z"):
        assert linking(target, between) == linking(target, "1")
