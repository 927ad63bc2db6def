#!/usr/bin/env python3
"""`rankstore extract` against cc-pyspark's wat_extract_links.py on the same WAT files in the same Spark.

    .venv/bin/python tools/bench_extract.py --peer-job host,page --rounds 5
    .venv/bin/python tools/bench_extract.py --peer-job host-fastwarc --peer-python PEER_VENV/bin/python --engine spark

1. The corpus (made once, kept in ``--work``): a doc site served on 127.0.0.1
   and crawled by wget into a WARC (tools/sitecrawl.py; rust-doc, else
   postgresql-doc-15; rust-doc's crawl is shared with tools/bench_build.py),
   split into ``--files`` WARCs of consecutive records, each written as a WAT
   in Common Crawl's layout by tests/watgen.py's ``write_wat``.  The records'
   ``WARC-Target-URI`` name the site's public host (``--host``, as
   doc.rust-lang.org) instead of 127.0.0.1: the peer's host-level job drops
   every page of an IP address (``get_surt_host``), and would do no work.
2. The peer: cc-pyspark's published source (``--cc-pyspark``: a checkout, or
   the bare git mirror, exported with ``git archive`` into the run's folder at
   each run; nothing of it is kept in this repository), run by the venv's
   pyspark ``spark-submit --master local[N] --py-files sparkcc.py,json_importer.py``
   on a listing of the WAT files' paths (sparkcc.py reads a local path as it
   stands), ``--num_input_partitions`` = the files.  ``host`` is the script as
   published (its ``__main__`` runs ExtractHostLinksJob: host pairs, as
   Common Crawl's host graph); ``page`` its ExtractLinksJob (page pairs, the
   job closer to ours), started by a two-line driver that imports it;
   ``host-fastwarc`` its hostlinks_extract_fastwarc.py.  Its imports need
   boto3/botocore, requests, warcio, idna, and orjson (else ujson, else json)
   in the venv: ``pip install orjson boto3`` (boto3 pins python-dateutil<3;
   the venv's 4.0 was put back after, and boto3 still imports).  Its FastWARC
   job needs FastWARC before 2.0 (it imports ``FastWARCError``, gone in 2.0;
   rankstore needs 2.0): give it a Python of its own, ``--peer-python
   VENV/bin/python``, a venv with ``fastwarc==0.15.2 warcio orjson boto3
   requests idna`` (Spark and its Python side stay the venv's pyspark's).
3. Ours: ``rankstore extract WATS -o DIR -q`` with ``--engine spark --master
   local[N]`` and/or ``--engine local -j N``.  Not the same output: the
   peer's host job writes host pairs (the links between hosts, deduplicated),
   its page job every URL pair (links of every element, deduplicated and
   sorted), ours every ``<a>`` link canonicalized, with anchor and nofollow,
   and every page, as Parquet.
4. Each run is a whole process, timed end to end (``wall``: the JVM's start
   included); a Spark run also gives its jobs' time (``jobs``: the first
   job's submission to the last job's end) and its tasks' (``tasks``: the sum
   of their executor run times, the core-seconds the work held, idle cores
   apart), from Spark's event log, enabled for both sides by a
   ``spark-defaults.conf`` in ``SPARK_CONF_DIR``.  The order of the
   contenders alternates over ``--rounds``; medians are shown.
   What is counted, the same for every contender: the WAT's metadata records
   of HTTP responses (one a page fetched; the WAT's request and warcinfo
   records are read by both but not counted), known from the split WARCs.
   Rates are responses a second, and a second a core (wall and jobs: over N
   cores; tasks: over the tasks' seconds).
5. The estimate for one whole Common Crawl crawl's WATs, from each
   contender's rate a core (its tasks' where it has them, else wall over N
   cores, which counts the process's start and idle cores): core-hours, and
   hours on clusters of ``--clusters`` cores, scaled linearly (no download
   from S3 counted).  The crawl's size is an assumption, printed with it.
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from sitecrawl import crawl, serve  # noqa: E402

CACHE = os.path.expanduser("~/.cache/pagerank-proxy")
MIRROR = "/work/.mirror/commoncrawl+cc-pyspark/repo"
# (docroot, its public host, the cached crawl shared with bench_build.py)
SITES = [
    ("/usr/share/doc/rust-doc/html", "doc.rust-lang.org", os.path.join(CACHE, "rust-doc.warc.gz")),
    ("/usr/share/doc/postgresql-doc-15/html", "www.postgresql.org", None),
]
# One crawl, as Common Crawl publishes its crawls (an assumption, not measured here): about 3 billion pages
# (CC-MAIN-2024-10: 3.16 billion; the 2024-2025 crawls: 2.3-3.2 billion) in about 90,000 WAT files, each
# WAT holding three records a page (the request's, the response's, the metadata's); a response is what we count.
CRAWL_PAGES = 3_000_000_000
CRAWL_WATS = 90_000
PEER_JOBS = {  # name: (script to run, its extra --py-files)
    "host": ("wat_extract_links.py", ()),
    "page": ("run_extract_links_page.py", ("wat_extract_links.py",)),
    "host-fastwarc": ("hostlinks_extract_fastwarc.py", ("wat_extract_links.py", "sparkcc_fastwarc.py")),
}
PAGE_DRIVER = "from wat_extract_links import ExtractLinksJob\n\nExtractLinksJob().run()\n"


@dataclass
class Corpus:
    """The WAT files and what they hold."""

    site: str
    host: str
    files: list[str]
    records: int  # every WAT record, warcinfo and requests too
    responses: int  # the metadata records of HTTP responses: what the rates count
    bytes: int


@dataclass
class Run:
    """One contender's run: wall seconds, its Spark jobs' and tasks' seconds (None off Spark), what it said."""

    name: str
    wall: float
    jobs: float | None
    tasks: float | None
    counted: dict = field(default_factory=dict)


def _members(warc: str) -> list[tuple[int, int, str]]:
    """Each record's (offset, length, WARC-Type) in a WARC.gz of one gzip member a record (wget's)."""
    from warcio.archiveiterator import ArchiveIterator

    found = []
    with open(warc, "rb") as handle:
        records = ArchiveIterator(handle)
        for record in records:
            kind = record.rec_type
            record.content_stream().read()
            found.append((records.get_record_offset(), records.get_record_length(), kind))
    return found


def _split(warc: str, parts: int, host: str, folder: str) -> list[tuple[str, int, int]]:
    """``warc`` cut into ``parts`` WARCs of consecutive records, of about the same bytes (each cut before a
    request: a request and its response stay together), their WARC-Target-URI on ``host``; returns (path,
    records, responses) of each."""
    members = _members(warc)
    total = sum(length for _, length, _ in members)
    cuts, seen = [0], 0
    for index, (_, length, kind) in enumerate(members):
        if len(cuts) < parts and seen >= total * len(cuts) / parts and kind == "request" and index > cuts[-1]:
            cuts.append(index)
        seen += length
    cuts.append(len(members))
    target = re.compile(rb"^(WARC-Target-URI: <?)https?://127\.0\.0\.1:\d+/", re.MULTILINE)  # wget writes <URI>
    made = []
    with open(warc, "rb") as source:
        for number, (start, end) in enumerate(zip(cuts, cuts[1:], strict=False)):
            path = os.path.join(folder, f"part-{number:05d}.warc.gz")
            with open(path, "wb") as sink:
                for offset, length, kind in members[start:end]:
                    source.seek(offset)
                    record = gzip.decompress(source.read(length))
                    head, sep, block = record.partition(b"\r\n\r\n")  # WARC headers: Content-Length counts the block
                    head, renamed = target.subn(rb"\1https://" + host.encode() + b"/", head)
                    if not renamed and kind in ("request", "response"):
                        raise RuntimeError(f"{warc}: a record at {offset} is not of 127.0.0.1")
                    sink.write(gzip.compress(head + sep + block, 6))
            kept = members[start:end]
            made.append((path, len(kept), sum(kind == "response" for _, _, kind in kept)))
    return made


def _wat_of(warc: str) -> str:
    from watgen import write_wat

    wat = warc.replace(".warc.gz", ".warc.wat.gz")
    write_wat(warc, wat + ".part.gz")  # a name ending in .gz: a gzip member a record, as Common Crawl's WATs
    os.replace(wat + ".part.gz", wat)
    os.unlink(warc)
    return wat


def _gzipped(path: str) -> bool:
    """Is the file gzip (a corpus made before the WATs were compressed is made again)?"""
    with open(path, "rb") as handle:
        return handle.read(2) == b"\x1f\x8b"


def make_corpus(work: str, files: int, site: str | None, host: str | None) -> Corpus:
    """The corpus of ``work`` (made there if missing): ``files`` WAT files of a doc site's crawl."""
    manifest = os.path.join(work, f"corpus-{files}.json")
    if os.path.exists(manifest):
        with open(manifest, encoding="utf-8") as handle:
            held = Corpus(**json.load(handle))
        if all(os.path.exists(path) and _gzipped(path) for path in held.files):
            return held
    choices = SITES
    if site is not None:
        choices = [entry for entry in SITES if entry[0] == site] or [(site, host or "docs.example.org", None)]
    docroot, public, cached = next((entry for entry in choices if os.path.isdir(entry[0])), (None, None, None))
    if docroot is None or public is None:
        sys.exit(f"no doc site to crawl: install rust-doc or postgresql-doc-15 (or give --site DIR); tried {choices}")
    public = host or public
    warc = cached or os.path.join(work, "crawl.warc.gz")
    if not os.path.exists(warc):
        print(f"crawling {docroot} into {warc} ...", flush=True)
        with serve(docroot) as url:
            seconds = crawl(url, warc + ".part.warc.gz")
        os.replace(warc + ".part.warc.gz", warc)
        print(f"crawled in {seconds:.0f} s", flush=True)
    folder = os.path.join(work, f"wat-{files}")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    started = time.perf_counter()
    parts = _split(warc, files, public, folder)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        wats = pool.map(_wat_of, [path for path, _, _ in parts])
    corpus = Corpus(
        site=docroot,
        host=public,
        files=wats,
        records=sum(records + 1 for _, records, _ in parts),  # + the warcinfo record write_wat puts first
        responses=sum(responses for _, _, responses in parts),
        bytes=sum(os.path.getsize(path) for path in wats),
    )
    print(f"corpus made in {time.perf_counter() - started:.0f} s", flush=True)
    with open(manifest, "w", encoding="utf-8") as handle:
        json.dump(asdict(corpus), handle)
    return corpus


def _passes(corpus: Corpus, passes: int, folder: str) -> Corpus:
    """The corpus named ``passes`` times over (symbolic links ``passN-NAME``): every contender reads each file
    once a pass, and its counts are the corpus's times ``passes``."""
    os.makedirs(folder)
    files = []
    for number in range(1, passes + 1):
        for path in corpus.files:
            link = os.path.join(folder, f"pass{number}-{os.path.basename(path)}")
            os.symlink(path, link)
            files.append(link)
    return replace(
        corpus,
        files=files,
        records=corpus.records * passes,
        responses=corpus.responses * passes,
        bytes=corpus.bytes * passes,
    )


def export_peer(source: str, into: str) -> str:
    """cc-pyspark's source exported into ``into`` (from a bare mirror: its HEAD); returns its commit."""
    git = ["git", f"--git-dir={source}"] if os.path.isfile(os.path.join(source, "HEAD")) else ["git", "-C", source]
    commit = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
    archive = subprocess.run(git + ["archive", "HEAD"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)
    with open(os.path.join(into, "run_extract_links_page.py"), "w", encoding="utf-8") as handle:
        handle.write(PAGE_DRIVER)
    return commit.stdout.strip()


def spark_env(folder: str, python: str = sys.executable) -> dict[str, str]:
    """The environment of a Spark run: ``python`` for the driver and workers, an event log in ``folder``."""
    conf = os.path.join(folder, "conf")
    os.makedirs(os.path.join(folder, "events"), exist_ok=True)
    os.makedirs(conf, exist_ok=True)
    with open(os.path.join(conf, "spark-defaults.conf"), "w", encoding="utf-8") as handle:
        handle.write(f"spark.eventLog.enabled true\nspark.eventLog.dir file://{folder}/events\n")
        handle.write("spark.eventLog.compress false\nspark.eventLog.rolling.enabled false\n")  # Spark 4's: zstd, rolled
        handle.write(f"spark.sql.warehouse.dir {folder}/warehouse\n")
    return {
        **os.environ,
        "PYSPARK_PYTHON": python,
        "PYSPARK_DRIVER_PYTHON": python,
        "SPARK_CONF_DIR": conf,
    }


def spark_seconds(folder: str) -> tuple[float | None, float | None]:
    """From the event logs in ``folder``/events: the first Spark job's submission to the last one's end, and the
    sum of the tasks' executor run times."""
    starts, ends, tasks = [], [], 0
    logs = [os.path.join(where, name) for where, _, names in os.walk(os.path.join(folder, "events")) for name in names]
    for path in logs:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if '"SparkListenerJob' in line or '"SparkListenerTaskEnd' in line:
                    event = json.loads(line)
                    if event["Event"] == "SparkListenerJobStart":
                        starts.append(event["Submission Time"])
                    elif event["Event"] == "SparkListenerJobEnd":
                        ends.append(event["Completion Time"])
                    elif event["Event"] == "SparkListenerTaskEnd":
                        tasks += event.get("Task Metrics", {}).get("Executor Run Time", 0)
    if not (starts and ends):
        return None, None
    return (max(ends) - min(starts)) / 1000, tasks / 1000


def timed(command: list[str], env: dict[str, str], cwd: str) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:4])} ... failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return seconds, result.stdout + result.stderr


def run_peer(job: str, corpus: Corpus, peer: str, python: str, cores: int, folder: str) -> Run:
    script, extra = PEER_JOBS[job]
    listing = os.path.join(folder, "input.txt")
    with open(listing, "w", encoding="utf-8") as handle:
        handle.write("".join(path + "\n" for path in corpus.files))
    import pyspark

    submit = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit")
    py_files = ",".join(os.path.join(peer, name) for name in ("sparkcc.py", "json_importer.py", *extra))
    command = [submit, "--master", f"local[{cores}]", "--py-files", py_files, os.path.join(peer, script)]
    command += ["--num_input_partitions", str(len(corpus.files)), listing, "links"]
    seconds, output = timed(command, spark_env(folder, python), folder)
    if os.environ.get("BENCH_EXTRACT_LOG"):
        with open(os.environ["BENCH_EXTRACT_LOG"], "a", encoding="utf-8") as handle:
            handle.write(output)
    counted = {
        key: int(number)
        for key, pattern in (
            ("records", r"WARC/WAT/WET records processed = (\d+)"),
            ("responses", r"response records = (\d+)"),
            ("links", r"non-unique link pairs = (\d+)"),
            ("failed", r"records failed to process = (\d+)"),
        )
        for number in re.findall(pattern, output)[-1:]
    }
    return Run(f"cc-pyspark {job}", seconds, *spark_seconds(folder), counted)


def run_ours(engine: str, corpus: Corpus, cores: int, folder: str) -> Run:
    command = [sys.executable, "-m", "rankstore", "extract", *corpus.files, "-o", os.path.join(folder, "out"), "-q"]
    command += ["--engine", "spark", "--master", f"local[{cores}]"] if engine == "spark" else ["-j", str(cores)]
    seconds, output = timed(command, {**spark_env(folder), "PYTHONPATH": ROOT}, folder)
    said = re.findall(r"([\d,]+) (file\(s\)|records|pages|links)", output.rpartition("extracted ")[2])
    counted = {kind.split("(")[0]: int(number.replace(",", "")) for number, kind in said}
    return Run(f"ours {engine}", seconds, *(spark_seconds(folder) if engine == "spark" else (None, None)), counted)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=os.path.join(CACHE, "bench-extract"), help="the corpus is kept here")
    parser.add_argument("--files", type=int, default=8, help="WAT files the crawl is cut into")
    parser.add_argument("--site", help="a docroot to crawl (default: rust-doc, else postgresql-doc-15)")
    parser.add_argument("--host", help="the public host the pages are named on (default: the site's)")
    parser.add_argument("--cc-pyspark", default=MIRROR, help="cc-pyspark: a checkout or a bare git mirror")
    parser.add_argument("--peer-job", default="host", help=f"comma-separated, of {', '.join(PEER_JOBS)}")
    parser.add_argument("--peer-python", default=sys.executable, help="the peer's Python (host-fastwarc: see above)")
    parser.add_argument("--engine", choices=("local", "spark", "both"), default="both", help="ours")
    parser.add_argument("--cores", type=int, default=2, help="local[N] and -j N")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clusters", default="64,256,1024", help="cluster sizes (cores) for the estimate")
    parser.add_argument(
        "--passes",
        type=int,
        default=1,
        help="the corpus read this many times over in one run (each file named again): a whole crawl's many "
        "files a core, where each process's start and first file weigh little",
    )
    args = parser.parse_args()
    peer_jobs = [job for job in args.peer_job.split(",") if job]
    if unknown := [job for job in peer_jobs if job not in PEER_JOBS]:
        parser.error(f"--peer-job {','.join(unknown)}: choose from {', '.join(PEER_JOBS)}")
    engines = ["spark", "local"] if args.engine == "both" else [args.engine]

    os.makedirs(args.work, exist_ok=True)
    corpus = make_corpus(args.work, args.files, args.site, args.host)
    print(
        f"corpus: {len(corpus.files)} WAT files of {corpus.site} (pages on {corpus.host}), "
        f"{corpus.bytes / 2**20:.1f} MiB: {corpus.records:,} WAT records, {corpus.responses:,} of responses (counted)"
    )
    scratch = tempfile.mkdtemp(prefix="bench-extract-", dir=args.work)
    if args.passes > 1:
        corpus = _passes(corpus, args.passes, os.path.join(scratch, "inputs"))
        print(f"read {args.passes} times over in each run: {len(corpus.files)} files, {corpus.responses:,} responses")
    peer = os.path.join(scratch, "cc-pyspark")
    os.makedirs(peer)
    commit = export_peer(args.cc_pyspark, peer)
    print(f"peer: cc-pyspark {commit} ({args.cc_pyspark}), jobs {', '.join(peer_jobs)}; ours: {', '.join(engines)}")

    contenders = [("peer", job) for job in peer_jobs] + [("ours", engine) for engine in engines]
    runs: dict[str, list[Run]] = {}
    try:
        for number in range(args.rounds):
            order = contenders if number % 2 == 0 else contenders[::-1]
            for side, what in order:
                folder = tempfile.mkdtemp(prefix=f"{side}-{what}-", dir=scratch)
                if side == "peer":
                    run = run_peer(what, corpus, peer, args.peer_python, args.cores, folder)
                else:
                    run = run_ours(what, corpus, args.cores, folder)
                shutil.rmtree(folder, ignore_errors=True)
                runs.setdefault(run.name, []).append(run)
                jobs = f", jobs {run.jobs:.1f} s, tasks {run.tasks:.1f} s" if run.jobs and run.tasks else ""
                print(f"  round {number + 1}: {run.name:<24} wall {run.wall:6.1f} s{jobs}  {run.counted}", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report(corpus, runs, args.cores, [int(size) for size in args.clusters.split(",")])


def _median(values: list[float | None]) -> float | None:
    kept = [value for value in values if value is not None]
    return statistics.median(kept) if kept else None


def report(corpus: Corpus, runs: dict[str, list[Run]], cores: int, clusters: list[int]) -> None:
    rate: dict[str, float] = {}  # responses a second a core: over the tasks' seconds where there are some
    medians: dict[str, tuple[float, float | None, float | None]] = {}
    print(f"\nmedians of {max(len(done) for done in runs.values())} rounds; rates in responses ({corpus.responses:,})")
    print("responses a second: over the wall time, and a core; over the jobs' time, and a core; over the tasks' time")
    heads = ("wall s", "jobs s", "tasks s", "wall", "a core", "jobs", "a core", "tasks")
    print(f"{'':<24}" + "".join(f" {head:>7}" for head in heads))
    for name, done in runs.items():
        wall, jobs, tasks = medians[name] = (
            statistics.median(run.wall for run in done),
            _median([run.jobs for run in done]),
            _median([run.tasks for run in done]),
        )
        rate[name] = corpus.responses / tasks if tasks else corpus.responses / wall / cores
        spark = f"{jobs:7.1f} {tasks:7.1f}" if jobs and tasks else f"{'-':>7} {'-':>7}"
        by_wall = corpus.responses / wall
        line = f"{name:<24} {wall:7.1f} {spark} {by_wall:7,.0f} {by_wall / cores:7,.0f}"
        if jobs and tasks:
            line += f" {corpus.responses / jobs:7,.0f} {corpus.responses / jobs / cores:7,.0f} {rate[name]:7,.0f}"
        print(line)
    for ours in (name for name in runs if name.startswith("ours")):
        for peer in (name for name in runs if name.startswith("cc-pyspark")):
            (their_wall, their_jobs, their_tasks), (wall, jobs, tasks) = medians[peer], medians[ours]
            said = f"{ours} / {peer}: {their_wall / wall:.2f}x its speed on wall time"
            if their_jobs and their_tasks and jobs and tasks:
                said += f", {their_jobs / jobs:.2f}x on the jobs' time, {their_tasks / tasks:.2f}x on the tasks'"
            print(said)
    per_wat = CRAWL_PAGES / CRAWL_WATS
    print(
        f"\nestimate for one crawl: {CRAWL_PAGES / 1e9:.0f} billion pages in {CRAWL_WATS:,} WAT files, "
        f"{per_wat:,.0f} responses a file\n(an assumption: Common Crawl's 2024-2025 crawls, 2.3-3.2 billion pages; "
        f"this corpus: {corpus.bytes / corpus.responses / 1024:.1f} KiB of WAT a response),\nfrom the rate a core "
        "(tasks' time where measured, else wall over the cores), scaled linearly, no download counted"
    )
    print(f"{'':<24} {'s a WAT':>8} {'core-hours':>10}" + "".join(f" {f'{size:,} cores':>12}" for size in clusters))
    for name, per_core in rate.items():
        core_hours = CRAWL_PAGES / per_core / 3600
        hours = "".join(f" {core_hours / size:10,.1f} h" for size in clusters)
        print(f"{name:<24} {per_wat / per_core:8,.1f} {core_hours:10,.0f}{hours}")


if __name__ == "__main__":
    main()
