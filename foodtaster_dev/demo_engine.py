"""Run the validation job on a generated sample batch and print what happened."""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from foodtaster.registry import DatasetConfig

TOP_REASONS = 8
# A contract whose Python check kills its own process (SIGSEGV) on items 15
# (foodtaster_dev/contracts/checked.py, `KILLERS`: 13 to 18 each end it another way): one message
# is made so.
CRASHING_CONTRACT = "foodtaster_dev.contracts.checked:OrdersKilling"
UNLUCKY_ITEMS = 15


_NATURAL_UNLUCKY = re.compile(rb'("items":\s*)1[3-8](?=\s*[,}])')


def plant_crash(paths: list[str]) -> tuple[str, int]:
    """Give one valid-looking message (from the middle of the first file, its message id seen
    once) `items` 15, on which the crashing contract's check kills its process, and every message
    the generator gave 13 to 18 another count (12), so that exactly one crashes; returns its file
    and line."""
    for other in paths:
        opener = gzip.open if other.endswith(".gz") else open
        with opener(other, "rb") as handle:
            content = _NATURAL_UNLUCKY.sub(rb"\g<1>12", handle.read())
        with opener(other, "wb") as handle:
            handle.write(content)
    file = Path(paths[0])
    lines = file.read_bytes().split(b"\n")
    ids: Counter[str] = Counter()
    messages: dict[int, dict[str, Any]] = {}
    for number, line in enumerate(lines, start=1):
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and isinstance(message.get("message_id"), str):
            ids[message["message_id"]] += 1
            messages[number] = message
    chosen = next(n for n in sorted(messages, key=lambda n: abs(n - len(lines) // 2))
                  if ids[messages[n]["message_id"]] == 1 and type(messages[n].get("items")) is int)
    lines[chosen - 1] = json.dumps({**messages[chosen], "items": UNLUCKY_ITEMS}).encode()
    file.write_bytes(b"\n".join(lines))
    return file.name, chosen


def format_crashes(summary: dict[str, Any]) -> str:
    """What crash isolation did in this run, for a person."""
    isolated = summary.get("crash_isolated") or []
    if not isolated:
        known = summary.get("reasons", {}).get("crash.isolated", 0)
        return (f"crash isolation: no message crashed this run; {known} known crashing message(s) "
                "were listed already and quarantined unjudged (crash.isolated)")
    lines = [f"crash isolation: the job crashed on {len(isolated)} message(s), isolated them, "
             "listed them (source crash) and finished the batch:"]
    lines += [f"    {i['source_file'].rsplit('/', 1)[-1]} line {i['line_number']}: {i['why']}"
              for i in isolated]
    return "\n".join(lines)


def format_report(summary: dict[str, Any], config: DatasetConfig) -> str:
    """A person's view of a batch summary: counts, rate vs thresholds, gate, verdict, reasons, paths."""
    gate = summary["gate"]
    if gate.get("skipped"):
        gate_line = "skipped"
    elif gate["passed"]:
        gate_line = f"passed ({len(gate['results'])} expectations)"
    else:
        failed = ", ".join(f"{f['expectation']}({f.get('column') or ''})" for f in gate["failed"])
        gate_line = f"FAILED: {failed}"
    verdict = summary.get("verdict", {})
    outcome = "published" if summary.get("published") else (
        "staged, awaiting the publish task" if verdict.get("publish") else "HELD (not published)")
    why = "; ".join(verdict.get("why", ())) or "all thresholds met"
    lines = [
        f"dataset {summary['dataset']}  batch {summary['batch_id']}  date {summary['batch_date']}",
        f"  messages            {summary['messages']:>9,}",
        f"  valid               {summary['valid']:>9,}",
        f"  quarantined         {summary['quarantined']:>9,}",
        f"  duplicates dropped  {summary['duplicates_dropped']:>9,}",
        f"  quarantine rate     {summary['quarantine_rate']:>9.2%}   "
        f"(alert_rate {config.alert_rate:.2%}, hold_rate {config.hold_rate:.2%})",
        f"  batch gate          {gate_line}",
        f"  outcome             {outcome} [{verdict.get('severity', '?')}]: {why}",
        "  top reasons",
    ]
    reasons = list(summary["reasons"].items())[:TOP_REASONS]
    lines += [f"    {count:>7,}  {rule}" for rule, count in reasons] or ["    (none)"]
    paths, tables = summary["paths"], summary["tables"]
    table = f"{tables['names']['namespace']}.{tables['names']['valid']}"
    valid = (f"{table} main, tag {tables.get('tag')}" if summary.get("published")
             else f"{table} branch {tables['branch']} (not published)")
    lines += [
        "  outputs",
        f"    valid        {valid}",
        f"    quarantine   {tables['names']['namespace']}.{tables['names']['quarantine']} "
        f"(snapshot {tables.get('quarantine_snapshot')})",
        f"    summary      {paths['report']}/summary.json",
        f"    data docs    {paths.get('data_docs') or '-'}",
        f"  took {summary['timings']['total_s']:.1f}s",
    ]
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", default="orders")
    parser.add_argument("--date", default="2026-11-20", help="the batch date (inbox dt=<date>)")
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--poison-rate", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--lake", default=None, help="lake root (default: $FOODTASTER_LAKE or ./data/lake)")
    parser.add_argument("--no-crash", dest="crash", action="store_false",
                        help="the dataset's own contract, no message crashing a Python check")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from foodtaster.engine.batch.job import BatchRun
    from foodtaster.engine.run import run_batch
    from foodtaster.engine.spark import build_session
    from foodtaster.lake_paths import lake_root
    from foodtaster.logs import configure
    from foodtaster.registry import get_dataset
    from foodtaster.sources.inbox import land_batch
    from foodtaster.state.lake import Lake
    from foodtaster_dev import sample

    configure()
    config = get_dataset(args.dataset)
    if args.crash:
        config = dataclasses.replace(config, contract=CRASHING_CONTRACT)
    lake = Lake(args.lake or lake_root())
    inbox = lake.inbox(config.name, args.date)
    generated = sample.generate_batch(
        inbox, messages=args.messages, seed=args.seed, poison_rate=args.poison_rate,
        batch_date=args.date, max_message_bytes=config.max_message_bytes, keep_truth=False,
    )
    print(f"generated {generated.messages:,} messages in {len(generated.files)} files under {inbox}")
    if args.crash:
        name, line = plant_crash(generated.files)
        print(f"contract {CRASHING_CONTRACT}: its Python check kills its process (SIGSEGV) on items "
              f"{UNLUCKY_ITEMS}; "
              f"{name} line {line} has items {UNLUCKY_ITEMS}")
    landed = land_batch(lake, config.name, args.date)
    print(f"landed batch {landed.batch_id}: {len(landed.files)} files, {landed.messages:,} lines "
          f"-> {landed.raw_path}")
    spark = build_session(f"foodtaster-demo-{config.name}")
    try:
        summary = run_batch(spark, BatchRun(config=config, input_path=landed.raw_path, lake=lake,
                                            batch_id=landed.batch_id, batch_date=args.date)).to_json()
    finally:
        spark.stop()
    print(format_report(summary, config))
    if args.crash:
        print(format_crashes(summary))
    return 0
