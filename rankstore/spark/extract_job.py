"""``rankstore extract`` as a spark-submit job: crawl files read on a cluster's executors, into Parquet.

    spark-submit --master spark://head:7077 rankstore/spark/extract_job.py \
        CC-MAIN-2024-22/wat.paths.gz --limit 1000 --to-sites watched.txt --out /shared/watched

Its arguments are ``rankstore extract``'s (sources: paths, URLs, ``*.paths.gz``
listings; ``--out``, ``--to-site``, ``--to-sites``, ``--paths-base``,
``--limit``), and it does what ``rankstore extract --engine spark`` does, on
the session spark-submit made: each file a task on an executor, the ledger
kept by the driver, files done skipped when run again.  ``--out`` must be a
folder the driver and every executor see (a shared filesystem), and each
executor needs pagerank-proxy installed.  ``rankstore build OUT`` then loads it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    from rankstore.sources import DEFAULT_PATHS_BASE

    parser = argparse.ArgumentParser(prog="extract_job.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", nargs="+", help="WARC/WAT files: paths, URLs, *.paths.gz listings")
    parser.add_argument("--out", required=True, help="the output folder (shared by the driver and executors)")
    parser.add_argument("--to-site", dest="sites", action="append", default=[], help="keep the links into SITE")
    parser.add_argument("--to-sites", help="keep the links into the sites of FILE (one a line)")
    parser.add_argument("--paths-base", default=DEFAULT_PATHS_BASE, help="what a listing's paths resolve against")
    parser.add_argument("--limit", type=int, help="the first N files of each listing")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    from pyspark.sql import SparkSession

    from rankstore.extraction import ExtractError, SparkOptions, extract, read_sites

    args = _arguments(argv)
    session = SparkSession.builder.appName("rankstore extract").getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    try:
        sites = args.sites + (read_sites(args.to_sites) if args.to_sites else [])
        report = extract(
            args.sources, args.out, sites or None, engine="spark", paths_base=args.paths_base, limit=args.limit,
            spark=SparkOptions(session=session), said=lambda line: print(f"  {line}", file=sys.stderr, flush=True),
        )  # fmt: skip
    except ExtractError as error:
        print(f"Error: {error}", file=sys.stderr)
        return 1
    finally:
        session.stop()
    for failed in report.failed:
        print(f"Warning: {failed.file}: skipped: {failed.why}", file=sys.stderr)
    print(
        f"extracted {len(report.done):,} file(s) into {args.out}: {report.records:,} records, "
        f"{report.pages:,} pages, {report.links:,} links; {len(report.already):,} done before; "
        f"{len(report.failed):,} could not be read"
    )
    return 3 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
