"""Release: a held batch's valid rows, waiting on its audit branch, published on an operator's
word, with the ledger telling that it was held, who released it and why; refused when there is
nothing to release."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pyarrow as pa
import pytest
from support.lake import commit_rows

from foodtaster.ops.cli import main
from foodtaster.registry import Tables
from foodtaster.state.lake import Lake, read_json, write_json
from foodtaster.state.ledger import batch_entries, record_batch, redrive_entries
from foodtaster.state.release import ReleaseError, release_batch
from foodtaster.state.tables import VALID, DatasetTables, audit_branch, batch_tag

DATE, BATCH = "2026-11-21", "20261121"


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    lake = Lake(str(tmp_path / "lake"))
    commit_rows(lake, "orders", VALID, DATE, BATCH, pa.table({"message_id": ["m1", "m2", "m3"]}),
                publish=False)
    summary = {"dataset": "orders", "batch_id": BATCH, "batch_date": DATE, "messages": 5, "valid": 3,
               "quarantined": 2, "duplicates_dropped": 0, "quarantine_rate": 0.4, "published": False,
               "run_id": "r1", "verdict": {"publish": False, "alert": True, "severity": "critical",
                                           "why": ["quarantine rate 40.00% >= hold_rate 20.00%"]},
               "tables": {"names": asdict(Tables.named_after("orders")), "branch": audit_branch(BATCH)}}
    write_json(lake.summary("orders", BATCH), summary)
    record_batch(lake, "orders", {**{k: summary[k] for k in (
        "batch_id", "batch_date", "messages", "valid", "quarantined", "duplicates_dropped",
        "quarantine_rate")}, "verdict": "held", "severity": "critical", "why": summary["verdict"]["why"],
        "timings": {}})
    return lake


def test_release_publishes_the_staged_rows_and_the_ledger_says_who_and_why(lake):
    done = release_batch(lake, "orders", BATCH, "the 2 bad rows are a known test order", "alice")
    tables = DatasetTables(lake, "orders")
    assert tables.batch(VALID, BATCH).rows == 3  # on main now
    assert audit_branch(BATCH) not in tables.table(VALID).metadata.refs
    assert done["valid"] == 3 and done["tag"] == batch_tag(BATCH) and done["table"] == "foodtaster.orders"
    entry = batch_entries(lake, "orders")[0]
    assert entry["verdict"] == "published" and entry["released"]["by"] == "alice"
    assert entry["held_why"] == ["quarantine rate 40.00% >= hold_rate 20.00%"]
    assert entry["why"][-1] == "released by alice: the 2 bad rows are a known test order"
    assert entry["messages"] == entry["valid"] + entry["quarantined"] + entry["duplicates_dropped"]
    assert read_json(lake.summary("orders", BATCH))["published"] is True
    assert redrive_entries(lake, "orders")[0]["kind"] == "release"
    with pytest.raises(ReleaseError, match="already published"):
        release_batch(lake, "orders", BATCH, "again", "alice")


def test_release_needs_a_reason_and_a_known_batch(lake):
    with pytest.raises(ReleaseError, match="say why"):
        release_batch(lake, "orders", BATCH, " ", "alice")
    with pytest.raises(ReleaseError, match="no summary"):
        release_batch(lake, "orders", "20261122", "why", "alice")


def test_the_cli_releases_and_reports_errors_as_usage(lake, capsys):
    assert main(["release", "--dataset", "orders", "--lake", lake.root, "--batch", BATCH,
                 "--why", "checked by hand", "--by", "bob"]) == 0
    assert "3 valid rows published to foodtaster.orders (tag batch-20261121)" in capsys.readouterr().out
    assert main(["release", "--dataset", "orders", "--lake", lake.root, "--batch", BATCH,
                 "--why", "again"]) == 2
    assert "already published" in capsys.readouterr().err
    assert main(["batches", "--dataset", "orders", "--lake", lake.root]) == 0
    out = capsys.readouterr().out
    assert "published" in out and "release  20261121  bob" in out and "checked by hand" in out
