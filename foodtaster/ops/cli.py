"""`foodtaster <command>`: the engine's commands and the on-call person's view of the lake.

The lake commands (`poison`, `quarantine`, `batches`) start neither Airflow nor a
JVM: they are a thin edge over foodtaster.state (pyarrow and fsspec). Exit codes:
0 done, 1 not found in the lake, 2 a usage error (the message says what to do), 3 the
batch is being written by a run (try again when it has finished).
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from collections.abc import Sequence
from typing import Any

USAGE_ERROR = 2
NOT_FOUND = 1
BUSY = 3  # the batch is being written: try again later
RAW_CHARS = 300  # raw text shown per row in `quarantine show` (all of it with --json)
CELL_CHARS = 60  # a table cell is cut to this many characters


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="foodtaster", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)

    from foodtaster.ops import trend

    _add_lake_commands(commands)
    trend.add_arguments(commands.add_parser("trend", help="the quarantine rate of every batch, as a chart"))
    _add_way_out_commands(commands)

    args = parser.parse_args(argv)
    from foodtaster.registry import RegistryError
    from foodtaster.state.browse import NotInLake
    from foodtaster.state.dispositions import DispositionError
    from foodtaster.state.landing import SupersedeError
    from foodtaster.state.lease import LeaseHeld
    from foodtaster.state.poison import PoisonListError
    from foodtaster.state.release import ReleaseError

    try:
        return int(args.run(args) or 0)
    except (PoisonListError, RegistryError, ReleaseError, SupersedeError, DispositionError) as err:
        print(f"foodtaster: error: {err}", file=sys.stderr)
        return USAGE_ERROR
    except NotInLake as err:
        print(f"foodtaster: {err}", file=sys.stderr)
        return NOT_FOUND
    except LeaseHeld as err:  # a run of the batch is live: a recall waits for it
        print(f"foodtaster: {err}; try again when it has finished", file=sys.stderr)
        return BUSY


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
    what.add_argument("--message-id", help="every message with this value of the unique key")
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
    show.add_argument("--json", action="store_true", help="JSON lines with the raw bytes in base64")
    show.set_defaults(run=quarantine_show)

    batches = commands.add_parser("batches", parents=[common], help="the ledger: every batch's outcome")
    batches.set_defaults(run=ledger_batches)


def _add_way_out_commands(commands: argparse._SubParsersAction) -> None:
    """The ways out of quarantine and hold: redrive, release, supersede, a row's history."""
    from foodtaster.ops import redrive

    parser = commands.add_parser("redrive",
                                 help="judge quarantined rows again after a fix; publish what passes")
    redrive.add_arguments(parser)
    parser.set_defaults(run=redrive.run)

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dataset", help="the dataset (default: the registry's only dataset)")
    common.add_argument("--lake", help="the lake root (default: $FOODTASTER_LAKE, else ./data/lake)")
    release = commands.add_parser("release", parents=[common],
                                  help="publish a held batch's staged valid rows")
    release.add_argument("--batch", required=True, help="the held batch's id (`foodtaster batches`)")
    release.add_argument("--why", required=True,
                         help="why its valid rows may be published: the ledger keeps it")
    release.add_argument("--by", help="who releases it (default: your user name)")
    release.set_defaults(run=release_batch)

    purge = commands.add_parser("purge", parents=[common],
                                help="give up on quarantined rows on purpose (recorded; the partition stays)")
    purge.add_argument("--batch", required=True, help="the batch id")
    purge.add_argument("--file", help="with --line: only the row at this file (its name will do)")
    purge.add_argument("--line", type=int, help="with --file: only the row at this line")
    purge.add_argument("--why", required=True, help="why nobody will redrive them")
    purge.add_argument("--by", help="who purges (default: your user name)")
    purge.set_defaults(run=purge_rows)

    groups = commands.add_parser("groups", help="conversations held for a poison message (group_by datasets)")
    verbs = groups.add_subparsers(dest="verb", required=True)
    ls = verbs.add_parser("ls", parents=[common], help="the open groups: poison message, batch, since, held")
    ls.add_argument("--json", action="store_true", help="JSON lines, for scripts")
    ls.set_defaults(run=groups_ls)
    release_group = verbs.add_parser(
        "release", parents=[common],
        help="stop a group's poison messages holding it; the next run publishes its held messages in order")
    release_group.add_argument("--group", required=True, help="the group's key, from `foodtaster groups ls`")
    release_group.add_argument("--why", required=True, help="why its later messages may go out: recorded")
    release_group.add_argument("--by", help="who releases it (default: your user name)")
    release_group.set_defaults(run=groups_release)

    history = commands.add_parser("history", parents=[common],
                                  help="what became of a quarantined row: status and history")
    history.add_argument("--batch", required=True, help="the row's batch id")
    history.add_argument("--file", required=True,
                         help="the row's source file, as in `quarantine show --json`")
    history.add_argument("--line", required=True, type=int, help="the row's line number")
    history.set_defaults(run=row_history)


def release_batch(args: argparse.Namespace) -> int:
    from foodtaster.state.dispositions import current_user
    from foodtaster.state.release import release_batch as release

    lake, dataset = _context(args)
    done = release(lake, dataset, args.batch, args.why, args.by or current_user())
    released = done["released"]
    print(f"released {dataset} batch {done['batch_id']} ({done['batch_date']}): {done['valid']} valid "
          f"rows published at {done['path']}; ledger: released by {released['by']}: {released['why']}")
    return 0


def purge_rows(args: argparse.Namespace) -> int:
    from foodtaster.state.dispositions import current_user, purge

    if (args.file is None) != (args.line is None):
        print("foodtaster: error: --file and --line go together (one row), or neither (the batch)",
              file=sys.stderr)
        return USAGE_ERROR
    lake, dataset = _context(args)
    rows = purge(lake, dataset, args.batch, args.why, args.by or current_user(),
                 source_file=args.file, line_number=args.line)
    print(f"purged {len(rows)} quarantined rows of {dataset} batch {args.batch}: {args.why}")
    return 0


def _conversation(args: argparse.Namespace) -> tuple[Any, str, str]:
    """The lake, the dataset and its `group_by`; a usage error for a dataset without one."""
    from foodtaster.registry import RegistryError, get_dataset

    lake, dataset = _context(args)
    group_by = get_dataset(dataset).group_by
    if not group_by:
        raise RegistryError(f"{dataset} has no conversations: give group_by and order_by in pipeline.yaml")
    return lake, dataset, group_by


def groups_ls(args: argparse.Namespace) -> int:
    from foodtaster.state.groups import open_group_report

    lake, dataset, group_by = _conversation(args)
    report = open_group_report(lake, dataset, group_by)
    if args.json:
        _json_lines(report)
        return 0
    rows = [(entry["group"], ", ".join(p["message_id"] or "(unreadable)" for p in entry["poison"]),
             ", ".join(sorted({p["batch_id"] for p in entry["poison"]})), entry["since"][:19],
             f"{entry['held']:,}") for entry in report]
    _print_table((group_by, "poison message", "batch", "since", "held"), rows, right={4},
                 empty=f"no open group of {dataset}: nothing is held for its conversation")
    return 0


def groups_release(args: argparse.Namespace) -> int:
    from foodtaster.state.browse import NotInLake
    from foodtaster.state.dispositions import DispositionError, current_user
    from foodtaster.state.groups import GroupLog, held_counts

    lake, dataset, group_by = _conversation(args)
    if not args.why.strip():
        raise DispositionError("say why the group's later messages may go out (--why)")
    released = GroupLog(lake, dataset).release_group(args.group, args.why.strip(), args.by or current_user())
    if not released:
        raise NotInLake(f"{group_by} {args.group!r} of {dataset} is not held: see `foodtaster groups ls`")
    held = held_counts(lake, dataset, group_by).get(args.group, 0)
    print(f"released {group_by} {args.group} of {dataset} ({len(released)} poison messages): the next run's "
          f"retry task publishes its {held} held messages in order")
    return 0


def row_history(args: argparse.Namespace) -> int:
    from foodtaster.state.dispositions import Dispositions

    lake, dataset = _context(args)
    log = Dispositions(lake, dataset)
    status = log.state().status(args.batch, args.file, args.line)
    print(f"{args.batch} {_file_name(args.file)}:{args.line}: {status.status}"
          + (f" ({status.where})" if status.where else ""))
    rows = [(h.at[:19], h.what, h.by, h.run or "", h.why, ", ".join(h.reasons or ()))
            for h in log.history(args.batch, args.file, args.line)]
    _print_table(("when", "what", "by", "run", "why", "reasons"), rows,
                 empty="quarantined, nothing happened to it since")
    return 0


def _context(args: argparse.Namespace) -> tuple[Any, str]:
    from foodtaster.registry import RegistryError, lake_root, load_registry
    from foodtaster.state.lake import Lake

    dataset = args.dataset
    if dataset is None:
        known = sorted(load_registry())
        if len(known) != 1:
            raise RegistryError(f"the registry has {len(known)} datasets {known}: give --dataset")
        dataset = known[0]
    return Lake(args.lake or lake_root()), dataset


def poison_ls(args: argparse.Namespace) -> int:
    from foodtaster.state.poison import PoisonList

    lake, dataset = _context(args)
    poison = PoisonList(lake, dataset)
    if args.history:
        records = poison.history()
        if args.json:
            _json_lines(records)
            return 0
        rows = [(e["at"][:19], e["type"], e["entry"]["id"] if e["type"] == "added" else e["id"],
                 e["entry"]["why"] if e["type"] == "added" else e["why"],
                 e["entry"]["added_by"] if e["type"] == "added" else e["by"]) for e in records]
        _print_table(("when", "event", "entry", "why", "by"), rows, empty="no history: nothing ever listed")
        return 0
    entries = poison.entries()
    if args.json:
        _json_lines([e.as_dict() for e in entries])
        return 0
    rows = [(e.id, e.match, _cut(e.value, 20), e.source, e.added_by, e.added_at[:19],
             f"{e.first_seen.batch_id} {_file_name(e.first_seen.source_file)}:{e.first_seen.line_number}"
             if e.first_seen else "", e.why) for e in entries]
    _print_table(("id", "match", "value", "source", "by", "added", "first seen", "why"), rows,
                 empty=f"the poison list of {dataset} is empty")
    return 0


def poison_add(args: argparse.Namespace) -> int:
    from foodtaster.state.browse import message_bytes
    from foodtaster.state.poison import PoisonList, PoisonListError, fingerprint

    lake, dataset = _context(args)
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
        print(f"recalled {_file_name(done.source_file)}:{done.line_number} of batch {done.batch_id} "
              f"({'moved to the quarantine' if done.moved else 'was already recalled'}): {counts}, "
              f"{done.recalled:,} recalled")
    return 0


def poison_rm(args: argparse.Namespace) -> int:
    from foodtaster.state.poison import PoisonList

    lake, dataset = _context(args)
    entry = PoisonList(lake, dataset).remove(args.entry, args.why, removed_by=args.by)
    print(f"removed {entry.id}: {entry.match} {entry.value}; the next run judges it normally")
    return 0


def quarantine_ls(args: argparse.Namespace) -> int:
    from foodtaster.state.browse import quarantine_batches

    lake, dataset = _context(args)
    rows = [(b["batch_date"], b["batch_id"], f"{b['quarantined']:,}", f"{b['listed']:,}",
             f"{b['top_reason']} ({b['top_reason_count']:,})" if b["top_reason"] else "")
            for b in quarantine_batches(lake, dataset)]
    _print_table(("date", "batch", "quarantined", "listed", "top reason"), rows, right={2, 3},
                 empty=f"no quarantine partition for {dataset} in {lake.root}")
    return 0


def quarantine_show(args: argparse.Namespace) -> int:
    from foodtaster.state.browse import quarantined_rows

    if args.limit < 1:
        print("foodtaster: error: --limit must be 1 or more", file=sys.stderr)
        return USAGE_ERROR
    lake, dataset = _context(args)
    rows = quarantined_rows(lake, dataset, args.batch, args.rule, args.limit)
    if args.json:
        _json_lines([{
            "batch_id": r["_batch_id"], "source_file": r["_source_file"], "line_number": r["_line_number"],
            "reasons": r["reasons"], "raw": printable(r["_raw"]),
            "raw_base64": base64.b64encode(r["_raw"]).decode("ascii"),
        } for r in rows])
        return 0
    if not rows:
        print(f"no quarantined message in batch {args.batch}"
              + (f" with rule {args.rule}" if args.rule else ""))
        return 0
    for r in rows:
        print(f"{_file_name(r['_source_file'])}:{r['_line_number']}  (batch {r['_batch_id']})")
        reasons = [(x["layer"], x["rule"], x["column"] or "", printable(x["message"] or ""),
                    printable(x["value"] or "")) for x in r["reasons"] or ()]
        for line in _table_lines(("layer", "rule", "column", "message", "value"), reasons):
            print(f"    {line}")
        print(f"    raw: {_cut(printable(r['_raw']), RAW_CHARS)}\n")
    return 0


def ledger_batches(args: argparse.Namespace) -> int:
    from foodtaster.state.ledger import batch_entries

    lake, dataset = _context(args)
    rows = [(e["batch_date"], e["batch_id"], e["verdict"], e.get("severity", ""), f"{e['messages']:,}",
             f"{e['valid']:,}", f"{e['quarantined']:,}", f"{e.get('listed', 0):,}",
             f"{e['duplicates_dropped']:,}", f"{float(e['quarantine_rate']):.2%}")
            for e in batch_entries(lake, dataset)]
    _print_table(("date", "batch", "verdict", "severity", "messages", "valid", "quarantined", "listed",
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
        _print_table(("when", "what", "batch", "by", "published", "duplicates", "still failing", "why"), rows,
                     right={4, 5, 6}, empty="")


def printable(data: bytes | str) -> str:
    """Text safe in a terminal: invalid UTF-8 as \\xNN, control characters escaped (no ESC
    sequence from a message ever reaches the terminal)."""
    text = data if isinstance(data, str) else bytes(data).decode("utf-8", errors="backslashreplace")
    return "".join(ch if ch.isprintable() or ch == " " else _escaped(ch) for ch in text)


def _escaped(ch: str) -> str:
    if ch in "\t\n\r":
        return repr(ch)[1:-1]
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _file_name(uri: str) -> str:
    return printable(uri.rsplit("/", 1)[-1])


def _table_lines(
    columns: Sequence[str], rows: Sequence[Sequence[str]], right: frozenset[int] | set[int] = frozenset()
) -> list[str]:
    table = [tuple(columns), *(tuple(_cut(str(c), CELL_CHARS) for c in row) for row in rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(columns))]
    return ["  ".join(cell.rjust(w) if i in right else cell.ljust(w)
                      for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()
            for row in table]


def _print_table(columns: Sequence[str], rows: Sequence[Sequence[str]], *, empty: str,
                 right: frozenset[int] | set[int] = frozenset()) -> None:
    print("\n".join(_table_lines(columns, rows, right)) if rows else empty)


def _json_lines(records: Sequence[dict[str, Any]]) -> None:
    for record in records:
        print(json.dumps(record, sort_keys=True, default=str))


if __name__ == "__main__":
    sys.exit(main())
