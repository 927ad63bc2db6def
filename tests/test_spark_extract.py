"""``rankstore extract --engine spark``: the crawl files read on Spark's executors (local[2]) give what the
local engine gives and what ``build`` reads from the same files directly.

On the wget crawl of python3.11-doc, its WAT (tests/watgen.py) and Common Crawl's own sample files
(tests/data/whirlwind): the Parquet parts and the ledger are the local engine's, row for row; the store
built from the Spark extraction holds the pages and links of the store built from the WAT itself; a file
that cannot be read is named in the Spark run too, and the others go on.  The session is conftest's
``spark`` (one for the Spark files); the spark-submit job on a standalone cluster is in
test_spark_standalone.py.
"""

from __future__ import annotations

import os

import pytest

pytest.importorskip("pyspark")

from test_extraction import invoke, links_of, pages_of
from test_extraction import parquet_rows as rows
from watgen import write_wat

from rankstore.extraction import SparkOptions, extract
from rankstore.sources.extracted import read_ledger

WHIRLWIND = os.path.join(os.path.dirname(__file__), "data", "whirlwind")


@pytest.fixture(scope="module")
def files(python_doc_crawl, tmp_path_factory) -> list[str]:
    folder = tmp_path_factory.mktemp("spark-extract")
    wat = str(folder / "python-doc.warc.wat.gz")
    write_wat(python_doc_crawl.warc, wat)
    samples = [os.path.join(WHIRLWIND, name) for name in ("whirlwind.warc.gz", "whirlwind.warc.wat.gz")]
    return [python_doc_crawl.warc, wat, *samples]


def test_spark_extracts_what_the_local_engine_does_and_build_reads(spark, files, tmp_path):
    local, on_spark = str(tmp_path / "local"), str(tmp_path / "spark")
    bad = tmp_path / "bad.warc.gz"
    bad.write_bytes(b"not a crawl\n" * 10)
    said: list[str] = []
    report = extract([*files, str(bad)], on_spark, engine="spark", spark=SparkOptions(session=spark.spark),
                     said=said.append)  # fmt: skip
    assert [failed.file for failed in report.failed] == [str(bad)] and len(report.done) == len(files)
    assert said[-1].startswith(f"{len(files) + 1} of {len(files) + 1} files") and "1 failed" in said[-1]
    assert extract(files, local, jobs=2).links == report.links > 40_000
    for what in ("links", "pages"):
        assert rows(on_spark, what) == rows(local, what)
    assert read_ledger(on_spark) == read_ledger(local)
    # a second run on Spark skips every file done
    assert extract(files, on_spark, engine="spark", spark=SparkOptions(session=spark.spark)).already == files
    # the store built from Spark's extraction of the WAT is the store built from the WAT directly
    wat_only = str(tmp_path / "wat-spark")
    assert extract(files[1:2], wat_only, engine="spark", spark=SparkOptions(session=spark.spark)).links > 20_000
    from_parts, from_wat = built(wat_only, tmp_path / "parts.db"), built(files[1], tmp_path / "wat.db")
    assert links_of(from_parts) == links_of(from_wat) and pages_of(from_parts) == pages_of(from_wat)
    # Common Crawl's own sample WARC: its one page and its links, as build reads them
    sample = str(tmp_path / "sample")
    assert extract(files[2:3], sample, engine="spark", spark=SparkOptions(session=spark.spark)).links > 100
    from_sample, direct = built(sample, tmp_path / "sample.db"), built(files[2], tmp_path / "direct.db")
    assert links_of(from_sample) == links_of(direct) and pages_of(from_sample) == pages_of(direct)


def built(source: str, store) -> str:
    """A store built from ``source`` (which must build)."""
    result = invoke("build", source, "--store", str(store), "-q")
    assert result.exit_code == 0, result.output
    return str(store)


def test_a_master_that_is_not_there_is_one_line(python_doc_crawl, tmp_path):
    result = invoke("extract", python_doc_crawl.warc, "-o", str(tmp_path / "out"), "--engine", "spark",
                    "--master", "spark://127.0.0.1:9")  # fmt: skip
    assert result.exit_code == 1 and "Traceback" not in result.output and "127.0.0.1:9" in result.output
