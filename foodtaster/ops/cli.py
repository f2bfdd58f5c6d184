"""`foodtaster <command>`: the on-call person's view of the lake and the ways out of quarantine.

The lake commands (`poison`, `quarantine`, `batches`) start neither Airflow nor a
JVM: they are a thin edge over foodtaster.state (pyarrow and fsspec). Exit codes:
0 done, 1 not found in the lake, 2 a usage error (the message says what to do), 3 the
batch is being written by a run (try again when it has finished).
"""

from __future__ import annotations

import argparse
import base64
import sys
from typing import Any

from foodtaster.errors import UsageError
from foodtaster.ops.cli_contract import add_contract_commands
from foodtaster.ops.cli_tables import add_tables_commands
from foodtaster.ops.cli_ways_out import add_way_out_commands
from foodtaster.ops.drift import add_drift_command
from foodtaster.ops.masked import Shown
from foodtaster.ops.terminal import (
    cut,
    dataset_and_lake,
    file_name,
    json_lines,
    print_table,
    printable,
    table_lines,
)

USAGE_ERROR = UsageError.exit_code
RAW_CHARS = 300  # raw text shown per row in `quarantine show` (all of it with --json)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="foodtaster", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)

    from foodtaster.ops import trend_chart

    _add_lake_commands(commands)
    trend_chart.add_arguments(commands.add_parser(
        "trend", help="the quarantine rate of every batch, as a chart"))
    add_way_out_commands(commands)
    add_contract_commands(commands)
    add_drift_command(commands)
    add_tables_commands(commands)

    args = parser.parse_args(argv)
    from foodtaster.errors import Busy, FoodtasterError

    try:
        return int(args.run(args) or 0)
    except FoodtasterError as err:  # its exit code says what kind: usage, not found, busy
        if isinstance(err, UsageError):
            print(f"foodtaster: error: {err}", file=sys.stderr)
        elif isinstance(err, Busy):  # a run of the batch is live: a recall waits for it
            print(f"foodtaster: {err}; try again when it has finished", file=sys.stderr)
        else:
            print(f"foodtaster: {err}", file=sys.stderr)
        return err.exit_code


def _add_lake_commands(commands: argparse._SubParsersAction) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dataset", help="the dataset (default: the registry's only dataset)")
    common.add_argument("--lake", help="the lake root (default: $FOODTASTER_LAKE, else ./data/lake)")

    poison = commands.add_parser("poison", help="the poison list: messages every run quarantines")
    verbs = poison.add_subparsers(dest="verb", required=True)
    ls = verbs.add_parser("ls", parents=[common], help="the entries in force")
    ls.add_argument("--history", action="store_true", help="every addition and removal, in order")
    ls.add_argument("--json", action="store_true", help="JSON lines, for scripts")
    ls.set_defaults(run=poison_ls)

    add = verbs.add_parser("add", parents=[common], help="list a message, or every message of a key")
    what = add.add_mutually_exclusive_group(required=True)
    what.add_argument("--batch", help="with --file and --line: the message at that place")
    what.add_argument("--message-id", help="every message with this value of the unique key (a key "
                                           "of several fields: their values as a JSON array, "
                                           "'[\"DHL\",\"1Z99\"]')")
    what.add_argument("--fingerprint", help="the SHA-256 of the message's bytes (the line, no ending)")
    add.add_argument("--file", help="with --batch: the file's name, as in `quarantine show`")
    add.add_argument("--line", type=int, help="with --batch: the line number (1-based)")
    add.add_argument("--why", required=True, help="why it is poison: the reason's message")
    add.add_argument("--source", choices=("operator", "downstream"), default="operator",
                     help="who found it: an operator, or a consumer that crashed on it")
    add.add_argument("--by", help="who adds it (default: your user name)")
    add.add_argument("--recall", action="store_true",
                     help="with --batch: also take the published row back into the batch's quarantine "
                          "(run it again to finish an interrupted recall)")
    add.set_defaults(run=poison_add)

    rm = verbs.add_parser("rm", parents=[common], help="take an entry out of force (recorded)")
    rm.add_argument("entry", help="the entry's id, from `foodtaster poison ls`")
    rm.add_argument("--why", required=True, help="why it is no longer poison")
    rm.add_argument("--by", help="who removes it (default: your user name)")
    rm.set_defaults(run=poison_rm)

    quarantine = commands.add_parser("quarantine", help="quarantined messages")
    verbs = quarantine.add_subparsers(dest="verb", required=True)
    verbs.add_parser("ls", parents=[common], help="batches with quarantined messages, with counts") \
        .set_defaults(run=quarantine_ls)
    show = verbs.add_parser("show", parents=[common], help="a batch's quarantined messages")
    show.add_argument("--batch", required=True, help="the batch id, from `foodtaster quarantine ls`")
    show.add_argument("--rule", help="only messages with a reason of this rule (e.g. json.invalid)")
    show.add_argument("--limit", type=int, default=20, help="at most this many messages (default 20)")
    show.add_argument("--json", action="store_true", help="JSON lines (exact bytes in base64 where shown)")
    show.add_argument("--raw", action="store_true",
                      help="the exact bytes, personal values unmasked: only for those allowed to read them")
    show.set_defaults(run=quarantine_show)

    batches = commands.add_parser("batches", parents=[common], help="the ledger: every batch's outcome")
    batches.set_defaults(run=ledger_batches)


def poison_ls(args: argparse.Namespace) -> int:
    from foodtaster.state.poison import PoisonList

    lake, dataset = dataset_and_lake(args)
    poison = PoisonList(lake, dataset)
    if args.history:
        records = poison.history()
        if args.json:
            json_lines(records)
            return 0
        events = [(e["at"][:19], e["type"], e["entry"]["id"] if e["type"] == "added" else e["id"],
                   e["entry"]["why"] if e["type"] == "added" else e["why"],
                   e["entry"]["added_by"] if e["type"] == "added" else e["by"]) for e in records]
        print_table(("when", "event", "entry", "why", "by"), events, empty="no history: nothing ever listed")
        return 0
    entries = poison.entries()
    if args.json:
        json_lines([e.as_dict() for e in entries])
        return 0
    rows = [(e.id, e.match, cut(e.value, 20), e.source, e.added_by, e.added_at[:19],
             f"{e.first_seen.batch_id} {file_name(e.first_seen.source_file)}:{e.first_seen.line_number}"
             if e.first_seen else "", e.why) for e in entries]
    print_table(("id", "match", "value", "source", "by", "added", "first seen", "why"), rows,
                 empty=f"the poison list of {dataset} is empty")
    return 0


def poison_add(args: argparse.Namespace) -> int:
    from foodtaster.state.browse import message_bytes
    from foodtaster.state.poison import PoisonList, PoisonListError, fingerprint

    lake, dataset = dataset_and_lake(args)
    seen = None
    if args.recall and args.batch is None:
        raise PoisonListError("--recall needs --batch, --file and --line: the published row to take back")
    if args.batch is not None:
        if args.file is None or args.line is None:
            raise PoisonListError("--batch needs --file and --line: the message's place in the batch")
        raw, seen = message_bytes(lake, dataset, args.batch, args.file, args.line)
        match, value = "fingerprint", fingerprint(raw)
    elif args.message_id is not None:
        match, value = "key", args.message_id
    else:
        match, value = "fingerprint", args.fingerprint.lower()
    entry = PoisonList(lake, dataset).add(match, value, args.why, args.source, added_by=args.by,
                                          first_seen=seen, size=len(raw) if seen else None)
    print(f"listed {entry.id}: {entry.match} {entry.value} ({entry.source}: {entry.why})")
    if args.recall:
        from foodtaster.state.recall import recall

        done = recall(lake, dataset, entry, seen, by=args.by or entry.added_by)
        counts = (f"{done.messages:,} messages = {done.valid:,} valid + {done.quarantined:,} quarantined + "
                  f"{done.duplicates_dropped:,} duplicates dropped" if done.messages is not None
                  else f"{done.valid:,} valid, {done.quarantined:,} quarantined")
        print(f"recalled {file_name(done.source_file)}:{done.line_number} of batch {done.batch_id} "
              f"({'moved to the quarantine' if done.moved else 'was already recalled'}): {counts}, "
              f"{done.recalled:,} recalled")
    return 0


def poison_rm(args: argparse.Namespace) -> int:
    from foodtaster.state.poison import PoisonList

    lake, dataset = dataset_and_lake(args)
    entry = PoisonList(lake, dataset).remove(args.entry, args.why, removed_by=args.by)
    print(f"removed {entry.id}: {entry.match} {entry.value}; the next run judges it normally")
    return 0


def quarantine_ls(args: argparse.Namespace) -> int:
    from foodtaster.state.browse import quarantine_batches

    lake, dataset = dataset_and_lake(args)
    rows = [(b["batch_date"], b["batch_id"], f"{b['quarantined']:,}", f"{b['listed']:,}",
             f"{b['top_reason']} ({b['top_reason_count']:,})" if b["top_reason"] else "")
            for b in quarantine_batches(lake, dataset)]
    print_table(("date", "batch", "quarantined", "listed", "top reason"), rows, right={2, 3},
                 empty=f"no quarantine partition for {dataset} in {lake.root}")
    return 0


def quarantine_show(args: argparse.Namespace) -> int:
    from foodtaster.state.browse import quarantined_rows

    if args.limit < 1:
        print("foodtaster: error: --limit must be 1 or more", file=sys.stderr)
        return USAGE_ERROR
    lake, dataset = dataset_and_lake(args)
    rows = quarantined_rows(lake, dataset, args.batch, args.rule, args.limit)
    shown = Shown.of(dataset, lake.root, args.raw)
    if args.json:
        json_lines([{
            "batch_id": r["_batch_id"], "source_file": r["_source_file"], "line_number": r["_line_number"],
            "reasons": r["reasons"], "raw": shown.text(r["_raw"]),
            **({"raw_base64": base64.b64encode(r["_raw"]).decode("ascii")} if shown.exact else {}),
        } for r in rows])
        return 0
    if not rows:
        print(f"no quarantined message in batch {args.batch}"
              + (f" with rule {args.rule}" if args.rule else ""))
        return 0
    for r in rows:
        print(f"{file_name(r['_source_file'])}:{r['_line_number']}  (batch {r['_batch_id']})")
        reasons = [(x["layer"], x["rule"], x["column"] or "", printable(x["message"] or ""),
                    printable(x["value"] or "")) for x in r["reasons"] or ()]
        for line in table_lines(("layer", "rule", "column", "message", "value"), reasons):
            print(f"    {line}")
        print(f"    raw: {raw_shown(shown.text(r['_raw']), whole=args.raw)}\n")
    return 0


def raw_shown(text: str, whole: bool) -> str:
    """A message's text for `quarantine show`: all of it with --raw (every byte, escaped where
    a terminal would act on it), else its first RAW_CHARS characters, saying where it is cut."""
    if whole or len(text) <= RAW_CHARS:
        return text
    return (f"{text[:RAW_CHARS]}… (cut at character {RAW_CHARS} of {len(text)}: --raw or --json "
            "shows all of it)")


def ledger_batches(args: argparse.Namespace) -> int:
    from foodtaster.state.ledger import batch_entries

    lake, dataset = dataset_and_lake(args)
    rows = [(e["batch_date"], e["batch_id"], e["verdict"], e.get("severity", ""), f"{e['messages']:,}",
             f"{e['valid']:,}", f"{e['quarantined']:,}", f"{e.get('listed', 0):,}",
             f"{e['duplicates_dropped']:,}", f"{float(e['quarantine_rate']):.2%}")
            for e in batch_entries(lake, dataset)]
    print_table(("date", "batch", "verdict", "severity", "messages", "valid", "quarantined", "listed",
                  "duplicates", "rate"), rows, right=set(range(4, 10)),
                 empty=f"no batch of {dataset} in the ledger of {lake.root}")
    _print_ways_out(lake, dataset)
    return 0


def _print_ways_out(lake: Any, dataset: str) -> None:
    """Below the batches: the releases and redrives the ledger recorded, in order."""
    from foodtaster.state.ledger import redrive_entries

    rows = [(e["recorded_at"][:19], e.get("kind", "redrive"), e.get("released_batch") or e["batch_id"],
             e.get("by", ""), *(f"{e['counts'].get(name, 0):,}" for name in ("published", "duplicate",
                                                                              "quarantined")),
             e.get("why", "")) for e in redrive_entries(lake, dataset)]
    if rows:
        print()
        print_table(("when", "what", "batch", "by", "published", "duplicates", "still failing", "why"), rows,
                     right={4, 5, 6}, empty="")


if __name__ == "__main__":
    sys.exit(main())
