"""A batch's lease (one writer a batch) and the folder swap a reader never sees half of."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from foodtaster.state import lake as lake_module
from foodtaster.state.lake import Lake, run_id_from, swap_in
from foodtaster.state.lease import LeaseHeld, batch_lease, lease_uri


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return Lake(str(tmp_path / "lake"))


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


def test_swap_in_replaces_a_folder_in_one_step_and_hands_back_the_old_one(tmp_path: Path) -> None:
    new, target = tmp_path / "new", tmp_path / "published" / "part"
    new.mkdir()
    (new / "a").write_text("new")
    swap_in(str(new), str(target))  # a first publication: a move
    assert (target / "a").read_text() == "new" and not new.exists()

    new.mkdir()
    (new / "a").write_text("newer")
    seen: set[str] = set()
    stop = threading.Event()

    def read() -> None:  # a reader polling the target throughout
        while not stop.is_set():
            try:
                seen.add((target / "a").read_text())
            except FileNotFoundError:
                seen.add("missing")

    reader = threading.Thread(target=read)
    reader.start()
    for _ in range(200):
        swap_in(str(new), str(target))
        swap_in(str(new), str(target))  # and back
    stop.set()
    reader.join()
    assert seen <= {"new", "newer"}, seen
    assert (new / "a").read_text() == "newer" and (target / "a").read_text() == "new"


def test_without_an_exchange_the_old_folder_is_moved_aside_then_the_new_one_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lake_module, "_exchange", lambda a, b: False)
    new, target = tmp_path / "new", tmp_path / "target"
    new.mkdir()
    target.mkdir()
    (new / "a").write_text("new")
    (target / "a").write_text("old")
    swap_in(str(new), str(target))
    assert (target / "a").read_text() == "new" and (new / "a").read_text() == "old"


def test_run_ids_from_airflow_become_path_names() -> None:
    assert run_id_from("manual__2026-11-20T00:00:00+00:00") == "manual__2026-11-20T00_00_00_00_00"
    assert run_id_from("::") == "run"


def staged_summary(run_id: str) -> dict:
    """The summary of run `run_id` of batch b1, its rows staged, not published."""
    from foodtaster.policy import Verdict
    from foodtaster.summary import BatchSummary, GateResult

    return BatchSummary(
        dataset="orders", batch_id="b1", batch_date="2026-11-20", run_id=run_id, messages=1, valid=1,
        quarantined=0, duplicates_dropped=0, quarantine_rate=0.0, gate=GateResult.skipped_gate(),
        verdict=Verdict(publish=True, alert=False, severity="ok", why=()), published=False,
    ).to_json()


def test_the_publish_task_publishes_the_judged_run_and_says_so_in_the_summary(lake: Lake) -> None:
    from foodtaster.state.lake import read_json, write_json
    from foodtaster_airflow.steps import PipelineError, publish_judged

    staged = Path(lake.staged_valid("orders", "2026-11-20", "b1"))
    staged.mkdir(parents=True)
    (staged / "part-0.parquet").write_text("rows of run r1")
    summary_uri = lake.summary("orders", "b1")
    write_json(summary_uri, staged_summary("r2"))
    decision = {"batch_id": "b1", "batch_date": "2026-11-20", "run_id": "r1",
                "summary_path": summary_uri}
    with pytest.raises(PipelineError, match="the gate judged run r1 but run r2 is staged"):
        publish_judged(lake, "orders", decision)
    assert not Path(lake.valid("orders", "2026-11-20", "b1")).exists()

    write_json(summary_uri, staged_summary("r1"))
    path = publish_judged(lake, "orders", decision)
    assert (Path(path) / "part-0.parquet").read_text() == "rows of run r1" and not staged.exists()
    assert read_json(summary_uri)["published"] is True
    assert not Path(lease_uri(lake, "orders", "b1")).exists()


def test_publishing_leaves_no_empty_staging_folders_and_keeps_other_staged_batches(
    lake: Lake,
) -> None:
    from foodtaster.state.publish import publish_batch

    for batch_id in ("2026112000", "2026112001"):
        staged = Path(lake.staged_valid("orders", "2026-11-20", batch_id))
        staged.mkdir(parents=True)
        (staged / "part-0.parquet").write_text(f"rows of {batch_id}")
    staging = Path(lake.staged_valid("orders", "2026-11-20", "x")).parents[1]
    assert staging.name == "_staging"

    publish_batch(lake, "orders", "2026-11-20", "2026112000")
    # the other hour's batch is still staged under the same date: nothing else goes
    assert [p.name for p in (staging / "batch_date=2026-11-20").iterdir()] == [
        "batch_id=2026112001"]
    publish_batch(lake, "orders", "2026-11-20", "2026112001")
    assert not staging.exists()
    valid = Path(lake.valid("orders", "2026-11-20", "x")).parent
    assert sorted(p.name for p in valid.iterdir()) == [
        "batch_id=2026112000", "batch_id=2026112001"]

    # publishing again (a rerun) swaps the old partition out and still leaves nothing behind
    staged = Path(lake.staged_valid("orders", "2026-11-20", "2026112000"))
    staged.mkdir(parents=True)
    (staged / "part-0.parquet").write_text("rows of the rerun")
    path = publish_batch(lake, "orders", "2026-11-20", "2026112000")
    assert (Path(path) / "part-0.parquet").read_text() == "rows of the rerun"
    assert not staging.exists()
