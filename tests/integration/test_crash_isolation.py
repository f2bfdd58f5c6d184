"""Crash isolation (issue 10) on the shared SparkSession, with real files and a real lake: a
contract whose Python check raises on `items` 13, in a batch of a hundred and more with a few such
messages (two in the halves of one file, so the bisection follows both), and a lake that
goes away mid-run."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import shutil
import threading
import time
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from support.frames import batch_frame

from foodtaster.engine.batch.crash import TooManyCrashes
from foodtaster.engine.batch.job import BatchRun
from foodtaster.engine.run import run_batch
from foodtaster.registry import get_dataset
from foodtaster.sources.inbox import land_batch
from foodtaster.state.lake import FAULT_AT_ENV, FAULT_DIR_ENV, Lake
from foodtaster.state.poison import PoisonList, fingerprint
from foodtaster.state.tables import QUARANTINE, VALID
from foodtaster_dev import sample

DATE = "2026-11-20"
CRASHING = "foodtaster_dev.contracts.checked:OrdersCrashing"
FIRST, SECOND = f"orders-{DATE}-part-0000.jsonl", f"orders-{DATE}-part-0001.jsonl"
MESSAGES = 120  # two files of 60 lines: the search halves them as it would thousands
EARLIER, LATER = 12, 40  # in the lower and the upper half of FIRST
UNLUCKY = {(FIRST, EARLIER), (FIRST, LATER), (SECOND, 27)}
NATURAL_UNLUCKY = re.compile(rb'("items":\s*)13(?=\s*[,}])')
WHY = "ValueError: no rule for 13 items: the packing table skips it"


def _inbox(root: Path, unlucky: set[tuple[str, int]]) -> None:
    """MESSAGES generated messages in two files, a few of them poison; `unlucky` lines (each a
    valid message, not a redelivery) get items 13."""
    inbox = root / "inbox" / "orders" / f"dt={DATE}"
    generated = sample.generate_batch(inbox, messages=MESSAGES, seed=11, poison_rate=0.02, files=2,
                                      gzip_files=0, kinds=["nan", "wrong_type_amount", "redelivery"])
    truth = {(t.file, t.line): t.kind for t in generated.truth}
    everything = b"".join(Path(f).read_bytes() for f in generated.files)
    for path in map(Path, generated.files):
        lines = NATURAL_UNLUCKY.sub(rb"\g<1>12", path.read_bytes()).split(b"\n")  # the generator's own 13s
        for name, number in unlucky:
            if path.name == name:
                message = json.loads(lines[number - 1])
                assert truth[(name, number)] == "good"
                assert everything.count(json.dumps(message["message_id"]).encode()) == 1  # not redelivered
                lines[number - 1] = json.dumps({**message, "items": 13}).encode()
        path.write_bytes(b"\n".join(lines))


def _run(tmp_path: Path, unlucky=UNLUCKY, **config) -> BatchRun:
    lake = Lake(str(tmp_path))
    _inbox(tmp_path, unlucky)
    landed = land_batch(lake, "orders", DATE)
    settings = dataclasses.replace(get_dataset("orders"), contract=CRASHING, **config)
    return BatchRun(config=settings, input_path=landed.raw_path, lake=lake, batch_id=landed.batch_id,
                    batch_date=DATE, gate=False)


def _accounted(summary: dict) -> None:
    assert summary["messages"] == MESSAGES
    assert summary["messages"] == summary["valid"] + summary["quarantined"] + summary["duplicates_dropped"]


def _crash_rows(spark, run: BatchRun) -> dict[tuple[str, int], list]:
    quarantine = batch_frame(spark, run.lake, "orders", QUARANTINE, run.batch_id)
    crashed = quarantine.where(F.exists("reasons", lambda r: r.layer == "crash"))
    return {(r._source_file.rsplit("/", 1)[1], r._line_number): r.reasons for r in crashed.collect()}


def _isolated(summary: dict) -> set[tuple[str, int]]:
    return {(i["source_file"].rsplit("/", 1)[1], i["line_number"]) for i in summary["crash_isolated"]}


def test_crashing_messages_are_isolated_listed_quarantined_and_not_isolated_again(spark, tmp_path):
    run = _run(tmp_path)
    first = run_batch(spark, run).to_json()

    _accounted(first)
    assert _isolated(first) == UNLUCKY and {i["why"] for i in first["crash_isolated"]} == {WHY}
    assert first["reasons"]["crash.isolated"] == 3 and first["listed"] == 0  # new: they count
    rows = _crash_rows(spark, run)
    assert set(rows) == UNLUCKY
    for reasons in rows.values():
        assert [(r.layer, r.rule, r.message) for r in reasons] == [("crash", "crash.isolated", WHY)]
    entries = PoisonList(run.lake, "orders").entries()
    assert {(e.source, e.match, e.why) for e in entries} == {("crash", "fingerprint", WHY)}
    seen = {(e.first_seen.source_file.rsplit("/", 1)[1], e.first_seen.line_number) for e in entries}
    assert seen == UNLUCKY and {e.first_seen.batch_id for e in entries} == {run.batch_id}
    valid = batch_frame(spark, run.lake, "orders", VALID, run.batch_id)
    assert valid.where(F.col("items") == 13).count() == 0
    # The poison list, the summary and the quarantine agree.
    quarantine = batch_frame(spark, run.lake, "orders", QUARANTINE, run.batch_id)
    raw = {(fingerprint(bytes(r._raw)), len(r._raw))
           for r in quarantine.where(F.exists("reasons", lambda r: r.rule == "crash.isolated")).collect()}
    assert raw == {(e.value, e.size) for e in entries}

    second = run_batch(spark, run).to_json()  # the messages are listed: nothing crashes, nothing is isolated
    _accounted(second)
    assert second["crash_isolated"] == [] and second["listed"] == 3
    assert set(_crash_rows(spark, run)) == UNLUCKY
    assert {k: v for k, v in second.items() if k in ("valid", "quarantined")} == {
        "valid": first["valid"], "quarantined": first["quarantined"]}

    poison = PoisonList(run.lake, "orders")
    removed = next(e for e in poison.entries() if e.first_seen.line_number == LATER)
    poison.remove(removed.id, "the check was fixed; judge it again")
    third = run_batch(spark, run).to_json()  # judged again, so it crashes again, and is isolated again
    _accounted(third)
    assert _isolated(third) == {(FIRST, LATER)} and third["listed"] == 2
    assert len(PoisonList(run.lake, "orders").entries()) == 3


def test_more_crashing_messages_than_the_bound_fail_the_batch_naming_those_found(spark, tmp_path):
    run = _run(tmp_path, max_crash_isolations=2)
    with pytest.raises(TooManyCrashes, match=rf"more than max_crash_isolations=2 .*{FIRST} line {EARLIER}, "
                                             rf".*{FIRST} line {LATER}"):
        run_batch(spark, run)
    entries = PoisonList(run.lake, "orders").entries()
    assert sorted(e.first_seen.line_number for e in entries) == [EARLIER, LATER]  # they stay listed
    assert not Path(run.lake.summary("orders", run.batch_id)).exists()


def test_a_lake_that_goes_away_mid_run_fails_the_batch_and_nothing_is_listed(
    spark, tmp_path, monkeypatch, caplog
):
    run = _run(tmp_path / "lake", unlucky=set())
    faults = tmp_path / "faults"
    faults.mkdir()
    monkeypatch.setenv(FAULT_AT_ENV, "flagged")
    monkeypatch.setenv(FAULT_DIR_ENV, str(faults))

    def pull_the_lake() -> None:  # after the one pass, before anything is written
        deadline = time.monotonic() + 600
        while not (faults / "flagged.reached").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        tables = Path(run.lake.root) / "warehouse"  # where the tables' files go
        shutil.rmtree(tables, ignore_errors=True)
        tables.write_text("not a folder: the lake's disk is gone")
        (faults / "flagged.go").touch()

    thread = threading.Thread(target=pull_the_lake, daemon=True)
    thread.start()
    with caplog.at_level(logging.INFO, logger="foodtaster"), pytest.raises(Exception) as failed:
        run_batch(spark, run)
    thread.join(5)
    assert not isinstance(failed.value, TooManyCrashes)
    assert PoisonList(run.lake, "orders").entries() == []
    assert not any("event=crash" in record.getMessage() for record in caplog.records)
