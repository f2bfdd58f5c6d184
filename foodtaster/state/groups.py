"""Open conversation groups: which groups of a dataset are held, and for which poison message.

A dataset that declares `group_by` (and `order_by`) in pipeline.yaml holds a group when a
message of it is quarantined: the later messages of that group are quarantined too, in
this batch and in later ones, until the group is released (foodtaster.engine.split.group_hold).
The state is an event log (`_state/groups/<dataset>/`, foodtaster.state.events):

- `poisoned`: the quarantined messages of a batch that hold their group (their lineage
  key, group value, order value, message_id), written by the job after its data;
- `released`: poison messages that no longer hold their group (redriven, retried
  successfully, purged, or an operator's word), with why and by whom.

A group is open while one of its poison messages is not released. Both events are keyed
by the poison's lineage, so the fold gives the same state in any order, and a `poisoned`
entry written twice opens nothing twice (the job's rerun of a batch writes only the poison
that is not open already).

A group is spelled as text (`group_text`): one field's value, or the JSON array of several
fields' values (`["DHL","1Z99"]`), as the job spells it (foodtaster.engine.split.group_hold).

`open_group_report` is what `foodtaster groups ls` shows (pyarrow only, no Spark): each open
group, its poison messages and how many of its messages are held in quarantine now.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from foodtaster import rule_ids
from foodtaster.logs import batch_logger
from foodtaster.state.events import Event, EventLog
from foodtaster.state.lake import Lake

KIND = "groups"
COMPACT_AFTER = 200
RULE = rule_ids.GROUP_POISONED  # the reason of a message held for its group (layer `group`)


def group_name(group_by: Sequence[str]) -> str:
    """The group key as a person reads it: its field, or its fields in parentheses
    (`(carrier,tracking_no)`), as a unique key of several fields is printed."""
    return group_by[0] if len(group_by) == 1 else "(" + ",".join(group_by) + ")"


def _spelled(value: Any) -> str:
    """A value as Spark's cast to a string spells it (a boolean `true`, not `True`)."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def group_text(values: Sequence[Any]) -> str | None:
    """A row's group as the job spells it (`group_hold.group_column`), from its `group_by`
    fields' values in order: one value as text, several as the JSON array of their texts
    (compact, non-ASCII kept, as Spark's `to_json`); None when a value is missing."""
    if any(value is None for value in values):
        return None
    if len(values) == 1:
        return _spelled(values[0])
    return json.dumps([_spelled(value) for value in values], separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Poison:
    """A quarantined message that holds its group."""

    lineage: str  # foodtaster.lineage.lineage_key
    group: str
    order: str | None  # the order_by value, ISO text; None when it could not be read
    message_id: str | None
    batch_id: str
    since: str | None = None  # when it was recorded (UTC, ISO): the fold sets it from its event


def _fold(state: dict[str, Any], event: Event) -> dict[str, Any]:
    """Fold one event into `state`, in place: an event of a large batch names tens of thousands
    of poison messages, and a copy of the state an event made the fold quadratic in the log."""
    poison, released = state["poison"], state["released"]
    if event["type"] == "poisoned":
        for entry in event["poison"]:
            if entry["lineage"] not in poison:  # the first record of a message stands
                poison[entry["lineage"]] = {**entry, "since": entry.get("since") or event["at"]}
    elif event["type"] == "released":
        for key in event["lineages"]:
            if key not in released:
                released[key] = {"why": event["why"], "by": event["by"], "at": event["at"]}
    return state


def _initial() -> dict[str, Any]:
    return {"poison": {}, "released": {}}


class GroupLog:
    """A dataset's open groups: read them once, add poison, release it."""

    def __init__(self, lake: Lake, dataset: str) -> None:
        self.dataset = dataset
        self.log = EventLog(lake, KIND, dataset)

    def _state(self) -> dict[str, Any]:
        folded = self.log.fold(_fold, _initial)
        if folded.unsnapshotted >= COMPACT_AFTER:
            self.log.compact(_fold, _initial)
        return folded.state

    def open_poison(self) -> list[Poison]:
        """The poison messages that hold their group today (a group may have several)."""
        state = self._state()
        return sorted(
            (Poison(**entry) for key, entry in state["poison"].items() if key not in state["released"]),
            key=lambda p: (p.group, p.order or "", p.lineage),
        )

    def open_groups(self) -> dict[str, list[Poison]]:
        """Group value -> its unreleased poison messages."""
        groups: dict[str, list[Poison]] = {}
        for poison in self.open_poison():
            groups.setdefault(poison.group, []).append(poison)
        return groups

    def poisoned(self, batch_id: str, poison: Iterable[Poison]) -> int:
        """Record a batch's poison messages (after its data is written); returns how many."""
        entries = [p.__dict__ for p in poison]
        if entries:
            self.log.append({"type": "poisoned", "batch_id": batch_id, "poison": entries})
            batch_logger(__name__, self.dataset, batch_id).event(
                "groups_poisoned", messages=len(entries), groups=len({p["group"] for p in entries}))
        return len(entries)

    def release(self, lineages: Iterable[str], why: str, by: str) -> list[str]:
        """Release poison messages by lineage key; returns the ones that were holding a group."""
        lineages = set(lineages)
        if not lineages:
            return []  # nothing to look up: the fold reads the whole log
        holding = {p.lineage for p in self.open_poison()}
        keys = sorted(lineages & holding)
        if keys:
            self.log.append({"type": "released", "lineages": keys, "why": why, "by": by})
            batch_logger(__name__, self.dataset, "-").event("groups_released", poison=len(keys), why=why,
                                                             by=by)
        return keys

    def release_group(self, group: str, why: str, by: str) -> list[str]:
        """An operator's word: every poison message of `group` stops holding it."""
        return self.release([p.lineage for p in self.open_groups().get(group, [])], why, by)


def held_counts(lake: Lake, dataset: str, group_by: Sequence[str]) -> Counter[str]:
    """Group value -> its messages held in quarantine now (reason `group.poisoned`, not yet
    published later, duplicate or purged), from the quarantine table and the dispositions
    log, counted with pyarrow: only the distinct groups become Python values."""
    from foodtaster.state.browse import column_at, read_batch, root_column, table_columns, with_reason
    from foodtaster.state.dispositions import SETTLED, Dispositions
    from foodtaster.state.tables import QUARANTINE

    lineage = ["_batch_id", "_source_file", "_line_number"]
    disposed = Dispositions(lake, dataset).state().table()
    settled = disposed.filter(pc.is_in(disposed.column("status"), value_set=pa.array(sorted(SETTLED))))
    held: Counter[str] = Counter()
    # a nested group key is read through its top-level struct
    roots = list(dict.fromkeys(root_column(path) for path in group_by))
    if set(roots) <= set(table_columns(lake, QUARANTINE, dataset)):
        table = read_batch(lake, QUARANTINE, dataset, None, [*roots, "reasons", *lineage])
        rows = table.filter(with_reason(table.column("reasons"), lambda rules: pc.equal(rules, RULE)))
        parts = [f"_group{i}" for i in range(len(group_by))]
        # keyed as the dispositions log keys a row (a row with no line number is line 0)
        keys = pa.table({"_batch_id": pc.cast(rows.column("_batch_id"), pa.string()),
                         "_source_file": pc.cast(rows.column("_source_file"), pa.string()),
                         "_line_number": pc.fill_null(pc.cast(rows.column("_line_number"), pa.int64()), 0),
                         **{part: column_at(rows, path) for part, path in zip(parts, group_by, strict=True)}})
        pending = keys.join(settled.select(lineage).cast(keys.select(lineage).schema), lineage,
                            join_type="left anti")
        # counted by pyarrow: only the distinct groups become Python values
        for entry in pending.group_by(parts).aggregate([([], "count_all")]).to_pylist():
            group = group_text([entry[part] for part in parts])
            if group is not None:
                held[group] += entry["count_all"]
    return held


def open_group_report(lake: Lake, dataset: str, group_by: Sequence[str]) -> list[dict[str, Any]]:
    """One entry an open group, oldest poison first: its key, its poison messages (id, batch,
    since) and how many of its messages are held."""
    held = held_counts(lake, dataset, group_by)
    report = [{"group": group, "poison": [p.__dict__ for p in poison],
               "since": min(p.since or "" for p in poison), "held": held.get(group, 0)}
              for group, poison in GroupLog(lake, dataset).open_groups().items()]
    return sorted(report, key=lambda entry: (entry["since"], entry["group"]))
