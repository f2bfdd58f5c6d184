"""Checks that end their process (issue 39) on the shared SparkSession, with real files, a real
lake and real deaths: `foodtaster_dev.contracts.checked:OrdersKilling`'s check calls `os._exit(1)`, kills
itself with SIGSEGV, calls `sys.exit()`, never returns, or eats memory, each on one `items`
value (`KILLERS`), alone and all in one batch among good messages. Every killer is isolated,
listed with what happened and quarantined `crash.isolated`; every good message is published;
a rerun isolates nothing."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from pyspark.sql import functions as F
from support.frames import batch_frame

from foodtaster.engine.batch.job import BatchRun
from foodtaster.engine.run import run_batch
from foodtaster.registry import get_dataset
from foodtaster.sources.inbox import land_batch
from foodtaster.state.lake import Lake
from foodtaster.state.poison import PoisonList
from foodtaster.state.tables import QUARANTINE, VALID
from foodtaster_dev import sample
from foodtaster_dev.contracts.checked import KILLERS

DATE = "2026-11-21"
MESSAGES = 60  # two files of 30 lines: the search halves them as it would thousands
FIRST, SECOND = f"orders-{DATE}-part-0000.jsonl", f"orders-{DATE}-part-0001.jsonl"
TIMEOUT_S = 6  # above what a chunk takes on a busy two-core machine
WHYS = {
    13: "ValueError: no rule for 13 items: the packing table skips it",
    14: "worker died: exit 1",
    15: "worker died: signal 11 (SIGSEGV)",
    16: "worker died: exit 0 (sys.exit)",
    17: f"timeout: check items.hostile(True) ran past {TIMEOUT_S} s on one message",
    18: "killed: out of memory (check items.hostile(True) asked for more than 256 MB)",
}
WHERE = {13: (SECOND, 25), 14: (FIRST, 10), 15: (FIRST, 22), 16: (SECOND, 4), 17: (SECOND, 16),
         18: (FIRST, 28)}
NATURAL_KILLERS = re.compile(rb'("items":\s*)1[3-8](?=\s*[,}])')


def _batch(root: Path, killers: dict[int, tuple[str, int]]) -> tuple[BatchRun, set[str]]:
    """A landed batch of good messages (the generator's own items 13 to 18 made 12) with each
    killer's value given to one good message at its place; returns the run and the ids of the
    good messages that must be published."""
    inbox = root / "inbox" / "orders" / f"dt={DATE}"
    generated = sample.generate_batch(inbox, messages=MESSAGES, seed=5, poison_rate=0.02, files=2,
                                      gzip_files=0, batch_date=DATE, kinds=["nan", "redelivery"])
    truth = {(t.file, t.line): t.kind for t in generated.truth}
    everything = b"".join(Path(f).read_bytes() for f in generated.files)
    good: set[str] = set()
    for path in map(Path, generated.files):
        lines = NATURAL_KILLERS.sub(rb"\g<1>12", path.read_bytes()).split(b"\n")
        for value, (name, number) in killers.items():
            if path.name == name:
                message = json.loads(lines[number - 1])
                assert truth[(name, number)] == "good"
                assert everything.count(json.dumps(message["message_id"]).encode()) == 1  # not redelivered
                lines[number - 1] = json.dumps({**message, "items": value}).encode()
        good |= {json.loads(line)["message_id"] for number, line in enumerate(lines, 1)
                 if truth.get((path.name, number)) == "good" and json.loads(line)["items"] not in KILLERS}
        path.write_bytes(b"\n".join(lines))
    lake = Lake(str(root))
    landed = land_batch(lake, "orders", DATE)
    settings = dataclasses.replace(
        get_dataset("orders"), contract="foodtaster_dev.contracts.checked:OrdersKilling", group_by=None,
        order_by=None, python_check_timeout_s=TIMEOUT_S, python_check_memory_mb=256)
    return BatchRun(config=settings, input_path=landed.raw_path, lake=lake, batch_id=landed.batch_id,
                    batch_date=DATE, gate=False), good


def _assert_every_killer_isolated_and_every_good_message_published(spark, run, summary, good, killers):
    assert summary["messages"] == MESSAGES
    assert summary["messages"] == summary["valid"] + summary["quarantined"] + summary["duplicates_dropped"]
    assert summary["reasons"].get("crash.isolated", 0) == len(killers)
    valid = batch_frame(spark, run.lake, "orders", VALID, run.batch_id)
    assert {r.message_id for r in valid.select("message_id").collect()} == good
    quarantine = batch_frame(spark, run.lake, "orders", QUARANTINE, run.batch_id)
    crashed = {(r._source_file.rsplit("/", 1)[1], r._line_number): r.reasons[0].message
               for r in quarantine.where(F.exists("reasons", lambda r: r.rule == "crash.isolated")).collect()}
    assert crashed == {where: WHYS[value] for value, where in killers.items()}


def test_every_kind_of_killer_in_one_batch_is_isolated_and_a_rerun_isolates_nothing(spark, tmp_path, caplog):
    run, good = _batch(tmp_path, WHERE)
    with caplog.at_level("INFO", logger="foodtaster"):
        first = run_batch(spark, run).to_json()

    _assert_every_killer_isolated_and_every_good_message_published(spark, run, first, good, WHERE)
    assert first["listed"] == 0
    assert sorted((i["source_file"].rsplit("/", 1)[1], i["line_number"], i["why"])
                  for i in first["crash_isolated"]) == sorted((*WHERE[v], WHYS[v]) for v in WHERE)
    entries = PoisonList(run.lake, "orders").entries()
    assert sorted((e.source, e.why, e.first_seen.line_number) for e in entries) == sorted(
        ("crash", WHYS[v], WHERE[v][1]) for v in WHERE)
    costs = [r.getMessage() for r in caplog.records if "event=crash_isolation_cost" in r.getMessage()]
    assert costs and all("spark_jobs=" in c and "seconds=" in c for c in costs)

    second = run_batch(spark, run).to_json()  # all listed: nothing is given to the check, nothing dies
    _assert_every_killer_isolated_and_every_good_message_published(spark, run, second, good, WHERE)
    assert second["crash_isolated"] == [] and second["listed"] == len(WHERE)
    assert len(PoisonList(run.lake, "orders").entries()) == len(WHERE)
