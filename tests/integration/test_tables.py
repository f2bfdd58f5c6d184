"""Write-audit-publish on real catalogs, the lake's embedded SQLite one and a SQL catalog on the
machine's PostgreSQL (127.0.0.1:5432), without Spark: a batch committed to its audit branch,
published by the guarded move of main, rebased when main moved, refused when the branch holds
another run, a publish killed around its commit; a recall; the schema kept in step with the
contract; one lease a batch."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from collections import Counter
from datetime import date
from pathlib import Path

import pyarrow as pa
import pytest
from support.environment import need
from support.lake import commit_rows, reason, write_batch

from foodtaster.state.lake import Lake, run_id_from
from foodtaster.state.lease import LeaseHeld, batch_lease, lease_uri
from foodtaster.state.publish import (
    NothingStaged,
    UnjudgedRunError,
    drop_staged,
    publish_staged,
    stage_valid,
)
from foodtaster.state.tables import (
    MAIN,
    QUARANTINE,
    VALID,
    DatasetTables,
    SchemaChangeRefused,
    audit_branch,
    batch_tag,
)
from foodtaster_dev.localenv import drop_postgres_database, postgres_database

ROWS = pa.schema([("message_id", pa.string()), ("amount", pa.decimal128(12, 2)),
                  ("_line_number", pa.int64())])


@pytest.fixture(params=["sqlite", "postgresql"])
def lake(request, tmp_path: Path, monkeypatch) -> Lake:
    """A lake whose catalog is the embedded SQLite one, or one configured the way pyiceberg users
    configure a catalog (`PYICEBERG_CATALOG__FOODTASTER__*`) on a fresh PostgreSQL database."""
    lake = Lake(str(tmp_path / "lake"))
    if request.param == "postgresql":
        name = f"foodtaster_test_{os.getpid()}_{abs(hash(request.node.name)) % 10**8}"
        try:
            url = postgres_database(name, fresh=True)
        except Exception as err:  # noqa: BLE001 - any failure: no server to test against
            need(False, f"PostgreSQL at 127.0.0.1:5432 unreachable: {err}")
        request.addfinalizer(lambda: drop_postgres_database(name))
        monkeypatch.setenv("PYICEBERG_CATALOG__FOODTASTER__TYPE", "sql")
        monkeypatch.setenv("PYICEBERG_CATALOG__FOODTASTER__URI", url)
        monkeypatch.setenv("PYICEBERG_CATALOG__FOODTASTER__WAREHOUSE", f"file://{tmp_path}/warehouse")
    return lake


def rows(n: int, start: int = 1) -> pa.Table:
    from decimal import Decimal

    return pa.table({"message_id": [f"m{i}" for i in range(start, start + n)],
                     "amount": [Decimal(f"{i}.50") for i in range(start, start + n)],
                     "_line_number": list(range(start, start + n))}, schema=ROWS)


def on_main(lake: Lake, dataset: str = "orders") -> Counter[str]:
    """Rows of each batch a reader of main sees, by a pyiceberg scan."""
    return Counter(DatasetTables(lake, dataset).read(VALID).column("batch_id").to_pylist())


def test_a_batch_is_judged_on_its_branch_and_published_by_moving_main(lake: Lake) -> None:
    commit_rows(lake, "orders", VALID, "2026-11-20", "b1", rows(3), publish=False)
    tables = DatasetTables(lake, "orders")
    table = tables.table(VALID)
    assert audit_branch("b1") in table.metadata.refs and on_main(lake) == Counter()
    assert tables.batch(VALID, "b1", audit_branch("b1")).rows == 3  # operators read the branch

    published = publish_staged(tables, "b1", "r1")
    table = tables.table(VALID)
    assert on_main(lake) == {"b1": 3}
    assert audit_branch("b1") not in table.metadata.refs  # the branch went with the move
    assert table.metadata.refs[batch_tag("b1")].snapshot_id == published.snapshot_id == \
        table.current_snapshot().snapshot_id
    summary = table.current_snapshot().summary
    assert summary.get("added-records") == "3" and summary.get("foodtaster.run-id") == "r1"
    got = tables.read(VALID, "b1")
    assert got.column("amount").type == pa.decimal128(12, 2)
    assert got.column("batch_date").to_pylist() == [date(2026, 11, 20)] * 3


def test_a_rerun_replaces_the_batch_in_one_snapshot_and_a_held_one_leaves_main_as_it_was(lake: Lake) -> None:
    commit_rows(lake, "orders", VALID, "2026-11-20", "b1", rows(3))
    before = DatasetTables(lake, "orders").table(VALID).current_snapshot()
    commit_rows(lake, "orders", VALID, "2026-11-20", "b1", rows(2, start=10), run_id="r2", publish=False)
    assert on_main(lake) == {"b1": 3}  # held: the earlier publication stays
    publish_staged(DatasetTables(lake, "orders"), "b1", "r2")
    table = DatasetTables(lake, "orders").table(VALID)
    after = table.current_snapshot()
    assert on_main(lake) == {"b1": 2}
    assert after.parent_snapshot_id == before.snapshot_id  # one snapshot: out with the old, in with the new
    assert (after.summary.get("added-records"), after.summary.get("deleted-records")) == ("2", "3")
    old = DatasetTables(lake, "orders").table(VALID).scan(snapshot_id=before.snapshot_id).to_arrow()
    assert sorted(old.column("message_id").to_pylist()) == ["m1", "m2", "m3"]  # time travel


def test_when_main_moved_the_batch_is_rebased_and_both_batches_end_on_main(lake: Lake) -> None:
    commit_rows(lake, "orders", VALID, "2026-11-20", "b0", rows(1))
    # two batches staged off the same head of main
    commit_rows(lake, "orders", VALID, "2026-11-20", "b1", rows(2), publish=False)
    commit_rows(lake, "orders", VALID, "2026-11-21", "b2", rows(4), publish=False)
    tables = DatasetTables(lake, "orders")
    assert publish_staged(tables, "b1", "r1").rebased == 0
    second = publish_staged(tables, "b2", "r1")
    assert second.rebased == 1
    assert on_main(lake) == {"b0": 1, "b1": 2, "b2": 4}
    table = tables.table(VALID)
    rebased = table.snapshot_by_id(second.snapshot_id)
    assert rebased.summary.get("foodtaster.rebased-from")  # says which judged snapshot it replays


def publish_one(root: str, batch_id: str, barrier) -> int:
    """A process of its own: stage its batch, wait for the others, publish."""
    lake = Lake(root)
    commit_rows(lake, "orders", VALID, "2026-11-20", batch_id, rows(5), publish=False, run_id=f"r-{batch_id}")
    barrier.wait()
    return publish_staged(DatasetTables(lake, "orders"), batch_id, f"r-{batch_id}").rebased


def test_batches_published_at_once_from_several_processes_all_end_on_main(lake: Lake) -> None:
    commit_rows(lake, "orders", VALID, "2026-11-19", "first", rows(1))  # the table exists
    context = multiprocessing.get_context("spawn")
    batches = [f"b{i}" for i in range(4)]
    with context.Manager() as manager:
        barrier = manager.Barrier(len(batches), timeout=120)
        with context.Pool(len(batches)) as pool:
            rebased = pool.starmap(publish_one, [(lake.root, b, barrier) for b in batches])
    assert on_main(lake) == {"first": 1, **{b: 5 for b in batches}}
    assert sum(rebased) >= 1  # someone found main moved, and nobody was lost
    table = DatasetTables(lake, "orders").table(VALID)
    assert not [r for r in table.metadata.refs if r.startswith("audit-")]


def test_a_branch_holding_another_run_is_not_published(lake: Lake) -> None:
    commit_rows(lake, "orders", VALID, "2026-11-20", "b1", rows(2), publish=False, run_id="r2")
    tables = DatasetTables(lake, "orders")
    with pytest.raises(UnjudgedRunError, match="holds run r2, but the gate judged run r1"):
        publish_staged(tables, "b1", "r1")
    assert on_main(lake) == Counter()


def test_publishing_again_after_it_landed_returns_the_tag_and_without_a_branch_says_so(lake: Lake) -> None:
    commit_rows(lake, "orders", VALID, "2026-11-20", "b1", rows(2), publish=False)
    tables = DatasetTables(lake, "orders")
    first = publish_staged(tables, "b1", "r1")
    assert publish_staged(tables, "b1", "r1") == first  # a publish killed after its commit, run again
    with pytest.raises(NothingStaged, match="no branch audit-b9"):
        publish_staged(tables, "b9", "r1")
    with pytest.raises(NothingStaged):
        publish_staged(tables, "b1", "another run")


def test_a_supersede_drops_the_held_batchs_branch(lake: Lake) -> None:
    commit_rows(lake, "orders", VALID, "2026-11-20", "b1", rows(2), publish=False)
    tables = DatasetTables(lake, "orders")
    assert drop_staged(tables, "b1") is True
    assert audit_branch("b1") not in tables.table(VALID).metadata.refs
    assert drop_staged(tables, "b1") is False


def test_the_quarantine_is_committed_to_main_whatever_the_verdict(lake: Lake) -> None:
    quarantine = pa.table({"_raw": [b"{bad", b"\xff"], "_line_number": [1, 2]})
    commit_rows(lake, "orders", QUARANTINE, "2026-11-20", "b1", quarantine)
    commit_rows(lake, "orders", QUARANTINE, "2026-11-20", "b1", quarantine.slice(0, 1), run_id="r2")
    got = DatasetTables(lake, "orders").read(QUARANTINE, "b1")
    assert got.column("_raw").to_pylist() == [b"{bad"]  # the rerun's quarantine replaced the first


def test_a_new_optional_field_is_added_and_a_narrowed_type_or_dropped_required_field_refused(lake: Lake):
    tables = DatasetTables(lake, "orders")
    nested = pa.struct([("zip", pa.string())])
    first = pa.schema([("message_id", pa.string()), ("amount", pa.int64()), ("address", nested),
                       ("batch_date", pa.date32()), ("batch_id", pa.string())])
    tables.ensure(VALID, first, [("message_id",)])
    wider = pa.schema([*first.remove(first.get_field_index("address")),
                       ("address", pa.struct([("zip", pa.string()), ("city", pa.string())])),
                       ("coupon", pa.string())])
    table = tables.ensure(VALID, wider, [("message_id",)])
    assert table.schema().find_field("coupon").optional
    assert table.schema().find_field("address.city").optional

    narrowed = pa.schema([("message_id", pa.string()), ("amount", pa.int32()),
                          ("batch_date", pa.date32()), ("batch_id", pa.string())])
    with pytest.raises(SchemaChangeRefused, match="amount"):
        tables.ensure(VALID, narrowed, [("message_id",)])
    retyped = pa.schema([("message_id", pa.int64()), ("batch_date", pa.date32()), ("batch_id", pa.string())])
    with pytest.raises(SchemaChangeRefused, match="message_id"):
        tables.ensure(VALID, retyped, [("message_id",)])
    with pytest.raises(SchemaChangeRefused, match="no longer requires message_id"):
        tables.ensure(VALID, first, [])
    assert tables.table(VALID).schema() == table.schema()  # refused before anything changed


def test_a_second_holder_is_refused_with_the_holders_name(lake: Lake) -> None:
    with batch_lease(lake, "orders", "b1", "run-a") as holder:
        assert holder["pid"] == os.getpid()
        with (pytest.raises(LeaseHeld, match=r"orders batch b1 is held by run run-a \(host .*pid"),
              batch_lease(lake, "orders", "b1", "run-b")):
            pass
        with batch_lease(lake, "orders", "b2", "run-b"):  # another batch is free
            pass
        with batch_lease(lake, "orders", "b1", "run-a"):  # the holder again: re-entrant
            pass
        assert Path(lease_uri(lake, "orders", "b1")).exists()  # the outer hold releases
    assert not Path(lease_uri(lake, "orders", "b1")).exists()
    with batch_lease(lake, "orders", "b1", "run-b"):  # released: free again
        pass


def test_the_lease_of_a_dead_process_or_past_its_time_is_taken_over(lake: Lake) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    with batch_lease(lake, "orders", "b1", "run-a"):
        uri = Path(lease_uri(lake, "orders", "b1"))
        held = json.loads(uri.read_text())
    uri.write_text(json.dumps({**held, "pid": int(dead.stdout)}))  # its holder was killed
    with batch_lease(lake, "orders", "b1", "run-b") as holder:
        assert json.loads(uri.read_text())["run_id"] == holder["run_id"] == "run-b"
    uri.write_text(json.dumps({**held, "host": "elsewhere", "expires": "2000-01-01T00:00:00+00:00"}))
    with batch_lease(lake, "orders", "b1", "run-c"):
        pass
    uri.write_text(json.dumps({**held, "host": "elsewhere"}))  # alive as far as we can tell
    with pytest.raises(LeaseHeld), batch_lease(lake, "orders", "b1", "run-d"):
        pass


def test_run_ids_from_airflow_become_path_names() -> None:
    assert run_id_from("manual__2026-11-20T00:00:00+00:00") == "manual__2026-11-20T00_00_00_00_00"
    assert run_id_from("::") == "run"


def staged_summary(run_id: str, lake: Lake) -> dict:
    """The summary of run `run_id` of batch b1, its rows staged, not published."""
    from foodtaster.policy import Verdict
    from foodtaster.registry import Tables
    from foodtaster.summary import BatchSummary, BatchTables, GateResult

    return BatchSummary(
        dataset="orders", batch_id="b1", batch_date="2026-11-20", run_id=run_id, messages=2, valid=2,
        quarantined=0, duplicates_dropped=0, quarantine_rate=0.0, gate=GateResult.skipped_gate(),
        verdict=Verdict(publish=True, alert=False, severity="ok", why=()), published=False,
        tables=BatchTables(names=Tables.named_after("orders"), branch=audit_branch("b1")),
    ).to_json()


def test_the_publish_task_publishes_the_judged_run_and_says_so_in_the_summary(lake: Lake) -> None:
    from foodtaster.state.lake import read_json, write_json
    from foodtaster_airflow.steps import PipelineError, publish_judged

    commit_rows(lake, "orders", VALID, "2026-11-20", "b1", rows(2), publish=False, run_id="r1")
    summary_uri = lake.summary("orders", "b1")
    write_json(summary_uri, staged_summary("r2", lake))
    decision = {"batch_id": "b1", "batch_date": "2026-11-20", "run_id": "r1", "summary_path": summary_uri}
    with pytest.raises(PipelineError, match="the gate judged run r1 but run r2 is staged"):
        publish_judged(lake, "orders", decision)
    assert on_main(lake) == Counter()

    write_json(summary_uri, staged_summary("r1", lake))
    tables = publish_judged(lake, "orders", decision)
    assert on_main(lake) == {"b1": 2}
    written = read_json(summary_uri)
    assert written["published"] is True
    assert written["tables"]["tag"] == tables.tag == batch_tag("b1")
    assert written["tables"]["published_snapshot"] == tables.published_snapshot == \
        DatasetTables(lake, "orders").table(VALID).snapshot_by_name(MAIN).snapshot_id
    assert not Path(lease_uri(lake, "orders", "b1")).exists()


def test_staging_again_starts_the_branch_afresh_off_main(lake: Lake) -> None:
    commit_rows(lake, "orders", VALID, "2026-11-20", "b0", rows(1))
    tables = DatasetTables(lake, "orders")
    commit_rows(lake, "orders", VALID, "2026-11-20", "b1", rows(2), publish=False)
    commit_rows(lake, "orders", VALID, "2026-11-21", "b2", rows(1))  # main moves on
    table = tables.table(VALID)
    path = f"{tables.run_folder(VALID, table, '2026-11-20', 'b1', 'r3')}/part-x.parquet"
    import pyarrow.parquet as pq

    dated = rows(3).append_column("batch_date", pa.array([date(2026, 11, 20)] * 3, pa.date32())
                                  ).append_column("batch_id", pa.array(["b1"] * 3))
    with table.io.new_output(path).create(overwrite=True) as stream:
        pq.write_table(dated, stream)
    staged = stage_valid(tables, "b1", [path], "r3")
    branch = tables.table(VALID).snapshot_by_name(audit_branch("b1"))
    assert branch.parent_snapshot_id == tables.table(VALID).current_snapshot().snapshot_id
    assert staged.rows == 3 and staged.removed_rows == 0


PUBLISH = ("import sys; from foodtaster.state.lake import Lake; "
           "from foodtaster.state.publish import publish_judged; lake = Lake(sys.argv[1]); "
           "publish_judged(lake, 'orders', 'b1', 'r1', lake.summary('orders', 'b1'))")


@pytest.mark.parametrize("step, on_main_after_kill", [("publishing", {}), ("published", {"b1": 2})])
def test_a_publish_killed_around_its_commit_leaves_main_without_the_batch_or_with_all_of_it(
        lake: Lake, tmp_path: Path, step: str, on_main_after_kill: dict) -> None:
    import signal
    import time

    from foodtaster.state.lake import FAULT_AT_ENV, FAULT_DIR_ENV, read_json, write_json
    from foodtaster.state.publish import publish_judged

    commit_rows(lake, "orders", VALID, "2026-11-20", "b1", rows(2), publish=False, run_id="r1")
    write_json(lake.summary("orders", "b1"), staged_summary("r1", lake))
    faults = tmp_path / "faults"
    faults.mkdir()
    killed = subprocess.Popen(
        [sys.executable, "-c", PUBLISH, lake.root], start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), FAULT_AT_ENV: step,
             FAULT_DIR_ENV: str(faults)})
    try:
        deadline = time.monotonic() + 120
        while not (faults / f"{step}.reached").exists():
            assert killed.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()
    assert on_main(lake) == on_main_after_kill  # the commit is one: never half of the batch
    assert read_json(lake.summary("orders", "b1"))["published"] is False
    publish_judged(lake, "orders", "b1", "r1", lake.summary("orders", "b1"))  # the task run again
    assert on_main(lake) == {"b1": 2} and read_json(lake.summary("orders", "b1"))["published"] is True


def test_a_recall_is_one_snapshot_a_table_quarantine_first(lake: Lake) -> None:
    from foodtaster.state.browse import quarantined_rows
    from foodtaster.state.recall import RULE, report_downstream

    lines = [b'{"message_id": "m1"}', b"{bad", b'{"message_id": "m3"}']
    bad = {2: [reason("json.invalid", "not JSON", "parse")]}
    write_batch(Path(lake.root), "2026-11-20", "b1", lines, bad)
    tables = DatasetTables(lake, "orders")
    before = {zone: tables.table(zone).current_snapshot().snapshot_id for zone in (VALID, QUARANTINE)}
    report_downstream(lake, "orders", batch_id="b1", source_file="part-0.jsonl", line_number=3,
                      why="billing crashed", reporter="billing", recall=True)
    assert on_main(lake) == {"b1": 1}
    assert [r["_raw"] for r in quarantined_rows(lake, "orders", "b1", rule=RULE)] == [lines[2]]
    for zone in (VALID, QUARANTINE):  # one snapshot each, on top of the one before
        table = tables.table(zone)
        assert table.current_snapshot().parent_snapshot_id == before[zone]
        assert table.current_snapshot().summary.get("foodtaster.operation") == "recall"


def test_maintain_expires_old_tags_and_snapshots_compacts_and_removes_only_unreferenced_files(
        lake: Lake, tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from foodtaster.state.upkeep import maintain

    for n in range(3):  # three runs of b1: two replaced, each in a file of its own
        commit_rows(lake, "orders", VALID, "2026-11-20", "b1", rows(2, start=10 * n), run_id=f"r{n}")
    commit_rows(lake, "orders", VALID, "2026-11-21", "b2", rows(1))
    tables = DatasetTables(lake, "orders")
    table = tables.table(VALID)
    second = f"{tables.run_folder(VALID, table, '2026-11-21', 'b2', 'r9')}/part-1.parquet"
    import pyarrow.parquet as pq

    with table.io.new_output(second).create() as stream:  # b2 in two small files
        more = rows(1, start=50).append_column("batch_date", pa.array([date(2026, 11, 21)], pa.date32()))
        pq.write_table(more.append_column("batch_id", pa.array(["b2"])), stream)
    from foodtaster.state.publish import commit_changes

    commit_changes(tables, VALID, MAIN, "b2", add=[second], remove=(), run_id="r9", operation="append")
    location = Path(table.location().removeprefix("file://"))
    dead = location / "data" / "batch_date=2026-11-21" / "batch_id=b3" / "run=dead" / "part-0.parquet"
    dead.parent.mkdir(parents=True)
    dead.write_bytes(b"a killed run's file")
    live = location / "data" / "batch_date=2026-11-21" / "batch_id=b4" / "run=live" / "part-0.parquet"
    live.parent.mkdir(parents=True)
    live.write_bytes(b"a running job's file")
    main_rows = on_main(lake)

    with batch_lease(lake, "orders", "b4", "live"):
        done = maintain(tables, VALID, tag_retention=timedelta(days=1), snapshot_retention=timedelta(days=1),
                        grace=timedelta(0), now=datetime.now(UTC) + timedelta(days=2))
    assert done.tags_removed == ["batch-b1", "batch-b2"]
    assert done.snapshots_expired > 0 and done.batches_compacted == {"b2": 2}
    assert not dead.exists() and live.exists() and done.kept_for_live_runs == 1
    assert on_main(lake) == main_rows  # the same rows, b2 in one file now
    assert len(tables.batch(VALID, "b2").files) == 1
    table = tables.table(VALID)
    referenced = {f.removeprefix("file://") for b in tables.batches(VALID) for f in b.files}
    assert all(Path(f).exists() for f in referenced)
    replaced = [p for p in location.rglob("run=r0/*.parquet")]  # b1's first run: no snapshot keeps it
    assert replaced == []
    for snapshot in table.snapshots():  # every snapshot kept is readable
        table.scan(snapshot_id=snapshot.snapshot_id).to_arrow()
