"""The redrive's command line, shared by `foodtaster redrive` and `spark_jobs/redrive.py`.

    foodtaster redrive --dataset orders --from 2026-11-21 --to 2026-11-21 [--rule currency.isin]
        [--batch 20261121] [--message-id m-1] [--dry-run] [--why "contract: lowercase currency"]

No Spark is imported here; `run` starts a session only once the arguments are good.
An empty value (`--rule ""`) means "not given". The redrive DAG's plan task checks its form
into a `RedrivePlan`, whose `arguments` are this command line for the Spark job.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from foodtaster.state.lake import check_batch_id, check_date, run_id_from

OUTCOMES = ("published", "duplicate", "quarantined")


def _optional(check=None):
    def convert(value: str) -> str | None:
        if value == "":
            return None
        try:
            return check(value) if check else value
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from err
    return convert


@dataclass(frozen=True)
class RedrivePlan:
    """A redrive run's checked form (`foodtaster_airflow.redrive_steps.plan_redrive`): what its
    release and redrive tasks do. Crosses tasks as its JSON form (`to_json`, `from_json`)."""

    dataset: str
    lake: str
    redrive: bool  # a date range was given: the Spark job runs
    release: str | None  # the held batch to release first
    date_from: str | None
    date_to: str | None
    rule: str | None
    batch_id: str | None
    message_id: str | None
    dry_run: bool
    why: str
    redrive_id: str
    by: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> RedrivePlan:
        return cls(**document)

    def arguments(self) -> list[str]:
        """The redrive job's command line (`add_arguments`): an absent value is left out."""
        if not self.redrive:
            raise ValueError(f"the plan of redrive {self.redrive_id} has no date range: nothing to redrive")
        options = (("--from", self.date_from), ("--to", self.date_to), ("--rule", self.rule),
                   ("--batch", self.batch_id), ("--message-id", self.message_id),
                   ("--redrive-id", self.redrive_id), ("--why", self.why), ("--by", self.by),
                   ("--lake", self.lake))
        given = [part for flag, value in options if value for part in (flag, value)]
        return ["--dataset", self.dataset, *given, *(["--dry-run"] if self.dry_run else [])]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", required=True, help="a dataset of pipeline.yaml")
    parser.add_argument("--from", dest="date_from", required=True, type=_optional(check_date),
                        help="first batch date (YYYY-MM-DD) of the quarantined rows to judge again")
    parser.add_argument("--to", dest="date_to", required=True, type=_optional(check_date),
                        help="last batch date, included")
    parser.add_argument("--rule", type=_optional(), default=None,
                        help="only rows quarantined with a reason of this rule (e.g. currency.isin)")
    parser.add_argument("--batch", type=_optional(check_batch_id), default=None, help="only this batch")
    parser.add_argument("--message-id", type=_optional(), default=None,
                        help="only the messages with this value of the contract's unique key")
    parser.add_argument("--dry-run", action="store_true", help="judge and count by rule; move nothing")
    parser.add_argument("--redrive-id", type=_optional(run_id_from), default=None,
                        help="this redrive's id (its rows are batch redrive-<id>); default: time+random")
    parser.add_argument("--why", default="", help="why (the fix): recorded in the history and the ledger")
    parser.add_argument("--by", default=None, help="who redrives (default: your user name)")
    parser.add_argument("--lake", default=None, help="lake root (default: $FOODTASTER_LAKE or ./data/lake)")
    parser.add_argument("--master", default=None,
                        help="Spark master (default: spark-submit's, else local[*])")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> int:
    """Judge again and (unless a dry run) publish; print what moved, by rule."""
    from foodtaster.engine.second_chances.redrive import RedriveRun, Selection, run_redrive
    from foodtaster.engine.spark import build_session
    from foodtaster.lake_paths import lake_root
    from foodtaster.registry import get_dataset
    from foodtaster.state.dispositions import current_user
    from foodtaster.state.lake import Lake, new_run_id

    config = get_dataset(args.dataset)
    selection = Selection(args.date_from, args.date_to, args.rule, args.batch, args.message_id)
    redrive = RedriveRun(config=config, lake=Lake(args.lake or lake_root()), selection=selection,
                         dry_run=args.dry_run, redrive_id=args.redrive_id or new_run_id(),
                         by=args.by or current_user(), why=args.why)
    spark = build_session(f"foodtaster-redrive-{args.dataset}", master=args.master)
    try:
        report = run_redrive(spark, redrive)
    finally:
        spark.stop()
    print(json.dumps(report, sort_keys=True, default=str) if args.json else describe(report))
    return 0


def selection_words(selection: dict[str, Any]) -> str:
    """A redrive's selection for a person: its dates, and only the narrowings it has (no None)."""
    start, end = selection["date_from"], selection["date_to"]
    narrowed = {"rule": selection.get("rule"), "batch": selection.get("batch_id"),
                "message": selection.get("message_id")}
    return ", ".join([start if start == end else f"{start}..{end}",
                      *(f"{what} {value}" for what, value in narrowed.items() if value)])


def describe(report: dict[str, Any]) -> str:
    """The report for a person: what would move (dry run) or moved, by rule and by batch."""
    head = "DRY RUN, nothing moved: " if report["dry_run"] else ""
    counts = report["counts"]
    lines = [f"{head}redrive {report['redrive_id']} of {report['dataset']} "
             f"{selection_words(report['selection'])}: "
             f"{counts['published']} {'would be ' if report['dry_run'] else ''}published, "
             f"{counts['duplicate']} duplicates of published messages, "
             f"{counts['quarantined']} still failing"]
    if report["by_rule"]:
        width = max(len(rule) for rule in report["by_rule"])
        lines.append(f"  {'quarantined for':{width}}  " + "  ".join(f"{o:>11}" for o in OUTCOMES))
        for rule, outcome in report["by_rule"].items():
            lines.append(f"  {rule:{width}}  " + "  ".join(f"{outcome[o]:>11}" for o in OUTCOMES))
    for batch_id, entry in report["by_batch"].items():
        lines.append(f"  batch {batch_id} ({entry['batch_date']}): " + ", ".join(
            f"{entry[o]} {o}" for o in OUTCOMES))
    for day, path in report.get("published", {}).items():
        lines.append(f"  published {day}: {path}")
    return "\n".join(lines)
