"""Apache Spark: ``job`` (PageRank's iteration on DataFrames, a spark-submit entry point), ``engine``
(``rankstore rank --engine spark``: the store's problem to Spark and back), ``extract`` (``rankstore extract
--engine spark``: crawl files read on the executors) and ``extract_job`` (the same, for spark-submit)."""
