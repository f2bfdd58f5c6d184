"""`foodtaster tables ...`: a dataset's Iceberg tables as the catalog has them, and their upkeep.

`show` prints the catalog, each table's location and snapshots, its branches (a held batch's
audit branch) and tags (one a published batch); `maintain` removes old tags and snapshots,
compacts small batches and removes files nothing references (`foodtaster.state.upkeep`). No JVM.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime, timedelta

from foodtaster.ops.terminal import dataset_and_lake, print_table


def add_tables_commands(commands: argparse._SubParsersAction) -> None:
    tables = commands.add_parser("tables", help="a dataset's Iceberg tables: show them, maintain them")
    verbs = tables.add_subparsers(dest="verb", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dataset", help="the dataset (default: the registry's only dataset)")
    common.add_argument("--lake", help="the lake root (default: $FOODTASTER_LAKE, else ./data/lake)")
    common.add_argument("--json", action="store_true", help="one JSON document, for scripts")
    show = verbs.add_parser("show", parents=[common], help="the catalog, snapshots, branches and tags")
    show.set_defaults(run=tables_show)
    maintain = verbs.add_parser("maintain", parents=[common],
                                help="remove old tags, expire old snapshots, compact small batches, "
                                     "remove files nothing references")
    maintain.add_argument("--dry-run", action="store_true", help="say what it would do; change nothing")
    maintain.add_argument("--grace-hours", type=float, default=24.0,
                          help="leave files younger than this alone, a run may be writing them (default 24)")
    maintain.add_argument("--no-compact", action="store_true", help="do not rewrite small batches")
    maintain.set_defaults(run=tables_maintain)


def tables_show(args: argparse.Namespace) -> int:
    from foodtaster.state.catalog import describe_catalog
    from foodtaster.state.tables import ZONES, DatasetTables

    lake, dataset = dataset_and_lake(args)
    tables = DatasetTables(lake, dataset)
    entries: list[dict] = []
    for zone in ZONES:
        table = tables.load(zone)
        entry: dict = {"zone": zone, "table": tables.identifier(zone)}
        if table is not None:
            main = table.current_snapshot()
            entry.update(location=table.location(), main=main.snapshot_id if main else None,
                         snapshots=len(table.snapshots()),
                         branches={name: ref.snapshot_id for name, ref in sorted(table.metadata.refs.items())
                                   if ref.snapshot_ref_type == "branch"},
                         tags={name: ref.snapshot_id for name, ref in sorted(table.metadata.refs.items())
                               if ref.snapshot_ref_type == "tag"},
                         batches=[{"batch_id": b.batch_id, "batch_date": b.batch_date, "rows": b.rows,
                                   "files": len(b.files)} for b in tables.batches(zone)])
        entries.append(entry)
    shown = {"dataset": dataset, "catalog": describe_catalog(lake, tables.names.catalog), "tables": entries}
    if args.json:
        print(json.dumps(shown, indent=2))
        return 0
    print(f"{dataset}: {shown['catalog']}")
    for entry in entries:
        if "location" not in entry:
            print(f"\n{entry['table']} ({entry['zone']}): not created yet (no batch written)")
            continue
        print(f"\n{entry['table']} ({entry['zone']}) at {entry['location']}: main at snapshot "
              f"{entry['main']}, {entry['snapshots']} snapshots")
        refs = [("branch", name, str(sid)) for name, sid in entry["branches"].items()]
        refs += [("tag", name, str(sid)) for name, sid in entry["tags"].items()]
        print_table(("ref", "name", "snapshot"), refs, empty="no branch or tag")
        print_table(("batch_date", "batch_id", "rows", "files"),
                    [(b["batch_date"], b["batch_id"], str(b["rows"]), str(b["files"]))
                     for b in entry["batches"]],
                    empty="no batch on main", right={2, 3})
    return 0


def tables_maintain(args: argparse.Namespace) -> int:
    from foodtaster.registry import get_dataset
    from foodtaster.state.tables import ZONES, DatasetTables
    from foodtaster.state.upkeep import maintain

    lake, dataset = dataset_and_lake(args)
    config = get_dataset(dataset)
    tables = DatasetTables(lake, dataset, config.table_names)
    done = [maintain(tables, zone, tag_retention=timedelta(days=config.tag_retention_days),
                     snapshot_retention=timedelta(days=config.snapshot_retention_days),
                     grace=timedelta(hours=args.grace_hours), compact=not args.no_compact,
                     dry_run=args.dry_run, now=datetime.now(UTC)).as_dict() for zone in ZONES]
    if args.json:
        print(json.dumps({"dataset": dataset, "dry_run": args.dry_run, "tables": done}, indent=2))
        return 0
    verb = "would" if args.dry_run else "did"
    for entry in done:
        print(f"{entry['table']}: {verb} remove {len(entry['tags_removed'])} tags, expire "
              f"{entry['snapshots_expired']} snapshots, compact {len(entry['batches_compacted'])} batches, "
              f"remove {entry['orphans_removed']} files nothing references (kept "
              f"{entry['kept_for_live_runs']} of live runs)")
    return 0
