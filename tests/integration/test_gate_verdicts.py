"""The orders gate on real Spark rows: its verdicts, and Data Docs a person can read offline."""

import datetime as dt
import re
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StringType, StructField, StructType, TimestampType

from foodtaster.engine.gate.gate import BATCH_PAGE, load_suite, run_gate, suite_columns
from foodtaster.registry import get_dataset

SCHEMA = StructType([
    StructField("message_id", StringType()), StructField("created_at", TimestampType()),
    StructField("amount", DoubleType()),
])
BATCH_DATE = "2026-11-20"
ROWS = 2000


def valid_rows(spark, amount=lambda i: 5.0 + i % 400, message_id=lambda i: f"m-{i}"):
    noon = dt.datetime(2026, 11, 20, 12)
    return spark.createDataFrame(
        [(message_id(i), noon + dt.timedelta(seconds=i), amount(i)) for i in range(ROWS)], SCHEMA
    )


def gate(spark, rows, batch_id, docs=None):
    return run_gate(rows, get_dataset("orders").suite_path(), "orders", batch_id, BATCH_DATE,
                    data_docs_uri=str(docs) if docs else None)


def failed(result):
    return sorted((r["expectation"], r["column"]) for r in result["failed"])


@pytest.fixture(scope="module")
def good(spark, tmp_path_factory):
    docs = tmp_path_factory.mktemp("docs") / "data_docs"
    return gate(spark, valid_rows(spark), "20261120T0600-good", docs), docs


def test_a_good_batch_passes_every_expectation(good):
    result, _ = good
    assert result["passed"], result["failed"]
    assert len(result["results"]) == 4
    median = next(r for r in result["results"] if r["column"] == "amount")["observed"]
    assert 200 <= median["values"][0] <= 210  # 5 + (0..399): the true median is 204.5


def test_the_gate_leaves_the_rows_it_validated_uncached(spark):
    """GX would cache the rows it validates and keep them cached: a process that runs batch
    after batch would hold them all, and a later read of the same path would get the cache."""
    rows = valid_rows(spark)
    columns = suite_columns(load_suite(get_dataset("orders").suite_path()))
    assert gate(spark, rows, "uncached")["passed"]
    level = rows.select(*columns).storageLevel  # what the cache holds for the gate's frame
    assert not (level.useMemory or level.useDisk), level


def test_a_repeated_message_id_fails_the_gate(spark, caplog):
    caplog.set_level("INFO", logger="foodtaster")
    result = gate(spark, valid_rows(spark, message_id=lambda i: f"m-{min(i, ROWS - 2)}"), "dup")
    assert not result["passed"]
    assert failed(result) == [("expect_column_proportion_of_unique_values_to_be_between", "message_id")]
    [line] = [r.getMessage() for r in caplog.records if "event=gate" in r.getMessage()]
    assert line.startswith("dataset=orders batch=dup ") and "passed=False" in line
    assert "failed=expect_column_proportion_of_unique_values_to_be_between(message_id)" in line


@pytest.mark.parametrize("amount", [0.5, 20_000.0], ids=["median-too-low", "median-too-high"])
def test_a_median_out_of_bounds_fails_the_gate(spark, amount):
    # Most rows carry the off amount, a few a normal one: the median is the off amount.
    rows = valid_rows(spark, amount=lambda i: amount if i % 10 else 50.0)
    result = gate(spark, rows, "median")
    assert not result["passed"]
    assert failed(result) == [("expect_column_quantile_values_to_be_between_within_error", "amount")]


REMOTE = re.compile(r"<(?:link|script|img)\b[^>]*(?:href|src)\s*=\s*[\"']https?://|url\(\s*[\"']?https?://",
                    re.IGNORECASE)


def text_of(page: Path) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8")).split())


def test_data_docs_load_nothing_from_the_network(good):
    result, docs = good
    assert result["data_docs"] == f"{docs}/{BATCH_PAGE}"
    pages = [*docs.rglob("*.html"), *docs.rglob("*.css")]
    assert len(pages) >= 4  # the batch page, GX's index, suite and validation pages, GX's stylesheet
    assert [str(p) for p in pages if REMOTE.search(p.read_text(encoding="utf-8"))] == []


def test_the_batch_page_and_gx_name_the_batch_and_the_dataset(good):
    _, docs = good
    page = text_of(docs / BATCH_PAGE)
    assert "orders" in page and "20261120T0600-good" in page and "passed" in page
    assert "median order amount" in page  # the suite's `why`, next to each verdict
    [validation] = docs.glob("validations/orders/*/*/*.html")
    assert validation.parts[-3] == "20261120T0600-good"  # GX's run name is the batch id
    gx_page = text_of(validation)
    assert "Run Name 20261120T0600-good" in gx_page
    assert "Data asset: orders" in gx_page
    assert "__none__" not in gx_page
    assert f'href="{validation.relative_to(docs).as_posix()}"' in (docs / BATCH_PAGE).read_text()


def test_an_expectation_gx_cannot_compute_fails_with_its_reason(spark, tmp_path):
    rows = valid_rows(spark).withColumn("created_at", F.col("created_at").cast("string"))
    result = gate(spark, rows, "text-times", tmp_path / "docs")
    [failure] = result["failed"]
    assert failure["column"] == "created_at" and "StringType" in failure["error"]
    page = text_of(tmp_path / "docs" / BATCH_PAGE)
    assert "error: ColumnValuesBetween metrics cannot be computed" in page
    assert '"min_value": "2026-11-19 00:00:00"' in page.replace("&quot;", '"')  # the batch's window, resolved
