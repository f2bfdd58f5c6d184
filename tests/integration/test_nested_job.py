"""The nested dataset `order_events` through the job and everything after it.

One generated batch (foodtaster_dev.sample_events, each line with the reasons it must get)
and a file written by hand (a conversation with a poison message, a conflicting copy of an
id, unknown fields) run once through `run_batch`, then held to the design's invariants
(messages = valid + quarantined + duplicates dropped; each line where its truth says, with
exactly its truth's (rule, column) reasons; the exact bytes kept) and to the nested shape of
what is published. The rest starts from copies of that lake: the poison list on a rerun, a
redrive after a contract fix and the retry pass that releases the held conversation, a
recall, the CLI and the alert. (order_events has no Python check: crash isolation does not
apply to it.)
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from support.frames import batch_frame
from support.lake import batch_rows, copy_lake
from support.tasted import inbox_lines, land_and_run

from foodtaster.engine.batch.job import BatchRun
from foodtaster.engine.run import run_batch
from foodtaster.registry import get_dataset
from foodtaster.state.groups import RULE as GROUP_RULE
from foodtaster.state.groups import GroupLog
from foodtaster.state.lake import Lake
from foodtaster.state.tables import QUARANTINE, VALID, DatasetTables
from foodtaster_dev.sample_events import generate_events

DATASET, DAY, BATCH = "order_events", "2026-11-20", "b1"
HAND = "order_events-2026-11-20-hand.jsonl"
FIXED = "foodtaster_dev.contracts.order_events_fix:OrderEventsZeroQty"
QTY_RULE = "data.lines[].qty.greater_than_or_equal_to(1)"
CONFLICT = ("id.conflicting_duplicate", "id")
HELD = (GROUP_RULE, "data.order_id")


def _event(event_id: str, order: str, hour: int, *, qty: tuple[int, ...] = (1,), unknown: bool = False,
           total: str = "12.50") -> bytes:
    """A good order event (but for `qty`), written compact; `unknown` adds an envelope field
    and a field of the second line the contract does not name."""
    discount = ',"discount":{"pct":10}' if unknown else ""
    lines = [f'{{"sku":"SKU-{i:05d}","qty":{q},"price":2.5{discount if i == 1 else ""}}}'
             for i, q in enumerate(qty)]
    extra = ',"datacontenttype":"application/json"' if unknown else ""
    return (
        f'{{"specversion":"1.0","id":"{event_id}","source":"/shop/checkout","type":"com.shop.order.paid",'
        f'"time":"2026-11-20T{hour:02d}:00:00Z"{extra},"data":{{"order_id":"{order}",'
        f'"customer":{{"id":"c-00042","email":"ana.42@example.com"}},"lines":[{",".join(lines)}],'
        f'"total":{total},"delivery_date":"2026-11-25"}}}}'
    ).encode()


# The hand-written file: line -> (bytes, outcome, reasons). The conversation o-hand-1 in file
# order 3h, 2h (poison), 1h, 4h: ordered by `time`, the 1h event comes before the poison and
# is valid; the 3h and 4h events are held. ev-hand-c is sent twice with different content.
HAND_LINES = [
    (_event("ev-hand-3", "o-hand-1", 3, unknown=True), "quarantined", {HELD}),
    (_event("ev-hand-2", "o-hand-1", 2, qty=(1, 2, 0)), "quarantined", {(QTY_RULE, "data.lines[2].qty")}),
    (_event("ev-hand-1", "o-hand-1", 1, qty=(1, 1), unknown=True), "valid", set()),
    (_event("ev-hand-4", "o-hand-1", 4), "quarantined", {HELD}),
    (_event("ev-hand-c", "o-hand-2", 5, total="1.00"), "quarantined", {CONFLICT}),
    (_event("ev-hand-c", "o-hand-3", 6, total="2.00"), "quarantined", {CONFLICT}),
]


@pytest.fixture(scope="module")
def inbox(tmp_path_factory):
    """The batch in the lake's inbox, each line's truth, and each line's bytes."""
    lake = Lake(str(tmp_path_factory.mktemp("lake")))
    folder = Path(lake.inbox(DATASET, DAY))
    generated = generate_events(folder, messages=300, seed=23, poison_rate=0.1, files=2, gzip_files=1,
                                batch_date=DAY)
    (folder / HAND).write_bytes(b"".join(line + b"\n" for line, _, _ in HAND_LINES))
    truth = {(t.file, t.line): (t.expected, set(t.reasons)) for t in generated.truth}
    truth |= {(HAND, n): (outcome, reasons) for n, (_, outcome, reasons) in enumerate(HAND_LINES, 1)}
    return lake, truth, inbox_lines(folder)


@pytest.fixture(scope="module")
def tasted(spark, inbox):
    """The batch landed and run once; what the tests read of it is taken before any other run."""
    lake, _, _ = inbox
    return land_and_run(spark, lake, DATASET, DAY, BATCH)


# What a consumer runs: pyarrow and pandas, no Foodtaster (`-I`: no PYTHONPATH, no user site).
READ_WITH_PYARROW = """
import json, sys
import pyarrow.parquet as pq

table = pq.read_table(sys.argv[1:], partitioning=None)  # `batch_date` is in the files
frame = table.to_pandas()
data = table.schema.field("data").type
lines = data.field("lines").type
element = lines.value_type
print(json.dumps({
    "rows": len(frame), "struct": str(data)[:6], "lines": str(lines),
    "data": str(data.field("total").type), "qty": str(element.field("qty").type),
    "price": str(element.field("price").type), "delivery_date": str(data.field("delivery_date").type),
    "time": str(table.schema.field("time").type), "unknown": str(table.schema.field("_unknown").type),
    "first_total": str(frame["data"][0]["total"]),
    "foodtaster": any(name.startswith("foodtaster") for name in sys.modules),
}))
"""


def _place(row: dict) -> tuple[str, int]:
    return row["_source_file"].rsplit("/", 1)[-1], row["_line_number"]


def _lake_copy(tasted, tmp_path_factory, name: str) -> tuple[Lake, BatchRun]:
    """A copy of the batch's lake, for a story that changes it (the others start clean), and
    the batch's run on it."""
    lake = copy_lake(tasted["lake"], tmp_path_factory.mktemp(name) / "lake")
    return lake, dataclasses.replace(tasted["run"], lake=lake, input_path=lake.raw(DATASET, DAY, BATCH))


# ---------------------------------------------------------------- the batch


def test_every_message_is_accounted_for_and_lands_where_its_truth_says(inbox, tasted):
    _, truth, _ = inbox
    summary = tasted["summary"]
    assert summary["messages"] == len(truth) == 306
    assert summary["messages"] == summary["valid"] + summary["quarantined"] + summary["duplicates_dropped"]
    assert (len(tasted["valid"]), len(tasted["quarantine"])) == (summary["valid"], summary["quarantined"])
    dropped = [k for k, (outcome, _) in truth.items() if outcome == "duplicate_dropped"]
    assert summary["duplicates_dropped"] == len(dropped) > 0

    placed = {_place(r): "valid" for r in tasted["valid"]}
    placed |= {_place(r): "quarantined" for r in tasted["quarantine"]}
    wrong = {k: (expected, placed.get(k, "duplicate_dropped")) for k, (expected, _) in truth.items()
             if placed.get(k, "duplicate_dropped") != expected}
    assert wrong == {}


def test_each_quarantined_message_has_exactly_its_reasons_and_its_exact_bytes(inbox, tasted):
    _, truth, lines = inbox
    kinds = set()
    for row in tasted["quarantine"]:
        place = _place(row)
        assert bytes(row["_raw"]) == lines[place], place
        got = {(r["rule"], r["column"]) for r in row["reasons"]}
        assert got == truth[place][1], (place, lines[place][:200])
        assert all(r["layer"] and r["message"] for r in row["reasons"])
        kinds |= {r["rule"] for r in row["reasons"]}
    # element paths name the element; rule patterns name the array
    columns = {r["column"] for row in tasted["quarantine"] for r in row["reasons"]}
    assert "data.lines[2].qty" in columns and QTY_RULE in kinds
    assert {GROUP_RULE, "id.conflicting_duplicate"} <= kinds


def test_the_valid_parquet_is_nested_and_read_without_foodtaster(tasted, tmp_path):
    """Consumers read the published rows with pyarrow or pandas alone."""
    published = DatasetTables(tasted["lake"], DATASET).batch(VALID, BATCH)
    files = [f.removeprefix("file://") for f in published.files]
    done = subprocess.run([sys.executable, "-I", "-c", READ_WITH_PYARROW, *files], capture_output=True,
                          text=True, timeout=120, check=True)
    read = json.loads(done.stdout)
    assert read["rows"] == tasted["summary"]["valid"]
    assert read["struct"] == "struct" and read["lines"].startswith("list<eleme")
    assert (read["data"], read["price"], read["qty"]) == ("decimal128(12, 2)", "decimal128(10, 2)", "int64")
    assert read["delivery_date"] == "date32[day]" and read["time"].startswith("timestamp")
    assert read["unknown"].startswith("map<string, string") and not read["foodtaster"]
    assert "." in read["first_total"]  # a Decimal, not a float

    types = {f.name: f.dataType.simpleString() for f in tasted["valid_schema"].fields}
    assert types["time"] == "timestamp" and types["id"] == "string"
    assert types["data"].startswith("struct<order_id:string,customer:struct<")
    assert "lines:array<struct<sku:string,qty:bigint,price:decimal(10,2)>>" in types["data"]
    assert "total:decimal(12,2),delivery_date:date" in types["data"]


def test_unknown_fields_are_kept_as_json_text_by_path(tasted):
    by_id = {r["id"]: r for r in tasted["valid"]}
    assert by_id["ev-hand-1"]["_unknown"] == {
        "datacontenttype": '"application/json"', "data.lines[1].discount": '{"pct":10}'}
    assert any("datacontenttype" in (r["_unknown"] or {}) for r in tasted["valid"] if r["id"] != "ev-hand-1")


def test_the_gate_passes_on_the_batch_and_names_nested_columns_by_path(tasted):
    summary = tasted["summary"]
    gate = summary["gate"]
    assert gate["passed"] and summary["published"], gate["failed"]
    results = {(r["expectation"], r["column"]): r for r in gate["results"]}
    assert results[("expect_column_values_to_not_be_null", "data.order_id")]["success"]
    median = results[("expect_column_quantile_values_to_be_between_within_error", "data.total")]
    assert median["success"] and 1 <= median["observed"]["values"][0] <= 10_000
    assert results[("expect_column_proportion_of_unique_values_to_be_between", "id")]["observed"] == 1.0
    page = Path(summary["paths"]["data_docs"]).read_text()
    assert "<td>data.total</td>" in page and "<td>data.order_id</td>" in page


def test_a_batch_the_gate_fails_is_held(spark, tmp_path):
    """Good messages from another day: freshness fails, the batch is held, nothing published."""
    folder = tmp_path / "inbox"
    generate_events(folder, messages=40, seed=3, poison_rate=0.0, files=1, batch_date="2026-10-01")
    lake = Lake(str(tmp_path / "lake"))
    summary = run_batch(spark, BatchRun(config=get_dataset(DATASET), input_path=str(folder), lake=lake,
                                        batch_id="stale", batch_date=DAY)).to_json()
    assert (summary["valid"], summary["quarantined"]) == (40, 0)
    assert not summary["gate"]["passed"] and not summary["published"]
    assert [(f["expectation"], f["column"]) for f in summary["gate"]["failed"]] == [
        ("expect_column_values_to_be_between", "time")]
    assert DatasetTables(lake, DATASET).batch(VALID, "stale") is None  # not on main


def test_a_poison_message_opens_its_conversation_by_its_id(tasted):
    held = [r for r in tasted["quarantine"] if r["id"] in ("ev-hand-3", "ev-hand-4")]
    for row in held:
        (reason,) = row["reasons"]
        assert reason["value"] == "o-hand-1"
        assert reason["message"] == (
            f"data.order_id o-hand-1 is held: its message ev-hand-2 of batch {BATCH} was quarantined")
    groups = GroupLog(tasted["lake"], DATASET).open_groups()
    assert [(p.message_id, p.order) for p in groups["o-hand-1"]] == [
        ("ev-hand-2", "2026-11-20T02:00:00.000000Z")]
    # every poison message with an order opens its group, named by the message's `id`
    poison_ids = {p.message_id for poisons in groups.values() for p in poisons}
    assert "ev-hand-c" not in poison_ids and None not in poison_ids


# ---------------------------------------------------------------- downstream


def test_a_listed_message_is_recognized_by_its_bytes_or_its_id_on_a_rerun(spark, tasted, tmp_path_factory):
    from foodtaster.state.poison import PoisonList, fingerprint

    lake, run = _lake_copy(tasted, tmp_path_factory, "listed")
    run = dataclasses.replace(run, gate=False)  # the gate is another test's
    poison = PoisonList(lake, DATASET)
    by_bytes = poison.add("fingerprint", fingerprint(HAND_LINES[2][0]), "crashes billing", "downstream")
    generated = next(r for r in tasted["valid"] if r["id"].startswith("ev-2026"))
    by_id = poison.add("key", generated["id"], "a test order", "operator")
    summary = run_batch(spark, run).to_json()
    quarantine = batch_frame(spark, lake, DATASET, QUARANTINE, BATCH)
    for event_id, entry in (("ev-hand-1", by_bytes), (generated["id"], by_id)):
        (row,) = quarantine.where(F.col("id") == event_id).collect()
        assert [(r.rule, r.value) for r in row.reasons] == [("registry.listed", entry.id)]
    first = tasted["summary"]
    assert summary["listed"] == 2 and summary["valid"] == first["valid"] - 2
    assert summary["messages"] == summary["valid"] + summary["quarantined"] + summary["duplicates_dropped"]


def test_redrive_after_a_fix_then_the_retry_pass_releases_the_conversation(spark, tasted, tmp_path_factory):
    from foodtaster.engine.second_chances.redrive import RedriveRun, Selection, run_redrive
    from foodtaster.engine.second_chances.retry import run_retries
    from foodtaster.state.accounts import check_accounts
    from foodtaster.state.retries import retry_work

    lake, _ = _lake_copy(tasted, tmp_path_factory, "redrive")
    fixed = dataclasses.replace(get_dataset(DATASET), contract=FIXED)
    # the held messages' group is read by its path: open, so the retry pass has nothing to do
    assert retry_work(lake, DATASET, {}, ("data.order_id",), datetime.now(UTC)) is None
    report = run_redrive(spark, RedriveRun(config=fixed, lake=lake, by="test", why="qty 0 is a line",
                                           selection=Selection(DAY, DAY, message_id="ev-hand-2"),
                                           redrive_id="r1"))
    assert report["counts"] == {"published": 1, "duplicate": 0, "quarantined": 0}
    (published,) = batch_frame(spark, lake, DATASET, VALID, "redrive-r1").collect()
    assert published.id == "ev-hand-2" and [line.qty for line in published.data.lines] == [1, 2, 0]
    assert str(published.data.total) == "12.50" and published._line_number == 2

    assert "published later" in retry_work(lake, DATASET, {}, ("data.order_id",), datetime.now(UTC))
    summary = run_retries(spark, fixed, lake, run_id="t1")
    assert (summary["released_poison"], summary["held_published"]) == (1, 2)
    (where,) = summary["paths"].values()
    assert where == "foodtaster.order_events@batch-redrive-t1-g"
    released = batch_frame(spark, lake, DATASET, VALID, "redrive-t1-g").orderBy("time").collect()
    assert [r.id for r in released] == ["ev-hand-3", "ev-hand-4"]
    assert released[0]._unknown == {"datacontenttype": '"application/json"'}
    assert "o-hand-1" not in GroupLog(lake, DATASET).open_groups()
    check_accounts(lake, DATASET)


def test_the_cli_shows_held_groups_and_element_paths_and_recalls_a_nested_row(tasted, tmp_path_factory,
                                                                             capsys):
    from foodtaster.ops.cli import main

    lake, _ = _lake_copy(tasted, tmp_path_factory, "recall")
    common = ["--dataset", DATASET, "--lake", lake.root]
    assert main(["groups", "ls", *common, "--json"]) == 0
    groups = {g["group"]: g for g in map(json.loads, capsys.readouterr().out.splitlines())}
    assert groups["o-hand-1"]["held"] == 2
    assert [p["message_id"] for p in groups["o-hand-1"]["poison"]] == ["ev-hand-2"]
    assert main(["poison", "add", *common, "--batch", BATCH, "--file", HAND, "--line", "3",
                 "--why", "crashes billing", "--source", "downstream", "--recall"]) == 0
    assert "moved to the quarantine" in capsys.readouterr().out
    valid = batch_rows(lake, DATASET, VALID, BATCH).to_pylist()
    quarantine = batch_rows(lake, DATASET, QUARANTINE, BATCH).to_pylist()
    assert "ev-hand-1" not in {r["id"] for r in valid}
    (recalled,) = [r for r in quarantine if r["id"] == "ev-hand-1"]
    assert bytes(recalled["_raw"]) == HAND_LINES[2][0]
    assert recalled["data"]["order_id"] == "o-hand-1" and len(recalled["data"]["lines"]) == 2
    assert [r["rule"] for r in recalled["reasons"]] == ["registry.recalled"]

    assert main(["quarantine", "show", *common, "--batch", BATCH, "--rule", QTY_RULE]) == 0
    shown = capsys.readouterr().out
    assert "data.lines[2].qty" in shown and QTY_RULE in shown and HAND in shown


def test_the_alert_names_rule_patterns_and_element_paths(tasted):
    from foodtaster.ops.alerts import build_batch_alert
    from foodtaster.policy import Facts, decide

    config = get_dataset(DATASET)
    summary = tasted["summary"]
    alert = build_batch_alert(summary, decide(Facts.of_summary(summary), config), config, {})
    top = alert.text.split("Top reasons", 1)[1]
    assert GROUP_RULE in top and "[]" in top  # patterns, e.g. data.lines[].qty...
    assert summary["reasons"][GROUP_RULE] == 2


def test_a_reader_of_main_with_pyiceberg_gets_the_rows_the_job_wrote_with_their_types(tasted):
    """A pyiceberg scan of main equals what the job's files hold (what `valid/` held before the
    tables): the same rows, the same types (decimals, dates, lists of structs, the `_unknown` map)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = DatasetTables(tasted["lake"], DATASET)
    published = tables.batch(VALID, BATCH)
    written = pq.read_table([f.removeprefix("file://") for f in published.files], partitioning=None)
    scanned = tables.read(VALID, BATCH)

    def plain(kind: pa.DataType) -> str:  # pyiceberg may read a string or a list as its large form,
        # and names a map's entries otherwise than Spark
        text = str(kind).replace("large_string", "string").replace("large_binary", "binary")
        return re.sub(r" \('[^']*'\)", "", text.replace("large_list", "list"))

    assert scanned.column_names == written.column_names
    assert {f.name: plain(f.type) for f in scanned.schema} == {f.name: plain(f.type) for f in written.schema}
    assert str(scanned.schema.field("data").type.field("total").type) == "decimal128(12, 2)"
    assert str(scanned.schema.field("data").type.field("delivery_date").type) == "date32[day]"

    def rows(table: pa.Table) -> list:
        return sorted(table.to_pylist(), key=lambda row: (row["_source_file"], row["_line_number"]))

    assert rows(scanned) == rows(written) and len(rows(scanned)) == tasted["summary"]["valid"]
