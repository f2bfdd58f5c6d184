"""The peer: Databricks Labs DQX doing the contract's rules, as a DQX user would, on a local Spark.

    bench/.venv-dqx/bin/python bench/bench_dqx.py --input DIR --out DIR --dataset orders|order_events

Runs in its own virtual environment (`make bench-dqx-venv`: bench/dqx/requirements.txt with
bench/dqx/constraints.txt), never the project's: DQX pins its own dependencies, and this script
imports nothing from the project, so the project's contracts are restated here as DQX checks.

What it does, end to end, timed inside this process from before the session starts:

1. a local SparkSession (`--master`, `--driver-memory`, the UTC zone, adaptive execution and 8
   shuffle partitions, as the project's job);
2. `spark.read.text(DIR)` and `from_json` with the message's schema: lenient (PERMISSIVE), as DQX
   users parse: a line that is not JSON, or a value of the wrong type, reads as nulls, which the
   not-null checks then catch. No lineage, raw bytes, element paths, unknown-field map or gate;
3. `DQEngineCore.apply_checks_by_metadata_and_split` with the checks below, all `error`;
4. the valid rows and the quarantined rows (with DQX's `_errors`/`_warnings`) written as Parquet
   to `OUT/valid` and `OUT/quarantine`, one write each, as DQX's documentation splits and saves.

The rules, one DQX check for each pandera rule where DQX has one (contracts/orders.py and
contracts/order_events.py):

- a required field: `is_not_null` (`is_not_null_and_not_empty` for `str_length min 1`,
  `is_not_null_and_is_in_list` for `isin`); `str_matches` / `str_startswith`: `regex_match`;
  `ge`/`le`: `is_in_range` / `is_not_less_than`; `unique=True`: `is_unique` (every copy of a
  repeated id is flagged: DQX has no "drop a redelivery");
- `iso_timestamp`: `is_valid_timestamp`; `pa.Date`: `is_valid_date` with `yyyy-MM-dd`;
- the orders contract's conditional rule (status PAID/SHIPPED/DELIVERED needs amount > 0):
  `sql_expression`;
- the optional shipping address: its three fields' checks with a `filter` (judged only when the
  address is there);
- arrays: `is_not_null_and_not_empty_array` and `sql_expression` on `size(...)` for the length
  bounds; DQX has no element checks, so each element rule is an `sql_expression` with `forall`
  (which element failed is not named);
- not restated: the customer reference (the project's retried cross-dataset rule; DQX's
  `foreign_key` needs the reference table loaded) and the strict JSON types (a lenient parse
  cannot tell `2.0` from `2`, nor a decimal that does not fit from one rounded).

DQX has no constructor without a Databricks workspace: `DQEngineBase` checks the
`WorkspaceClient` it is given by calling `clusters.select_spark_version()`, and the engine sends
best-effort telemetry through it. `DQEngineCore` uses the client for nothing else, so this script
hands it `OFFLINE`, a stand-in with no network that answers that one call and fails the
telemetry, which DQX swallows by design (`telemetry.log_telemetry`). The checks, the split and
the writes are DQX's and Spark's own.

Prints the counts (messages, valid, quarantined) and the seconds as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from types import SimpleNamespace

STARTED = time.perf_counter()

CURRENCIES = ["USD", "EUR", "GBP", "JPY", "CHF"]
STATUSES = ["CREATED", "PAID", "SHIPPED", "DELIVERED", "CANCELLED"]
EVENT_TYPES = ["com.shop.order.created", "com.shop.order.paid", "com.shop.order.shipped"]
COUNTRIES = ["US", "DE", "FR", "GB", "JP", "CH"]
ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
ORDERS_SCHEMA = (
    "message_id string, order_id string, customer_id string, amount double, currency string, "
    "status string, created_at string, items bigint, producer string"
)
ORDER_EVENTS_SCHEMA = (
    "id string, source string, specversion string, type string, time string, "
    "data struct<order_id: string, "
    "customer: struct<id: string, email: string, "
    "address: struct<street: string, zip: string, country: string>>, "
    "lines: array<struct<sku: string, qty: bigint, price: decimal(10,2)>>, tags: array<string>, "
    "total: decimal(12,2), delivery_date: string>"
)

# A WorkspaceClient's stand-in with no workspace behind it (see the module's docstring): what
# `DQEngineBase._verify_workspace_client` reads and calls, nothing more.
OFFLINE = SimpleNamespace(
    config=SimpleNamespace(_product_info=None),
    clusters=SimpleNamespace(select_spark_version=lambda *args, **kwargs: None),
)


def literals(values: list[str]) -> list[str]:
    """DQX reads a bare string in `allowed` as a column expression: a literal is quoted."""
    return [f"'{value}'" for value in values]


def check(function: str, filter_: str | None = None, **arguments: object) -> dict:
    spec: dict = {"criticality": "error", "check": {"function": function, "arguments": arguments}}
    if filter_:
        spec["filter"] = filter_
    return spec


def orders_checks() -> list[dict]:
    return [
        check("is_not_null", column="message_id"),
        check("regex_match", column="message_id", regex=ID_PATTERN),
        check("is_unique", columns=["message_id"]),
        check("is_not_null_and_not_empty", column="order_id"),
        check("is_not_null_and_not_empty", column="customer_id"),
        check("is_not_null", column="amount"),
        check("is_in_range", column="amount", min_limit=0, max_limit=1_000_000),
        check("is_not_null_and_is_in_list", column="currency", allowed=literals(CURRENCIES)),
        check("is_not_null_and_is_in_list", column="status", allowed=literals(STATUSES)),
        check("is_not_null", column="created_at"),
        check("is_valid_timestamp", column="created_at"),
        check("is_not_null", column="items"),
        check("is_in_range", column="items", min_limit=1, max_limit=1000),
        check("sql_expression", name="paid_amount_positive",
              expression="status NOT IN ('PAID', 'SHIPPED', 'DELIVERED') OR amount > 0"),
    ]


def order_events_checks() -> list[dict]:
    address = "data.customer.address IS NOT NULL"
    return [
        check("is_not_null", column="id"),
        check("regex_match", column="id", regex=ID_PATTERN),
        check("is_unique", columns=["id"]),
        check("is_not_null", column="source"),
        check("regex_match", column="source", regex="^/shop/"),
        check("is_not_null_and_is_in_list", column="specversion", allowed=literals(["1.0"])),
        check("is_not_null_and_is_in_list", column="type", allowed=literals(EVENT_TYPES)),
        check("is_not_null", column="time"),
        check("is_valid_timestamp", column="time"),
        check("is_not_null_and_not_empty", column="data.order_id"),
        check("is_not_null", column="data.customer.id"),
        check("regex_match", column="data.customer.id", regex="^c-[0-9]{5}$"),
        check("is_not_null", column="data.customer.email"),
        check("regex_match", column="data.customer.email", regex=r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$"),
        check("is_not_null_and_not_empty", address, column="data.customer.address.street"),
        check("is_not_null", address, column="data.customer.address.zip"),
        check("regex_match", address, column="data.customer.address.zip", regex="^[0-9A-Z -]{3,10}$"),
        check("is_not_null_and_is_in_list", address, column="data.customer.address.country",
              allowed=literals(COUNTRIES)),
        check("is_not_null_and_not_empty_array", column="data.lines"),
        check("sql_expression", name="lines_at_most_100", expression="size(data.lines) <= 100"),
        check("sql_expression", name="lines_sku",
              expression="forall(data.lines, l -> l.sku IS NOT NULL AND l.sku RLIKE '^SKU-[0-9]{5}$')"),
        check("sql_expression", name="lines_qty",
              expression="forall(data.lines, l -> l.qty IS NOT NULL AND l.qty BETWEEN 1 AND 1000)"),
        check("sql_expression", name="lines_price",
              expression="forall(data.lines, l -> l.price IS NOT NULL AND l.price >= 0)"),
        check("sql_expression", name="tags_at_most_10",
              expression="data.tags IS NULL OR size(data.tags) <= 10"),
        check("sql_expression", name="tags_value", expression=(
            "data.tags IS NULL OR forall(data.tags, t -> t IS NOT NULL AND length(t) BETWEEN 1 AND 32)")),
        check("is_not_null", column="data.total"),
        check("is_not_less_than", column="data.total", limit=0),
        check("is_valid_date", column="data.delivery_date", date_format="yyyy-MM-dd"),
    ]


DATASETS = {
    "orders": (ORDERS_SCHEMA, orders_checks), "order_events": (ORDER_EVENTS_SCHEMA, order_events_checks),
}


def build_spark(master: str, driver_memory: str):  # noqa: ANN201  pyspark is this venv's
    submit = os.environ.get("PYSPARK_SUBMIT_ARGS", "pyspark-shell")
    if "--driver-memory" not in submit:
        os.environ["PYSPARK_SUBMIT_ARGS"] = f"--driver-memory {driver_memory} {submit}"
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable  # this venv's
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.appName("dqx-bench").master(master)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    return spark


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="a folder of JSON lines (.jsonl, .jsonl.gz)")
    parser.add_argument("--out", required=True, help="valid/ and quarantine/ are written here")
    parser.add_argument("--dataset", required=True, choices=sorted(DATASETS))
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="6g")
    args = parser.parse_args(argv)

    spark = build_spark(args.master, args.driver_memory)
    from databricks.labs.dqx.__version__ import __version__ as dqx_version
    from databricks.labs.dqx.engine import DQEngineCore
    from pyspark.sql import functions as F

    schema, checks = DATASETS[args.dataset]
    messages = spark.read.text(args.input).select(F.from_json("value", schema).alias("m")).select("m.*")
    engine = DQEngineCore(OFFLINE, spark)  # type: ignore[arg-type]  see the docstring
    valid, quarantine = engine.apply_checks_by_metadata_and_split(messages, checks())
    valid.write.mode("overwrite").parquet(os.path.join(args.out, "valid"))
    quarantine.write.mode("overwrite").parquet(os.path.join(args.out, "quarantine"))
    seconds = time.perf_counter() - STARTED

    n_valid = spark.read.parquet(os.path.join(args.out, "valid")).count()
    n_quarantined = spark.read.parquet(os.path.join(args.out, "quarantine")).count()
    print(json.dumps({
        "peer": "dqx", "dqx": dqx_version, "spark": spark.version, "dataset": args.dataset,
        "valid": n_valid, "quarantined": n_quarantined, "messages": n_valid + n_quarantined,
        "seconds": round(seconds, 2),
    }), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
