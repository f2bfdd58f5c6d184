"""`foodtaster` commands for the ways out of quarantine and hold: redrive, release, purge,
a conversation's release, a row's history (docs/ways-out.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from foodtaster.errors import UsageError
from foodtaster.ops.terminal import dataset_and_lake, file_name, json_lines, print_table

USAGE_ERROR = UsageError.exit_code


def add_way_out_commands(commands: argparse._SubParsersAction) -> None:
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
    release_group.add_argument("--group", required=True,
                               help="""the group's key, from `foodtaster groups ls` (several fields: """
                                    """its JSON array, '["DHL","1Z99"]')""")
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

    lake, dataset = dataset_and_lake(args)
    done = release(lake, dataset, args.batch, args.why, args.by or current_user())
    released = done["released"]
    print(f"released {dataset} batch {done['batch_id']} ({done['batch_date']}): {done['valid']} valid "
          f"rows published to {done['table']} (tag {done['tag']}); ledger: released by {released['by']}: "
          f"{released['why']}")
    return 0


def purge_rows(args: argparse.Namespace) -> int:
    from foodtaster.state.dispositions import current_user, purge

    if (args.file is None) != (args.line is None):
        print("foodtaster: error: --file and --line go together (one row), or neither (the batch)",
              file=sys.stderr)
        return USAGE_ERROR
    lake, dataset = dataset_and_lake(args)
    rows = purge(lake, dataset, args.batch, args.why, args.by or current_user(),
                 source_file=args.file, line_number=args.line)
    print(f"purged {len(rows)} quarantined rows of {dataset} batch {args.batch}: {args.why}")
    return 0


def _conversation(args: argparse.Namespace) -> tuple[Any, str, tuple[str, ...]]:
    """The lake, the dataset and its `group_by` fields; a usage error for a dataset without one."""
    from foodtaster.registry import RegistryError, get_dataset

    lake, dataset = dataset_and_lake(args)
    conversation = get_dataset(dataset).conversation
    if conversation is None:
        raise RegistryError(f"{dataset} has no conversations: give group_by and order_by in pipeline.yaml")
    return lake, dataset, conversation.group_by


def groups_ls(args: argparse.Namespace) -> int:
    from foodtaster.state.groups import group_name, open_group_report

    lake, dataset, group_by = _conversation(args)
    report = open_group_report(lake, dataset, group_by)
    if args.json:
        json_lines(report)
        return 0
    rows = [(entry["group"], ", ".join(p["message_id"] or "(unreadable)" for p in entry["poison"]),
             ", ".join(sorted({p["batch_id"] for p in entry["poison"]})), entry["since"][:19],
             f"{entry['held']:,}") for entry in report]
    print_table((group_name(group_by), "poison message", "batch", "since", "held"), rows, right={4},
                 empty=f"no open group of {dataset}: nothing is held for its conversation")
    return 0


def groups_release(args: argparse.Namespace) -> int:
    from foodtaster.state.browse import NotInLake
    from foodtaster.state.dispositions import DispositionError, current_user
    from foodtaster.state.groups import GroupLog, group_name, held_counts

    lake, dataset, group_by = _conversation(args)
    named = group_name(group_by)
    if not args.why.strip():
        raise DispositionError("say why the group's later messages may go out (--why)")
    released = GroupLog(lake, dataset).release_group(args.group, args.why.strip(), args.by or current_user())
    if not released:
        raise NotInLake(f"{named} {args.group!r} of {dataset} is not held: see `foodtaster groups ls`")
    held = held_counts(lake, dataset, group_by).get(args.group, 0)
    print(f"released {named} {args.group} of {dataset} ({len(released)} poison messages): the next run's "
          f"retry task publishes its {held} held messages in order")
    return 0


def row_history(args: argparse.Namespace) -> int:
    from foodtaster.state.dispositions import Dispositions

    lake, dataset = dataset_and_lake(args)
    log = Dispositions(lake, dataset)
    status = log.state().status(args.batch, args.file, args.line)
    print(f"{args.batch} {file_name(args.file)}:{args.line}: {status.status}"
          + (f" ({status.where})" if status.where else ""))
    rows = [(h.at[:19], h.what, h.by, h.run or "", h.why, ", ".join(h.reasons or ()))
            for h in log.history(args.batch, args.file, args.line)]
    print_table(("when", "what", "by", "run", "why", "reasons"), rows,
                 empty="quarantined, nothing happened to it since")
    return 0
