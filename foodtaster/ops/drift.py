"""Drift where people look: the alert's "New in this batch" block, the drift sections of the
batches page and the batch page, and `foodtaster drift DATASET [--since DATE]`.

Read from a batch's summary (`drift`, its report against the batches before it) and from the
drift log (`foodtaster.state.drift`). Only paths, counts and producer names are shown: the log
holds no value of any message.
"""

from __future__ import annotations

import argparse
import html
from collections.abc import Sequence
from typing import Any

from foodtaster.drift import DriftReport, SeenPath, new_per_batch, over_range
from foodtaster.ops.alert_render import Block, Items, Table
from foodtaster.state.lake import Lake

MAX_ROWS = 20  # unknown paths an alert or a page lists; the CLI lists every one


def _percent(share: float) -> str:
    return f"{share:.2%}"


def _report(summary: dict[str, Any]) -> DriftReport | None:
    found = summary.get("drift")
    return DriftReport.from_json(found) if found else None


def _of_producer(path: SeenPath) -> str:
    return f"{_percent(path.producer_share)} of {path.producer_messages}"


def alert_blocks(summary: dict[str, Any]) -> list[Block]:
    """"New in this batch" (unknown paths first seen in this batch) and the optional fields that
    stopped coming; nothing when neither: an alert says what is new once, never on the next batch."""
    report = _report(summary)
    if report is None:
        return []
    blocks: list[Block] = []
    new = report.new
    if new:
        more = f" ({MAX_ROWS} of {len(new)})" if len(new) > MAX_ROWS else ""
        blocks.append(Table(
            f"New in this batch: fields the contract does not name{more}",
            ("Field", "Producer", "Messages", "Share", "Of the producer's"),
            tuple((p.pattern, p.producer, str(p.messages), _percent(p.share), _of_producer(p))
                  for p in new[:MAX_ROWS])))
    if report.stopped:
        blocks.append(Items(f"Stopped coming: optional fields in each of the {report.window} batches "
                            "before, in no message of this one", report.stopped))
    return blocks


def _table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr class=drift>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in row)
                   + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def batch_section(summary: dict[str, Any]) -> str:
    """The batch page's drift section: every unknown path of the batch, new ones marked."""
    report = _report(summary)
    if report is None:
        return ("<h2 id=drift>Drift</h2><p class=muted>No drift recorded for this batch "
                "(a run before drift was recorded).</p>")
    rows = [(p.pattern, p.producer, p.messages, _percent(p.share), _of_producer(p), p.first_seen,
             "NEW" if p.new else "") for p in report.paths[:MAX_ROWS]]
    paths = (_table(("field", "producer", "messages", "share", "of the producer's", "first seen",
                     ""), rows) if rows else "<p class=muted>No field the contract does not name.</p>")
    stopped = ("<p>Stopped coming (in each of the "
               f"{report.window} batches before, in no message of this one): "
               + ", ".join(f"<code>{html.escape(f)}</code>" for f in report.stopped) + "</p>"
               if report.stopped else "")
    return "<h2 id=drift>Drift: fields the contract does not name</h2>" + paths + stopped


def dataset_section(lake: Lake, dataset: str, since: str | None) -> str:
    """The batches page's drift section of a dataset: its unknown paths over the batches shown."""
    from foodtaster.state.drift import DriftLog

    rows, messages = over_range(DriftLog(lake, dataset).batches(), since)
    if not rows:
        return ""
    shown = [(r.pattern, r.producer, r.messages, _percent(r.share), r.first_seen, r.last_seen)
             for r in rows[:MAX_ROWS]]
    return (f"<p>Drift: fields the contract does not name, in {messages} messages of the batches shown"
            + (f" ({MAX_ROWS} of {len(rows)})" if len(rows) > MAX_ROWS else "") + "</p>"
            + _table(("field", "producer", "messages", "share", "first seen", "last seen"), shown))


# ---- the CLI ----------------------------------------------------------------------------------


def add_drift_command(commands: argparse._SubParsersAction) -> None:
    drift = commands.add_parser("drift", help="fields producers send that the contract does not name, "
                                              "and optional fields that stopped coming")
    drift.add_argument("dataset", help="a dataset of the registry")
    drift.add_argument("--since", metavar="YYYY-MM-DD", help="first batch date (default: every batch)")
    drift.add_argument("--lake", help="the lake root (default: FOODTASTER_LAKE or ./data/lake)")
    drift.set_defaults(run=run_drift)


def run_drift(args: argparse.Namespace) -> int:
    from foodtaster.drift import report
    from foodtaster.errors import UsageError
    from foodtaster.lake_paths import lake_root
    from foodtaster.ops.terminal import print_table, printable
    from foodtaster.registry import get_dataset
    from foodtaster.state.drift import DriftLog
    from foodtaster.state.lake import check_date

    config = get_dataset(args.dataset)
    if args.since is not None:
        try:
            check_date(args.since)
        except ValueError as err:
            raise UsageError(f"--since: {err}") from err
    batches = DriftLog(Lake(args.lake or lake_root()), config.name).batches()
    rows, messages = over_range(batches, args.since)
    shown = [b for b in batches if args.since is None or b.batch_date >= args.since]
    print(f"{config.name}: {len(shown)} batches, {messages} messages"
          + (f" since {args.since}" if args.since else ""))
    print_table(("pattern", "producer", "messages", "share", "first seen", "last seen"),
                [(printable(r.pattern), printable(r.producer), str(r.messages), _percent(r.share),
                  r.first_seen, r.last_seen) for r in rows],
                empty="No field the contract does not name.", right={2, 3})
    if shown:
        latest = report(shown[-1], batches, config.drift_window)
        print(f"Stopped coming in batch {latest.batch_id} (optional fields in each of the "
              f"{latest.window} batches before, in none of its messages): "
              + (", ".join(printable(f) for f in latest.stopped) or "none"))
        news = dict(new_per_batch(batches))  # new against every batch before, `since` or not
        print("New fields per batch: " + ", ".join(f"{b.batch_id} {news[b.batch_id]}" for b in shown))
    return 0
