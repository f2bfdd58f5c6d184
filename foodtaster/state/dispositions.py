"""What became of each quarantined row: a status and a history, without rewriting the quarantine.

Quarantine partitions stay as the job wrote them. What happens to a row afterwards (a
redrive published it, a retry counted an attempt, an operator purged it) is an event in
an append-only log, `_state/dispositions/<dataset>/` (foodtaster.state.events), keyed by
the row's lineage: batch id, source file, line number (the dataset is the log's). One
event an operation, not a row: an event names its rows grouped by batch and file, so a
redrive of a million rows is one object.

Statuses (`STATUSES`):

- `quarantined`: every row of a quarantine partition that no event names (implicit);
- `retrying`: a retryable rule failed; `attempts` made so far and `next_at` (UTC, ISO);
- `redriven`: published later, `where` is the valid partition it went to;
- `duplicate`: passed on a redrive but its `message_id` was already published: dropped,
  counted as a duplicate (nothing is published twice);
- `exhausted`: retried `max_attempts` times, given up;
- `listed`: on the poison list;
- `purged`: an operator gave up on it on purpose.
- `failed_again`: not a status but a history entry: a redrive or retry judged the row
  again and it still fails; the row keeps its status and gets the day's reasons.

A row's status is that of its latest event (by time, then event name), so the fold gives
the same state whatever order two events written at once are folded in.

Public API (for the redrive, retry and group passes):

    log = Dispositions(lake, dataset)
    log.record("redriven", rows, by="alice", run="redrive-20261122-ab12", where=...)
    state = log.state()                      # the fold: DispositionState
    state.status(batch_id, source_file, line) -> RowStatus
    state.table()                            # pyarrow: one row a disposed row, for a Spark join
    log.history(batch_id, source_file, line) -> [HistoryItem, ...]

`rows` is a list of `Row` (or `(batch_id, source_file, line_number)` tuples); per-row
details (`reasons`, `attempts`, `next_at`, `where`) are lists aligned with `rows`, or one
value for all of them.
"""

from __future__ import annotations

import getpass
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import pyarrow as pa

from foodtaster.errors import UsageError
from foodtaster.lineage import parse_lineage_key
from foodtaster.logs import batch_logger
from foodtaster.state.events import Event, EventLog
from foodtaster.state.lake import Lake

KIND = "dispositions"
QUARANTINED, RETRYING, REDRIVEN, DUPLICATE = "quarantined", "retrying", "redriven", "duplicate"
EXHAUSTED, LISTED, PURGED = "exhausted", "listed", "purged"
STATUSES = (QUARANTINED, RETRYING, REDRIVEN, DUPLICATE, EXHAUSTED, LISTED, PURGED)
FAILED_AGAIN = "failed_again"  # judged again, still failing: history only, the status stays
# Rows a redrive never touches again: already out of quarantine, or given up on purpose.
SETTLED = frozenset({REDRIVEN, DUPLICATE, PURGED})
DETAILS = ("reasons", "attempts", "next_at", "where")
COMPACT_AFTER = 200  # events after the latest snapshot before a writer takes a new one


class DispositionError(UsageError):
    """An event that cannot be recorded as asked; the message says what to do."""


class Row(NamedTuple):
    """A quarantined row's lineage within its dataset."""

    batch_id: str
    source_file: str
    line_number: int


@dataclass(frozen=True)
class RowStatus:
    status: str
    attempts: int = 0
    next_at: str | None = None
    where: str | None = None
    since: str | None = None  # when the status was set (UTC, ISO); None for the implicit one


@dataclass(frozen=True)
class HistoryItem:
    what: str  # a status, or `failed_again`
    at: str
    by: str
    run: str | None
    why: str
    reasons: list[str] | None  # rule ids, for a row judged again
    details: dict[str, Any]


def _fold(state: dict[str, Any], event: Event) -> dict[str, Any]:
    """`rows[batch][file][line] = [status, set_by, attempts, next_at, where, [index, ...]]`.

    `state["events"]` lists `[name, at]` of every event folded; a row names events by their
    index there (`set_by`, the event that set its status; the last list, its history), so a
    snapshot does not repeat a name or a time a row. Mutates and returns `state` (the fold
    owns it): copying a million-row dict an event would make the fold quadratic.
    """
    rows, events = state["rows"], state["events"]
    name, at, what = event["event"], event["at"], event["status"]
    events.append([name, at])
    number = len(events) - 1
    for group in event["groups"]:
        files = rows.setdefault(group["batch"], {})
        lines = files.setdefault(group["file"], {})
        details = {key: group[key] for key in DETAILS if key in group}
        for index, line in enumerate(group["lines"]):
            key = str(line)
            row = lines.get(key)
            if row is None:
                row = lines[key] = [QUARANTINED, None, 0, None, None, []]
            row[5].append(number)
            if what == FAILED_AGAIN:
                continue
            if row[1] is None or (at, name) > (events[row[1]][1], events[row[1]][0]):
                row[0], row[1] = what, number
                row[2] = _pick(details.get("attempts"), index) or 0
                row[3] = _pick(details.get("next_at"), index)
                row[4] = _pick(details.get("where"), index)
    return state


def _pick(value: Any, index: int) -> Any:
    return value[index] if isinstance(value, list) else value


def _initial() -> dict[str, Any]:
    return {"events": [], "rows": {}}


@dataclass(frozen=True)
class DispositionState:
    """Today's status of every row an event named; every other quarantined row is `quarantined`."""

    rows: dict[str, dict[str, dict[str, list[Any]]]]
    events: list[list[str]]  # [name, at] of every event folded

    def status(self, batch_id: str, source_file: str, line_number: int) -> RowStatus:
        row = self.rows.get(batch_id, {}).get(source_file, {}).get(str(line_number))
        if row is None or row[0] == QUARANTINED:
            return RowStatus(QUARANTINED)
        return self._status(row)

    def _status(self, row: list[Any]) -> RowStatus:
        return RowStatus(row[0], row[2], row[3], row[4], self.events[row[1]][1])

    def __iter__(self):
        """(Row, RowStatus) of every row whose status an event set."""
        for batch_id, files in self.rows.items():
            for source_file, lines in files.items():
                for line, row in lines.items():
                    if row[0] != QUARANTINED:
                        yield Row(batch_id, source_file, int(line)), self._status(row)

    def counts(self, batch_id: str | None = None) -> dict[str, int]:
        """How many rows have each status set by an event (of one batch, or all)."""
        found: dict[str, int] = defaultdict(int)
        for row, status in self:
            if batch_id is None or row.batch_id == batch_id:
                found[status.status] += 1
        return dict(found)

    def table(self) -> pa.Table:
        """One row a disposed row: lineage, status, attempts, next_at, where. Small enough to
        broadcast in a Spark join (`spark.createDataFrame(state.table().to_pandas())`)."""
        columns: dict[str, list[Any]] = {name: [] for name in (
            "_batch_id", "_source_file", "_line_number", "status", "attempts", "next_at", "where")}
        for row, status in self:
            for name, value in zip(columns, (*row, status.status, status.attempts, status.next_at,
                                             status.where), strict=True):
                columns[name].append(value)
        return pa.table(columns, schema=TABLE_SCHEMA)


TABLE_SCHEMA = pa.schema([
    ("_batch_id", pa.string()), ("_source_file", pa.string()), ("_line_number", pa.int64()),
    ("status", pa.string()), ("attempts", pa.int64()), ("next_at", pa.string()), ("where", pa.string()),
])


class Dispositions:
    """A dataset's dispositions log: record what happened to rows, read their status and history."""

    def __init__(self, lake: Lake, dataset: str) -> None:
        self.dataset = dataset
        self.log = EventLog(lake, KIND, dataset)
        self._unsnapshotted = 0

    def state(self) -> DispositionState:
        folded = self.log.fold(_fold, _initial)
        self._unsnapshotted = folded.unsnapshotted
        return DispositionState(folded.state["rows"], folded.state["events"])

    def record(
        self,
        status: str,
        rows: Sequence[Row | tuple[str, str, int]],
        *,
        by: str | None = None,
        run: str | None = None,
        why: str = "",
        **details: Any,
    ) -> str | None:
        """Record one operation on `rows` as one event; returns its name (None for no rows).

        `details` are `reasons` (rule ids a row), `attempts`, `next_at`, `where`: a list
        aligned with `rows` or one value for all.
        """
        if status not in STATUSES and status != FAILED_AGAIN:
            raise DispositionError(f"status {status!r} must be one of {(*STATUSES, FAILED_AGAIN)}")
        unknown = set(details) - set(DETAILS)
        if unknown:
            raise DispositionError(f"unknown details {sorted(unknown)}: give some of {DETAILS}")
        if not rows:
            return None
        for key, value in details.items():
            if isinstance(value, list) and len(value) != len(rows):
                raise DispositionError(f"{key} has {len(value)} values for {len(rows)} rows")
        event = {"type": "disposition", "status": status, "by": by or current_user(), "run": run, "why": why,
                 "groups": _groups(rows, details)}
        name = self.log.append(event)
        if self._unsnapshotted + 1 >= COMPACT_AFTER:
            self.log.compact(_fold, _initial)
        for batch_id in sorted({Row(*r).batch_id for r in rows}):
            batch_logger(__name__, self.dataset, batch_id).event(
                "disposition", status=status, rows=sum(1 for r in rows if r[0] == batch_id), run=run,
                event_name=name,
            )
        return name

    def history(self, batch_id: str, source_file: str, line_number: int) -> list[HistoryItem]:
        """What happened to one row, oldest first (empty: quarantined, nothing since)."""
        state = self.state()
        row = state.rows.get(batch_id, {}).get(source_file, {}).get(str(line_number))
        if row is None:
            return []
        wanted = {state.events[index][0] for index in row[5]}
        items = []
        for event in self.log.events():
            if event["event"] not in wanted:
                continue
            for group in event["groups"]:
                if (group["batch"], group["file"]) != (batch_id, source_file):
                    continue
                index = group["lines"].index(line_number) if line_number in group["lines"] else -1
                if index < 0:
                    continue
                details = {k: _pick(group[k], index) for k in DETAILS if k in group}
                items.append(HistoryItem(event["status"], event["at"], event["by"], event.get("run"),
                                         event.get("why", ""), details.pop("reasons", None), details))
        return sorted(items, key=lambda item: item.at)

    def compact(self) -> str | None:
        return self.log.compact(_fold, _initial)


def _groups(rows: Sequence[Row | tuple[str, str, int]], details: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows grouped by (batch, file), lines and per-row details kept aligned: a file's URI is
    written once, not once a row."""
    grouped: dict[tuple[str, str], dict[str, Any]] = {}
    for index, (batch_id, source_file, line) in enumerate(rows):
        group = grouped.get((batch_id, source_file))
        if group is None:
            group = grouped[(batch_id, source_file)] = {"batch": batch_id, "file": source_file, "lines": []}
            for key, value in details.items():
                group[key] = [] if isinstance(value, list) else value
        group["lines"].append(int(line))
        for key, value in details.items():
            if isinstance(value, list):
                group[key].append(value[index])
    return list(grouped.values())


def purge(lake: Lake, dataset: str, batch_id: str, why: str, by: str, *,
          source_file: str | None = None, line_number: int | None = None) -> list[Row]:
    """Give up on quarantined rows on purpose (status `purged`, the partition untouched): every
    row of the batch still in quarantine, or the one at `source_file` (or its name) and
    `line_number`. Returns the rows purged; a row already redriven, duplicate or purged is left."""
    from foodtaster.state.browse import _names, quarantined_rows

    if not why.strip():
        raise DispositionError("say why the rows are given up on (--why)")
    log = Dispositions(lake, dataset)
    state = log.state()
    rows = [Row(r["_batch_id"], r["_source_file"], r["_line_number"])
            for r in quarantined_rows(lake, dataset, batch_id)
            if r["_line_number"] is not None
            and (source_file is None or _names(r["_source_file"], source_file))
            and (line_number is None or r["_line_number"] == line_number)]
    rows = [row for row in rows if state.status(*row).status not in SETTLED]
    log.record(PURGED, rows, by=by, run=None, why=why.strip())
    return rows


def rows_of(records: Iterable[Any]) -> list[Row]:
    """Rows from anything with `_batch_id`, `_source_file`, `_line_number` (Spark rows, dicts)."""
    def get(record: Any, key: str) -> Any:
        return record[key] if isinstance(record, dict) else getattr(record, key)

    return [Row(get(r, "_batch_id"), get(r, "_source_file"), int(get(r, "_line_number"))) for r in records]


def current_user() -> str:
    """Who records an event when nobody says: the OS user."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no user name in a container without /etc/passwd entry
        return "unknown"


def record_status(lake: Lake, dataset: str, status: str, lineages: Iterable[str], *, by: str,
                  run: str | None = None, why: str = "", **details: Any) -> None:
    """Tell the dispositions log that rows (by `lineage_key`) moved to `status`: the one way
    the retry pass and the group release write it.
    `details`: `attempts`, `next_at`, `where` (one value, or a list aligned with `lineages`)."""
    keys = list(lineages)
    if not keys:
        return
    Dispositions(lake, dataset).record(status, [parse_lineage_key(k) for k in keys], by=by, run=run,
                                       why=why, **details)
