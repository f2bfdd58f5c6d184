"""The operator's command line, run as a real process on a lake written in the test (no Spark, no JVM)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys

import pytest
from support.lake import reason, write_batch

from foodtaster.state.lake import Lake
from foodtaster.state.poison import PoisonList

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LINES = [
    b'{"message_id": "m1", "amount": 5}',
    b"{'message_id': 'm2'}",
    b'{"message_id": "m3", "note": "\x1b[31mred\x1b[0m"}',
    b"\xff\xfe not utf-8",
    b'{"message_id": "m5", "amount": 9}',
]
QUARANTINED = {
    2: [reason("json.invalid", "not strict JSON: single quotes", layer="parse")],
    3: [reason("note.no_escape", "ESC in note", column="note", value="\x1b[31mred")],
    4: [reason("utf8.invalid", "not UTF-8", layer="bytes"),
        reason("json.invalid", "not JSON", layer="parse")],
}


def run(lake, *args, expect=0):
    """The CLI on the orders dataset (the registry has more than one: --dataset is needed)."""
    env = {**os.environ, "PYTHONPATH": PROJECT_ROOT, "FOODTASTER_LAKE": str(lake)}
    dataset = () if "--dataset" in args else ("--dataset", "orders")
    done = subprocess.run([sys.executable, "-m", "foodtaster", *args, *dataset], capture_output=True,
                          text=True, env=env, timeout=60)
    assert done.returncode == expect, done.stderr
    return done


@pytest.fixture
def lake(tmp_path):
    write_batch(tmp_path, "2026-11-20", "20261120", LINES[:2] + LINES[4:], {2: QUARANTINED[2]})
    write_batch(tmp_path, "2026-11-21", "20261121", LINES, QUARANTINED, verdict="held")
    return tmp_path


def test_batches_shows_the_ledger_aligned(lake):
    out = run(lake, "batches").stdout.splitlines()
    assert out[0].split() == ["date", "batch", "verdict", "severity", "messages", "valid", "quarantined",
                              "listed", "duplicates", "rate"]
    assert out[1].split() == ["2026-11-20", "20261120", "published", "ok", "3", "2", "1", "0", "0", "33.33%"]
    assert out[2].split()[:3] == ["2026-11-21", "20261121", "held"] and out[2].endswith("60.00%")
    assert len({len(line) for line in out}) == 1  # right-aligned counts: every row as wide


def test_quarantine_ls_counts_each_batch(lake):
    out = run(lake, "quarantine", "ls").stdout.splitlines()
    assert out[1].split() == ["2026-11-20", "20261120", "1", "0", "json.invalid", "(1)"]
    assert out[2].split() == ["2026-11-21", "20261121", "3", "0", "json.invalid", "(2)"]


def test_quarantine_show_escapes_control_bytes_and_filters(lake):
    out = run(lake, "quarantine", "show", "--batch", "20261121").stdout
    assert "\x1b" not in out and "\\x1b[31mred" in out and "\\xff\\xfe not utf-8" in out
    assert "part-0.jsonl:2  (batch 20261121)" in out and "not strict JSON: single quotes" in out
    only = run(lake, "quarantine", "show", "--batch", "20261121", "--rule", "utf8.invalid").stdout
    assert "part-0.jsonl:4" in only and "part-0.jsonl:2" not in only
    assert run(lake, "quarantine", "show", "--batch", "20261121", "--limit", "1").stdout.count("raw:") == 1


def test_quarantine_show_json_keeps_the_exact_bytes(lake):
    out = run(lake, "quarantine", "show", "--batch", "20261121", "--json").stdout.splitlines()
    rows = [json.loads(line) for line in out]
    assert [r["line_number"] for r in rows] == [2, 3, 4]
    assert [base64.b64decode(r["raw_base64"]) for r in rows] == LINES[1:4]
    assert [x["rule"] for x in rows[2]["reasons"]] == ["utf8.invalid", "json.invalid"]


def test_poison_add_ls_rm_round_trip(lake):
    added = run(lake, "poison", "add", "--batch", "20261121", "--file", "part-0.jsonl", "--line", "4",
                "--why", "crashes billing").stdout
    sha = hashlib.sha256(LINES[3]).hexdigest()
    assert sha in added
    run(lake, "poison", "add", "--message-id", "m5", "--why", "a test order", "--by", "alice")
    valid_line = run(lake, "poison", "add", "--batch", "20261120", "--file", "part-0.jsonl", "--line", "1",
                     "--why", "valid but known bad", "--source", "downstream").stdout
    assert hashlib.sha256(LINES[0]).hexdigest() in valid_line  # a valid row's bytes, from raw/
    entries = PoisonList(Lake(str(lake)), "orders").entries()
    assert [(e.match, e.source) for e in entries] == [
        ("fingerprint", "operator"), ("key", "operator"), ("fingerprint", "downstream")]
    assert entries[0].first_seen.line_number == 4 and entries[1].added_by == "alice"
    # a fingerprint taken from the bytes records their length, so a job hashes only that length
    assert [e.size for e in entries] == [len(LINES[3]), None, len(LINES[0])]

    table = run(lake, "poison", "ls").stdout.splitlines()
    assert table[0].split()[:4] == ["id", "match", "value", "source"] and len(table) == 4
    assert "20261121 part-0.jsonl:4" in table[1] and table[1].rstrip().endswith("crashes billing")

    run(lake, "poison", "rm", entries[1].id, "--why", "not a test order after all")
    listed = [json.loads(line) for line in run(lake, "poison", "ls", "--json").stdout.splitlines()]
    assert [e["id"] for e in listed] == [entries[0].id, entries[2].id]
    history = run(lake, "poison", "ls", "--history").stdout.splitlines()
    assert [line.split()[1] for line in history[1:]] == ["added", "added", "added", "removed"]


def test_without_a_dataset_the_cli_names_the_registrys(lake):
    done = subprocess.run([sys.executable, "-m", "foodtaster", "batches"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": PROJECT_ROOT, "FOODTASTER_LAKE": str(lake)},
                          timeout=60)
    named = "['customers', 'order_events', 'orders', 'payment_events', 'shipments']: give --dataset"
    assert done.returncode == 2 and named in done.stderr


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["poison", "add", "--fingerprint", "abc", "--why", "x"], 2, "64 lowercase hex"),
        (["poison", "add", "--batch", "20261121", "--why", "x"], 2, "needs --file and --line"),
        (["poison", "add", "--message-id", "m1"], 2, "--why"),
        (["poison", "rm", "nope", "--why", "x"], 2, "foodtaster poison ls"),
        (["poison", "add", "--batch", "nope", "--file", "f", "--line", "1", "--why", "x"], 1,
         "foodtaster batches"),
        (["quarantine", "show", "--batch", "nope"], 1, "foodtaster quarantine ls"),
        (["quarantine", "show", "--batch", "20261121", "--limit", "0"], 2, "--limit"),
        (["batches", "--dataset", "payments"], 0, "no batch of payments"),
    ],
)
def test_errors_say_what_to_do(lake, args, code, says):
    done = run(lake, *args, expect=code)
    assert says in done.stderr + done.stdout


def test_the_lake_commands_start_no_jvm_and_no_spark(lake):
    probe = ("import sys; from foodtaster.ops.cli import main; main(['batches']); "
             "print(sorted(m for m in ('pyspark', 'airflow', 'great_expectations') if m in sys.modules))")
    env = {**os.environ, "PYTHONPATH": PROJECT_ROOT, "FOODTASTER_LAKE": str(lake)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60)
    assert done.stdout.splitlines()[-1] == "[]", done.stderr


def test_the_installed_console_script_runs_the_cli(lake):
    script = os.path.join(os.path.dirname(sys.executable), "foodtaster")
    if not os.path.exists(script):  # the environment was set up without `pip install -e .`
        if os.environ.get("CI") == "true":
            pytest.fail(f"no console script at {script}: pyproject's [project.scripts] not installed")
        pytest.skip(f"no console script at {script}")
    env = {**os.environ, "PYTHONPATH": PROJECT_ROOT, "FOODTASTER_LAKE": str(lake)}
    done = subprocess.run([script, "batches", "--dataset", "orders"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0 and "20261121" in done.stdout, done.stderr


def test_quarantine_show_prints_all_with_raw_else_says_where_it_cuts():
    from foodtaster.ops.cli import RAW_CHARS, raw_shown

    long = "x" * (RAW_CHARS + 50)
    assert raw_shown(long, whole=True) == long and raw_shown("short", whole=False) == "short"
    assert raw_shown(long, whole=False) == (
        "x" * RAW_CHARS + f"… (cut at character {RAW_CHARS} of {RAW_CHARS + 50}: --raw or --json shows "
        "all of it)")
