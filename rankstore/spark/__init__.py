"""PageRank on Apache Spark: ``job`` (the iteration on DataFrames, a spark-submit entry point) and
``engine`` (``rankstore rank --engine spark``: the store's problem to Spark and back)."""
