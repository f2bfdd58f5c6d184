"""The job on a generated batch with every kind of poison, held to the invariants (messages =
valid + quarantined + duplicates dropped; every valid row passes pandera; every quarantined row
keeps its exact bytes, file and line: README, "How a message is judged") and to the generator's
answer for every line."""

from __future__ import annotations

import dataclasses
import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from support.frames import batch_frame
from support.lake import batch_rows

from contracts.orders import Orders
from foodtaster.contract import read_contract
from foodtaster.engine.batch.accounting import quarantine_counts
from foodtaster.engine.batch.job import BatchRun
from foodtaster.engine.judging.reasons import LAYERS, REASONS
from foodtaster.engine.run import run_batch
from foodtaster.registry import get_dataset
from foodtaster.sources.lines import LINE_HEAD_BYTES
from foodtaster.state.lake import Lake
from foodtaster.state.tables import QUARANTINE, VALID, DatasetTables, audit_branch
from foodtaster_dev import sample
from foodtaster_dev.oracle import failed_rules

MAX_BYTES = 4096
# What a poison kind must be quarantined for (at least this rule among its reasons).
EXPECTED_RULE = {
    "invalid_utf8": "line.not_utf8", "nul_byte": "line.nul_byte", "oversized": "line.too_large",
    "empty_line": "line.empty", "truncated_json": "json.invalid", "single_quotes": "json.invalid",
    "nan": "json.invalid", "trailing_comma": "json.invalid", "top_level_array": "json.not_object",
    "concatenated": "json.invalid", "wrong_type_amount": "amount.type(number)",
    "float_items": "items.type(integer)", "bad_timestamp": "created_at.iso_timestamp",
    "cross_field": "amount.greater_than(0).when(status in (PAID,SHIPPED,DELIVERED))",
    "conflicting_duplicate": "message_id.conflicting_duplicate", "html_payload": "currency.isin",
    "edge_number": ("amount.out_of_range", "items.out_of_range"),
}


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    inbox = tmp_path_factory.mktemp("inbox")
    generated = sample.generate_batch(
        inbox, messages=900, seed=11, poison_rate=0.2, files=3, gzip_files=1,
        max_message_bytes=MAX_BYTES,
    )
    return inbox, generated


@pytest.fixture(scope="module")
def tasted_with_plans(spark, batch, tmp_path_factory):
    """The batch run once, and the physical plan of each Spark SQL execution it ran."""
    inbox, _ = batch
    lake = Lake(str(tmp_path_factory.mktemp("lake")))
    config = dataclasses.replace(get_dataset("orders"), max_message_bytes=MAX_BYTES)
    run = BatchRun(config=config, input_path=str(inbox), lake=lake, batch_id="b1",
                   batch_date="2026-11-20", publish=True)
    before = _last_execution(spark)
    summary = run_batch(spark, run).to_json()
    return run, summary, _plans_after(spark, before)


@pytest.fixture(scope="module")
def tasted(tasted_with_plans):
    run, summary, _ = tasted_with_plans
    return run, summary


def _executions(spark):
    """The Spark SQL executions the session remembers, by id (a Scala sequence: few Py4J calls)."""
    return spark._jsparkSession.sharedState().statusStore().executionsList()


def _last_execution(spark) -> int:
    listed = _executions(spark)
    return listed.last().executionId() if listed.nonEmpty() else -1


def _plans_after(spark, after: int) -> list[str]:
    """The physical plan of each Spark SQL execution after execution `after`, oldest first."""
    listed = _executions(spark)
    later = []
    for i in reversed(range(listed.size())):  # newest first: stop at the first one seen before
        execution = listed.apply(i)
        if execution.executionId() <= after:
            break
        later.append(execution.physicalPlanDescription())
    return later[::-1]


def _file_lines(path: Path) -> list[bytes]:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).splitlines()


def _outputs(spark, run):
    lake, name = run.lake, run.config.name
    return batch_frame(spark, lake, name, VALID, run.batch_id), batch_frame(spark, lake, name, QUARANTINE,
                                                                             run.batch_id)


def _keyed(frame):
    return frame.withColumn("file", F.element_at(F.split("_source_file", "/"), -1))


def test_nothing_is_lost_and_every_line_lands_where_the_truth_says(spark, batch, tasted):
    _, generated = batch
    run, summary = tasted
    valid, quarantine = _outputs(spark, run)
    truth = {(t.file, t.line): t for t in generated.truth}

    assert summary["messages"] == generated.messages == len(truth)
    assert summary["messages"] == summary["valid"] + summary["quarantined"] + summary["duplicates_dropped"]
    assert (valid.count(), quarantine.count()) == (summary["valid"], summary["quarantined"])
    assert summary["duplicates_dropped"] == generated.counts()["duplicate_dropped"] > 0

    placed = {(r.file, r._line_number): "valid" for r in _keyed(valid).collect()}
    placed |= {(r.file, r._line_number): "quarantined" for r in _keyed(quarantine).collect()}
    wrong = {k: (truth[k].kind, placed.get(k, "duplicate_dropped")) for k in truth
             if placed.get(k, "duplicate_dropped") != truth[k].expected}
    assert wrong == {}


def test_nothing_is_let_through(spark, batch, tasted):
    inbox, _ = batch
    run, _ = tasted
    valid, _ = _outputs(spark, run)
    contract = read_contract(Orders)
    files = {p.name: _file_lines(p) for p in Path(inbox).iterdir()}
    for row in _keyed(valid).select("file", "_line_number").collect():
        message = json.loads(files[row.file][row._line_number - 1])
        assert failed_rules(message, Orders, contract) == set(), message


def test_guard_every_written_valid_row_passes_pandera_with_no_null_or_infinity(spark, tasted):
    """Issue 9's guard: the valid Parquet itself, re-checked with pandera's pandas backend, holds
    no null in a non-nullable field, no infinity, and no value outside its declared checks."""
    import numpy as np

    run, summary = tasted
    frame = batch_rows(run.lake, "orders", VALID, run.batch_id).to_pandas()
    assert len(frame) == summary["valid"] > 0
    schema = Orders.to_schema()
    for name, column in schema.columns.items():
        if not column.nullable:
            assert frame[name].notna().all(), name
    assert np.isfinite(frame["amount"]).all()
    frame["created_at"] = frame["created_at"].dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    Orders.validate(frame[list(schema.columns)], lazy=True)


def test_quarantine_keeps_raw_bytes_lineage_and_reasons(spark, batch, tasted):
    inbox, generated = batch
    run, summary = tasted
    _, quarantine = _outputs(spark, run)
    files = {p.name: _file_lines(p) for p in Path(inbox).iterdir()}
    kinds = {(t.file, t.line): t.kind for t in generated.truth}
    seen_kinds = set()
    for row in _keyed(quarantine).collect():
        line, raw = files[row.file][row._line_number - 1], bytes(row._raw)
        # A line too long to read keeps its first bytes, as landing recorded it (a hand run's
        # folder is landed too); the whole line is in raw/.
        too_large = "line.too_large" in {r.rule for r in row.reasons}
        assert raw == line or (too_large and raw == line[:LINE_HEAD_BYTES])
        assert row._batch_id == "b1" and row._ingested_at is not None
        assert row.reasons and all(r.layer in LAYERS and r.rule and r.message for r in row.reasons)
        kind = kinds[(row.file, row._line_number)]
        seen_kinds.add(kind)
        if kind in EXPECTED_RULE:
            expected = EXPECTED_RULE[kind]
            options = expected if isinstance(expected, tuple) else (expected,)
            assert set(options) & {r.rule for r in row.reasons}, (kind, row.reasons)
    assert set(EXPECTED_RULE) <= seen_kinds
    multi = [r for r in quarantine.collect() if len(r.reasons) >= 4]
    assert multi, "a message failing several rules lists every one"
    assert sum(summary["reasons"].values()) >= summary["quarantined"]


def test_valid_rows_are_typed_with_lineage(spark, tasted):
    run, _ = tasted
    valid, _ = _outputs(spark, run)
    types = dict(valid.dtypes)
    assert types["amount"] == "double" and types["items"] == "bigint"
    assert types["created_at"] == "timestamp" and types["_line_number"] == "bigint"
    assert set(types) >= {"_batch_id", "_source_file", "_line_number", "_ingested_at"}
    assert "_raw" not in types and "reasons" not in types


def test_summary_gate_and_data_docs(tasted):
    run, summary = tasted
    assert summary["gate"]["suite"] == "orders"
    assert {r["expectation"] for r in summary["gate"]["results"]} >= {
        "expect_table_row_count_to_be_between", "expect_column_quantile_values_to_be_between_within_error"}
    assert Path(summary["paths"]["data_docs"]).is_file()
    assert 0 < summary["quarantine_rate"] < 1
    assert summary["samples"] and all("raw" in s and s["reasons"] for s in summary["samples"])
    on_disk = json.loads(Path(run.lake.summary("orders", "b1")).read_text())
    assert on_disk["messages"] == summary["messages"]


def _snapshot(frame):
    return sorted(json.dumps(r.asDict(recursive=True), default=str, sort_keys=True) for r in frame.collect())


def test_rerunning_the_batch_rewrites_identical_partitions(spark, tasted):
    run, first = tasted
    before = [_snapshot(f) for f in _outputs(spark, run)]
    again = run_batch(spark, run).to_json()
    after = [_snapshot(f) for f in _outputs(spark, run)]
    assert before == after
    keys = ("messages", "valid", "quarantined", "duplicates_dropped", "reasons")
    assert {k: again[k] for k in keys} == {k: first[k] for k in keys}


def test_a_batch_of_only_poison_finishes_and_is_held(spark, tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "bad.jsonl").write_bytes(b"{'a': 1}\n\xff\xfe\n[1]\n{\"amount\": \"x\"}\n")
    lake = Lake(str(tmp_path / "lake"))
    run = BatchRun(config=get_dataset("orders"), input_path=str(inbox), lake=lake, batch_id="bad",
                   batch_date="2026-11-20", publish=True)
    summary = run_batch(spark, run).to_json()
    assert (summary["messages"], summary["valid"], summary["quarantined"]) == (4, 0, 4)
    assert summary["gate"]["passed"] is False and summary["published"] is False
    tables = DatasetTables(lake, "orders")
    assert tables.batch(VALID, "bad") is None  # main never held it
    assert audit_branch("bad") in tables.table(VALID).metadata.refs  # its (empty) audit waits


def _persisted_rdds(spark) -> int:
    return spark.sparkContext._jsc.getPersistentRDDs().size()


def test_a_batch_that_disagrees_with_its_manifest_fails_before_writing_and_frees_what_it_kept(
    spark, tmp_path
):
    """The flagged rows and the split offsets are kept by then: they must not outlive the run.
    Nothing of the batch is written."""
    inbox = tmp_path / "inbox"
    generated = sample.generate_batch(inbox, messages=30, seed=3, poison_rate=0.2, files=1, gzip_files=0)
    (inbox / "_manifest.json").write_text(json.dumps(
        {"files": [{"name": Path(generated.files[0]).name, "lines": 999}]}
    ))
    before = _persisted_rdds(spark)
    lake = tmp_path / "lake"
    run = BatchRun(config=get_dataset("orders"), input_path=str(inbox), lake=Lake(str(lake)),
                   batch_id="short", batch_date="2026-11-20")
    with pytest.raises(RuntimeError, match="orders batch short: the manifest lists 999 lines but 30"):
        run_batch(spark, run)
    assert _persisted_rdds(spark) == before
    assert not lake.exists() or not any(path.is_file() for path in lake.rglob("*"))


@pytest.mark.parametrize("with_good_file", [True, False])
def test_a_file_that_cannot_be_read_is_one_quarantined_message(spark, tmp_path, with_good_file):
    from foodtaster.sources.inbox import land_batch

    lake = Lake(str(tmp_path / "lake"))
    inbox = Path(lake.inbox("orders", "2026-11-20"))
    inbox.mkdir(parents=True)
    corrupt = b"\x1f\x8b\x08\x00not really gzip at all"
    (inbox / "broken.jsonl.gz").write_bytes(corrupt)
    if with_good_file:
        sample.generate_batch(inbox, messages=40, seed=5, poison_rate=0.0, kinds=[], files=1, gzip_files=0)
    landed = land_batch(lake, "orders", "2026-11-20")
    assert [u["name"] for u in landed.unreadable] == ["broken.jsonl.gz"]

    summary = run_batch(spark, BatchRun(config=get_dataset("orders"), input_path=landed.raw_path, lake=lake,
                                        batch_id=landed.batch_id, batch_date="2026-11-20")).to_json()
    good = 40 if with_good_file else 0
    assert (summary["messages"], summary["valid"], summary["quarantined"]) == (good + 1, good, 1)
    assert summary["reasons"] == {"file.unreadable": 1}
    row = batch_frame(spark, lake, "orders", QUARANTINE, landed.batch_id).collect()[0]
    assert bytes(row._raw) == corrupt and row._line_number is None
    assert row._source_file.endswith("broken.jsonl.gz") and "gzip" in row.reasons[0].message


def test_the_jvm_compiles_the_large_validation_method(spark):
    """The flag pass compiles to a method over HotSpot's 8000-byte JIT limit; without this
    option it runs interpreted (bench: 1.7x slower). build_session must pass it to the JVM."""
    from foodtaster.engine.spark import JVM_OPTIONS

    runtime = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    assert JVM_OPTIONS in list(runtime.getInputArguments())


def test_columns_are_built_without_sending_their_python_call_sites(spark):
    """PySpark sends every Column function's call site to the JVM unless told not to: seven Py4J
    calls an operation, most of those that build a contract's checks. build_session turns it off."""
    from pyspark.errors.utils import is_debugging_enabled

    from foodtaster.engine.spark import PYTHON_CALL_SITES

    assert spark.conf.get(PYTHON_CALL_SITES) == "false"
    assert not is_debugging_enabled()


def test_a_small_broadcast_table_takes_a_small_page_of_the_heap(spark):
    """Each small table the job broadcasts on a string key (split offsets, repeated keys, held
    groups) holds one memory page of the driver's heap in local mode; build_session sets the
    page small (Spark's default was 64 MiB here)."""
    from pyspark.sql import functions as F

    from foodtaster.engine.spark import PAGE_SIZE

    memory = spark.sparkContext._jsc.sc().env().memoryManager()
    assert memory.pageSizeBytes() == int(PAGE_SIZE.rstrip("m")) * 2**20
    rows = spark.range(1000).select(F.col("id").cast("string").alias("key"))
    small = spark.createDataFrame([(str(i), 1) for i in range(10)], "key string, hit int")
    before = memory.storageMemoryUsed()
    joined = rows.join(F.broadcast(small), "key", "left").agg(F.sum("hit")).first()[0]
    assert joined == 10
    assert memory.storageMemoryUsed() - before <= 2 * memory.pageSizeBytes()


def test_without_a_manifest_the_batch_landed_when_its_newest_file_was_written(spark, batch, tasted):
    inbox, _ = batch
    run, summary = tasted
    assert not (Path(inbox) / "_manifest.json").exists()
    newest = max(int(p.stat().st_mtime) for p in Path(inbox).iterdir())
    landed = datetime.fromtimestamp(newest, UTC)
    assert summary["ingested_at"] == landed.isoformat()
    valid, quarantine = _outputs(spark, run)
    for rows in (valid, quarantine):
        times = {r[0] for r in rows.select(F.unix_timestamp("_ingested_at")).distinct().collect()}
        assert times == {newest}


def test_quarantine_counts_count_each_row_once_and_each_rule_once_a_row(spark):
    def reason(rule):
        return {"layer": "contract", "rule": rule, "column": None, "message": rule, "value": None}

    rows = [
        ([reason("b.rule"), reason("b.rule"), reason("a.rule")],),  # a rule twice in a row counts once
        ([reason("b.rule")],),
        ([reason("c.rule")],),
        ([],),  # no reason (never written, but a row all the same)
        (None,),
    ]
    quarantine = spark.createDataFrame(rows, f"reasons {REASONS.simpleString()}")
    count, by_rule = quarantine_counts(quarantine)
    assert count == 5
    assert list(by_rule.items()) == [("b.rule", 2), ("a.rule", 1), ("c.rule", 1)]  # most first, then by rule
    assert quarantine_counts(quarantine.limit(0)) == (0, {})


def test_the_batch_is_counted_once_whatever_reads_its_counts(tasted_with_plans):
    """The repeated keys and the failed groups are both joined back onto the kept pass. Were the
    counts cached rather than kept, Spark would give the second copy of the kept pass in one plan
    new attribute ids, miss the cache, and scan and count the whole batch again, in the suspects'
    step and in the valid write (docs/decisions/007-the-batch-counted-in-one-aggregate.md)."""
    run, summary, plans = tasted_with_plans
    assert run.config.group_by and summary["duplicates_dropped"] > 0 and summary["quarantined"] > 0
    counting = [plan for plan in plans if "spark_grouping_id" in plan]
    assert len(counting) == 1, f"{len(counting)} of {len(plans)} plans count the batch"


def test_the_pass_is_counted_on_top_of_what_is_kept(tasted_with_plans):
    """Spark generates no code for an observation (`CollectMetrics`): the pass's row count with
    a projection above it split the pass's generated code in two, and every row was copied once
    more (docs/decisions/003-the-pass-kept-on-disk.md)."""
    _, _, plans = tasted_with_plans
    (the_pass,) = [plan for plan in plans if "CollectMetrics" in plan and "foodtaster_strict_line" in plan]
    tree = the_pass.split("\n\n")[0].splitlines()
    above = tree[:next(i for i, line in enumerate(tree) if "CollectMetrics" in line)]
    assert not any("Project" in line for line in above), the_pass


SMALL_CONTRACT = """
import pandera.pandas as pa
from pandera.typing import Series


class Orders(pa.DataFrameModel):
    message_id: Series[str] = pa.Field(unique=True)
"""
AMOUNT = "    amount: Series[{kind}] = pa.Field(ge=0)\n"
COUPON = "    coupon: Series[str] = pa.Field(nullable=True, required=False)\n"


def test_a_contract_change_evolves_the_tables_or_is_refused_by_name_before_anything_is_written(
        spark, tmp_path):
    """A new optional field: the tables gain it. A type changed, or a required field dropped: the
    run is refused by name, and neither table, nor any file of theirs, changes."""
    from foodtaster.state.tables import SchemaChangeRefused

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "part-0.jsonl").write_bytes(b'{"message_id": "m1", "amount": 2.5, "coupon": "X"}\n'
                                         b'{"message_id": "m2", "amount": -1}\n')
    lake = Lake(str(tmp_path / "lake"))

    def run(name: str, fields: str, batch: str):
        path = tmp_path / f"{name}.py"
        path.write_text(SMALL_CONTRACT + fields)
        config = dataclasses.replace(get_dataset("orders"), contract=f"{path}:Orders",
                                     group_by=None, order_by=None, alert_rate=0.9, hold_rate=0.95)
        return run_batch(spark, BatchRun(config=config, input_path=str(inbox), lake=lake, batch_id=batch,
                                         batch_date="2026-11-20", gate=False)).to_json()

    first = run("first", AMOUNT.format(kind="float"), "c1")
    assert (first["valid"], first["quarantined"], first["published"]) == (1, 1, True)
    tables = DatasetTables(lake, "orders")
    second = run("wider", AMOUNT.format(kind="float") + COUPON, "c2")
    assert second["published"]
    assert tables.table(VALID).schema().find_field("coupon").optional
    assert tables.read(VALID, "c2").column("coupon").to_pylist() == ["X"]
    assert tables.read(VALID, "c1").column("coupon").to_pylist() == [None]  # older files: null

    files = sorted(Path(lake.root, "warehouse").rglob("*.parquet"))
    snapshots = {zone: len(tables.table(zone).snapshots()) for zone in (VALID, QUARANTINE)}
    with pytest.raises(SchemaChangeRefused, match="amount: double -> long"):
        run("retyped", AMOUNT.format(kind="int"), "c3")
    with pytest.raises(SchemaChangeRefused, match="no longer requires amount"):
        run("dropped", COUPON, "c4")
    assert sorted(Path(lake.root, "warehouse").rglob("*.parquet")) == files  # nothing written
    assert {zone: len(tables.table(zone).snapshots()) for zone in (VALID, QUARANTINE)} == snapshots
