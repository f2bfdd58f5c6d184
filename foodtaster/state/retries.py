"""What the retry pass reads: attempts, next attempts and what is settled, from the dispositions log.

The dispositions log (foodtaster.state.dispositions) is the one record of a retryable row:
the job writes it `retrying` with `attempts` 0 and the first attempt's time (`next_at`);
each retry pass (foodtaster.engine.second_chances.retry) writes `retrying` with one more attempt and the
next time, or `exhausted`, or `redriven` with where it was published. This module folds
that into the retry pass's view: nothing else keeps a counter, so two records cannot
disagree. Two passes that raced count the attempt they both made once (the latest event
sets the status); the DAG runs one pass a dataset at a time.

`retry_work` says whether the retry pass has anything to do, read from the lake
with pyarrow alone: the DAG's `retry` task asks this before it pays for a Spark start.

The pass does something only when
- a pending quarantined row (not published later, exhausted, redriven, duplicate or
  purged) whose every reason is a retryable rule is due: its recorded next attempt's time
  (`next_at` in the dispositions log) has passed, the first `wait_s(0)` after it landed; or
- a poison message that holds a group was published later or purged (its group is
  released); or
- a pending held row (`group.poisoned` among its reasons) is in a group no longer open.

This mirrors the pass's own selection, erring towards yes: a yes starts the pass, which
decides row by row; a no skips a pass that would have found nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from foodtaster.lineage import BATCH_ID, LINE_NUMBER, LINEAGE_KEY, SOURCE_FILE, lineage_key
from foodtaster.state.browse import column_at, read_batch, root_column, table_columns, with_reason
from foodtaster.state.dispositions import EXHAUSTED, REDRIVEN, RETRYING, SETTLED, Dispositions
from foodtaster.state.groups import RULE as HELD_RULE
from foodtaster.state.groups import GroupLog, group_text
from foodtaster.state.lake import Lake
from foodtaster.state.tables import QUARANTINE


@dataclass(frozen=True)
class RetryState:
    attempts: dict[str, dict[str, Any]]  # lineage -> {"attempts": n, "at": when counted, "next_at": ISO}
    exhausted: dict[str, str]  # lineage -> when
    published: dict[str, str]  # lineage -> where (published later: a retry, a group release, a redrive)
    resolved: frozenset[str]  # published later, duplicate or purged: a poison among them releases its group

    def done(self) -> frozenset[str]:
        """Rows no retry touches again: resolved or exhausted."""
        return self.resolved | self.exhausted.keys()

    def retrying(self) -> dict[str, tuple[int, str | None]]:
        """Lineage -> (attempts made, next attempt's time) of the rows still retrying."""
        done = self.done()
        return {key: (entry["attempts"], entry["next_at"]) for key, entry in self.attempts.items()
                if key not in done}


def retry_state(lake: Lake, dataset: str) -> RetryState:
    """The retry view of a dataset's dispositions log."""
    attempts: dict[str, dict[str, Any]] = {}
    exhausted: dict[str, str] = {}
    published: dict[str, str] = {}
    resolved: set[str] = set()
    for row, status in Dispositions(lake, dataset).state():
        key = lineage_key(*row)
        if status.status == RETRYING or status.attempts:
            attempts[key] = {"attempts": status.attempts, "at": status.since, "next_at": status.next_at}
        if status.status == EXHAUSTED:
            exhausted[key] = status.since or ""
        if status.status == REDRIVEN:
            published[key] = status.where or ""
        if status.status in SETTLED:
            resolved.add(key)
    return RetryState(attempts, exhausted, published, frozenset(resolved))


# ------------------------------------------------------------ is a retry pass due


class Policy(Protocol):
    def wait_s(self, attempts: int) -> float: ...


def retry_candidates(lake: Lake, dataset: str, columns: Iterable[str], rules: Collection[str],
                     held_rule: str | None) -> list[dict[str, Any]]:
    """The quarantine table's rows (only `columns`) that could make the pass work, as dicts:
    those whose every reason's rule is among `rules` (and that have one), and those with
    `held_rule` among their reasons' rules. A column may be a nested field's path (a nested
    dataset's `group_by`, `data.order_id`): read through its top-level struct, keyed by the path.

    The rules are matched with pyarrow first: a quarantine is mostly rows no pass retries
    or releases, and turning each (with its reasons) into a dict cost seconds a 100k rows.
    """
    names = table_columns(lake, QUARANTINE, dataset)
    wanted = [c for c in dict.fromkeys(columns) if root_column(c) in names]
    if "reasons" not in names:
        return []
    read = list(dict.fromkeys([*map(root_column, wanted), "reasons"]))
    table = read_batch(lake, QUARANTINE, dataset, None, read)
    if not table.num_rows:
        return []
    reasons = table.column("reasons")
    keep = []
    if rules:
        retryable = pa.array(list(rules), pa.string())

        def other(found: pa.Array) -> pa.Array:  # a rule not among `rules` (a null rule is one)
            return pc.invert(pc.fill_null(pc.is_in(found, value_set=retryable.cast(found.type)), False))

        some = pc.fill_null(pc.greater(pc.list_value_length(reasons), 0), False)
        keep.append(pc.and_(some, pc.invert(with_reason(reasons, other))))
    if held_rule is not None:
        keep.append(with_reason(reasons, lambda found: pc.equal(found, held_rule)))
    if not keep:
        return []
    kept = table.filter(functools.reduce(pc.or_, keep))
    return pa.table({column: column_at(kept, column) for column in wanted}).to_pylist()


def retry_work(lake: Lake, dataset: str, policies: Mapping[str, Policy], group_by: Sequence[str],
               now: datetime) -> str | None:
    """Why the retry pass of `dataset` must run now, or None when it would do nothing.
    `group_by`: the conversation's fields (`Conversation.group_by`), none without one."""
    if not (policies or group_by):
        return None
    if not table_columns(lake, QUARANTINE, dataset):
        return None
    state = retry_state(lake, dataset)  # one fold of the dispositions log
    settled = state.done()
    columns = [*LINEAGE_KEY, "_ingested_at", "reasons", *group_by]
    # pyarrow keeps the rows whose rules could matter; the rules below decide, row by row
    candidates = retry_candidates(lake, dataset, columns, policies, HELD_RULE if group_by else None)
    pending = [row for row in candidates if _row_key(row) not in settled]

    for row in pending if policies else []:
        rules = [reason["rule"] for reason in row.get("reasons") or []]
        if not rules or any(rule not in policies for rule in rules):
            continue
        key = _row_key(row)
        # As the pass decides (engine.retry.due): the recorded next attempt, else the first
        # wait after landing.
        next_at = (state.attempts.get(key) or {}).get("next_at")
        landed = _epoch(row.get("_ingested_at"))
        due_at = (datetime.fromisoformat(next_at).timestamp() if next_at
                  else None if landed is None else landed + policies[rules[0]].wait_s(0))
        if due_at is not None and due_at <= now.timestamp():
            return f"a retryable row is due ({key})"

    if group_by:
        open_groups = GroupLog(lake, dataset).open_groups()
        if any(p.lineage in state.resolved for poison in open_groups.values() for p in poison):
            return "a poison message was published later or purged: its group is released"
        for row in pending:
            rules = [reason["rule"] for reason in row.get("reasons") or []]
            group = group_text([row.get(path) for path in group_by])
            if HELD_RULE in rules and (group is None or group not in open_groups):
                return f"a held message's group is no longer open ({group})"
    return None


def _row_key(row: Mapping[str, Any]) -> str:
    """A quarantine row's lineage key (every quarantine row carries the lineage columns)."""
    return lineage_key(row[BATCH_ID], row[SOURCE_FILE], row[LINE_NUMBER])


def _epoch(value: Any) -> float | None:
    """A timestamp cell as epoch seconds, as Spark's cast to double reads it (a Spark
    timestamp is UTC); None, which is never due, as in the pass."""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    return None
