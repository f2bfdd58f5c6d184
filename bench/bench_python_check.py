"""A custom Python check on Spark: pandas UDF against mapInArrow, on 500k rows (issue 10).

Rows shaped like the one pass's (a message's ~250 bytes of `_raw`, its typed fields); the
check is OrdersChecked's `decimal_places(2)` on `amount`, run through pandera's own Check
either way. The pandas UDF ships the one column (and the judged flag) to Python and back a
boolean; mapInArrow ships every column of the row there and back. Best of `--repeat`, warm.

    PYTHONPATH=. .venv/bin/python bench/bench_python_check.py [--rows 500000]
"""

from __future__ import annotations

import argparse
import time

import pyarrow as pa
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, StructField, StructType

from foodtaster.contract import read_contract
from foodtaster.contract.path import Path
from foodtaster.engine.judging import layers
from foodtaster.engine.judging.python_checks import python_check_verdicts, with_python_checks
from foodtaster.engine.spark import build_session
from foodtaster_dev.contracts.checked import OrdersChecked


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    spark = build_session("bench-python-check", master="local[2]")
    contract = read_contract(OrdersChecked)
    (check,) = contract.python_checks
    amount = layers.value_column(Path.of("amount"))
    raw = F.concat(F.lit('{"message_id": "m-'), F.col("id").cast("string"),
                   F.lit('", "order_id": "o-1", "customer_id": "c-1", "currency": "EUR", "status": "PAID", '
                         '"created_at": "2026-11-20T10:00:00Z", "items": 3, "producer": "checkout-svc", '
                         '"amount": '), F.col("id").cast("string"), F.lit("}")).cast("binary")
    rows = spark.range(args.rows, numPartitions=4).select(
        raw.alias("_raw"), F.lit("file:/batch/part-0.jsonl").alias("_source_file"),
        F.col("id").alias("_row_id"), (F.col("id") % 100_000 / F.lit(1000.0)).alias(amount),
        F.lit(0).alias(layers.status_column(Path.of("amount"))),
        F.lit(3).cast("long").alias(layers.value_column(Path.of("items"))),
    ).localCheckpoint(eager=True)
    verdict_column = layers.python_check_column(check)

    def pandas_udf() -> int:
        return with_python_checks(rows, contract).agg(F.count_if(~F.col(verdict_column))).first()[0]

    schema = StructType([*rows.schema.fields, StructField(verdict_column, BooleanType(), True)])

    def judge_batches(batches):
        for batch in batches:
            frame = batch.to_pandas()
            verdicts = python_check_verdicts(check, frame[amount].fillna(0.0), frame[amount].notna())
            yield pa.RecordBatch.from_arrays([*batch.columns, pa.array(verdicts, pa.bool_())],
                                             schema=batch.schema.append(pa.field(verdict_column, pa.bool_())))

    def map_in_arrow() -> int:
        return rows.mapInArrow(judge_batches, schema).agg(F.count_if(~F.col(verdict_column))).first()[0]

    results = {}
    for name, run in (("pandas_udf", pandas_udf), ("mapInArrow", map_in_arrow)):
        failed = run()  # warm
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            assert run() == failed
            times.append(time.perf_counter() - started)
        results[name] = (min(times), failed)
    for name, (seconds, failed) in results.items():
        print(f"{name:11s} {args.rows:,} rows: {seconds:.2f} s best of {args.repeat} "
              f"({failed:,} fail the check)")
    spark.stop()


if __name__ == "__main__":
    main()
