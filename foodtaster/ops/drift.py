"""Drift where people look: the alert's "New in this batch" block, the drift sections of the
batches page and the batch page, and `foodtaster drift DATASET [--since DATE]`.

Read from a batch's summary (`drift`, its report against the batches before it) and from the
drift log (`foodtaster.state.drift`). Only paths, counts and producer names are shown: the log
holds no value of any message.
"""

from __future__ import annotations

import argparse
import html
from collections.abc import Mapping, Sequence
from typing import Any

from foodtaster.drift import BatchDrift, DriftReport, SeenPath, new_per_batch, over_range
from foodtaster.drift import report as drift_report
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
            ("Field", "Producer", "Messages with it", f"Share of the {report.messages} read",
             "Of the producer's"),
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
    counted = (f"<p>Counted over {read_words(report.messages, summary.get('messages'))}: each row "
               "is one producer's messages that carried the field, its share of those read, and "
               "of that producer's messages.</p>")
    paths = (counted + _table(("field", "producer", "messages with it", f"share of {report.messages}",
                               "of the producer's", "first seen", ""), rows)
             if rows else "<p class=muted>No field the contract does not name.</p>")
    stopped = ("<p>Stopped coming (in each of the "
               f"{report.window} batches before, in no message of this one): "
               + ", ".join(f"<code>{html.escape(f)}</code>" for f in report.stopped) + "</p>"
               if report.stopped else "")
    return "<h2 id=drift>Drift: fields the contract does not name</h2>" + paths + stopped


def batch_marks(batches: Sequence[BatchDrift], window: int) -> dict[str, str]:
    """Each recorded batch's drift marks for the batches page's list, by batch id: "new" (fields
    the contract does not name, first sent in this batch) and "stopped coming" (optional fields in
    each of the `window` batches before, in none of its messages); "" for a batch with neither.
    Each links to the batch page's drift section, which names them."""
    marks = {}
    for batch in batches:
        found = drift_report(batch, batches, window)
        new = sorted({p.pattern for p in found.new})
        shown = []
        if new:
            shown.append(_mark("new", f"new: {_fields(len(new))}", new))
        if found.stopped:
            shown.append(_mark("stopped", f"stopped coming: {_fields(len(found.stopped))}", found.stopped))
        marks[batch.batch_id] = "".join(shown)
    return marks


def _fields(count: int) -> str:
    return f"{count} field" if count == 1 else f"{count} fields"


def _mark(kind: str, words: str, fields: Sequence[str]) -> str:
    more = len(fields) - MAX_ROWS
    named = ", ".join(fields[:MAX_ROWS]) + (f" and {more} more" if more > 0 else "")
    return (f"<span class=\"drift {kind}\" title=\"{html.escape(named)}\">{html.escape(words)}"
            f"<span class=who>{html.escape(named)}</span></span>")


def read_words(read: int, messages: int | None) -> str:
    """What drift's counts count, said: the messages the job read. A line too large to read, or
    in a file that could not be read, is one of the batch's messages (quarantined) but has no
    fields to count: said with how many, so the counts add up to the batch's."""
    words = f"the {read} messages the job read"
    unread = (messages or 0) - read
    if unread > 0:
        words += (f" (of {messages}: {unread} could not be read, too large or in an unreadable file, "
                  "so no field of them is known)")
    return words


def dataset_section(batches: Sequence[BatchDrift], since: str | None,
                    messages: Mapping[str, int]) -> str:
    """The batches page's drift section of a dataset (its drift log's `batches`): its unknown
    paths over the batches shown, `messages` each batch's messages (the ledger's), by id."""
    rows, read = over_range(batches, since)
    if not rows:
        return ""
    shown_batches = [b for b in batches if since is None or b.batch_date >= since]
    total = sum(messages.get(b.batch_id, b.messages) for b in shown_batches)
    count = len(shown_batches)
    shown = [(r.pattern, r.producer, r.messages, _percent(r.share), r.first_seen, r.last_seen)
             for r in rows[:MAX_ROWS]]
    return (f"<p>Drift: fields the contract does not name, over {read_words(read, total)} in the "
            f"{count} {'batch' if count == 1 else 'batches'} shown"
            + (f" ({MAX_ROWS} of {len(rows)} fields)" if len(rows) > MAX_ROWS else "")
            + f". Each row: one producer's messages that carried the field; its share is of the {read}.</p>"
            + _table(("field", "producer", "messages with it", f"share of {read}", "first seen",
                      "last seen"), shown))


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
