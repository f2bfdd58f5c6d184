"""payment_events, the bundled dataset whose contract is a JSON Schema file, through the whole job:
landed, judged, split, gated and published, and held to the invariants: nothing lost (landed =
valid + quarantined), nothing let through (no line its truth quarantines is in valid/), every
quarantined line's exact bytes and reasons (rule by keyword, column by path) as its truth
says, valid/ typed by the schema's typed view and whole."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from support.frames import batch_frame
from support.lake import copy_lake
from support.tasted import inbox_lines, land_and_run

from foodtaster.engine.batch.job import BatchRun
from foodtaster.engine.run import run_batch
from foodtaster.registry import get_dataset
from foodtaster.state.lake import Lake
from foodtaster.state.tables import VALID
from foodtaster_dev.sample_payments import DATASET, generate_payments

DAY = "2026-11-20"
BATCH = "pay-1"
LAYERS = ("bytes", "parse")


@pytest.fixture(scope="module")
def tasted(spark, tmp_path_factory):
    lake = Lake(str(tmp_path_factory.mktemp("lake")))
    folder = Path(lake.inbox(DATASET, DAY))
    made = generate_payments(folder, messages=400, seed=31, poison_rate=0.15, files=2, gzip_files=1,
                             batch_date=DAY)
    return {**land_and_run(spark, lake, DATASET, DAY, BATCH), "made": made, "lines": inbox_lines(folder)}


def _place(row: dict) -> tuple[str, int]:
    return row["_source_file"].rsplit("/", 1)[-1], row["_line_number"]


def test_nothing_is_lost_and_nothing_let_through(tasted):
    made, summary = tasted["made"], tasted["summary"]
    assert summary["messages"] == 400 == summary["valid"] + summary["quarantined"]
    assert (len(tasted["valid"]), len(tasted["quarantine"])) == (summary["valid"], summary["quarantined"])
    truth = {(t.file, t.line): t for t in made.truth}
    assert {_place(r) for r in tasted["valid"]} == {p for p, t in truth.items() if t.expected == "valid"}
    assert {_place(r) for r in tasted["quarantine"]} == {p for p, t in truth.items() if t.expected != "valid"}


def test_each_quarantined_line_keeps_its_bytes_and_the_reasons_its_truth_lists(tasted):
    truth = {(t.file, t.line): t for t in tasted["made"].truth}
    for row in tasted["quarantine"]:
        place = _place(row)
        assert bytes(row["_raw"]) == tasted["lines"][place]
        got = {(r["rule"], r["column"]) for r in row["reasons"]}
        if all(r["layer"] in LAYERS for r in row["reasons"]):
            continue  # the bytes and parse layers' rules, as for every dataset
        assert got == set(truth[place].reasons), (place, truth[place].kind)


def test_valid_rows_are_typed_by_the_schema_and_keep_what_it_does_not_name(tasted):
    schema = tasted["valid_schema"]
    charge = schema["data"].dataType["object"].dataType
    assert str(charge["amount"].dataType) == "LongType()"  # a 64-bit integer, as readers expect
    assert str(schema["livemode"].dataType) == "BooleanType()"
    assert str(schema["created"].dataType) == "StringType()"  # a oneOf: its JSON text
    assert "_unknown" in schema.names and "_raw" not in schema.names
    assert all(r["data"]["object"]["amount"] > 0 for r in tasted["valid"])


def test_drift_counts_every_key_the_schema_does_not_name_by_its_pattern(tasted):
    """The JSON Schema front-end records drift from the same parse: the keys valid/ keeps in
    `_unknown` and the properties `additionalProperties: false` quarantined, each by its pattern;
    the schema has no `producer` property, so the producer is unknown."""
    from foodtaster.contract.path import Path as FieldPath

    drift = tasted["summary"]["drift"]
    counted = {p["pattern"]: p["messages"] for p in drift["paths"]}
    assert {p["producer"] for p in drift["paths"]} <= {"(unknown)"}
    kept = [{str(FieldPath.parse(k).pattern) for k in row["_unknown"] or {}} for row in tasted["valid"]]
    closed = [{str(FieldPath.parse(r["column"]).pattern) for r in row["reasons"]
               if r["rule"].endswith("additionalProperties")} for row in tasted["quarantine"]]
    found = set().union(*kept, *closed)
    assert found and found <= set(counted)
    for pattern in found:  # at least the messages written with it (a held one is counted too)
        assert counted[pattern] >= sum(pattern in keys for keys in kept + closed)
    assert drift["messages"] == tasted["summary"]["messages"]


def test_the_summary_says_the_gate_and_counts_the_reasons_by_keyword_and_path(tasted):
    summary = tasted["summary"]
    assert summary["gate"]["suite"] and not summary["gate"].get("skipped")
    assert summary["published"] == summary["gate"]["passed"]
    keywords = {rule.rsplit(".", 1)[1].split("(")[0] for rule in summary["reasons"] if "." in rule}
    assert {"pattern", "type", "required", "enum", "oneOf", "additionalProperties", "format"} <= keywords
    assert sum(summary["reasons"].values()) >= summary["quarantined"]


def test_a_redrive_after_a_schema_fix_publishes_what_the_fix_admits(spark, tasted, tmp_path_factory):
    """The producer's schema changes (ids may now start `event_`): a redrive judges the
    quarantine by the new file and publishes the lines whose only reason it was."""
    from foodtaster.engine.second_chances.redrive import RedriveRun, Selection, run_redrive

    target = tmp_path_factory.mktemp("redrive") / "lake"
    lake = copy_lake(tasted["lake"], target)
    config = get_dataset(DATASET)
    schema = json.loads(config.schema_file.read_text())
    schema["properties"]["id"]["pattern"] = "^(evt|event)_[A-Za-z0-9]+$"
    fixed_file = target.parent / "payment_events.schema.json"
    fixed_file.write_text(json.dumps(schema))
    fixed = dataclasses.replace(config, contract=str(fixed_file))
    only_id = [t for t in tasted["made"].truth if set(t.reasons) == {("id.pattern", "id")}]
    assert only_id, "the batch has a line whose only fault is its id"
    report = run_redrive(spark, RedriveRun(config=fixed, lake=lake, by="test", why="ids may start event_",
                                           selection=Selection(DAY, DAY), redrive_id="r1"))
    assert report["counts"]["published"] == len(only_id)
    published = batch_frame(spark, lake, DATASET, VALID, "redrive-r1").collect()
    assert sorted(_place(r.asDict()) for r in published) == sorted((t.file, t.line) for t in only_id)


def test_a_keyword_the_dataset_ignores_is_not_judged_and_the_summary_says_so(spark, tmp_path):
    from foodtaster.sources.inbox import land_batch

    lake = Lake(str(tmp_path / "lake"))
    made = generate_payments(Path(lake.inbox(DATASET, DAY)), messages=80, seed=5, poison_rate=0.5,
                             files=1, batch_date=DAY, kinds=["pattern_mismatch"])
    ignored = ("#/properties/id/pattern",)
    config = dataclasses.replace(get_dataset(DATASET), ignore=ignored)
    landed = land_batch(lake, DATASET, DAY, batch_id="ignored")
    run = BatchRun(config=config, input_path=landed.raw_path, lake=lake, batch_id="ignored", batch_date=DAY)
    summary = run_batch(spark, run).to_json()
    assert summary["not_judged"] == list(ignored)
    assert "id.pattern" not in summary["reasons"]
    broken_ids = [t for t in made.truth if ("id.pattern", "id") in t.reasons]
    assert broken_ids and summary["valid"] >= len(broken_ids)
